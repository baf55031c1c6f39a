//===- TesselOps.cpp - verifiers and folders of the tessel ops ------------===//
//
// Verifiers check what a kernel relies on: shapes that agree with the
// attributes, so that a malformed op is rejected here, at its ONNX node's
// location, and never reaches the engine.
//
//===----------------------------------------------------------------------===//
#include "TesselDialect.h"
#include "tessel/attention.h"
#include "tessel/elementwise_program.h"

#include "mlir/Dialect/Traits.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>

using namespace mlir;
using namespace tessel;

namespace {

/// The result shape must be the numpy broadcast of all operand shapes.
LogicalResult verifyBroadcast(Operation *op) {
  SmallVector<int64_t> shape;
  for (Value operand : op->getOperands()) {
    SmallVector<int64_t> next;
    if (!OpTrait::util::getBroadcastedShape(shape, shapeOf(operand), next))
      return op->emitOpError("operand shapes are not broadcast-compatible");
    shape = std::move(next);
  }
  if (ArrayRef<int64_t>(shape) != shapeOf(op->getResult(0)))
    return op->emitOpError("result shape is not the broadcast of the operand shapes");
  return success();
}

LogicalResult verifyBinary(Operation *op) {
  Value lhs = op->getOperand(0), rhs = op->getOperand(1);
  if (elementOf(lhs) != elementOf(rhs))
    return op->emitOpError("operand element types differ: ")
           << elementOf(lhs) << " vs " << elementOf(rhs);
  Type expected = isComparison(op) ? Builder(op->getContext()).getI1Type()
                                   : elementOf(lhs);
  if (elementOf(op->getResult(0)) != expected)
    return op->emitOpError("result element type must be ") << expected;
  return verifyBroadcast(op);
}

/// Spatial output extent of a convolution or pooling window.
int64_t windowOutput(int64_t in, int64_t kernel, int64_t stride,
                     int64_t padBegin, int64_t padEnd, int64_t dilation) {
  int64_t effective = (kernel - 1) * dilation + 1;
  return (in + padBegin + padEnd - effective) / stride + 1;
}

LogicalResult verifyWindowAttrs(Operation *op, int64_t spatial,
                                ArrayRef<int64_t> strides,
                                ArrayRef<int64_t> pads,
                                ArrayRef<int64_t> dilations) {
  if (static_cast<int64_t>(strides.size()) != spatial ||
      static_cast<int64_t>(dilations.size()) != spatial ||
      static_cast<int64_t>(pads.size()) != 2 * spatial)
    return op->emitOpError("expects ")
           << spatial << " strides and dilations and " << 2 * spatial
           << " pads for " << spatial << " spatial dims";
  if (llvm::any_of(strides, [](int64_t s) { return s < 1; }) ||
      llvm::any_of(dilations, [](int64_t d) { return d < 1; }))
    return op->emitOpError("strides and dilations must be positive");
  if (llvm::any_of(pads, [](int64_t p) { return p < 0; }))
    return op->emitOpError("pads must be non-negative");
  return success();
}

/// [N, spatial..., C] -> [N, C, spatial...]: verifiers check NHWC ops through
/// their NCHW view, so each rule is written once.
SmallVector<int64_t> channelsFirst(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> result(shape.begin(), shape.end());
  if (result.size() >= 2) {
    int64_t channels = result.back();
    result.pop_back();
    result.insert(result.begin() + 1, channels);
  }
  return result;
}

template <typename ConvLike>
LogicalResult verifyConvCommon(ConvLike op, bool transposed) {
  SmallVector<int64_t> in(shapeOf(op.getInput())), w(shapeOf(op.getWeight())),
      out(shapeOf(op.getOutput()));
  if constexpr (std::is_same_v<ConvLike, ConvOp>) {
    if (op.getResidual() && op.getResidual().getType() != op.getOutput().getType())
      return op.emitOpError("residual must have the result's type");
    if (op.getLayout() == Layout::NHWC) {
      in = channelsFirst(in);
      w = channelsFirst(w);
      out = channelsFirst(out);
    }
  }
  if (in.size() < 3 || w.size() != in.size() || out.size() != in.size())
    return op.emitOpError("input, weight and result must have the same rank >= 3");
  int64_t spatial = in.size() - 2;
  if (failed(verifyWindowAttrs(op, spatial, op.getStrides(), op.getPads(),
                               op.getDilations())))
    return failure();
  int64_t group = op.getGroup();
  if (group < 1 || in[1] % group != 0)
    return op.emitOpError("group ") << group << " does not divide the "
                                    << in[1] << " input channels";
  int64_t outChannels = transposed ? w[1] * group : w[0];
  if (!transposed && (w[1] * group != in[1] || w[0] % group != 0))
    return op.emitOpError("weight shape does not match input channels and group");
  if (transposed && w[0] != in[1])
    return op.emitOpError("weight dim 0 must equal the input channels");
  if (out[0] != in[0] || out[1] != outChannels)
    return op.emitOpError("result batch or channels do not match");
  if (op.getBias() && shapeOf(op.getBias()) != ArrayRef<int64_t>{outChannels})
    return op.emitOpError("bias must have shape [") << outChannels << "]";
  if constexpr (std::is_same_v<ConvLike, ConvOp>) {
    if (Value scale = op.getInputScale()) {
      SmallVector<int64_t> expected(in.size(), 1);
      expected[0] = in[0];
      expected[1] = in[1];
      SmallVector<int64_t> shape(shapeOf(scale));
      if (op.getLayout() == Layout::NHWC && shape.size() == in.size())
        shape = channelsFirst(shape);
      if (shape != expected || elementOf(scale) != elementOf(op.getInput()))
        return op.emitOpError("input_scale must have the input's element type and one value "
                              "per image and input channel");
      if (op.getGroup() != 1) // the kernels of grouped convs have no prologue
        return op.emitOpError("input_scale needs group 1");
    }
  }
  if (!transposed) {
    for (int64_t i = 0; i < spatial; ++i) {
      int64_t expected =
          windowOutput(in[i + 2], w[i + 2], op.getStrides()[i], op.getPads()[i],
                       op.getPads()[i + spatial], op.getDilations()[i]);
      if (out[i + 2] != expected)
        return op.emitOpError("spatial dim ") << i << " of the result is "
                                              << out[i + 2] << ", expected "
                                              << expected;
    }
  }
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

OpFoldResult IdentityOp::fold(FoldAdaptor) { return getInput(); }

/// Whether every element of float `v` is an integer (or NaN): a round, a
/// constant of integers, a cast from an integer type, a clip with integer
/// bounds of such values, or
/// a sum, difference or product of two (rounding an integer result keeps
/// it an integer: near it, every float of the type is one).
static bool isIntegral(Value v, int depth = 0) {
  Operation *op = v.getDefiningOp();
  if (!op || depth > 8)
    return false;
  if (isa<RoundOp>(op))
    return true;
  if (auto constant = dyn_cast<ConstantOp>(op)) {
    auto dense = dyn_cast<DenseFPElementsAttr>(constant.getValue());
    return dense && llvm::all_of(dense.getValues<APFloat>(),
                                 [](const APFloat &f) { return f.isInteger(); });
  }
  if (auto cast = dyn_cast<CastOp>(op))
    return isa<IntegerType>(elementOf(cast.getInput()));
  if (auto clip = dyn_cast<ClipOp>(op))
    return std::trunc(clip.getMin().convertToDouble()) == clip.getMin().convertToDouble() &&
           std::trunc(clip.getMax().convertToDouble()) == clip.getMax().convertToDouble() &&
           isIntegral(clip.getInput(), depth + 1);
  if (isa<AddOp, SubOp, MulOp>(op))
    return isIntegral(op->getOperand(0), depth + 1) && isIntegral(op->getOperand(1), depth + 1);
  return false;
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  auto inner = getInput().getDefiningOp<CastOp>();
  if (!inner || inner.getInput().getType() != getType())
    return {};
  // x -> wider -> back is x when the widening represents every x exactly
  // (f16 -> f32, bf16 -> f32, f32 -> f64); a narrowing in between is not.
  auto from = dyn_cast<FloatType>(elementOf(inner.getInput()));
  auto through = dyn_cast<FloatType>(elementOf(inner.getOutput()));
  if (from && through &&
      llvm::APFloat::isRepresentableAsNormalIn(from.getFloatSemantics(),
                                               through.getFloatSemantics()))
    return inner.getInput();
  // float -> integer -> back is x when x is integral and clipped into the
  // integer's range (a QuantizeLinear's result, then a DequantizeLinear's
  // cast: the pair is a fake quantization in float).
  auto integer = dyn_cast<IntegerType>(elementOf(inner.getOutput()));
  auto clip = inner.getInput().getDefiningOp<ClipOp>();
  if (from && integer && clip && isIntegral(clip.getResult())) {
    auto [lo, hi] = integerRange(integer);
    if (clip.getMin().convertToDouble() >= lo && clip.getMax().convertToDouble() <= hi)
      return inner.getInput();
  }
  return {};
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  if (auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getInput()))
    return dense.reshape(getType());
  // Only the final shape of a reshape chain matters: read the chain's source.
  if (auto inner = getInput().getDefiningOp<ReshapeOp>()) {
    if (inner.getInput().getType() == getType())
      return inner.getInput();
    getInputMutable().assign(inner.getInput());
    return getResult();
  }
  return {};
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  ArrayRef<int64_t> perm = getPerm();
  for (auto [i, p] : llvm::enumerate(perm))
    if (p != static_cast<int64_t>(i))
      return {};
  return getInput();
}

/// transpose(transpose(x, inner), outer) is transpose(x, inner[outer[i]]):
/// result dim i is the inner result's dim outer[i], which is x's dim
/// inner[outer[i]]. The fold above removes the result if that is identity.
LogicalResult TransposeOp::canonicalize(TransposeOp op, PatternRewriter &rewriter) {
  auto inner = op.getInput().getDefiningOp<TransposeOp>();
  if (!inner)
    return failure();
  SmallVector<int64_t> perm;
  for (int64_t p : op.getPerm())
    perm.push_back(inner.getPerm()[p]);
  // Both ONNX nodes live on in the one transpose: diagnostics name them.
  Location loc = rewriter.getFusedLoc({inner.getLoc(), op.getLoc()});
  rewriter.replaceOp(op, rewriter.create<TransposeOp>(
                             loc, op.getType(), inner.getInput(),
                             rewriter.getDenseI64ArrayAttr(perm)));
  return success();
}

#define TESSEL_BINARY_VERIFIER(Op)                                             \
  LogicalResult Op::verify() { return verifyBinary(getOperation()); }
TESSEL_BINARY_VERIFIER(AddOp)
TESSEL_BINARY_VERIFIER(SubOp)
TESSEL_BINARY_VERIFIER(MulOp)
TESSEL_BINARY_VERIFIER(DivOp)
TESSEL_BINARY_VERIFIER(MaxOp)
TESSEL_BINARY_VERIFIER(MinOp)
TESSEL_BINARY_VERIFIER(PReluOp)
TESSEL_BINARY_VERIFIER(EqualOp)
TESSEL_BINARY_VERIFIER(LessOp)
TESSEL_BINARY_VERIFIER(LessEqualOp)
TESSEL_BINARY_VERIFIER(GreaterOp)
TESSEL_BINARY_VERIFIER(GreaterEqualOp)
TESSEL_BINARY_VERIFIER(AndOp)
TESSEL_BINARY_VERIFIER(OrOp)
TESSEL_BINARY_VERIFIER(XorOp)
#undef TESSEL_BINARY_VERIFIER

// Pow's exponent may have its own element type (ONNX allows float ** int).
LogicalResult PowOp::verify() {
  if (elementOf(getOutput()) != elementOf(getLhs()))
    return emitOpError("result element type must be the base's");
  return verifyBroadcast(getOperation());
}

// ONNX defines the sign-of-the-divisor modulus for integers only.
LogicalResult ModOp::verify() {
  if (!getFmod() && isa<FloatType>(elementOf(getLhs())))
    return emitOpError("fmod = false (the sign of the divisor) is defined for "
                       "integers only; floating-point operands need fmod = true");
  return verifyBinary(getOperation());
}

LogicalResult WhereOp::verify() {
  if (!elementOf(getCondition()).isInteger(1))
    return emitOpError("condition must be a tensor of i1");
  if (elementOf(getLhs()) != elementOf(getRhs()) ||
      elementOf(getLhs()) != elementOf(getOutput()))
    return emitOpError("value operands and result must share an element type");
  return verifyBroadcast(getOperation());
}

LogicalResult ElementwiseGroupOp::verify() {
  elementwise::Program program;
  if (std::string error = elementwise::parseProgram(getProgram().str(), program); !error.empty())
    return emitOpError("program: ") << error;
  if (program.numInputs != static_cast<int>(getInputs().size()))
    return emitOpError("program reads ")
           << program.numInputs << " inputs, the op has " << getInputs().size();
  Type result = elementOf(getOutput());
  if (!result.isF16() && !result.isF32() && !result.isF64())
    return emitOpError("result must be f16, f32 or f64, not ") << result;
  ArrayRef<int64_t> shape = shapeOf(getOutput());
  for (auto [k, input] : llvm::enumerate(getInputs())) {
    Type element = elementOf(input);
    if (program.conditions[k] ? !element.isInteger(1)
                              : !element.isF16() && !element.isF32() && !element.isF64())
      return emitOpError("input ") << k << " must be "
                                   << (program.conditions[k] ? "i1 (a where's condition)"
                                                             : "f16, f32 or f64")
                                   << ", not " << element;
    SmallVector<int64_t> joined;
    if (!OpTrait::util::getBroadcastedShape(shape, shapeOf(input), joined) ||
        ArrayRef<int64_t>(joined) != shape)
      return emitOpError("input ") << k << " does not broadcast to the result's shape";
  }
  return success();
}

LogicalResult ConvOp::verify() { return verifyConvCommon(*this, false); }
LogicalResult PoolFcOp::verify() {
  ArrayRef<int64_t> x = shapeOf(getInput()), w = shapeOf(getWeight()),
                    out = shapeOf(getOutput());
  Type element = elementOf(getInput());
  if (!isa<FloatType>(element) || elementOf(getWeight()) != element ||
      elementOf(getOutput()) != element)
    return emitOpError("input, weight and result must share a float element type");
  if (x.size() < 3 || w.size() != x.size() || out.size() != x.size())
    return emitOpError("input, weight and result must have one rank of at least 3");
  const int64_t channels = x.back(), outChannels = w.front();
  if (w.back() != channels)
    return emitOpError("the weight must read the input's ") << channels << " channels";
  for (size_t d = 1; d + 1 < x.size(); ++d)
    if (w[d] != 1 || out[d] != 1)
      return emitOpError("the weight and the result must have spatial extents of 1");
  if (out.front() != x.front() || out.back() != outChannels)
    return emitOpError("the result must be ") << x.front() << " images x " << outChannels
                                              << " channels";
  if (getBias() && (!isa<FloatType>(elementOf(getBias())) ||
                    shapeOf(getBias()) != ArrayRef<int64_t>{outChannels}))
    return emitOpError("the bias must be ") << outChannels << " floats";
  return success();
}

LogicalResult ConvTransposeOp::verify() { return verifyConvCommon(*this, true); }

LogicalResult GemmOp::verify() {
  ArrayRef<int64_t> a = shapeOf(getA()), b = shapeOf(getB()),
                    out = shapeOf(getOutput());
  if (a.size() < 2 || b.size() != 2 || out.size() != a.size())
    return emitOpError("A must have rank >= 2, B be 2-D and the result of A's rank");
  if (a.size() > 2 && getTransA())
    return emitOpError("transA needs a 2-D A");
  // Rank > 2: the leading dims are rows of M, kept in the result's shape.
  int64_t m = getTransA() ? a[1] : a[a.size() - 2], ka = getTransA() ? a[0] : a.back();
  int64_t kb = getTransB() ? b[1] : b[0], n = getTransB() ? b[0] : b[1];
  if (ka != kb)
    return emitOpError("inner dimensions differ: ") << ka << " vs " << kb;
  if (out.drop_back(2) != a.drop_back(2) || out[out.size() - 2] != m || out.back() != n)
    return emitOpError("result must be A's leading dims x ") << m << "x" << n;
  if (getC()) {
    ArrayRef<int64_t> c = shapeOf(getC());
    int64_t rows = 1;
    for (int64_t extent : out.drop_back())
      rows *= extent;
    const bool fits = c.size() <= 2 && (c.empty() || c.back() == 1 || c.back() == n) &&
                      (c.size() < 2 || c[0] == 1 || c[0] == rows);
    if (!fits)
      return emitOpError("C must broadcast to ") << rows << "x" << n;
  }
  if (getResidual() && shapeOf(getResidual()) != out)
    return emitOpError("the residual must have the result's shape");
  return success();
}

LogicalResult MatMulOp::verify() {
  ArrayRef<int64_t> a = shapeOf(getLhs()), b = shapeOf(getRhs());
  if (a.empty() || b.empty())
    return emitOpError("operands must have rank >= 1");
  int64_t ka = a.back(), kb = b.size() == 1 ? b[0] : b[b.size() - 2];
  if (ka != kb)
    return emitOpError("inner dimensions differ: ") << ka << " vs " << kb;
  SmallVector<int64_t> batch;
  ArrayRef<int64_t> batchA = a.size() > 2 ? a.drop_back(2) : ArrayRef<int64_t>{};
  ArrayRef<int64_t> batchB = b.size() > 2 ? b.drop_back(2) : ArrayRef<int64_t>{};
  if (!OpTrait::util::getBroadcastedShape(batchA, batchB, batch))
    return emitOpError("batch dimensions are not broadcast-compatible");
  if (a.size() > 1)
    batch.push_back(a[a.size() - 2]);
  if (b.size() > 1)
    batch.push_back(b.back());
  if (ArrayRef<int64_t>(batch) != shapeOf(getOutput()))
    return emitOpError("result shape does not follow numpy matmul");
  return success();
}

LogicalResult AttentionOp::verify() {
  Type element = elementOf(getQuery());
  if (!isa<FloatType>(element) || elementOf(getKey()) != element ||
      elementOf(getValue()) != element || elementOf(getOutput()) != element)
    return emitOpError("query, key, value and result must share a float element type");
  if (getDims().has_value() != getViews().has_value())
    return emitOpError("dims and views come together");
  std::vector<int64_t> mask;
  if (Value m = getMask()) {
    if (!isa<FloatType>(elementOf(m)) && !elementOf(m).isInteger(1))
      return emitOpError("mask must be a float (additive) or i1 (keep) tensor");
    mask.assign(shapeOf(m).begin(), shapeOf(m).end());
  }
  auto vec = [](ArrayRef<int64_t> a) { return std::vector<int64_t>(a.begin(), a.end()); };
  cpu::AttentionGeometry geometry;
  std::string error = cpu::readAttention(
      vec(getDims().value_or(ArrayRef<int64_t>())), vec(getViews().value_or(ArrayRef<int64_t>())),
      vec(shapeOf(getQuery())), vec(shapeOf(getKey())), vec(shapeOf(getValue())),
      vec(shapeOf(getOutput())), getMask() ? &mask : nullptr, geometry);
  if (!error.empty())
    return emitOpError(error);
  return success();
}

LogicalResult BatchNormOp::verify() {
  ArrayRef<int64_t> in = shapeOf(getInput());
  if (in.size() < 2)
    return emitOpError("input must have rank >= 2");
  for (Value v : {getScale(), getBias(), getMean(), getVariance()})
    if (shapeOf(v) != ArrayRef<int64_t>{in[1]})
      return emitOpError("scale, bias, mean and variance must have shape [")
             << in[1] << "]";
  if (getInput().getType() != getOutput().getType())
    return emitOpError("result type must equal the input type");
  return success();
}

template <typename PoolOp> static LogicalResult verifyPool(PoolOp op) {
  SmallVector<int64_t> in(shapeOf(op.getInput())), out(shapeOf(op.getOutput()));
  if (op.getLayout() == Layout::NHWC) {
    in = channelsFirst(in);
    out = channelsFirst(out);
  }
  if (in.size() < 3 || out.size() != in.size() || out[0] != in[0] ||
      out[1] != in[1])
    return op.emitOpError("input and result must be N x C x spatial...");
  int64_t spatial = in.size() - 2;
  if (static_cast<int64_t>(op.getKernelShape().size()) != spatial)
    return op.emitOpError("kernel_shape needs ") << spatial << " entries";
  return verifyWindowAttrs(op, spatial, op.getStrides(), op.getPads(),
                           op.getDilations());
}
LogicalResult MaxPoolOp::verify() { return verifyPool(*this); }
LogicalResult AvgPoolOp::verify() { return verifyPool(*this); }
LogicalResult MaxPoolIndicesOp::verify() {
  if (!elementOf(getOutput()).isInteger(64))
    return emitOpError("result must be i64 indices");
  if (getStorageOrder() != 0 && getStorageOrder() != 1)
    return emitOpError("storage_order must be 0 or 1");
  return verifyPool(*this);
}

static LogicalResult verifyAxis(Operation *op, int64_t axis, int64_t rank) {
  if (axis < 0 || axis >= std::max<int64_t>(rank, 1))
    return op->emitOpError("axis ") << axis << " is out of range for rank " << rank;
  return success();
}

LogicalResult SoftmaxOp::verify() {
  return verifyAxis(*this, getAxis(), shapeOf(getInput()).size());
}
LogicalResult LogSoftmaxOp::verify() {
  return verifyAxis(*this, getAxis(), shapeOf(getInput()).size());
}

static LogicalResult verifyReduce(Operation *op, Value input, Value output,
                                  ArrayRef<int64_t> axes, bool keepdims) {
  ArrayRef<int64_t> in = shapeOf(input);
  SmallVector<int64_t> expected;
  for (int64_t i = 0, e = in.size(); i < e; ++i) {
    if (!llvm::is_contained(axes, i))
      expected.push_back(in[i]);
    else if (keepdims)
      expected.push_back(1);
  }
  if (!llvm::is_sorted(axes) || llvm::any_of(axes, [&](int64_t a) {
        return a < 0 || a >= static_cast<int64_t>(in.size());
      }))
    return op->emitOpError("axes must be sorted and within the input rank");
  if (ArrayRef<int64_t>(expected) != shapeOf(output))
    return op->emitOpError("result shape does not match axes and keepdims");
  return success();
}

#define TESSEL_REDUCE_VERIFIER(Op)                                             \
  LogicalResult Op::verify() {                                                 \
    return verifyReduce(*this, getInput(), getOutput(), getAxes(),             \
                        getKeepdims());                                        \
  }
TESSEL_REDUCE_VERIFIER(ReduceSumOp)
TESSEL_REDUCE_VERIFIER(ReduceMeanOp)
TESSEL_REDUCE_VERIFIER(ReduceMaxOp)
TESSEL_REDUCE_VERIFIER(ReduceMinOp)
TESSEL_REDUCE_VERIFIER(ReduceProdOp)
TESSEL_REDUCE_VERIFIER(ReduceL1Op)
TESSEL_REDUCE_VERIFIER(ReduceL2Op)
TESSEL_REDUCE_VERIFIER(ReduceLogSumOp)
TESSEL_REDUCE_VERIFIER(ReduceLogSumExpOp)
TESSEL_REDUCE_VERIFIER(ReduceSumSquareOp)
#undef TESSEL_REDUCE_VERIFIER

LogicalResult ReshapeOp::verify() {
  auto in = cast<RankedTensorType>(getInput().getType());
  auto out = cast<RankedTensorType>(getType());
  if (in.getNumElements() != out.getNumElements() ||
      in.getElementType() != out.getElementType())
    return emitOpError("must keep the element count and type");
  return success();
}

LogicalResult TransposeOp::verify() {
  ArrayRef<int64_t> in = shapeOf(getInput()), out = shapeOf(getOutput());
  ArrayRef<int64_t> perm = getPerm();
  if (perm.size() != in.size() || out.size() != in.size())
    return emitOpError("perm must have one entry per dim");
  SmallVector<bool> seen(in.size(), false);
  for (auto [i, p] : llvm::enumerate(perm)) {
    if (p < 0 || p >= static_cast<int64_t>(in.size()) || seen[p])
      return emitOpError("perm is not a permutation");
    seen[p] = true;
    if (out[i] != in[p])
      return emitOpError("result dim ") << i << " must be input dim " << p;
  }
  return success();
}

LogicalResult ConcatOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one input");
  ArrayRef<int64_t> out = shapeOf(getOutput());
  int64_t axis = getAxis();
  if (failed(verifyAxis(*this, axis, out.size())))
    return failure();
  int64_t total = 0;
  for (Value input : getInputs()) {
    ArrayRef<int64_t> in = shapeOf(input);
    if (in.size() != out.size() || elementOf(input) != elementOf(getOutput()))
      return emitOpError("inputs must match the result's rank and element type");
    for (int64_t d = 0, e = in.size(); d < e; ++d)
      if (d != axis && in[d] != out[d])
        return emitOpError("inputs differ from the result off the axis");
    total += in[axis];
  }
  if (total != out[axis])
    return emitOpError("result extent along the axis must be the sum of the inputs'");
  return success();
}

