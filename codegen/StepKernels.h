//===- StepKernels.h - what a kernel planner sees of a step -----*- C++ -*-===//
//
// The engine writer hands each kernel planner (the implicit-GEMM codegen for
// conv/gemm/matmul, the CUDA kernel library for everything else) one step at
// a time: its graph op and the engine tensor indices of its operands and
// results, plus every tensor's type. A planner answers with the step's GPU
// variants (KernelPlan.h) whose launches bind parameters to those indices,
// and, once every step is planned, its modules compiled for the targets.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_CODEGEN_STEPKERNELS_H
#define TESSEL_CODEGEN_STEPKERNELS_H

#include "KernelPlan.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <vector>

namespace tessel::codegen {

struct StepView {
  mlir::Operation *op = nullptr; ///< null for the writer's output copies
  llvm::StringRef name;          ///< the step's op name: "conv", "add", "copy"
  llvm::ArrayRef<int32_t> inputs;  ///< tensor indices; -1 for an absent optional
  llvm::ArrayRef<int32_t> outputs;
  /// Every engine tensor's type (shape and element type as stored, i.e. after
  /// the layout and precision passes), indexed by tensor index.
  llvm::ArrayRef<mlir::RankedTensorType> tensorTypes;

  mlir::RankedTensorType type(int32_t tensor) const { return tensorTypes[tensor]; }
};

/// The GPU targets to compile for: cubins for each of `cubinArchs`
/// (major*10+minor, e.g. {75, 80, 90}), PTX for the older and newer GPUs.
/// Empty: no GPU kernels at all (a CPU-only engine).
struct Targets {
  std::vector<int> cubinArchs;
  bool empty() const { return cubinArchs.empty(); }
};

} // namespace tessel::codegen

#endif // TESSEL_CODEGEN_STEPKERNELS_H
