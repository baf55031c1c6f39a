//===- WmmaGemm.cpp - one GEMM kernel on WMMA fragments, emitted as PTX ---===//
//
// Tiling, outermost first:
//   grid   ceil(M / blockTileM) x ceil(N / blockTileN) blocks (y, x)
//   block  warpsM x warpsN warps; thread (x, y) = (lane + 32 * warpN, warpM)
//   warp   fragsM x fragsN accumulator fragments, a warp tile of
//          (fragsM * m) x (fragsN * n) elements of C
//   K loop steps by the fragment's k: load fragsM A fragments and fragsN B
//          fragments, then fragsM * fragsN mma.sync into the accumulators.
// Warps whose tile lies past M or N (the last block row or column) skip the
// whole computation; the test is uniform across the warp, as wmma requires.
// Accumulators are f32. For an f16 C, each accumulator goes through a per-warp
// f32 slot in shared memory and the lanes convert and store it, because the
// gpu dialect has no f32 -> f16 conversion on MMA fragments.
//
// TODO(next slice): stage A and B block tiles in shared memory (and
// cp.async on sm_80) so that warps of a block share loads.
//
//===----------------------------------------------------------------------===//
#include "WmmaGemm.h"

#include "mlir/Conversion/GPUCommon/GPUCommonPass.h"
#include "mlir/Conversion/LLVMCommon/ConversionTarget.h"
#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Conversion/NVGPUToNVVM/NVGPUToNVVM.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"

#include "llvm/ADT/StringSwitch.h"

#include <mutex>

extern "C" {
void LLVMInitializeNVPTXTargetInfo();
void LLVMInitializeNVPTXTarget();
void LLVMInitializeNVPTXTargetMC();
void LLVMInitializeNVPTXAsmPrinter();
}

using namespace mlir;

