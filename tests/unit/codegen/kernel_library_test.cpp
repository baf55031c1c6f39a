//===- kernel_library_test.cpp - the CUDA kernel library, without a GPU ---===//
//
// The embedded images (per family, PTX for compute_75 holding the family's
// entry points and a valid cubin per SM holding the same; the families
// partition the entry points), and the planner: which steps it covers, which
// entry, family, grid, block and bound arguments it gives them, and which
// families' modules an engine then carries. Whether the
// kernels compute what the CPU tier computes is the GPU conformance run's
// question.
//
//===----------------------------------------------------------------------===//
#include "KernelLibrary.h"
#include "KernelParams.h"
#include "TesselDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/DenseMap.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <string>

namespace {

using tessel::codegen::KernelArg;
using tessel::codegen::KernelImage;
using tessel::codegen::KernelLibrary;
using tessel::codegen::KernelModule;
using tessel::codegen::KernelVariant;
using tessel::codegen::StepView;
using tessel::codegen::Targets;
namespace kernels = tessel::kernels;

//===----------------------------------------------------------------------===//
// Images
//===----------------------------------------------------------------------===//

std::set<std::string> ptxEntries(const KernelImage &image) {
  std::string text(image.data.begin(), image.data.end());
  std::set<std::string> names;
  for (size_t at = text.find(".entry "); at != std::string::npos;
       at = text.find(".entry ", at + 1)) {
    size_t begin = at + 7, end = text.find('(', begin);
    names.insert(text.substr(begin, end - begin));
  }
  return names;
}

template <typename T> T readAt(const std::vector<uint8_t> &bytes, size_t offset) {
  T v{};
  if (offset + sizeof(T) <= bytes.size())
    std::memcpy(&v, bytes.data() + offset, sizeof(T));
  return v;
}

/// A cubin's SM (from its ELF header) and its function symbols.
struct Cubin {
  bool valid = false;
  int arch = 0;
  std::set<std::string> functions;
};

Cubin readCubin(const std::vector<uint8_t> &elf) {
  Cubin cubin;
  // ELF64, little-endian, EM_CUDA (190).
  if (elf.size() < 64 || std::memcmp(elf.data(), "\x7f" "ELF", 4) != 0 || elf[4] != 2 ||
      elf[5] != 1 || readAt<uint16_t>(elf, 18) != 190)
    return cubin;
  cubin.arch = static_cast<int>((readAt<uint32_t>(elf, 48) >> 8) & 0xff);
  const uint64_t shoff = readAt<uint64_t>(elf, 40);
  const uint16_t shentsize = readAt<uint16_t>(elf, 58), shnum = readAt<uint16_t>(elf, 60);
  for (uint16_t i = 0; i < shnum; ++i) {
    const size_t sh = shoff + size_t(i) * shentsize;
    if (readAt<uint32_t>(elf, sh + 4) != 2) // SHT_SYMTAB
      continue;
    const uint64_t offset = readAt<uint64_t>(elf, sh + 24), size = readAt<uint64_t>(elf, sh + 32);
    const uint32_t link = readAt<uint32_t>(elf, sh + 40);
    const uint64_t entsize = readAt<uint64_t>(elf, sh + 56);
    const uint64_t strtab = readAt<uint64_t>(elf, shoff + size_t(link) * shentsize + 24);
    for (uint64_t s = 0; entsize && s < size / entsize; ++s) {
      const size_t sym = offset + s * entsize;
      if ((readAt<uint8_t>(elf, sym + 4) & 0xf) != 2) // STT_FUNC
        continue;
      const size_t name = strtab + readAt<uint32_t>(elf, sym);
      if (name < elf.size())
        cubin.functions.insert(
            std::string(reinterpret_cast<const char *>(elf.data() + name),
                        strnlen(reinterpret_cast<const char *>(elf.data() + name),
                                elf.size() - name)));
    }
  }
  cubin.valid = true;
  return cubin;
}

const std::vector<int> kArchs = {75, 80, 90};

int32_t familyNamed(const std::string &name) {
  const std::vector<std::string> &names = KernelLibrary::familyNames();
  auto it = std::find(names.begin(), names.end(), name);
  return it == names.end() ? -1 : static_cast<int32_t>(it - names.begin());
}

TEST(KernelLibraryImages, FamiliesPartitionTheEntryPoints) {
  const std::vector<std::string> &families = KernelLibrary::familyNames();
  ASSERT_GT(families.size(), 1u);
  EXPECT_EQ(std::set<std::string>(families.begin(), families.end()).size(), families.size());
  std::set<std::string> all;
  size_t count = 0;
  for (size_t f = 0; f < families.size(); ++f) {
    const int32_t family = static_cast<int32_t>(f);
    KernelModule module = KernelLibrary::module(family, Targets{kArchs});
    EXPECT_EQ(module.name, "tessel_library_" + families[f]);
    ASSERT_FALSE(module.images.empty());
    const KernelImage &ptx = module.images.front();
    EXPECT_FALSE(ptx.cubin);
    EXPECT_EQ(ptx.arch, 75);
    std::string text(ptx.data.begin(), ptx.data.end());
    EXPECT_NE(text.find(".target sm_75"), std::string::npos) << families[f];
    EXPECT_EQ(text.find('\0'), std::string::npos) << "the writer adds the NUL";
    // The family's entries are its PTX's, and no other family defines one.
    const std::vector<std::string> &names = KernelLibrary::entryNames(family);
    std::set<std::string> entries = ptxEntries(ptx);
    EXPECT_FALSE(entries.empty()) << families[f] << " has no block in Library.cu";
    EXPECT_EQ(std::set<std::string>(names.begin(), names.end()), entries) << families[f];
    EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
    for (const std::string &name : names) {
      EXPECT_TRUE(all.insert(name).second) << name << " is in two families";
      EXPECT_EQ(KernelLibrary::familyOf(name), family) << name;
    }
    count += names.size();
  }
  const std::vector<std::string> &names = KernelLibrary::entryNames();
  EXPECT_EQ(names.size(), count);
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()), all);
  EXPECT_EQ(KernelLibrary::familyOf("tsl_no_such_kernel"), -1);

  // A few of every family, so that a library that lost a part shows here.
  for (const char *name :
       {"tsl_copy", "tsl_cast_f32_f16", "tsl_cast_f16_f32", "tsl_cast_i64_i32", "tsl_cast_b8_f32",
        "tsl_cast_f64_f16", "tsl_affine_w2", "tsl_affine_w4", "tsl_pad_w2", "tsl_tile_w8",
        "tsl_concat_w16", "tsl_gather_w4_i64", "tsl_where_w2", "tsl_relu_f16", "tsl_relu_i8",
        "tsl_sigmoid_f32", "tsl_clip_f16", "tsl_clip_u8", "tsl_hard_swish_f16",
        "tsl_leaky_relu_f16", "tsl_tanh_f16", "tsl_not_b8", "tsl_add_f16", "tsl_add_i64",
        "tsl_div_f32", "tsl_pow_f32_i64", "tsl_pow_i32_f32", "tsl_less_f32", "tsl_and_b8",
        "tsl_equal_b8", "tsl_reduce_mean_f32_thread", "tsl_reduce_mean_f32_block",
        "tsl_reduce_mean_f16_block", "tsl_reduce_mean_f16_columns",
        "tsl_reduce_sum_f32_columns_finish", "tsl_reduce_sum_i64_block", "tsl_reduce_max_f16_thread",
        "tsl_reduce_l2_f32_block", "tsl_softmax_f32_block", "tsl_softmax_f16_thread",
        "tsl_log_softmax_f32_thread", "tsl_argmax_f32", "tsl_max_pool_f16", "tsl_max_pool_u8",
        "tsl_avg_pool_f16", "tsl_max_pool_f16_vec", "tsl_avg_pool_f32_vec"})
    EXPECT_TRUE(all.count(name)) << name;
}

