//===- KernelLibrary.h - CUDA kernels for the non-GEMM ops ------*- C++ -*-===//
//
// The kernels of every op that is not a Tensor Core op (elementwise, pooling,
// softmax, reductions, data movement, casts), written in CUDA C++ once and
// compiled when Tessel is built; tessel-compile embeds the compiled module in
// an engine that uses any of them and binds each step's launch.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_CODEGEN_KERNELLIBRARY_H
#define TESSEL_CODEGEN_KERNELLIBRARY_H

#include "StepKernels.h"

#include "mlir/Support/LogicalResult.h"

#include <optional>
#include <string>
#include <vector>

namespace tessel::codegen {

class KernelLibrary {
public:
  /// The step's "simt" variant, its launches referring to module 0 (the
  /// library), or std::nullopt when the library has no kernel for this
  /// op, dtype or attribute combination (the step then runs on the CPU tier).
  /// Fails, with a diagnostic at the op, only on an internal error.
  mlir::FailureOr<std::optional<KernelVariant>> plan(const StepView &step);

  /// The library module: PTX plus a cubin for each target arch it was built
  /// for that `targets` asks for.
  KernelModule module(const Targets &targets) const;

  /// Every kernel entry point of the library (its PTX's `.entry` names),
  /// sorted: the names plan() may launch. plan() launches nothing else.
  static const std::vector<std::string> &entryNames();

  /// The SM archs the library has cubins for (major*10+minor), ascending.
  static std::vector<int> cubinArchs();
};

} // namespace tessel::codegen

#endif // TESSEL_CODEGEN_KERNELLIBRARY_H
