//===- gemm_tiling_test.cpp - the tiling heuristic's choices -------------===//
//
// chooseTiles on the shapes that matter (ResNet-50 at batch 256 and 1,
// DeepBench's long-K GEMM, a classifier, 8 columns), as documented in
// docs/architecture.md.
//
//===----------------------------------------------------------------------===//
#include "GemmEmulation.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace tessel::codegen;
using namespace tessel::gpuemu;

namespace {

/// The heuristic's choices on the shapes that matter (documented in
/// docs/architecture.md).
TEST(Tiling, HeuristicChoices) {
  auto tc = [](const GemmProblem &p) { return *chooseTiles(p, GemmTier::TensorCore); };
  // ResNet-50 at batch 256, N = 64: 256x64's two buffers (50 KiB) pass the
  // 48 KiB of static shared memory, so 128x64, 4 warps of 4x2 fragments.
  TileConfig big = tc(conv(256, 56, 56, 64, 64, 3, 3, 1, 1));
  EXPECT_EQ(big.blockM, 128);
  EXPECT_EQ(big.blockN, 64);
  EXPECT_EQ(big.blockK, 32);
  EXPECT_EQ(big.threads(), 128);
  // N = 256: 128x128 (two buffers of 20 KiB) as 8 warps of 64x32 (4x2
  // fragments); 64x64 warp tiles are no candidates (measured slower on
  // ResNet-50 b256, gemm/Tiling.cpp).
  TileConfig wide = tc(conv(256, 14, 14, 256, 256, 3, 3, 1, 1));
  EXPECT_EQ(wide.blockM, 128);
  EXPECT_EQ(wide.blockN, 128);
  EXPECT_EQ(wide.blockK, 32);
  EXPECT_EQ(wide.threads(), 256);
  EXPECT_EQ(wide.fragsM * wide.fragsN, 8);
  // ResNet-50 at batch 1, 7x7 outputs (M = 49, K = 4608): 8 tiles of 64x64
  // would leave 100 of 108 SMs idle; split-K makes the blocks from K (12
  // splits of 6 steps of blockK 64: 96 blocks), not from smaller tiles.
  TileConfig late = tc(conv(1, 7, 7, 512, 512, 3, 3, 1, 1));
  EXPECT_EQ(late.blockM, 64);
  EXPECT_EQ(late.blockN, 64);
  EXPECT_EQ(late.fragM, 16);
  EXPECT_EQ(late.blockK, 64);
  EXPECT_EQ(late.splitK, 12);
  // A batch-256 grid fills the SMs many times: no split.
  EXPECT_EQ(big.splitK, 1);
  EXPECT_EQ(wide.splitK, 1);
  // The language-model GEMM of DeepBench (M 1024, N 16, K 500000): a
  // handful of tiles, each with thousands of K steps, split the most.
  EXPECT_EQ(tc(gemm(1024, 16, 500000, false, false)).splitK, 64);
  // M of 33 to 48: one row tile of 48 (three 16-row fragments a warp), so
  // that B is read once, split along K for blocks (DeepBench's 35 x 8457,
  // odd N, on the H200: bench/NOTES.md (38)); 32 rows keep 32.
  for (bool transA : {false, true})
    for (int64_t k : {1760, 2560}) {
      TileConfig shortM = tc(gemm(35, 8457, k, transA, false));
      EXPECT_EQ(shortM.blockM, 48) << transA << " " << k;
      EXPECT_EQ(shortM.fragsM, 3) << transA << " " << k;
      EXPECT_GT(shortM.splitK, 1) << transA << " " << k;
    }
  EXPECT_LE(tc(gemm(32, 8457, 2560, false, false)).blockM, 32);
  // Every choice keeps both buffers (rows padded by 8 f16) within the 48 KiB
  // of static shared memory.
  for (const TileConfig &t : {big, wide, late})
    EXPECT_LE(2 * (t.blockM + t.blockN) * (t.blockK + 8) * 2, 48 * 1024);
  // A batch-1 classifier: 8x32 fragments, one warp row.
  TileConfig classifier = tc(gemm(1, 1000, 2048, false, true));
  EXPECT_EQ(classifier.fragM, 8);
  EXPECT_EQ(classifier.blockM, 8);
  // 8 output columns: 32x8 fragments, one warp column.
  TileConfig skinny = tc(gemm(4096, 8, 64, false, false));
  EXPECT_EQ(skinny.fragN, 8);
  EXPECT_EQ(skinny.blockN, 8);
  // f32 operands have no Tensor Core tiling.
  EXPECT_FALSE(chooseTiles(gemm(64, 64, 64, false, false, ElemType::F32), GemmTier::TensorCore));
}

/// tc-sm80's choices on the shapes its sweep measured on the H100
/// (bench/NOTES.md): the square GEMM's 128x256x64 with 3 stages (A K-major,
/// B MN-major, both in the 128-byte swizzles, unpadded: 144 KiB), also
/// with B K-major (swizzled too: 144 KiB; padded, 166 KiB, it had 2),
/// BERT-base b8's MLP down-projection 64x128x64 with 4, and no kernel where
/// an operand has no runs of 4 bytes or more.
TEST(Tiling, Sm80Choices) {
  auto tc80 = [](const GemmProblem &p) { return chooseTiles(p, GemmTier::TensorCoreSm80); };
  TileConfig square = *tc80(gemm(4096, 4096, 4096, false, false));
  EXPECT_EQ(square.blockM, 128);
  EXPECT_EQ(square.blockN, 256);
  EXPECT_EQ(square.blockK, 64);
  EXPECT_EQ(square.stages, 3);
  EXPECT_EQ(square.threads(), 256);
  EXPECT_EQ(GemmKernel({gemm(4096, 4096, 4096, false, false), square, "k"}).sharedBytes(),
            3u * (128 + 256) * 64 * 2);
  // Its 32 row tiles in groups of 16, the power of two nearest the group
  // that reads fewest panels (15 on the A100's 108 SMs: 0.3054 ms against
  // 0.2887 on the H200, bench/NOTES.md (26)); 50 row tiles too (16, 16,
  // 16, 2: on tc-sm90 rows of 66 tiles lost 1.15-1.36x in groups of 17).
  EXPECT_EQ(square.rasterM, 16);
  EXPECT_EQ(tc80(gemm(8192, 8192, 8192, false, false))->rasterM, 16);
  TileConfig tall = *tc80(gemm(6400, 8192, 4096, false, false));
  ASSERT_EQ(tall.blockM, 128);
  EXPECT_EQ(tall.rasterM, 16);
  TileConfig squareTn = *tc80(gemm(4096, 4096, 4096, false, true));
  EXPECT_EQ(squareTn.blockN, 256);
  EXPECT_EQ(squareTn.stages, 3);
  EXPECT_EQ(GemmKernel({gemm(4096, 4096, 4096, false, true), squareTn, "k"}).sharedBytes(),
            3u * (128 + 256) * 64 * 2);
  TileConfig down = *tc80(gemm(1024, 768, 3072, false, false));
  EXPECT_EQ(down.blockM, 64);
  EXPECT_EQ(down.blockN, 128);
  EXPECT_EQ(down.blockK, 64);
  EXPECT_EQ(down.stages, 4);
  // Stages never exceed the 160 KiB the heuristic allows.
  for (const GemmProblem &p : {gemm(4096, 4096, 4096, true, true), gemm(512, 1536, 6144, false, true),
                               conv(256, 56, 56, 64, 64, 3, 3, 1, 1)})
    EXPECT_LE(GemmKernel({p, *tc80(p), "k"}).sharedBytes(), 160u * 1024) << p.key();
  // ResNet-50 b256's first 3x3 (56x56x64): at most 8 im2col slots a thread
  // (256x64x64 with 4 warps had 16 and spilled at 255 registers).
  GemmProblem l1 = conv(256, 56, 56, 64, 64, 3, 3, 1, 1);
  TileConfig l1Tiles = *tc80(l1);
  EXPECT_LE(l1Tiles.blockM * l1Tiles.blockK / 8, 8 * l1Tiles.threads());
  // K = 20 with a k-contiguous B: runs of 8 bytes (Sm80.NarrowRuns); K =
  // 21, runs of one element: no tc-sm80 kernel.
  EXPECT_TRUE(tc80(gemm(33, 17, 20, false, true)));
  EXPECT_FALSE(tc80(gemm(33, 17, 21, false, true)));
  EXPECT_FALSE(tc80(gemm(64, 64, 64, false, false, ElemType::F32)));
}

/// tc-sm90's choices on the shapes its sweep measured on the H200
/// (bench/results/2026-11-26-h200-sm90/tc90-sweep.txt): the square GEMM's
/// 128x256x64 (two warpgroups of m64n256, 4 stages), BERT-base b8's MLP
/// down-projection unsplit on 64x128 (split in two on 128x128 it took 20.9
/// us against 15.0), and no kernel where wgmma cannot read an operand.
TEST(Tiling, Sm90Choices) {
  auto tc90 = [](const GemmProblem &p) { return chooseTiles(p, GemmTier::TensorCoreSm90); };
  for (bool transB : {true, false}) { // B K-major, or MN-major (wgmma's transposed B)
    TileConfig square = *tc90(gemm(4096, 4096, 4096, false, transB));
    EXPECT_EQ(square.blockM, 128);
    EXPECT_EQ(square.blockN, 256);
    EXPECT_EQ(square.blockK, 64);
    EXPECT_EQ(square.fragN, 256);
    EXPECT_EQ(square.stages, 4);
    EXPECT_EQ(square.threads(), 256);
    EXPECT_LE(GemmKernel({gemm(4096, 4096, 4096, false, transB), square, "k"}).sharedBytes(),
              224u * 1024);
    // K-major, 96 columns: 128 tiles for 132 SMs (0.0142 ms against
    // 0.0145 on 64 x 128, bench/NOTES.md (24)); MN-major B is staged in
    // atoms of 64 columns, so 128.
    TileConfig down = *tc90(gemm(1024, 768, 3072, false, transB));
    EXPECT_EQ(down.blockM, 64);
    EXPECT_EQ(down.blockN, transB ? 96 : 128);
    EXPECT_EQ(down.splitK, 1);
  }
  // ViT b32's four GEMMs (6304 rows) on 192 x 192 tiles of three
  // warpgroups, whole K, as launched: its 768 columns one wave of 132 tiles
  // (the MLP's down projection 0.0525 ms against 0.0666 on 128 x 192 on the
  // H100; QKV 0.0491 against 0.0617 on 128 x 128, bench/NOTES.md (22)).
  for (auto [n, k] : {std::pair{768, 3072}, {2304, 768}, {3072, 768}, {768, 768}}) {
    TileConfig vit = *tc90(gemm(6304, n, k, false, true));
    EXPECT_EQ(vit.blockM, 192) << n << " x " << k;
    EXPECT_EQ(vit.blockN, 192) << n << " x " << k;
    EXPECT_EQ(vit.threads(), 384) << n << " x " << k;
    EXPECT_EQ(vit.splitK, 1) << n << " x " << k;
    EXPECT_EQ(vit.rasterM, 0) << n << " x " << k;
  }
  // The large squares and N = 24000 keep 128 x 256, which 4096^3 runs 15%
  // faster than 192 x 192, by TMA (4096^3 0.1884 -> 0.1780 ms, NOTES
  // (33)).
  TileConfig wide = *tc90(gemm(7680, 24000, 2560, false, false));
  EXPECT_EQ(wide.blockN, 256);
  EXPECT_TRUE(wide.tma && !wide.warpSpecialized);
  // B rows of 3000 columns (no transB) are not whole 128-byte lines: 256 x
  // 128 tiles, two math warpgroups beside a producer, row groups of 4
  // (7680 x 3000 x 2560 0.2027 -> 0.1789 ms, 0.96x cuBLAS, NOTES (33); so
  // DeepBench's 4608 x 3000 x 1536, 192 x 192 before); so with transA (both
  // MN-major). Not with too few tiles (1024 x 3000: 96), nor by TMA on 64
  // x 64 tiles (6144 x 32 x 2048).
  EXPECT_EQ(tc90(gemm(4608, 3000, 1536, false, false))->blockM, 256);
  for (bool transA : {false, true}) {
    TileConfig split = *tc90(gemm(7680, 3000, 2560, transA, false));
    EXPECT_EQ(split.blockM, 256);
    EXPECT_EQ(split.blockN, 128);
    EXPECT_EQ(split.warpsM, 2);
    EXPECT_EQ(split.threads(), 384);
    EXPECT_TRUE(split.tma && split.warpSpecialized && !split.pingpong);
    EXPECT_EQ(split.rasterM, 4);
  }
  EXPECT_FALSE(tc90(gemm(1024, 3000, 2816, false, false))->warpSpecialized);
  // The skinny gemms on 64 x 64 tiles in one wave: 8 stages (7680 x 64 x
  // 2560 0.0160 -> 0.0098 ms, NOTES (35)); not a conv (not measured).
  for (auto [m, n, k] : {std::tuple{7680, 64, 2560}, {8448, 32, 2816}, {2048, 128, 2048}}) {
    TileConfig skinny = *tc90(gemm(m, n, k, false, false));
    EXPECT_EQ(skinny.blockM * skinny.blockN, 64 * 64) << m << " x " << n;
    EXPECT_EQ(skinny.stages, 8) << m << " x " << n;
  }
  // 64 x 128 in one wave too (7680 x 128 x 2560 transA 0.0148 -> 0.0131
  // ms); and 64 x 64 unsplit in 8 stages over a split pick where those
  // tiles make half a wave to one (2560 x 128 x 2560: 80 tiles, 0.0147 ->
  // 0.0089 ms; 4096 x 128 x 4096: 128), not fewer (4096 x 64 x 4096, 64
  // tiles, stays split: NOTES (37)).
  TileConfig tall = *tc90(gemm(7680, 128, 2560, true, false));
  EXPECT_EQ(tall.blockM, 64);
  EXPECT_EQ(tall.blockN, 128);
  EXPECT_EQ(tall.stages, 8);
  for (auto [m, k] : {std::pair{2560, 2560}, {4096, 4096}}) {
    TileConfig unsplit = *tc90(gemm(m, 128, k, false, false));
    EXPECT_EQ(unsplit.blockM * unsplit.blockN, 64 * 64) << m;
    EXPECT_EQ(unsplit.splitK, 1) << m;
    EXPECT_EQ(unsplit.stages, 8) << m;
  }
  EXPECT_GT(tc90(gemm(4096, 64, 4096, false, false))->splitK, 1);
  TileConfig pointwise = *tc90(conv(1, 14, 14, 1024, 64, 1, 1, 1, 0));
  EXPECT_EQ(pointwise.blockM * pointwise.blockN, 64 * 64);
  EXPECT_EQ(pointwise.stages, 4);
  EXPECT_TRUE(tc90(gemm(1024, 3000, 2816, false, false))->tma);
  EXPECT_FALSE(tc90(gemm(6144, 32, 2048, false, false))->tma);
  // BERT b8 (1024 rows) on two warpgroups: QKV on 128 x 144, 128 tiles for
  // 132 SMs (0.0099 ms against 0.0115 for 96 tiles of 128 x 192 on the
  // H100, bench/NOTES.md (24)), the MLP's up projection on 128 x 192 (128
  // tiles already); the down projection whole K on 64 x 96 (split, 128 x
  // 192 had measured 0.024 ms against 0.015).
  for (auto [n, width] : {std::pair{2304, 144}, {3072, 192}}) {
    TileConfig bert = *tc90(gemm(1024, n, 768, false, true));
    EXPECT_EQ(bert.blockM, 128) << n;
    EXPECT_EQ(bert.blockN, width) << n;
  }
  TileConfig bertDown = *tc90(gemm(1024, 768, 3072, false, true));
  EXPECT_EQ(bertDown.blockM, 64);
  EXPECT_EQ(bertDown.blockN, 96);
  EXPECT_EQ(bertDown.splitK, 1);
  // Split-K keeps at least as many steps per split as the pipeline's
  // stages, on a whole-atom width: GPT-2 b1's down projection split eight
  // ways took 0.0096 ms on 64 x 128 against 0.0103 on 64 x 96.
  TileConfig b1 = *tc90(gemm(128, 768, 3072, false, true));
  EXPECT_GE(b1.stepsPerSplit(3072), b1.stages);
  EXPECT_GT(b1.splitK, 1);
  EXPECT_EQ(b1.blockN, 128);
  // Short K loops over many blocks, priced with the blocks an SM holds at
  // once (H200, bench/NOTES.md (25)): ResNet-50 b256's 1x1 conv of K 64
  // with its residual on 128 x 128 in 2 stages on two warpgroups (0.273 ms;
  // 128 x 256 in 4 stages, one block an SM, 0.337; one warpgroup, two
  // round trips for the residual a thread, 0.292), without the residual on
  // one warpgroup (0.194 against 0.226); at batch 1 (49 row tiles) the
  // picks as before, in no more stages than the one K step fills.
  using A = Activation;
  TileConfig withResidual =
      *tc90(withEpilogue(conv(256, 56, 56, 64, 256, 1, 1, 1, 0), true, true, A::Relu));
  EXPECT_EQ(withResidual.blockM, 128);
  EXPECT_EQ(withResidual.blockN, 128);
  EXPECT_EQ(withResidual.stages, 2);
  EXPECT_EQ(withResidual.threads(), 256);
  EXPECT_FALSE(withResidual.warpSpecialized);
  // Without the residual, TMA and enough tiles: the persistent ping-pong
  // kernel, 128 x 128 on one warpgroup a side, 4 stages, its own raster
  // (H200, bench/NOTES.md (31): this conv 0.1822 -> 0.1567 ms).
  TileConfig pingpong = *tc90(conv(256, 56, 56, 64, 256, 1, 1, 1, 0));
  EXPECT_TRUE(pingpong.tma && pingpong.warpSpecialized && pingpong.pingpong);
  // Its epilogue by TMA stores (NOTES (32): this conv 0.1601 -> 0.1474 ms).
  EXPECT_TRUE(pingpong.tmaStore);
  EXPECT_EQ(pingpong.blockM, 128);
  EXPECT_EQ(pingpong.blockN, 128);
  EXPECT_EQ(pingpong.stages, 4);
  EXPECT_EQ(pingpong.threads(), 384);
  EXPECT_EQ(pingpong.persistent, 132);
  EXPECT_EQ(pingpong.rasterM, 16);
  // Not where N is 64 and K short (l1.reduce, 4 steps), nor with too few
  // tiles (batch 8), nor without TMA (a 3x3 of 96 channels: no whole
  // steps of a tap for the im2col mode).
  EXPECT_FALSE(tc90(conv(256, 56, 56, 256, 64, 1, 1, 1, 0))->warpSpecialized);
  EXPECT_FALSE(tc90(conv(8, 14, 14, 256, 1024, 1, 1, 1, 0))->warpSpecialized);
  TileConfig odd = *tc90(conv(256, 28, 28, 96, 128, 3, 3, 1, 1));
  EXPECT_FALSE(odd.tma || odd.warpSpecialized);
  // The windowed and strided convs by TMA's im2col mode (H200,
  // bench/NOTES.md (32)): ping-pong 128 x 128 where N has 128 columns or
  // more (l2.3x3 0.1161 -> 0.0973 ms, l3.3x3_s2 in its own raster), 128 x
  // 64 (8 stages with TMA stores) on l1.3x3 (9 K steps: 0.1689 -> 0.1413);
  // layer 4's 3x3s (392 tiles) below.
  for (const GemmProblem &p : {conv(256, 28, 28, 128, 128, 3, 3, 1, 1),
                               conv(256, 56, 56, 128, 128, 3, 3, 2, 1),
                               conv(256, 56, 56, 256, 512, 1, 1, 2, 0)}) {
    TileConfig t = *tc90(p);
    EXPECT_TRUE(t.tma && t.pingpong) << p.key();
    EXPECT_EQ(t.blockN, 128) << p.key();
  }
  EXPECT_EQ(tc90(conv(256, 28, 28, 256, 256, 3, 3, 2, 1))->rasterM, 8);
  TileConfig l1 = *tc90(conv(256, 56, 56, 64, 64, 3, 3, 1, 1));
  EXPECT_TRUE(l1.pingpong && l1.tmaStore);
  EXPECT_EQ(l1.blockM, 128);
  EXPECT_EQ(l1.blockN, 64);
  EXPECT_EQ(l1.stages, 8);
  // Not the TMA stores where the output is f32 (the ping-pong kernel keeps
  // its f32 staging).
  GemmProblem f32Out = conv(256, 56, 56, 64, 256, 1, 1, 1, 0);
  f32Out.out = ElemType::F32;
  if (std::optional<TileConfig> t = tc90(f32Out))
    EXPECT_FALSE(t->tmaStore);
  // Layer 4's 392 tiles (three waves) take it too, with TMA stores
  // (l4.3x3 0.0772 -> 0.0738 ms); two waves (batch 128's 196) do not.
  TileConfig l4 = *tc90(conv(256, 7, 7, 512, 512, 3, 3, 1, 1));
  EXPECT_TRUE(l4.pingpong && l4.tmaStore);
  TileConfig l4b128 = *tc90(conv(128, 7, 7, 512, 512, 3, 3, 1, 1));
  EXPECT_TRUE(l4b128.tma);
  EXPECT_FALSE(l4b128.warpSpecialized);
  TileConfig b1Conv = *tc90(withEpilogue(conv(1, 56, 56, 64, 256, 1, 1, 1, 0), true, true, A::Relu));
  EXPECT_EQ(b1Conv.blockM, 64);
  EXPECT_EQ(b1Conv.blockN, 128);
  EXPECT_EQ(b1Conv.stages, 2);
  // A longer K loop keeps the deeper pipeline and the wide tile.
  TileConfig l3 = *tc90(withEpilogue(conv(256, 14, 14, 256, 1024, 1, 1, 1, 0), true, true, A::Relu));
  EXPECT_EQ(l3.blockN, 256);
  EXPECT_EQ(l3.stages, 4);
  // Convs (NHWC input, OHWI weights: both K-major) have kernels.
  EXPECT_TRUE(tc90(conv(1, 56, 56, 64, 64, 3, 3, 1, 1)));
  // A transposed A (m contiguous: MN-major A) has one; B without 16-byte
  // runs (N = 50257 along n), f32: none.
  EXPECT_TRUE(tc90(gemm(512, 512, 512, true, true)));
  EXPECT_TRUE(tc90(gemm(512, 512, 512, true, false)));
  EXPECT_FALSE(tc90(gemm(128, 50257, 768, false, false)));
  EXPECT_TRUE(tc90(gemm(128, 50257, 768, false, true)));
  EXPECT_FALSE(tc90(gemm(64, 64, 64, false, true, ElemType::F32)));
}

/// A conv's grid of more than one column tile and wave in groups of row
/// tiles, so that each panel of its input comes from DRAM once
/// (bench/NOTES.md (28), ResNet-50 b256 on the H200): groups of the panel
/// rule's 16 on many row tiles (l2.expand, 1568: 0.1126 -> 0.1017 ms), at
/// most the power of two that leaves 32 groups (392 row tiles: 8; 98: 2,
/// where 16 lost 10% on l4.3x3); one column tile, one wave, a GEMM or
/// tc-sm80 (where these groups lost on 4 of 11 convs): as before.
TEST(Tiling, ConvRasterGroups) {
  auto raster = [](const GemmProblem &p, GemmTier tier = GemmTier::TensorCoreSm90) {
    return chooseTiles(p, tier)->rasterM;
  };
  EXPECT_EQ(raster(conv(256, 28, 28, 128, 512, 1, 1, 1, 0)), 16);
  EXPECT_EQ(raster(conv(256, 14, 14, 256, 1024, 1, 1, 1, 0)), 8);
  EXPECT_EQ(raster(conv(256, 7, 7, 512, 512, 3, 3, 1, 1)), 2);
  EXPECT_EQ(raster(conv(256, 7, 7, 2048, 512, 1, 1, 1, 0)), 2);
  // One column tile of 64 filters; one wave at batch 1.
  EXPECT_EQ(raster(conv(256, 56, 56, 64, 64, 3, 3, 1, 1)), 0);
  EXPECT_EQ(raster(conv(1, 7, 7, 512, 2048, 1, 1, 1, 0)), 0);
  // tc-sm80 as before (l2.expand on 128 x 256 tiles: launched as is).
  EXPECT_EQ(raster(conv(256, 28, 28, 128, 512, 1, 1, 1, 0), GemmTier::TensorCoreSm80), 0);
  // ViT b32's QKV projection, a GEMM of 12 column tiles: as launched.
  EXPECT_EQ(raster(gemm(6304, 2304, 768, false, true)), 0);
}

// wgmma's MN-major operand is staged in atoms of 64 rows: a tile 96 wide
// along a B without transB does not fit (forced, such a kernel read past
// its tiles and gave wrong sums on the H100); K-major, it does.
TEST(Tiling, Sm90MnMajorTilesAreWholeAtoms) {
  TileConfig t = *chooseTiles(gemm(4096, 7000, 256, false, true), GemmTier::TensorCoreSm90);
  t.warpsM = 2;
  t.warpsN = 1;
  t.fragsM = 1;
  t.fragN = 96;
  t.blockM = 128;
  t.blockN = 96;
  t.splitK = 1;
  t.stages = 4;
  EXPECT_TRUE(tilingFits(gemm(4096, 7000, 256, false, true), t));
  EXPECT_FALSE(tilingFits(gemm(4096, 7000, 256, false, false), t));
  t.fragN = t.blockN = 192;
  EXPECT_TRUE(tilingFits(gemm(4096, 7000, 256, false, false), t));
}

} // namespace