TEST(KernelLibraryImages, TheCnnKernelsAreInSmallFamiliesOfTheirOwn) {
  // What a CNN engine uses (its boundary's transpose, casts and pad, a max
  // pool, the global average pool, softmax) lies in families apart from the
  // rest of the library.
  const std::vector<std::pair<const char *, const char *>> expected = {
      {"tsl_copy", "move"},
      {"tsl_affine_w4", "move"},
      {"tsl_pad_w2", "move"},
      {"tsl_cast_f32_f16", "cast_half"},
      {"tsl_cast_f16_f32", "cast_half"},
      {"tsl_max_pool_f16", "max_pool"},
      {"tsl_max_pool_f32", "max_pool"},
      {"tsl_max_pool_f16_vec", "max_pool"},
      {"tsl_reduce_mean_f32_thread", "reduce_sum_f32"},
      {"tsl_reduce_mean_f32_block", "reduce_sum_f32"},
      {"tsl_softmax_f32_block", "softmax_f32"},
  };
  std::set<int32_t> used;
  for (const auto &[entry, family] : expected) {
    ASSERT_GE(familyNamed(family), 0) << family;
    EXPECT_EQ(KernelLibrary::familyOf(entry), familyNamed(family)) << entry;
    used.insert(familyNamed(family));
  }
  auto bytes = [](int32_t family) {
    size_t total = 0;
    for (const KernelImage &image : KernelLibrary::module(family, Targets{kArchs}).images)
      total += image.data.size();
    return total;
  };
  size_t cnn = 0, library = 0;
  for (size_t f = 0; f < KernelLibrary::familyNames().size(); ++f) {
    library += bytes(static_cast<int32_t>(f));
    if (used.count(static_cast<int32_t>(f)))
      cnn += bytes(static_cast<int32_t>(f));
  }
  EXPECT_LE(cnn, library / 8) << "a CNN engine carries " << cnn << " of the library's "
                              << library << " bytes";
}

TEST(KernelLibraryImages, CubinsAreValidForTheirArchAndHoldTheirFamilysEntryPoints) {
  const std::vector<int> archs = KernelLibrary::cubinArchs();
  EXPECT_EQ(archs, kArchs);
  const std::vector<std::string> &families = KernelLibrary::familyNames();
  for (size_t f = 0; f < families.size(); ++f) {
    const int32_t family = static_cast<int32_t>(f);
    KernelModule module = KernelLibrary::module(family, Targets{archs});
    ASSERT_EQ(module.images.size(), 1 + archs.size()) << families[f];
    for (size_t i = 0; i < archs.size(); ++i) {
      const KernelImage &image = module.images[1 + i];
      EXPECT_TRUE(image.cubin);
      EXPECT_EQ(image.arch, archs[i]);
      Cubin cubin = readCubin(image.data);
      ASSERT_TRUE(cubin.valid) << families[f] << " sm_" << archs[i];
      EXPECT_EQ(cubin.arch, archs[i]);
      for (const std::string &name : KernelLibrary::entryNames(family))
        EXPECT_TRUE(cubin.functions.count(name))
            << name << " missing from " << families[f] << "'s sm_" << archs[i];
    }
  }
}

TEST(KernelLibraryImages, ModuleCarriesTheCubinsTheTargetsCanLoad) {
  auto archsOf = [](const KernelModule &m) {
    std::vector<std::pair<bool, int>> archs;
    for (const KernelImage &image : m.images)
      archs.emplace_back(image.cubin, image.arch);
    return archs;
  };
  using V = std::vector<std::pair<bool, int>>;
  const int32_t move = familyNamed("move");
  ASSERT_GE(move, 0);
  EXPECT_EQ(archsOf(KernelLibrary::module(move, Targets{{80}})), (V{{false, 75}, {true, 80}}));
  // sm_86 and sm_89 load sm_80's cubin; sm_70 and sm_100 have none (sm_100
  // JIT-compiles the PTX; sm_70 is below CUDA 13's floor).
  EXPECT_EQ(archsOf(KernelLibrary::module(move, Targets{{86, 89}})),
            (V{{false, 75}, {true, 80}}));
  EXPECT_EQ(archsOf(KernelLibrary::module(move, Targets{{70, 100}})), (V{{false, 75}}));
  EXPECT_EQ(KernelLibrary::module(move, Targets{{75}}).name, "tessel_library_move");
}

TEST(KernelLibraryImages, NothingPlannedNoModules) {
  KernelLibrary library;
  std::vector<int32_t> remap{7};
  EXPECT_TRUE(library.modules(Targets{kArchs}, remap).empty());
  EXPECT_EQ(remap, std::vector<int32_t>(KernelLibrary::familyNames().size(), -1));
}

//===----------------------------------------------------------------------===//
// Planning
//===----------------------------------------------------------------------===//

/// Plans every op of the function `@f` in `source` as a step: tensor
/// indices number the arguments, then the results in order.
class KernelLibraryPlan : public ::testing::Test {
protected:
  KernelLibraryPlan() { context.loadDialect<tessel::TesselDialect, mlir::func::FuncDialect>(); }

  /// The variants of the steps, in order.
  std::vector<std::optional<KernelVariant>> plan(const char *source) {
    module = mlir::parseSourceString<mlir::ModuleOp>(source, &context);
    EXPECT_TRUE(module);
    std::vector<std::optional<KernelVariant>> variants;
    tiers.clear();
    if (!module)
      return variants;
    auto f = module->lookupSymbol<mlir::func::FuncOp>("f");
    llvm::DenseMap<mlir::Value, int32_t> index;
    types.clear();
    auto number = [&](mlir::Value v) {
      index[v] = static_cast<int32_t>(types.size());
      types.push_back(mlir::cast<mlir::RankedTensorType>(v.getType()));
    };
    for (mlir::Value arg : f.getArguments())
      number(arg);
    f.walk([&](mlir::Operation *op) {
      for (mlir::Value result : op->getResults())
        number(result);
    });
    library = KernelLibrary();
    f.walk([&](mlir::Operation *op) {
      if (op == f.getOperation() || mlir::isa<mlir::func::ReturnOp>(op) ||
          op->getName().getStringRef() == "tessel.constant")
        return;
      std::vector<int32_t> ins, outs;
      for (mlir::Value v : op->getOperands())
        ins.push_back(index.lookup(v));
      for (mlir::Value v : op->getResults())
        outs.push_back(index.lookup(v));
      StepView step{op, op->getName().stripDialect(), ins, outs, types};
      mlir::FailureOr<std::vector<KernelVariant>> planned = library.plan(step);
      EXPECT_TRUE(mlir::succeeded(planned));
      std::vector<KernelVariant> all = mlir::succeeded(planned) ? *planned
                                                                : std::vector<KernelVariant>{};
      for (const KernelVariant &variant : all)
        expectInTheirFamilies(variant);
      // The simt variant, last of a step's variants (best tier first).
      variants.push_back(all.empty() || all.back().tier != tessel::engine::Tier::simt
                             ? std::nullopt
                             : std::optional<KernelVariant>(all.back()));
      tiers.push_back(std::move(all));
    });
    return variants;
  }

  /// Every launch names its module by the family whose PTX defines its
  /// kernel.
  static void expectInTheirFamilies(const KernelVariant &variant) {
    const size_t families = KernelLibrary::familyNames().size();
    for (const tessel::codegen::Launch &launch : variant.launches) {
      ASSERT_GE(launch.module, 0) << launch.kernel;
      ASSERT_LT(static_cast<size_t>(launch.module), families) << launch.kernel;
      KernelModule module = KernelLibrary::module(launch.module, Targets{kArchs});
      EXPECT_TRUE(ptxEntries(module.images.front()).count(launch.kernel))
          << launch.kernel << " is not in " << module.name;
    }
  }

  /// The by-value struct of a launch's last argument.
  template <typename P> static P params(const KernelArg &arg) {
    P p{};
    EXPECT_EQ(arg.tensor, -1);
    EXPECT_EQ(arg.bytes.size(), sizeof(P));
    if (arg.bytes.size() == sizeof(P))
      std::memcpy(&p, arg.bytes.data(), sizeof(P));
    return p;
  }

  static void expectTensors(const tessel::codegen::Launch &launch, std::vector<int32_t> tensors) {
    ASSERT_EQ(launch.args.size(), tensors.size() + 1);
    for (size_t i = 0; i < tensors.size(); ++i) {
      EXPECT_EQ(launch.args[i].tensor, tensors[i]) << "argument " << i;
      EXPECT_TRUE(launch.args[i].bytes.empty());
    }
  }

  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::vector<mlir::RankedTensorType> types;
  KernelLibrary library; ///< the last plan()'s
  /// The last plan()'s variants of each step, every tier, best first.
  std::vector<std::vector<KernelVariant>> tiers;
};

