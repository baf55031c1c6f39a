//===- IOFormat.cpp - --tessel-io-format ----------------------------------===//
//
// Lets the caller hand the engine its inputs and take its outputs in the
// format the graph computes in (NHWC, f16), so that the conversions the
// pipeline left at the graph boundary disappear.
//
// The function's signature changes, and the inverse conversion is inserted
// right at the boundary: an input that used to be f32 NCHW is now
// `transpose(cast(arg))` (or `cast(transpose(arg))`, chosen per use so that
// the new conversion meets its mirror image), and an output becomes the
// conversion of what used to be returned. Canonicalization then folds each
// transpose pair and each exact cast pair (f16 -> f32 -> f16; never
// f32 -> f16 -> f32) away. This is a signature rewrite plus a few inserted
// ops at known places, not a local rewrite: no pattern driver.
//
//===----------------------------------------------------------------------===//
#include "GraphRewrite.h"
#include "Passes.h"

#include "llvm/ADT/DenseMap.h"

namespace tessel {
#define GEN_PASS_DEF_IOFORMAT
#include "Passes.h.inc"
} // namespace tessel

using namespace mlir;

namespace tessel {

namespace {

// transpose(x, perm): result dim i is input dim perm[i].
constexpr int64_t kToNHWC[] = {0, 2, 3, 1};
constexpr int64_t kToNCHW[] = {0, 3, 1, 2};

/// What one boundary tensor becomes.
struct Change {
  bool nhwc = false; // 4-D f32: NCHW in the model, NHWC at the boundary
  bool f16 = false;  // f32 in the model, f16 at the boundary
  bool any() const { return nhwc || f16; }
};

class Rewriter {
public:
  Rewriter(MLIRContext *ctx, bool nhwc, bool f16)
      : nhwc(nhwc), f16(f16), builder(ctx) {}

  /// Only tensors the model typed f32 change: i64 shapes, bool masks and a
  /// model's own f16 or f64 are the model's contract. The layout is an
  /// activation's, so only 4-D ones change it.
  Change changeOf(Type type) const {
    auto tensor = cast<RankedTensorType>(type);
    Change change;
    if (!tensor.getElementType().isF32())
      return change;
    change.nhwc = nhwc && tensor.getRank() == 4;
    change.f16 = f16;
    return change;
  }

  /// The type the caller sees.
  Type boundaryType(Type type, Change change) const {
    auto tensor = cast<RankedTensorType>(type);
    if (change.nhwc)
      tensor = withShape(tensor, permuted(tensor.getShape(), kToNHWC));
    if (change.f16)
      tensor = tensor.clone(Float16Type::get(tensor.getContext()));
    return tensor;
  }

  /// The layout a 4-D f32 boundary tensor is in: the model's NCHW or NHWC;
  /// null for any other tensor.
  static LayoutAttr layoutOf(Type modelType, Change change) {
    auto tensor = cast<RankedTensorType>(modelType);
    if (tensor.getRank() != 4 || !tensor.getElementType().isF32())
      return {};
    return LayoutAttr::get(tensor.getContext(), change.nhwc ? Layout::NHWC : Layout::NCHW);
  }

  void rewriteArgument(BlockArgument arg) {
    Type modelType = arg.getType();
    Change change = changeOf(modelType);
    if (!change.any())
      return;
    SmallVector<OpOperand *> uses =
        llvm::map_to_vector(arg.getUses(), [](OpOperand &use) { return &use; });
    arg.setType(boundaryType(modelType, change));
    builder.setInsertionPointToStart(arg.getOwner());
    // Per use, the conversion whose last op mirrors the user: a cast meets a
    // cast (the f32 -> f16 the precision pass put on the input), anything
    // else (the NCHW -> NHWC transpose) meets the transpose.
    Value castLast, transposeLast;
    for (OpOperand *use : uses) {
      bool cast = isa<CastOp>(use->getOwner());
      Value &converted = cast ? castLast : transposeLast;
      if (!converted)
        converted = convert(arg, change, /*castFirst=*/!cast, /*outward=*/false);
      use->set(converted);
    }
  }

