//===- Kernel.cpp - the tiled GEMM kernel, assembled from its pieces ------===//
//
// The kernel, outermost first:
//   grid    x: ceil(M / blockM) row tiles, y: ceil(N / blockN) column tiles,
//           z: matmul batches or conv groups (times the K splits)
//   prologue  the block's threads gather K step 0's A tile (blockM x
//           blockK) and B tile (blockN x blockK) from the operands into
//           shared buffer 0, zero where a row, a column or k is out of range
//           and where the conv window reads padding; barrier.
//   K loop  software-pipelined over two shared buffers; step i:
//     prefetch  where a step i+1 exists, each thread loads its runs of it
//           from global memory into registers (the loads are in flight
//           during the math);
//     math  the main loop of the tier on buffer i % 2 (MainLoop.h):
//       tc    each warp loads its fragsM A and fragsN B fragments
//             (gpu.subgroup_mma_load_matrix) per k16 and accumulates fragsM
//             x fragsN f32 fragments (gpu.subgroup_mma_compute);
//       simt  each thread accumulates a microM x microN register tile with
//             scalar f32 FMAs;
//     store the prefetched runs into buffer (i+1) % 2, which no warp reads
//           in step i; barrier (one per step: it both publishes buffer
//           (i+1) % 2 and frees buffer i % 2 for step i+1's stores).
//   epilogue  the accumulators go through shared memory as f32 (tc: one band
//           of fragment rows at a time, simt: the whole tile), then every
//           thread takes elements in row-major order (coalesced stores):
//           alpha *, + bias / beta * C, + residual, activation, one rounding
//           to the result's type, stored where the element is in range.
//
// The pieces: the gathers and shared layout (Staging.h), the main loop of
// the tier (MainLoop.h), the epilogue (Epilogue.h); this file gives them
// the block's coordinates, the shared memory and the operand views, in an
// order fixed once, and holds the launch shape of a GemmKernel and the
// module builder. The direct conv and split-K's reduction are in
// PerElementKernels.cpp.
//
//===----------------------------------------------------------------------===//
#include "GemmKernel.h"

#include "WmmaGemm.h"
#include "gemm/Common.h"
#include "gemm/Epilogue.h"
#include "gemm/MainLoop.h"
#include "gemm/PerElementKernels.h"
#include "gemm/Staging.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

#include <algorithm>

using namespace mlir;

