//===- ToNHWC.cpp - --tessel-to-nhwc --------------------------------------===//
//
// Puts 4-D activations in NHWC. A Tensor Core convolution is an implicit GEMM
// whose reduction dimension (window x input channels) must be contiguous in
// memory, which NHWC activations with OHWI weights give and NCHW does not.
//
// Each 4-D NCHW conv and pool becomes its NHWC form between two transposes;
// then the NHWC->NCHW transposes sink towards the graph outputs and the
// NCHW->NHWC ones rise towards the graph inputs through layout-agnostic ops,
// and transposes that meet compose away. Sinking only moves NHWC->NCHW
// transposes and rising only NCHW->NHWC ones, so the two never undo each
// other and the rewrite terminates.
//
//===----------------------------------------------------------------------===//
#include "GraphRewrite.h"
#include "Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace tessel {
#define GEN_PASS_DEF_TONHWC
#include "Passes.h.inc"
} // namespace tessel

using namespace mlir;

namespace tessel {

namespace {

using Perm = ArrayRef<int64_t>;

// transpose(x, perm): result dim i is input dim perm[i].
constexpr int64_t kToNHWC[] = {0, 2, 3, 1};
constexpr int64_t kToNCHW[] = {0, 3, 1, 2};

SmallVector<int64_t> permute(ArrayRef<int64_t> values, Perm perm) {
  SmallVector<int64_t> result;
  for (int64_t p : perm)
    result.push_back(values[p]);
  return result;
}

/// The perm of transpose(transpose(x, first), second) as one transpose.
SmallVector<int64_t> compose(Perm first, Perm second) {
  return permute(first, second);
}

bool isIdentity(Perm perm) {
  for (auto [i, p] : llvm::enumerate(perm))
    if (p != static_cast<int64_t>(i))
      return false;
  return true;
}

/// A transpose that moves only size-1 dims, the other dims keeping their
/// order, leaves the elements in place: it is a reshape.
bool movesOnlyUnitDims(ArrayRef<int64_t> shape, Perm perm) {
  int64_t last = -1;
  for (int64_t p : perm) {
    if (shape[p] == 1)
      continue;
    if (p < last)
      return false;
    last = p;
  }
  return true;
}

Value buildReshape(PatternRewriter &rewriter, Location loc, Value v,
                   ArrayRef<int64_t> shape) {
  if (shapeOf(v) == shape)
    return v;
  if (auto inner = v.getDefiningOp<ReshapeOp>())
    v = inner.getInput();
  if (shapeOf(v) == shape)
    return v;
  return rewriter.create<ReshapeOp>(loc, withShape(v.getType(), shape), v);
}

/// A transpose(v, perm) that already exists before `point`: a graph input
/// that feeds a conv and a residual add is transposed once.
TransposeOp findTranspose(Value v, Perm perm, Block *block,
                          Block::iterator point) {
  for (Operation *user : v.getUsers()) {
    auto transpose = dyn_cast<TransposeOp>(user);
    if (transpose && transpose.getPerm() == perm && user->getBlock() == block &&
        (point == block->end() || user->isBeforeInBlock(&*point)))
      return transpose;
  }
  return {};
}

/// transpose(v, perm) as cheaply as the IR allows: nothing for the identity,
/// one transpose for a transpose of a transpose, a reshape where only unit dims
/// move.
Value buildTranspose(PatternRewriter &rewriter, Location loc, Value v,
                     Perm perm) {
  if (isIdentity(perm))
    return v;
  if (auto inner = v.getDefiningOp<TransposeOp>())
    return buildTranspose(rewriter, loc, inner.getInput(),
                          compose(inner.getPerm(), perm));
  SmallVector<int64_t> shape = permute(shapeOf(v), perm);
  if (movesOnlyUnitDims(shapeOf(v), perm))
    return buildReshape(rewriter, loc, v, shape);
  if (TransposeOp existing = findTranspose(
          v, perm, rewriter.getInsertionBlock(), rewriter.getInsertionPoint()))
    return existing;
  return rewriter.create<TransposeOp>(loc, withShape(v.getType(), shape), v,
                                      perm);
}

/// An activation viewed in NCHW through a transpose of an NHWC one.
bool isNCHWView(Value v) {
  auto transpose = v.getDefiningOp<TransposeOp>();
  return transpose && transpose.getPerm() == ArrayRef<int64_t>(kToNCHW) &&
         !isConstantLike(transpose.getInput());
}

/// An operand (rank <= 4, numpy broadcasting) of an op moved from the NCHW to
/// the NHWC frame: broadcast to rank 4 and transposed, then its broadcast
/// leading 1s dropped again, so that a [C, 1, 1] bias becomes [1, 1, C].
Value operandToNHWC(PatternRewriter &rewriter, Location loc, Value v) {
  int64_t rank = shapeOf(v).size();
  SmallVector<int64_t> full(4 - rank, 1);
  llvm::append_range(full, shapeOf(v));
  Value nhwc = buildTranspose(rewriter, loc,
                              buildReshape(rewriter, loc, v, full), kToNHWC);
  ArrayRef<int64_t> shape = shapeOf(nhwc);
  if (llvm::all_of(shape.take_front(4 - rank),
                   [](int64_t d) { return d == 1; }))
    return buildReshape(rewriter, loc, nhwc, shape.take_back(rank));
  return nhwc;
}

/// Whether operandToNHWC(v) would add a transpose to run at inference time
/// (rather than cancel one, reuse one, fold with the constants or reshape).
bool needsRuntimeTranspose(Value v) {
  if (isConstantLike(v) || isNCHWView(v))
    return false;
  if (llvm::any_of(v.getUsers(), [](Operation *user) {
        auto transpose = dyn_cast<TransposeOp>(user);
        return transpose && transpose.getPerm() == ArrayRef<int64_t>(kToNHWC);
      }))
    return false; // transposed already (CSE merges a second one)
  ArrayRef<int64_t> shape = shapeOf(v);
  SmallVector<int64_t> full(4 - shape.size(), 1);
  llvm::append_range(full, shape);
  return !movesOnlyUnitDims(full, kToNHWC);
}

/// Ops that compute the same thing in any layout once their axis attributes
/// follow the permutation.
bool isLayoutAgnostic(Operation *op) {
  // A custom op of layout "any" computes the same in any layout, by its
  // manifest's word (rules that name dims need NCHW or NHWC).
  if (auto custom = dyn_cast<CustomOp>(op))
    return custom.getLayout() == "any";
  return isElementwiseUnary(op) || isElementwiseBinary(op) ||
         isReduction(op) ||
         isa<WhereOp, ConcatOp, SoftmaxOp, LogSoftmaxOp, SliceOp, PadOp,
             ArgMaxOp, ArgMinOp>(op);
}

/// The reduced axes of a reduction or arg-reduction, with its keepdims.
std::optional<std::pair<SmallVector<int64_t>, bool>>
reducedAxes(Operation *op) {
  if (isa<ArgMaxOp, ArgMinOp>(op))
    return std::make_pair(
        SmallVector<int64_t>{op->getAttrOfType<IntegerAttr>("axis").getInt()},
        op->getAttrOfType<BoolAttr>("keepdims").getValue());
  if (auto axes = op->getAttrOfType<DenseI64ArrayAttr>("axes"))
    return std::make_pair(SmallVector<int64_t>(axes.asArrayRef()),
                          op->getAttrOfType<BoolAttr>("keepdims").getValue());
  return std::nullopt;
}

/// The op's attributes with every axis, per-dim list and pad moved from the
/// NCHW frame to the NHWC one (NCHW dim d is NHWC dim kToNCHW[d]).
DictionaryAttr attrsToNHWC(Operation *op) {
  if (isa<CustomOp>(op)) // the user's attributes mean what the manifest says
    return op->getAttrDictionary();
  Builder b(op->getContext());
  NamedAttrList attrs(op->getAttrDictionary());
  auto axis = [](int64_t d) { return kToNCHW[d]; };
  if (auto a = op->getAttrOfType<IntegerAttr>("axis"))
    attrs.set("axis", b.getI64IntegerAttr(axis(a.getInt())));
  if (auto axes = op->getAttrOfType<DenseI64ArrayAttr>("axes")) {
    SmallVector<int64_t> moved = llvm::map_to_vector(axes.asArrayRef(), axis);
    llvm::sort(moved);
    attrs.set("axes", b.getDenseI64ArrayAttr(moved));
  }
  if (isa<SliceOp>(op))
    for (StringRef name : {"starts", "steps"})
      attrs.set(name,
                b.getDenseI64ArrayAttr(permute(
                    op->getAttrOfType<DenseI64ArrayAttr>(name).asArrayRef(),
                    kToNHWC)));
  if (auto pad = dyn_cast<PadOp>(op)) {
    ArrayRef<int64_t> pads = pad.getPads();
    SmallVector<int64_t> moved = permute(pads.take_front(4), kToNHWC);
    llvm::append_range(moved, permute(pads.take_back(4), kToNHWC));
    attrs.set("pads", b.getDenseI64ArrayAttr(moved));
  }
  return attrs.getDictionary(op->getContext());
}

/// `op` rebuilt in the NHWC frame, on its operands moved there.
Operation *rebuildInNHWC(PatternRewriter &rewriter, Operation *op) {
  SmallVector<Value> operands =
      llvm::map_to_vector(op->getOperands(), [&](Value v) {
        return operandToNHWC(rewriter, op->getLoc(), v);
      });
  Type type = op->getResult(0).getType();
  auto reduced = reducedAxes(op);
  if (!reduced || reduced->second)
    return rebuild(rewriter, op, operands,
                   withShape(type, permute(shapeOf(op->getResult(0)), kToNHWC)),
                   attrsToNHWC(op));
  SmallVector<int64_t> axes =
      llvm::map_to_vector(reduced->first, [](int64_t d) { return kToNCHW[d]; });
  SmallVector<int64_t> shape;
  for (auto [d, extent] : llvm::enumerate(shapeOf(operands[0])))
    if (!llvm::is_contained(axes, static_cast<int64_t>(d)))
      shape.push_back(extent);
  return rebuild(rewriter, op, operands, withShape(type, shape),
                 attrsToNHWC(op));
}

/// The value of `op`'s result computed from its NHWC rebuild: transposed back
/// to NCHW, or for a reduction that drops its axes, the kept dims permuted
/// from NHWC order to the order the NCHW op keeps them in.
Value resultFromNHWC(PatternRewriter &rewriter, Operation *op,
                     Operation *nhwc) {
  Location loc = op->getLoc();
  auto reduced = reducedAxes(op);
  if (!reduced || reduced->second)
    return buildTranspose(rewriter, loc, nhwc->getResult(0), kToNCHW);
  SmallVector<int64_t> nhwcKept;
  for (int64_t d : kToNHWC)
    if (!llvm::is_contained(reduced->first, d))
      nhwcKept.push_back(d); // NCHW dims, in the order NHWC holds them
  SmallVector<int64_t> perm;
  for (int64_t d = 0; d < 4; ++d)
    if (!llvm::is_contained(reduced->first, d))
      perm.push_back(llvm::find(nhwcKept, d) - nhwcKept.begin());
  return buildTranspose(rewriter, loc, nhwc->getResult(0), perm);
}

bool hasRank4Result(Operation *op) {
  return op->getNumResults() == 1 && shapeOf(op->getResult(0)).size() == 4;
}

//===----------------------------------------------------------------------===//
// Convs and pools to NHWC
//===----------------------------------------------------------------------===//

/// conv(x, w, b, r) NCHW -> transpose(conv(x', w', b, r') NHWC): x and r to
/// NHWC, w from OIHW to OHWI (a transpose of the constant weight, which
/// fold-constants evaluates).
struct ConvToNHWC : OpRewritePattern<ConvOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConvOp conv,
                                PatternRewriter &rewriter) const override {
    // (An input scale joins after the layout passes: fuse-channel-scale.)
    if (conv.getLayout() != Layout::NCHW || shapeOf(conv.getInput()).size() != 4 ||
        conv.getInputScale())
      return failure();
    Location loc = conv.getLoc();
    SmallVector<Value> operands = {
        buildTranspose(rewriter, loc, conv.getInput(), kToNHWC),
        buildTranspose(rewriter, loc, conv.getWeight(), kToNHWC)};
    if (Value bias = conv.getBias())
      operands.push_back(bias);
    if (Value residual = conv.getResidual())
      operands.push_back(buildTranspose(rewriter, loc, residual, kToNHWC));
    NamedAttrList attrs(conv->getAttrDictionary());
    attrs.set("layout", LayoutAttr::get(rewriter.getContext(), Layout::NHWC));
    Type type = withShape(conv.getType(), permute(shapeOf(conv), kToNHWC));
    Operation *nhwc = rebuild(rewriter, conv, operands, type,
                              attrs.getDictionary(getContext()));
    rewriter.replaceOp(
        conv, buildTranspose(rewriter, loc, nhwc->getResult(0), kToNCHW));
    return success();
  }
};

