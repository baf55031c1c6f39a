//===- LowerPrecision.cpp - --tessel-lower-precision ----------------------===//
//
// Retypes the graph for f16 storage: each op gets the element type its
// precision class asks for (LowerPrecision.h), and a tessel.cast is inserted
// wherever an operand arrives in another type. One walk in program order
// rather than local patterns: an exact op (reshape, max_pool, relu...) runs in
// the type its producer chose, so each decision needs its operands' final
// types.
//
//===----------------------------------------------------------------------===//
#include "LowerPrecision.h"
#include "Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"

#include <algorithm>
#include <cmath>

namespace tessel {
#define GEN_PASS_DEF_LOWERPRECISION
#include "Passes.h.inc"
} // namespace tessel

using namespace mlir;

namespace tessel {

namespace {

/// The element type an op computes on: its first float operand, else its
/// first float result, else its first operand (shape arithmetic).
Type computeElement(Operation *op) {
  for (ValueRange values :
       {ValueRange(op->getOperands()), ValueRange(op->getResults())})
    for (Value v : values)
      if (isa<RankedTensorType>(v.getType()) && isa<FloatType>(elementOf(v)))
        return elementOf(v);
  for (Value v : op->getOperands())
    if (isa<RankedTensorType>(v.getType()))
      return elementOf(v);
  return {};
}

std::string typeText(Type t) {
  std::string text;
  llvm::raw_string_ostream os(text);
  t.print(os);
  return text;
}

} // namespace

std::string describePrecision(Operation *op) {
  if (auto conversion = dyn_cast<CastOp>(op))
    return typeText(elementOf(conversion.getInput())) + "->" +
           typeText(elementOf(conversion.getOutput()));
  Type element = computeElement(op);
  if (!element)
    return "-";
  std::string text = typeText(element);
  if (precisionClass(op) == PrecisionClass::TensorCore && element.isF16())
    text += " (f32 accumulate)";
  return text;
}

namespace {

/// The rewrite of one function. Values the model gave f32 are "lowerable";
/// tensors of any other element type (i64 shapes, bool masks, a model's own
/// f16 or f64) are never touched.
class Lowering {
public:
  explicit Lowering(MLIRContext *ctx)
      : f16(Float16Type::get(ctx)), f32(Float32Type::get(ctx)) {}

  void run(func::FuncOp func) {
    SmallVector<Operation *> ops;
    for (Block &block : func.getBody())
      for (Operation &op : block)
        ops.push_back(&op);
    for (Operation *op : ops)
      lower(op);
  }

private:
  bool isLowerable(Value v) const {
    return elementOf(v) == f32 || lowered.contains(v);
  }

  /// The float element type `op` runs in.
  Type targetOf(Operation *op, PrecisionClass cls) const {
    switch (cls) {
    case PrecisionClass::TensorCore:
    case PrecisionClass::F16:
      return f16;
    case PrecisionClass::F32:
      return f32;
    case PrecisionClass::Exact:
    case PrecisionClass::InputStorage:
      // f32 when an f32 activation arrives: widening the others is exact,
      // narrowing it would round. Constants do not vote (weights are f16).
      for (Value v : op->getOperands())
        if (elementOf(v) == f32 && !v.getDefiningOp<ConstantOp>())
          return f32;
      return f16;
    }
    llvm_unreachable("unknown precision class");
  }

  /// The largest finite magnitude of an f32 constant operand of `op` beyond
  /// f16's range (65504), or 0 when every one fits: stored in f16 such a
  /// value would be an infinity, and the op's results wrong (inf, or NaN from
  /// inf * 0) whatever its inputs.
  static double constantBeyondF16(Operation *op) {
    double largest = 0;
    for (Value v : op->getOperands()) {
      auto constant = v.getDefiningOp<ConstantOp>();
      if (!constant || !elementOf(v).isF32())
        continue;
      auto values = dyn_cast<DenseElementsAttr>(constant.getValue());
      if (!values)
        continue;
      auto consider = [&](float value) {
        double magnitude = std::fabs(static_cast<double>(value));
        if (std::isfinite(magnitude) && magnitude > 65504.0)
          largest = std::max(largest, magnitude);
      };
      // As floats, not APFloats: a ResNet-50's 25M weights are read here.
      if (values.isSplat())
        consider(values.getSplatValue<float>());
      else
        for (float value : values.getValues<float>())
          consider(value);
    }
    return largest;
  }

