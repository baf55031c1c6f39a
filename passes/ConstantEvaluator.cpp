//===- ConstantEvaluator.cpp - ops on constants, by the CPU kernels -------===//
//
// Operands and results go through dense row-major byte buffers (StepEncoding),
// the layout the runtime's kernels take; attributes as the engine encodes
// them (engineAttrs), so a kernel sees here exactly what it sees in an engine.
//
//===----------------------------------------------------------------------===//
#include "ConstantEvaluator.h"

#include "StepEncoding.h"
#include "TesselDialect.h"

#include "tessel/cpu_kernels.h"

using namespace mlir;

namespace tessel {
namespace {

struct Buffer {
  std::vector<uint8_t> bytes;
  cpu::TensorView view;
};

std::optional<Buffer> bufferFor(RankedTensorType type) {
  std::optional<int8_t> dtype = engineDType(type.getElementType());
  if (!dtype)
    return std::nullopt;
  Buffer buffer;
  buffer.view.dtype = static_cast<cpu::DType>(*dtype);
  buffer.view.shape.assign(type.getShape().begin(), type.getShape().end());
  buffer.bytes.resize(buffer.view.sizeBytes());
  return buffer;
}

} // namespace

std::optional<SmallVector<DenseElementsAttr>> evaluateConstantOp(Operation *op) {
  cpu::Kernel kernel = cpu::findKernel(op->getName().stripDialect().str());
  if (!kernel || op->getNumResults() == 0)
    return std::nullopt;

  SmallVector<Value> operands = engineOperands(op);
  std::vector<Buffer> inputs;
  inputs.reserve(operands.size());
  for (Value operand : operands) {
    if (!operand) {
      inputs.emplace_back(); // absent optional operand
      continue;
    }
    auto constant = operand.getDefiningOp<ConstantOp>();
    if (!constant)
      return std::nullopt;
    std::optional<Buffer> buffer = bufferFor(cast<RankedTensorType>(operand.getType()));
    if (!buffer)
      return std::nullopt;
    buffer->bytes = elementsToBytes(constant.getValue());
    inputs.push_back(std::move(*buffer));
  }
  std::vector<Buffer> outputs;
  for (Value result : op->getResults()) {
    std::optional<Buffer> buffer = bufferFor(cast<RankedTensorType>(result.getType()));
    if (!buffer)
      return std::nullopt;
    outputs.push_back(std::move(*buffer));
  }

  std::vector<const cpu::TensorView *> in;
  for (auto [operand, b] : llvm::zip(operands, inputs)) {
    b.view.data = b.bytes.data();
    in.push_back(operand ? &b.view : nullptr);
  }
  std::vector<cpu::TensorView *> out;
  for (Buffer &b : outputs) {
    b.view.data = b.bytes.data();
    out.push_back(&b.view);
  }
  FailureOr<EngineAttrs> encoded = engineAttrs(op);
  if (failed(encoded))
    return std::nullopt;
  cpu::Attrs attrs;
  for (auto &[name, value] : *encoded)
    attrs.set(name, value);
  if (!kernel(attrs, in, out).ok())
    return std::nullopt;

  SmallVector<DenseElementsAttr> values;
  for (auto [result, buffer] : llvm::zip(op->getResults(), outputs))
    values.push_back(
        bytesToElements(cast<RankedTensorType>(result.getType()), buffer.bytes));
  return values;
}

} // namespace tessel