namespace tessel::codegen {

static constexpr int64_t kWarpSize = 32;

static bool isSupportedChip(llvm::StringRef chip) {
  return chip == "sm_70" || chip == "sm_75" || chip == "sm_80" ||
         chip == "sm_90";
}

/// Chips the lowering emits PTX for: the WMMA ones and Pascal (the SIMT
/// tier's oldest target).
static bool isLoweringChip(llvm::StringRef chip) {
  return isSupportedChip(chip) || chip == "sm_60" || chip == "sm_90a";
}

std::string ptxFeaturesFor(llvm::StringRef chip) {
  // m32n8k16 and m8n32k16 need PTX ISA 6.1; the NVPTX backend's default for
  // sm_70 (6.0) aborts instruction selection on them.
  return llvm::StringSwitch<std::string>(chip)
      .Case("sm_80", "+ptx70")
      .Case("sm_90", "+ptx78")
      .Case("sm_90a", "+ptx80") // wgmma
      .Default("+ptx63");
}

/// The largest count <= want that divides total.
static int64_t largestDivisorUpTo(int64_t total, int64_t want) {
  for (int64_t d = std::min(want, total); d > 1; --d)
    if (total % d == 0)
      return d;
  return 1;
}

FailureOr<GemmLaunch> planWmmaGemm(Location loc, const GemmKernelSpec &spec) {
  const FragmentShape &f = spec.fragment;
  bool shapeOk = f.k == 16 && ((f.m == 16 && f.n == 16) ||
                               (f.m == 32 && f.n == 8) ||
                               (f.m == 8 && f.n == 32));
  if (!shapeOk)
    return emitError(loc) << "fragment " << f.m << "x" << f.n << "x" << f.k
                          << " is not a WMMA f16 shape; use 16x16x16, "
                             "32x8x16 or 8x32x16";
  if (!isSupportedChip(spec.chip))
    return emitError(loc) << "chip '" << spec.chip
                          << "' has no WMMA codegen; use sm_70, sm_75, sm_80 "
                             "or sm_90";
  if (spec.m <= 0 || spec.n <= 0 || spec.k <= 0 || spec.m % f.m ||
      spec.n % f.n || spec.k % f.k)
    return emitError(loc) << "GEMM " << spec.m << "x" << spec.n << "x"
                          << spec.k << " is not a positive multiple of the "
                          << f.m << "x" << f.n << "x" << f.k
                          << " fragment; pad the operands first";
  if (spec.warpsM < 1 || spec.warpsN < 1 || spec.fragsM < 1 ||
      spec.fragsN < 1 || spec.warpsM * spec.warpsN * kWarpSize > 1024)
    return emitError(loc) << "warps per block " << spec.warpsM << "x"
                          << spec.warpsN << " and fragments per warp "
                          << spec.fragsM << "x" << spec.fragsN
                          << " must be positive and fit 1024 threads";
  GemmLaunch launch;
  // A warp tile never straddles the edge of C: it holds a divisor of the
  // fragment count along each dimension.
  launch.fragsM = largestDivisorUpTo(spec.m / f.m, spec.fragsM);
  launch.fragsN = largestDivisorUpTo(spec.n / f.n, spec.fragsN);
  int64_t blockTileM = spec.warpsM * launch.fragsM * f.m;
  int64_t blockTileN = spec.warpsN * launch.fragsN * f.n;
  launch.grid = {(spec.n + blockTileN - 1) / blockTileN,
                 (spec.m + blockTileM - 1) / blockTileM, 1};
  launch.block = {kWarpSize * spec.warpsN, spec.warpsM, 1};
  if (spec.outF16)
    launch.sharedBytes = spec.warpsM * spec.warpsN * f.m * f.n * 4;
  return launch;
}

void registerCodegenDialects(DialectRegistry &registry) {
  registry.insert<arith::ArithDialect, cf::ControlFlowDialect,
                  gpu::GPUDialect, LLVM::LLVMDialect, memref::MemRefDialect,
                  nvgpu::NVGPUDialect, NVVM::NVVMDialect, scf::SCFDialect,
                  vector::VectorDialect>();
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
}

namespace {
/// Index arithmetic with less noise.
struct IndexMath {
  OpBuilder &b;
  Location loc;
  Value c(int64_t v) { return b.create<arith::ConstantIndexOp>(loc, v); }
  Value add(Value x, Value y) { return b.create<arith::AddIOp>(loc, x, y); }
  Value mul(Value x, int64_t y) {
    return b.create<arith::MulIOp>(loc, x, c(y));
  }
  Value add(Value x, int64_t y) { return y ? add(x, c(y)) : x; }
};
} // namespace

FailureOr<OwningOpRef<ModuleOp>>
buildWmmaGemmModule(MLIRContext &ctx, const GemmKernelSpec &spec) {
  DialectRegistry registry;
  registerCodegenDialects(registry);
  ctx.appendDialectRegistry(registry);
  ctx.loadAllAvailableDialects();

  Location loc = NameLoc::get(StringAttr::get(&ctx, spec.kernelName));
  FailureOr<GemmLaunch> launch = planWmmaGemm(loc, spec);
  if (failed(launch))
    return failure();
  const FragmentShape &f = spec.fragment;
  const int64_t fragsM = launch->fragsM, fragsN = launch->fragsN;

  OpBuilder b(&ctx);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  (*module)->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                     b.getUnitAttr());
  b.setInsertionPointToStart(module->getBody());
  auto gpuModule = b.create<gpu::GPUModuleOp>(loc, "tessel_kernels");
  b.setInsertionPointToStart(gpuModule.getBody());