  /// The value returned at the boundary for the model's `value`.
  Value rewriteResult(Value value) {
    Change change = changeOf(value.getType());
    if (!change.any())
      return value;
    Value &converted = results[value];
    if (converted)
      return converted;
    builder.setInsertionPointAfterValue(value);
    // The first conversion mirrors the producer: after a cast (the f16 -> f32
    // of the precision pass) cast first, else transpose first.
    bool cast = value.getDefiningOp<CastOp>() != nullptr;
    converted = convert(value, change, /*castFirst=*/cast, /*outward=*/true);
    return converted;
  }

private:
  static SmallVector<int64_t> permuted(ArrayRef<int64_t> shape,
                                       ArrayRef<int64_t> perm) {
    return llvm::map_to_vector(perm, [&](int64_t p) { return shape[p]; });
  }

  /// `v` converted by `change`, the cast or the transpose first: towards the
  /// boundary format when `outward`, back to the model's format otherwise.
  Value convert(Value v, Change change, bool castFirst, bool outward) {
    for (bool castStep : {castFirst, !castFirst}) {
      if (castStep && change.f16)
        v = castTo(v, outward ? builder.getF16Type() : builder.getF32Type());
      if (!castStep && change.nhwc)
        v = transpose(v, outward ? ArrayRef<int64_t>(kToNHWC)
                                 : ArrayRef<int64_t>(kToNCHW));
    }
    return v;
  }

  Value castTo(Value v, Type element) {
    auto type = cast<RankedTensorType>(v.getType()).clone(element);
    return builder.create<CastOp>(v.getLoc(), type, v);
  }

  /// A transpose, or a reshape where it moves only unit dims (a [N, C, 1, 1]
  /// tensor is the same bytes in both layouts), as --tessel-to-nhwc builds
  /// them, so that its counterpart in the graph folds with it.
  Value transpose(Value v, ArrayRef<int64_t> perm) {
    ArrayRef<int64_t> shape = cast<RankedTensorType>(v.getType()).getShape();
    Type type = withShape(v.getType(), permuted(shape, perm));
    int64_t last = -1;
    bool unitOnly = true;
    for (int64_t p : perm) {
      if (shape[p] == 1)
        continue;
      unitOnly &= p > last;
      last = p;
    }
    if (unitOnly)
      return builder.create<ReshapeOp>(v.getLoc(), type, v);
    return builder.create<TransposeOp>(v.getLoc(), type, v,
                                       builder.getDenseI64ArrayAttr(perm));
  }

  bool nhwc, f16;
  OpBuilder builder;
  llvm::DenseMap<Value, Value> results;
};

struct IOFormatPass : impl::IOFormatBase<IOFormatPass> {
  using IOFormatBase::IOFormatBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (layout != "model" && layout != "nhwc") {
      func.emitError("io layout must be model or nhwc, not '") << layout << "'";
      return signalPassFailure();
    }
    if (dtype != "model" && dtype != "f16") {
      func.emitError("io dtype must be model or f16, not '") << dtype << "'";
      return signalPassFailure();
    }
    Rewriter rewriter(&getContext(), layout == "nhwc", dtype == "f16");
    Block &body = func.getBody().front();
    StringRef layoutName = TesselDialect::LayoutAttrHelper::getNameStr();

    for (BlockArgument arg : body.getArguments()) {
      Change change = rewriter.changeOf(arg.getType());
      if (LayoutAttr layout = Rewriter::layoutOf(arg.getType(), change))
        func.setArgAttr(arg.getArgNumber(), layoutName, layout);
      rewriter.rewriteArgument(arg);
    }

    auto returnOp = cast<func::ReturnOp>(body.getTerminator());
    for (OpOperand &operand : returnOp->getOpOperands()) {
      Type modelType = operand.get().getType();
      Change change = rewriter.changeOf(modelType);
      if (LayoutAttr layout = Rewriter::layoutOf(modelType, change))
        func.setResultAttr(operand.getOperandNumber(), layoutName, layout);
      operand.set(rewriter.rewriteResult(operand.get()));
    }

    func.setType(FunctionType::get(&getContext(), body.getArgumentTypes(),
                                   returnOp.getOperandTypes()));
  }
};

} // namespace
} // namespace tessel