namespace tessel::codegen {

using namespace gemm;

//===----------------------------------------------------------------------===//
// The launch
//===----------------------------------------------------------------------===//

std::array<uint32_t, 3> GemmKernel::grid() const {
  if (tiles.dwLanes) {
    const ConvShape &cv = problem.conv;
    const int64_t slabs = cv.outC / (tiles.dwLanes * tiles.dwVectors);
    return {uint32_t(slabs * ceilDiv(tiles.depthwiseRuns(cv), tiles.dwRows)), 1, 1};
  }
  if (tiles.direct)
    return {uint32_t(ceilDiv(problem.m * problem.conv.outC, kElementwiseThreads)), 1, 1};
  if (tiles.persistent)
    return {uint32_t(std::min(persistentTiles(), tiles.persistent)), 1, 1};
  return {uint32_t(ceilDiv(problem.m, tiles.blockM)), uint32_t(ceilDiv(problem.n, tiles.blockN)),
          uint32_t(problem.batch * tiles.splitK)};
}

int64_t GemmKernel::persistentTiles() const {
  return ceilDiv(problem.m, tiles.blockM) * ceilDiv(problem.n, tiles.blockN) * problem.batch;
}

uint64_t GemmKernel::workspaceBytes() const {
  if (!splitsK())
    return 0;
  return uint64_t(problem.batch) * tiles.splitK * problem.m * problem.n * 4;
}

std::array<uint32_t, 3> GemmKernel::reduceGrid() const {
  return {uint32_t(ceilDiv(problem.batch * problem.m * problem.n, kElementwiseThreads)), 1, 1};
}

std::array<uint32_t, 3> GemmKernel::reduceBlock() const {
  return {uint32_t(kElementwiseThreads), 1, 1};
}

/// `params`, then the epilogue's operands: "addend" and "residual" where the
/// problem has them, then "out".
static llvm::SmallVector<llvm::StringRef>
withEpilogueOperands(const GemmProblem &p, llvm::SmallVector<llvm::StringRef> params) {
  if (p.addend)
    params.push_back("addend");
  if (p.residual)
    params.push_back("residual");
  params.push_back("out");
  return params;
}

llvm::SmallVector<llvm::StringRef> GemmKernel::reduceParameters() const {
  return withEpilogueOperands(problem, {"workspace"});
}

std::array<uint32_t, 3> GemmKernel::block() const { return {uint32_t(tiles.threads()), 1, 1}; }

uint32_t GemmKernel::sharedBytes() const {
  if (tiles.direct ||
      (tiles.tier != GemmTier::TensorCoreSm80 && tiles.tier != GemmTier::TensorCoreSm90))
    return 0;
  return uint32_t(sharedPlan(problem, tiles).bytes);
}

int GemmKernel::alignment() const {
  int64_t align = std::max(elemBytes(problem.a), elemBytes(problem.b));
  if (tiles.dwLanes) // runs of dwLanes channels of the input, output, bias and residual
    align = std::max(align, tiles.dwLanes * elemBytes(problem.a));
  if (!tiles.direct) {
    SharedPlan plan = sharedPlan(problem, tiles);
    align = std::max(plan.a.vector * elemBytes(problem.a), plan.b.vector * elemBytes(problem.b));
  }
  for (ElemType t : {problem.out, problem.addend.value_or(problem.out),
                     problem.residual.value_or(problem.out)})
    align = std::max(align, elemBytes(t));
  return int(align);
}

KernelArg::TensorMap GemmKernel::tensorMap(llvm::StringRef param) const {
  KernelArg::TensorMap map;
  const bool isA = param == "a_map";
  if (param == "out_map") { // [M][N] f16 rows (a conv's: its one group's channels)
    map.dims = {uint64_t(problem.n), uint64_t(problem.m)};
    map.strides = {uint64_t(problem.n) * elemBytes(problem.out)};
    map.box = {64, uint32_t(tiles.fragM)};
    return map;
  }
  if (isA && problem.im2col()) {
    const ConvShape &cv = problem.conv;
    const uint64_t pixel = uint64_t(cv.inC) * elemBytes(problem.a);
    const Im2colBox box = im2colBox(cv);
    map.dims = {uint64_t(cv.inC), uint64_t(cv.inW), uint64_t(cv.inH), uint64_t(cv.batch)};
    map.strides = {pixel, pixel * cv.inW, pixel * cv.inW * cv.inH};
    map.box = {uint32_t(tiles.blockK), uint32_t(tiles.blockM)};
    map.lowerCorner = {int32_t(box.lowerW), int32_t(box.lowerH)};
    map.upperCorner = {int32_t(box.upperW), int32_t(box.upperH)};
    map.elementStrides = {1, uint32_t(cv.strideW), uint32_t(cv.strideH), 1};
    return map;
  }
  const uint64_t rows = uint64_t(isA ? problem.m : problem.n);
  const uint64_t elem = elemBytes(isA ? problem.a : problem.b);
  const Staging staging = stagingFor(problem, tiles, isA);
  if (!staging.kContiguous) { // MN-major: rows of M (N) for each k, boxes of 64 by blockK
    map.dims = {rows, uint64_t(problem.k)};
    map.strides = {rows * elem};
    map.box = {64, uint32_t(tiles.blockK)};
    return map;
  }
  map.dims = {uint64_t(problem.k), rows};
  map.strides = {uint64_t(problem.k) * elem};
  map.box = {uint32_t(tiles.blockK), uint32_t(isA ? tiles.blockM : tiles.blockN)};
  return map;
}

llvm::SmallVector<llvm::StringRef> GemmKernel::parameters() const {
  llvm::SmallVector<llvm::StringRef> operands = {"a", "b"};
  if (tiles.tma)
    operands.insert(operands.begin(), {"a_map", "b_map"});
  if (tiles.tmaStore)
    operands.insert(operands.begin() + 2, "out_map");
  if (problem.aScale)
    operands.push_back("a_scale");
  if (splitsK()) {
    operands.push_back("workspace");
    return operands;
  }
  return withEpilogueOperands(problem, operands);
}

//===----------------------------------------------------------------------===//
// The tiled kernel
//===----------------------------------------------------------------------===//

namespace {

class TiledKernel : public KernelIr {
public:
  TiledKernel(OpBuilder &b, const GemmKernel &kernel, BlockCoords &coords)
      : KernelIr(b, kernel, coords), plan(sharedPlan(kernel.problem, kernel.tiles)),
        gather(b, kernel, coords, plan), epilogue(b, kernel, coords),
        mainLoop(makeMainLoop(b, kernel, coords, plan)) {}

