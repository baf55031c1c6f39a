//===- DataDependentExtents.cpp - --tessel-data-dependent-extents ---------===//
//
// An op whose result has a data-dependent extent (non_max_suppression: how
// many rows it selects) computes into a static bound and writes the extent
// into a count tensor. Every tensor stays static, so the passes and kernels
// after this one know nothing of it: the rows past the count are padding
// that each op carries along like any other rows. That is right only where
// rows stay apart, so this pass follows each such extent forward through
// the ops that keep the rows of one axis apart: elementwise ops (broadcast
// along other axes), gather by its rows or along another axis, slices along
// other axes or from the start (the count becomes min(count, the slice's
// extent)), reshapes that keep the axis, transposes, concats and reductions
// along other axes. Any other use of a data-dependent axis would mix padding
// into real values: an error at that op's node.
//
// A function result that carries such an extent gets a companion result,
// the count, with the attribute tessel.extent_of = [result, axis]; the
// engine writer makes it the output's run-time extent. The axis must follow
// only dims of 1, so that the valid elements are a prefix of the buffer.
//
// It runs first in the pipeline, before folding may replace an op by its
// bound-sized constant.
//
//===----------------------------------------------------------------------===//
#include "Passes.h"
#include "TesselTraits.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"

namespace tessel {
#define GEN_PASS_DEF_DATADEPENDENTEXTENTS
#include "Passes.h.inc"
} // namespace tessel

using namespace mlir;

namespace tessel {

namespace {

/// Axis `axis` of a value holds `count` valid entries (a tensor<1xi64>), the
/// rest padding; `origin` is the op that made it so, for messages.
struct Extent {
  int64_t axis;
  Value count;
  Operation *origin;
};

class Propagation {
public:
  explicit Propagation(func::FuncOp func) : func(func), builder(func.getContext()) {}

  LogicalResult run();

private:
  LogicalResult visit(Operation *op);
  LogicalResult refuse(Operation *op, const Extent &extent, const Twine &why);
  /// The extent of `v` on axis `axis` of a result of rank `rank` when `v`
  /// broadcasts to it (right-aligned).
  LogicalResult broadcast(Operation *op, int64_t rank);
  LogicalResult withAxisAttr(Operation *op, int64_t axis, const Extent &extent);
  Value minCount(Operation *op, Value count, int64_t bound);