TEST_F(KernelLibraryPlan, VariantIsSimtOnCompute75) {
  auto v = plan(R"(
    func.func @f(%x: tensor<2x3xf16>) -> tensor<2x3xf16> {
      %0 = tessel.relu %x : tensor<2x3xf16>
      return %0 : tensor<2x3xf16>
    })");
  ASSERT_EQ(v.size(), 1u);
  ASSERT_TRUE(v[0]);
  EXPECT_EQ(v[0]->tier, tessel::engine::Tier::simt);
  EXPECT_EQ(v[0]->minComputeCapability, 75);
  EXPECT_EQ(v[0]->alignment, 16);
  EXPECT_EQ(v[0]->kernel, "tsl_relu_f16");
  ASSERT_EQ(v[0]->launches.size(), 1u);
  const auto &launch = v[0]->launches[0];
  EXPECT_EQ(launch.module, familyNamed("unary_f16"));
  EXPECT_EQ(launch.kernel, "tsl_relu_f16");
  EXPECT_EQ(launch.grid, (std::array<uint32_t, 3>{1, 1, 1}));
  EXPECT_EQ(launch.block, (std::array<uint32_t, 3>{256, 1, 1}));
  expectTensors(launch, {0, 1});
  EXPECT_EQ(params<kernels::UnaryParams>(launch.args[2]).n, 6);
}

TEST_F(KernelLibraryPlan, BroadcastDimsCoalesce) {
  // A per-channel bias on NHWC: [1,4,4,8] + [8] coalesces to [16, 8], the
  // activation stepping (8, 1) and the bias (0, 1). 8 f16 channels are one
  // 16-byte word: the _vec kernel, its shape and strides in words.
  // A squeeze-excitation scale, [2,3,3,16] * [2,1,1,16]: [2, 9, 2] words.
  // 6 channels are not a whole word: element by element.
  auto v = plan(R"(
    func.func @f(%x: tensor<1x4x4x8xf16>, %b: tensor<8xf16>, %y: tensor<2x3x3x16xf16>, %s: tensor<2x1x1x16xf16>, %z: tensor<1x2x2x6xf16>, %c: tensor<6xf16>) -> tensor<1x4x4x8xf16> {
      %0 = tessel.add %x, %b : (tensor<1x4x4x8xf16>, tensor<8xf16>) -> tensor<1x4x4x8xf16>
      %1 = tessel.mul %y, %s : (tensor<2x3x3x16xf16>, tensor<2x1x1x16xf16>) -> tensor<2x3x3x16xf16>
      %2 = tessel.sub %z, %c : (tensor<1x2x2x6xf16>, tensor<6xf16>) -> tensor<1x2x2x6xf16>
      return %0 : tensor<1x4x4x8xf16>
    })");
  ASSERT_TRUE(v[0] && v[1] && v[2]);
  const auto &launch = v[0]->launches[0];
  EXPECT_EQ(launch.kernel, "tsl_add_f16_vec");
  expectTensors(launch, {0, 1, 6});
  auto p = params<kernels::BroadcastParams>(launch.args[3]);
  EXPECT_EQ(p.n, 16);
  ASSERT_EQ(p.rank, 2);
  EXPECT_EQ(p.shape[0], 16);
  EXPECT_EQ(p.shape[1], 1);
  EXPECT_EQ(p.stride[0][0], 1);
  EXPECT_EQ(p.stride[0][1], 1);
  EXPECT_EQ(p.stride[1][0], 0);
  EXPECT_EQ(p.stride[1][1], 1);
  EXPECT_EQ(v[1]->launches[0].kernel, "tsl_mul_f16_vec");
  p = params<kernels::BroadcastParams>(v[1]->launches[0].args[3]);
  EXPECT_EQ(p.n, 36);
  ASSERT_EQ(p.rank, 3);
  EXPECT_EQ(p.shape[0], 2);
  EXPECT_EQ(p.shape[1], 9);
  EXPECT_EQ(p.shape[2], 2);
  EXPECT_EQ(p.stride[0][0], 18);
  EXPECT_EQ(p.stride[0][1], 2);
  EXPECT_EQ(p.stride[1][0], 2);
  EXPECT_EQ(p.stride[1][1], 0);
  EXPECT_EQ(v[2]->launches[0].kernel, "tsl_sub_f16");
  p = params<kernels::BroadcastParams>(v[2]->launches[0].args[3]);
  EXPECT_EQ(p.n, 24);
  EXPECT_EQ(p.stride[1][0], 0);
}

TEST_F(KernelLibraryPlan, ComparisonsLogicAndWhere) {
  auto v = plan(R"(
    func.func @f(%a: tensor<4xf32>, %b: tensor<1xf32>, %c: tensor<4xi1>) -> tensor<4xf32> {
      %0 = tessel.less %a, %b : (tensor<4xf32>, tensor<1xf32>) -> tensor<4xi1>
      %1 = tessel.and %0, %c : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
      %2 = tessel.where %1, %a, %b : (tensor<4xi1>, tensor<4xf32>, tensor<1xf32>) -> tensor<4xf32>
      return %2 : tensor<4xf32>
    })");
  ASSERT_EQ(v.size(), 3u);
  ASSERT_TRUE(v[0] && v[1] && v[2]);
  EXPECT_EQ(v[0]->kernel, "tsl_less_f32");
  EXPECT_EQ(v[1]->kernel, "tsl_and_b8");
  EXPECT_EQ(v[2]->kernel, "tsl_where_w4");
  expectTensors(v[2]->launches[0], {4, 0, 1, 5});
  auto p = params<kernels::BroadcastParams>(v[2]->launches[0].args[4]);
  ASSERT_EQ(p.rank, 1);
  EXPECT_EQ(p.stride[0][0], 1);
  EXPECT_EQ(p.stride[1][0], 1);
  EXPECT_EQ(p.stride[2][0], 0);
}

TEST_F(KernelLibraryPlan, ModPicksItsEntryByTheFmodAttribute) {
  auto v = plan(R"(
    func.func @f(%a: tensor<4xi64>, %b: tensor<1xi64>, %x: tensor<4xf32>, %h: tensor<4xf16>,
                 %c: tensor<4xi8>, %d: tensor<4xf64>) -> tensor<4xi64> {
      %0 = tessel.mod %a, %b : (tensor<4xi64>, tensor<1xi64>) -> tensor<4xi64>
      %1 = tessel.mod %a, %b {fmod = true} : (tensor<4xi64>, tensor<1xi64>) -> tensor<4xi64>
      %2 = tessel.mod %x, %x {fmod = true} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      %3 = tessel.mod %h, %h {fmod = true} : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
      %4 = tessel.mod %c, %c : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
      %5 = tessel.mod %d, %d {fmod = true} : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
      return %0 : tensor<4xi64>
    })");
  ASSERT_EQ(v.size(), 6u);
  ASSERT_TRUE(v[0] && v[1] && v[2] && v[3]);
  EXPECT_EQ(v[0]->kernel, "tsl_mod_i64");
  EXPECT_EQ(v[0]->launches[0].module, familyNamed("binary_int"));
  expectTensors(v[0]->launches[0], {0, 1, 6});
  EXPECT_EQ(v[1]->kernel, "tsl_fmod_i64");
  EXPECT_EQ(v[2]->kernel, "tsl_fmod_f32");
  EXPECT_EQ(v[2]->launches[0].module, familyNamed("binary_f32"));
  EXPECT_EQ(v[3]->kernel, "tsl_fmod_f16");
  EXPECT_EQ(v[3]->launches[0].module, familyNamed("binary_f16"));
  EXPECT_FALSE(v[4]) << "i8 mod runs on the CPU tier";
  EXPECT_FALSE(v[5]) << "f64 math runs on the CPU tier";
}

