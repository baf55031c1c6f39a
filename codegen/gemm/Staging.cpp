//===- Staging.cpp - operand tiles in shared memory, and their gathers ----===//
//
// The shared-memory layout of the operand tiles (plain data, which the
// tiling heuristic weighs) and the gathers that fill the tiles each K step:
// per thread, runs of 16 bytes (8 or 4 on the cp.async tiers, or single
// elements) along the operand's contiguous dimension, zero where out of
// range or in the conv's padding.
//
//===----------------------------------------------------------------------===//
#include "gemm/Staging.h"

#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <algorithm>

using namespace mlir;

namespace tessel::codegen::gemm {

//===----------------------------------------------------------------------===//
// The layout
//===----------------------------------------------------------------------===//

Staging stagingFor(const GemmProblem &p, const TileConfig &t, bool isA) {
  Staging s;
  s.type = isA ? p.a : p.b;
  s.rows = isA ? t.blockM : t.blockN;
  // The extent runs lie along: runs whose length divides it never straddle
  // the range's end.
  int64_t along = 1;
  switch (p.op) {
  case GemmOpKind::Conv:
    s.kContiguous = true; // input channels (A) and OHWI weights (B), a group's
    along = p.conv.inC / std::max<int64_t>(1, p.conv.group);
    break;
  case GemmOpKind::Gemm:
    s.kContiguous = isA ? !p.transA : p.transB;
    along = s.kContiguous ? p.k : (isA ? p.m : p.n);
    break;
  case GemmOpKind::MatMul:
    s.kContiguous = isA; // A[..., M, K], B[..., K, N]
    along = isA ? p.k : p.n;
    break;
  }
  // Runs of 16 bytes; on the cp.async tiers, where an operand's rows are
  // not 16-byte multiples, of 8 or 4 bytes (cp.async's other sizes: B of
  // DeepBench's N = 1500, 700, 4 or 2 without transB), the shorter the
  // more copies a step. WMMA and SIMT load such operands an element at a
  // time.
  const bool asyncCopies =
      t.tier == GemmTier::TensorCoreSm90 || t.tier == GemmTier::TensorCoreSm80;
  for (int64_t bytes = 16; bytes >= (asyncCopies ? 4 : 16); bytes /= 2) {
    const int64_t elems = bytes / elemBytes(s.type);
    if (elems > 1 && along % elems == 0 && (s.kContiguous ? t.blockK : s.rows) % elems == 0) {
      s.vector = elems;
      break;
    }
  }
  s.sharedKContiguous = s.kContiguous;
  // tc-sm80 reads its tiles of blockK 64 in the same swizzles (its ldmatrix
  // addresses through sharedIndex): unpadded, so that 128 x 256 x 64 tiles
  // keep 3 stages within kMaxDynamicSharedBytes (B K-major: 144 KiB; padded
  // rows, 166 KiB, left 2), and the cp.async stores of an MN-major tile's
  // 128-byte rows free of the bank conflicts its padded rows had.
  if (asyncCopies && t.blockK * elemBytes(s.type) == 128 &&
      (s.kContiguous || s.rows % 64 == 0)) {
    // K-major: [rows][64 k]; MN-major: atoms of 64 rows (m or n) by 8 k
    // (wgmma's transposed operand), row blocks of them blockK / 8 atoms
    // apart.
    s.swizzled = true;
    s.ld = s.kContiguous ? t.blockK : s.rows;
    s.bytes = s.rows * t.blockK * elemBytes(s.type);
    return s;
  }
  // A WMMA fragment must start on 32 bytes; a column-major A (row-major B)
  // fragment starts every fragM (fragN) elements along a shared row, which
  // is 16 bytes for the 8-wide fragments: keep those tiles k-contiguous.
  if (t.tier == GemmTier::TensorCore && !s.kContiguous && (isA ? t.fragM : t.fragN) < 16)
    s.sharedKContiguous = true;
  // 16 bytes of padding per shared row: rows stay 16-byte aligned for the
  // vector stores and WMMA's ldm (a multiple of 8 f16), and consecutive rows
  // start in different banks.
  const int64_t pad = 16 / elemBytes(s.type);
  s.ld = (s.sharedKContiguous ? t.blockK : s.rows) + pad;
  s.bytes = (s.sharedKContiguous ? s.rows : t.blockK) * s.ld * elemBytes(s.type);
  return s;
}

int64_t stagingRows(const TileConfig &t) {
  return onTensorCores(t.tier) ? t.warpsM * t.fragM : t.blockM;
}
// Rows of the f32 staging, padded. The Tensor Core tiers store their
// accumulators as pairs of columns (mma.sync's and wgmma's fragments: lane
// l at row l / 4, columns 2 (l % 4) + 8j, one 8-byte store), 16 lanes a
// shared memory wavefront: rows 8 floats apart mod 32 (tiles a multiple of
// 32 wide) put those 16 lanes (4 rows) in 32 distinct banks, where 4 apart
// (blockN + 4) put rows r and r + 1 two to a bank (BERT b8's GEMMs 1-3%
// faster, bench/NOTES.md (23)). The SIMT tier's rows stay blockN + 4.
int64_t stagingLd(const TileConfig &t) {
  return t.blockN + (onTensorCores(t.tier) ? 8 : 4);
}

SharedPlan sharedPlan(const GemmProblem &p, const TileConfig &t) {
  SharedPlan plan;
  plan.a = stagingFor(p, t, /*isA=*/true);
  plan.b = stagingFor(p, t, /*isA=*/false);
  // wgmma's descriptors want each swizzled tile on a swizzle atom; tc-sm80
  // applies the swizzle itself (its ldmatrix addresses), on any 16 bytes.
  const bool atoms = plan.a.swizzled && t.tier == GemmTier::TensorCoreSm90;
  const int64_t align = atoms ? kSwizzleAtomBytes : kSharedAlignment;
  plan.bOffset = roundUp(plan.a.bytes, align);
  plan.bufferBytes = roundUp(plan.bOffset + plan.b.bytes, align);
  if (atoms)
    plan.alignSlack = kSwizzleAtomBytes - kSharedAlignment;
  int64_t staging = stagingRows(t) * stagingLd(t) * 4;
  if (t.tmaStore) {
    // Boxes of 64 x 64 f16 a band, swizzled: from the aligned buffers'
    // start, past the stages.
    plan.stagingOffset = roundUp(t.stages * plan.bufferBytes, kSwizzleAtomBytes);
    plan.stagingStride = roundUp(t.fragM * t.blockN * 2, kSwizzleAtomBytes);
    plan.bytes = plan.alignSlack + plan.stagingOffset +
                 plan.stagingStride * (t.pingpong ? 2 : 1);
  } else if (t.persistent) {
    plan.stagingOffset = roundUp(t.stages * plan.bufferBytes + plan.alignSlack, kSharedAlignment);
    plan.stagingStride = roundUp(staging, kSharedAlignment);
    plan.bytes = plan.stagingOffset + plan.stagingStride * (t.pingpong ? 2 : 1);
  } else {
    plan.bytes = roundUp(std::max(t.stages * plan.bufferBytes, staging) + plan.alignSlack,
                         kSharedAlignment);
  }
  if (t.tma) {
    // A full mbarrier a stage, and with the producer warpgroup an empty one.
    plan.barrierOffset = plan.bytes;
    plan.bytes = roundUp(plan.bytes + 8 * t.stages * (t.warpSpecialized ? 2 : 1) +
                             (t.pingpong ? 16 : 0),
                         kSharedAlignment);
  }
  return plan;
}

int64_t gatherSlots(const Staging &s, const TileConfig &t) {
  return ceilDiv(s.rows * t.blockK / s.vector, t.threads());
}

int64_t prefetchRegisters(const SharedPlan &plan, const TileConfig &t) {
  int64_t registers = 0;
  for (const Staging &s : {plan.a, plan.b})
    registers += gatherSlots(s, t) * ceilDiv(s.vector * elemBytes(s.type), 4);
  return registers;
}

//===----------------------------------------------------------------------===//
// The gathers
//===----------------------------------------------------------------------===//

void OperandGather::declareViews(gpu::GPUFuncOp func, ArrayRef<llvm::StringRef> params) {
  auto arg = [&](llvm::StringRef name) {
    return func.getArgument(llvm::find(params, name) - params.begin());
  };
  aElems = elementView(func, params, "a", p.a);
  bElems = elementView(func, params, "b", p.b);
  if (plan.a.vector > 1)
    aRuns = view(arg("a"), 0, {operandElements(p, "a") / plan.a.vector}, runType(plan.a));
  if (plan.b.vector > 1)
    bRuns = view(arg("b"), 0, {operandElements(p, "b") / plan.b.vector}, runType(plan.b));
  if (p.aScale) {
    scaleElems = elementView(func, params, "a_scale", *p.aScale);
    if (plan.a.vector > 1)
      scaleRuns = view(arg("a_scale"), 0, {operandElements(p, "a_scale") / plan.a.vector},
                       runType(plan.a));
  }
}

void OperandGather::setupBatchOffsets() {
  aBatchOffset = bBatchOffset = c(0);
  if (p.op == GemmOpKind::Conv && p.conv.group > 1) {
    aBatchOffset = mul(block.z, p.conv.inC / p.conv.group); // the group's channels
    bBatchOffset = mul(block.z, p.n * p.k);                 // the group's filters
  } else if (p.op == GemmOpKind::MatMul) {
    Value rest = block.z;
    for (size_t d = p.batchDims.size(); d-- > 0;) {
      const BatchDim &dim = p.batchDims[d];
      Value index = rem(rest, dim.extent);
      rest = div(rest, dim.extent);
      aBatchOffset = add(aBatchOffset, mul(index, dim.aStride * p.m * p.k));
      bBatchOffset = add(bBatchOffset, mul(index, dim.bStride * p.k * p.n));
    }
  }
}

void OperandGather::setupSlots() {
  aSlots.clear();
  bSlots.clear();
  tileScaleBase = {};
  sharedScale = false;
  if (p.aScale) {
    // The block's rows lie in one image where there is one image or the
    // images are whole row tiles; then a thread's A runs, all at one k when
    // the threads cover whole rows of runs, share one scale run.
    const int64_t pixels = p.conv.outH * p.conv.outW;
    if (p.conv.batch == 1 || pixels % t.blockM == 0) {
      tileScaleBase = add(mul(div(block.m0, pixels), p.conv.inC), aBatchOffset);
      sharedScale = plan.a.kContiguous && t.threads() % (t.blockK / plan.a.vector) == 0;
    }
  }
  for (bool isA : {true, false}) {
    const Staging &s = isA ? plan.a : plan.b;
    for (int64_t i = 0, slots = gatherSlots(s, t); i < slots; ++i)
      (isA ? aSlots : bSlots).push_back(slotSetup(isA, i));
  }
}

/// The tiles of the shared buffer that starts at byte `bufferOffset`.
TileViews OperandGather::tileViews(Value bufferOffset) {
  auto tileShape = [&](const Staging &s, int64_t perElem) -> SmallVector<int64_t> {
    return {s.sharedKContiguous ? s.rows : t.blockK, s.ld / perElem};
  };
  Value bAt = add(bufferOffset, plan.bOffset);
  TileViews v;
  v.a = view(shared, bufferOffset, tileShape(plan.a, 1), elemType(p.a));
  v.b = view(shared, bAt, tileShape(plan.b, 1), elemType(p.b));
  if (plan.a.vector > 1)
    v.aRuns = view(shared, bufferOffset, tileShape(plan.a, plan.a.vector), runType(plan.a));
  if (plan.b.vector > 1)
    v.bRuns = view(shared, bAt, tileShape(plan.b, plan.b.vector), runType(plan.b));
  return v;
}

/// Row (or run of rows) `row` of operand A (m) or B (n), before the K loop.
OperandGather::RowState OperandGather::rowSetup(bool isA, Value row) {
  RowState s;
  s.valid = below(row, isA ? p.m : p.n);
  const ConvShape &cv = p.conv;
  if (p.op == GemmOpKind::Conv && isA) {
    Value image = div(row, cv.outH * cv.outW);
    if (p.aScale)
      s.scaleBase = tileScaleBase ? tileScaleBase : add(mul(image, cv.inC), aBatchOffset);
    if (!p.im2col()) {
      // The input is the A matrix itself: [M][inC], group z's channels.
      s.address = add(mul(row, cv.inC), aBatchOffset);
      return s;
    }
    Value pixel = rem(row, cv.outH * cv.outW);
    s.imageBase = mul(image, cv.inH * cv.inW);
    s.ihBase = sub(mul(div(pixel, cv.outW), cv.strideH), cv.padH);
    s.iwBase = sub(mul(rem(pixel, cv.outW), cv.strideW), cv.padW);
    return s;
  }
  // Strided operands: element (row, k) at offset + row * rowStride + k * kStride.
  int64_t rowStride = 1;
  switch (p.op) {
  case GemmOpKind::Conv: rowStride = p.k; break; // OHWI weights, [Cout][K]
  case GemmOpKind::Gemm:
    rowStride = isA ? (p.transA ? 1 : p.k) : (p.transB ? p.k : 1);
    break;
  case GemmOpKind::MatMul: rowStride = isA ? p.k : 1; break;
  }
  s.address = add(mul(row, rowStride), isA ? aBatchOffset : bBatchOffset);
  return s;
}

OperandGather::GatherSlot OperandGather::slotSetup(bool isA, int64_t slot) {
  const Staging &s = isA ? plan.a : plan.b;
  const int64_t runs = s.rows * t.blockK / s.vector;
  GatherSlot g;
  Value e = add(block.tid, slot * t.threads());
  if (runs % t.threads() != 0)
    g.active = below(e, runs);
  if (s.kContiguous) {
    // Consecutive threads take consecutive runs of a row's k.
    int64_t runsPerRow = t.blockK / s.vector;
    g.rowLocal = div(e, runsPerRow);
    g.kLocal = mul(rem(e, runsPerRow), s.vector);
  } else {
    // Consecutive threads take consecutive runs of rows at one k.
    int64_t runsPerK = s.rows / s.vector;
    g.kLocal = div(e, runsPerK);
    g.rowLocal = mul(rem(e, runsPerK), s.vector);
  }
  g.row = rowSetup(isA, add(isA ? block.m0 : block.n0, g.rowLocal));
  return g;
}


/// Where the run at (row, k) lies in its operand and whether it is in
/// range: not outside the GEMM, not in the conv's padding, and the slot
/// `active` (null: always active).
OperandGather::RunAddress OperandGather::runAddress(bool isA, const RowState &row, Value active,
                                                    Value k) {
  Value inRange = both(active, both(row.valid, below(k, p.k)));
  Value address;
  if (row.imageBase) {
    // im2col: k = (kh * kW + kw) * groupChannels + c.
    const ConvShape &cv = p.conv;
    int64_t groupChannels = cv.inC / cv.group;
    Value tap = div(k, groupChannels), channel = rem(k, groupChannels);
    Value ih = add(row.ihBase, mul(div(tap, cv.kW), cv.dilH));
    Value iw = add(row.iwBase, mul(rem(tap, cv.kW), cv.dilW));
    using P = arith::CmpIPredicate;
    inRange = both(inRange, both(both(cmp(P::sge, ih, 0), cmp(P::slt, ih, cv.inH)),
                                 both(cmp(P::sge, iw, 0), cmp(P::slt, iw, cv.inW))));
    Value pixel = add(row.imageBase, add(mul(ih, cv.inW), iw));
    address = add(add(mul(pixel, cv.inC), aBatchOffset), channel);
    if (row.scaleBase)
      return {inRange, address, add(row.scaleBase, channel)};
  } else {
    int64_t kStride = 1;
    if (p.op == GemmOpKind::Gemm)
      kStride = isA ? (p.transA ? p.m : 1) : (p.transB ? 1 : p.n);
    else if (p.op == GemmOpKind::MatMul)
      kStride = isA ? 1 : p.n;
    address = add(row.address, mul(k, kStride));
    if (row.scaleBase) // a conv's A without im2col: k is the channel
      return {inRange, address, add(row.scaleBase, k)};
  }
  return {inRange, address, Value()};
}

Value OperandGather::loadScaleRun(Value scaleOffset) {
  return plan.a.vector == 1
             ? b.create<memref::LoadOp>(loc, scaleElems, scaleOffset).getResult()
             : b.create<memref::LoadOp>(loc, scaleRuns, div(scaleOffset, plan.a.vector))
                   .getResult();
}

/// The run of operand elements at (row, k): a vector (or one element), zero
/// where it is out of range (runAddress).
Value OperandGather::loadRun(bool isA, const RowState &row, Value active, Value k) {
  const Staging &s = isA ? plan.a : plan.b;
  auto [inRange, address, scaleOffset] = runAddress(isA, row, active, k);
  Type type = runType(s);
  auto ifOp = b.create<scf::IfOp>(loc, TypeRange{type}, inRange, /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    Value loaded = s.vector == 1
                       ? b.create<memref::LoadOp>(loc, isA ? aElems : bElems, address).getResult()
                       : b.create<memref::LoadOp>(loc, isA ? aRuns : bRuns,
                                                  div(address, s.vector))
                             .getResult();
    if (scaleOffset) // the input scale: rounded to A's type, as the mul step rounded
      loaded = b.create<arith::MulFOp>(loc, loaded, loadScaleRun(scaleOffset));
    b.create<scf::YieldOp>(loc, loaded);
    b.setInsertionPointToStart(&ifOp.getElseRegion().front());
    Attribute zero = b.getZeroAttr(type);
    b.create<scf::YieldOp>(loc, b.create<arith::ConstantOp>(loc, cast<TypedAttr>(zero)).getResult());
  }
  return ifOp.getResult(0);
}

void OperandGather::storeRun(bool isA, const TileViews &tiles, Value rowLocal, Value kLocal,
                             Value run) {
  const Staging &s = isA ? plan.a : plan.b;
  Value tile = isA ? tiles.a : tiles.b, tileRuns = isA ? tiles.aRuns : tiles.bRuns;
  if (s.sharedKContiguous == s.kContiguous) {
    // The run lies along the shared row too.
    Value rowIndex = s.sharedKContiguous ? rowLocal : kLocal;
    Value along = s.sharedKContiguous ? kLocal : rowLocal;
    if (s.vector == 1)
      b.create<memref::StoreOp>(loc, run, tile, ValueRange{rowIndex, along});
    else
      b.create<memref::StoreOp>(loc, run, tileRuns, ValueRange{rowIndex, div(along, s.vector)});
    return;
  }
  // A run of rows into a k-contiguous tile: one element per shared row.
  for (int64_t i = 0; i < s.vector; ++i) {
    Value element = s.vector == 1 ? run : b.create<vector::ExtractOp>(loc, run, i).getResult();
    b.create<memref::StoreOp>(loc, element, tile, ValueRange{add(rowLocal, i), kLocal});
  }
}

/// The thread's runs of the K step at k0, into registers.
SmallVector<Value> OperandGather::loadSlots(bool isA, ArrayRef<GatherSlot> slots, Value k0) {
  SmallVector<Value> runs;
  for (const GatherSlot &slot : slots)
    runs.push_back(loadRun(isA, slot.row, slot.active, add(k0, slot.kLocal)));
  return runs;
}

/// The thread's runs, from registers into a buffer's tile.
void OperandGather::storeSlots(bool isA, ArrayRef<GatherSlot> slots, ValueRange runs,
                               const TileViews &tiles) {
  for (auto [slot, run] : llvm::zip_equal(slots, runs)) {
    OpBuilder::InsertionGuard guard(b);
    if (slot.active) {
      auto ifOp = b.create<scf::IfOp>(loc, slot.active, /*withElseRegion=*/false);
      b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    }
    storeRun(isA, tiles, slot.rowLocal, slot.kLocal, run);
  }
}

void OperandGather::fill(Value k0, const TileViews &tiles) {
  storeSlots(/*isA=*/true, aSlots, loadSlots(/*isA=*/true, aSlots, k0), tiles);
  storeSlots(/*isA=*/false, bSlots, loadSlots(/*isA=*/false, bSlots, k0), tiles);
}

void OperandGather::copyAsync(Value k0, const TileViews &tiles) {
  for (bool isA : {true, false}) {
    const Staging &s = isA ? plan.a : plan.b;
    // A conv whose taps are not whole 32-byte sectors (the im2row'd stem:
    // 24 channels, 48 bytes) reads each sector in pieces, across runs, taps
    // and K steps: its im2col copies go through L1 (cp.async.ca), which
    // keeps the line; the rest bypass it (.cg). On the H200 the stem's conv
    // went from 0.613 to 0.438 ms; 3x3 convs of 64 to 512 channels lost
    // 1-14% through L1 (bench/NOTES.md (27)).
    const bool throughL1 =
        isA && p.im2col() && p.conv.inC / p.conv.group * elemBytes(p.a) % 32 != 0;
    for (const GatherSlot &slot : isA ? aSlots : bSlots) {
      OpBuilder::InsertionGuard guard(b);
      if (slot.active) {
        auto ifOp = b.create<scf::IfOp>(loc, slot.active, /*withElseRegion=*/false);
        b.setInsertionPointToStart(&ifOp.getThenRegion().front());
      }
      auto [inRange, address, scaleOffset] =
          runAddress(isA, slot.row, Value(), add(k0, slot.kLocal));
      // Out of range: nothing read (source size 0), the run zeroed; the
      // address stays inside the operand all the same. Only 16-byte
      // copies may bypass L1.
      Value from = select(inRange, address, c(0));
      Value count = select(inRange, c(s.vector), c(0));
      const bool bypassL1 = !throughL1 && s.vector * elemBytes(s.type) == 16;
      b.create<nvgpu::DeviceAsyncCopyOp>(
          loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()), isA ? tiles.a : tiles.b,
          sharedIndex(s, slot.rowLocal, slot.kLocal), isA ? aElems : bElems, ValueRange{from},
          b.getIndexAttr(s.vector), count, /*bypassL1=*/bypassL1 ? b.getUnitAttr() : UnitAttr());
    }
  }
}

