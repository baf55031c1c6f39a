//===- Sm90MainLoop.cpp - the tc-sm90 main loop: wgmma on swizzled stages -===//
//
// Tier tc-sm90 (sm_90a; CUTLASS's sm90 cp.async GMMA main loop; with TMA
// also its warp-specialized and ping-pong kernels, emitWarpSpecializedTiles):
//   - accumulators: a warpsM x warpsN grid of warpgroups (128 threads),
//     each fragsM wgmma tiles of m64 n(fragN) stacked along M, each an LLVM
//     struct of fragN / 2 f32 a thread: element 4j + 2h + c is row
//     16 (warp % 4) + lane / 4 + 8h, column 8j + 2 (lane % 4) + c of the
//     tile (the m16n8 accumulator layout of mma.sync, repeated);
//   - shared tiles: A and B both K-major, rows of blockK = 64 f16 (128
//     bytes) in the 128-byte swizzle wgmma reads (Staging::swizzled: chunk j
//     of row r at chunk j ^ (r % 8)), every tile 1024-byte aligned; a
//     wgmma's operands are shared-memory descriptors (start address, 1024
//     bytes between groups of 8 rows, the swizzle), the k16 slices of a row
//     32 bytes apart;
//   - the K loop (emitKLoop): `stages` buffers that cp.async fills
//     (zero-filled outside the problem), as tc-sm80's, stages - 2 K steps
//     ahead (all of them in the prologue where K has no more steps than
//     stages), and one step's wgmmas (blockK / 16 k16 slices times fragsM
//     tiles, one group) in flight across the step's barrier; a fence.proxy.
//     async before the barrier, since the copies write through the generic
//     proxy and wgmma reads through the async one; with TMA, tensor copies
//     instead (emitTmaKLoop, tmaCopy: tiled, an MN-major operand a box
//     per 64 rows, or a windowed conv's A by the im2col mode, one tap's
//     channels a step);
//   - the hand-over: each band of wgmma tiles staged as f32, as the other
//     Tensor Core loops do (toEpilogueByBands); with TMA stores, finished
//     in registers and stored from f16 boxes by tensor stores (storeByTma).
// wgmma and its fence, commit and wait are inline PTX with the accumulators
// tied through them, so that nothing reads an accumulator before the wait.
//
//===----------------------------------------------------------------------===//
#include "gemm/Epilogue.h"
#include "gemm/MainLoop.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <string>

using namespace mlir;

namespace tessel::codegen::gemm {

namespace {

class Sm90MainLoop final : public MainLoop {
public:
  using MainLoop::MainLoop;