TEST_F(KernelLibraryPlan, CastsBetweenTheCommonDtypes) {
  auto v = plan(R"(
    func.func @f(%x: tensor<5xf32>) -> tensor<5xi1> {
      %0 = tessel.cast %x : tensor<5xf32> -> tensor<5xf16>
      %1 = tessel.cast %0 : tensor<5xf16> -> tensor<5xi64>
      %2 = tessel.cast %1 : tensor<5xi64> -> tensor<5xi32>
      %3 = tessel.cast %2 : tensor<5xi32> -> tensor<5xi1>
      %4 = tessel.cast %x : tensor<5xf32> -> tensor<5xbf16>
      return %3 : tensor<5xi1>
    })");
  ASSERT_EQ(v.size(), 5u);
  EXPECT_EQ(v[0]->kernel, "tsl_cast_f32_f16");
  EXPECT_EQ(v[1]->kernel, "tsl_cast_f16_i64");
  EXPECT_EQ(v[2]->kernel, "tsl_cast_i64_i32");
  EXPECT_EQ(v[3]->kernel, "tsl_cast_i32_b8");
  EXPECT_FALSE(v[4]) << "bf16 runs on the CPU tier";
}

TEST_F(KernelLibraryPlan, UncoveredStepsFallBackToTheCpu) {
  auto v = plan(R"(
    func.func @f(%x: tensor<4xi32>, %y: tensor<4xf64>) -> tensor<4xi32> {
      %0 = tessel.sigmoid %x : tensor<4xi32>
      %1 = tessel.sin %y : tensor<4xf64>
      %2 = tessel.exp %y : tensor<4xf64>
      return %0 : tensor<4xi32>
    })");
  ASSERT_EQ(v.size(), 3u);
  EXPECT_FALSE(v[0]);
  EXPECT_FALSE(v[1]);
  EXPECT_FALSE(v[2]);
}

TEST_F(KernelLibraryPlan, UnaryParametersAreTheCpuKernelsDefaultsOrAttributes) {
  auto v = plan(R"(
    func.func @f(%x: tensor<3xf32>) -> tensor<3xf32> {
      %0 = tessel.leaky_relu %x {alpha = 0.25 : f32} : tensor<3xf32>
      %1 = tessel.shrink %0 {bias = 1.5 : f32, lambd = 2.0 : f32} : tensor<3xf32>
      %2 = tessel.clip %1 {min = -1.0 : f64, max = 6.0 : f64} : tensor<3xf32>
      return %2 : tensor<3xf32>
    })");
  ASSERT_EQ(v.size(), 3u);
  auto leaky = params<kernels::UnaryParams>(v[0]->launches[0].args[2]);
  EXPECT_EQ(leaky.alpha, 0.25);
  auto shrink = params<kernels::UnaryParams>(v[1]->launches[0].args[2]);
  EXPECT_EQ(shrink.alpha, 1.5);
  EXPECT_EQ(shrink.beta, 2.0);
  auto clip = params<kernels::ClipParams>(v[2]->launches[0].args[2]);
  EXPECT_EQ(clip.lo, -1.0);
  EXPECT_EQ(clip.hi, 6.0);
}

TEST_F(KernelLibraryPlan, ClipBoundsRoundAsTheCpuRoundsThem) {
  // 0.1 is not an f16: the CPU compares with f16(0.1) = 0.0999755859375.
  auto v = plan(R"(
    func.func @f(%x: tensor<3xf16>, %i: tensor<3xi8>) -> tensor<3xf16> {
      %0 = tessel.clip %x {min = 0.1 : f64, max = 1.0e6 : f64} : tensor<3xf16>
      %1 = tessel.clip %i {min = -1000.0 : f64, max = 3.7 : f64} : tensor<3xi8>
      return %0 : tensor<3xf16>
    })");
  auto f16 = params<kernels::ClipParams>(v[0]->launches[0].args[2]);
  EXPECT_EQ(f16.lo, 0.0999755859375);
  EXPECT_TRUE(std::isinf(f16.hi));
  auto i8 = params<kernels::ClipParams>(v[1]->launches[0].args[2]);
  EXPECT_EQ(v[1]->kernel, "tsl_clip_i8");
  EXPECT_EQ(i8.ilo, -128);
  EXPECT_EQ(i8.ihi, 3);
}

TEST_F(KernelLibraryPlan, TransposeToNhwcIsOneAffineCopy) {
  auto v = plan(R"(
    func.func @f(%x: tensor<2x3x4x5xf32>) -> tensor<2x4x5x3xf32> {
      %0 = tessel.transpose %x {perm = array<i64: 0, 2, 3, 1>} : (tensor<2x3x4x5xf32>) -> tensor<2x4x5x3xf32>
      return %0 : tensor<2x4x5x3xf32>
    })");
  ASSERT_TRUE(v[0]);
  EXPECT_EQ(v[0]->kernel, "tsl_affine_w4");
  auto p = params<kernels::AffineParams>(v[0]->launches[0].args[2]);
  EXPECT_EQ(p.n, 120);
  EXPECT_EQ(p.base, 0);
  // H and W merge: [2, 20, 3] reading strides [60, 1, 20].
  ASSERT_EQ(p.rank, 3);
  EXPECT_EQ(p.shape[0], 2);
  EXPECT_EQ(p.shape[1], 20);
  EXPECT_EQ(p.shape[2], 3);
  EXPECT_EQ(p.stride[0], 60);
  EXPECT_EQ(p.stride[1], 1);
  EXPECT_EQ(p.stride[2], 20);
}

TEST_F(KernelLibraryPlan, TransposeKeepingRowsMovesSixteenByteWords) {
  // [197, 32, 768] f16 -> [32, 197, 768]: rows of 768 halves stay whole, so
  // each thread moves 8 halves: [32, 197, 96] words reading [96, 3072, 1].
  // A slice starting at column 4 is not whole 16-byte words: 8-byte ones. A
  // transpose of the innermost dim stays one element a thread.
  auto v = plan(R"(
    func.func @f(%x: tensor<197x32x768xf16>, %y: tensor<4x40xf16>, %z: tensor<8x16xf16>)
        -> tensor<32x197x768xf16> {
      %0 = tessel.transpose %x {perm = array<i64: 1, 0, 2>} : (tensor<197x32x768xf16>) -> tensor<32x197x768xf16>
      %1 = tessel.slice %y {starts = array<i64: 0, 4>, steps = array<i64: 1, 1>} : (tensor<4x40xf16>) -> tensor<4x16xf16>
      %2 = tessel.transpose %z {perm = array<i64: 1, 0>} : (tensor<8x16xf16>) -> tensor<16x8xf16>
      return %0 : tensor<32x197x768xf16>
    })");
  ASSERT_TRUE(v[0] && v[1] && v[2]);
  EXPECT_EQ(v[0]->kernel, "tsl_affine_w16");
  auto t = params<kernels::AffineParams>(v[0]->launches[0].args[2]);
  EXPECT_EQ(t.n, 32 * 197 * 96);
  ASSERT_EQ(t.rank, 3);
  EXPECT_EQ(t.shape[0], 32);
  EXPECT_EQ(t.shape[1], 197);
  EXPECT_EQ(t.shape[2], 96);
  EXPECT_EQ(t.stride[0], 96);
  EXPECT_EQ(t.stride[1], 3072);
  EXPECT_EQ(t.stride[2], 1);
  EXPECT_EQ(v[1]->kernel, "tsl_affine_w8");
  auto s = params<kernels::AffineParams>(v[1]->launches[0].args[2]);
  EXPECT_EQ(s.n, 16);
  EXPECT_EQ(s.base, 1);
  EXPECT_EQ(s.stride[0], 10);
  EXPECT_EQ(v[2]->kernel, "tsl_affine_w2");
}

TEST_F(KernelLibraryPlan, SliceAndExpandAreAffineCopies) {
  auto v = plan(R"(
    func.func @f(%x: tensor<1x1x1x8xf32>, %y: tensor<3x1xf16>) -> tensor<1x1x1x4xf32> {
      %0 = tessel.slice %x {starts = array<i64: 0, 0, 0, 1>, steps = array<i64: 1, 1, 1, 2>} : (tensor<1x1x1x8xf32>) -> tensor<1x1x1x4xf32>
      %1 = tessel.expand %y : (tensor<3x1xf16>) -> tensor<2x3x4xf16>
      return %0 : tensor<1x1x1x4xf32>
    })");
  auto slice = params<kernels::AffineParams>(v[0]->launches[0].args[2]);
  EXPECT_EQ(slice.base, 1);
  ASSERT_EQ(slice.rank, 1);
  EXPECT_EQ(slice.stride[0], 2);
  EXPECT_EQ(v[1]->kernel, "tsl_affine_w2");
  auto expand = params<kernels::AffineParams>(v[1]->launches[0].args[2]);
  EXPECT_EQ(expand.n, 24);
  ASSERT_EQ(expand.rank, 3);
  EXPECT_EQ(expand.stride[0], 0);
  EXPECT_EQ(expand.stride[1], 1);
  EXPECT_EQ(expand.stride[2], 0);
}

