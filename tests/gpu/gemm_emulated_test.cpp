//===- gemm_emulated_test.cpp - the GEMM kernels, run without a GPU ------===//
//
// Every CI machine lacks a GPU, so these tests run the generated kernels on
// the CPU (tests/gpu/emulator: the GPU IR emulator, float64 references):
// convs, gemms and matmuls with every epilogue on both tiers with the
// heuristic's tiles, then forced tilings the heuristic keeps for big
// problems, the pipelined K loop's edge cases, the direct conv, split-K.
//
//===----------------------------------------------------------------------===//
#include "GemmEmulation.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <string>
#include <tuple>
#include <vector>

using namespace mlir;
using namespace tessel::codegen;
using namespace tessel::gpuemu;

namespace {

struct Case {
  std::string name;
  GemmProblem problem;
};

/// `p` (a conv) reading its input times a per-image, per-channel scale.
GemmProblem scaled(GemmProblem p) {
  p.aScale = p.a;
  return p;
}

std::vector<Case> cases() {
  using A = Activation;
  const ElemType f32 = ElemType::F32;
  std::vector<Case> list = {
      {"conv3x3_bias_relu", withEpilogue(conv(1, 6, 6, 16, 24, 3, 3, 1, 1), true, false, A::Relu)},
      {"conv3x3_s2_residual", withEpilogue(conv(2, 7, 7, 16, 16, 3, 3, 2, 1), true, true, A::Relu)},
      {"conv1x1_odd_m", withEpilogue(conv(1, 7, 7, 32, 40, 1, 1, 1, 0), true, true, A::None)},
      {"conv1x1_s2", conv(1, 9, 9, 16, 32, 1, 1, 2, 0)},
      {"conv7x7_s2_c8", withEpilogue(conv(1, 19, 19, 8, 16, 7, 7, 2, 3), true, false, A::Relu)},
      {"conv_c3_scalar", withEpilogue(conv(1, 8, 8, 3, 8, 3, 3, 1, 1), true, false, A::Clip, 0, 6)},
      // ResNet's stem after its im2row (--tessel-pad-channels): 7x1 over 24
      // channels (7 taps x 3, padded), stride 2 and pads 3 along H only.
      {"conv_stem_rows", [] {
         ConvShape cs;
         cs.batch = 2, cs.inH = 19, cs.inW = 10, cs.inC = 24, cs.outC = 16;
         cs.kH = 7, cs.kW = 1, cs.strideH = 2, cs.strideW = 1, cs.padH = 3, cs.padW = 0;
         cs.dilH = cs.dilW = 1, cs.group = 1;
         cs.outH = (19 + 6 - 7) / 2 + 1, cs.outW = 10;
         return withEpilogue(GemmProblem::forConv(cs, ElemType::F16), true, false, A::Relu);
       }()},
      {"conv_group2", withEpilogue(conv(1, 6, 6, 16, 16, 3, 3, 1, 1, ElemType::F16, 2), true, true,
                                   A::Relu)},
      {"conv_dilation2", withEpilogue(conv(1, 9, 9, 8, 8, 3, 3, 1, 2, ElemType::F16, 1, 2), false,
                                      false, A::Sigmoid)},
      {"conv_f32_tanh", withEpilogue(conv(1, 6, 6, 12, 20, 3, 3, 1, 1, f32), true, true, A::Tanh)},
      // A squeeze-excitation projection: the input scaled per image and
      // channel in the operand load (2 images, the second starting mid-tile;
      // K of 3 steps of 64 where blockK is 64).
      {"conv1x1_scaled", scaled(withEpilogue(conv(2, 5, 5, 136, 24, 1, 1, 1, 0), true, true,
                                             A::None))},
      {"conv3x3_scaled", scaled(withEpilogue(conv(2, 6, 6, 16, 8, 3, 3, 1, 1), true, false,
                                             A::Silu))},
      {"conv1x1_f32_scaled", scaled(conv(2, 3, 3, 12, 8, 1, 1, 1, 0, f32))},
      // Row tiles within one image, whose threads share one scale run: one
      // image, and two images of 256 pixels (whole row tiles).
      {"conv1x1_scaled_one_image", scaled(conv(1, 7, 7, 136, 24, 1, 1, 1, 0))},
      {"conv1x1_scaled_whole_tiles",
       scaled(withEpilogue(conv(2, 16, 16, 72, 16, 1, 1, 1, 0), true, false, A::Silu))},
      {"gemm_m1_bias", [] {
         GemmProblem p = withEpilogue(gemm(1, 40, 64, false, true), true, false, A::Relu);
         p.addendColStride = 1;
         p.addendRowStride = 0;
         return p;
       }()},
      {"gemm_n8", gemm(64, 8, 32, false, false)},
      {"gemm_transA_alpha_beta", [] {
         GemmProblem p = withEpilogue(gemm(20, 24, 40, true, false), true, false, A::Sigmoid);
         p.alpha = 0.5f;
         p.beta = -2.0f;
         p.addendRowStride = 24;
         p.addendColStride = 1;
         return p;
       }()},
      {"gemm_c_column_hardswish", [] {
         GemmProblem p = withEpilogue(gemm(33, 17, 20, false, true), true, false, A::HardSwish);
         p.addendRowStride = 1;
         p.addendColStride = 0;
         return p;
       }()},
      {"gemm_leaky_scalar_c", [] {
         GemmProblem p = withEpilogue(gemm(16, 16, 16, true, true), true, false, A::LeakyRelu, 0.1f);
         p.addendRowStride = 0;
         p.addendColStride = 0;
         return p;
       }()},
      {"gemm_f32", withEpilogue(gemm(30, 50, 70, false, true, f32), false, false, A::Tanh)},
      // A transformer block's epilogues: the MLP's bias and GELU, the output
      // projection's bias and skip connection (tanh GELU for GPT-2's).
      {"gemm_bias_residual_gelu", [] {
         GemmProblem p = withEpilogue(gemm(24, 40, 32, false, false), true, true, A::Gelu);
         p.addendRowStride = 0;
         p.addendColStride = 1;
         return p;
       }()},
      {"gemm_f32_residual_gelu_tanh",
       withEpilogue(gemm(20, 24, 16, false, false, f32), false, true, A::GeluTanh)},
      {"matmul_batch3", matmul(18, 24, 32, {BatchDim{3, 1, 1}})},
      {"matmul_shared_b", matmul(10, 16, 24, {BatchDim{2, 3, 0}, BatchDim{3, 1, 0}})},
      {"matmul_n1", matmul(40, 1, 16, {BatchDim{2, 1, 1}})},
      {"matmul_f32", matmul(9, 12, 20, {BatchDim{2, 1, 0}}, f32)},
  };
  return list;
}

void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

class Emulated : public ::testing::TestWithParam<std::tuple<Case, GemmTier>> {};

TEST_P(Emulated, MatchesReference) {
  const auto &[c, tier] = GetParam();
  std::optional<TileConfig> tiles = chooseTiles(c.problem, tier);
  if (!tiles) {
    // Tensor Cores need f16 operands, tc-sm80 also runs of 4 bytes or
    // more of both (Sm80.TilesWhereRunsFit pins which cases have them).
    ASSERT_TRUE(onTensorCores(tier) &&
                (c.problem.a != ElemType::F16 || tier == GemmTier::TensorCoreSm80))
        << "no tiling for " << c.name;
    GTEST_SKIP() << "no " << tierName(tier).str() << " tiling";
  }
  GemmKernel kernel{c.problem, *tiles, "k"};
  double rel = 0;
  EXPECT_EQ(emulate(kernel, &rel), "") << c.name << " tile " << tiles->blockM << "x"
                                       << tiles->blockN << "x" << tiles->blockK;
}

INSTANTIATE_TEST_SUITE_P(
    Codegen, Emulated,
    ::testing::Combine(::testing::ValuesIn(cases()),
                       ::testing::Values(GemmTier::TensorCore, GemmTier::TensorCoreSm80,
                                         GemmTier::Simt)),
    [](const ::testing::TestParamInfo<std::tuple<Case, GemmTier>> &info) {
      GemmTier tier = std::get<1>(info.param);
      return std::get<0>(info.param).name + (tier == GemmTier::TensorCore       ? "_tc"
                                             : tier == GemmTier::TensorCoreSm80 ? "_tc80"
                                                                                : "_simt");
    });

/// tc-sm80 tiles every f16 case whose operands move in runs of 4 bytes or
/// more (k, or the rows of a row-contiguous operand, even: cp.async's
/// sizes), and no other: not 3 channels, not a matmul's B of one column.
TEST(Sm80, TilesWhereRunsFit) {
  for (const Case &c : cases()) {
    bool runsFit =
        c.problem.a == ElemType::F16 && c.name != "conv_c3_scalar" && c.name != "matmul_n1";
    EXPECT_EQ(chooseTiles(c.problem, GemmTier::TensorCoreSm80).has_value(), runsFit) << c.name;
  }
}

/// The tc-sm80 main loop on small tiles (2x2 warps of 1x2 m16n8 fragments,
/// 32x32): every stage count against K of fewer steps than stages, as many,
/// and more, partial last steps; ldmatrix.trans for row-contiguous A and B,
/// swizzled tiles at blockK 64 (K-major, and MN-major on 64 x 64 tiles);
/// convs whose padding cp.async zero-fills; split-K beside the stages.
TEST(Sm80, MultistagePipeline) {
  using A = Activation;
  auto tiles = [](int64_t blockK, int64_t stages) {
    TileConfig t;
    t.tier = GemmTier::TensorCoreSm80;
    t.fragM = 16;
    t.fragN = 8;
    t.warpsM = t.warpsN = 2;
    t.fragsM = 1;
    t.fragsN = 2;
    t.blockM = t.blockN = 32;
    t.blockK = blockK;
    t.stages = stages;
    return t;
  };
  std::vector<GemmProblem> problems;
  for (int64_t k : {16, 32, 72, 200}) {
    problems.push_back(gemm(24, 40, k, false, false));
    problems.push_back(withEpilogue(gemm(40, 24, k, true, true), false, false, A::Relu));
  }
  problems.push_back(withEpilogue(conv(1, 9, 9, 8, 16, 3, 3, 2, 1), true, false, A::Relu));
  problems.push_back(withEpilogue(conv(2, 6, 6, 16, 24, 3, 3, 1, 1), true, true, A::Gelu));
  problems.push_back(scaled(withEpilogue(conv(2, 5, 5, 72, 16, 1, 1, 1, 0), true, false, A::None)));
  problems.push_back(matmul(18, 24, 32, {BatchDim{3, 1, 0}}));
  // blockK 64: K-major tiles in the 128-byte swizzle (Staging::swizzled,
  // the ldmatrix addresses through KernelIr::sharedIndex), MN-major
  // ones of 32 rows padded.
  for (const GemmProblem &p : problems)
    for (int64_t blockK : {16, 32, 64})
      for (int64_t stages : {2, 3, 4}) {
        EXPECT_EQ(emulate(GemmKernel{p, tiles(blockK, stages), "k"}), "")
            << "blockK " << blockK << " stages " << stages << " " << p.key();
      }
  // 64 x 64 tiles (2x2 warps of 2x4 fragments) at blockK 64: MN-major A
  // and B in the swizzle's atoms of 64 rows by 8 k too (ldmatrix.trans),
  // partial tiles and K steps, beside K-major ones.
  TileConfig wide = tiles(64, 3);
  wide.fragsM = 2;
  wide.fragsN = 4;
  wide.blockM = wide.blockN = 64;
  for (const GemmProblem &p :
       {gemm(100, 72, 200, false, false), withEpilogue(gemm(72, 136, 136, true, false), true,
                                                         true, A::Relu),
        gemm(64, 64, 64, true, true), withEpilogue(conv(2, 7, 7, 64, 72, 3, 3, 1, 1), true,
                                                   false, A::None)})
    for (int64_t stages : {2, 4}) {
      wide.stages = stages;
      EXPECT_EQ(emulate(GemmKernel{p, wide, "k"}), "") << "64x64 stages " << stages << " "
                                                       << p.key();
    }
  for (int64_t split : {2, 3}) {
    TileConfig t = tiles(32, 3);
    t.splitK = split;
    GemmProblem p = withEpilogue(gemm(24, 40, 264, false, true), true, false, A::Relu);
    p.addendRowStride = 0;
    EXPECT_EQ(emulate(GemmKernel{p, t, "k"}), "") << "split " << split;
    // Split-K with an input scale: the partial sums' kernel takes it.
    GemmProblem s = scaled(withEpilogue(conv(1, 4, 4, 264, 24, 1, 1, 1, 0), true, false, A::None));
    EXPECT_EQ(emulate(GemmKernel{s, t, "k"}), "") << "scaled split " << split;
  }
  // The grid's tiles in groups of row tiles (TileConfig::rasterM): 7 row
  // tiles by 5 column tiles in groups of 3 (the last group one row), of 2
  // (the last one row) and of 7 (one group); a conv's 4 row tiles in
  // groups of 3. Each tile computed once: the emulator counts every output
  // byte's writes.
  for (int64_t raster : {3, 2, 7}) {
    TileConfig t = tiles(32, 3);
    t.rasterM = raster;
    EXPECT_EQ(emulate(GemmKernel{withEpilogue(gemm(200, 136, 64, false, true), true, false,
                                              A::Relu),
                                 t, "k"}),
              "")
        << "raster " << raster;
  }
  {
    TileConfig t = tiles(32, 2);
    t.rasterM = 3;
    EXPECT_EQ(emulate(GemmKernel{withEpilogue(conv(2, 8, 8, 16, 64, 3, 3, 2, 1), true, true,
                                              A::Relu),
                                 t, "k"}),
              "");
  }
  // A 4-warp block of 64x64 warp tiles (4x8 fragments, 128 x 128).
  TileConfig big = tiles(32, 4);
  big.fragsM = 4;
  big.fragsN = 8;
  big.blockM = big.blockN = 128;
  EXPECT_EQ(emulate(GemmKernel{withEpilogue(gemm(136, 144, 96, false, false), false, true,
                                            A::None),
                               big, "k"}),
            "");
}

/// Operands whose rows are not 16-byte multiples, on tc-sm80: cp.async runs
/// of 8 bytes (an extent of 4 mod 8) and 4 bytes (2 mod 4), along K (A
/// without transA, B with it) and along the rows (MN-major); K-major tiles
/// in the 128-byte swizzle at blockK 64 (a short run keeps its place in its
/// 16-byte chunk) and padded at 16 and 32, MN-major ones swizzled on 64 x
/// 64 tiles. An odd extent has no run cp.async takes: no kernel. The
/// kernel's alignment (what the runtime asks of its buffers) is its widest
/// run's.
TEST(Sm80, NarrowRuns) {
  using A = Activation;
  auto tiles = [](int64_t blockK, int64_t stages, int64_t blockMN) {
    TileConfig t;
    t.tier = GemmTier::TensorCoreSm80;
    t.fragM = 16;
    t.fragN = 8;
    t.warpsM = t.warpsN = 2;
    t.fragsM = blockMN / 32;
    t.fragsN = blockMN / 16;
    t.blockM = t.blockN = blockMN;
    t.blockK = blockK;
    t.stages = stages;
    return t;
  };
  const std::vector<GemmProblem> problems = {
      withEpilogue(gemm(40, 36, 100, false, false), true, false, A::Relu), // 8 and 8 bytes
      gemm(36, 40, 98, true, true),                                         // 8 and 4
      withEpilogue(gemm(70, 2, 200, false, false), false, true, A::None),  // 16 and 4
      gemm(100, 68, 136, true, false),                                      // 8 and 8
      gemm(66, 100, 72, true, false),                                       // 4 and 8
  };
  int emulated = 0;
  for (const GemmProblem &p : problems)
    for (auto [blockK, blockMN] :
         {std::pair<int64_t, int64_t>{16, 32}, {32, 32}, {64, 32}, {64, 64}})
      for (int64_t stages : {2, 3}) {
        TileConfig t = tiles(blockK, stages, blockMN);
        ASSERT_TRUE(tilingFits(p, t)) << p.key();
        ++emulated;
        EXPECT_EQ(emulate(GemmKernel{p, t, "k"}), "")
            << "blockK " << blockK << " tile " << blockMN << " stages " << stages << " "
            << p.key();
      }
  EXPECT_EQ(emulated, 40);
  EXPECT_EQ(GemmKernel({problems[0], tiles(32, 3, 32), "k"}).alignment(), 8);
  EXPECT_EQ(GemmKernel({gemm(24, 34, 98, false, false), tiles(32, 3, 32), "k"}).alignment(), 4);
  EXPECT_EQ(GemmKernel({problems[2], tiles(32, 3, 32), "k"}).alignment(), 16);
  for (const GemmProblem &odd : {gemm(40, 35, 64, false, false), gemm(35, 40, 64, true, true),
                                 gemm(40, 40, 99, false, true)})
    EXPECT_FALSE(chooseTiles(odd, GemmTier::TensorCoreSm80)) << odd.key();
}

/// Tilings the heuristic picks only for big problems, forced on small ones:
/// 8 warps with 4x2 fragments, the skinny fragments, and k-contiguous
/// staging of a row-contiguous operand (8-wide fragments).
TEST(EmulatedTiles, ForcedTensorCoreTilings) {
  struct Forced {
    GemmProblem problem;
    int64_t fragM, fragN, warpsM, warpsN, fragsM, fragsN;
  };
  using A = Activation;
  std::vector<Forced> forced = {
      {withEpilogue(conv(1, 10, 10, 16, 40, 3, 3, 1, 1), true, true, A::Relu), 16, 16, 2, 4, 4, 2},
      // 64x64 warp tiles, partial in M (162 = 128 + 34) and N (136 = 128 + 8).
      {withEpilogue(conv(2, 9, 9, 24, 136, 3, 3, 1, 1), true, true, A::Relu), 16, 16, 2, 2, 4, 4},
      {gemm(70, 20, 48, false, false), 32, 8, 4, 1, 1, 2},
      {gemm(9, 70, 48, true, true), 8, 32, 1, 4, 2, 1},
      {gemm(40, 40, 40, true, false), 8, 32, 2, 2, 1, 1},
      {matmul(40, 24, 32, {BatchDim{2, 1, 1}}), 32, 8, 2, 2, 1, 2},
      // Three 16-row fragments a warp (M of 33 to 48 in one row tile), B
      // MN-major by element gathers (odd N), A row- and column-contiguous.
      {gemm(35, 71, 100, false, false), 16, 16, 1, 4, 3, 1},
      {gemm(40, 137, 72, true, false), 16, 16, 1, 8, 3, 1},
  };
  for (const Forced &f : forced) {
    TileConfig t;
    t.tier = GemmTier::TensorCore;
    t.fragM = f.fragM;
    t.fragN = f.fragN;
    t.warpsM = f.warpsM;
    t.warpsN = f.warpsN;
    t.fragsM = f.fragsM;
    t.fragsN = f.fragsN;
    t.blockM = f.warpsM * f.fragsM * f.fragM;
    t.blockN = f.warpsN * f.fragsN * f.fragN;
    t.blockK = 32;
    EXPECT_EQ(emulate(GemmKernel{f.problem, t, "k"}), "")
        << "fragment " << f.fragM << "x" << f.fragN << " warps " << f.warpsM << "x" << f.warpsN
        << " frags " << f.fragsM << "x" << f.fragsN;
  }
  // The heuristic's pick for 35 rows: one row tile of 48, split along K.
  const GemmProblem shortM = gemm(35, 137, 3000, false, false);
  const TileConfig picked = *chooseTiles(shortM, GemmTier::TensorCore);
  EXPECT_EQ(picked.blockM, 48);
  EXPECT_GT(picked.splitK, 1);
  EXPECT_EQ(emulate(GemmKernel{shortM, picked, "k"}), "");
}

TEST(EmulatedTiles, ForcedSimtTilings) {
  std::vector<std::array<int64_t, 4>> forced = {{16, 16, 4, 4}, {32, 8, 2, 8}, {8, 16, 1, 1}};
  GemmProblem p = withEpilogue(conv(1, 9, 9, 8, 20, 3, 3, 1, 1, ElemType::F32), true, true,
                               Activation::Relu);
  for (auto [tm, tn, mm, mn] : forced) {
    TileConfig t;
    t.tier = GemmTier::Simt;
    t.threadsM = tm;
    t.threadsN = tn;
    t.microM = mm;
    t.microN = mn;
    t.blockM = tm * mm;
    t.blockN = tn * mn;
    t.blockK = 16;
    EXPECT_EQ(emulate(GemmKernel{p, t, "k"}), "") << tm << "x" << tn << " threads";
  }
}

/// The software-pipelined K loop on both tiers and both blockKs each tier
/// may choose: K of one step (no prefetch), two steps (one prefetch),
/// several, and not a multiple of blockK (the last step's loads masked),
/// on gemms with either operand row-contiguous and on convs with padding and
/// stride (the prefetch carries the im2col masks).
/// A small forced tiling, many blocks on small problems: tc 2x2 warps of one
/// 16x16 fragment (32x32), simt 8x16 threads of 2x2 sums (16x32).
TileConfig smallTiles(GemmTier tier, int64_t blockK) {
  TileConfig t;
  t.tier = tier;
  if (tier == GemmTier::TensorCore) {
    t.warpsM = t.warpsN = 2;
    t.blockM = t.blockN = 32;
  } else {
    t.threadsM = 8;
    t.threadsN = 16;
    t.microM = t.microN = 2;
    t.blockM = 16;
    t.blockN = 32;
  }
  t.blockK = blockK;
  return t;
}

TEST(EmulatedTiles, PipelinedKSteps) {
  using A = Activation;
  for (GemmTier tier : {GemmTier::TensorCore, GemmTier::Simt}) {
    bool tc = tier == GemmTier::TensorCore;
    for (int64_t blockK : tc ? std::array<int64_t, 2>{32, 64} : std::array<int64_t, 2>{16, 32}) {
      ElemType type = tc ? ElemType::F16 : ElemType::F32;
      std::vector<GemmProblem> problems;
      for (int64_t k : {blockK, 2 * blockK, 2 * blockK - 8, 5 * blockK + 8}) {
        problems.push_back(gemm(24, 20, k, true, false, type));
        problems.push_back(withEpilogue(gemm(20, 24, k, false, true, type), false, false, A::Relu));
      }
      // K = 72 (3x3 x 8, stride 2, pad 1), 144 (3x3 x 16, pad 1), blockK
      // (1x1 stride 2, one step), 27 (Cin 3, element-wise gathers).
      problems.push_back(
          withEpilogue(conv(1, 9, 9, 8, 16, 3, 3, 2, 1, type), true, false, A::Relu));
      problems.push_back(
          withEpilogue(conv(2, 6, 6, 16, 24, 3, 3, 1, 1, type), true, true, A::Relu));
      problems.push_back(conv(1, 7, 7, blockK, 16, 1, 1, 2, 0, type));
      problems.push_back(withEpilogue(conv(1, 8, 8, 3, 8, 3, 3, 1, 1, type), true, false, A::None));
      // The input scale on the prefetched runs (K of three steps, 2 images).
      problems.push_back(scaled(
          withEpilogue(conv(2, 5, 5, 2 * blockK + 8, 16, 1, 1, 1, 0, type), true, false, A::None)));
      for (const GemmProblem &p : problems) {
        TileConfig t = smallTiles(tier, blockK);
        EXPECT_EQ(emulate(GemmKernel{p, t, "k"}), "")
            << tierName(tier).str() << " blockK " << blockK << " " << p.key();
      }
    }
  }
}

/// Grouped convs with fewer than 8 filters per group (depthwise, channel
/// multipliers, small groups): no Tensor Core tiling, the direct kernel on
/// simt, against the float64 reference with every epilogue operand.
TEST(EmulatedTiles, DirectGroupedConvs) {
  using A = Activation;
  const ElemType f16 = ElemType::F16, f32 = ElemType::F32;
  std::vector<GemmProblem> problems = {
      // MobileNetV2's depthwise 3x3 (relu6), stride 1 with a residual, stride 2.
      withEpilogue(conv(1, 7, 7, 16, 16, 3, 3, 1, 1, f16, 16), true, true, A::Clip, 0, 6),
      withEpilogue(conv(2, 9, 9, 24, 24, 3, 3, 2, 1, f16, 24), true, false, A::Relu),
      // 5x5, dilation 2, f32.
      withEpilogue(conv(1, 11, 11, 8, 8, 5, 5, 1, 4, f32, 8, 2), false, false, A::Sigmoid),
      // Channel multiplier 2 (16 filters over 8 groups of 1 channel).
      withEpilogue(conv(1, 6, 6, 8, 16, 3, 3, 1, 0, f16, 8), true, false, A::None),
      // Groups of 3 channels, 4 filters each, 1x1 and 3x3.
      conv(1, 5, 5, 6, 8, 1, 1, 1, 0, f32, 2),
      withEpilogue(conv(1, 5, 5, 6, 8, 3, 3, 2, 1, f16, 2), true, true, A::LeakyRelu, 0.2f),
  };
  for (const GemmProblem &p : problems) {
    EXPECT_FALSE(chooseTiles(p, GemmTier::TensorCore)) << p.key();
    std::optional<TileConfig> tiles = chooseTiles(p, GemmTier::Simt);
    ASSERT_TRUE(tiles && tiles->direct) << p.key();
    GemmKernel kernel{p, *tiles, "k"};
    if (p.conv.outC != p.conv.group) // not depthwise: a thread per output element
      EXPECT_EQ(kernel.grid()[0], uint32_t((p.m * p.conv.outC + 255) / 256));
    EXPECT_EQ(emulate(kernel), "") << p.key();
  }
  // Eight filters per group or more stay implicit GEMMs.
  EXPECT_FALSE(chooseTiles(conv(1, 6, 6, 16, 16, 3, 3, 1, 1, f16, 2), GemmTier::Simt)->direct);
}

/// The depthwise kernel with every width and lane count a thread can take
/// (f16 runs of 8, 4, 2 and 1 channels, f32 of 4): strides, dilation, 5x5
/// and 7x7 windows, an output width the run width does not divide, slabs of
/// fewer channel groups than the channels hold, every epilogue operand;
/// against the float64 reference, every output written once.
TEST(EmulatedTiles, Depthwise) {
  using A = Activation;
  const ElemType f16 = ElemType::F16, f32 = ElemType::F32;
  std::vector<GemmProblem> problems = {
      withEpilogue(conv(2, 9, 9, 16, 16, 3, 3, 1, 1, f16, 16), true, true, A::Clip, 0, 6),
      withEpilogue(conv(1, 11, 11, 24, 24, 3, 3, 2, 1, f16, 24), true, false, A::Silu),
      withEpilogue(conv(1, 10, 9, 8, 8, 5, 5, 2, 2, f16, 8), true, false, A::HardSwish),
      withEpilogue(conv(1, 13, 7, 8, 8, 5, 5, 1, 4, f16, 8, 2), false, true, A::None),
      withEpilogue(conv(1, 9, 9, 16, 16, 7, 7, 1, 3, f16, 16), true, false, A::None),
      // 264 channels: 33 groups of 8, slabs of 11.
      withEpilogue(conv(1, 5, 6, 264, 264, 3, 3, 1, 1, f16, 264), true, true, A::Relu),
      withEpilogue(conv(2, 7, 7, 12, 12, 3, 3, 1, 1, f32, 12), true, true, A::Sigmoid),
  };
  int runs = 0;
  for (const GemmProblem &p : problems)
    for (int64_t lanes : {8, 4, 2, 1})
      for (int64_t width : {4, 3, 2, 1}) {
        std::optional<TileConfig> tiles = depthwiseTiles(p, lanes, width);
        if (!tiles)
          continue;
        GemmKernel kernel{p, *tiles, "k"};
        EXPECT_EQ(emulate(kernel), "")
            << p.key() << " lanes " << lanes << " width " << width;
        ++runs;
      }
  EXPECT_GE(runs, 80);
  // The heuristic's choice for each is one of those.
  for (const GemmProblem &p : problems) {
    std::optional<TileConfig> tiles = chooseTiles(p, GemmTier::Simt);
    ASSERT_TRUE(tiles && tiles->direct && tiles->dwLanes > 0) << p.key();
  }
  // Not depthwise: a channel multiplier, groups of channels, lanes that do
  // not divide the channels, more than 16 bytes, a window wider than the
  // output.
  EXPECT_FALSE(depthwiseTiles(conv(1, 6, 6, 8, 16, 3, 3, 1, 0, f16, 8), 1, 1));
  EXPECT_FALSE(depthwiseTiles(conv(1, 6, 6, 16, 16, 3, 3, 1, 1, f16, 8), 1, 1));
  EXPECT_FALSE(depthwiseTiles(conv(1, 6, 6, 12, 12, 3, 3, 1, 1, f16, 12), 8, 1));
  EXPECT_FALSE(depthwiseTiles(conv(1, 6, 6, 16, 16, 3, 3, 1, 1, f32, 16), 8, 1));
  EXPECT_FALSE(depthwiseTiles(conv(1, 6, 6, 16, 16, 3, 3, 1, 1, f16, 16), 8, 7));
}

/// Split-K: the partial sums through the workspace and the reduction's
/// epilogue, with splits that divide the K steps evenly and not, a last
/// split with steps past K, and batches / groups beside the splits in grid z.
TEST(EmulatedTiles, SplitK) {
  using A = Activation;
  for (GemmTier tier : {GemmTier::TensorCore, GemmTier::Simt}) {
    bool tc = tier == GemmTier::TensorCore;
    ElemType type = tc ? ElemType::F16 : ElemType::F32;
    std::vector<GemmProblem> problems = {
        gemm(24, 20, 200, true, false, type),
        withEpilogue(gemm(20, 24, 136, false, true, type), false, false, A::Relu),
        withEpilogue(conv(1, 5, 5, 16, 24, 3, 3, 1, 1, type), true, true, A::Relu),
        withEpilogue(conv(2, 6, 6, 32, 32, 3, 3, 2, 1, type, /*group=*/2), true, false,
                     A::LeakyRelu),
    };
    for (const GemmProblem &p : problems)
      for (int64_t split : {2, 3, 4}) {
        TileConfig t = smallTiles(tier, tc ? 32 : 16);
        t.splitK = split;
        GemmKernel kernel{p, t, "k"};
        ASSERT_TRUE(kernel.splitsK());
        EXPECT_EQ(kernel.grid()[2], uint32_t(p.batch * split));
        EXPECT_EQ(kernel.workspaceBytes(), uint64_t(p.batch * split * p.m * p.n * 4));
        EXPECT_EQ(emulate(kernel), "")
            << tierName(tier).str() << " split " << split << " " << p.key();
      }
  }
}

/// The bundle's ResNet-50 shapes (scripts/gpu-gemm-bundle.sh) at full size,
/// on both tiers: minutes, so run by hand
/// (--gtest_also_run_disabled_tests --gtest_filter='*ResNet50*').
TEST(EmulatedTiles, DISABLED_ResNet50Shapes) {
  using A = Activation;
  std::vector<GemmProblem> problems = {
      withEpilogue(conv(1, 224, 224, 8, 64, 7, 7, 2, 3), true, false, A::Relu),
      withEpilogue(conv(1, 56, 56, 64, 256, 1, 1, 1, 0), true, true, A::Relu),
      withEpilogue(conv(1, 56, 56, 128, 128, 3, 3, 2, 1), true, false, A::Relu),
      withEpilogue(conv(1, 56, 56, 256, 512, 1, 1, 2, 0), true, false, A::None),
      withEpilogue(conv(1, 7, 7, 512, 512, 3, 3, 1, 1), true, false, A::Relu),
      withEpilogue(conv(1, 7, 7, 512, 2048, 1, 1, 1, 0), true, true, A::Relu),
      withEpilogue(conv(8, 28, 28, 128, 128, 3, 3, 1, 1), true, true, A::Relu),
      withEpilogue(conv(1, 224, 224, 3, 64, 7, 7, 2, 3, ElemType::F32), true, false, A::Relu),
  };
  for (const GemmProblem &p : problems)
    for (GemmTier tier : {GemmTier::TensorCore, GemmTier::Simt}) {
      std::optional<TileConfig> tiles = chooseTiles(p, tier);
      if (!tiles)
        continue;
      double rel = 0;
      EXPECT_EQ(emulate(GemmKernel{p, *tiles, "k"}, &rel), "")
          << p.key() << " " << tierName(tier).str();
      std::printf("%s %s: max rel err %.3g\n", p.key().c_str(), tierName(tier).data(), rel);
    }
}

/// A tc-sm90 tiling: warpgroupsM x warpgroupsN warpgroups, each fragsM
/// wgmma tiles of m64 x fragN, blockK 64, `stages` buffers.
TileConfig sm90Tiles(int64_t warpgroupsM, int64_t warpgroupsN, int64_t fragsM, int64_t fragN,
                     int64_t stages) {
  TileConfig t;
  t.tier = GemmTier::TensorCoreSm90;
  t.fragM = 64;
  t.fragK = 16;
  t.fragN = fragN;
  t.warpsM = warpgroupsM;
  t.warpsN = warpgroupsN;
  t.fragsM = fragsM;
  t.fragsN = 1;
  t.blockM = warpgroupsM * fragsM * 64;
  t.blockN = warpgroupsN * fragN;
  t.blockK = 64;
  t.stages = stages;
  return t;
}

/// The tc-sm90 main loop (wgmma on 128-byte swizzled cp.async stages),
/// emulated: the emulator runs each wgmma per warpgroup from its shared
/// memory descriptors as the hardware reads them (GpuIrEmulator.cpp,
/// stepWgmma) and fails a refill of a buffer that a wgmma not yet waited
/// for read. Blocks of one to three warpgroups, tiles 64 to 192 wide (96,
/// 144 and 192: whole atoms or not), 2 to 4 stages against K of fewer steps
/// than stages and more; B K-major (transB, conv weights) and MN-major (a
/// gemm without transB, a matmul), A MN-major (transA); the conv's
/// zero-filled padding and input scale; split-K; the raster. Every output byte written
/// once, against float64.
TEST(Sm90, WgmmaMainLoop) {
  using A = Activation;
  struct Shape {
    int64_t warpgroupsM, warpgroupsN, fragsM, fragN;
  };
  auto tiles = [](Shape s, int64_t stages) {
    return sm90Tiles(s.warpgroupsM, s.warpgroupsN, s.fragsM, s.fragN, stages);
  };
  const std::vector<GemmProblem> problems = {
      withEpilogue(gemm(200, 136, 264, false, true), true, false, A::Gelu),
      withEpilogue(gemm(136, 200, 72, false, false), false, true, A::None),
      withEpilogue(gemm(200, 128, 136, true, true), false, false, A::Relu),
      withEpilogue(conv(2, 6, 6, 16, 72, 3, 3, 1, 1), true, true, A::Relu),
      matmul(72, 64, 200, {BatchDim{2, 1, 0}}),
      // A conv's input scale: each step's runs scaled once landed, before
      // the fence and barrier that publish them to the wgmmas.
      scaled(withEpilogue(conv(2, 5, 5, 136, 64, 1, 1, 1, 0), true, false, A::None)),
  };
  int emulated = 0;
  for (Shape shape : {Shape{1, 1, 1, 64}, Shape{1, 1, 2, 128}, Shape{2, 1, 1, 96},
                      Shape{1, 2, 1, 128}, Shape{3, 1, 1, 192}, Shape{2, 1, 1, 144},
                      Shape{1, 1, 1, 96}})
    for (const GemmProblem &p : problems)
      for (int64_t stages : {2, 3, 4}) {
        TileConfig t = tiles(shape, stages);
        if (!tilingFits(p, t))
          continue; // a 96-wide MN-major B: not whole 64-row atoms
        ++emulated;
        EXPECT_EQ(emulate(GemmKernel{p, t, "k"}), "")
            << t.blockM << "x" << t.blockN << " stages " << stages << " " << p.key();
      }
  EXPECT_GE(emulated, 60);
  // Split-K (whole tiles split two and three ways, the last split's steps
  // past K zero) and the raster (5 row tiles of 64 in groups of 2, the
  // last one shorter), both on two warpgroups.
  for (int64_t split : {2, 3}) {
    TileConfig t = tiles({2, 1, 1, 64}, 3);
    t.splitK = split;
    EXPECT_EQ(emulate(GemmKernel{withEpilogue(gemm(128, 64, 520, false, true), true, false,
                                              A::None),
                                 t, "k"}),
              "")
        << "split " << split;
  }
  TileConfig rastered = tiles({1, 1, 1, 64}, 3);
  rastered.rasterM = 2;
  EXPECT_EQ(emulate(GemmKernel{gemm(300, 192, 128, false, true), rastered, "k"}), "");
  // 8 stages (the skinny gemms' pick, 64 x 64 and 64 x 128): 6 steps in
  // flight, K of 10 steps wrapping the buffers, B MN-major and K-major.
  for (Shape shape : {Shape{1, 1, 1, 64}, Shape{1, 1, 1, 128}})
    for (bool transB : {false, true})
      EXPECT_EQ(emulate(GemmKernel{gemm(136, 72, 600, false, transB), tiles(shape, 8), "k"}), "")
          << transB << " " << shape.fragN;
}

/// The persistent tc-sm90 kernel (TileConfig::persistent): grids of 1 to 3
/// blocks over 2 to 12 tiles, so that blocks take several tiles in turn and
/// the last tiles' steps copy no next tile; K of 1 to 5 steps in 2 to 4
/// stages (the next tile's first steps copied by the last ones of this);
/// a conv's padding, B MN-major, batches (the rank's z), the raster. The
/// emulator fails a copy into a buffer a wgmma not yet waited for reads, a
/// read of shared memory another thread wrote since the last barrier (the
/// staging past the buffers), and any output byte not written exactly once.
TEST(Sm90, PersistentTiles) {
  using A = Activation;
  auto tiles = [](int64_t warpgroupsM, int64_t fragN, int64_t stages, int64_t grid) {
    TileConfig t = sm90Tiles(warpgroupsM, 1, 1, fragN, stages);
    t.persistent = grid;
    return t;
  };
  const std::vector<GemmProblem> problems = {
      withEpilogue(gemm(200, 136, 264, false, true), true, false, A::Gelu),   // 5 steps
      withEpilogue(gemm(136, 200, 72, false, false), false, true, A::None),   // 2 steps
      withEpilogue(conv(2, 6, 6, 16, 72, 3, 3, 1, 1), true, true, A::Relu),   // 3 steps
      withEpilogue(conv(3, 5, 5, 64, 64, 1, 1, 1, 0), false, true, A::None),  // 1 step
      matmul(72, 64, 136, {BatchDim{3, 1, 0}}),
  };
  int emulated = 0;
  for (const GemmProblem &p : problems)
    for (int64_t stages : {2, 3, 4})
      for (int64_t grid : {1, 2, 3})
        for (auto [wgs, n] : {std::pair<int64_t, int64_t>{1, 64}, {2, 64}}) {
          TileConfig t = tiles(wgs, n, stages, grid);
          if (!tilingFits(p, t))
            continue;
          ++emulated;
          EXPECT_EQ(emulate(GemmKernel{p, t, "k"}), "")
              << t.blockM << "x" << t.blockN << " stages " << stages << " grid " << grid << " "
              << p.key();
        }
  EXPECT_GE(emulated, 80);
  TileConfig rastered = tiles(1, 64, 3, 2);
  rastered.rasterM = 2;
  EXPECT_EQ(emulate(GemmKernel{gemm(300, 192, 128, false, true), rastered, "k"}), "");
  // What the tiler refuses: split-K, an input scale, another tier.
  TileConfig split = tiles(1, 64, 3, 2);
  split.splitK = 2;
  EXPECT_FALSE(tilingFits(gemm(128, 64, 520, false, true), split));
  EXPECT_FALSE(tilingFits(scaled(conv(2, 5, 5, 136, 64, 1, 1, 1, 0)), tiles(1, 64, 3, 2)));
}

/// tc-sm90 tiles of warpgroupsM x 1 warpgroups loaded by TMA.
TileConfig tmaTiles(int64_t warpgroupsM, int64_t fragsM, int64_t fragN, int64_t stages) {
  TileConfig t = sm90Tiles(warpgroupsM, 1, fragsM, fragN, stages);
  t.tma = true;
  return t;
}

/// Problems TMA takes: rows and K past the tiles (zero fill), K of one
/// step to nine, an epilogue.
std::vector<GemmProblem> tmaProblems() {
  using A = Activation;
  return {
      conv(3, 5, 7, 72, 136, 1, 1, 1, 0),                                    // 2 steps
      withEpilogue(conv(2, 9, 9, 520, 64, 1, 1, 1, 0), true, true, A::Relu), // 9 steps
      withEpilogue(gemm(200, 136, 264, false, true), true, false, A::Gelu),  // 5 steps
      conv(1, 6, 6, 64, 64, 1, 1, 1, 0),                                     // 1 step
  };
}

/// tc-sm90 with TMA (TileConfig::tma): A and B tiles by tensor copies,
/// an mbarrier a stage, the maps in the emulator's format. Rows and K past
/// the tiles (zero fill), K of one step to eight (the short-K prologue and
/// the refills), 2 to 4 stages, one and two warpgroups, an epilogue, the
/// conv raster; what TMA cannot take (a window whose taps are not whole
/// steps of channels, a batch, rows of MN-major B not 16-byte multiples)
/// the tiler refuses.
TEST(Sm90, TmaLoads) {
  const auto tiles = tmaTiles;
  const std::vector<GemmProblem> problems = tmaProblems();
  int emulated = 0;
  for (const GemmProblem &p : problems)
    for (int64_t stages : {2, 3, 4})
      for (auto [wgs, frags, n] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 64},
                                   {1, 2, 128},
                                   {2, 1, 64}}) {
        TileConfig t = tiles(wgs, frags, n, stages);
        ASSERT_TRUE(tilingFits(p, t)) << p.key();
        ++emulated;
        EXPECT_EQ(emulate(GemmKernel{p, t, "k"}), "")
            << t.blockM << "x" << t.blockN << " stages " << stages << " " << p.key();
      }
  EXPECT_EQ(emulated, 36);
  TileConfig rastered = tiles(1, 1, 64, 3);
  rastered.rasterM = 2;
  EXPECT_EQ(emulate(GemmKernel{conv(3, 8, 8, 136, 192, 1, 1, 1, 0), rastered, "k"}), "");
  EXPECT_FALSE(tilingFits(conv(2, 6, 6, 72, 64, 3, 3, 1, 1), tiles(1, 1, 64, 3)));
  EXPECT_FALSE(tilingFits(matmul(72, 64, 136, {BatchDim{3, 1, 0}}), tiles(1, 1, 64, 3)));
  EXPECT_FALSE(tilingFits(gemm(200, 100, 264, false, false), tiles(1, 1, 64, 3)));
}