LogicalResult SliceOp::verify() {
  ArrayRef<int64_t> in = shapeOf(getInput()), out = shapeOf(getOutput());
  if (getStarts().size() != in.size() || getSteps().size() != in.size() ||
      out.size() != in.size())
    return emitOpError("starts and steps need one entry per dim");
  for (size_t d = 0; d < in.size(); ++d) {
    int64_t start = getStarts()[d], step = getSteps()[d];
    if (step == 0)
      return emitOpError("steps must be non-zero");
    if (out[d] == 0)
      continue;
    int64_t last = start + (out[d] - 1) * step;
    if (start < 0 || start >= in[d] || last < 0 || last >= in[d])
      return emitOpError("dim ") << d << " reads outside the input";
  }
  return success();
}

LogicalResult PadOp::verify() {
  ArrayRef<int64_t> in = shapeOf(getInput()), out = shapeOf(getOutput());
  ArrayRef<int64_t> pads = getPads();
  if (pads.size() != 2 * in.size() || out.size() != in.size())
    return emitOpError("pads need a begin and an end per dim");
  for (size_t d = 0; d < in.size(); ++d)
    if (out[d] != in[d] + pads[d] + pads[d + in.size()])
      return emitOpError("result dim ") << d << " does not match the pads";
  StringRef mode = getMode();
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    return emitOpError("mode must be constant, reflect or edge");
  return success();
}