TEST_F(KernelLibraryPlan, PadFillIsConvertedAsTheCpuCastConvertsIt) {
  auto v = plan(R"(
    func.func @f(%x: tensor<1x2x2x3xf16>) -> tensor<1x2x2x8xf16> {
      %0 = tessel.pad %x {mode = "constant", pads = array<i64: 0, 0, 0, 0, 0, 0, 0, 5>, value = 1.0 : f64} : (tensor<1x2x2x3xf16>) -> tensor<1x2x2x8xf16>
      return %0 : tensor<1x2x2x8xf16>
    })");
  ASSERT_TRUE(v[0]);
  EXPECT_EQ(v[0]->kernel, "tsl_pad_w2");
  auto p = params<kernels::PadParams>(v[0]->launches[0].args[2]);
  EXPECT_EQ(p.fill, 0x3c00u); // f16 1.0
  EXPECT_EQ(p.mode, 0);
  EXPECT_EQ(p.n, 32);
  ASSERT_EQ(p.rank, 4);
  EXPECT_EQ(p.shape[3], 8);
  EXPECT_EQ(p.inShape[3], 3);
  EXPECT_EQ(p.inStride[2], 3);
  EXPECT_EQ(p.begin[3], 0);
}

/// im2row: a block per input row where the row and its padding fit the
/// shared row (ResNet's stem at 224 wide: 16 + 224 x 3 f16), a thread per
/// 16-byte run of the result where they do not or the taps are dilated.
TEST_F(KernelLibraryPlan, Im2RowStagesARowWhereItFitsElseARunAThread) {
  auto v = plan(R"(
    func.func @f(%x: tensor<2x224x224x3xf16>, %w: tensor<1x2x4096x3xf16>, %d: tensor<1x2x16x3xf16>) -> (tensor<2x224x112x24xf16>, tensor<1x2x2048x24xf16>, tensor<1x2x6x16xf16>) {
      %0 = tessel.im2row %x {kernel = 7 : i64, stride = 2 : i64, dilation = 1 : i64, pad = 3 : i64} : (tensor<2x224x224x3xf16>) -> tensor<2x224x112x24xf16>
      %1 = tessel.im2row %w {kernel = 7 : i64, stride = 2 : i64, dilation = 1 : i64, pad = 3 : i64} : (tensor<1x2x4096x3xf16>) -> tensor<1x2x2048x24xf16>
      %2 = tessel.im2row %d {kernel = 3 : i64, stride = 2 : i64, dilation = 2 : i64, pad = 1 : i64} : (tensor<1x2x16x3xf16>) -> tensor<1x2x6x16xf16>
      return %0, %1, %2 : tensor<2x224x112x24xf16>, tensor<1x2x2048x24xf16>, tensor<1x2x6x16xf16>
    })");
  ASSERT_EQ(v.size(), 3u);
  ASSERT_TRUE(v[0] && v[1] && v[2]);
  EXPECT_EQ(v[0]->kernel, "tsl_im2row_rows_w2");
  ASSERT_EQ(v[0]->launches.size(), 1u);
  EXPECT_EQ(v[0]->launches[0].grid[0], 2u * 224u); // a block per row
  EXPECT_EQ(v[0]->launches[0].block[0], 128u);
  auto p = params<kernels::Im2RowParams>(v[0]->launches[0].args[2]);
  EXPECT_EQ(p.rows, 448);
  EXPECT_EQ(p.width, 224);
  EXPECT_EQ(p.channels, 3);
  EXPECT_EQ(p.outWidth, 112);
  EXPECT_EQ(p.depth, 24);
  EXPECT_EQ(p.kernel, 7);
  EXPECT_EQ(p.stride, 2);
  EXPECT_EQ(p.pad, 3);
  // 16 + 4096 x 3 f16 are past 8 KiB; dilation 2 reads taps apart.
  EXPECT_EQ(v[1]->kernel, "tsl_im2row_w2");
  EXPECT_EQ(v[2]->kernel, "tsl_im2row_w2");
  EXPECT_EQ(v[2]->launches[0].grid[0], 1u); // 2 x 6 x 1 runs
}

TEST_F(KernelLibraryPlan, ConcatIsALaunchPerOperandInTheWidestWord) {
  auto v = plan(R"(
    func.func @f(%a: tensor<2x8x3xf16>, %b: tensor<2x1x3xf16>) -> tensor<2x9x3xf16> {
      %0 = tessel.concat %a, %b {axis = 1 : i64} : (tensor<2x8x3xf16>, tensor<2x1x3xf16>) -> tensor<2x9x3xf16>
      return %0 : tensor<2x9x3xf16>
    })");
  ASSERT_TRUE(v[0]);
  ASSERT_EQ(v[0]->launches.size(), 2u);
  // Rows of 54 bytes: 2-byte words. Operand a: 48 bytes per row, at 0.
  EXPECT_EQ(v[0]->launches[0].kernel, "tsl_concat_w2");
  expectTensors(v[0]->launches[0], {0, 2});
  auto a = params<kernels::ConcatParams>(v[0]->launches[0].args[2]);
  EXPECT_EQ(a.rows, 2);
  EXPECT_EQ(a.chunk, 24);
  EXPECT_EQ(a.dstRow, 27);
  EXPECT_EQ(a.dstOffset, 0);
  expectTensors(v[0]->launches[1], {1, 2});
  auto b = params<kernels::ConcatParams>(v[0]->launches[1].args[2]);
  EXPECT_EQ(b.chunk, 3);
  EXPECT_EQ(b.dstOffset, 24);
}

