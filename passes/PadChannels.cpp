//===- PadChannels.cpp - --tessel-pad-channels ----------------------------===//
//
// Pads the channel counts of NHWC convs to the Tensor Core multiple (8 f16,
// one 16-byte vector) and carries the padded channels forward as far as they
// stay harmless, slicing them off before any op they would change.
//
// Whether an op may consume a padded tensor depends on how its producers were
// padded, so this is a walk in program order with a map from each real value
// to its padded form rather than a set of local patterns.
//
//===----------------------------------------------------------------------===//
#include "GraphRewrite.h"
#include "Passes.h"

namespace tessel {
#define GEN_PASS_DEF_PADCHANNELS
#include "Passes.h.inc"
} // namespace tessel

using namespace mlir;

namespace tessel {

namespace {

constexpr int64_t kChannelMultiple = 8;
/// The shortest gemm dim padded to the multiple (at most 1.25x its work).
constexpr int64_t kMinPaddedGemmDim = 32;
/// A gemm's flops for each byte its padding copies (paddedDims), where a dim
/// it pads is odd (else WMMA alone runs the gemm) or only even (else its
/// copies take runs of 8 or 4 bytes).
constexpr double kMinPadFlopsPerByte = 128;
constexpr double kMinPadFlopsPerByteOverShortRuns = 512;

int64_t roundUp(int64_t channels) {
  return llvm::divideCeil(channels, kChannelMultiple) * kChannelMultiple;
}

/// `type` with `channels` in its last dim.
RankedTensorType withChannels(Type type, int64_t channels) {
  SmallVector<int64_t> shape(cast<RankedTensorType>(type).getShape());
  shape.back() = channels;
  return withShape(type, shape);
}

/// `v` grown at the end of each dim by `extra`, filled with `value`.
Value padEnd(OpBuilder &builder, Location loc, Value v, ArrayRef<int64_t> extra,
             double value) {
  if (llvm::all_of(extra, [](int64_t e) { return e == 0; }))
    return v;
  SmallVector<int64_t> pads(extra.size(), 0), shape(shapeOf(v));
  llvm::append_range(pads, extra);
  for (auto [dim, e] : llvm::zip(shape, extra))
    dim += e;
  return builder.create<PadOp>(
      loc, withShape(v.getType(), shape), v, builder.getDenseI64ArrayAttr(pads),
      builder.getStringAttr("constant"), builder.getF64FloatAttr(value));
}

Value padChannels(OpBuilder &builder, Location loc, Value v, int64_t channels,
                  double value) {
  SmallVector<int64_t> extra(shapeOf(v).size(), 0);
  extra.back() = channels - shapeOf(v).back();
  return padEnd(builder, loc, v, extra, value);
}

/// Elementwise ops that map finite values to finite values (and so keep the
/// padded channels harmless for a zero weight).
bool keepsFinite(Operation *op) {
  return isa<ReluOp, SigmoidOp, TanhOp, AbsOp, NegOp, FloorOp, CeilOp, RoundOp,
             SignOp, ErfOp, SinOp, CosOp, AtanOp, AsinhOp, SoftplusOp,
             SoftsignOp, HardSwishOp, GeluOp, GeluTanhOp, SiluOp, NotOp, LeakyReluOp, EluOp, CeluOp, SeluOp,
             ThresholdedReluOp, HardSigmoidOp, ShrinkOp, ClipOp, CastOp,
             IdentityOp>(op);
}

/// Reductions whose results stay finite on finite inputs.
bool isFiniteReduction(Operation *op) {
  return isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp, ReduceL1Op,
             ReduceL2Op, ReduceSumSquareOp>(op);
}

struct ChannelPadder {
  OpBuilder builder;
  /// A value with real channels only -> the same value with its channels
  /// padded (its producer, before the slice that restores the real ones).
  DenseMap<Value, Value> padded;
  SmallVector<Operation *> slices;

  explicit ChannelPadder(MLIRContext *context) : builder(context) {}