/// Operands whose rows are not 16-byte multiples on tc-sm90: cp.async runs
/// of 8 and 4 bytes into wgmma's swizzled tiles, K-major and MN-major (in
/// atoms of 64 rows), one and two warpgroups, 2 and 4 stages; TMA, whose
/// maps need 16-byte strides, refuses them, and the heuristic's pick
/// copies by cp.async.
TEST(Sm90, NarrowRuns) {
  using A = Activation;
  const std::vector<GemmProblem> problems = {
      withEpilogue(gemm(136, 68, 200, false, false), true, false, A::Relu), // 16 and 8 bytes
      gemm(68, 136, 100, true, true),                                        // 8 and 8
      withEpilogue(gemm(100, 66, 98, false, false), false, true, A::None),  // 4 and 4
  };
  int emulated = 0;
  for (const GemmProblem &p : problems) {
    for (auto [wgs, frags, n] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 64},
                                 {1, 2, 128},
                                 {2, 1, 64}})
      for (int64_t stages : {2, 4}) {
        TileConfig t = sm90Tiles(wgs, 1, frags, n, stages);
        ASSERT_TRUE(tilingFits(p, t)) << p.key();
        ++emulated;
        EXPECT_EQ(emulate(GemmKernel{p, t, "k"}), "")
            << t.blockM << "x" << t.blockN << " stages " << stages << " " << p.key();
        EXPECT_FALSE(tilingFits(p, tmaTiles(wgs, frags, n, stages))) << p.key();
      }
    std::optional<TileConfig> picked = chooseTiles(p, GemmTier::TensorCoreSm90);
    ASSERT_TRUE(picked) << p.key();
    EXPECT_FALSE(picked->tma);
    EXPECT_EQ(emulate(GemmKernel{p, *picked, "k"}), "") << p.key();
  }
  EXPECT_EQ(emulated, 18);
}