TEST_F(KernelLibraryPlan, GatherMovesWholeRows) {
  auto v = plan(R"(
    func.func @f(%d: tensor<5x4xf32>, %i: tensor<3xi64>) -> tensor<3x4xf32> {
      %0 = tessel.gather %d, %i {axis = 0 : i64} : (tensor<5x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
      return %0 : tensor<3x4xf32>
    })");
  ASSERT_TRUE(v[0]);
  EXPECT_EQ(v[0]->kernel, "tsl_gather_w16_i64");
  auto p = params<kernels::GatherParams>(v[0]->launches[0].args[3]);
  EXPECT_EQ(p.outer, 1);
  EXPECT_EQ(p.extent, 5);
  EXPECT_EQ(p.count, 3);
  EXPECT_EQ(p.inner, 1);
}

TEST_F(KernelLibraryPlan, ShortF16PoolsAreOneLaunchOf16ByteLoads) {
  auto v = plan(R"(
    func.func @f(%x: tensor<1x24x24x960xf16>, %y: tensor<32x7x7x200xf16>, %z: tensor<1x24x24x964xf16>, %w: tensor<1x48x49x960xf16>) -> tensor<1x1x1x960xf16> {
      %0 = tessel.reduce_mean %x {axes = array<i64: 1, 2>, keepdims = true} : (tensor<1x24x24x960xf16>) -> tensor<1x1x1x960xf16>
      %1 = tessel.reduce_sum %y {axes = array<i64: 1, 2>, keepdims = false} : (tensor<32x7x7x200xf16>) -> tensor<32x200xf16>
      %2 = tessel.reduce_mean %z {axes = array<i64: 1, 2>, keepdims = true} : (tensor<1x24x24x964xf16>) -> tensor<1x1x1x964xf16>
      %3 = tessel.reduce_mean %w {axes = array<i64: 1, 2>, keepdims = true} : (tensor<1x48x49x960xf16>) -> tensor<1x1x1x960xf16>
      return %0 : tensor<1x1x1x960xf16>
    })");
  ASSERT_TRUE(v[0] && v[1] && v[2] && v[3]);
  // EfficientNetV2-S's squeeze-excitation pool at batch 1: 576 rows (4 or 5
  // a row group of 128), 960 channels in 15 blocks of 64, one launch, no
  // workspace.
  EXPECT_EQ(v[0]->kernel, "tsl_reduce_mean_f16_columns_vec");
  ASSERT_EQ(v[0]->launches.size(), 1u);
  ASSERT_EQ(v[0]->launches[0].args.size(), 3u);
  auto p = params<kernels::ColumnParams>(v[0]->launches[0].args[2]);
  EXPECT_EQ(p.outer, 1);
  EXPECT_EQ(p.rows, 576);
  EXPECT_EQ(p.inner, 960);
  EXPECT_EQ(p.splits, 1);
  EXPECT_EQ(v[0]->launches[0].grid[0], 15u);
  EXPECT_EQ(v[0]->launches[0].block[0], 1024u);
  // 32 images of 200 channels (the last block of each 8 channels wide).
  EXPECT_EQ(v[1]->launches[0].kernel, "tsl_reduce_sum_f16_columns_vec");
  EXPECT_EQ(v[1]->launches[0].grid[0], 32u * 4);
  // Channels not a multiple of 8 (no 16-byte rows) and more than 2304 rows
  // (18 a row group; 48 x 49 = 2352) keep the 2-byte columns kernel.
  EXPECT_EQ(v[2]->launches[0].kernel, "tsl_reduce_mean_f16_columns");
  EXPECT_EQ(v[3]->launches[0].kernel, "tsl_reduce_mean_f16_columns");
}

TEST_F(KernelLibraryPlan, GlobalPoolOnNhwcIsByColumns) {
  auto v = plan(R"(
    func.func @f(%x: tensor<2x7x7x2048xf32>, %y: tensor<2x3x50xf32>, %z: tensor<1x56x56x96xf16>, %w: tensor<2x7x7x2048xf32>) -> tensor<2x1x1x2048xf32> {
      %0 = tessel.reduce_mean %x {axes = array<i64: 1, 2>, keepdims = true} : (tensor<2x7x7x2048xf32>) -> tensor<2x1x1x2048xf32>
      %1 = tessel.reduce_sum %y {axes = array<i64: 2>, keepdims = false} : (tensor<2x3x50xf32>) -> tensor<2x3xf32>
      %2 = tessel.reduce_mean %z {axes = array<i64: 1, 2>, keepdims = true} : (tensor<1x56x56x96xf16>) -> tensor<1x1x1x96xf16>
      %3 = tessel.reduce_max %w {axes = array<i64: 1, 2>, keepdims = true} : (tensor<2x7x7x2048xf32>) -> tensor<2x1x1x2048xf32>
      return %0 : tensor<2x1x1x2048xf32>
    })");
  ASSERT_TRUE(v[0] && v[1] && v[2] && v[3]);
  // ResNet-50's global pool, [2, 49, 2048] over the 49: 128 blocks of 32
  // columns (2 x 64 tiles), too few rows to split: one launch.
  EXPECT_EQ(v[0]->kernel, "tsl_reduce_mean_f32_columns");
  ASSERT_EQ(v[0]->launches.size(), 1u);
  auto p = params<kernels::ColumnParams>(v[0]->launches[0].args[3]);
  EXPECT_EQ(p.outer, 2);
  EXPECT_EQ(p.rows, 49);
  EXPECT_EQ(p.inner, 2048);
  EXPECT_EQ(p.splits, 1);
  EXPECT_EQ(p.chunk, 49);
  EXPECT_EQ(v[0]->launches[0].grid[0], 128u);
  EXPECT_EQ(v[0]->launches[0].grid[1], 1u);
  EXPECT_EQ(v[0]->launches[0].block[0], 256u);
  // The innermost dim reduced: a block per result, sized to the row.
  EXPECT_EQ(v[1]->kernel, "tsl_reduce_sum_f32_block");
  EXPECT_EQ(v[1]->launches[0].grid[0], 6u);
  EXPECT_EQ(v[1]->launches[0].block[0], 64u);
  // An EfficientNet squeeze-excitation pool at batch 1: 3 tiles of columns,
  // the 3136 rows in 49 chunks of 64 (256 blocks wanted, 64 rows at least),
  // their partial sums in the workspace, then the finishing launch.
  EXPECT_EQ(v[2]->kernel, "tsl_reduce_mean_f16_columns");
  ASSERT_EQ(v[2]->launches.size(), 2u);
  p = params<kernels::ColumnParams>(v[2]->launches[0].args[3]);
  EXPECT_EQ(p.outer, 1);
  EXPECT_EQ(p.rows, 3136);
  EXPECT_EQ(p.inner, 96);
  EXPECT_EQ(p.splits, 49);
  EXPECT_EQ(p.chunk, 64);
  EXPECT_EQ(v[2]->launches[0].grid[0], 3u);
  EXPECT_EQ(v[2]->launches[0].grid[1], 49u);
  EXPECT_EQ(v[2]->launches[0].args[2].workspaceBytes, 49u * 96 * 8);
  EXPECT_EQ(v[2]->launches[1].kernel, "tsl_reduce_mean_f16_columns_finish");
  EXPECT_EQ(v[2]->launches[1].args[0].workspaceBytes, 49u * 96 * 8);
  // The selections keep a thread per result, in the CPU's order.
  EXPECT_EQ(v[3]->kernel, "tsl_reduce_max_f32_thread");
  auto r = params<kernels::ReduceParams>(v[3]->launches[0].args[2]);
  EXPECT_EQ(r.numOut, 4096);
  EXPECT_EQ(r.count, 49);
  ASSERT_EQ(r.keptRank, 2);
  EXPECT_EQ(r.keptStride[0], 49 * 2048);
  ASSERT_EQ(r.reducedRank, 1);
  EXPECT_EQ(r.reducedStride[0], 2048);
}

TEST_F(KernelLibraryPlan, EmptyReductionsAreNotByColumns) {
  // ONNX's *_empty_set: the reduced dim has extent 0 (every result is the
  // identity). The columns planner divided by its zero row count.
  auto v = plan(R"(
    func.func @f(%x: tensor<2x0x4xf32>) -> tensor<2x1x4xf32> {
      %0 = tessel.reduce_sum %x {axes = array<i64: 1>, keepdims = true} : (tensor<2x0x4xf32>) -> tensor<2x1x4xf32>
      return %0 : tensor<2x1x4xf32>
    })");
  ASSERT_TRUE(v[0]);
  EXPECT_EQ(v[0]->kernel, "tsl_reduce_sum_f32_block");
}

TEST_F(KernelLibraryPlan, SoftmaxAndArgmax) {
  auto v = plan(R"(
    func.func @f(%x: tensor<2x1000xf32>, %y: tensor<2x3x4xf16>) -> tensor<2x1000xf32> {
      %0 = tessel.softmax %x {axis = 1 : i64} : tensor<2x1000xf32>
      %1 = tessel.log_softmax %y {axis = 1 : i64} : tensor<2x3x4xf16>
      %2 = tessel.argmax %x {axis = 1 : i64, keepdims = false, select_last_index = true} : (tensor<2x1000xf32>) -> tensor<2xi64>
      return %0 : tensor<2x1000xf32>
    })");
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0]->kernel, "tsl_softmax_f32_block");
  EXPECT_EQ(v[0]->launches[0].grid[0], 2u);
  EXPECT_EQ(v[0]->launches[0].block[0], 256u);
  EXPECT_EQ(v[1]->kernel, "tsl_log_softmax_f16_thread");
  auto s = params<kernels::AxisParams>(v[1]->launches[0].args[2]);
  EXPECT_EQ(s.outer, 2);
  EXPECT_EQ(s.length, 3);
  EXPECT_EQ(s.inner, 4);
  EXPECT_EQ(v[2]->kernel, "tsl_argmax_f32");
  EXPECT_EQ(params<kernels::AxisParams>(v[2]->launches[0].args[2]).last, 1);
}

