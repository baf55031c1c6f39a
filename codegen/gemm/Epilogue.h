//===- Epilogue.h - the fused epilogue of the GEMM kernels ----*- C++ -*-===//
//
// What every kernel does with a finished f32 sum, as CUTLASS's
// epilogue/thread/linear_combination* do: alpha *, + bias (conv) or beta * C
// (gemm, C broadcast by strides), + residual, the activation, one rounding
// to the output's type, stored where (m, n) is in range; or, in a split-K
// kernel, the unrounded partial sum stored to the workspace. In the CPU
// tier's order and formulas (runtime/kernels/src/gemm.cpp: epilogueRow,
// activateRow), so the tiers agree.
//
// The tiled kernels hand their accumulators over through shared memory (a
// main loop stages them as f32, storeStaged reads them back): threads then
// take elements in row-major order, so a warp's stores are contiguous, and
// where the output allows, runs of 16 bytes of output (st.global.v4). The
// per-element kernels (direct conv, split-K reduction) call storeElement;
// tc-sm90's TMA stores (TileConfig::tmaStore) finish each sum in registers
// (finish) and store from boxes of their own.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_CODEGEN_GEMM_EPILOGUE_H
#define TESSEL_CODEGEN_GEMM_EPILOGUE_H

#include "gemm/KernelIr.h"

namespace tessel::codegen::gemm {

class Epilogue : public KernelIr {
public:
  Epilogue(mlir::OpBuilder &b, const GemmKernel &kernel, BlockCoords &block)
      : KernelIr(b, kernel, block) {}

  /// The epilogue's operand views (addend, residual, out) from `func`'s
  /// arguments named by `params`.
  void declareViews(mlir::gpu::GPUFuncOp func, llvm::ArrayRef<llvm::StringRef> params);
  /// Split-K: the workspace the partial sums go to, from its argument.
  void declareWorkspace(mlir::Value bytes) { workspace = workspaceView(bytes); }
  /// The f32 staging the main loop hands its accumulators over in:
  /// [stagingRows(t)][stagingLd(t)] at byte `offset` of the shared buffer.
  void declareStaging(mlir::Value sharedBytes, int64_t offset);
  mlir::Value stagingView() const { return staging; }

  /// Every thread takes staged elements in row-major order: `rows` staged
  /// rows, staged row r holding the tile's row tileRow(r); then the epilogue
  /// (or the split-K partial store) of each.
  void storeStaged(int64_t rows, llvm::function_ref<mlir::Value(mlir::Value)> tileRow);
  /// The epilogue of the sum `v` of output element (m, n), stored where
  /// (m, n) is in range.
  /// `valid`, where given, is a further condition of the caller's.
  void storeElement(mlir::Value m, mlir::Value n, mlir::Value v, mlir::Value valid = {});
  /// The epilogue of runLanes() sums `values` from output element (m, n)
  /// along n, stored as one vector where in range (and `valid`);
  /// `residualRun`, where given, is the residual's run (loadResidualRun),
  /// read beforehand.
  void storeRun(mlir::Value m, mlir::Value n, llvm::ArrayRef<mlir::Value> values,
                mlir::Value valid = {}, mlir::Value residualRun = {});
  /// The output of the sum `v` of column n (TileConfig::tmaStore: no
  /// residual, no addend but a conv's bias): alpha, the bias (of the last
  /// column where n is past N: never stored), the activation, the rounding.
  mlir::Value finish(mlir::Value n, mlir::Value v);

private:
  /// Columns per thread of storeStaged: 16 bytes of output, or 1; the
  /// depthwise kernel's lanes.
  int64_t runLanes() const;
  /// The residual's run of output element (m, n), zeros out of range.
  mlir::Value loadResidualRun(mlir::Value m, mlir::Value n);
  /// (m, n) within the output, and `valid` where given.
  mlir::Value runInRange(mlir::Value m, mlir::Value n, mlir::Value valid);
  /// The bound of n: the group's columns, or for the depthwise kernel, whose
  /// runs cross groups (z 0, n the channel), the conv's channels.
  int64_t columns() const;
  void storePartial(mlir::Value m, mlir::Value n, mlir::Value v);
  mlir::Value value(mlir::Value v, mlir::Value addendTerm, mlir::Value residualTerm);
  mlir::Value outAddress(mlir::Value m, mlir::Value n);
  mlir::Value addendAddress(mlir::Value m, mlir::Value n);
  mlir::Value activate(mlir::Value v);
  mlir::Value exp(mlir::Value x);
  mlir::Value reciprocal(mlir::Value x);
  mlir::Value sigmoid(mlir::Value x);
  mlir::Value tanh(mlir::Value x);
  mlir::Value erfc(mlir::Value x);

  mlir::Value addend, residual, out, workspace;
  // The vector views (lanes() > 1), null where the operand is read element
  // by element.
  mlir::Value outRuns, addendRuns, residualRuns;
  mlir::Value staging;
};

} // namespace tessel::codegen::gemm

#endif // TESSEL_CODEGEN_GEMM_EPILOGUE_H