template <typename PoolOp> struct PoolToNHWC : OpRewritePattern<PoolOp> {
  using OpRewritePattern<PoolOp>::OpRewritePattern;
  LogicalResult matchAndRewrite(PoolOp pool,
                                PatternRewriter &rewriter) const override {
    if (pool.getLayout() != Layout::NCHW || shapeOf(pool.getInput()).size() != 4)
      return failure();
    Location loc = pool.getLoc();
    NamedAttrList attrs(pool->getAttrDictionary());
    attrs.set("layout", LayoutAttr::get(rewriter.getContext(), Layout::NHWC));
    Type type = withShape(pool.getType(), permute(shapeOf(pool), kToNHWC));
    Operation *nhwc = rebuild(
        rewriter, pool, buildTranspose(rewriter, loc, pool.getInput(), kToNHWC),
        type, attrs.getDictionary(pool.getContext()));
    rewriter.replaceOp(
        pool, buildTranspose(rewriter, loc, nhwc->getResult(0), kToNCHW));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Transpose motion
//===----------------------------------------------------------------------===//

/// op(transpose(x, NHWC->NCHW), ...) -> transpose(op'(x, ...), NHWC->NCHW) for
/// a layout-agnostic op whose other operands move to NHWC for free: transposed
/// alike, constants (transposed at compile time), or broadcasts whose
/// permutation is a reshape ([C, 1, 1] -> [1, 1, C]).
struct SinkNHWCToNCHW : RewritePattern {
  SinkNHWCToNCHW(MLIRContext *context)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, context) {}
  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    if (!isLayoutAgnostic(op) || !llvm::any_of(op->getOperands(), isNCHWView))
      return failure();
    if (!reducedAxes(op) && !hasRank4Result(op))
      return failure();
    if (llvm::any_of(op->getOperands(), needsRuntimeTranspose))
      return failure();
    Operation *nhwc = rebuildInNHWC(rewriter, op);
    rewriter.replaceOp(op, resultFromNHWC(rewriter, op, nhwc));
    return success();
  }
};

