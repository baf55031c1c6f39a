//===- Sm80MainLoop.cpp - the tc-sm80 main loop: mma.sync, ldmatrix, cp.async ===//
//
// Tier tc-sm80 (sm_80 and later; CUTLASS's MmaMultistage over MmaTensorOp):
//   - accumulators: a warpsM x warpsN grid of warps, each fragsM x fragsN
//     tiles of mma.sync.m16n8k16, every tile four f32 a thread
//     (vector<2x2xf32>: rows lane / 4 and lane / 4 + 8, columns 2 (lane % 4)
//     and the next);
//   - per K step and k16, a warp loads each 16x16 A fragment with one
//     ldmatrix.x4 and each pair of 16x8 B fragments with another (.trans
//     where the tile is staged with m or n contiguous), then issues
//     fragsM x fragsN mma.sync;
//   - the K loop: `stages` shared buffers, stages - 1 K steps in flight as
//     cp.async copies (16 bytes each, zero-filled outside the problem or in
//     the conv's padding, no registers); each step waits for its own group,
//     barriers, issues the copies stages - 1 steps ahead into the buffer the
//     step before read, and does its math;
//   - the hand-over: each band of fragment rows staged as f32 (the lane to
//     (row, column) map above), as the WMMA loop does.
// Tiles of blockK 64 are stored in tc-sm90's 128-byte swizzles, unpadded
// (K-major: chunk j of row r at chunk j ^ (r % 8); MN-major: atoms of 64
// rows by 8 k, KernelIr::sharedIndex); the other shared rows are
// padded by 16 bytes, as every tier's: either way the 8 rows of 16 bytes an
// ldmatrix phase reads fall in 8 different 4-bank groups, so the fragment
// loads are free of bank conflicts.
//
//===----------------------------------------------------------------------===//
#include "gemm/Epilogue.h"
#include "gemm/MainLoop.h"

#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

namespace tessel::codegen::gemm {

namespace {

class Sm80MainLoop final : public MainLoop {
public:
  using MainLoop::MainLoop;