LogicalResult Im2RowOp::verify() {
  ArrayRef<int64_t> in = shapeOf(getInput()), out = shapeOf(getOutput());
  if (in.size() != 4 || out.size() != 4 || in[0] != out[0] || in[1] != out[1])
    return emitOpError("input and result must be N x H x W x C and N x H x OW x D");
  if (elementOf(getInput()) != elementOf(getOutput()))
    return emitOpError("input and result must have one element type");
  if (getKernel() < 1 || getStride() < 1 || getDilation() < 1 || getPad() < 0)
    return emitOpError("kernel, stride and dilation must be positive, pad not negative");
  if (out[3] < getKernel() * in[3])
    return emitOpError("result channels must hold kernel x input channels");
  return success();
}

/// gather(x, i) with one constant index i in range along `axis` is the
/// slice of x at i, reshaped to the result (the axis dropped for a scalar
/// index): a copy the movement kernels do in words, and one that
/// --tessel-attention-layout reads through (nn.MultiheadAttention's
/// q, k, v = proj[0], proj[1], proj[2]). An index out of range stays a
/// gather, whose kernels report it.
LogicalResult GatherOp::canonicalize(GatherOp op, PatternRewriter &rewriter) {
  auto constant = op.getIndices().getDefiningOp<ConstantOp>();
  auto dense = constant ? dyn_cast<DenseIntElementsAttr>(constant.getValue()) : nullptr;
  if (!dense || dense.getNumElements() != 1)
    return failure();
  ArrayRef<int64_t> data = shapeOf(op.getData());
  const int64_t rank = static_cast<int64_t>(data.size());
  const int64_t axis = op.getAxis() < 0 ? op.getAxis() + rank : op.getAxis();
  if (axis < 0 || axis >= rank)
    return failure();
  int64_t index = (*dense.getValues<APInt>().begin()).getSExtValue();
  if (index < 0)
    index += data[axis];
  if (index < 0 || index >= data[axis])
    return failure();
  SmallVector<int64_t> starts(rank, 0), steps(rank, 1), shape(data);
  starts[axis] = index;
  shape[axis] = 1;
  Value slice = rewriter.create<SliceOp>(
      op.getLoc(), RankedTensorType::get(shape, elementOf(op.getData())), op.getData(),
      rewriter.getDenseI64ArrayAttr(starts), rewriter.getDenseI64ArrayAttr(steps));
  rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getType(), slice);
  return success();
}

