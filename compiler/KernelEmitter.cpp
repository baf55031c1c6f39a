//===- KernelEmitter.cpp - every step's GPU kernels, planned --------------===//
#include "KernelEmitter.h"

#include "CustomOp.h"
#include "ImplicitGemm.h"
#include "KernelLibrary.h"

namespace tessel {

mlir::FailureOr<codegen::KernelPlan>
planKernels(mlir::MLIRContext &ctx, llvm::ArrayRef<codegen::StepView> steps,
            const CompileOptions &options) {
  codegen::KernelPlan plan;
  plan.steps.resize(steps.size());
  codegen::Targets targets{options.targets};
  if (targets.empty())
    return plan;

  codegen::GemmPlanner gemm(ctx, targets);
  codegen::KernelLibrary library;
  custom::CustomOpRegistry noCustomOps;
  custom::CustomKernelPlanner customPlanner(options.customOps ? *options.customOps : noCustomOps,
                                            targets);
  // Launches name modules by each planner's own numbering (the library's
  // family index, the GEMM codegen's module index) until every step is
  // planned; then the modules of the library's families that are used come
  // first, in the library's family order, and the GEMM modules follow.
  std::vector<std::pair<size_t, size_t>> libraryVariants, gemmVariants, customVariants;
  for (auto [index, step] : llvm::enumerate(steps)) {
    std::vector<codegen::KernelVariant> &variants = plan.steps[index];
    if (step.name == "custom") {
      // A custom op's kernels are its manifest's alone.
      mlir::FailureOr<std::vector<codegen::KernelVariant>> planned = customPlanner.plan(step);
      if (mlir::failed(planned))
        return mlir::failure();
      for (codegen::KernelVariant &variant : *planned) {
        customVariants.emplace_back(index, variants.size());
        variants.push_back(std::move(variant));
      }
      continue;
    }
    if (step.op) {
      mlir::FailureOr<std::vector<codegen::KernelVariant>> planned = gemm.plan(step);
      if (mlir::failed(planned))
        return mlir::failure();
      for (codegen::KernelVariant &variant : *planned) {
        gemmVariants.emplace_back(index, variants.size());
        variants.push_back(std::move(variant));
      }
    }
    // The library's variants go after the GEMM codegen's (best tier first):
    // those of a step the GEMM codegen gave no simt variant (the library's
    // simt variant, and a Tensor Core one where its family has one).
    bool hasSimt = llvm::any_of(variants, [](const codegen::KernelVariant &v) {
      return v.tier == engine::Tier::simt;
    });
    if (hasSimt)
      continue;
    mlir::FailureOr<std::vector<codegen::KernelVariant>> fromLibrary = library.plan(step);
    if (mlir::failed(fromLibrary))
      return mlir::failure();
    for (codegen::KernelVariant &variant : *fromLibrary) {
      libraryVariants.emplace_back(index, variants.size());
      variants.push_back(std::move(variant));
    }
  }

  std::vector<int32_t> familyModule;
  for (codegen::KernelModule &module : library.modules(targets, familyModule))
    plan.modules.push_back(std::move(module));
  for (auto [step, variant] : libraryVariants)
    for (codegen::Launch &launch : plan.steps[step][variant].launches)
      launch.module = familyModule.at(static_cast<size_t>(launch.module));
  const int32_t gemmBase = static_cast<int32_t>(plan.modules.size());
  mlir::FailureOr<std::vector<codegen::KernelModule>> gemmModules = gemm.finish();
  if (mlir::failed(gemmModules))
    return mlir::failure();
  for (codegen::KernelModule &module : *gemmModules)
    plan.modules.push_back(std::move(module));
  for (auto [step, variant] : gemmVariants)
    for (codegen::Launch &launch : plan.steps[step][variant].launches)
      launch.module += gemmBase;
  const int32_t customBase = static_cast<int32_t>(plan.modules.size());
  for (codegen::KernelModule &module : customPlanner.finish())
    plan.modules.push_back(std::move(module));
  for (auto [step, variant] : customVariants)
    for (codegen::Launch &launch : plan.steps[step][variant].launches)
      launch.module += customBase;
  return plan;
}

} // namespace tessel
