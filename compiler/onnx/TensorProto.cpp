//===- TensorProto.cpp - ONNX tensor data as MLIR attributes --------------===//
#include "TensorProto.h"

#include <iterator>

#include "Tensors.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

#include <vector>

using namespace mlir;

namespace tessel::importer {

std::string shapeText(const onnx::TensorShapeProto &shape) {
  std::string text = "[";
  for (int i = 0; i < shape.dim_size(); ++i) {
    const auto &dim = shape.dim(i);
    text += i ? "," : "";
    text += dim.has_dim_value()   ? std::to_string(dim.dim_value())
            : dim.has_dim_param() ? dim.dim_param()
                                  : std::string("?");
  }
  return text + "]";
}

const char *onnxTypeName(int32_t type) {
  if (onnx::TensorProto_DataType_IsValid(type))
    return onnx::TensorProto_DataType_Name(type).c_str();
  // The data types of ONNX 1.14 and later, which the protobuf of the ONNX
  // library here (1.12) does not name.
  static const char *const newer[] = {"FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2",
                                      "FLOAT8E5M2FNUZ", "UINT4", "INT4", "FLOAT4E2M1",
                                      "FLOAT8E8M0", "UINT2", "INT2"};
  if (type >= kFirstNewerDataType && type < kFirstNewerDataType + int32_t(std::size(newer)))
    return newer[type - kFirstNewerDataType];
  return "UNKNOWN";
}

Type elementType(MLIRContext *ctx, int32_t type) {
  Builder b(ctx);
  switch (type) {
  case onnx::TensorProto::FLOAT:
    return b.getF32Type();
  case onnx::TensorProto::FLOAT16:
    return b.getF16Type();
  case onnx::TensorProto::DOUBLE:
    return b.getF64Type();
  case onnx::TensorProto::BFLOAT16:
    return b.getBF16Type();
  case onnx::TensorProto::BOOL:
    return b.getI1Type();
  case onnx::TensorProto::INT8:
    return b.getIntegerType(8);
  case onnx::TensorProto::INT16:
    return b.getIntegerType(16);
  case onnx::TensorProto::INT32:
    return b.getIntegerType(32);
  case onnx::TensorProto::INT64:
    return b.getIntegerType(64);
  case onnx::TensorProto::UINT8:
    return b.getIntegerType(8, /*isSigned=*/false);
  case onnx::TensorProto::UINT16:
    return b.getIntegerType(16, false);
  case onnx::TensorProto::UINT32:
    return b.getIntegerType(32, false);
  case onnx::TensorProto::UINT64:
    return b.getIntegerType(64, false);
  default:
    return {};
  }
}

namespace {

/// Appends `value`'s little-endian bytes (the layout of ONNX raw_data and of
/// MLIR's dense storage on the little-endian hosts Tessel runs on).
template <typename T> void appendBytes(std::vector<char> &bytes, T value) {
  const char *p = reinterpret_cast<const char *>(&value);
  bytes.insert(bytes.end(), p, p + sizeof(T));
}

} // namespace

FailureOr<DenseElementsAttr> tensorToAttr(MLIRContext *ctx,
                                          const onnx::TensorProto &tensor,
                                          std::string &error) {
  Type element = elementType(ctx, tensor.data_type());
  if (!element) {
    error = std::string("element type ") + onnxTypeName(tensor.data_type()) +
            " (tessel holds float, integer and bool tensors)";
    return failure();
  }
  SmallVector<int64_t> dims(tensor.dims().begin(), tensor.dims().end());
  if (!isSupportedShape(dims)) {
    error = "dims " + shapeText(dims) + " are negative or too large";
    return failure();
  }
  int64_t count = product(dims);
  if (tensor.has_segment()) {
    error = "segmented tensors are not supported";
    return failure();
  }
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL) {
    error = "external data was not loaded";
    return failure();
  }
  auto type = RankedTensorType::get(dims, element);
  bool isBool = element.isInteger(1);
  size_t width = isBool ? 1 : element.getIntOrFloatBitWidth() / 8;

  auto fromBytes = [&](ArrayRef<char> bytes) -> FailureOr<DenseElementsAttr> {
    if (bytes.size() != static_cast<size_t>(count) * width) {
      error = "holds " + std::to_string(bytes.size()) + " bytes, expected " +
              std::to_string(count * width) + " for " + shapeText(dims);
      return failure();
    }
    if (isBool) {
      SmallVector<bool> values;
      for (char c : bytes)
        values.push_back(c != 0);
      return DenseElementsAttr::get(type, ArrayRef<bool>(values));
    }
    return DenseElementsAttr::getFromRawBuffer(type, bytes);
  };

  if (tensor.has_raw_data())
    return fromBytes(
        ArrayRef<char>(tensor.raw_data().data(), tensor.raw_data().size()));

  // Not reserved from the dims: they may claim far more than the typed field
  // holds (a fuzzed 2^32-element dims had 16 GiB reserved), and fromBytes
  // refuses the mismatch.
  std::vector<char> bytes;
  switch (tensor.data_type()) {
  case onnx::TensorProto::FLOAT:
    for (float v : tensor.float_data())
      appendBytes(bytes, v);
    break;
  case onnx::TensorProto::DOUBLE:
    for (double v : tensor.double_data())
      appendBytes(bytes, v);
    break;
  case onnx::TensorProto::INT64:
    for (int64_t v : tensor.int64_data())
      appendBytes(bytes, v);
    break;
  case onnx::TensorProto::UINT32:
    for (uint64_t v : tensor.uint64_data())
      appendBytes(bytes, static_cast<uint32_t>(v));
    break;
  case onnx::TensorProto::UINT64:
    for (uint64_t v : tensor.uint64_data())
      appendBytes(bytes, v);
    break;
  case onnx::TensorProto::INT32:
    for (int32_t v : tensor.int32_data())
      appendBytes(bytes, v);
    break;
  case onnx::TensorProto::INT16:
  case onnx::TensorProto::UINT16:
  case onnx::TensorProto::FLOAT16: // bit patterns in int32_data
  case onnx::TensorProto::BFLOAT16:
    for (int32_t v : tensor.int32_data())
      appendBytes(bytes, static_cast<uint16_t>(v));
    break;
  case onnx::TensorProto::INT8:
  case onnx::TensorProto::UINT8:
  case onnx::TensorProto::BOOL:
    for (int32_t v : tensor.int32_data())
      appendBytes(bytes, static_cast<uint8_t>(v));
    break;
  default:
    break;
  }
  return fromBytes(bytes);
}

} // namespace tessel::importer
