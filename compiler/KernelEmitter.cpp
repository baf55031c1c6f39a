//===- KernelEmitter.cpp - every step's GPU kernels, planned --------------===//
#include "KernelEmitter.h"

#include "CustomOp.h"
#include "ElementwiseGroups.h"
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
  custom::ElementwiseGroupPlanner groupPlanner(targets);
  // Launches name modules by each planner's own numbering (the library's
  // family index, the GEMM codegen's and the custom planner's module index)
  // until every step is planned; then the modules of the library's families
  // that are used come first, in the library's family order, then the GEMM
  // modules, then the custom ones, then the elementwise groups' one.
  using Placed = std::vector<std::pair<size_t, size_t>>; // (step, variant)
  Placed libraryVariants, gemmVariants, customVariants, groupVariants;
  // Appends a planner's variants to step `index`'s, noting where they went.
  auto append = [&](size_t index, mlir::FailureOr<std::vector<codegen::KernelVariant>> planned,
                    Placed &placed) {
    if (mlir::failed(planned))
      return false;
    std::vector<codegen::KernelVariant> &variants = plan.steps[index];
    for (codegen::KernelVariant &variant : *planned) {
      placed.emplace_back(index, variants.size());
      variants.push_back(std::move(variant));
    }
    return true;
  };
  for (auto [index, step] : llvm::enumerate(steps)) {
    if (step.name == "custom") {
      // A custom op's kernels are its manifest's alone.
      if (!append(index, customPlanner.plan(step), customVariants))
        return mlir::failure();
      continue;
    }
    if (step.name == "elementwise_group") {
      // Generated for the group's program and shapes.
      if (!append(index, groupPlanner.plan(step), groupVariants))
        return mlir::failure();
      continue;
    }
    if (step.op && !append(index, gemm.plan(step), gemmVariants))
      return mlir::failure();
    // The library's variants go after the GEMM codegen's (best tier first):
    // those of a step the GEMM codegen gave no simt variant (the library's
    // simt variant, and a Tensor Core one where its family has one).
    bool hasSimt = llvm::any_of(plan.steps[index], [](const codegen::KernelVariant &v) {
      return v.tier == engine::Tier::simt;
    });
    if (!hasSimt && !append(index, library.plan(step), libraryVariants))
      return mlir::failure();
  }

  // Renumbers the launches of `placed` variants with `module`.
  auto renumber = [&](const Placed &placed, auto module) {
    for (auto [step, variant] : placed)
      for (codegen::Launch &launch : plan.steps[step][variant].launches)
        launch.module = module(launch.module);
  };
  std::vector<int32_t> familyModule;
  for (codegen::KernelModule &module : library.modules(targets, familyModule))
    plan.modules.push_back(std::move(module));
  renumber(libraryVariants,
           [&](int32_t family) { return familyModule.at(static_cast<size_t>(family)); });
  // Appends a planner's modules and renumbers its launches after those
  // already there.
  auto appendModules = [&](mlir::FailureOr<std::vector<codegen::KernelModule>> modules,
                           const Placed &placed) {
    if (mlir::failed(modules))
      return false;
    const int32_t base = static_cast<int32_t>(plan.modules.size());
    for (codegen::KernelModule &module : *modules)
      plan.modules.push_back(std::move(module));
    renumber(placed, [&](int32_t index) { return base + index; });
    return true;
  };
  if (!appendModules(gemm.finish(), gemmVariants) ||
      !appendModules(customPlanner.finish(), customVariants) ||
      !appendModules(groupPlanner.finish(), groupVariants))
    return mlir::failure();
  return plan;
}

} // namespace tessel