  func::FuncOp func;
  OpBuilder builder;
  llvm::DenseMap<Value, Extent> extents;
};

LogicalResult Propagation::refuse(Operation *op, const Extent &extent, const Twine &why) {
  return op->emitError() << op->getName().stripDialect() << " " << why << " axis "
                         << extent.axis << " of an operand, which holds the data-dependent "
                         << "rows of " << locationName(extent.origin->getLoc())
                         << "; Tessel follows such an extent only through elementwise ops, "
                            "gather, slices along other axes or from the start, reshapes "
                            "that keep the axis, transposes, concats and reductions along "
                            "other axes";
}

Value Propagation::minCount(Operation *op, Value count, int64_t bound) {
  builder.setInsertionPointAfter(op);
  auto type = cast<RankedTensorType>(count.getType());
  Value limit = builder.create<ConstantOp>(
      op->getLoc(), type, DenseElementsAttr::get(type, builder.getI64IntegerAttr(bound)));
  return builder.create<MinOp>(op->getLoc(), type, count, limit);
}

LogicalResult Propagation::broadcast(Operation *op, int64_t rank) {
  std::optional<Extent> result;
  // The dynamic operands must agree on the axis and the count.
  for (Value operand : op->getOperands()) {
    auto it = extents.find(operand);
    if (it == extents.end())
      continue;
    Extent mapped = it->second;
    mapped.axis += rank - static_cast<int64_t>(shapeOf(operand).size());
    if (result && (result->axis != mapped.axis || result->count != mapped.count))
      return refuse(op, it->second, "combines another data-dependent extent with");
    result = mapped;
  }
  // A static operand may only broadcast along it.
  for (Value operand : op->getOperands()) {
    if (extents.count(operand))
      continue;
    const int64_t d = result->axis - (rank - static_cast<int64_t>(shapeOf(operand).size()));
    if (d >= 0 && shapeOf(operand)[d] != 1)
      return refuse(op, *result, "combines a static extent elementwise with");
  }
  for (Value r : op->getResults())
    extents[r] = *result;
  return success();
}

LogicalResult Propagation::withAxisAttr(Operation *op, int64_t axis, const Extent &extent) {
  if (axis == extent.axis)
    return refuse(op, extent, "works along");
  for (Value r : op->getResults()) {
    Extent e = extent;
    // A result of lower rank (an arg reduce without keepdims) drops the axis.
    if (shapeOf(r).size() < shapeOf(op->getOperand(0)).size() && axis < extent.axis)
      --e.axis;
    extents[r] = e;
  }
  return success();
}

LogicalResult Propagation::visit(Operation *op) {
  if (isa<NonMaxSuppressionOp>(op) && !llvm::any_of(op->getOperands(), [&](Value v) {
        return extents.count(v);
      })) {
    auto nms = cast<NonMaxSuppressionOp>(op);
    extents[nms.getSelected()] = Extent{0, nms.getCount(), op};
    return success();
  }
  std::optional<Extent> in;
  unsigned inIndex = 0;
  for (auto [i, operand] : llvm::enumerate(op->getOperands()))
    if (auto it = extents.find(operand); it != extents.end() && !in) {
      in = it->second;
      inIndex = i;
    }
  if (!in)
    return success();
  if (isa<func::ReturnOp>(op))
    return success();

  if (op->hasTrait<traits::ElementwiseUnary>()) {
    extents[op->getResult(0)] = *in;
    return success();
  }
  if (op->hasTrait<traits::ElementwiseBinary>() || isa<WhereOp>(op))
    return broadcast(op, shapeOf(op->getResult(0)).size());
  if (auto expand = dyn_cast<ExpandOp>(op)) {
    const int64_t rank = shapeOf(expand.getOutput()).size();
    const int64_t axis = in->axis + rank - static_cast<int64_t>(shapeOf(expand.getInput()).size());
    if (shapeOf(expand.getOutput())[axis] != shapeOf(expand.getInput())[in->axis])
      return refuse(op, *in, "broadcasts along");
    extents[expand.getOutput()] = Extent{axis, in->count, in->origin};
    return success();
  }
  if (auto gather = dyn_cast<GatherOp>(op)) {
    const int64_t axis = gather.getAxis();
    if (extents.count(gather.getData()) && extents.count(gather.getIndices()))
      return refuse(op, *in, "gathers by another data-dependent extent from");
    if (inIndex == 1) { // rows of indices: the result's axis + j
      extents[gather.getOutput()] = Extent{axis + in->axis, in->count, in->origin};
      return success();
    }
    if (in->axis == axis)
      return refuse(op, *in, "gathers (by indices that may point into its padding) along");
    const int64_t shift = in->axis < axis ? 0 : shapeOf(gather.getIndices()).size() - 1;
    extents[gather.getOutput()] = Extent{in->axis + shift, in->count, in->origin};
    return success();
  }
  if (auto gather = dyn_cast<GatherNDOp>(op)) {
    // The result's leading dims are the indices' but the last (the tuple).
    const int64_t tuple = static_cast<int64_t>(shapeOf(gather.getIndices()).size()) - 1;
    if (inIndex != 1 || extents.count(gather.getData()) || in->axis == tuple)
      return refuse(op, *in, "gathers tuples from or along");
    extents[gather.getOutput()] = *in;
    return success();
  }
  if (auto slice = dyn_cast<SliceOp>(op)) {
    const int64_t a = in->axis;
    const int64_t inDim = shapeOf(slice.getInput())[a], outDim = shapeOf(slice.getOutput())[a];
    if (outDim == inDim) {
      extents[slice.getOutput()] = *in;
      return success();
    }
    if (slice.getStarts()[a] != 0 || slice.getSteps()[a] != 1)
      return refuse(op, *in, "slices, other than from the start by step 1,");
    extents[slice.getOutput()] = Extent{a, minCount(op, in->count, outDim), in->origin};
    return success();
  }
  if (auto reshape = dyn_cast<ReshapeOp>(op)) {
    ArrayRef<int64_t> from = shapeOf(reshape.getInput()), to = shapeOf(reshape.getOutput());
    int64_t before = 1;
    for (int64_t d = 0; d < in->axis; ++d)
      before *= from[d];
    int64_t prefix = 1;
    for (int64_t k = 0; k < static_cast<int64_t>(to.size()); prefix *= to[k], ++k)
      if (prefix == before && to[k] == from[in->axis]) {
        extents[reshape.getOutput()] = Extent{k, in->count, in->origin};
        return success();
      }
    return refuse(op, *in, "merges or splits");
  }
  if (auto transpose = dyn_cast<TransposeOp>(op)) {
    ArrayRef<int64_t> perm = transpose.getPerm();
    const int64_t axis = llvm::find(perm, in->axis) - perm.begin();
    extents[transpose.getOutput()] = Extent{axis, in->count, in->origin};
    return success();
  }
  if (auto concat = dyn_cast<ConcatOp>(op)) {
    if (concat.getAxis() == in->axis)
      return refuse(op, *in, "concatenates along");
    for (Value operand : concat.getInputs())
      if (auto it = extents.find(operand);
          it != extents.end() && (it->second.axis != in->axis || it->second.count != in->count))
        return refuse(op, *in, "combines another data-dependent extent with");
    extents[concat.getOutput()] = *in;
    return success();
  }
  if (op->hasTrait<traits::Reduction>()) {
    auto axes = op->getAttrOfType<DenseI64ArrayAttr>("axes");
    auto keepdims = op->getAttrOfType<BoolAttr>("keepdims");
    if (!axes || !keepdims)
      return refuse(op, *in, "reduces");
    if (axes.empty() || llvm::is_contained(axes.asArrayRef(), in->axis))
      return refuse(op, *in, "reduces along");
    const int64_t dropped =
        keepdims.getValue() ? 0 : llvm::count_if(axes.asArrayRef(), [&](int64_t a) {
          return a < in->axis;
        });
    extents[op->getResult(0)] = Extent{in->axis - dropped, in->count, in->origin};
    return success();
  }
  if (isa<ArgMaxOp, ArgMinOp, TopKOp, SoftmaxOp, LogSoftmaxOp, CumSumOp, CumProdOp>(op))
    return withAxisAttr(op, op->getAttrOfType<IntegerAttr>("axis").getInt(), *in);
  return refuse(op, *in, "reads");
}

LogicalResult Propagation::run() {
  Block &body = func.getBody().front();
  for (Operation &op : llvm::make_early_inc_range(body))
    if (failed(visit(&op)))
      return failure();

  auto returnOp = cast<func::ReturnOp>(body.getTerminator());
  const std::string extentName = TesselDialect::ExtentOfAttrHelper::getNameStr().str();
  // Results that have their count already (the pass ran before).
  llvm::SmallDenseSet<int64_t> counted;
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    if (auto of = func.getResultAttrOfType<DenseI64ArrayAttr>(i, extentName))
      counted.insert(of[0]);
  SmallVector<Value> counts;
  SmallVector<DenseI64ArrayAttr> links;
  for (auto [i, value] : llvm::enumerate(returnOp.getOperands())) {
    auto it = extents.find(value);
    if (it == extents.end() || counted.count(i))
      continue;
    const Extent &e = it->second;
    ArrayRef<int64_t> shape = shapeOf(value);
    if (llvm::any_of(shape.take_front(e.axis), [](int64_t d) { return d != 1; })) {
      auto name = func.getResultAttrOfType<StringAttr>(i, TesselDialect::NameAttrHelper::getNameStr());
      return e.origin->emitError()
             << "graph output '" << (name ? name.getValue() : StringRef("?"))
             << "' has data-dependent extent along axis " << e.axis
             << " after dims that are not 1; Tessel returns such an output only when its "
                "valid elements are a prefix of the buffer";
    }
    counts.push_back(e.count);
    links.push_back(DenseI64ArrayAttr::get(func.getContext(), {int64_t(i), e.axis}));
  }
  if (counts.empty())
    return success();
  SmallVector<Value> operands(returnOp.getOperands());
  for (auto [count, link] : llvm::zip(counts, links)) {
    const unsigned index = func.getNumResults();
    func.insertResult(index, count.getType(),
                      builder.getDictionaryAttr(builder.getNamedAttr(extentName, link)));
    operands.push_back(count);
  }
  returnOp->setOperands(operands);
  return success();
}

struct DataDependentExtentsPass
    : public impl::DataDependentExtentsBase<DataDependentExtentsPass> {
  void runOnOperation() override {
    if (failed(Propagation(getOperation()).run()))
      signalPassFailure();
  }
};

} // namespace

} // namespace tessel