  Type f16 = b.getF16Type(), f32 = b.getF32Type();
  Type outType = spec.outF16 ? f16 : f32;
  auto aType = MemRefType::get({spec.m, spec.k}, f16);
  auto bType = MemRefType::get({spec.k, spec.n}, f16);
  auto cType = MemRefType::get({spec.m, spec.n}, outType);
  SmallVector<Type> workgroup;
  auto workgroupSpace =
      gpu::AddressSpaceAttr::get(&ctx, gpu::AddressSpace::Workgroup);
  if (spec.outF16)
    workgroup.push_back(MemRefType::get(
        {spec.warpsM * spec.warpsN * f.m, f.n}, f32, AffineMap(),
        workgroupSpace));
  auto func = b.create<gpu::GPUFuncOp>(
      loc, spec.kernelName, b.getFunctionType({aType, bType, cType}, {}),
      workgroup, TypeRange{});
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr(
      {int32_t(launch->block[0]), int32_t(launch->block[1]),
       int32_t(launch->block[2])}));
  Block &entry = func.getBody().front();
  Value A = entry.getArgument(0), B = entry.getArgument(1),
        C = entry.getArgument(2);
  b.setInsertionPointToStart(&entry);
  IndexMath im{b, loc};

  auto aFrag = gpu::MMAMatrixType::get({f.m, f.k}, f16, "AOp");
  auto bFrag = gpu::MMAMatrixType::get({f.k, f.n}, f16, "BOp");
  auto cFrag = gpu::MMAMatrixType::get({f.m, f.n}, f32, "COp");

  Value tx = b.create<gpu::ThreadIdOp>(loc, gpu::Dimension::x);
  Value ty = b.create<gpu::ThreadIdOp>(loc, gpu::Dimension::y);
  Value bx = b.create<gpu::BlockIdOp>(loc, gpu::Dimension::x);
  Value by = b.create<gpu::BlockIdOp>(loc, gpu::Dimension::y);
  Value warp = im.c(kWarpSize);
  Value warpN = b.create<arith::DivUIOp>(loc, tx, warp);
  Value lane = b.create<arith::RemUIOp>(loc, tx, warp);
  Value warpM = ty;
  // The first row and column of this warp's tile of C.
  Value row0 = im.mul(im.add(im.mul(by, spec.warpsM), warpM), fragsM * f.m);
  Value col0 = im.mul(im.add(im.mul(bx, spec.warpsN), warpN), fragsN * f.n);
  Value inside = b.create<arith::AndIOp>(
      loc,
      b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, row0,
                              im.c(spec.m)),
      b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, col0,
                              im.c(spec.n)));

  auto ifOp = b.create<scf::IfOp>(loc, inside, /*withElseRegion=*/false);
  b.setInsertionPointToStart(&ifOp.getThenRegion().front());

  Value zero = b.create<arith::ConstantOp>(loc, b.getF32FloatAttr(0.0f));
  SmallVector<Value> init(fragsM * fragsN,
                          b.create<gpu::SubgroupMmaConstantMatrixOp>(
                              loc, cFrag, zero));
  auto kLoop = b.create<scf::ForOp>(
      loc, im.c(0), im.c(spec.k), im.c(f.k), init,
      [&](OpBuilder &lb, Location l, Value kk, ValueRange accs) {
        IndexMath lm{lb, l};
        SmallVector<Value> as, bs, next;
        for (int64_t i = 0; i < fragsM; ++i)
          as.push_back(lb.create<gpu::SubgroupMmaLoadMatrixOp>(
              l, aFrag, A, ValueRange{lm.add(row0, i * f.m), kk},
              lb.getIndexAttr(spec.k), UnitAttr()));
        for (int64_t j = 0; j < fragsN; ++j)
          bs.push_back(lb.create<gpu::SubgroupMmaLoadMatrixOp>(
              l, bFrag, B, ValueRange{kk, lm.add(col0, j * f.n)},
              lb.getIndexAttr(spec.n), UnitAttr()));
        for (int64_t i = 0; i < fragsM; ++i)
          for (int64_t j = 0; j < fragsN; ++j)
            next.push_back(lb.create<gpu::SubgroupMmaComputeOp>(
                l, cFrag, as[i], bs[j], accs[i * fragsN + j], UnitAttr(),
                UnitAttr()));
        lb.create<scf::YieldOp>(l, next);
      });

  Value slot, slotRow0, fullMask;
  if (spec.outF16) {
    slot = func.getWorkgroupAttributions().front();
    slotRow0 = im.mul(im.add(im.mul(warpM, spec.warpsN), warpN), f.m);
    fullMask = b.create<arith::ConstantOp>(loc, b.getI32IntegerAttr(-1));
  }
  for (int64_t i = 0; i < fragsM; ++i) {
    for (int64_t j = 0; j < fragsN; ++j) {
      Value acc = kLoop.getResult(i * fragsN + j);
      Value r = im.add(row0, i * f.m), cc = im.add(col0, j * f.n);
      if (!spec.outF16) {
        b.create<gpu::SubgroupMmaStoreMatrixOp>(
            loc, acc, C, ValueRange{r, cc}, b.getIndexAttr(spec.n),
            UnitAttr());
        continue;
      }
      b.create<gpu::SubgroupMmaStoreMatrixOp>(
          loc, acc, slot, ValueRange{slotRow0, im.c(0)}, b.getIndexAttr(f.n),
          UnitAttr());
      // The slot is written by the fragment's owner lanes and read by others.
      b.create<NVVM::SyncWarpOp>(loc, fullMask);
      b.create<scf::ForOp>(
          loc, lane, im.c(f.m * f.n), warp, ValueRange{},
          [&](OpBuilder &lb, Location l, Value e, ValueRange) {
            IndexMath lm{lb, l};
            Value er = lb.create<arith::DivUIOp>(l, e, lm.c(f.n));
            Value ec = lb.create<arith::RemUIOp>(l, e, lm.c(f.n));
            Value v = lb.create<memref::LoadOp>(
                l, slot, ValueRange{lm.add(slotRow0, er), ec});
            Value h = lb.create<arith::TruncFOp>(l, f16, v);
            lb.create<memref::StoreOp>(l, h, C,
                                       ValueRange{lm.add(r, er),
                                                  lm.add(cc, ec)});
            lb.create<scf::YieldOp>(l);
          });
      // Every lane has read the slot before the next fragment overwrites it.
      b.create<NVVM::SyncWarpOp>(loc, fullMask);
    }
  }
  b.setInsertionPointToEnd(&entry);
  b.create<gpu::ReturnOp>(loc);

  if (failed(mlir::verify(*module)))
    return failure();
  return module;
}

