//===- KernelIr.cpp - the emitter's shared helpers ------------------------===//
//
// The helpers of KernelIr that are more than a line: inline PTX, typed views
// of byte buffers, and the kernel function's parameters and entry.
//
//===----------------------------------------------------------------------===//
#include "gemm/KernelIr.h"

#include "gemm/Staging.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

namespace tessel::codegen::gemm {

Value KernelIr::inlinePtx(llvm::StringRef text, llvm::StringRef constraints,
                          ValueRange operands) {
  return b
      .create<LLVM::InlineAsmOp>(loc, b.getF32Type(), operands, text, constraints,
                                 /*has_side_effects=*/false, /*is_align_stack=*/false,
                                 LLVM::AsmDialectAttr(), ArrayAttr())
      .getResult(0);
}

Type KernelIr::runType(const Staging &s) {
  Type e = elemType(s.type);
  return s.vector == 1 ? e : Type(VectorType::get({s.vector}, e));
}

Value KernelIr::view(Value bytes, Value byteOffset, ArrayRef<int64_t> shape, Type element) {
  auto source = cast<MemRefType>(bytes.getType());
  auto type = MemRefType::get(shape, element, AffineMap(), source.getMemorySpace());
  return b.create<memref::ViewOp>(loc, type, bytes, byteOffset, ValueRange{});
}

Type KernelIr::paramType(llvm::StringRef param) {
  if (param == "workspace")
    return MemRefType::get({int64_t(kernel.workspaceBytes())}, b.getI8Type());
  // A tensor map's address (TileConfig::tma): a pointer, 64 bits whatever
  // the kernel's index width.
  if (param == "a_map" || param == "b_map" || param == "out_map")
    return LLVM::LLVMPointerType::get(b.getContext());
  ElemType type = param == "a"          ? p.a
                  : param == "b"        ? p.b
                  : param == "addend"   ? *p.addend
                  : param == "residual" ? *p.residual
                  : param == "a_scale"  ? *p.aScale
                                        : p.out;
  return MemRefType::get({operandElements(p, param) * elemBytes(type)}, b.getI8Type());
}

void KernelIr::atModuleEnd(gpu::GPUModuleOp module) {
  Block *body = module.getBody();
  if (!body->empty() && body->back().hasTrait<OpTrait::IsTerminator>())
    b.setInsertionPoint(&body->back());
  else
    b.setInsertionPointToEnd(body);
}

gpu::GPUFuncOp KernelIr::beginFunc(gpu::GPUModuleOp module, llvm::StringRef name,
                                   ArrayRef<llvm::StringRef> params, int64_t threads) {
  atModuleEnd(module);
  SmallVector<Type> types;
  for (llvm::StringRef param : params)
    types.push_back(paramType(param));
  auto func = b.create<gpu::GPUFuncOp>(loc, name, b.getFunctionType(types, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr({int32_t(threads), 1, 1}));
  b.setInsertionPointToStart(&func.getBody().front());
  return func;
}

Value KernelIr::workspaceView(Value bytes) {
  return view(bytes, 0, {int64_t(kernel.workspaceBytes() / 4)}, b.getF32Type());
}

Value KernelIr::elementView(gpu::GPUFuncOp func, ArrayRef<llvm::StringRef> params,
                            llvm::StringRef name, ElemType type) {
  Value bytes = func.getArgument(llvm::find(params, name) - params.begin());
  return view(bytes, 0, {operandElements(p, name)}, elemType(type));
}

} // namespace tessel::codegen::gemm
