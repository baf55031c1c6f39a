//===- KernelLibrary.cpp - CUDA kernels for the non-GEMM ops --------------===//
//
// The planner half of the library (the per-op planners are StepPlanner's
// files): maps a step (op name, operand types,
// attributes as the engine stores them) to launches of the entry points of
// Library.cu, with grid and block sizes from the static shapes and the
// by-value parameter struct of KernelParams.h. What the library can launch,
// and in which family's module, is read from the families' own PTX (their
// `.entry` names), so a kernel the .cu does not define is never named: a
// step without one runs on the CPU tier.
//
// Attributes are read through the CPU tier's Attrs with the CPU kernels'
// defaults (a pool's layout and window by the CPU kernels' own reader,
// tessel/window.h), and constants that need a conversion (clip's bounds,
// pad's fill) are converted by the CPU tier's own functions, so both tiers
// see the same values.
//
//===----------------------------------------------------------------------===//
#include "KernelLibrary.h"

#include "GridDependency.h"

#include "EmbeddedImages.h"
#include "StepPlanner.h"
#include "TesselTraits.h"

#include "mlir/IR/Diagnostics.h"

#include <algorithm>

extern "C" {
#define TESSEL_FAMILY(family)                                                  \
  extern const uint8_t tessel_kernel_library_##family##_ptx_begin[],           \
      tessel_kernel_library_##family##_ptx_end[];
TESSEL_KERNEL_LIBRARY_FAMILIES
#undef TESSEL_FAMILY
#define TESSEL_CUBIN(family, arch)                                             \
  extern const uint8_t tessel_kernel_library_##family##_sm_##arch##_begin[],   \
      tessel_kernel_library_##family##_sm_##arch##_end[];
TESSEL_KERNEL_LIBRARY_CUBINS
#undef TESSEL_CUBIN
}

namespace tessel::codegen {
namespace {

using library::Launches;
using library::StepPlanner;

//===----------------------------------------------------------------------===//
// The embedded images
//===----------------------------------------------------------------------===//

struct Image {
  int arch; ///< 0 for the PTX
  const uint8_t *begin, *end;
};

/// A family: its name, its PTX (compute_75), its cubins by ascending arch,
/// and the entry points its PTX defines, sorted.
struct Family {
  std::string name;
  Image ptx;
  std::vector<Image> cubins;
  std::vector<std::string> entries;