SmallVector<Value> KernelIr::sharedIndex(const Staging &s, Value rowLocal, Value kLocal) {
  SmallVector<Value> at = s.sharedKContiguous ? SmallVector<Value>{rowLocal, kLocal}
                                              : SmallVector<Value>{kLocal, rowLocal};
  // The swizzles move 16-byte chunks; a shorter run keeps its place in
  // its chunk.
  const int64_t chunkElems = 16 / elemBytes(s.type);
  auto placed = [&](Value chunk, Value along) {
    Value start = mul(chunk, chunkElems);
    return s.vector == chunkElems ? start : add(start, rem(along, chunkElems));
  };
  if (s.swizzled && s.sharedKContiguous) {
    // Chunk kLocal / 8 of the row goes to chunk (kLocal / 8) ^ (row % 8).
    Value chunk =
        b.createOrFold<arith::XOrIOp>(loc, div(kLocal, chunkElems), rem(rowLocal, 8));
    at[1] = placed(chunk, kLocal);
  } else if (s.swizzled) {
    // MN-major: the run of 8 rows (m or n) at (k, r) is chunk (r % 64) /
    // 8 of the 128-byte row k % 8 of atom (r / 64, k / 8), stored at
    // chunk ((r % 64) / 8) ^ (k % 8).
    Value atom = add(mul(div(rowLocal, 64), t.blockK / 8), div(kLocal, 8));
    Value chunk =
        b.createOrFold<arith::XOrIOp>(loc, div(rem(rowLocal, 64), chunkElems), rem(kLocal, 8));
    Value element = add(mul(add(mul(atom, 8), rem(kLocal, 8)), 64), placed(chunk, rowLocal));
    at = {div(element, s.ld), rem(element, s.ld)};
  }
  return at;
}