  SmallVector<Value> initAccumulators() override;
  SmallVector<Value> emitKLoop(OperandGather &gather, ValueRange init) override;
  SmallVector<Value> computeStep(const TileViews &tiles, ValueRange accs) override;
  void toEpilogue(ValueRange accs, Epilogue &epilogue) override;

private:
  /// A k16 group's fragments of the warp's tile: fragsM A (vector<4x2xf16>),
  /// then fragsN B (vector<2x2xf16>).
  SmallVector<Value> loadFragments(const TileViews &tiles, int64_t ks);
  /// accs plus the products of one k16 group's fragments.
  SmallVector<Value> multiply(ValueRange fragments, ValueRange accs);
  VectorType accType() { return VectorType::get({2, 2}, b.getF32Type()); }
};

SmallVector<Value> Sm80MainLoop::initAccumulators() {
  Value zero = b.create<arith::ConstantOp>(loc, cast<TypedAttr>(b.getZeroAttr(accType())));
  return SmallVector<Value>(t.fragsM * t.fragsN, zero);
}

/// Prologue: K steps 0 .. stages - 2 into buffers 0 .. stages - 2, a group
/// each (empty past the last step, so that step i's group is always the
/// i-th); wait for step 0's group, barrier, load step 0's first k16
/// fragments. Step i, k16 group g of G = blockK / 16:
///   g = 0      copies of step i + stages - 1 into buffer (i - 1) mod stages
///              (every warp read its last fragments of step i - 1 before
///              the barrier that ended step i - 1), commit;
///   g < G - 1  load group g + 1's fragments of step i;
///   g = G - 1  wait until only stages - 2 groups are in flight (step i +
///              1's copies have landed), a conv's input scale on the
///              thread's own runs of them (the scale loaded at g = 0),
///              barrier (and every warp has loaded
///              all of step i), load step i + 1's first fragments;
///   then the MMAs of group g, with the fragments loaded one group before.
/// So the fragment loads of group g + 1, and across the barrier those of the
/// next step, are in flight during group g's MMAs (CUTLASS's warp-level
/// double buffering in MmaMultistage).
SmallVector<Value> Sm80MainLoop::emitKLoop(OperandGather &gather, ValueRange init) {
  const int64_t steps = t.stepsPerSplit(p.k), stages = t.stages, groups = t.blockK / t.fragK;
  Value kBase = mul(block.split, steps * t.blockK);
  auto buffer = [&](Value step) {
    return gather.tileViews(mul(rem(step, stages), plan.bufferBytes));
  };
  Value token;
  for (int64_t s = 0; s + 1 < stages; ++s) {
    if (s < steps)
      gather.copyAsync(add(kBase, s * t.blockK), gather.tileViews(c(s * plan.bufferBytes)));
    token = commitCopies();
  }
  SmallVector<Value> firstScales = gather.loadScales(kBase);
  waitCopies(token, stages - 2);
  gather.scaleLanded(kBase, buffer(c(0)), firstScales);
  b.create<gpu::BarrierOp>(loc);
  SmallVector<Value> carried(init.begin(), init.end());
  const size_t accCount = carried.size();
  carried.append(loadFragments(gather.tileViews(c(0)), 0));
  auto kLoop = b.create<scf::ForOp>(
      loc, c(0), c(steps), c(1), carried,
      [&](OpBuilder &, Location, Value step, ValueRange args) {
        SmallVector<Value> accs(args.take_front(accCount));
        SmallVector<Value> fragments(args.drop_front(accCount));
        // Step i + 1's input scale, loaded during step i's MMAs.
        Value following = add(step, 1);
        SmallVector<Value> nextScales;
        for (int64_t g = 0; g < groups; ++g) {
          if (g == 0) {
            Value ahead = add(step, stages - 1);
            auto refill = b.create<scf::IfOp>(loc, below(ahead, steps), /*withElseRegion=*/false);
            {
              OpBuilder::InsertionGuard guard(b);
              b.setInsertionPointToStart(&refill.getThenRegion().front());
              gather.copyAsync(add(kBase, mul(ahead, t.blockK)), buffer(ahead));
            }
            commitCopies();
            nextScales = gather.loadScales(add(kBase, mul(following, t.blockK)));
          }
          SmallVector<Value> next;
          if (g + 1 < groups) {
            next = loadFragments(buffer(step), (g + 1) * t.fragK);
          } else {
            waitCopies(token, stages - 2);
            if (p.aScale) {
              auto scale = b.create<scf::IfOp>(loc, below(following, steps),
                                               /*withElseRegion=*/false);
              OpBuilder::InsertionGuard guard(b);
              b.setInsertionPointToStart(&scale.getThenRegion().front());
              gather.scaleLanded(add(kBase, mul(following, t.blockK)), buffer(following),
                                 nextScales);
            }
            b.create<gpu::BarrierOp>(loc);
            // Step i + 1's first fragments, where there is a step i + 1.
            SmallVector<Type> types;
            for (Value v : fragments)
              types.push_back(v.getType());
            auto load = b.create<scf::IfOp>(loc, types, below(following, steps),
                                            /*withElseRegion=*/true);
            OpBuilder::InsertionGuard guard(b);
            b.setInsertionPointToStart(&load.getThenRegion().front());
            b.create<scf::YieldOp>(loc, loadFragments(buffer(following), 0));
            b.setInsertionPointToStart(&load.getElseRegion().front());
            b.create<scf::YieldOp>(loc, ValueRange(fragments));
            next.assign(load.getResults().begin(), load.getResults().end());
          }
          accs = multiply(fragments, accs);
          fragments = next;
        }
        accs.append(fragments);
        b.create<scf::YieldOp>(loc, accs);
      });
  b.setInsertionPointAfter(kLoop);
  // Every warp is done with the buffers before the epilogue's staging
  // overwrites them (the groups still open are empty).
  b.create<gpu::BarrierOp>(loc);
  return SmallVector<Value>(kLoop.getResults().take_front(accCount));
}

SmallVector<Value> Sm80MainLoop::loadFragments(const TileViews &tiles, int64_t ks) {
  Type f16 = b.getF16Type();
  auto x4 = VectorType::get({4, 2}, f16), pair = VectorType::get({2, 2}, f16);
  Value zeroPair = b.create<arith::ConstantOp>(loc, cast<TypedAttr>(b.getZeroAttr(pair)));
  Value lane = rem(block.tid, kWarpSize);
  Value warp = div(block.tid, kWarpSize);
  Value warpRow = mul(div(warp, t.warpsN), t.fragsM * t.fragM);
  Value warpCol = mul(rem(warp, t.warpsN), t.fragsN * t.fragN);
  // ldmatrix.x4: lane l gives the address of row l % 8 of 8x8 matrix l / 8.
  Value matrix = div(lane, 8), row = rem(lane, 8);
  const bool aRows = plan.a.sharedKContiguous, bRows = plan.b.sharedKContiguous;
  // A lane's 16 bytes: in a tile stored [row][k] row `row` of the matrix at
  // (r0, k0) (m or n, k), in one stored [k][row] its row k0 + `row`, the run
  // of rows from r0 (ldmatrix.trans); through the tile's swizzle, if any.
  auto at = [&](const Staging &s, bool rows, Value r0, Value k0) {
    return rows ? sharedIndex(s, add(r0, row), k0) : sharedIndex(s, r0, add(k0, row));
  };
  // A, 16x16 per fragment: matrices (m 0-7, k 0-7), (m 8-15, k 0-7),
  // (m 0-7, k 8-15), (m 8-15, k 8-15), registers a0..a3 of m16n8k16.
  SmallVector<Value> fragments;
  for (int64_t i = 0; i < t.fragsM; ++i) {
    Value m0 = add(warpRow, i * t.fragM);
    Value mOff = mul(rem(matrix, 2), 8), kOff = mul(div(matrix, 2), 8);
    // Stored [m][k]: the matrix's rows are m; stored [k][m]: k, transposed.
    fragments.push_back(b.create<nvgpu::LdMatrixOp>(
        loc, x4, tiles.a, at(plan.a, aRows, add(m0, mOff), add(kOff, c(ks))),
        /*transpose=*/!aRows, 4));
  }
  // B, two 16x8 fragments per x4: matrices (n j, k 0-7), (n j, k 8-15),
  // (n j+1, k 0-7), (n j+1, k 8-15); b0, b1 of fragment j, then of j + 1.
  for (int64_t j = 0; j < t.fragsN; j += 2) {
    Value n0 = add(warpCol, j * t.fragN);
    Value nOff = mul(div(matrix, 2), 8), kOff = mul(rem(matrix, 2), 8);
    Value two = b.create<nvgpu::LdMatrixOp>(
        loc, x4, tiles.b, at(plan.b, bRows, add(n0, nOff), add(kOff, c(ks))),
        /*transpose=*/!bRows, 4);
    for (int64_t half : {0, 2}) {
      Value fragment = zeroPair;
      for (int64_t r = 0; r < 2; ++r)
        fragment = b.create<vector::InsertOp>(
            loc, b.create<vector::ExtractOp>(loc, two, ArrayRef<int64_t>{half + r}), fragment,
            ArrayRef<int64_t>{r});
      fragments.push_back(fragment);
    }
  }
  return fragments;
}

SmallVector<Value> Sm80MainLoop::multiply(ValueRange fragments, ValueRange accs) {
  SmallVector<Value> next(accs.begin(), accs.end());
  for (int64_t i = 0; i < t.fragsM; ++i)
    for (int64_t j = 0; j < t.fragsN; ++j)
      next[i * t.fragsN + j] = b.create<nvgpu::MmaSyncOp>(
          loc, fragments[i], fragments[t.fragsM + j], next[i * t.fragsN + j],
          ArrayRef<int64_t>{t.fragM, t.fragN, t.fragK});
  return next;
}

SmallVector<Value> Sm80MainLoop::computeStep(const TileViews &tiles, ValueRange accs) {
  SmallVector<Value> next(accs.begin(), accs.end());
  for (int64_t ks = 0; ks < t.blockK; ks += t.fragK)
    next = multiply(loadFragments(tiles, ks), next);
  return next;
}

void Sm80MainLoop::toEpilogue(ValueRange accs, Epilogue &epilogue) {
  Value lane = rem(block.tid, kWarpSize);
  Value warp = div(block.tid, kWarpSize);
  Value warpM = div(warp, t.warpsN);
  Value warpCol = mul(rem(warp, t.warpsN), t.fragsN * t.fragN);
  Value group = div(lane, 4), pairCol = mul(rem(lane, 4), 2);
  toEpilogueByBands(epilogue, [&](int64_t i) {
    for (int64_t j = 0; j < t.fragsN; ++j) {
      Value acc = accs[i * t.fragsN + j];
      for (int64_t half = 0; half < 2; ++half)
        for (int64_t col = 0; col < 2; ++col) {
          Value v = b.create<vector::ExtractOp>(loc, acc, ArrayRef<int64_t>{half, col});
          Value r = add(add(mul(warpM, t.fragM), group), half * 8);
          Value cc = add(add(warpCol, j * t.fragN), add(pairCol, col));
          b.create<memref::StoreOp>(loc, v, epilogue.stagingView(), ValueRange{r, cc});
        }
    }
  });
}

} // namespace

std::unique_ptr<MainLoop> makeSm80MainLoop(OpBuilder &b, const GemmKernel &kernel,
                                           BlockCoords &block, const SharedPlan &plan) {
  return std::make_unique<Sm80MainLoop>(b, kernel, block, plan);
}

} // namespace tessel::codegen::gemm