  /// Replaces `op`'s result by a slice of `wide`, the same result with padded
  /// channels, and remembers the pair.
  void replaceWithPadded(Operation *op, Value wide) {
    Value result = op->getResult(0);
    builder.setInsertionPointAfterValue(wide);
    auto type = cast<RankedTensorType>(result.getType());
    SmallVector<int64_t> starts(type.getRank(), 0), steps(type.getRank(), 1);
    auto slice =
        builder.create<SliceOp>(op->getLoc(), type, wide, starts, steps);
    result.replaceAllUsesWith(slice.getResult());
    op->erase();
    padded[slice] = wide;
    slices.push_back(slice);
  }

  static bool isEligible(ConvOp conv) {
    ArrayRef<int64_t> in = shapeOf(conv.getInput()),
                      w = shapeOf(conv.getWeight());
    if (conv.getLayout() != Layout::NHWC || in.size() != 4 || conv.getGroup() != 1 ||
        conv.getInputScale() || !isConstantLike(conv.getWeight()) ||
        (conv.getBias() && !isConstantLike(conv.getBias())))
      return false;
    return in.back() % kChannelMultiple != 0 || w[0] % kChannelMultiple != 0;
  }

  /// Whether `conv` reads its input better through im2row: each of its few
  /// channels would be padded to 8, and the kernel's width times the
  /// channels pads to fewer (ResNet's 7x7 stem on RGB: K = 7 x 24 = 168
  /// instead of 7 x 7 x 8 = 392, and 16-byte runs of 3 taps).
  static bool unfoldsWidth(ConvOp conv) {
    ArrayRef<int64_t> w = shapeOf(conv.getWeight());
    int64_t c = w[3], s = w[2];
    return c % kChannelMultiple != 0 && s > 1 && roundUp(s * c) < s * roundUp(c);
  }

  /// conv(x, w) as conv(im2row(x), w') with a kernel one column wide: w's
  /// [M, R, S, C] is [M, R, 1, S x C] (NHWC weights, S and C adjacent), the
  /// width's stride, dilation and pads move into the im2row.
  void padConvOverRows(ConvOp conv) {
    Location loc = conv.getLoc();
    ArrayRef<int64_t> x = shapeOf(conv.getInput()), w = shapeOf(conv.getWeight()),
                      y = shapeOf(conv.getOutput());
    int64_t m = w[0], r = w[1], s = w[2], c = w[3];
    int64_t depth = roundUp(s * c), m8 = roundUp(m);
    ArrayRef<int64_t> strides = conv.getStrides(), pads = conv.getPads(),
                      dilations = conv.getDilations();
    builder.setInsertionPoint(conv);
    Value rows = builder.create<Im2RowOp>(
        loc, withShape(conv.getInput().getType(), {x[0], x[1], y[2], depth}),
        conv.getInput(), s, strides[1], dilations[1], pads[1]);
    Value weight = builder.create<ReshapeOp>(
        loc, withShape(conv.getWeight().getType(), {m, r, 1, s * c}), conv.getWeight());
    SmallVector<Value> operands = {
        rows, padEnd(builder, loc, weight, {m8 - m, 0, 0, depth - s * c}, 0.0)};
    NamedAttrList attrs(conv->getAttrDictionary());
    attrs.set("strides", builder.getDenseI64ArrayAttr({strides[0], 1}));
    attrs.set("dilations", builder.getDenseI64ArrayAttr({dilations[0], 1}));
    attrs.set("pads", builder.getDenseI64ArrayAttr({pads[0], 0, pads[2], 0}));
    finishConv(conv, operands, m8, attrs.getDictionary(conv->getContext()));
  }

  void padConv(ConvOp conv) {
    if (!padded.lookup(conv.getInput()) && unfoldsWidth(conv))
      return padConvOverRows(conv);
    Location loc = conv.getLoc();
    int64_t c = shapeOf(conv.getInput()).back(),
            m = shapeOf(conv.getWeight())[0];
    int64_t c8 = roundUp(c), m8 = roundUp(m);
    builder.setInsertionPoint(conv);
    SmallVector<Value> operands = {
        widened(conv.getInput(), c8, loc),
        padEnd(builder, loc, conv.getWeight(), {m8 - m, 0, 0, c8 - c}, 0.0)};
    finishConv(conv, operands, m8, {});
  }

  /// `v` grown at the end of each dim by `extra`, with zeros or, where its
  /// last dim grows to the multiple, from its padded form.
  Value grownBy(Value v, SmallVector<int64_t> extra, Location loc) {
    if (extra.back() != 0)
      if (Value wide = padded.lookup(v)) {
        v = wide;
        extra.back() = 0;
      }
    return padEnd(builder, loc, v, extra, 0.0);
  }