LogicalResult GatherOp::verify() {
  ArrayRef<int64_t> data = shapeOf(getData()), idx = shapeOf(getIndices());
  if (failed(verifyAxis(*this, getAxis(), data.size())))
    return failure();
  if (!elementOf(getIndices()).isInteger(64) && !elementOf(getIndices()).isInteger(32))
    return emitOpError("indices must be i32 or i64");
  SmallVector<int64_t> expected(data.begin(), data.begin() + getAxis());
  expected.append(idx.begin(), idx.end());
  expected.append(data.begin() + getAxis() + 1, data.end());
  if (ArrayRef<int64_t>(expected) != shapeOf(getOutput()))
    return emitOpError("result shape must be data[:axis] + indices + data[axis+1:]");
  return success();
}

LogicalResult GatherElementsOp::verify() {
  ArrayRef<int64_t> data = shapeOf(getData()), idx = shapeOf(getIndices());
  if (failed(verifyAxis(*this, getAxis(), data.size())))
    return failure();
  if (!elementOf(getIndices()).isInteger(64) && !elementOf(getIndices()).isInteger(32))
    return emitOpError("indices must be i32 or i64");
  if (idx.size() != data.size())
    return emitOpError("indices must have the data's rank");
  for (size_t d = 0; d < data.size(); ++d)
    if (static_cast<int64_t>(d) != getAxis() && idx[d] > data[d])
      return emitOpError("indices dim ") << d << " is longer than the data's";
  if (idx != shapeOf(getOutput()) || elementOf(getData()) != elementOf(getOutput()))
    return emitOpError("result must have the indices' shape and the data's element type");
  return success();
}

