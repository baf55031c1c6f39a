//===- EngineWriter.h - graph dialect to a .tsl engine ------------*- C++ -*-===//
#ifndef TESSEL_COMPILER_ENGINEWRITER_H
#define TESSEL_COMPILER_ENGINEWRITER_H

#include "Pipeline.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tessel {

/// What the writer decided, for the compile report.
struct EngineSummary {
  /// Steps by the best tier they have a variant for ("tc-sm70", "simt", "cpu").
  std::map<std::string, int> stepsByBestTier;
  /// "op at location" of every step with no GPU variant (when targets were
  /// given): the fallbacks a GPU run takes. Filled also when --require-gpu
  /// refuses them.
  std::vector<std::string> cpuOnlySteps;
  size_t modules = 0;
  uint64_t moduleBytes = 0;       ///< the images as the driver loads them
  uint64_t moduleStoredBytes = 0; ///< as the engine stores them (zstd)
  double kernelSeconds = 0; ///< time spent planning and compiling kernels
  /// The generated GEMM kernels per ptxas: the most registers one uses, and
  /// "module: kernel" of each that spills to local memory in some cubin.
  int maxRegisters = 0;
  std::vector<std::string> spillingKernels;
};

/// Serializes the compiled `main` function of each module, one plan per
/// module (a batch profile each; the first is the engine's root plan):
/// tensors, arena plan, the step list and each step's kernel variants, with
/// the constants and kernel modules of all plans stored once. Deterministic:
/// the bytes depend only on the modules and the options. The summary is the
/// first plan's, its module count and bytes the engine's.
mlir::FailureOr<std::vector<uint8_t>> writeEngine(llvm::ArrayRef<mlir::ModuleOp> profiles,
                                                  const CompileOptions &options,
                                                  EngineSummary *summary = nullptr);

} // namespace tessel

#endif // TESSEL_COMPILER_ENGINEWRITER_H