  static SmallVector<int64_t> lastDimExtra(Value v, int64_t extra) {
    SmallVector<int64_t> pads(shapeOf(v).size(), 0);
    pads.back() = extra;
    return pads;
  }

  /// `v` with `channels` channels: its padded form, or padded here.
  Value widened(Value v, int64_t channels, Location loc) {
    if (Value wide = padded.lookup(v))
      return wide;
    return padChannels(builder, loc, v, channels, 0.0);
  }

  /// The conv rebuilt on `operands` (input and weight) plus its bias and
  /// residual padded to `m8` results, with `attrs` (its own if null).
  void finishConv(ConvOp conv, SmallVector<Value> operands, int64_t m8, DictionaryAttr attrs) {
    Location loc = conv.getLoc();
    int64_t m = shapeOf(conv.getWeight())[0];
    if (Value bias = conv.getBias())
      operands.push_back(padEnd(builder, loc, bias, {m8 - m}, 0.0));
    if (Value residual = conv.getResidual())
      operands.push_back(widened(residual, m8, loc));
    Operation *wide =
        rebuild(builder, conv, operands, withChannels(conv.getType(), m8), attrs);
    if (m8 == m) {
      conv.replaceAllUsesWith(wide->getResult(0));
      conv.erase();
      return;
    }
    replaceWithPadded(conv, wide->getResult(0));
  }

  /// A gemm dim that an operand holds contiguously and the Tensor Core
  /// tiers' copies take fastest in 16-byte runs: worth padding when it is
  /// not a multiple of 8 and long enough that the padding costs little (N
  /// = 1, 2 or 4, a matrix-vector product, would do 8x the work).
  static bool padsGemmDim(int64_t extent) {
    return extent % kChannelMultiple != 0 && extent >= kMinPaddedGemmDim;
  }

  struct GemmDims {
    int64_t m, n, k;
  };
  static GemmDims gemmDims(GemmOp gemm) {
    ArrayRef<int64_t> a = shapeOf(gemm.getA()), b = shapeOf(gemm.getB());
    return {gemm.getTransA() ? a[1] : a[a.size() - 2], gemm.getTransB() ? b[0] : b[1],
            gemm.getTransB() ? b[1] : b[0]};
  }

  /// The dims an f16 gemm computes on: the Tensor Core tiers' cp.async
  /// copies take 16-byte runs along each operand's contiguous dim (B's N
  /// without transB, A's M with transA, K of A without transA or of B with
  /// transB), so such a dim that is not a multiple of 8 copies in runs of 8
  /// or 4 bytes (5124 x 1500 x 2048 on tc-sm90 in 0.0718 ms against 0.0496
  /// padded: bench/NOTES.md (36)) or, odd, runs on WMMA alone. Padded to
  /// the multiple (zeros in K, so that the padded products add
  /// nothing), the result sliced back, where the copies the padding adds
  /// cost little beside the gemm: at least kMinPadFlopsPerByte flops for
  /// each byte of a pad of a tensor that is not a constant (a constant's
  /// folds) and of the result's slice, read and written. Against WMMA (a
  /// padded dim odd), DeepBench on the H100 (bench/NOTES.md (20), before
  /// the short runs): 1024 x 1500 x 2048 (350 flops a byte) gained, 4224 x
  /// 1500 x 176 (86) lost; M = 35 by N = 8457 (17): B's copy alone
  /// outlasts the gemm. Against the short runs (every padded dim even),
  /// four times that: they cost a big gemm about a third, the copies stay
  /// (bench/NOTES.md (36)).
  /// The dims are the gemm's own where it is not worth it.
  static GemmDims paddedDims(GemmOp gemm) {
    GemmDims d = gemmDims(gemm);
    if (!cast<RankedTensorType>(gemm.getA().getType()).getElementType().isF16() ||
        !cast<RankedTensorType>(gemm.getB().getType()).getElementType().isF16())
      return d;
    const bool transA = gemm.getTransA(), transB = gemm.getTransB();
    GemmDims p{transA && padsGemmDim(d.m) ? roundUp(d.m) : d.m,
               !transB && padsGemmDim(d.n) ? roundUp(d.n) : d.n,
               (!transA || transB) && padsGemmDim(d.k) ? roundUp(d.k) : d.k};
    const bool rows = p.m != d.m, cols = p.n != d.n, depth = p.k != d.k;
    if (!rows && !cols && !depth)
      return d;
    auto elements = [](Value v) {
      return double(cast<RankedTensorType>(v.getType()).getNumElements());
    };
    double copied = 0; // elements
    auto copies = [&](Value v, bool grows) {
      if (v && grows && !isConstantLike(v))
        copied += elements(v);
    };
    copies(gemm.getA(), rows || depth);
    copies(gemm.getB(), cols || depth);
    copies(gemm.getResidual(), rows || cols);
    if (rows || cols)
      copied += elements(gemm.getOutput());
    const double flops = 2.0 * elements(gemm.getOutput()) * double(d.k);
    const bool odd = (rows && d.m % 2) || (cols && d.n % 2) || (depth && d.k % 2);
    // f16: 2 bytes an element, each read once and written once.
    if (copied > 0 && flops / (copied * 4.0) <
                          (odd ? kMinPadFlopsPerByte : kMinPadFlopsPerByteOverShortRuns))
      return d;
    return p;
  }