FailureOr<SmallVector<int64_t>> GatherNDOp::resultShape(ArrayRef<int64_t> data,
                                                        ArrayRef<int64_t> idx, int64_t batchDims,
                                                        std::string &why) {
  const int64_t r = data.size(), q = idx.size();
  if (r < 1 || q < 1) {
    why = "data and indices must have rank 1 or more";
    return failure();
  }
  if (batchDims < 0 || batchDims >= std::min(r, q)) {
    why = "batch_dims " + std::to_string(batchDims) + " must be below both ranks";
    return failure();
  }
  for (int64_t d = 0; d < batchDims; ++d)
    if (data[d] != idx[d]) {
      why = "batch dim " + std::to_string(d) + " differs between data and indices";
      return failure();
    }
  const int64_t k = idx.back();
  if (k < 1 || k > r - batchDims) {
    why = "the indices' last dim " + std::to_string(k) + " must be in [1, " +
          std::to_string(r - batchDims) + "]";
    return failure();
  }
  SmallVector<int64_t> shape(idx.drop_back());
  llvm::append_range(shape, data.drop_front(batchDims + k));
  return shape;
}

LogicalResult GatherNDOp::verify() {
  if (!elementOf(getIndices()).isInteger(64))
    return emitOpError("indices must be i64");
  std::string why;
  FailureOr<SmallVector<int64_t>> shape =
      resultShape(shapeOf(getData()), shapeOf(getIndices()), getBatchDims(), why);
  if (failed(shape))
    return emitOpError(why);
  if (ArrayRef<int64_t>(*shape) != shapeOf(getOutput()) ||
      elementOf(getData()) != elementOf(getOutput()))
    return emitOpError("result must have shape indices.shape[:-1] + data.shape[batch_dims + k:] "
                       "and the data's element type");
  return success();
}