  LogicalResult build(gpu::GPUModuleOp module);

private:
  SharedPlan plan;
  OperandGather gather;
  Epilogue epilogue;
  std::unique_ptr<MainLoop> mainLoop;
};

LogicalResult TiledKernel::build(gpu::GPUModuleOp module) {
  OpBuilder::InsertionGuard guard(b);
  atModuleEnd(module);
  MLIRContext *ctx = b.getContext();
  auto workgroup = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);

  // The block's shared memory: one aligned byte buffer, viewed as the
  // buffers of the A and B tiles during the K loop and as the f32 staging
  // in the epilogue; static (at most 48 KiB), or dynamic for tc-sm80, whose
  // stages ask for more (the launch's shared bytes, GemmKernel::sharedBytes).
  const bool dynamicShared = kernel.sharedBytes() > 0;
  std::string sharedName = kernel.name + "_shared";
  auto sharedType = MemRefType::get({plan.bytes}, b.getI8Type(), AffineMap(), workgroup);
  if (!dynamicShared)
    b.create<memref::GlobalOp>(loc, sharedName, b.getStringAttr("private"), sharedType,
                               Attribute(), /*constant=*/false,
                               b.getI64IntegerAttr(kSharedAlignment));

  SmallVector<llvm::StringRef> params = kernel.parameters();
  gpu::GPUFuncOp func = beginFunc(module, kernel.name, params, t.threads());
  mainLoop->decorate(func);

  block.tid = b.create<gpu::ThreadIdOp>(loc, gpu::Dimension::x);
  const int64_t rows = ceilDiv(p.m, t.blockM), cols = ceilDiv(p.n, t.blockN);
  // The tile of rank `rank` (row tiles fastest): with the raster, in
  // groups of rasterM row tiles, each group's tiles row-fastest (the last
  // group may have fewer rows).
  auto placeTile = [&](Value rank) {
    Value rowTile, colTile;
    if (t.rasterM == 0) {
      rowTile = rem(rank, rows);
      colTile = div(rank, rows);
    } else {
      const int64_t group = t.rasterM, tail = rows % group;
      Value groupIndex = div(rank, group * cols), local = rem(rank, group * cols);
      Value first = mul(groupIndex, group);
      rowTile = add(first, rem(local, group));
      colTile = div(local, group);
      if (tail) {
        Value last = cmp(arith::CmpIPredicate::eq, groupIndex, rows / group);
        rowTile = select(last, add(first, rem(local, tail)), rowTile);
        colTile = select(last, div(local, tail), colTile);
      }
    }
    block.m0 = mul(rowTile, t.blockM);
    block.n0 = mul(colTile, t.blockN);
  };
  Value blockX = b.create<gpu::BlockIdOp>(loc, gpu::Dimension::x);
  if (t.persistent) {
    // Tile rank r: batch r / (rows * cols), then its tiles as above.
    block.split = c(0);
  } else {
    // Block (x, y) takes the tile of rank x + y * rows; grid z: batch
    // (matmul batches, conv groups) times K splits.
    Value colTile = b.create<gpu::BlockIdOp>(loc, gpu::Dimension::y);
    if (t.rasterM > 0) {
      placeTile(add(blockX, mul(colTile, rows)));
    } else {
      block.m0 = mul(blockX, t.blockM);
      block.n0 = mul(colTile, t.blockN);
    }
    Value zSplit = p.batch * t.splitK > 1
                       ? b.create<gpu::BlockIdOp>(loc, gpu::Dimension::z).getResult()
                       : c(0);
    block.z = div(zSplit, t.splitK);
    block.split = rem(zSplit, t.splitK);
  }