  /// `gemm` computed on dims `to` (paddedDims), where they differ from its own.
  void padGemm(GemmOp gemm, GemmDims to) {
    Location loc = gemm.getLoc();
    GemmDims d = gemmDims(gemm);
    if (d.m == to.m && d.n == to.n && d.k == to.k)
      return;
    const bool transA = gemm.getTransA(), transB = gemm.getTransB();
    const int64_t m8 = to.m, n8 = to.n, k8 = to.k;
    builder.setInsertionPoint(gemm);
    // Each operand's last dim may come padded from its producer (arbitrary
    // finite values there): A's along K or M, B's along N; B's K rows are
    // zeros, so that A's padded K columns, whatever they hold, add nothing.
    Value a = gemm.getA(), b = gemm.getB();
    SmallVector<Value> operands = {
        transA ? grownBy(a, {k8 - d.k, m8 - d.m}, loc)
               : grownBy(a, lastDimExtra(a, k8 - d.k), loc),
        transB ? padEnd(builder, loc, b, {n8 - d.n, k8 - d.k}, 0.0)
               : grownBy(b, {k8 - d.k, n8 - d.n}, loc)};
    // C broadcasts to [M, N]: its extents of M and N grow, its ones stay.
    if (Value c = gemm.getC()) {
      ArrayRef<int64_t> cs = shapeOf(c);
      SmallVector<int64_t> extra(cs.size(), 0);
      if (!cs.empty() && cs.back() != 1)
        extra.back() = n8 - d.n;
      if (cs.size() == 2 && cs[0] != 1)
        extra[0] = m8 - d.m;
      operands.push_back(padEnd(builder, loc, c, extra, 0.0));
    }
    SmallVector<int64_t> shape(shapeOf(gemm.getOutput()));
    shape[shape.size() - 2] = m8;
    shape.back() = n8;
    if (Value residual = gemm.getResidual()) {
      SmallVector<int64_t> extra = lastDimExtra(residual, n8 - d.n);
      extra[shape.size() - 2] = m8 - d.m;
      operands.push_back(grownBy(residual, extra, loc));
    }
    Operation *wide = rebuild(builder, gemm, operands, withShape(gemm.getType(), shape), {});
    if (m8 == d.m && n8 == d.n) {
      gemm.replaceAllUsesWith(wide->getResult(0));
      gemm.erase();
      return;
    }
    if (m8 == d.m)
      return replaceWithPadded(gemm, wide->getResult(0));
    // Padded rows: a slice no consumer can take the padded value from.
    builder.setInsertionPointAfter(wide);
    auto type = cast<RankedTensorType>(gemm.getType());
    SmallVector<int64_t> starts(type.getRank(), 0), steps(type.getRank(), 1);
    gemm.replaceAllUsesWith(
        builder.create<SliceOp>(loc, type, wide->getResult(0), starts, steps).getResult());
    gemm.erase();
  }