FailureOr<SmallVector<int64_t>> ScatterNDOp::updatesShape(ArrayRef<int64_t> data,
                                                          ArrayRef<int64_t> idx, std::string &why) {
  const int64_t r = data.size(), q = idx.size();
  if (r < 1 || q < 1) {
    why = "data and indices must have rank 1 or more";
    return failure();
  }
  const int64_t k = idx.back();
  if (k < 1 || k > r) {
    why = "the indices' last dim " + std::to_string(k) + " must be in [1, " + std::to_string(r) +
          "]";
    return failure();
  }
  SmallVector<int64_t> shape(idx.drop_back());
  llvm::append_range(shape, data.drop_front(k));
  return shape;
}

LogicalResult ScatterNDOp::verify() {
  if (!elementOf(getIndices()).isInteger(64))
    return emitOpError("indices must be i64");
  std::string why;
  FailureOr<SmallVector<int64_t>> updates =
      updatesShape(shapeOf(getData()), shapeOf(getIndices()), why);
  if (failed(updates))
    return emitOpError(why);
  if (ArrayRef<int64_t>(*updates) != shapeOf(getUpdates()))
    return emitOpError("updates must have shape indices.shape[:-1] + data.shape[k:]");
  if (getData().getType() != getOutput().getType() ||
      elementOf(getUpdates()) != elementOf(getData()))
    return emitOpError("result and updates must have the data's type and element type");
  StringRef reduction = getReduction();
  if (reduction != "none" && reduction != "add" && reduction != "mul" && reduction != "max" &&
      reduction != "min")
    return emitOpError("reduction must be none, add, mul, max or min");
  return success();
}