TEST_F(KernelLibraryPlan, PoolsRightAlignTheirSpatialDims) {
  // 12 f16 channels are no whole number of 16-byte groups: a thread per
  // result element. 16 are: a thread per 8 channels (the _vec kernels).
  auto v = plan(R"(
    func.func @f(%x: tensor<1x8x8x12xf16>, %z: tensor<1x8x8x16xf16>) -> tensor<1x4x4x12xf16> {
      %0 = tessel.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 0, 0>, dilations = array<i64: 1, 1>, layout = #tessel<layout NHWC>} : (tensor<1x8x8x12xf16>) -> tensor<1x4x4x12xf16>
      %1 = tessel.avg_pool %z {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, count_include_pad = true, layout = #tessel<layout NHWC>} : (tensor<1x8x8x16xf16>) -> tensor<1x4x4x16xf16>
      return %0 : tensor<1x4x4x12xf16>
    })");
  ASSERT_TRUE(v[0] && v[1]);
  EXPECT_EQ(v[0]->kernel, "tsl_max_pool_f16");
  auto p = params<kernels::PoolParams>(v[0]->launches[0].args[2]);
  EXPECT_EQ(p.n, 192);
  EXPECT_EQ(p.channels, 12);
  EXPECT_EQ(p.inC, 1);
  EXPECT_EQ(p.inS, 12);
  EXPECT_EQ(p.outC, 1);
  EXPECT_EQ(p.spatialRank, 2);
  EXPECT_EQ(p.inSpatial[0], 1);
  EXPECT_EQ(p.kernel[0], 1);
  EXPECT_EQ(p.inSpatial[1], 8);
  EXPECT_EQ(p.kernel[2], 3);
  EXPECT_EQ(p.stride[2], 2);
  EXPECT_EQ(p.padBegin[1], 1);
  EXPECT_EQ(p.padEnd[1], 0);
  EXPECT_EQ(v[1]->kernel, "tsl_avg_pool_f16_vec");
  auto q = params<kernels::PoolParams>(v[1]->launches[0].args[2]);
  EXPECT_EQ(q.includePad, 1);
  EXPECT_EQ(q.n, 32);       // 16 positions x 2 groups of 8 channels
  EXPECT_EQ(q.channels, 2); // groups
  EXPECT_EQ(q.inC, 8);      // a group's first channel
  EXPECT_EQ(q.inS, 16);     // a position's stride: every channel
}

TEST_F(KernelLibraryPlan, CopiesReshapesAndTheWritersCopySteps) {
  auto v = plan(R"(
    func.func @f(%x: tensor<1x1x1x40xf32>) -> tensor<1x40xf32> {
      %0 = tessel.reshape %x : (tensor<1x1x1x40xf32>) -> tensor<1x40xf32>
      return %0 : tensor<1x40xf32>
    })");
  ASSERT_TRUE(v[0]);
  EXPECT_EQ(v[0]->kernel, "tsl_copy");
  EXPECT_EQ(params<kernels::CopyParams>(v[0]->launches[0].args[2]).bytes, 160u);

  // The writer's output copies have no op.
  std::vector<int32_t> ins{0}, outs{1};
  StepView copy{nullptr, "copy", ins, outs, types};
  auto planned = library.plan(copy);
  ASSERT_TRUE(mlir::succeeded(planned));
  ASSERT_EQ(planned->size(), 1u);
  EXPECT_EQ(planned->front().kernel, "tsl_copy");
  expectTensors(planned->front().launches[0], {0, 1});
}

TEST_F(KernelLibraryPlan, EveryLaunchNamesAnEntryPoint) {
  auto v = plan(R"(
    func.func @f(%x: tensor<2x3x4x5xf16>, %i: tensor<2xi32>) -> tensor<2x3x4x5xf16> {
      %0 = tessel.sigmoid %x : tensor<2x3x4x5xf16>
      %1 = tessel.tile %x : (tensor<2x3x4x5xf16>) -> tensor<4x3x4x10xf16>
      %2 = tessel.reduce_max %x {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<2x3x4x5xf16>) -> tensor<f16>
      %3 = tessel.pow %x, %x : (tensor<2x3x4x5xf16>, tensor<2x3x4x5xf16>) -> tensor<2x3x4x5xf16>
      %4 = tessel.gather %x, %i {axis = 3 : i64} : (tensor<2x3x4x5xf16>, tensor<2xi32>) -> tensor<2x3x4x2xf16>
      %5 = tessel.identity %x : tensor<2x3x4x5xf16>
      return %0 : tensor<2x3x4x5xf16>
    })");
  const std::vector<std::string> &names = KernelLibrary::entryNames();
  ASSERT_EQ(v.size(), 6u);
  for (const auto &variant : v) {
    ASSERT_TRUE(variant);
    for (const auto &launch : variant->launches) {
      EXPECT_TRUE(std::binary_search(names.begin(), names.end(), launch.kernel)) << launch.kernel;
      const std::vector<std::string> &family = KernelLibrary::entryNames(launch.module);
      EXPECT_TRUE(std::binary_search(family.begin(), family.end(), launch.kernel)) << launch.kernel;
      EXPECT_GE(launch.grid[0], 1u);
      EXPECT_LE(launch.grid[0], 65535u);
      EXPECT_GE(launch.block[0], 32u);
      EXPECT_LE(launch.block[0], 1024u);
    }
  }
}

TEST_F(KernelLibraryPlan, ModulesAreTheFamiliesUsedInFamilyOrder) {
  auto v = plan(R"(
    func.func @f(%x: tensor<1x8x8x16xf16>) -> tensor<1x4x4x16xf16> {
      %0 = tessel.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, layout = #tessel<layout NHWC>} : (tensor<1x8x8x16xf16>) -> tensor<1x4x4x16xf16>
      %1 = tessel.relu %0 : tensor<1x4x4x16xf16>
      %2 = tessel.transpose %1 {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x4x4x16xf16>) -> tensor<1x16x4x4xf16>
      %3 = tessel.sigmoid %2 : tensor<1x16x4x4xf16>
      return %0 : tensor<1x4x4x16xf16>
    })");
  ASSERT_EQ(v.size(), 4u);
  ASSERT_TRUE(v[0] && v[1] && v[2] && v[3]);
  const int32_t maxPool = familyNamed("max_pool"), unary = familyNamed("unary_f16"),
                move = familyNamed("move");
  EXPECT_EQ(v[0]->launches[0].module, maxPool);
  EXPECT_EQ(v[1]->launches[0].module, unary);
  EXPECT_EQ(v[2]->launches[0].module, move);
  EXPECT_EQ(v[3]->launches[0].module, unary);

  std::vector<int32_t> remap;
  std::vector<KernelModule> modules = library.modules(Targets{{80}}, remap);
  std::vector<std::pair<int32_t, std::string>> used;
  for (int32_t family : std::set<int32_t>{maxPool, unary, move})
    used.emplace_back(family, "tessel_library_" + KernelLibrary::familyNames()[family]);
  ASSERT_EQ(modules.size(), used.size());
  ASSERT_EQ(remap.size(), KernelLibrary::familyNames().size());
  for (size_t i = 0; i < used.size(); ++i) {
    EXPECT_EQ(modules[i].name, used[i].second);
    EXPECT_EQ(remap[used[i].first], static_cast<int32_t>(i));
    ASSERT_EQ(modules[i].images.size(), 2u);
    EXPECT_EQ(modules[i].images[1].arch, 80);
  }
  EXPECT_EQ(std::count(remap.begin(), remap.end(), -1),
            static_cast<std::ptrdiff_t>(remap.size() - used.size()));
}

TEST_F(KernelLibraryPlan, AttentionHasATensorCoreAndASimtVariant) {
  auto v = plan(R"(
    func.func @f(%q: tensor<2x12x100x64xf16>, %k: tensor<2x12x300x64xf16>,
                 %v: tensor<2x12x300x64xf16>, %m: tensor<2x1x1x300xi1>,
                 %q3: tensor<24x70x40xf16>, %k3: tensor<24x70x40xf16>, %v3: tensor<24x70x72xf16>,
                 %mf: tensor<70x70xf16>, %qf: tensor<4x9x128xf32>, %q6: tensor<4x9x100xf16>,
                 %qb: tensor<8x12x512x64xf16>)
        -> tensor<2x12x100x64xf16> {
      %0 = tessel.attention %q, %k, %v mask %m {scale = 0.125 : f32} : (tensor<2x12x100x64xf16>, tensor<2x12x300x64xf16>, tensor<2x12x300x64xf16>, tensor<2x1x1x300xi1>) -> tensor<2x12x100x64xf16>
      %1 = tessel.attention %q3, %k3, %v3 mask %mf {scale = 0.5 : f32, causal = true} : (tensor<24x70x40xf16>, tensor<24x70x40xf16>, tensor<24x70x72xf16>, tensor<70x70xf16>) -> tensor<24x70x72xf16>
      %2 = tessel.attention %qf, %qf, %qf {scale = 1.0 : f32} : (tensor<4x9x128xf32>, tensor<4x9x128xf32>, tensor<4x9x128xf32>) -> tensor<4x9x128xf32>
      %3 = tessel.attention %q6, %q6, %q6 {scale = 1.0 : f32} : (tensor<4x9x100xf16>, tensor<4x9x100xf16>, tensor<4x9x100xf16>) -> tensor<4x9x100xf16>
      %4 = tessel.attention %qb, %qb, %qb {scale = 0.125 : f32} : (tensor<8x12x512x64xf16>, tensor<8x12x512x64xf16>, tensor<8x12x512x64xf16>) -> tensor<8x12x512x64xf16>
      return %0 : tensor<2x12x100x64xf16>
    })");
  ASSERT_EQ(tiers.size(), 5u);
  // f16, head dim 64, a bool key-padding mask: tc-sm70 then simt. 24 x
  // ceil(100 / 64) = 48 blocks of 64 rows would leave most SMs idle: the
  // split-keys kernel, 16 rows a block.
  ASSERT_EQ(tiers[0].size(), 2u);
  EXPECT_EQ(tiers[0][0].tier, tessel::engine::Tier::tc_sm70);
  EXPECT_EQ(tiers[0][0].minComputeCapability, 75);
  EXPECT_EQ(tiers[0][0].kernel, "tsl_attention_f16_tcsplit_d64");
  EXPECT_EQ(tiers[0][1].tier, tessel::engine::Tier::simt);
  EXPECT_EQ(tiers[0][1].kernel, "tsl_attention_f16_simt");
  const tessel::codegen::Launch &tc = tiers[0][0].launches[0];
  EXPECT_EQ(tc.grid, (std::array<uint32_t, 3>{24, 7, 1})); // 2 x 12 heads, 100 rows / 16
  EXPECT_EQ(tc.block, (std::array<uint32_t, 3>{128, 1, 1}));
  EXPECT_EQ(tc.sharedBytes, static_cast<uint32_t>(kernels::attentionSplitSharedBytes(64)));
  expectTensors(tc, {0, 1, 2, 3, 11});
  auto p = params<kernels::AttentionParams>(tc.args[5]);
  EXPECT_EQ(p.batches, 24);
  EXPECT_EQ(p.heads, 12);
  EXPECT_EQ(p.sq, 100);
  EXPECT_EQ(p.sk, 300);
  EXPECT_EQ(p.d, 64);
  EXPECT_EQ(p.dv, 64);
  EXPECT_FLOAT_EQ(p.scale, 0.125f);
  EXPECT_EQ(p.causal, 0);
  EXPECT_EQ(p.maskKind, 3);
  EXPECT_EQ(p.maskB, 300); // [2, 1, 1, 300]: b steps a row of keys, h and i broadcast
  EXPECT_EQ(p.maskH, 0);
  EXPECT_EQ(p.maskI, 0);
  EXPECT_EQ(p.maskJ, 1);
  EXPECT_EQ(tiers[0][1].launches[0].grid, (std::array<uint32_t, 3>{24, 7, 1})); // 100 / 16
  // Rank 3, head dims 40 and 72: padded to 80; an f16 [Sq, Sk] mask, causal.
  ASSERT_EQ(tiers[1].size(), 2u);
  EXPECT_EQ(tiers[1][0].kernel, "tsl_attention_f16_tcsplit_d80");
  p = params<kernels::AttentionParams>(tiers[1][0].launches[0].args[5]);
  EXPECT_EQ(p.heads, 1);
  EXPECT_EQ(p.maskKind, 2);
  EXPECT_EQ(p.maskB, 0);
  EXPECT_EQ(p.maskI, 70);
  EXPECT_EQ(p.maskJ, 1);
  EXPECT_EQ(p.causal, 1);
  expectTensors(tiers[1][0].launches[0], {4, 5, 6, 7, 12});
  // f32: simt only, no mask (a null pointer).
  ASSERT_EQ(tiers[2].size(), 1u);
  EXPECT_EQ(tiers[2][0].tier, tessel::engine::Tier::simt);
  EXPECT_EQ(tiers[2][0].kernel, "tsl_attention_f32_simt");
  expectTensors(tiers[2][0].launches[0], {8, 8, 8, -1, 13});
  // A head dim that is not a multiple of 8 has no Tensor Core kernel.
  ASSERT_EQ(tiers[3].size(), 1u);
  EXPECT_EQ(tiers[3][0].kernel, "tsl_attention_f16_simt");
  // 8 x 12 x (512 / 64) = 768 blocks (at least kAttentionSplitBelowBlocks):
  // the 64-row kernel.
  ASSERT_EQ(tiers[4].size(), 2u);
  EXPECT_EQ(tiers[4][0].kernel, "tsl_attention_f16_tc_d64");
  EXPECT_EQ(tiers[4][0].launches[0].grid, (std::array<uint32_t, 3>{96, 8, 1}));
  EXPECT_EQ(tiers[4][0].launches[0].sharedBytes,
            static_cast<uint32_t>(kernels::attentionTcSharedBytes(64)));
}

} // namespace