  /// Whether `op` may take padded operands: it keeps channels independent and
  /// finite values finite, and reads the channel dim as the last one.
  static bool isChannelwise(Operation *op) {
    if (auto pool = dyn_cast<MaxPoolOp>(op))
      return pool.getLayout() == Layout::NHWC;
    if (auto pool = dyn_cast<AvgPoolOp>(op))
      return pool.getLayout() == Layout::NHWC;
    if (isFiniteReduction(op)) {
      int64_t channelAxis = shapeOf(op->getOperand(0)).size() - 1;
      return !llvm::is_contained(
          op->getAttrOfType<DenseI64ArrayAttr>("axes").asArrayRef(),
          channelAxis);
    }
    return keepsFinite(op) ||
           isa<AddOp, SubOp, MulOp, DivOp, MaxOp, MinOp, PReluOp>(op);
  }

  /// Rebuilds `op` on padded operands when one of them is padded and the
  /// padding stays harmless through it.
  void propagate(Operation *op) {
    if (op->getNumResults() != 1 ||
        llvm::none_of(op->getOperands(),
                      [&](Value v) { return padded.count(v); }))
      return;
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    if (type.getRank() == 0 || !isChannelwise(op))
      return;
    // Not through a widening cast (the f16 -> f32 before a graph output):
    // what reads the wider type gains nothing from the multiple, and the
    // slice before the cast moves half the bytes (and meets the boundary's
    // f32 -> f16 cast, --tessel-io-format, where the casts then fold).
    if (auto cast = dyn_cast<CastOp>(op);
        cast && elementOf(cast.getOutput()).getIntOrFloatBitWidth() >
                    elementOf(cast.getInput()).getIntOrFloatBitWidth())
      return;
    int64_t channels = type.getShape().back(), c8 = roundUp(channels);
    // Each operand: padded, broadcast along the channels, or a constant with
    // one value per channel to pad (a divisor with ones: 0/0 would be NaN).
    enum class Kind { Padded, Broadcast, Constant };
    SmallVector<Kind> kinds;
    for (auto [i, v] : llvm::enumerate(op->getOperands())) {
      ArrayRef<int64_t> shape = shapeOf(v);
      bool divisor = isa<DivOp>(op) && i == 1;
      if (padded.count(v) && !divisor && shape.back() == channels)
        kinds.push_back(Kind::Padded);
      else if (!shape.empty() && shape.back() == 1 && op->getNumOperands() > 1)
        kinds.push_back(Kind::Broadcast);
      else if (shape.empty() && op->getNumOperands() > 1)
        kinds.push_back(Kind::Broadcast);
      else if (!shape.empty() && shape.back() == channels && isConstantLike(v))
        kinds.push_back(Kind::Constant);
      else
        return;
    }
    if (!llvm::is_contained(kinds, Kind::Padded))
      return;
    builder.setInsertionPoint(op);
    SmallVector<Value> operands;
    for (auto [i, v] : llvm::enumerate(op->getOperands())) {
      if (kinds[i] == Kind::Padded)
        operands.push_back(padded.lookup(v));
      else if (kinds[i] == Kind::Broadcast)
        operands.push_back(v);
      else
        operands.push_back(padChannels(builder, op->getLoc(), v, c8,
                                       isa<DivOp>(op) && i == 1 ? 1.0 : 0.0));
    }
    Operation *wide = rebuild(builder, op, operands, withChannels(type, c8));
    replaceWithPadded(op, wide->getResult(0));
  }

  void run(func::FuncOp func) {
    for (Block &block : func.getBody())
      for (Operation &op : llvm::make_early_inc_range(block)) {
        if (auto conv = dyn_cast<ConvOp>(op)) {
          if (isEligible(conv))
            padConv(conv);
          continue;
        }
        if (auto gemm = dyn_cast<GemmOp>(op)) {
          padGemm(gemm, paddedDims(gemm));
          continue;
        }
        propagate(&op);
      }
    // Slices whose every consumer took the padded value instead.
    for (Operation *slice : llvm::reverse(slices))
      if (slice->use_empty())
        slice->erase();
  }
};

struct PadChannelsPass : impl::PadChannelsBase<PadChannelsPass> {
  void runOnOperation() override {
    ChannelPadder(&getContext()).run(getOperation());
  }
};

} // namespace
} // namespace tessel