LogicalResult TriluOp::verify() {
  if (shapeOf(getInput()).size() < 2)
    return emitOpError("input must have rank 2 or more");
  if (getInput().getType() != getOutput().getType())
    return emitOpError("result must have the input's type");
  return success();
}

bool CustomOp::accepts(Type element) {
  StringRef name = element.isF16() ? "f16" : element.isF32() ? "f32" : "";
  if (name.empty())
    return false;
  SmallVector<StringRef> types;
  getDtypes().split(types, ',');
  return llvm::is_contained(types, name);
}

LogicalResult CustomOp::verify() {
  if (getDomain().empty() || getOpType().empty())
    return emitOpError("needs a domain and an op type");
  if (getLayout() != "any" && getLayout() != "NCHW" && getLayout() != "NHWC")
    return emitOpError("layout must be any, NCHW or NHWC");
  if (getOutputs().empty())
    return emitOpError("needs a result");
  // One element type for every operand and result, one the kernels accept.
  Type element = elementOf(getOutputs().front());
  if (!accepts(element))
    return emitOpError("element type ") << element << " is not among its dtypes '"
                                        << getDtypes() << "'";
  auto other = [&](Value v) { return elementOf(v) != element; };
  if (llvm::any_of(getInputs(), other) || llvm::any_of(getOutputs(), other))
    return emitOpError("every operand and result must have element type ") << element;
  return success();
}

template <typename ScanOp> static LogicalResult verifyScan(ScanOp op) {
  if (failed(verifyAxis(op, op.getAxis(), shapeOf(op.getInput()).size())))
    return failure();
  if (op.getInput().getType() != op.getOutput().getType())
    return op.emitOpError("result must have the input's type");
  return success();
}

LogicalResult CumSumOp::verify() { return verifyScan(*this); }