/// MN-major operands by TMA (a gemm's B without transB, its A with
/// transA): a box of 64 rows by blockK k per column of swizzle atoms,
/// rows and k past the operand zero-filled (200 x 136, K of 5 steps, the
/// last 8 deep); B alone MN-major and both; the one-block-a-tile loop,
/// warp-specialized in a persistent grid, ping-pong, and ping-pong with
/// TMA stores; one and two 64-row boxes a tile.
TEST(Sm90, TmaMnMajor) {
  using A = Activation;
  const std::vector<GemmProblem> problems = {
      withEpilogue(gemm(200, 136, 264, false, false), false, false, A::Relu),
      gemm(200, 136, 264, true, false),
      withEpilogue(gemm(136, 200, 72, true, true), false, false, A::None),
  };
  int emulated = 0;
  for (const GemmProblem &p : problems)
    for (auto [frags, n, stages] : {std::tuple<int64_t, int64_t, int64_t>{1, 64, 2},
                                    {2, 128, 4},
                                    {2, 64, 3}})
      for (int mode = 0; mode < 4; ++mode) {
        TileConfig t = tmaTiles(1, frags, n, stages);
        t.warpSpecialized = mode > 0;
        t.persistent = mode > 0 ? 3 : 0;
        t.pingpong = mode > 1;
        t.tmaStore = mode > 2;
        ASSERT_TRUE(tilingFits(p, t)) << p.key() << " mode " << mode;
        ++emulated;
        EXPECT_EQ(emulate(GemmKernel{p, t, "k"}), "")
            << t.blockM << "x" << t.blockN << " stages " << stages << " mode " << mode << " "
            << p.key();
      }
  EXPECT_EQ(emulated, 36);
  // A transposed A's rows (M) not 16-byte multiples.
  EXPECT_FALSE(tilingFits(gemm(100, 136, 264, true, true), tmaTiles(1, 1, 64, 3)));
}