namespace {
/// A cp.async whose source may be short (the zero fill of out-of-range
/// runs): MLIR 19 builds nvvm.cp.async.shared.global with its cpSize
/// operand, but its translation to LLVM IR drops that operand (it calls the
/// intrinsic without `.s`), so every copy would read all 16 bytes. This one
/// writes the instruction itself: `cp.async.cg.shared.global [dst], [src],
/// 16, srcBytes;`, or .ca (through L1) where the op does not bypass L1 and
/// below 16 bytes, where .cg is not allowed.
struct AsyncCopyWithSourceSize : public ConvertOpToLLVMPattern<nvgpu::DeviceAsyncCopyOp> {
  AsyncCopyWithSourceSize(const LLVMTypeConverter &converter)
      : ConvertOpToLLVMPattern<nvgpu::DeviceAsyncCopyOp>(converter, /*benefit=*/2) {}

  LogicalResult matchAndRewrite(nvgpu::DeviceAsyncCopyOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    if (!op.getSrcElements())
      return failure();
    Location loc = op.getLoc();
    auto dstType = cast<MemRefType>(op.getDst().getType());
    auto srcType = cast<MemRefType>(op.getSrc().getType());
    Value dst = getStridedElementPtr(loc, dstType, adaptor.getDst(), adaptor.getDstIndices(),
                                     rewriter);
    Value src = getStridedElementPtr(loc, srcType, adaptor.getSrc(), adaptor.getSrcIndices(),
                                     rewriter);
    auto i32 = rewriter.getI32Type(), i64 = rewriter.getI64Type();
    src = rewriter.create<LLVM::AddrSpaceCastOp>(
        loc, LLVM::LLVMPointerType::get(op.getContext(), NVVM::kGlobalMemorySpace), src);
    const int64_t elementBytes = srcType.getElementTypeBitWidth() / 8;
    const int64_t bytes = op.getDstElements().getZExtValue() * elementBytes;
    Value count = adaptor.getSrcElements();
    if (count.getType() != i32)
      count = rewriter.create<LLVM::TruncOp>(loc, i32, count);
    Value srcBytes = rewriter.create<LLVM::MulOp>(
        loc, count, rewriter.create<LLVM::ConstantOp>(loc, i32, elementBytes));
    const bool bypassL1 = bytes == 16 && op.getBypassL1();
    std::string text = std::string("cp.async.") + (bypassL1 ? "cg" : "ca") +
                       ".shared.global [$0], [$1], " + std::to_string(bytes) + ", $2;";
    rewriter.create<LLVM::InlineAsmOp>(
        loc, TypeRange{},
        ValueRange{rewriter.create<LLVM::PtrToIntOp>(loc, i64, dst),
                   rewriter.create<LLVM::PtrToIntOp>(loc, i64, src), srcBytes},
        text, "l,l,r,~{memory}", /*has_side_effects=*/true, /*is_align_stack=*/false,
        LLVM::AsmDialectAttr(), ArrayAttr());
    // The token is no value on the GPU (an i32 nothing reads).
    rewriter.replaceOp(op, rewriter.create<LLVM::ConstantOp>(loc, i32, 0).getResult());
    return success();
  }
};

/// The nvgpu ops of the tc-sm80 kernels (ldmatrix, mma.sync, cp.async and
/// its groups) to NVVM, at the index width of the rest of the lowering:
/// MLIR 19's convert-nvgpu-to-nvvm has no index option and would lower
/// their indices to i64 beside the GPU lowering's i32.
struct LowerNvgpuToNvvm
    : public PassWrapper<LowerNvgpuToNvvm, OperationPass<gpu::GPUModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(LowerNvgpuToNvvm)