SmallVector<Value> OperandGather::loadScales(Value k0) {
  SmallVector<Value> scales;
  if (!p.aScale)
    return scales;
  Type type = runType(plan.a);
  for (const GatherSlot &slot : aSlots) {
    Value k = add(k0, slot.kLocal);
    auto [inRange, address, scaleOffset] = runAddress(/*isA=*/true, slot.row, slot.active, k);
    (void)address;
    // A shared run is the block's image's: only k can leave the scale.
    auto ifOp = b.create<scf::IfOp>(loc, TypeRange{type}, sharedScale ? below(k, p.k) : inRange,
                                    /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    b.create<scf::YieldOp>(loc, loadScaleRun(scaleOffset));
    b.setInsertionPointToStart(&ifOp.getElseRegion().front());
    b.create<scf::YieldOp>(
        loc, b.create<arith::ConstantOp>(loc, cast<TypedAttr>(b.getZeroAttr(type))).getResult());
    scales.push_back(ifOp.getResult(0));
    if (sharedScale)
      break;
  }
  return scales;
}

void OperandGather::scaleLanded(Value k0, const TileViews &tiles, ValueRange scales) {
  if (!p.aScale)
    return;
  // A conv's A runs lie along k in the operand and in shared memory (the
  // cp.async tiers' precondition), so a run is one vector of the tile.
  const Staging &s = plan.a;
  for (auto [i, slot] : llvm::enumerate(aSlots)) {
    OpBuilder::InsertionGuard guard(b);
    auto [inRange, address, scaleOffset] =
        runAddress(/*isA=*/true, slot.row, slot.active, add(k0, slot.kLocal));
    (void)address;
    (void)scaleOffset;
    // Out of range the run is zeros, and stays so.
    auto ifOp = b.create<scf::IfOp>(loc, inRange, /*withElseRegion=*/false);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    SmallVector<Value> at = sharedIndex(s, slot.rowLocal, slot.kLocal);
    Value tile = s.vector == 1 ? tiles.a : tiles.aRuns;
    if (s.vector > 1)
      at[1] = div(at[1], s.vector);
    Value run = b.create<memref::LoadOp>(loc, tile, at);
    Value scale = scales[sharedScale ? 0 : i];
    b.create<memref::StoreOp>(loc, b.create<arith::MulFOp>(loc, run, scale), tile, at);
  }
}

SmallVector<Type> OperandGather::runTypes() {
  SmallVector<Type> types(aSlots.size(), runType(plan.a));
  types.append(bSlots.size(), runType(plan.b));
  return types;
}

SmallVector<Value> OperandGather::load(Value k0) {
  SmallVector<Value> runs = loadSlots(/*isA=*/true, aSlots, k0);
  runs.append(loadSlots(/*isA=*/false, bSlots, k0));
  return runs;
}

void OperandGather::store(ValueRange runs, const TileViews &tiles) {
  storeSlots(/*isA=*/true, aSlots, runs.take_front(aSlots.size()), tiles);
  storeSlots(/*isA=*/false, bSlots, runs.drop_front(aSlots.size()), tiles);
}

} // namespace tessel::codegen::gemm