LogicalResult TopKOp::verify() {
  ArrayRef<int64_t> in = shapeOf(getInput()), out = shapeOf(getValues());
  if (failed(verifyAxis(*this, getAxis(), in.size())))
    return failure();
  if (getValues().getType() != RankedTensorType::get(out, elementOf(getInput())) ||
      shapeOf(getIndices()) != out || !elementOf(getIndices()).isInteger(64))
    return emitOpError("values must have the input's element type, indices i64, one shape");
  for (size_t d = 0; d < in.size(); ++d)
    if (out[d] != (static_cast<int64_t>(d) == getAxis() ? out[d] : in[d]) ||
        (static_cast<int64_t>(d) == getAxis() && out[d] > in[d]))
      return emitOpError("results must have the input's shape, at most its extent along the axis");
  return success();
}

LogicalResult NonMaxSuppressionOp::verify() {
  ArrayRef<int64_t> boxes = shapeOf(getBoxes()), scores = shapeOf(getScores());
  if (boxes.size() != 3 || boxes[2] != 4 || scores.size() != 3 || scores[0] != boxes[0] ||
      scores[2] != boxes[1])
    return emitOpError("boxes must be [batch, boxes, 4] and scores [batch, classes, boxes]");
  if (elementOf(getBoxes()) != elementOf(getScores()) || !isa<FloatType>(elementOf(getBoxes())))
    return emitOpError("boxes and scores must have one float element type");
  if (getCenterPointBox() != 0 && getCenterPointBox() != 1)
    return emitOpError("center_point_box must be 0 or 1");
  const int64_t maxOutput = static_cast<int64_t>(getMaxOutputBoxesPerClass());
  if (maxOutput < 0)
    return emitOpError("max_output_boxes_per_class must not be negative");
  const double iou = getIouThreshold().convertToDouble();
  if (!(iou >= 0 && iou <= 1))
    return emitOpError("iou_threshold must be in [0, 1]");
  const int64_t bound = boxes[0] * scores[1] * std::min(maxOutput, boxes[1]);
  auto i64 = IntegerType::get(getContext(), 64);
  if (getSelected().getType() != RankedTensorType::get({bound, 3}, i64) ||
      getCount().getType() != RankedTensorType::get({1}, i64))
    return emitOpError("selected must be i64 [") << bound << ", 3] (batch * classes * min(max "
                                                    "output, boxes)) and count i64 [1]";
  return success();
}

LogicalResult ResizeOp::verify() {
  const size_t rank = shapeOf(getInput()).size();
  if (shapeOf(getOutput()).size() != rank)
    return emitOpError("result must have the input's rank");
  if (elementOf(getInput()) != elementOf(getOutput()))
    return emitOpError("result must have the input's element type");
  if (getScales().size() != rank)
    return emitOpError("scales must have one value per axis");
  if (!getRoi().empty() && getRoi().size() != 2 * rank)
    return emitOpError("roi must be empty or have two values per axis");
  for (double scale : getScales())
    if (!(scale > 0))
      return emitOpError("scales must be positive");
  return success();
}
LogicalResult CumProdOp::verify() { return verifyScan(*this); }

LogicalResult ExpandOp::verify() {
  SmallVector<int64_t> shape;
  ArrayRef<int64_t> out = shapeOf(getOutput());
  if (!OpTrait::util::getBroadcastedShape(shapeOf(getInput()), out, shape) ||
      ArrayRef<int64_t>(shape) != out)
    return emitOpError("input does not broadcast to the result shape");
  return success();
}

LogicalResult TileOp::verify() {
  ArrayRef<int64_t> in = shapeOf(getInput()), out = shapeOf(getOutput());
  if (in.size() != out.size())
    return emitOpError("result rank must equal the input rank");
  for (size_t d = 0; d < in.size(); ++d)
    if ((in[d] == 0 && out[d] != 0) || (in[d] != 0 && out[d] % in[d] != 0))
      return emitOpError("result dim ") << d << " is not a multiple of the input's";
  return success();
}

#define GET_OP_CLASSES
#include "TesselOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Epilogue activations
//===----------------------------------------------------------------------===//

EpilogueActivation ReluOp::getEpilogueActivation() { return {Activation::Relu}; }
EpilogueActivation SigmoidOp::getEpilogueActivation() { return {Activation::Sigmoid}; }
EpilogueActivation TanhOp::getEpilogueActivation() { return {Activation::Tanh}; }
EpilogueActivation HardSwishOp::getEpilogueActivation() { return {Activation::HardSwish}; }
EpilogueActivation GeluOp::getEpilogueActivation() { return {Activation::Gelu}; }
EpilogueActivation GeluTanhOp::getEpilogueActivation() { return {Activation::GeluTanh}; }
EpilogueActivation SiluOp::getEpilogueActivation() { return {Activation::Silu}; }
EpilogueActivation HardSigmoidOp::getEpilogueActivation() {
  return {Activation::HardSigmoid, getAlpha().convertToFloat(), getBeta().convertToFloat()};
}
EpilogueActivation LeakyReluOp::getEpilogueActivation() {
  return {Activation::LeakyRelu, getAlpha().convertToFloat()};
}
EpilogueActivation ClipOp::getEpilogueActivation() {
  return {Activation::Clip, static_cast<float>(getMin().convertToDouble()),
          static_cast<float>(getMax().convertToDouble())};
}