  llvm::StringRef ptxText() const {
    return llvm::StringRef(reinterpret_cast<const char *>(ptx.begin), ptx.end - ptx.begin);
  }
};

/// The `.entry` names of a PTX text, sorted.
std::vector<std::string> ptxEntries(llvm::StringRef text) {
  std::vector<std::string> found;
  const llvm::StringRef marker = ".entry ";
  for (size_t at = text.find(marker); at != llvm::StringRef::npos;
       at = text.find(marker, at + marker.size())) {
    llvm::StringRef rest = text.drop_front(at + marker.size());
    found.push_back(rest.take_until([](char c) { return c == '(' || c == ' ' || c == '\n'; }).str());
  }
  std::sort(found.begin(), found.end());
  return found;
}

const std::vector<Family> &families() {
  static const std::vector<Family> all = [] {
    std::vector<Family> list;
#define TESSEL_FAMILY(family)                                                  \
  list.push_back(Family{#family,                                               \
                        Image{0, tessel_kernel_library_##family##_ptx_begin,   \
                              tessel_kernel_library_##family##_ptx_end},       \
                        {}, {}});
    TESSEL_KERNEL_LIBRARY_FAMILIES
#undef TESSEL_FAMILY
    auto named = [&](llvm::StringRef name) -> Family & {
      return *llvm::find_if(list, [&](const Family &f) { return f.name == name; });
    };
#define TESSEL_CUBIN(family, arch)                                             \
  named(#family).cubins.push_back(Image{arch, tessel_kernel_library_##family##_sm_##arch##_begin, \
                                        tessel_kernel_library_##family##_sm_##arch##_end});
    TESSEL_KERNEL_LIBRARY_CUBINS
#undef TESSEL_CUBIN
    for (Family &family : list)
      family.entries = ptxEntries(family.ptxText());
    return list;
  }();
  return all;
}

/// Every entry point with its family, sorted by name.
const std::vector<std::pair<std::string, int32_t>> &entryFamilies() {
  static const std::vector<std::pair<std::string, int32_t>> table = [] {
    std::vector<std::pair<std::string, int32_t>> entries;
    const std::vector<Family> &all = families();
    for (size_t f = 0; f < all.size(); ++f)
      for (const std::string &name : all[f].entries)
        entries.emplace_back(name, static_cast<int32_t>(f));
    std::sort(entries.begin(), entries.end());
    return entries;
  }();
  return table;
}

//===----------------------------------------------------------------------===//
} // namespace

mlir::FailureOr<std::vector<KernelVariant>> KernelLibrary::plan(const StepView &step) {
  cpu::Attrs attrs;
  if (step.op) {
    mlir::FailureOr<EngineAttrs> engine = engineAttrs(step.op);
    if (mlir::failed(engine))
      return mlir::failure();
    for (auto &[name, value] : *engine)
      attrs.set(name, value);
  }
  StepPlanner planner(step, std::move(attrs));
  std::vector<KernelVariant> variants;
  if (!planner.readOperands())
    return variants;
  Launches simt = planner.plan();
  used.resize(families().size(), false);
  // Best tier first: a family's Tensor Core kernel, then its simt kernel.
  for (auto [tier, launches] : {std::pair(engine::Tier::tc_sm70, &planner.tensorCore),
                                std::pair(engine::Tier::simt, &simt)}) {
    if (!*launches)
      continue;
    KernelVariant variant;
    variant.tier = tier;
    variant.kernel = (*launches)->front().kernel;
    // CUDA 13 compiles for compute_75 at the oldest (which has mma.sync
    // m16n8k8 and ldmatrix too); the copy, concat and gather kernels move
    // 16-byte words.
    variant.minComputeCapability = 75;
    variant.alignment = 16;
    variant.launches = std::move(**launches);
    for (const Launch &launch : variant.launches)
      used.at(static_cast<size_t>(launch.module)) = true;
    variants.push_back(std::move(variant));
  }
  return variants;
}

std::vector<KernelModule> KernelLibrary::modules(const Targets &targets,
                                                 std::vector<int32_t> &remap) const {
  std::vector<KernelModule> result;
  remap.assign(families().size(), -1);
  for (size_t family = 0; family < used.size(); ++family) {
    if (!used[family])
      continue;
    remap[family] = static_cast<int32_t>(result.size());
    result.push_back(module(static_cast<int32_t>(family), targets));
  }
  return result;
}

KernelModule KernelLibrary::module(int32_t index, const Targets &targets) {
  const Family &family = families().at(static_cast<size_t>(index));
  KernelModule module{"tessel_library_" + family.name, {}};
  llvm::StringRef ptx = family.ptxText();
  module.images.push_back(KernelImage{false, 75, std::vector<uint8_t>(ptx.begin(), ptx.end())});
  // A cubin serves the GPUs of its major and of minors not below its own
  // (the runtime's rule), so sm_80's serves a target of sm_86 too.
  for (const Image &image : family.cubins) {
    bool wanted = llvm::any_of(targets.cubinArchs, [&](int target) {
      return target / 10 == image.arch / 10 && target >= image.arch;
    });
    // The build assembles the cubins of sm_90 and later from the PTX with
    // each entry waiting for the grids before it (tessel-ptx-wait).
    if (wanted)
      module.images.push_back(KernelImage{true, image.arch,
                                          std::vector<uint8_t>(image.begin, image.end),
                                          image.arch >= kGridDependencyArch});
  }
  return module;
}

const std::vector<std::string> &KernelLibrary::familyNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> list;
    for (const Family &family : families())
      list.push_back(family.name);
    return list;
  }();
  return names;
}

const std::vector<std::string> &KernelLibrary::entryNames(int32_t family) {
  return families().at(static_cast<size_t>(family)).entries;
}

const std::vector<std::string> &KernelLibrary::entryNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> list;
    for (const auto &[name, family] : entryFamilies())
      list.push_back(name);
    return list;
  }();
  return names;
}

int32_t KernelLibrary::familyOf(llvm::StringRef entry) {
  const auto &table = entryFamilies();
  auto it = std::lower_bound(table.begin(), table.end(), entry,
                             [](const std::pair<std::string, int32_t> &e, llvm::StringRef name) {
                               return llvm::StringRef(e.first) < name;
                             });
  return it != table.end() && it->first == entry ? it->second : -1;
}

std::vector<int> KernelLibrary::cubinArchs() {
  std::vector<int> archs;
#define TESSEL_ENTRY(arch) archs.push_back(arch);
  TESSEL_KERNEL_LIBRARY_CUBIN_ARCHS
#undef TESSEL_ENTRY
  return archs;
}

} // namespace tessel::codegen