  explicit LowerNvgpuToNvvm(unsigned indexBitwidth) : indexBitwidth(indexBitwidth) {}
  llvm::StringRef getArgument() const override { return "tessel-lower-nvgpu"; }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<LLVM::LLVMDialect, NVVM::NVVMDialect>();
  }
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    LowerToLLVMOptions options(ctx);
    options.overrideIndexBitwidth(indexBitwidth);
    LLVMTypeConverter converter(ctx, options);
    populateGpuMemorySpaceAttributeConversions(converter, [](gpu::AddressSpace space) {
      return space == gpu::AddressSpace::Workgroup
                 ? unsigned(NVVM::NVVMMemorySpace::kSharedMemorySpace)
                 : 0u;
    });
    // The async tokens are not values on the GPU: i32 placeholders that
    // nothing reads.
    converter.addConversion([&](nvgpu::DeviceAsyncTokenType) -> Type {
      return IntegerType::get(ctx, 32);
    });
    RewritePatternSet patterns(ctx);
    populateNVGPUToNVVMConversionPatterns(converter, patterns);
    patterns.add<AsyncCopyWithSourceSize>(converter);
    LLVMConversionTarget target(*ctx);
    target.addLegalDialect<NVVM::NVVMDialect>();
    target.addIllegalDialect<nvgpu::NVGPUDialect>();
    if (failed(applyPartialConversion(getOperation(), target, std::move(patterns))))
      signalPassFailure();
  }

  unsigned indexBitwidth;
};
} // namespace

static void initNvptxBackend() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
}

FailureOr<std::string> lowerGpuModuleToPtx(ModuleOp module,
                                           llvm::StringRef chip,
                                           int indexBitwidth) {
  initNvptxBackend();
  MLIRContext *ctx = module.getContext();
  if (!isLoweringChip(chip))
    return module.emitError() << "chip '" << chip
                              << "' has no codegen; use sm_60, sm_70, sm_75, "
                                 "sm_80, sm_90 or sm_90a";

  // The pipeline, in order (TOOLCHAIN.md's recipe, in-process).
  PassManager pm(ctx);
  OpPassManager &gpuPm = pm.nest<gpu::GPUModuleOp>();
  gpuPm.addPass(createConvertSCFToCFPass());
  gpuPm.addPass(std::make_unique<LowerNvgpuToNvvm>(indexBitwidth));
  ConvertGpuOpsToNVVMOpsOptions toNvvm;
  toNvvm.useBarePtrCallConv = true; // kernel(A, B, C) takes plain pointers
  toNvvm.indexBitwidth = indexBitwidth;
  gpuPm.addPass(createConvertGpuOpsToNVVMOps(toNvvm));
  gpuPm.addPass(createReconcileUnrealizedCastsPass());
  GpuNVVMAttachTargetOptions target;
  target.chip = chip.str();
  target.features = ptxFeaturesFor(chip);
  pm.addPass(createGpuNVVMAttachTarget(target));
  GpuModuleToBinaryPassOptions toBinary;
  toBinary.compilationTarget = "isa";
  pm.addPass(createGpuModuleToBinaryPass(toBinary));
  if (failed(pm.run(module)))
    return failure();

  std::string ptx;
  int binaries = 0;
  module.walk([&](gpu::BinaryOp binary) {
    ++binaries;
    for (Attribute object : binary.getObjects())
      ptx = llvm::cast<gpu::ObjectAttr>(object).getObject().str();
  });
  // The serializer keeps the C string's terminator; ptxas rejects it.
  while (!ptx.empty() && ptx.back() == '\0')
    ptx.pop_back();
  if (binaries != 1 || ptx.empty())
    return module.emitError()
           << "expected one gpu.module to serialize, found " << binaries;
  return ptx;
}

FailureOr<std::string> emitWmmaGemmPtx(MLIRContext &ctx,
                                       const GemmKernelSpec &spec) {
  FailureOr<OwningOpRef<ModuleOp>> module = buildWmmaGemmModule(ctx, spec);
  if (failed(module))
    return failure();
  return lowerGpuModuleToPtx(**module, spec.chip);
}

} // namespace tessel::codegen