/// transpose(op(y, ...), NCHW->NHWC) -> op'(transpose(y, NCHW->NHWC), ...)
/// when the op has no other user and at most one operand needs a transpose at
/// run time: the transpose moves up, towards the graph inputs, without
/// multiplying.
struct RaiseNCHWToNHWC : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp transpose,
                                PatternRewriter &rewriter) const override {
    Operation *op = transpose.getInput().getDefiningOp();
    if (transpose.getPerm() != ArrayRef<int64_t>(kToNHWC) || !op ||
        !isLayoutAgnostic(op) || !op->hasOneUse() || !hasRank4Result(op))
      return failure();
    if (auto reduced = reducedAxes(op); reduced && !reduced->second)
      return failure();
    if (llvm::count_if(op->getOperands(), needsRuntimeTranspose) > 1)
      return failure();
    rewriter.setInsertionPoint(op);
    rewriter.replaceOp(transpose, rebuildInNHWC(rewriter, op)->getResults());
    return success();
  }
};

/// A transpose that moves only unit dims is a reshape: the global pool's
/// [N, 1, 1, C] -> [N, C, 1, 1], which the flatten after it then absorbs.
struct TransposeAsReshape : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp transpose,
                                PatternRewriter &rewriter) const override {
    if (!movesOnlyUnitDims(shapeOf(transpose.getInput()), transpose.getPerm()))
      return failure();
    rewriter.replaceOpWithNewOp<ReshapeOp>(transpose, transpose.getType(),
                                           transpose.getInput());
    return success();
  }
};

