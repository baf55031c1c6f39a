//===- KernelLibrary.cpp - CUDA kernels for the non-GEMM ops --------------===//
#include "KernelLibrary.h"

namespace tessel::codegen {

mlir::FailureOr<std::optional<KernelVariant>> KernelLibrary::plan(const StepView &) {
  return std::optional<KernelVariant>{};
}

KernelModule KernelLibrary::module(const Targets &) const {
  return KernelModule{"tessel_kernel_library", {}};
}

} // namespace tessel::codegen