  void lower(Operation *op) {
    if (isa<ConstantOp>(op))
      return; // converted where used, by a cast that fold-constants folds
    // A conversion the model wrote takes any operand type and keeps its result
    // type: it is the model's own choice of precision.
    bool conversion = isa<CastOp>(op);
    PrecisionClass cls = precisionClass(op);
    Type target = targetOf(op, cls);
    // An op whose constant would overflow f16 stays in f32, pinned as
    // --fp32-nodes pins (issue 17: no silent inf), and says so.
    if (!conversion && target == f16)
      if (double largest = constantBeyondF16(op)) {
        op->emitWarning() << "a constant operand holds " << largest
                          << ", beyond f16's range (65504): the op stays in f32";
        op->setAttr(kModelPrecisionAttr, UnitAttr::get(op->getContext()));
        target = f32;
      }
    if (!conversion)
      for (OpOperand &operand : op->getOpOperands())
        if (isa<RankedTensorType>(operand.get().getType()) &&
            isLowerable(operand.get()) && elementOf(operand.get()) != target)
          operand.set(convert(operand.get(), target, op));
    if (conversion || target != f16)
      return;
    for (Value result : op->getResults()) {
      auto type = dyn_cast<RankedTensorType>(result.getType());
      if (!type || type.getElementType() != f32)
        continue;
      result.setType(type.clone(f16));
      lowered.insert(result);
    }
  }

  /// `value` as `element`, through one cast per (value, type): the cast sits
  /// before the first user and carries its location (the ONNX node that
  /// needs the other precision); a function result's cast carries the
  /// producer's.
  Value convert(Value value, Type element, Operation *user) {
    Value &converted = casts[{value, element}];
    if (converted)
      return converted;
    OpBuilder builder(user);
    Location loc = isa<TesselDialect>(user->getDialect()) ? user->getLoc()
                                                           : value.getLoc();
    auto type = cast<RankedTensorType>(value.getType()).clone(element);
    converted = builder.create<CastOp>(loc, type, value);
    return converted;
  }

  Type f16, f32;
  llvm::DenseSet<Value> lowered;
  llvm::DenseMap<std::pair<Value, Type>, Value> casts;
};

struct LowerPrecisionPass : impl::LowerPrecisionBase<LowerPrecisionPass> {
  using LowerPrecisionBase::LowerPrecisionBase;

  void runOnOperation() override {
    if (precision == "fp32")
      return markAllAnalysesPreserved();
    if (precision != "fp16") {
      getOperation().emitError("precision must be fp16 or fp32, not '")
          << precision << "'";
      return signalPassFailure();
    }
    if (failed(pinNodes()))
      return signalPassFailure();
    Lowering(&getContext()).run(getOperation());
  }

  /// Pins the ops of the fp32-nodes to f32 (kModelPrecisionAttr): an op of
  /// several nodes (a fused one) when any of them is listed.
  LogicalResult pinNodes() {
    if (fp32Nodes.empty())
      return success();
    llvm::StringSet<> wanted, seen;
    for (const std::string &node : fp32Nodes)
      wanted.insert(node);
    getOperation().walk([&](Operation *op) {
      if (!isa<TesselDialect>(op->getDialect()) || isa<ConstantOp>(op))
        return;
      for (StringRef node : nodeNames(op->getLoc()))
        if (wanted.contains(node)) {
          op->setAttr(kModelPrecisionAttr, UnitAttr::get(op->getContext()));
          seen.insert(node);
        }
    });
    for (const std::string &node : fp32Nodes)
      if (!seen.contains(node))
        getOperation().emitWarning() << "--fp32-nodes: no op of a node named '" << node
                                     << "' is left to keep in f32";
    return success();
  }

  /// The ONNX node names of a location: "conv1(Conv)" -> conv1, each of a
  /// fused location's.
  static SmallVector<StringRef> nodeNames(Location loc) {
    SmallVector<StringRef> names;
    if (auto name = dyn_cast<NameLoc>(loc)) {
      StringRef text = name.getName().getValue();
      size_t open = text.rfind('(');
      if (open != StringRef::npos && open > 0)
        names.push_back(text.take_front(open));
    } else if (auto fused = dyn_cast<FusedLoc>(loc)) {
      for (Location inner : fused.getLocations())
        names.append(nodeNames(inner));
    }
    return names;
  }
};

} // namespace
} // namespace tessel