  void decorate(gpu::GPUFuncOp f) override { func = f; }
  SmallVector<Value> initAccumulators() override;
  SmallVector<Value> emitKLoop(OperandGather &gather, ValueRange init) override;
  SmallVector<Value> computeStep(const TileViews &, ValueRange accs) override {
    // The K loop is the loop's own (emitKLoop); nothing calls this.
    return SmallVector<Value>(accs.begin(), accs.end());
  }
  void toEpilogue(ValueRange accs, Epilogue &epilogue) override;
  void emitTiles(OperandGather &gather, Epilogue &epilogue, Value count,
                 llvm::function_ref<void(Value)> place) override;

private:
  /// emitKLoop with TMA (TileConfig::tma): thread 0 copies each step's A
  /// and B tiles with one tensor copy each, an mbarrier per stage counting
  /// their bytes; every thread waits on the stage's phase.
  SmallVector<Value> emitTmaKLoop(OperandGather &gather, ValueRange init);
  /// emitTiles with a producer warpgroup (TileConfig::warpSpecialized).
  void emitWarpSpecializedTiles(OperandGather &gather, Epilogue &epilogue, Value count,
                                llvm::function_ref<void(Value)> place);
  /// Thread 0 (`leader`) copies K step `step`'s A and B tiles of the block
  /// tile at (block.m0, block.n0) into `tiles` by TMA, their bytes expected
  /// on the mbarrier at `bar`.
  void tmaCopy(Value tiles, Value bar, Value step);
  /// One operand's part of tmaCopy: its tile of `rows` rows from `row0`
  /// at `tile`, by the tensor copy `tensorCopy` from map `map`; K-major one
  /// box, MN-major a box of 64 rows each.
  void copyOperand(const char *tensorCopy, Value tile, llvm::StringRef map, Value row0,
                   bool mnMajor, int64_t rows, Value k0, Value bar);
  /// Spins until the phase of parity `parity` of the mbarrier at `bar` has
  /// completed.
  void waitBarrier(Value bar, Value parity);
  /// Sets the mbarrier at `bar` up for `arrivals` arrivals a phase.
  void initBarrier(Value bar, int64_t arrivals) {
    asmWith("mbarrier.init.shared::cta.b64 [$0], " + std::to_string(arrivals) + ";", "r",
            ValueRange{bar});
  }
  /// `body` built within an scf.if on `cond`.
  void ifThen(Value cond, llvm::function_ref<void()> body) {
    auto ifOp = b.create<scf::IfOp>(loc, cond, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    body();
  }
  /// Inline PTX with side effects on `operands`, no results.
  void asmWith(llvm::StringRef text, llvm::StringRef constraints, ValueRange operands);
  Value i32(Value index) { return b.create<arith::IndexCastOp>(loc, b.getI32Type(), index); }
  /// The kernel's pointer parameter `name` (a tensor map's address).
  Value paramAddress(llvm::StringRef name);

  gpu::GPUFuncOp func;
  /// TileConfig::tmaStore: the math side's boxes (their shared address, and
  /// as pairs of f16), and the epilogue that fills and stores them.
  Value storeBoxes, storePairs;
  void storeByTma(ValueRange accs, Epilogue &epilogue);
  /// The thread's warpgroup's first rows of the A and the B tile.
  std::pair<Value, Value> warpgroupRows();
  /// wgmma.fence, then `accs` plus one K step's product on the shared
  /// buffer at address `tiles` (the warpgroup's rows `rows`), committed as
  /// one group (not waited for).
  SmallVector<Value> stepMath(Value tiles, std::pair<Value, Value> rows, SmallVector<Value> accs);
  /// `accs` once at most `pending` wgmma groups are in flight.
  SmallVector<Value> waitFor(ValueRange accs, int64_t pending);
  /// The shared memory's address and the bytes from it to the first
  /// 1024-byte aligned one, where the buffers start.
  std::pair<Value, Value> buffers(OperandGather &gather);
  /// Where K step `step`'s buffer starts, `pad` bytes into the shared memory.
  Value bufferOffset(Value pad, Value step) {
    return add(pad, mul(rem(step, t.stages), plan.bufferBytes));
  }
  /// wgmma groups left in flight across a step's barrier: one with 3 or
  /// more stages.
  int64_t groupsInFlight() const { return t.stages >= 3 ? 1 : 0; }
  /// f32 accumulators a thread holds per wgmma tile.
  int64_t registers() const { return t.fragN / 2; }
  Type accType() {
    return LLVM::LLVMStructType::getLiteral(b.getContext(),
                                            SmallVector<Type>(registers(), b.getF32Type()));
  }
  Value i64(uint64_t v) {
    return b.create<arith::ConstantOp>(loc, b.getI64IntegerAttr(int64_t(v)));
  }
  /// The wgmma descriptor of a 128-byte swizzled operand at shared address
  /// `address`, its leading and stride byte offsets.
  Value descriptor(Value address, int64_t leading, int64_t stride);
  /// Whether A (B) is staged MN-major (wgmma's transposed operand).
  bool aMnMajor() const { return !plan.a.sharedKContiguous; }
  bool bMnMajor() const { return !plan.b.sharedKContiguous; }
  /// The descriptor of an operand staged K-major or MN-major.
  Value operandDescriptor(Value address, bool mnMajor) {
    return mnMajor ? descriptor(address, t.blockK / 8 * kSwizzleAtomBytes, kSwizzleAtomBytes)
                   : descriptor(address, 16, kSwizzleAtomBytes);
  }
  /// `acc` plus the product of the m64 x k16 A slice and the fragN x k16 B
  /// slice at shared addresses `a` and `b`.
  Value wgmma(Value acc, Value aAddress, Value bAddress);
  /// Inline PTX with side effects whose results are `acc`'s registers tied
  /// through it, plus `extra` operands after them.
  Value tiedAsm(llvm::StringRef text, Value acc, ValueRange extra, llvm::StringRef extraConstraints);
  void asmStatement(llvm::StringRef text);
};

SmallVector<Value> Sm90MainLoop::initAccumulators() {
  Value zero = b.create<LLVM::ZeroOp>(loc, accType());
  return SmallVector<Value>(t.fragsM, zero);
}

void Sm90MainLoop::asmStatement(llvm::StringRef text) {
  b.create<LLVM::InlineAsmOp>(loc, TypeRange{}, ValueRange{}, text, "~{memory}",
                              /*has_side_effects=*/true, /*is_align_stack=*/false,
                              LLVM::AsmDialectAttr(), ArrayAttr());
}

Value Sm90MainLoop::tiedAsm(llvm::StringRef text, Value acc, ValueRange extra,
                            llvm::StringRef extraConstraints) {
  const int64_t n = registers();
  SmallVector<Value> operands;
  for (int64_t r = 0; r < n; ++r)
    operands.push_back(b.create<LLVM::ExtractValueOp>(loc, acc, ArrayRef<int64_t>{r}));
  operands.append(extra.begin(), extra.end());
  std::string constraints;
  for (int64_t r = 0; r < n; ++r)
    constraints += "=f,";
  for (int64_t r = 0; r < n; ++r)
    constraints += std::to_string(r) + ",";
  constraints += extraConstraints.str();
  if (constraints.back() == ',')
    constraints.pop_back();
  return b
      .create<LLVM::InlineAsmOp>(loc, accType(), operands, text, constraints,
                                 /*has_side_effects=*/true, /*is_align_stack=*/false,
                                 LLVM::AsmDialectAttr(), ArrayAttr())
      .getResult(0);
}

Value Sm90MainLoop::descriptor(Value address, int64_t leading, int64_t stride) {
  // Bits 0-13: address >> 4; 16-29: leading byte offset >> 4; 32-45:
  // stride byte offset >> 4; 62-63: the swizzle (1: 128 bytes). K-major:
  // leading unused (1), stride 1024 (between 8-row groups); MN-major
  // (CUTLASS's canonical ((8,n),(8,k)):((1,LBO),(8,SBO)) in 16-byte units):
  // leading between 64-wide MN blocks, stride between 8-deep k groups.
  Value a = b.create<arith::IndexCastUIOp>(loc, b.getI64Type(), address);
  Value start = b.create<arith::ShRUIOp>(loc, b.create<arith::AndIOp>(loc, a, i64(0x3FFFF)),
                                         i64(4));
  const uint64_t fixed = (uint64_t(leading >> 4) << 16) | (uint64_t(stride >> 4) << 32) |
                         (uint64_t(1) << 62);
  return b.create<arith::OrIOp>(loc, start, i64(fixed));
}

Value Sm90MainLoop::wgmma(Value acc, Value aAddress, Value bAddress) {
  // Operands: n results, the n accumulators tied to them, then the extras.
  const int64_t n = registers(), extra = 2 * n;
  std::string text = "{\n.reg .pred p;\nsetp.ne.b32 p, $" + std::to_string(extra + 2) +
                     ", 0;\nwgmma.mma_async.sync.aligned.m64n" + std::to_string(t.fragN) +
                     "k16.f32.f16.f16 {";
  for (int64_t r = 0; r < n; ++r)
    text += (r ? ", $" : "$") + std::to_string(r);
  text += "}, $" + std::to_string(extra) + ", $" + std::to_string(extra + 1) + ", p, 1, 1, " +
          (aMnMajor() ? "1" : "0") + ", " + (bMnMajor() ? "1" : "0") + ";\n}";
  Value one = b.create<arith::ConstantOp>(loc, b.getI32IntegerAttr(1));
  return tiedAsm(text, acc,
                 ValueRange{operandDescriptor(aAddress, aMnMajor()),
                            operandDescriptor(bAddress, bMnMajor()), one},
                 "l,l,r");
}

std::pair<Value, Value> Sm90MainLoop::buffers(OperandGather &gather) {
  Value base = b.create<memref::ExtractAlignedPointerAsIndexOp>(loc, gather.sharedBytes());
  Value pad = rem(b.createOrFold<arith::SubIOp>(loc, c(kSwizzleAtomBytes),
                                                rem(base, kSwizzleAtomBytes)),
                  kSwizzleAtomBytes);
  return {base, pad};
}

SmallVector<Value> Sm90MainLoop::waitFor(ValueRange accs, int64_t pending) {
  SmallVector<Value> done;
  for (int64_t i = 0; i < t.fragsM; ++i)
    done.push_back(tiedAsm(i == 0 ? "wgmma.wait_group.sync.aligned " + std::to_string(pending) + ";"
                                  : std::string(),
                           accs[i], {}, ""));
  return done;
}

std::pair<Value, Value> Sm90MainLoop::warpgroupRows() {
  // Warpgroup (wgM, wgN)'s rows of A and of B within the tiles.
  Value warpgroup = div(block.tid, kWarpgroupSize);
  return {mul(div(warpgroup, t.warpsN), t.fragsM * t.fragM),
          mul(rem(warpgroup, t.warpsN), t.fragN)};
}

SmallVector<Value> Sm90MainLoop::stepMath(Value tiles, std::pair<Value, Value> rows,
                                          SmallVector<Value> accs) {
  auto [aRow0, bRow0] = rows;
  const int64_t rowBytes = t.blockK * 2;
  Value aTile = add(tiles, mul(aRow0, rowBytes));
  Value bTile = add(add(tiles, plan.bOffset), mul(bRow0, rowBytes));
  // MN-major B: the warpgroup's first atom column (bRow0 / 64).
  Value bMnTile = add(add(tiles, plan.bOffset),
                      mul(div(bRow0, 64), t.blockK / 8 * kSwizzleAtomBytes));
  asmStatement("wgmma.fence.sync.aligned;");
  // MN-major A: the warpgroup's first atom column (aRow0 / 64), m64
  // tile i one atom column further each.
  Value aMnTile = add(tiles, mul(div(aRow0, 64), t.blockK / 8 * kSwizzleAtomBytes));
  for (int64_t ks = 0; ks < t.blockK; ks += t.fragK)
    for (int64_t i = 0; i < t.fragsM; ++i)
      accs[i] = wgmma(accs[i],
                      aMnMajor() ? add(aMnTile, (i * t.blockK / 8 + ks / 8) * kSwizzleAtomBytes)
                                 : add(aTile, i * t.fragM * rowBytes + ks * 2),
                      bMnMajor() ? add(bMnTile, ks / 8 * kSwizzleAtomBytes) : add(bTile, ks * 2));
  asmStatement("wgmma.commit_group.sync.aligned;");
  return accs;
}

/// One wgmma group stays in flight across the step boundary (with 3 or
/// more stages), so the Tensor Cores need not drain at each barrier; then
/// the copies run stages - 2 steps ahead (stages - 1 with 2 stages, where
/// each step waits for its wgmmas). With w groups in flight and P = stages
/// - 1 - w steps of copies ahead, the prologue copies steps 0 .. P - 1, a
/// group each; step i:
///   wait until at most P - 1 copy groups are pending (step i's landed),
///   fence.proxy.async, barrier: every thread's copies of step i are in
///   shared memory and visible to wgmma, and every warpgroup has waited for
///   step i - 1 - w's wgmmas (at the end of step i - 1);
///   copies of step i + P into buffer (i + P) % stages, the one step i - 1
///   - w read, committed;
///   wgmma.fence, the step's wgmmas, committed; wait until w are pending;
///   with a conv's input scale, then wait for step i + 1's copies and scale
///   the thread's own runs of them (their scale loaded before the wgmmas),
///   so that the fence and barrier of step i + 1 publish them.
/// After the loop, wait for all. Where every step has a buffer of its own
/// (steps <= stages: a short K), no buffer is refilled and the prologue
/// copies them all (P = steps): the block's loads are in flight together,
/// not one step's behind the last's wgmmas.
SmallVector<Value> Sm90MainLoop::emitKLoop(OperandGather &gather, ValueRange init) {
  if (t.tma)
    return emitTmaKLoop(gather, init);
  const int64_t steps = t.stepsPerSplit(p.k), stages = t.stages;
  const int64_t inFlight = groupsInFlight();
  const int64_t ahead = steps <= stages ? steps : stages - 1 - inFlight;
  Value kBase = mul(block.split, steps * t.blockK);
  auto [base, pad] = buffers(gather);
  Value token;
  for (int64_t s = 0; s < ahead; ++s) {
    if (s < steps)
      gather.copyAsync(add(kBase, s * t.blockK), gather.tileViews(add(pad, s * plan.bufferBytes)));
    token = commitCopies();
  }
  // A conv's input scale on step 0's runs; each later step's is applied at
  // the end of the step before, its scale loaded during that step's wgmmas.
  if (p.aScale) {
    SmallVector<Value> scales = gather.loadScales(kBase);
    waitCopies(token, ahead - 1);
    gather.scaleLanded(kBase, gather.tileViews(pad), scales);
  }

  const std::pair<Value, Value> rows = warpgroupRows();
  auto kLoop = b.create<scf::ForOp>(
      loc, c(0), c(steps), c(1), init,
      [&](OpBuilder &, Location, Value step, ValueRange args) {
        SmallVector<Value> accs(args.begin(), args.end());
        waitCopies(token, ahead - 1);
        asmStatement("fence.proxy.async.shared::cta;");
        b.create<gpu::BarrierOp>(loc);
        Value next = add(step, ahead);
        auto refill = b.create<scf::IfOp>(loc, below(next, steps), /*withElseRegion=*/false);
        {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(&refill.getThenRegion().front());
          gather.copyAsync(add(kBase, mul(next, t.blockK)),
                           gather.tileViews(bufferOffset(pad, next)));
        }
        commitCopies();
        Value following = add(step, 1);
        SmallVector<Value> nextScales = gather.loadScales(add(kBase, mul(following, t.blockK)));
        accs = stepMath(add(base, bufferOffset(pad, step)), rows, accs);
        SmallVector<Value> done = waitFor(accs, inFlight);
        if (p.aScale) {
          // Step i + 1's runs, landed, scaled; no wgmma in flight reads
          // their buffer (only step i's group may be).
          auto scale = b.create<scf::IfOp>(loc, below(following, steps), /*withElseRegion=*/false);
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(&scale.getThenRegion().front());
          waitCopies(token, ahead - 1);
          gather.scaleLanded(add(kBase, mul(following, t.blockK)),
                             gather.tileViews(bufferOffset(pad, following)), nextScales);
        }
        b.create<scf::YieldOp>(loc, done);
      });
  b.setInsertionPointAfter(kLoop);
  SmallVector<Value> accs = waitFor(kLoop.getResults(), 0);
  // Every warpgroup is done with the buffers before the epilogue's staging
  // overwrites them (the copy groups still open are empty).
  b.create<gpu::BarrierOp>(loc);
  return accs;
}

void Sm90MainLoop::asmWith(llvm::StringRef text, llvm::StringRef constraints,
                           ValueRange operands) {
  b.create<LLVM::InlineAsmOp>(loc, TypeRange{}, operands, text, constraints,
                              /*has_side_effects=*/true, /*is_align_stack=*/false,
                              LLVM::AsmDialectAttr(), ArrayAttr());
}

Value Sm90MainLoop::paramAddress(llvm::StringRef name) {
  SmallVector<llvm::StringRef> params = kernel.parameters();
  return func.getArgument(llvm::find(params, name) - params.begin());
}

/// As emitKLoop's schedule (P steps ahead, w wgmma groups in flight across
/// the step's barrier), its copies TMA's: before the loop thread 0 sets up
/// an mbarrier a stage (one arrival: its own, with the bytes to expect);
/// the tensor maps are the host's, copied before the launch (no
/// fence.proxy.tensormap: PTX ISA 8.3, past the modules' 8.0); step i: the
/// barrier (every warpgroup has waited for step i - 1 - w's wgmmas, so
/// buffer (i + P) % stages is free), thread 0
/// copies step i + P (expect A's and B's tile bytes, two tensor copies
/// that complete them), then every thread waits for the stage's phase
/// (i / stages) % 2 and issues the step's wgmmas. The copies write through
/// the async proxy that wgmma reads through: no proxy fence within the
/// loop; one after it, before the epilogue's staging writes the buffers
/// through the generic proxy. TMA zero-fills rows and k past the operand,
/// and counts the whole box's bytes.
SmallVector<Value> Sm90MainLoop::emitTmaKLoop(OperandGather &gather, ValueRange init) {
  const int64_t steps = t.stepsPerSplit(p.k), stages = t.stages;
  const int64_t inFlight = groupsInFlight();
  const int64_t ahead = steps <= stages ? steps : stages - 1 - inFlight;
  auto [base, pad] = buffers(gather);
  Value barriers = add(base, plan.barrierOffset);
  Value leader = cmp(arith::CmpIPredicate::eq, block.tid, 0);
  auto asLeader = [&](llvm::function_ref<void()> body) { ifThen(leader, body); };
  auto barrier = [&](Value step) { return i32(add(barriers, mul(rem(step, stages), 8))); };
  asLeader([&] {
    for (int64_t s = 0; s < stages; ++s)
      initBarrier(barrier(c(s)), 1);
    asmStatement("fence.mbarrier_init.release.cluster;");
  });
  b.create<gpu::BarrierOp>(loc);
  // Step `step`'s tiles into its buffer (thread 0).
  auto copy = [&](Value step) {
    tmaCopy(add(base, bufferOffset(pad, step)), barrier(step), step);
  };
  asLeader([&] {
    for (int64_t s = 0; s < ahead; ++s)
      copy(c(s));
  });

  const std::pair<Value, Value> rows = warpgroupRows();
  auto kLoop = b.create<scf::ForOp>(
      loc, c(0), c(steps), c(1), init,
      [&](OpBuilder &, Location, Value step, ValueRange args) {
        SmallVector<Value> accs(args.begin(), args.end());
        b.create<gpu::BarrierOp>(loc);
        Value next = add(step, ahead);
        auto refill = b.create<scf::IfOp>(loc, both(leader, below(next, steps)),
                                          /*withElseRegion=*/false);
        {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(&refill.getThenRegion().front());
          copy(next);
        }
        waitBarrier(barrier(step), i32(rem(div(step, stages), 2)));
        accs = stepMath(add(base, bufferOffset(pad, step)), rows, accs);
        b.create<scf::YieldOp>(loc, waitFor(accs, inFlight));
      });
  b.setInsertionPointAfter(kLoop);
  SmallVector<Value> accs = waitFor(kLoop.getResults(), 0);
  asmStatement("fence.proxy.async.shared::cta;");
  b.create<gpu::BarrierOp>(loc);
  return accs;
}

void Sm90MainLoop::tmaCopy(Value tiles, Value bar, Value step) {
  const int64_t stepBytes = (t.blockM + t.blockN) * t.blockK * 2;
  Value k0 = i32(mul(step, t.blockK));
  asmWith("{\n.reg .b64 state;\nmbarrier.arrive.expect_tx.shared::cta.b64 state, [$0], $1;\n}",
          "r,r", ValueRange{bar, i32(c(stepBytes))});
  const char *tensorCopy = "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::"
                           "complete_tx::bytes [$0], [$1, {$2, $3}], [$4];";
  if (p.im2col()) {
    // The tile's first output position (n, oh, ow): its window's origin in
    // the input names the box's first position; the step's tap (r, s) and
    // run of channels are the offsets {s, r} (dilated) and the channel.
    const ConvShape &cv = p.conv;
    const int64_t channelSteps = cv.inC / t.blockK;
    Value tap = div(step, channelSteps), pixel = rem(block.m0, cv.outH * cv.outW);
    auto i16 = [&](Value index) -> Value {
      return b.create<arith::IndexCastOp>(loc, b.getI16Type(), index);
    };
    asmWith("cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::"
            "bytes [$0], [$1, {$2, $3, $4, $5}], [$6], {$7, $8};",
            "r,l,r,r,r,r,r,h,h",
            ValueRange{i32(tiles), paramAddress("a_map"),
                       i32(mul(rem(step, channelSteps), t.blockK)),
                       i32(sub(mul(rem(pixel, cv.outW), cv.strideW), cv.padW)),
                       i32(sub(mul(div(pixel, cv.outW), cv.strideH), cv.padH)),
                       i32(div(block.m0, cv.outH * cv.outW)), bar,
                       i16(mul(rem(tap, cv.kW), cv.dilW)), i16(mul(div(tap, cv.kW), cv.dilH))});
  } else {
    copyOperand(tensorCopy, tiles, "a_map", block.m0, aMnMajor(), t.blockM, k0, bar);
  }
  copyOperand(tensorCopy, add(tiles, plan.bOffset), "b_map", block.n0, bMnMajor(), t.blockN, k0,
              bar);
}

void Sm90MainLoop::copyOperand(const char *tensorCopy, Value tile, llvm::StringRef map,
                               Value row0, bool mnMajor, int64_t rows, Value k0, Value bar) {
  if (!mnMajor) {
    asmWith(tensorCopy, "r,l,r,r,r", ValueRange{i32(tile), paramAddress(map), k0, i32(row0), bar});
    return;
  }
  // MN-major: a box of 64 rows (128 bytes) by blockK k a column of atoms,
  // the tile's row blocks blockK / 8 atoms apart (Staging::swizzled).
  for (int64_t r = 0; r < rows; r += 64)
    asmWith(tensorCopy, "r,l,r,r,r",
            ValueRange{i32(add(tile, r / 64 * (t.blockK / 8) * kSwizzleAtomBytes)),
                       paramAddress(map), i32(add(row0, r)), k0, bar});
}

void Sm90MainLoop::waitBarrier(Value bar, Value parity) {
  asmWith("{\n.reg .pred done;\nLAB_WAIT:\n"
          "mbarrier.try_wait.parity.shared::cta.b64 done, [$0], $1;\n"
          "@!done bra LAB_WAIT;\n}",
          "r,r", ValueRange{bar, parity});
}

/// The warp-specialized tiles (CUTLASS's KernelTmaWarpSpecialized, and with
/// a persistent grid its Cooperative kernel): warpgroup 0 is the producer,
/// warpgroups 1 .. warpsM * warpsN the math. The block's K steps of all its
/// tiles run as one sequence, step g in buffer g % stages, with a full and
/// an empty mbarrier each (thread 0 sets them up: one arrival for full, a
/// math warpgroup's each for empty). The producer's thread 0, step g:
/// from g = stages on, waits for phase g / stages - 1 of empty (the math
/// released the buffer's last step), then expects the step's bytes on full
/// and issues its two tensor copies. The math warpgroups, step g: wait for
/// phase g / stages of full, issue the step's wgmmas (one group), wait
/// until w = 1 group is in flight (w = 0 with one step a tile) and release
/// step g - w's buffer (one thread a warpgroup arrives on its empty); after
/// a tile's last step they wait for all, release it, and run the epilogue
/// on their own named barrier (its staging over the buffers where the
/// block has one tile, whose copies have all landed; apart from them in a
/// persistent grid, whose producer copies the next tile meanwhile). With
/// TileConfig::pingpong two math sides take the block's tiles in turn
/// (tiles 0, 2, ... and 1, 3, ...), each with its staging and its named
/// barrier. With more than one math warpgroup the producer gives registers
/// up (setmaxnreg: 40 a thread) to the math's 232, as CUTLASS's.
void Sm90MainLoop::emitWarpSpecializedTiles(OperandGather &gather, Epilogue &epilogue,
                                            Value count, llvm::function_ref<void(Value)> place) {
  const int64_t steps = t.stepsPerSplit(p.k), stages = t.stages;
  const int64_t mathGroups = t.warpsM * t.warpsN, inFlight = steps > 1 ? 1 : 0;
  const int64_t mathSides = t.pingpong ? 2 : 1;
  auto [base, pad] = buffers(gather);
  Value barriers = add(base, plan.barrierOffset);
  auto full = [&](Value g) { return i32(add(barriers, mul(rem(g, stages), 8))); };
  auto empty = [&](Value g) { return i32(add(barriers, add(mul(rem(g, stages), 8), 8 * stages))); };
  // Ping-pong: side w's turn at the math (its arrivals from the other side).
  auto order = [&](int64_t w) { return i32(add(barriers, 16 * stages + 8 * w)); };
  const Value tid = block.tid;
  ifThen(cmp(arith::CmpIPredicate::eq, tid, 0), [&] {
    for (int64_t s = 0; s < stages; ++s) {
      initBarrier(full(c(s)), 1);
      initBarrier(empty(c(s)), mathGroups);
    }
    for (int64_t w = 0; w < (t.pingpong ? 2 : 0); ++w)
      initBarrier(order(w), mathGroups);
    asmStatement("fence.mbarrier_init.release.cluster;");
  });
  b.create<gpu::BarrierOp>(loc);
  // Tiles first, first + every, ... of the block's `count`, `body(i)` with
  // tile i placed.
  auto forTiles = [&](int64_t first, int64_t every, llvm::function_ref<void(Value)> body) {
    auto loop = b.create<scf::ForOp>(loc, c(first), count, c(every), ValueRange{},
                                     [&](OpBuilder &, Location, Value i, ValueRange) {
                                       place(i);
                                       body(i);
                                       b.create<scf::YieldOp>(loc);
                                     });
    b.setInsertionPointAfter(loop);
  };
  // An if whose two sides the GPU IR emulator runs as threads that wait on
  // each other.
  auto roles = [&](Value cond, llvm::function_ref<void()> then, llvm::function_ref<void()> other) {
    auto ifOp = b.create<scf::IfOp>(loc, cond, /*withElseRegion=*/true);
    ifOp->setAttr("tessel.roles", b.getUnitAttr());
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    then();
    b.setInsertionPointToStart(&ifOp.getElseRegion().front());
    other();
  };
  const bool giveRegisters = mathGroups * mathSides > 1;
  auto producer = [&] {
    if (giveRegisters)
      asmStatement("setmaxnreg.dec.sync.aligned.u32 40;");
    ifThen(cmp(arith::CmpIPredicate::eq, tid, 0), [&] {
      forTiles(0, 1, [&](Value i) {
        b.create<scf::ForOp>(loc, c(0), c(steps), c(1), ValueRange{},
                             [&](OpBuilder &, Location, Value k, ValueRange) {
                               Value g = add(mul(i, steps), k);
                               ifThen(cmp(arith::CmpIPredicate::sge, g, stages), [&] {
                                 waitBarrier(empty(g), i32(rem(add(div(g, stages), 1), 2)));
                               });
                               tmaCopy(add(base, bufferOffset(pad, g)), full(g), k);
                               b.create<scf::YieldOp>(loc);
                             });
      });
    });
  };
  // Math side `side`: its warpgroups' threads from 128 (1 + side) on.
  auto math = [&](int64_t side) {
    if (giveRegisters)
      asmStatement("setmaxnreg.inc.sync.aligned.u32 232;");
    block.tid = b.createOrFold<arith::SubIOp>(loc, tid,
                                              c(kWarpgroupSize + side * t.mathThreads()));
    mathBarrier = 1 + side;
    if (t.tmaStore) {
      Value boxes = add(pad, plan.stagingOffset + side * plan.stagingStride);
      storeBoxes = add(base, boxes);
      storePairs = view(gather.sharedBytes(), boxes, {plan.stagingStride / 4},
                        VectorType::get({2}, b.getF16Type()));
    } else {
      epilogue.declareStaging(gather.sharedBytes(),
                              plan.stagingOffset + side * plan.stagingStride);
    }
    Value releaser = cmp(arith::CmpIPredicate::eq, rem(block.tid, kWarpgroupSize), 0);
    auto arrive = [&](Value bar) {
      ifThen(releaser, [&] {
        asmWith("{\n.reg .b64 state;\nmbarrier.arrive.shared::cta.b64 state, [$0];\n}", "r",
                ValueRange{bar});
      });
    };
    auto release = [&](Value g) { arrive(empty(g)); };
    const std::pair<Value, Value> rows = warpgroupRows();
    forTiles(side, mathSides, [&](Value i) {
      // Ping-pong: the sides' K loops take turns (side 0's tile 2j after
      // side 1's 2j - 1, side 1's 2j + 1 after side 0's 2j), so that a side
      // never waits on a stage's full barrier a phase past the other
      // side's (its parity would read as complete).
      if (t.pingpong) {
        Value j = div(i, 2);
        if (side == 0)
          ifThen(cmp(arith::CmpIPredicate::sge, i, 1), [&] {
            waitBarrier(order(0), i32(rem(b.createOrFold<arith::SubIOp>(loc, j, c(1)), 2)));
          });
        else
          waitBarrier(order(1), i32(rem(j, 2)));
      }
      Value first = mul(i, steps);
      auto kLoop = b.create<scf::ForOp>(
          loc, c(0), c(steps), c(1), initAccumulators(),
          [&](OpBuilder &, Location, Value k, ValueRange args) {
            Value g = add(first, k);
            waitBarrier(full(g), i32(rem(div(g, stages), 2)));
            SmallVector<Value> accs = stepMath(add(base, bufferOffset(pad, g)), rows,
                                               SmallVector<Value>(args.begin(), args.end()));
            accs = waitFor(accs, inFlight);
            if (inFlight)
              ifThen(cmp(arith::CmpIPredicate::sge, k, inFlight),
                     [&] { release(b.createOrFold<arith::SubIOp>(loc, g, c(inFlight))); });
            else
              release(g);
            b.create<scf::YieldOp>(loc, accs);
          });
      b.setInsertionPointAfter(kLoop);
      if (t.pingpong)
        arrive(order(1 - side));
      SmallVector<Value> accs = waitFor(kLoop.getResults(), 0);
      if (inFlight)
        release(add(first, steps - 1));
      // Every math warpgroup's wgmmas are done with the buffers, and every
      // thread with the last tile's staging, before the staging is written
      // (through the generic proxy, the buffers' copies through the async).
      asmStatement("fence.proxy.async.shared::cta;");
      syncMath();
      if (t.tmaStore)
        storeByTma(accs, epilogue);
      else
        toEpilogue(accs, epilogue);
    });
    // The side's last tensor stores done before the block ends.
    if (t.tmaStore)
      ifThen(cmp(arith::CmpIPredicate::eq, block.tid, 0),
             [&] { asmStatement("cp.async.bulk.wait_group 0;"); });
  };
  roles(below(tid, kWarpgroupSize), producer, [&] {
    if (!t.pingpong)
      return math(0);
    roles(below(tid, kWarpgroupSize + t.mathThreads()), [&] { math(0); }, [&] { math(1); });
  });
  block.tid = tid;
  mathBarrier = 1;
}

/// The persistent kernel's tiles (TileConfig::persistent): the K steps of
/// the block's tiles in one sequence, step g of it in buffer g % stages,
/// P = min(steps, stages - 1 - w) steps ahead as in emitKLoop; tile i's
/// steps steps - P .. steps - 1 copy tile i + 1's first P steps (its gather
/// set up within the step, then the current tile's again), which land
/// while tile i's epilogue stages its sums past the buffers
/// (SharedPlan::stagingOffset) and stores them. No input scale (the tiler
/// makes such kernels a tile a block).
void Sm90MainLoop::emitTiles(OperandGather &gather, Epilogue &epilogue, Value count,
                             llvm::function_ref<void(Value)> place) {
  if (t.warpSpecialized)
    return emitWarpSpecializedTiles(gather, epilogue, count, place);
  const int64_t steps = t.stepsPerSplit(p.k), inFlight = groupsInFlight();
  const int64_t ahead = std::min(steps, t.stages - 1 - inFlight);
  auto [base, pad] = buffers(gather);
  place(c(0));
  Value token;
  for (int64_t s = 0; s < ahead; ++s) {
    gather.copyAsync(c(s * t.blockK), gather.tileViews(add(pad, s * plan.bufferBytes)));
    token = commitCopies();
  }
  const std::pair<Value, Value> rows = warpgroupRows();
  auto tileLoop = b.create<scf::ForOp>(loc, c(0), count, c(1), ValueRange{},
                                       [&](OpBuilder &, Location, Value tile, ValueRange) {
    place(tile);
    Value first = mul(tile, steps); // the tile's first step in the sequence
    // The tile's steps from .. to - 1, each its copies (copy(step, g): the
    // sequence's step g, P ahead) and its math.
    auto kSteps = [&](int64_t from, int64_t to, ValueRange init,
                      llvm::function_ref<void(Value step, Value g)> copy) {
      auto loop = b.create<scf::ForOp>(
          loc, c(from), c(to), c(1), init, [&](OpBuilder &, Location, Value step, ValueRange args) {
            SmallVector<Value> accs(args.begin(), args.end());
            Value g = add(first, step);
            waitCopies(token, ahead - 1);
            asmStatement("fence.proxy.async.shared::cta;");
            b.create<gpu::BarrierOp>(loc);
            copy(step, add(g, ahead));
            commitCopies();
            accs = stepMath(add(base, bufferOffset(pad, g)), rows, accs);
            b.create<scf::YieldOp>(loc, waitFor(accs, inFlight));
          });
      b.setInsertionPointAfter(loop);
      return SmallVector<Value>(loop.getResults());
    };
    // This tile's steps P .. steps - 1, then the next tile's 0 .. P - 1.
    auto copyThisTile = [&](Value step, Value g) {
      gather.copyAsync(mul(add(step, ahead), t.blockK), gather.tileViews(bufferOffset(pad, g)));
    };
    SmallVector<Value> accs = kSteps(0, steps - ahead, initAccumulators(), copyThisTile);
    accs = kSteps(steps - ahead, steps, accs, [&](Value step, Value g) {
      Value more =
          b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, add(tile, 1), count);
      auto next = b.create<scf::IfOp>(loc, more, /*withElseRegion=*/false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&next.getThenRegion().front());
      const OperandGather::TileState current = gather.tileState();
      const BlockCoords here = block;
      place(add(tile, 1));
      gather.copyAsync(mul(sub(add(step, ahead), steps), t.blockK),
                       gather.tileViews(bufferOffset(pad, g)));
      gather.setTileState(current);
      block = here;
    });
    toEpilogue(waitFor(accs, 0), epilogue);
    b.create<scf::YieldOp>(loc);
  });
  b.setInsertionPointAfter(tileLoop);
}

void Sm90MainLoop::toEpilogue(ValueRange accs, Epilogue &epilogue) {
  Value warpgroup = div(block.tid, kWarpgroupSize);
  Value inGroup = rem(block.tid, kWarpgroupSize);
  Value warp = div(inGroup, kWarpSize), lane = rem(inGroup, kWarpSize);
  Value rowBase = add(mul(div(warpgroup, t.warpsN), t.fragM), add(mul(warp, 16), div(lane, 4)));
  Value colBase = add(mul(rem(warpgroup, t.warpsN), t.fragN), mul(rem(lane, 4), 2));
  toEpilogueByBands(epilogue, [&](int64_t i) {
    for (int64_t j = 0; j < t.fragN / 8; ++j)
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t col = 0; col < 2; ++col) {
          Value v = b.create<LLVM::ExtractValueOp>(loc, accs[i],
                                                   ArrayRef<int64_t>{4 * j + 2 * h + col});
          b.create<memref::StoreOp>(loc, v, epilogue.stagingView(),
                                    ValueRange{add(rowBase, 8 * h), add(colBase, 8 * j + col)});
        }
  });
}

/// TileConfig::tmaStore, band by band (64 rows of the side's one
/// warpgroup): once the side's thread 0 has seen the last band's tensor
/// stores read the boxes (wait_group.read) and the side has synced, each
/// thread finishes its accumulator pairs (Epilogue::finish) and writes
/// them into the boxes of 64 columns, 128-byte swizzled (chunk c of row r
/// at c ^ (r % 8): a warp's pairs in 32 banks); a proxy fence, a sync,
/// and thread 0 issues a tensor store a box (the map clips rows and
/// columns past the output) as one bulk group, not waited for here.
void Sm90MainLoop::storeByTma(ValueRange accs, Epilogue &epilogue) {
  Value warp = div(block.tid, kWarpSize), lane = rem(block.tid, kWarpSize);
  Value rowBase = add(mul(warp, 16), div(lane, 4)), colBase = mul(rem(lane, 4), 2);
  Value leader = cmp(arith::CmpIPredicate::eq, block.tid, 0);
  constexpr int64_t kBoxPairs = 64 * 32; // 64 rows of 32 pairs
  for (int64_t i = 0; i < t.fragsM; ++i) {
    ifThen(leader, [&] { asmStatement("cp.async.bulk.wait_group.read 0;"); });
    syncMath();
    for (int64_t j = 0; j < t.fragN / 8; ++j)
      for (int64_t h = 0; h < 2; ++h) {
        Value col = add(colBase, 8 * j), row = add(rowBase, 8 * h);
        Value pair = b.create<arith::ConstantOp>(
            loc, cast<TypedAttr>(b.getZeroAttr(VectorType::get({2}, b.getF16Type()))));
        for (int64_t l = 0; l < 2; ++l) {
          Value v = b.create<LLVM::ExtractValueOp>(loc, accs[i],
                                                   ArrayRef<int64_t>{4 * j + 2 * h + l});
          pair = b.create<vector::InsertOp>(loc, epilogue.finish(add(block.n0, add(col, l)), v),
                                            pair, l);
        }
        // Box col / 64, row `row`, chunk (col % 64) / 8 swizzled, pair
        // (col % 8) / 2 within it.
        Value inBox = rem(col, 64);
        Value chunk = b.create<arith::XOrIOp>(loc, div(inBox, 8), rem(row, 8));
        Value index = add(add(mul(div(col, 64), kBoxPairs), mul(row, 32)),
                          add(mul(chunk, 4), div(rem(inBox, 8), 2)));
        b.create<memref::StoreOp>(loc, pair, storePairs, index);
      }
    asmStatement("fence.proxy.async.shared::cta;");
    syncMath();
    ifThen(leader, [&] {
      for (int64_t q = 0; q < t.blockN / 64; ++q)
        asmWith("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [$0, {$1, $2}], [$3];",
                "l,r,r,r",
                ValueRange{paramAddress("out_map"), i32(add(block.n0, 64 * q)),
                           i32(add(block.m0, i * t.fragM)), i32(add(storeBoxes, q * kBoxPairs * 4))});
      asmStatement("cp.async.bulk.commit_group;");
    });
  }
}

} // namespace

std::unique_ptr<MainLoop> makeSm90MainLoop(OpBuilder &b, const GemmKernel &kernel,
                                           BlockCoords &block, const SharedPlan &plan) {
  return std::make_unique<Sm90MainLoop>(b, kernel, block, plan);
}

} // namespace tessel::codegen::gemm
