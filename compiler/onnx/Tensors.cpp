//===- Tensors.cpp - shapes and constant values in the ONNX importer ------===//
#include "Tensors.h"

#include "mlir/Dialect/Traits.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <functional>
#include <limits>
#include <numeric>

using namespace mlir;

namespace tessel::importer {

std::string shapeText(ArrayRef<int64_t> shape) {
  std::string text = "[";
  for (auto [i, d] : llvm::enumerate(shape))
    text += (i ? "," : "") + std::to_string(d);
  return text + "]";
}

std::string typeText(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << type;
  return os.str();
}

int64_t product(ArrayRef<int64_t> dims) {
  return std::accumulate(dims.begin(), dims.end(), int64_t{1},
                         std::multiplies<int64_t>());
}

bool isSupportedShape(ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0 || d > kMaxExtent || (d > 0 && count > kMaxElements / d))
      return false;
    count *= d;
  }
  return true;
}

std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

std::optional<SmallVector<int64_t>> broadcastShapes(ArrayRef<int64_t> a,
                                                    ArrayRef<int64_t> b) {
  SmallVector<int64_t> result;
  if (!OpTrait::util::getBroadcastedShape(a, b, result))
    return std::nullopt;
  return result;
}

std::optional<SmallVector<int64_t>> integerValues(DenseElementsAttr attr) {
  auto type = dyn_cast<IntegerType>(attr.getElementType());
  if (!type)
    return std::nullopt;
  SmallVector<int64_t> values;
  values.reserve(attr.getNumElements());
  for (const APInt &v : attr.getValues<APInt>())
    values.push_back(type.isUnsigned() || type.getWidth() == 1
                         ? static_cast<int64_t>(v.getZExtValue())
                         : v.getSExtValue());
  return values;
}

SmallVector<double> doubleValues(DenseElementsAttr attr) {
  SmallVector<double> values;
  if (isa<FloatType>(attr.getElementType())) {
    for (APFloat v : attr.getValues<APFloat>()) {
      bool lost;
      v.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
      values.push_back(v.convertToDouble());
    }
  } else if (std::optional<SmallVector<int64_t>> integers = integerValues(attr)) {
    // Held here: a range-for over `*integerValues(attr)` would read the
    // optional after its end (found by the ONNX fuzzer under ASan).
    for (int64_t v : *integers)
      values.push_back(static_cast<double>(v));
  }
  return values;
}

DenseElementsAttr integerAttr(RankedTensorType type, ArrayRef<int64_t> values) {
  unsigned width = type.getElementType().getIntOrFloatBitWidth();
  SmallVector<APInt> bits;
  bits.reserve(values.size());
  for (int64_t v : values)
    bits.push_back(
        APInt(64, static_cast<uint64_t>(v), /*isSigned=*/true).trunc(width));
  return DenseElementsAttr::get(type, bits);
}

DenseElementsAttr numericAttr(RankedTensorType type, ArrayRef<double> values) {
  if (auto floatType = dyn_cast<FloatType>(type.getElementType())) {
    SmallVector<APFloat> floats;
    floats.reserve(values.size());
    for (double v : values) {
      APFloat f(v);
      bool lost;
      f.convert(floatType.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
      floats.push_back(f);
    }
    return DenseElementsAttr::get(type, floats);
  }
  // Saturated into int64: converting a double beyond its range (2^63 from
  // an int64 attribute's round trip) is undefined; NaN is 0.
  SmallVector<int64_t> ints;
  for (double v : values)
    ints.push_back(std::isnan(v)      ? 0
                   : v >= 0x1p63      ? std::numeric_limits<int64_t>::max()
                   : v < -0x1p63      ? std::numeric_limits<int64_t>::min()
                                      : static_cast<int64_t>(v));
  return integerAttr(type, ints);
}

} // namespace tessel::importer
