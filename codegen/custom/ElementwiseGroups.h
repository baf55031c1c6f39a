//===- ElementwiseGroups.h - elementwise groups' generated kernels -*- C++ -*-===//
//
// The GPU kernels of `elementwise_group` steps (--tessel-fuse-elementwise):
// CUDA C++ generated from each group's program and its exact shapes, all of
// an engine's groups in one module compiled by NVRTC for every target
// (cubins, and compute_75 PTX), the formulas those of
// tessel/elementwise_math.h (its text built into the compiler).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_CODEGEN_CUSTOM_ELEMENTWISEGROUPS_H
#define TESSEL_CODEGEN_CUSTOM_ELEMENTWISEGROUPS_H

#include "KernelPlan.h"
#include "StepKernels.h"

#include "mlir/Support/LogicalResult.h"

#include <map>
#include <string>
#include <vector>

namespace tessel::custom {

class ElementwiseGroupPlanner {
public:
  explicit ElementwiseGroupPlanner(const codegen::Targets &targets) : targets(targets) {}

  /// The step's one variant (simt: it runs on every GPU); none for a step
  /// that is not a group, or whose shapes the kernel does not take (over
  /// 2^31 elements, f64), which then runs on the CPU tier. Its launch names
  /// module 0, the module finish() compiles.
  mlir::FailureOr<std::vector<codegen::KernelVariant>> plan(const codegen::StepView &step);

  /// The module of every kernel plan() generated (none if it generated
  /// none); fails, with NVRTC's log at the first group's op, if NVRTC does.
  mlir::FailureOr<std::vector<codegen::KernelModule>> finish();

  /// The generated CUDA C++ so far (tests, `tessel-compile -v`).
  std::string source() const;

private:
  codegen::Targets targets;
  mlir::Operation *firstOp = nullptr;
  std::string kernels;                         ///< the kernels' text, in first-use order
  std::map<std::string, std::string> nameOf;   ///< a kernel's body -> its entry name
};

/// Why the groups cannot have generated kernels here (no NVRTC); empty when
/// they can. The pipeline leaves groups unfused for GPU targets then.
const std::string &elementwiseGroupsUnavailable();

} // namespace tessel::custom

#endif // TESSEL_CODEGEN_CUSTOM_ELEMENTWISEGROUPS_H