/// gemm(a, w) with a constant w [K][N] -> gemm(a, transpose(w), transB):
/// constant weights K-major ([N][K], as conv's OHWI), the layout every
/// Tensor Core tier gathers in 16-byte runs along K and the one tc-sm90's
/// wgmma reads from shared memory; fold-constants evaluates the transpose.
struct GemmWeightToKMajor : OpRewritePattern<GemmOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GemmOp gemm, PatternRewriter &rewriter) const override {
    if (gemm.getTransB() || shapeOf(gemm.getB()).size() != 2 || !isConstantLike(gemm.getB()))
      return failure();
    constexpr int64_t kSwap[] = {1, 0};
    Value w = buildTranspose(rewriter, gemm.getLoc(), gemm.getB(), kSwap);
    rewriter.modifyOpInPlace(gemm, [&] {
      gemm.getBMutable().assign(w);
      gemm.setTransB(true);
    });
    return success();
  }
};

/// matmul(x, w), x of rank >= 2 and w a 2-D constant (a Linear layer
/// without bias: GPT-2's LM head) -> gemm(x, transpose(w), transB) over x's
/// flattened rows, K-major as above.
struct MatMulWeightToKMajor : OpRewritePattern<MatMulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MatMulOp matmul, PatternRewriter &rewriter) const override {
    if (shapeOf(matmul.getLhs()).size() < 2 || shapeOf(matmul.getRhs()).size() != 2 ||
        !isConstantLike(matmul.getRhs()))
      return failure();
    constexpr int64_t kSwap[] = {1, 0};
    Value w = buildTranspose(rewriter, matmul.getLoc(), matmul.getRhs(), kSwap);
    rewriter.replaceOpWithNewOp<GemmOp>(
        matmul, matmul.getType(), matmul.getLhs(), w, /*c=*/Value(), /*residual=*/Value(),
        /*alpha=*/APFloat(1.0f), /*beta=*/APFloat(1.0f), /*transA=*/false, /*transB=*/true,
        Activation::None, APFloat(0.0f), APFloat(0.0f));
    return success();
  }
};

struct ToNHWCPass : impl::ToNHWCBase<ToNHWCPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ConvToNHWC, PoolToNHWC<MaxPoolOp>, PoolToNHWC<AvgPoolOp>,
                 SinkNHWCToNCHW, RaiseNCHWToNHWC, TransposeAsReshape, GemmWeightToKMajor,
                 MatMulWeightToKMajor>(
        &getContext());
    // Transposes that meet compose (and fold away when they cancel); reshape
    // chains fold to one.
    TransposeOp::getCanonicalizationPatterns(patterns, &getContext());
    GreedyRewriteConfig config;
    config.useTopDownTraversal = true;
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns),
                                            config)))
      signalPassFailure();
  }
};

} // namespace
} // namespace tessel