/// tc-sm90 warp-specialized (TileConfig::warpSpecialized): a producer
/// warpgroup's thread 0 issues the TMA copies, the math warpgroups wait on
/// each stage's full mbarrier and release it on its empty one; the
/// emulator runs the sides as coroutines (a side waits, another runs). A
/// block a tile and persistent grids of 1 to 3 blocks over up to 12 tiles
/// (the producer copying the next tiles while the math runs the
/// epilogue), with one math side or two (ping-pong: tiles in turn, each
/// side its own coroutine), K of one step to nine, 2 to 4 stages, one and
/// two math warpgroups a side, an epilogue, the raster.
TEST(Sm90, WarpSpecialized) {
  auto tiles = [](int64_t warpgroupsM, int64_t fragsM, int64_t fragN, int64_t stages,
                  int64_t grid, bool pingpong = false) {
    TileConfig t = sm90Tiles(warpgroupsM, 1, fragsM, fragN, stages);
    t.tma = t.warpSpecialized = true;
    t.persistent = grid;
    t.pingpong = pingpong;
    return t;
  };
  const std::vector<GemmProblem> problems = tmaProblems();
  int emulated = 0;
  for (const GemmProblem &p : problems)
    for (int64_t stages : {2, 3, 4})
      for (auto [grid, pingpong] : {std::pair<int64_t, bool>{0, false},
                                    {1, false},
                                    {3, false},
                                    {1, true},
                                    {3, true}})
        for (auto [wgs, frags, n] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 64},
                                     {1, 2, 128},
                                     {2, 1, 64}}) {
          TileConfig t = tiles(wgs, frags, n, stages, grid, pingpong);
          ASSERT_TRUE(tilingFits(p, t)) << p.key();
          ++emulated;
          EXPECT_EQ(emulate(GemmKernel{p, t, "k"}), "")
              << t.blockM << "x" << t.blockN << " stages " << stages << " grid " << grid
              << (pingpong ? " ping-pong " : " ") << p.key();
        }
  EXPECT_EQ(emulated, 180);
  TileConfig rastered = tiles(1, 1, 64, 3, 2);
  rastered.rasterM = 2;
  EXPECT_EQ(emulate(GemmKernel{conv(3, 8, 8, 136, 192, 1, 1, 1, 0), rastered, "k"}), "");
  // Not without TMA; ping-pong only in a persistent grid.
  TileConfig plain = tiles(1, 1, 64, 3, 0);
  plain.tma = false;
  EXPECT_FALSE(tilingFits(conv(3, 5, 7, 72, 136, 1, 1, 1, 0), plain));
  EXPECT_FALSE(tilingFits(conv(3, 5, 7, 72, 136, 1, 1, 1, 0), tiles(1, 1, 64, 3, 0, true)));
}


