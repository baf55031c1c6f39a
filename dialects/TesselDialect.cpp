//===- TesselDialect.cpp - dialect registration ---------------------------===//
#include "TesselDialect.h"

#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace tessel;

#include "TesselDialect.cpp.inc"
#include "TesselEnums.cpp.inc"
#include "TesselInterfaces.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "TesselAttrs.cpp.inc"

void TesselDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "TesselOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "TesselAttrs.cpp.inc"
      >();
}

Operation *TesselDialect::materializeConstant(OpBuilder &builder,
                                              Attribute value, Type type,
                                              Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return builder.create<ConstantOp>(loc, type, elements);
}

/// The dialect's attributes on a function's arguments and results:
/// tessel.name a string, tessel.layout a layout, on a 4-D tensor.
static LogicalResult verifyIoAttribute(Operation *op, Type type, NamedAttribute attribute) {
  StringRef name = attribute.getName().getValue();
  if (name == TesselDialect::NameAttrHelper::getNameStr()) {
    if (!isa<StringAttr>(attribute.getValue()))
      return op->emitError() << name << " must be a string";
    return success();
  }
  if (name == TesselDialect::LayoutAttrHelper::getNameStr()) {
    if (!isa<LayoutAttr>(attribute.getValue()))
      return op->emitError() << name << " must be a #tessel.layout";
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || tensor.getRank() != 4)
      return op->emitError() << name << " applies to 4-D tensors only";
    return success();
  }
  return op->emitError() << "unknown attribute " << name << " of the tessel dialect";
}

LogicalResult TesselDialect::verifyRegionArgAttribute(Operation *op, unsigned region,
                                                      unsigned argument,
                                                      NamedAttribute attribute) {
  Region &body = op->getRegion(region);
  Type type = body.empty() ? Type() : body.getArgument(argument).getType();
  return verifyIoAttribute(op, type, attribute);
}

LogicalResult TesselDialect::verifyRegionResultAttribute(Operation *op, unsigned region,
                                                         unsigned result,
                                                         NamedAttribute attribute) {
  Type type;
  if (auto function = dyn_cast<FunctionOpInterface>(op))
    type = function.getResultTypes()[result];
  return verifyIoAttribute(op, type, attribute);
}
