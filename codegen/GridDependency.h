//===- GridDependency.h - kernels that wait for the grids before them -*- C++ -*-===//
//
// On sm_90 and later a kernel may be launched while the kernel before it in
// the stream is still finishing (programmatic dependent launch): its blocks
// are scheduled and set up during the other's tail, and each waits at
// `griddepcontrol.wait` until the grids it depends on have completed and
// their memory is visible. The runtime launches a kernel that way only when
// its image says every entry point waits before touching memory
// (KernelImage.waits_for_prior_grids in the engine); this is where such
// images are made, from the PTX every image of a module is assembled from:
// the GEMM modules' cubins (ImplicitGemm.cpp) and the kernel library's
// (codegen/cuda/CMakeLists.txt, through tessel-ptx-wait) for SMs of
// kGridDependencyArch and later.
//
// Nothing else changes: no entry triggers its dependents early
// (griddepcontrol.launch_dependents), so the next grid is launched as this
// one's last blocks exit, when every SM is free again, and its blocks are
// spread as without the overlap (bench/NOTES.md, 2026-11-27 (16)).
//
// Plain C++ (no LLVM): the build-time tool links it alone.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_CODEGEN_GRIDDEPENDENCY_H
#define TESSEL_CODEGEN_GRIDDEPENDENCY_H

#include <optional>
#include <string>
#include <string_view>

namespace tessel::codegen {

/// The first SM whose cubins wait for the grids before them.
constexpr int kGridDependencyArch = 90;

/// `ptx` with `griddepcontrol.wait;` as the first instruction of each entry
/// point (after the body's leading declarations), its `.target` raised to
/// sm_90 where below (an `a` suffix kept) and its `.version` to 7.8 where
/// below (griddepcontrol's). Deterministic. nullopt when the text has no
/// `.version` or `.target` directive or an entry without a body.
std::optional<std::string> waitingForPriorGrids(std::string_view ptx);

} // namespace tessel::codegen

#endif // TESSEL_CODEGEN_GRIDDEPENDENCY_H
