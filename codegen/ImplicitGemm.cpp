//===- ImplicitGemm.cpp - conv/gemm/matmul steps as tiled GPU kernels -----===//
#include "ImplicitGemm.h"

namespace tessel::codegen {

struct GemmPlanner::Impl {};

GemmPlanner::GemmPlanner(mlir::MLIRContext &, const Targets &) : impl(new Impl) {}
GemmPlanner::~GemmPlanner() = default;

mlir::FailureOr<std::vector<KernelVariant>> GemmPlanner::plan(const StepView &) {
  return std::vector<KernelVariant>{};
}

mlir::FailureOr<std::vector<KernelModule>> GemmPlanner::finish() {
  return std::vector<KernelModule>{};
}

} // namespace tessel::codegen
