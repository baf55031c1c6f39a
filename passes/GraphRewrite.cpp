//===- GraphRewrite.cpp - helpers the layout passes share -----------------===//
#include "GraphRewrite.h"

#include "llvm/ADT/SmallPtrSet.h"

using namespace mlir;

namespace tessel {

bool isConstantLike(Value v) {
  SmallVector<Value> worklist = {v};
  llvm::SmallPtrSet<Operation *, 8> seen;
  while (!worklist.empty()) {
    Operation *def = worklist.pop_back_val().getDefiningOp();
    if (!def || !isa<TesselDialect>(def->getDialect()))
      return false;
    if (!seen.insert(def).second || isa<ConstantOp>(def))
      continue;
    if (def->getNumOperands() == 0)
      return false;
    llvm::append_range(worklist, def->getOperands());
  }
  return true;
}

RankedTensorType withShape(Type type, ArrayRef<int64_t> shape) {
  return RankedTensorType::get(shape,
                               cast<RankedTensorType>(type).getElementType());
}

Operation *rebuild(OpBuilder &builder, Operation *op, ValueRange operands,
                   TypeRange results, DictionaryAttr attrs) {
  OperationState state(op->getLoc(), op->getName());
  state.addOperands(operands);
  state.addTypes(results);
  state.addAttributes(attrs ? attrs.getValue() : op->getAttrs());
  return builder.create(state);
}

std::optional<double> scalarConstant(mlir::Value v) {
  auto constant = v.getDefiningOp<ConstantOp>();
  auto dense = constant ? mlir::dyn_cast<mlir::DenseElementsAttr>(constant.getValue()) : nullptr;
  if (!dense || dense.getNumElements() != 1 || !mlir::isa<mlir::FloatType>(dense.getElementType()))
    return std::nullopt;
  return (*dense.getValues<llvm::APFloat>().begin()).convertToDouble();
}

std::optional<double> splatConstant(mlir::Value v) {
  auto constant = v.getDefiningOp<ConstantOp>();
  auto dense = constant ? mlir::dyn_cast<mlir::DenseElementsAttr>(constant.getValue()) : nullptr;
  if (!dense || !dense.isSplat() || !mlir::isa<mlir::FloatType>(dense.getElementType()))
    return std::nullopt;
  return dense.getSplatValue<llvm::APFloat>().convertToDouble();
}

} // namespace tessel
