//===- ModelLoader.h - an ONNX model read, completed, checked ---*- C++ -*-===//
//
// The importer's first half: reads the protobuf, loads external data from
// beside the model (bounds-checked, never outside its directory), turns
// frozen inputs into initializers, rejects default-domain opsets newer than
// the op table implements, then runs ONNX's checker and shape inference (with
// data propagation) in a forked child process, since ONNX 1.12's inference
// crashes on some malformed nodes and a compiler must report bad input, not
// die of it.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_COMPILER_ONNX_MODELLOADER_H
#define TESSEL_COMPILER_ONNX_MODELLOADER_H

#include "Importer.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/LogicalResult.h"

#include "onnx/onnx_pb.h"

#include <string>
#include <unordered_map>

namespace tessel::importer {

/// Data that ONNX shape inference propagated through shape computations, by
/// value name.
using PropagatedData = std::unordered_map<std::string, onnx::TensorShapeProto>;

/// Whether `domain` names the default ONNX domain ("" or "ai.onnx").
bool isDefaultDomain(const std::string &domain);

/// Reads the model and makes it self-contained: external data loaded,
/// frozen inputs turned into initializers. Errors are emitted at the file's
/// location; `unsupported` is set when the model is valid but beyond tessel
/// (a default-domain opset above kMaxOpset).
mlir::LogicalResult loadModel(mlir::MLIRContext *ctx, const std::string &path,
                              const ImportOptions &options,
                              onnx::ModelProto &model, bool &unsupported);

/// Upgrades a model older than kMinOpset with ONNX's version converter
/// (libonnx's version_conversion, in a child process that may run `seconds`)
/// when one of its nodes has an op whose semantics changed since the model's
/// opset (Add's broadcast attribute, BatchNormalization's consumed_inputs,
/// ...); a model whose ops are unchanged since is left as it is. Returns the
/// error, or "" on success.
std::string upgradeOldOpset(onnx::ModelProto &model, unsigned seconds);

/// Runs the ONNX checker, then shape inference with data propagation, in a
/// child process that may run `seconds` (in this one where fork fails).
/// Fills in `model`'s value_info and output types and `propagated`. Returns
/// the error, or "" when the model is valid.
std::string checkAndInferIsolated(onnx::ModelProto &model,
                                  PropagatedData &propagated, unsigned seconds);

} // namespace tessel::importer

#endif // TESSEL_COMPILER_ONNX_MODELLOADER_H
