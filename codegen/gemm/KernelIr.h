//===- KernelIr.h - what every piece of the GEMM emitter builds with -*- C++ -*-===//
//
// The base of the emitter's pieces (operand gathers, main loops, epilogue,
// the per-element kernels): the builder and the kernel's location, index
// arithmetic that folds where constant, f32 arithmetic, typed views of the
// byte buffers kernels take, and the kernel function's scaffolding (its
// parameters' types, its entry, its operand views). The block's coordinates
// (BlockCoords) are built once by the kernel being emitted and read by every
// piece through one shared struct.
//
// Every piece builds its ops through these helpers, in a fixed order: the
// kernels' IR (and PTX) is a function of the problem and the tiling only.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_CODEGEN_GEMM_KERNELIR_H
#define TESSEL_CODEGEN_GEMM_KERNELIR_H

#include "GemmKernel.h"
#include "gemm/Common.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"

namespace tessel::codegen::gemm {

struct Staging;

/// Where the block is, as values built at the top of the kernel; the pieces
/// hold a reference, so a value set later (the per-element kernels' z) is
/// seen by all.
struct BlockCoords {
  mlir::Value tid;    ///< thread index in the block (x)
  mlir::Value z;      ///< the matmul batch or conv group
  mlir::Value m0, n0; ///< tiled kernels: the block tile's first row, column
  mlir::Value split;  ///< tiled kernels: this block's K split, else 0
};

class KernelIr {
public:
  KernelIr(mlir::OpBuilder &b, const GemmKernel &kernel, BlockCoords &block)
      : b(b), loc(mlir::NameLoc::get(b.getStringAttr(kernel.name))), kernel(kernel),
        p(kernel.problem), t(kernel.tiles), block(block) {}

protected:
  using Value = mlir::Value;
  using Type = mlir::Type;

  /// Where the 16-byte run of `s`'s tile at (rowLocal, kLocal) (row: m or
  /// n) lies in its shared view (element indices): padded rows, or the
  /// 128-byte swizzles (rowLocal, kLocal multiples of the run along their
  /// contiguous dimension). The one place of the layouts' index math
  /// (Staging.cpp): the copies into a tile and the fragment loads out of it.
  llvm::SmallVector<Value> sharedIndex(const Staging &s, Value rowLocal, Value kLocal);

  // Index arithmetic, folded where constant.
  Value c(int64_t v) { return b.create<mlir::arith::ConstantIndexOp>(loc, v); }
  Value add(Value x, Value y) { return b.createOrFold<mlir::arith::AddIOp>(loc, x, y); }
  Value add(Value x, int64_t y) { return y ? add(x, c(y)) : x; }
  Value sub(Value x, int64_t y) {
    return y ? b.createOrFold<mlir::arith::SubIOp>(loc, x, c(y)) : x;
  }
  Value mul(Value x, Value y) { return b.createOrFold<mlir::arith::MulIOp>(loc, x, y); }
  Value mul(Value x, int64_t y) { return y == 1 ? x : mul(x, c(y)); }
  Value div(Value x, int64_t y) {
    return y == 1 ? x : b.createOrFold<mlir::arith::DivUIOp>(loc, x, c(y));
  }
  Value rem(Value x, int64_t y) {
    return y == 1 ? c(0) : b.createOrFold<mlir::arith::RemUIOp>(loc, x, c(y));
  }
  Value cmp(mlir::arith::CmpIPredicate pred, Value x, int64_t y) {
    return b.createOrFold<mlir::arith::CmpIOp>(loc, pred, x, c(y));
  }
  Value below(Value x, int64_t y) { return cmp(mlir::arith::CmpIPredicate::ult, x, y); }
  Value both(Value x, Value y) {
    if (!x)
      return y;
    if (!y)
      return x;
    return b.createOrFold<mlir::arith::AndIOp>(loc, x, y);
  }
  // f32 arithmetic.
  Value f(float v) { return b.create<mlir::arith::ConstantOp>(loc, b.getF32FloatAttr(v)); }
  Value fadd(Value x, Value y) { return b.create<mlir::arith::AddFOp>(loc, x, y); }
  Value fsub(Value x, Value y) { return b.create<mlir::arith::SubFOp>(loc, x, y); }
  Value fmul(Value x, Value y) { return b.create<mlir::arith::MulFOp>(loc, x, y); }
  Value fdiv(Value x, Value y) { return b.create<mlir::arith::DivFOp>(loc, x, y); }
  Value fcmp(mlir::arith::CmpFPredicate pred, Value x, Value y) {
    return b.create<mlir::arith::CmpFOp>(loc, pred, x, y);
  }
  Value select(Value cond, Value x, Value y) {
    return b.create<mlir::arith::SelectOp>(loc, cond, x, y);
  }
  Value fneg(Value x) { return b.create<mlir::arith::NegFOp>(loc, x); }
  /// x * y + z with one rounding (fma.rn.f32).
  Value fma(Value x, Value y, Value z) { return b.create<mlir::LLVM::FMAOp>(loc, x, y, z); }
  Value fabs(Value x) {
    return select(fcmp(mlir::arith::CmpFPredicate::OLT, x, f(0.0f)), fneg(x), x);
  }
  Value toF32(Value v) {
    return v.getType().isF32() ? v : b.create<mlir::arith::ExtFOp>(loc, b.getF32Type(), v);
  }
  Value inlinePtx(llvm::StringRef text, llvm::StringRef constraints, mlir::ValueRange operands);

  Type elemType(ElemType type) {
    return type == ElemType::F16 ? Type(b.getF16Type()) : Type(b.getF32Type());
  }
  /// A run of a staged operand: a vector of `s.vector` elements, or one.
  Type runType(const Staging &s);
  /// A typed view of a byte buffer.
  Value view(Value bytes, Value byteOffset, llvm::ArrayRef<int64_t> shape, Type element);
  Value view(Value bytes, int64_t byteOffset, llvm::ArrayRef<int64_t> shape, Type element) {
    return view(bytes, c(byteOffset), shape, element);
  }

  // The kernel function.
  /// The builder at the end of `module`'s body (before its terminator).
  void atModuleEnd(mlir::gpu::GPUModuleOp module);
  /// The byte buffer type of a parameter of either kernel (tiled or
  /// per-element).
  Type paramType(llvm::StringRef param);
  /// A new kernel function with `params`, the builder inside it.
  mlir::gpu::GPUFuncOp beginFunc(mlir::gpu::GPUModuleOp module, llvm::StringRef name,
                                 llvm::ArrayRef<llvm::StringRef> params, int64_t threads);
  /// The f32 element view of the workspace argument.
  Value workspaceView(Value bytes);
  /// The element view of `func`'s argument `name` of `params`.
  Value elementView(mlir::gpu::GPUFuncOp func, llvm::ArrayRef<llvm::StringRef> params,
                    llvm::StringRef name, ElemType type);

  mlir::OpBuilder &b;
  mlir::Location loc;
  const GemmKernel &kernel;
  const GemmProblem &p;
  const TileConfig &t;
  BlockCoords &block;
};

} // namespace tessel::codegen::gemm

#endif // TESSEL_CODEGEN_GEMM_KERNELIR_H
