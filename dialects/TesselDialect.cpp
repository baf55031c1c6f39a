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
/// tessel.name a string, tessel.layout a layout, on a 4-D tensor,
/// tessel.extent_of [result, axis] on a count (tensor<1xi64>) result.
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
  if (name == TesselDialect::ExtentOfAttrHelper::getNameStr()) {
    auto link = dyn_cast<DenseI64ArrayAttr>(attribute.getValue());
    auto count = dyn_cast_or_null<RankedTensorType>(type);
    if (!link || link.size() != 2 || !count || count.getShape() != ArrayRef<int64_t>{1} ||
        !count.getElementType().isInteger(64))
      return op->emitError() << name << " must be [result, axis] on a tensor<1xi64> result";
    auto function = dyn_cast<FunctionOpInterface>(op);
    if (!function || link[0] < 0 || link[0] >= static_cast<int64_t>(function.getNumResults()))
      return op->emitError() << name << " names no result of the function";
    auto target = dyn_cast<RankedTensorType>(function.getResultTypes()[link[0]]);
    if (!target || link[1] < 0 || link[1] >= target.getRank() ||
        llvm::any_of(target.getShape().take_front(link[1]), [](int64_t d) { return d != 1; }))
      return op->emitError() << name << " must name an axis after only dims of 1";
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