TEST_F(KernelLibraryPlan, SqueezeIsOneLaunchWithArrivalCounters) {
  auto v = plan(R"(
    func.func @f(%x: tensor<1x24x24x960xf16>, %w: tensor<40x1x1x960xf16>, %b: tensor<40xf16>, %y: tensor<32x112x112x32xf16>, %v: tensor<8x1x1x32xf16>, %z: tensor<1x4x4x8xf32>, %u: tensor<8x1x1x8xf32>) -> tensor<1x1x1x40xf16> {
      %0 = tessel.pool_fc %x, %w bias %b {activation = #tessel<activation silu>} : (tensor<1x24x24x960xf16>, tensor<40x1x1x960xf16>, tensor<40xf16>) -> tensor<1x1x1x40xf16>
      %1 = tessel.pool_fc %y, %v {activation = #tessel<activation clip>, alpha = 0.0 : f32, beta = 6.0 : f32} : (tensor<32x112x112x32xf16>, tensor<8x1x1x32xf16>) -> tensor<32x1x1x8xf16>
      %2 = tessel.pool_fc %z, %u : (tensor<1x4x4x8xf32>, tensor<8x1x1x8xf32>) -> tensor<1x1x1x8xf32>
      return %0 : tensor<1x1x1x40xf16>
    })");
  ASSERT_TRUE(v[0] && v[1]);
  // EfficientNetV2-S's squeeze at batch 1: 960 channels in 15 tiles of 64,
  // 576 rows in 3 chunks of 192 (at most 8 rows a thread; 45 blocks), the
  // blocks' parts of the 40 outputs in the workspace, one counter.
  EXPECT_EQ(v[0]->kernel, "tsl_pool_fc_f16");
  ASSERT_EQ(v[0]->launches.size(), 1u);
  const auto &l = v[0]->launches[0];
  ASSERT_EQ(l.args.size(), 7u);
  auto p = params<kernels::PoolFcParams>(l.args[6]);
  EXPECT_EQ(p.outer, 1);
  EXPECT_EQ(p.rows, 576);
  EXPECT_EQ(p.channels, 960);
  EXPECT_EQ(p.outChannels, 40);
  EXPECT_EQ(p.tiles, 15);
  EXPECT_EQ(p.splits, 3);
  EXPECT_EQ(p.chunk, 192);
  EXPECT_EQ(p.activation, 9); // silu
  EXPECT_EQ(l.grid[0], 45u);
  EXPECT_EQ(l.grid[1], 1u);
  EXPECT_EQ(l.block[0], 256u);
  EXPECT_EQ(l.args[4].workspaceBytes, 45u * 40 * 4);
  EXPECT_EQ(l.args[5].counterBytes, 4u);
  EXPECT_EQ(l.args[5].workspaceBytes, 0u);
  // 32 images of 112 x 112 rows: chunks of at most 256 rows, one tile, a
  // counter per image; clip's bounds carried.
  auto q = params<kernels::PoolFcParams>(v[1]->launches[0].args[6]);
  EXPECT_EQ(q.splits, 49);
  EXPECT_EQ(q.chunk, 256);
  EXPECT_EQ(q.activation, 2);
  EXPECT_EQ(q.beta, 6.0f);
  EXPECT_EQ(v[1]->launches[0].grid[1], 32u);
  EXPECT_EQ(v[1]->launches[0].args[5].counterBytes, 32u * 4);
  // f32 has no GPU kernel (the pass fuses f16 only).
  EXPECT_FALSE(v[2]);
}