  // The operands' views, the split-K workspace or the epilogue's operands,
  // the epilogue's staging at the start of the shared memory.
  Value shared =
      dynamicShared
          ? b.create<gpu::DynamicSharedMemoryOp>(
                 loc, MemRefType::get({ShapedType::kDynamic}, b.getI8Type(), AffineMap(),
                                      workgroup))
                .getResult()
          : b.create<memref::GetGlobalOp>(loc, sharedType, sharedName).getResult();
  gather.setShared(shared);
  gather.declareViews(func, params);
  if (kernel.splitsK())
    epilogue.declareWorkspace(func.getArgument(llvm::find(params, "workspace") - params.begin()));
  else
    epilogue.declareViews(func, params);
  epilogue.declareStaging(shared, plan.stagingOffset);

  if (t.persistent) {
    // Block x takes tiles x, x + grid, ... of the batches' rows * cols.
    const int64_t tiles = kernel.persistentTiles(), grid = kernel.grid()[0];
    Value count = div(b.createOrFold<arith::SubIOp>(loc, c(tiles + grid - 1), blockX), grid);
    mainLoop->emitTiles(gather, epilogue, count, [&](Value i) {
      Value rank = add(blockX, mul(i, grid));
      block.z = div(rank, rows * cols);
      placeTile(rem(rank, rows * cols));
      gather.setupBatchOffsets();
      gather.setupSlots();
    });
    b.create<gpu::ReturnOp>(loc);
    return success();
  }
  if (t.warpSpecialized) {
    // The producer and the math warpgroups each take the block's one tile.
    mainLoop->emitTiles(gather, epilogue, c(1), [&](Value) {
      gather.setupBatchOffsets();
      gather.setupSlots();
    });
    b.create<gpu::ReturnOp>(loc);
    return success();
  }
  gather.setupBatchOffsets();
  gather.setupSlots();
  SmallVector<Value> init = mainLoop->initAccumulators();
  SmallVector<Value> accs = mainLoop->emitKLoop(gather, init);
  mainLoop->toEpilogue(accs, epilogue);
  b.create<gpu::ReturnOp>(loc);
  return success();
}

} // namespace

LogicalResult buildGemmKernel(OpBuilder &builder, gpu::GPUModuleOp module,
                              const GemmKernel &kernel) {
  if (kernel.tiles.direct)
    return buildDirectConvKernel(builder, module, kernel);
  BlockCoords coords;
  if (failed(TiledKernel(builder, kernel, coords).build(module)))
    return failure();
  return kernel.splitsK() ? buildSplitKReduceKernel(builder, module, kernel) : success();
}

FailureOr<OwningOpRef<ModuleOp>> buildGemmModule(MLIRContext &ctx, llvm::StringRef name,
                                                 ArrayRef<GemmKernel> kernels) {
  // The dialects, the NVVM target and the translations the lowering needs.
  DialectRegistry registry;
  registerCodegenDialects(registry);
  ctx.appendDialectRegistry(registry);
  ctx.loadDialect<arith::ArithDialect, gpu::GPUDialect, LLVM::LLVMDialect,
                  memref::MemRefDialect, nvgpu::NVGPUDialect, scf::SCFDialect,
                  vector::VectorDialect>();
  Location loc = NameLoc::get(StringAttr::get(&ctx, name));
  OpBuilder b(&ctx);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  (*module)->setAttr(gpu::GPUDialect::getContainerModuleAttrName(), b.getUnitAttr());
  b.setInsertionPointToStart(module->getBody());
  auto gpuModule = b.create<gpu::GPUModuleOp>(loc, name);
  for (const GemmKernel &kernel : kernels)
    if (failed(buildGemmKernel(b, gpuModule, kernel)))
      return failure();
  if (failed(verify(*module)))
    return failure();
  // One constant per value and folded index arithmetic: the IR the tests
  // read is the IR that is lowered.
  PassManager pm(&ctx);
  pm.nest<gpu::GPUModuleOp>().addPass(createCanonicalizerPass());
  pm.nest<gpu::GPUModuleOp>().addPass(createCSEPass());
  if (failed(pm.run(*module)))
    return failure();
  return module;
}

} // namespace tessel::codegen
