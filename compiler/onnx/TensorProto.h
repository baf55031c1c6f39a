//===- TensorProto.h - ONNX tensor data as MLIR attributes ------*- C++ -*-===//
//
// ONNX data types as MLIR element types, and an ONNX TensorProto (raw_data or
// the typed repeated fields; external data already loaded) decoded into a
// DenseElementsAttr, its size checked against the bounds of Tensors.h first.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_COMPILER_ONNX_TENSORPROTO_H
#define TESSEL_COMPILER_ONNX_TENSORPROTO_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/LogicalResult.h"

#include "onnx/onnx_pb.h"

#include <cstdint>
#include <string>

namespace tessel::importer {

/// "FLOAT", "INT64", ... ("UNKNOWN" for a value outside the enum).
/// The first data type newer than the ONNX library here (1.12: its last is
/// BFLOAT16): float8, 4- and 2-bit types, none of which Tessel has.
constexpr int32_t kFirstNewerDataType = 17;

const char *onnxTypeName(int32_t type);

/// The MLIR element type of an ONNX TensorProto data type; null when tessel
/// has none (strings, complex numbers, 8-bit floats).
mlir::Type elementType(mlir::MLIRContext *ctx, int32_t type);

/// The tensor's value; on failure, `error` says why (its element type, its
/// size, a byte count that does not match its dims, ...).
mlir::FailureOr<mlir::DenseElementsAttr>
tensorToAttr(mlir::MLIRContext *ctx, const onnx::TensorProto &tensor,
             std::string &error);

/// "[1,3,N,?]": a declared ONNX shape, symbolic and unknown dims included.
std::string shapeText(const onnx::TensorShapeProto &shape);

} // namespace tessel::importer

#endif // TESSEL_COMPILER_ONNX_TENSORPROTO_H