/// Windowed convs TMA's im2col mode copies (GemmKernel::tensorMap, the
/// emulator's im2col walk): each K step one tap's 64 channels; 3x3 with
/// padding (tiles across images, rows past the last), stride 2 (18
/// steps), the 1x1 stride-2 downsample, input rows no window reaches (the
/// box's upper corner -3), dilation 2, a 1x3 window with strides 2 x 1 and
/// padding along W only; by the one-block-a-tile TMA loop in 2 and 4
/// stages, and warp-specialized (a block a tile, a persistent grid of 3,
/// ping-pong), one and two warpgroups, an epilogue with a residual. What
/// the mode cannot copy the tiler refuses: channels not whole steps, groups.
TEST(Sm90, TmaIm2col) {
  using A = Activation;
  const auto tiles = tmaTiles;
  ConvShape window; // 1x3, strides 2 x 1, padding along W
  window.batch = 2;
  window.inH = 5;
  window.inW = 6;
  window.inC = 64;
  window.outC = 64;
  window.kW = 3;
  window.strideH = 2;
  window.padW = 1;
  window.outH = 3;
  window.outW = 6;
  const std::vector<GemmProblem> problems = {
      withEpilogue(conv(2, 7, 7, 64, 136, 3, 3, 1, 1), true, true, A::Relu), // 9 steps
      conv(3, 9, 9, 128, 64, 3, 3, 2, 1),                                    // 18 steps
      conv(2, 9, 9, 64, 64, 1, 1, 2, 0),                                     // 1 step
      conv(1, 8, 8, 64, 64, 3, 3, 2, 0),
      conv(2, 7, 7, 64, 64, 3, 3, 1, 2, ElemType::F16, 1, 2),
      GemmProblem::forConv(window, ElemType::F16),
  };
  int emulated = 0;
  for (const GemmProblem &p : problems) {
    ASSERT_TRUE(p.im2col());
    for (auto [wgs, frags, n] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 64},
                                 {1, 2, 128},
                                 {2, 1, 64}})
      for (int64_t stages : {2, 4}) {
        TileConfig t = tiles(wgs, frags, n, stages);
        ASSERT_TRUE(tilingFits(p, t)) << p.key();
        ++emulated;
        EXPECT_EQ(emulate(GemmKernel{p, t, "k"}), "")
            << t.blockM << "x" << t.blockN << " stages " << stages << " " << p.key();
      }
    for (auto [grid, pingpong] :
         {std::pair<int64_t, bool>{0, false}, {3, false}, {3, true}})
      for (int64_t wgs : {1, 2}) {
        TileConfig t = tiles(wgs, 1, 64, 3);
        t.warpSpecialized = true;
        t.persistent = grid;
        t.pingpong = pingpong;
        ASSERT_TRUE(tilingFits(p, t)) << p.key();
        ++emulated;
        EXPECT_EQ(emulate(GemmKernel{p, t, "k"}), "")
            << t.blockM << "x" << t.blockN << " grid " << grid
            << (pingpong ? " ping-pong " : " ") << p.key();
      }
  }
  EXPECT_EQ(emulated, 72);
  // The tiler's ping-pong pick for a 3x3 of 64 channels out: 128 x 64 a
  // side in 6 stages (its K loop's 9 steps wrap the stages).
  TileConfig narrow = tiles(1, 2, 64, 6);
  narrow.warpSpecialized = narrow.pingpong = true;
  narrow.persistent = 2;
  EXPECT_EQ(emulate(GemmKernel{withEpilogue(conv(3, 9, 9, 64, 64, 3, 3, 1, 1), true, false,
                                            A::Relu),
                               narrow, "k"}),
            "");
  EXPECT_FALSE(tilingFits(conv(1, 6, 6, 96, 64, 3, 3, 1, 1), tiles(1, 1, 64, 3)));
  EXPECT_FALSE(tilingFits(conv(1, 6, 6, 128, 128, 3, 3, 1, 1, ElemType::F16, 2),
                          tiles(1, 1, 64, 3)));
}


