//===- StepEncoding.cpp - a tessel op as an engine step -------------------===//
#include "StepEncoding.h"

#include "TesselDialect.h"

#include "mlir/IR/Diagnostics.h"

#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/BuiltinDialect.h"

#include <cstring>

using namespace mlir;

namespace tessel {

std::optional<int8_t> engineDType(Type t) {
  // Order matches runtime/schema/engine.fbs DType.
  if (t.isF32()) return 0;
  if (t.isF16()) return 1;
  if (t.isF64()) return 2;
  if (t.isBF16()) return 3;
  if (auto i = dyn_cast<IntegerType>(t)) {
    if (i.getWidth() == 1) return 12;
    bool u = i.isUnsigned();
    switch (i.getWidth()) {
    case 8: return u ? 8 : 4;
    case 16: return u ? 9 : 5;
    case 32: return u ? 10 : 6;
    case 64: return u ? 11 : 7;
    default: return std::nullopt;
    }
  }
  return std::nullopt;
}

size_t elementBytes(Type t) {
  if (t.isInteger(1))
    return 1;
  return t.getIntOrFloatBitWidth() / 8;
}

std::vector<uint8_t> elementsToBytes(ElementsAttr attr) {
  auto type = cast<ShapedType>(attr.getType());
  Type element = type.getElementType();
  size_t count = type.getNumElements(), width = elementBytes(element);
  std::vector<uint8_t> bytes(count * width);
  if (count == 0)
    return bytes;

  if (auto resource = dyn_cast<DenseResourceElementsAttr>(attr)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    ArrayRef<char> data = blob ? blob->getData() : ArrayRef<char>();
    if (data.size() == bytes.size())
      std::memcpy(bytes.data(), data.data(), bytes.size());
    return bytes;
  }
  auto dense = cast<DenseElementsAttr>(attr);
  if (element.isInteger(1)) {
    size_t i = 0;
    for (bool b : dense.getValues<bool>())
      bytes[i++] = b ? 1 : 0;
    return bytes;
  }
  ArrayRef<char> raw = dense.getRawData();
  if (dense.isSplat()) {
    for (size_t i = 0; i < count; ++i)
      std::memcpy(bytes.data() + i * width, raw.data(), width);
  } else {
    std::memcpy(bytes.data(), raw.data(), bytes.size());
  }
  return bytes;
}

DenseElementsAttr bytesToElements(RankedTensorType type,
                                  const std::vector<uint8_t> &bytes) {
  if (type.getElementType().isInteger(1)) {
    SmallVector<bool> values(bytes.begin(), bytes.end());
    return DenseElementsAttr::get(type, ArrayRef<bool>(values));
  }
  ArrayRef<char> raw(reinterpret_cast<const char *>(bytes.data()), bytes.size());
  return DenseElementsAttr::getFromRawBuffer(type, raw);
}

SmallVector<Value> engineOperands(Operation *op) {
  auto segments = op->getAttrOfType<DenseI32ArrayAttr>("operandSegmentSizes");
  if (!segments)
    return SmallVector<Value>(op->getOperands());
  SmallVector<Value> operands;
  unsigned next = 0;
  for (int32_t size : segments.asArrayRef()) {
    if (size == 0)
      operands.push_back(Value());
    for (int32_t i = 0; i < size; ++i)
      operands.push_back(op->getOperand(next++));
  }
  return operands;
}

FailureOr<EngineAttrs> engineAttrs(Operation *op) {
  EngineAttrs attrs;
  // Default-valued attributes an op was built without are written too, so
  // that kernels never need to know ODS defaults.
  NamedAttrList all(op->getAttrDictionary());
  if (std::optional<RegisteredOperationName> info = op->getRegisteredInfo())
    info->populateDefaultAttrs(all);
  for (NamedAttribute named : all) {
    std::string name = named.getName().str();
    Attribute attr = named.getValue();
    // Operand positions are encoded in the step's input list instead; the
    // precision pin is the compiler's (the types carry its effect).
    if (name == "operandSegmentSizes" || name == kModelPrecisionAttr)
      continue;
    if (auto b = dyn_cast<BoolAttr>(attr))
      attrs.emplace_back(name, int64_t(b.getValue()));
    else if (auto i = dyn_cast<IntegerAttr>(attr))
      attrs.emplace_back(name, i.getValue().getSExtValue());
    else if (auto f = dyn_cast<FloatAttr>(attr))
      attrs.emplace_back(name, f.getValueAsDouble());
    else if (auto a = dyn_cast<DenseI64ArrayAttr>(attr))
      attrs.emplace_back(name, std::vector<int64_t>(a.asArrayRef().begin(),
                                                    a.asArrayRef().end()));
    else if (auto s = dyn_cast<StringAttr>(attr))
      attrs.emplace_back(name, s.str());
    else if (auto d = dyn_cast<DenseF64ArrayAttr>(attr))
      attrs.emplace_back(name, std::vector<double>(d.asArrayRef().begin(),
                                                   d.asArrayRef().end()));
    else if (auto activation = dyn_cast<ActivationAttr>(attr))
      attrs.emplace_back(name, stringifyActivation(activation.getValue()).str());
    else if (auto layout = dyn_cast<LayoutAttr>(attr))
      attrs.emplace_back(name, stringifyLayout(layout.getValue()).str());
    else
      return op->emitOpError("attribute '") << name << "' has no engine encoding";
  }
  // NamedAttrList keeps names sorted; the engine relies on it.
  return attrs;
}

std::optional<cpu::AttrValue> engineAttr(Operation *op, llvm::StringRef name) {
  // Diagnostics of an attribute the engine cannot hold are engineAttrs' to
  // report, when the writer encodes the step.
  ScopedDiagnosticHandler quiet(op->getContext(), [](Diagnostic &) { return success(); });
  FailureOr<EngineAttrs> all = engineAttrs(op);
  if (failed(all))
    return std::nullopt;
  for (auto &[attrName, value] : *all)
    if (attrName == name)
      return value;
  return std::nullopt;
}

} // namespace tessel
