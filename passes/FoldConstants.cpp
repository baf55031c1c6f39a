//===- FoldConstants.cpp - --tessel-fold-constants ------------------------===//
//
// Replaces every op whose operands are all constants by the constants the
// one constant evaluator (ConstantEvaluator.h: the runtime's CPU kernel for
// the op) computes, so that the compiler and the runtime share one definition
// of each op's semantics. What folds is bounded here: large results only where
// they are smaller than their operands.
//
//===----------------------------------------------------------------------===//
#include "ConstantEvaluator.h"
#include "Passes.h"
#include "StepEncoding.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"

namespace tessel {
#define GEN_PASS_DEF_FOLDCONSTANTS
#include "Passes.h.inc"
} // namespace tessel

using namespace mlir;

namespace tessel {

namespace {

/// Whether folding `op` keeps the engine small: results of up to
/// `maxElements` elements fold, and so does a result smaller than its
/// operands (an f16 copy of f32 weights, a slice), or a transpose of a
/// constant only it uses (a weight made K-major: the operand goes), which
/// never grows the engine whatever its size.
bool worthFolding(Operation *op, int64_t maxElements) {
  auto bytesOf = [](Type type) -> std::optional<size_t> {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || !engineDType(tensor.getElementType()))
      return std::nullopt;
    return tensor.getNumElements() * elementBytes(tensor.getElementType());
  };
  size_t operandBytes = 0, resultBytes = 0;
  for (Value operand : op->getOperands()) {
    std::optional<size_t> bytes = bytesOf(operand.getType());
    if (!bytes)
      return false;
    operandBytes += *bytes;
  }
  bool large = false;
  for (Value result : op->getResults()) {
    std::optional<size_t> bytes = bytesOf(result.getType());
    if (!bytes)
      return false;
    large |= cast<RankedTensorType>(result.getType()).getNumElements() > maxElements;
    resultBytes += *bytes;
  }
  bool moves = isa<TransposeOp>(op) && op->getOperand(0).hasOneUse();
  return !large || resultBytes < operandBytes || moves;
}

/// Folds `op` if every operand is constant; returns whether it did.
bool foldOp(Operation *op, int64_t maxElements) {
  if (!worthFolding(op, maxElements))
    return false;
  // A kernel that rejects its inputs leaves the op for the engine, where the
  // same error would surface at run time with the op's location.
  std::optional<SmallVector<DenseElementsAttr>> values = evaluateConstantOp(op);
  if (!values)
    return false;

  OpBuilder builder(op);
  for (auto [result, value] : llvm::zip(op->getResults(), *values)) {
    auto constant = builder.create<ConstantOp>(op->getLoc(), result.getType(), value);
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