/// TMA stores (TileConfig::tmaStore): the persistent warp-specialized
/// kernels, one warpgroup a side, finish each band in registers and store
/// it by tensor stores from swizzled boxes (the emulator writes them when
/// issued and fails where the boxes change before the issuing thread's
/// wait). Rows and columns past the output (the map clips them), a conv's
/// bias and ReLU, a windowed conv, a gemm; one side and ping-pong, grids
/// of 1 and 3, 64 and 128 columns, 2 to 4 stages. What they cannot store
/// (a residual, a gemm's C) the tiler refuses.
TEST(Sm90, TmaStore) {
  using A = Activation;
  auto tiles = [](int64_t fragsM, int64_t fragN, int64_t stages, int64_t grid, bool pingpong) {
    TileConfig t = tmaTiles(1, fragsM, fragN, stages);
    t.warpSpecialized = t.tmaStore = true;
    t.persistent = grid;
    t.pingpong = pingpong;
    return t;
  };
  const std::vector<GemmProblem> problems = {
      withEpilogue(conv(2, 9, 9, 72, 200, 1, 1, 1, 0), true, false, A::Relu), // N past 192
      withEpilogue(conv(2, 7, 7, 64, 136, 3, 3, 1, 1), true, false, A::None), // 9 steps
      gemm(200, 136, 264, false, true),
  };
  int emulated = 0;
  for (const GemmProblem &p : problems)
    for (auto [frags, n, stages] : {std::tuple<int64_t, int64_t, int64_t>{1, 64, 2},
                                    {2, 128, 4},
                                    {2, 64, 3}})
      for (auto [grid, pingpong] : {std::pair<int64_t, bool>{1, false}, {3, false}, {3, true}}) {
        TileConfig t = tiles(frags, n, stages, grid, pingpong);
        ASSERT_TRUE(tilingFits(p, t)) << p.key();
        ++emulated;
        EXPECT_EQ(emulate(GemmKernel{p, t, "k"}), "")
            << t.blockM << "x" << t.blockN << " stages " << stages << " grid " << grid
            << (pingpong ? " ping-pong " : " ") << p.key();
      }
  EXPECT_EQ(emulated, 27);
  EXPECT_FALSE(tilingFits(withEpilogue(conv(2, 9, 9, 72, 200, 1, 1, 1, 0), true, true, A::Relu),
                          tiles(1, 64, 2, 1, false)));
  GemmProblem withC = gemm(200, 136, 264, false, true);
  withC.addend = ElemType::F16;
  EXPECT_FALSE(tilingFits(withC, tiles(1, 64, 2, 1, false)));
  TileConfig twoGroups = tiles(1, 64, 2, 1, false);
  twoGroups.warpsM = 2;
  twoGroups.blockM = 128;
  EXPECT_FALSE(tilingFits(gemm(200, 136, 264, false, true), twoGroups));
}

} // namespace
