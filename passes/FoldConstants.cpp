//===- FoldConstants.cpp - --tessel-fold-constants ------------------------===//
//
// Evaluates every op whose operands are all constants with the runtime's CPU
// kernel for that op, so that the compiler and the runtime share one
// definition of each op's semantics.
//
//===----------------------------------------------------------------------===//
#include "Passes.h"
#include "StepEncoding.h"

#include "tessel/cpu_kernels.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"

namespace tessel {
#define GEN_PASS_DEF_FOLDCONSTANTS
#include "Passes.h.inc"
} // namespace tessel

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

/// Folds `op` if every operand is constant; returns whether it did.
bool foldOp(Operation *op, int64_t maxElements) {
  cpu::Kernel kernel = cpu::findKernel(op->getName().stripDialect().str());
  if (!kernel || op->getNumResults() == 0)
    return false;

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
      return false;
    std::optional<Buffer> buffer = bufferFor(cast<RankedTensorType>(operand.getType()));
    if (!buffer)
      return false;
    buffer->bytes = elementsToBytes(constant.getValue());
    inputs.push_back(std::move(*buffer));
  }
  std::vector<Buffer> outputs;
  size_t operandBytes = 0, resultBytes = 0;
  for (const Buffer &b : inputs)
    operandBytes += b.bytes.size();
  bool large = false;
  for (Value result : op->getResults()) {
    auto type = cast<RankedTensorType>(result.getType());
    large |= type.getNumElements() > maxElements;
    std::optional<Buffer> buffer = bufferFor(type);
    if (!buffer)
      return false;
    resultBytes += buffer->bytes.size();
    outputs.push_back(std::move(*buffer));
  }
  // A result smaller than its operands (an f16 copy of f32 weights, a slice)
  // never grows the engine: it folds whatever its size.
  if (large && resultBytes >= operandBytes)
    return false;

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
    return false;
  cpu::Attrs attrs;
  for (auto &[name, value] : *encoded)
    attrs.set(name, value);
  // A kernel that rejects its inputs leaves the op for the engine, where the
  // same error would surface at run time with the op's location.
  if (!kernel(attrs, in, out).ok())
    return false;

  OpBuilder builder(op);
  for (auto [result, buffer] : llvm::zip(op->getResults(), outputs)) {
    auto type = cast<RankedTensorType>(result.getType());
    auto constant = builder.create<ConstantOp>(op->getLoc(), type,
                                               bytesToElements(type, buffer.bytes));
    result.replaceAllUsesWith(constant.getResult());
  }
  llvm::SetVector<Operation *> operandDefs;
  for (Value operand : op->getOperands())
    operandDefs.insert(operand.getDefiningOp());
  op->erase();
  // Constants that only fed the folded op are dead now.
  for (Operation *def : operandDefs)
    if (def && def->use_empty())
      def->erase();
  return true;
}

struct FoldConstantsPass : impl::FoldConstantsBase<FoldConstantsPass> {
  using FoldConstantsBase::FoldConstantsBase;

  void runOnOperation() override {
    // Program order: a folded op's constant feeds the next op's fold.
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (isa<TesselDialect>(op->getDialect()) && !isa<ConstantOp>(op))
        ops.push_back(op);
    });
    for (Operation *op : ops)
      foldOp(op, maxElements);
  }
};

} // namespace
} // namespace tessel
