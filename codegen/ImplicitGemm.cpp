//===- ImplicitGemm.cpp - conv/gemm/matmul steps as tiled GPU kernels -----===//
//
// From a step to its variants: the step's op and tensor types give the GEMM
// it computes (describeGemmStep), each tier its tiling (chooseTiles), and a
// kernel per distinct problem and tier, bound to the step's tensors. finish()
// compiles each tier's kernels as one module: one LLVM lowering, then one
// nvJitLink assembly per target SM.
//
//===----------------------------------------------------------------------===//
#include "ImplicitGemm.h"

#include "CubinAssembler.h"
#include "GridDependency.h"
#include "StepEncoding.h"
#include "WmmaGemm.h"
#include "tessel/engine_format.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringMap.h"

#include <algorithm>
#include <thread>

using namespace mlir;

namespace tessel::codegen {

namespace {

std::optional<ElemType> elemTypeOf(RankedTensorType type) {
  if (!type || !type.hasStaticShape())
    return std::nullopt;
  if (type.getElementType().isF16())
    return ElemType::F16;
  if (type.getElementType().isF32())
    return ElemType::F32;
  return std::nullopt;
}

float floatAttr(Operation *op, llvm::StringRef name, float fallback) {
  auto attr = op->getAttrOfType<FloatAttr>(name);
  return attr ? float(attr.getValueAsDouble()) : fallback;
}

/// A string attribute as the engine stores it (an enum by its name).
std::string engineString(Operation *op, llvm::StringRef name) {
  std::optional<cpu::AttrValue> value = engineAttr(op, name);
  const std::string *text = value ? std::get_if<std::string>(&*value) : nullptr;
  return text ? *text : std::string();
}

bool readActivation(Operation *op, const char *alphaName, const char *betaName,
                    GemmProblem &p) {
  std::optional<Activation> act = parseActivation(engineString(op, "activation"));
  if (!act)
    return false;
  p.act = *act;
  p.actAlpha = floatAttr(op, alphaName, 0.0f);
  p.actBeta = floatAttr(op, betaName, 0.0f);
  return true;
}

std::optional<GemmProblem> describeConv(const StepView &step) {
  Operation *op = step.op;
  std::string layout = engineString(op, "layout");
  auto strides = op->getAttrOfType<DenseI64ArrayAttr>("strides");
  auto pads = op->getAttrOfType<DenseI64ArrayAttr>("pads");
  auto dilations = op->getAttrOfType<DenseI64ArrayAttr>("dilations");
  auto group = op->getAttrOfType<IntegerAttr>("group");
  if (layout != "NHWC" || !strides || strides.size() != 2 || !pads ||
      pads.size() != 4 || !dilations || dilations.size() != 2 || !group ||
      step.inputs.size() < 2 || step.outputs.size() != 1)
    return std::nullopt;
  RankedTensorType x = step.type(step.inputs[0]), w = step.type(step.inputs[1]),
                   y = step.type(step.outputs[0]);
  std::optional<ElemType> xe = elemTypeOf(x), we = elemTypeOf(w), ye = elemTypeOf(y);
  if (!xe || !we || !ye || x.getRank() != 4 || w.getRank() != 4 || y.getRank() != 4)
    return std::nullopt;
  ConvShape c;
  c.batch = x.getDimSize(0);
  c.inH = x.getDimSize(1);
  c.inW = x.getDimSize(2);
  c.inC = x.getDimSize(3);
  c.outC = w.getDimSize(0);
  c.kH = w.getDimSize(1);
  c.kW = w.getDimSize(2);
  c.strideH = strides[0];
  c.strideW = strides[1];
  c.padH = pads[0];
  c.padW = pads[1];
  c.dilH = dilations[0];
  c.dilW = dilations[1];
  c.group = group.getInt();
  c.outH = y.getDimSize(1);
  c.outW = y.getDimSize(2);
  if (c.group < 1 || c.inC % c.group || c.outC % c.group || w.getDimSize(3) * c.group != c.inC ||
      y.getDimSize(0) != c.batch || y.getDimSize(3) != c.outC || c.strideH < 1 ||
      c.strideW < 1 || c.dilH < 1 || c.dilW < 1)
    return std::nullopt;
  // The output extent the window implies must be the result's.
  auto extent = [](int64_t in, int64_t padBegin, int64_t padEnd, int64_t k, int64_t d,
                   int64_t s) { return (in + padBegin + padEnd - d * (k - 1) - 1) / s + 1; };
  if (extent(c.inH, pads[0], pads[2], c.kH, c.dilH, c.strideH) != c.outH ||
      extent(c.inW, pads[1], pads[3], c.kW, c.dilW, c.strideW) != c.outW)
    return std::nullopt;
  GemmProblem p = GemmProblem::forConv(c, *xe);
  p.b = *we;
  p.out = *ye;
  if (step.inputs.size() > 2 && step.inputs[2] >= 0) {
    RankedTensorType bias = step.type(step.inputs[2]);
    p.addend = elemTypeOf(bias);
    if (!p.addend || bias.getNumElements() != c.outC)
      return std::nullopt;
  }
  if (step.inputs.size() > 3 && step.inputs[3] >= 0) {
    RankedTensorType residual = step.type(step.inputs[3]);
    p.residual = elemTypeOf(residual);
    if (!p.residual || residual.getShape() != y.getShape())
      return std::nullopt;
  }
  if (step.inputs.size() > 4 && step.inputs[4] >= 0) {
    RankedTensorType scale = step.type(step.inputs[4]);
    p.aScale = elemTypeOf(scale);
    if (p.aScale != p.a || scale.getNumElements() != c.batch * c.inC)
      return std::nullopt;
  }
  if (!readActivation(op, "alpha", "beta", p))
    return std::nullopt;
  return p;
}

std::optional<GemmProblem> describeGemm(const StepView &step) {
  Operation *op = step.op;
  if (step.inputs.size() < 2 || step.outputs.size() != 1)
    return std::nullopt;
  RankedTensorType a = step.type(step.inputs[0]), b = step.type(step.inputs[1]),
                   y = step.type(step.outputs[0]);
  std::optional<ElemType> ae = elemTypeOf(a), be = elemTypeOf(b), ye = elemTypeOf(y);
  // A of rank > 2 (no transA): its leading dims are rows of M, kept in the
  // result's shape, which is then [M, N] in memory all the same.
  if (!ae || !be || !ye || a.getRank() < 2 || b.getRank() != 2 || y.getRank() != a.getRank())
    return std::nullopt;
  GemmProblem p;
  p.op = GemmOpKind::Gemm;
  p.a = *ae;
  p.b = *be;
  p.out = *ye;
  auto flag = [&](const char *name) {
    auto attr = op->getAttrOfType<BoolAttr>(name);
    return attr && attr.getValue();
  };
  p.transA = flag("transA");
  p.transB = flag("transB");
  if (p.transA && a.getRank() != 2)
    return std::nullopt;
  p.k = a.getDimSize(p.transA ? 0 : a.getRank() - 1);
  p.m = p.transA ? a.getDimSize(1) : a.getNumElements() / p.k;
  p.n = b.getDimSize(p.transB ? 0 : 1);
  if (b.getDimSize(p.transB ? 1 : 0) != p.k || y.getNumElements() != p.m * p.n ||
      y.getShape().back() != p.n)
    return std::nullopt;
  // An operand of one row lies the same either way round: B of one column
  // and A of one row are taken K-major, in runs along K (a gemv's B).
  p.transB = p.transB || p.n == 1;
  p.transA = p.transA && p.m != 1;
  p.alpha = floatAttr(op, "alpha", 1.0f);
  p.beta = floatAttr(op, "beta", 1.0f);
  if (step.inputs.size() > 2 && step.inputs[2] >= 0) {
    // C broadcasts (right-aligned) to [M, N], as on the CPU tier.
    RankedTensorType cType = step.type(step.inputs[2]);
    p.addend = elemTypeOf(cType);
    if (!p.addend || cType.getRank() > 2)
      return std::nullopt;
    ArrayRef<int64_t> cs = cType.getShape();
    int64_t cm = cs.size() == 2 ? cs[0] : 1, cn = cs.empty() ? 1 : cs.back();
    if ((cm != 1 && cm != p.m) || (cn != 1 && cn != p.n))
      return std::nullopt;
    p.addendRowStride = cm == 1 ? 0 : cn;
    p.addendColStride = cn == 1 ? 0 : 1;
  }
  if (step.inputs.size() > 3 && step.inputs[3] >= 0) {
    RankedTensorType residual = step.type(step.inputs[3]);
    p.residual = elemTypeOf(residual);
    if (!p.residual || residual.getShape() != y.getShape())
      return std::nullopt;
  }
  if (!readActivation(op, "act_alpha", "act_beta", p))
    return std::nullopt;
  return p;
}

std::optional<GemmProblem> describeMatMul(const StepView &step) {
  if (step.inputs.size() != 2 || step.outputs.size() != 1)
    return std::nullopt;
  RankedTensorType a = step.type(step.inputs[0]), b = step.type(step.inputs[1]),
                   y = step.type(step.outputs[0]);
  std::optional<ElemType> ae = elemTypeOf(a), be = elemTypeOf(b), ye = elemTypeOf(y);
  if (!ae || !be || !ye)
    return std::nullopt;
  GemmProblem p;
  p.op = GemmOpKind::MatMul;
  p.a = *ae;
  p.b = *be;
  p.out = *ye;
  ArrayRef<int64_t> as = a.getShape(), bs = b.getShape(), ys = y.getShape();
  size_t ra = as.size(), rb = bs.size();
  if (ra == 0 || rb == 0)
    return std::nullopt;
  p.m = ra == 1 ? 1 : as[ra - 2];
  p.k = as[ra - 1];
  p.n = rb == 1 ? 1 : bs[rb - 1];
  if ((rb == 1 ? bs[0] : bs[rb - 2]) != p.k)
    return std::nullopt;
  size_t trailing = (ra == 1 ? 0 : 1) + (rb == 1 ? 0 : 1);
  if (ys.size() < trailing)
    return std::nullopt;
  size_t batchRank = ys.size() - trailing;
  if ((ra != 1 && ys[batchRank] != p.m) || (rb != 1 && ys.back() != p.n))
    return std::nullopt;
  // Each operand's batch dims, right-aligned with the result's; a stride of
  // 0 where the operand broadcasts (as on the CPU tier).
  p.batchDims.resize(batchRank);
  auto strides = [&](ArrayRef<int64_t> shape, size_t matrixRank, bool isA) {
    size_t r = shape.size() - matrixRank;
    if (r > batchRank)
      return false;
    int64_t stride = 1;
    for (size_t j = 0; j < r; ++j) {
      size_t i = r - 1 - j, d = batchRank - 1 - j;
      if (shape[i] != ys[d] && shape[i] != 1)
        return false;
      (isA ? p.batchDims[d].aStride : p.batchDims[d].bStride) =
          shape[i] == ys[d] && shape[i] != 1 ? stride : 0;
      stride *= shape[i];
    }
    return true;
  };
  for (size_t d = 0; d < batchRank; ++d)
    p.batchDims[d].extent = ys[d];
  if (!strides(as, ra == 1 ? 1 : 2, true) || !strides(bs, rb == 1 ? 1 : 2, false))
    return std::nullopt;
  for (const BatchDim &d : p.batchDims)
    p.batch *= d.extent;
  return p;
}

/// The tensor a kernel parameter binds, by the step's operand positions.
int32_t boundTensor(const StepView &step, const GemmProblem &p, llvm::StringRef param) {
  if (param == "a")
    return step.inputs[0];
  if (param == "b")
    return step.inputs[1];
  if (param == "addend")
    return step.inputs[2];
  if (param == "residual")
    return step.inputs[3];
  if (param == "a_scale")
    return step.inputs[4];
  (void)p;
  return step.outputs[0];
}

/// What each tier is called and built for, in one place: its module, its
/// kernels' name prefix, its engine tier (whose SMs, format::tierRunsOn,
/// the engine format says), the SM its PTX targets and the chip it is
/// lowered for (sm_90a for wgmma).
struct TierFacts {
  const char *module, *prefix;
  engine::Tier engineTier;
  int ptxArch;
  const char *chip;
};

const TierFacts &factsOf(GemmTier tier) {
  static const TierFacts tc{"tessel_gemm_tc", "tc_", engine::Tier::tc_sm70, 70, "sm_70"};
  static const TierFacts tc80{"tessel_gemm_tc80", "tc80_", engine::Tier::tc_sm80, 80, "sm_80"};
  static const TierFacts tc90{"tessel_gemm_tc90", "tc90_", engine::Tier::tc_sm90, 90, "sm_90a"};
  static const TierFacts simt{"tessel_gemm_simt", "simt_", engine::Tier::simt, 60, "sm_60"};
  switch (tier) {
  case GemmTier::TensorCore: return tc;
  case GemmTier::TensorCoreSm80: return tc80;
  case GemmTier::TensorCoreSm90: return tc90;
  case GemmTier::Simt: return simt;
  }
  return simt;
}


/// The kernel whose code holds PTX line `line` (1-based), by its .entry.
std::optional<std::string> kernelAtLine(llvm::StringRef ptx, size_t line) {
  std::optional<std::string> current;
  size_t number = 0;
  for (llvm::StringRef rest = ptx; !rest.empty() && number < line;) {
    auto [text, tail] = rest.split('\n');
    ++number;
    rest = tail;
    size_t at = text.find(".entry ");
    if (at != llvm::StringRef::npos)
      current = text.substr(at + 7).take_until([](char ch) { return ch == '(' || ch == ' '; }).str();
  }
  return current;
}

/// The first "line N" in an assembler log.
std::optional<size_t> firstLogLine(llvm::StringRef log) {
  size_t at = log.find("line ");
  if (at == llvm::StringRef::npos)
    return std::nullopt;
  size_t line = 0;
  if (log.substr(at + 5).take_while([](char ch) { return ch >= '0' && ch <= '9'; })
          .getAsInteger(10, line))
    return std::nullopt;
  return line;
}

} // namespace

std::optional<GemmProblem> describeGemmStep(const StepView &step) {
  if (!step.op)
    return std::nullopt;
  std::optional<GemmProblem> p;
  if (step.name == "conv")
    p = describeConv(step);
  else if (step.name == "gemm")
    p = describeGemm(step);
  else if (step.name == "matmul")
    p = describeMatMul(step);
  if (!p || p->m <= 0 || p->n <= 0 || p->k <= 0 || p->batch <= 0)
    return std::nullopt;
  return p;
}

int ptxArch(GemmTier tier) { return factsOf(tier).ptxArch; }

bool runsOn(GemmTier tier, int arch) {
  const TierFacts &facts = factsOf(tier);
  return arch >= facts.ptxArch && format::tierRunsOn(facts.engineTier, arch);
}

/// One tier's module between its lowering and its assembly: the PTX, and
/// the cubins being assembled from it on threads of their own (nvJitLink,
/// one handle each), beside the other tiers' cubins.
struct PendingGemmModule {
  GemmTier tier;
  std::vector<std::string> kernelNames;
  KernelModule result;
  std::string ptx;
  std::optional<std::string> waiting;
  std::vector<int> archs;
  std::vector<CubinResult> cubins;
  std::vector<std::thread> workers;

  bool waits(int arch) const { return arch >= kGridDependencyArch; }
  const std::string &sourceFor(int arch) const { return waits(arch) ? *waiting : ptx; }

  ~PendingGemmModule() { join(); }

  void join() {
    for (std::thread &worker : workers)
      if (worker.joinable())
        worker.join();
  }

  /// Waits for the cubins and puts the module together; on an assembly
  /// failure reports at where(i) for the failing kernel i.
  FailureOr<KernelModule> finish(function_ref<Location(size_t)> where) {
    join();
    for (size_t i = 0; i < cubins.size(); ++i) {
      if (!cubins[i].ok) {
        // Name the kernel (and so a step) the assembler stopped at.
        size_t failing = 0;
        if (std::optional<size_t> line = firstLogLine(cubins[i].log))
          if (std::optional<std::string> name = kernelAtLine(sourceFor(archs[i]), *line))
            for (size_t k = 0; k < kernelNames.size(); ++k)
              if (kernelNames[k] == *name)
                failing = k;
        return emitError(where(failing))
               << "GPU kernel " << kernelNames[failing] << " (" << tierName(tier)
               << ") failed to assemble for sm_" << archs[i] << ": " << cubins[i].log;
      }
      result.maxRegisters = std::max(result.maxRegisters, maxRegisters(cubins[i].info));
      for (std::string &name : spillingKernels(cubins[i].info))
        if (llvm::find(result.spillingKernels, name) == result.spillingKernels.end())
          result.spillingKernels.push_back(std::move(name));
      KernelImage image;
      image.cubin = true;
      image.arch = archs[i];
      image.waitsForPriorGrids = waits(archs[i]);
      image.data = std::move(cubins[i].cubin);
      result.images.push_back(std::move(image));
    }
    return std::move(result);
  }
};

/// Builds and lowers one tier's module to PTX in `ctx`.
FailureOr<std::string> lowerGemmModule(MLIRContext &ctx, GemmTier tier,
                                       ArrayRef<GemmKernel> kernels) {
  FailureOr<OwningOpRef<ModuleOp>> module = buildGemmModule(ctx, factsOf(tier).module, kernels);
  if (failed(module))
    return failure();
  bool wide = llvm::any_of(kernels, [](const GemmKernel &k) { return k.problem.needsWideIndex(); });
  return lowerGpuModuleToPtx(**module, factsOf(tier).chip, wide ? 64 : 32);
}

/// Starts the assembly of a tier's cubins from its PTX, one thread per SM
/// the tier runs on (each is ptxas on the whole module).
FailureOr<std::unique_ptr<PendingGemmModule>>
assembleGemmModule(GemmTier tier, std::string ptx, ArrayRef<GemmKernel> kernels,
                   const Targets &targets, function_ref<Location(size_t)> where) {
  auto pending = std::make_unique<PendingGemmModule>();
  pending->tier = tier;
  for (const GemmKernel &kernel : kernels)
    pending->kernelNames.push_back(kernel.name);
  pending->ptx = std::move(ptx);
  pending->result.name = factsOf(tier).module;
  KernelImage ptxImage;
  ptxImage.arch = ptxArch(tier);
  ptxImage.data.assign(pending->ptx.begin(), pending->ptx.end());
  pending->result.images.push_back(std::move(ptxImage));
  if (!canAssembleCubins())
    return pending; // PTX only; the driver compiles it at load
  for (int arch : targets.cubinArchs)
    if (runsOn(tier, arch))
      pending->archs.push_back(arch);
  // The cubins of sm_90 and later wait for the grids before them
  // (GridDependency.h), assembled from the PTX rewritten so.
  pending->waiting = waitingForPriorGrids(pending->ptx);
  if (!pending->waiting)
    return emitError(where(0)) << "the " << tierName(tier)
                               << " module's PTX has no .version or .target directive";
  pending->cubins.resize(pending->archs.size());
  PendingGemmModule *p = pending.get();
  for (size_t i = 0; i < p->archs.size(); ++i)
    p->workers.emplace_back(
        [p, i] { p->cubins[i] = assembleCubin(p->sourceFor(p->archs[i]), p->archs[i]); });
  return pending;
}

FailureOr<KernelModule> compileGemmModule(MLIRContext &ctx, GemmTier tier,
                                          ArrayRef<GemmKernel> kernels, const Targets &targets,
                                          function_ref<Location(size_t)> where) {
  FailureOr<std::string> ptx = lowerGemmModule(ctx, tier, kernels);
  if (failed(ptx))
    return failure();
  FailureOr<std::unique_ptr<PendingGemmModule>> pending =
      assembleGemmModule(tier, std::move(*ptx), kernels, targets, where);
  if (failed(pending))
    return failure();
  return (*pending)->finish(where);
}

//===----------------------------------------------------------------------===//
// GemmPlanner
//===----------------------------------------------------------------------===//

struct GemmPlanner::Impl {
  MLIRContext &ctx;
  Targets targets;
  struct TierKernels {
    GemmTier tier;
    int32_t module = -1; ///< index in finish()'s modules, in first-use order
    std::vector<GemmKernel> kernels;
    std::vector<Location> firstUse;
    llvm::StringMap<size_t> byKey;
  };
  TierKernels tiers[4] = {{GemmTier::TensorCoreSm90, -1, {}, {}, {}},
                          {GemmTier::TensorCoreSm80, -1, {}, {}, {}},
                          {GemmTier::TensorCore, -1, {}, {}, {}},
                          {GemmTier::Simt, -1, {}, {}, {}}};
  int32_t modules = 0;

  Impl(MLIRContext &ctx, const Targets &targets) : ctx(ctx), targets(targets) {}

  /// The kernel for `problem` on this tier, shared by every step that needs
  /// the same one.
  const GemmKernel &intern(TierKernels &tier, const GemmProblem &problem,
                           const TileConfig &tiles, Location loc) {
    auto [it, inserted] = tier.byKey.try_emplace(problem.key(), tier.kernels.size());
    if (inserted) {
      if (tier.module < 0)
        tier.module = modules++;
      GemmKernel kernel;
      kernel.problem = problem;
      kernel.tiles = tiles;
      const char *op = problem.op == GemmOpKind::Conv   ? "conv"
                       : problem.op == GemmOpKind::Gemm ? "gemm"
                                                        : "matmul";
      kernel.name = std::string(factsOf(tier.tier).prefix) + op + "_" +
                    std::to_string(tier.kernels.size());
      tier.kernels.push_back(std::move(kernel));
      tier.firstUse.push_back(loc);
    }
    return tier.kernels[it->second];
  }
};

GemmPlanner::GemmPlanner(MLIRContext &ctx, const Targets &targets)
    : impl(new Impl(ctx, targets)) {}

GemmPlanner::~GemmPlanner() = default;

/// Whether a problem is worth a tc-sm90 kernel beside its tc-sm80 one. On
/// the H100 (bench/NOTES.md, 2026-11-27 (15): the Tensor Core steps of
/// EfficientNet-B0, -V2-S and MobileNetV3-Large at batch 1 and 32, each
/// timed on both tiers) tc-sm80 was the faster in 204 of the 235 steps below
/// 128 MFLOP or with K under 64 (a squeeze-excitation FC, a batch-1 conv: a
/// few blocks, latency-bound, where wgmma's m64 warpgroup tiles leave fewer
/// of them; K under one 64-deep wgmma step is mostly zero padding), and the
/// batch-1 engines all on tc-sm80 were 10-14% faster; tc-sm90 in 120 of the
/// 128 other steps. Nor a gemm of 8 columns or fewer, which fill
/// mma.sync's n8 tiles but an eighth of wgmma's narrowest here (n64): on
/// the H200 tc-sm80 ran DeepBench's seven of N = 1 1.13-1.58x faster (1024
/// x 1 x 500000 0.3339 -> 0.2597 ms, 8448 x 1 x 2816 0.0197 -> 0.0146;
/// bench/NOTES.md (34)); nor of 16 columns where its 64-row tiles make
/// less than half a wave of kSm90ReferenceSms (more take tc-sm90's 64 x 64
/// in 8 stages, Tiling.cpp): 1024 x 16 x 500000 0.3403 -> 0.2554 ms, 4096
/// x 16 x 4096 0.0184 -> 0.0172, where 7680 x 16 x 2560 (120 tiles) went
/// 0.0165 -> 0.0186 and 6144 x 16 x 2048 0.0143 -> 0.0168 (NOTES (37)).
/// The runtime takes the best tier a step has, so without a tc-sm90
/// variant tc-sm80 runs on sm_90 GPUs.
static bool sm90Pays(const GemmProblem &p) {
  constexpr double kMinFlops = 128e6;
  const bool narrow =
      p.n <= 8 || (p.n <= 16 && 2 * llvm::divideCeil(p.m, 64) * p.batch < kSm90ReferenceSms);
  return 2.0 * double(p.m) * double(p.n) * double(p.k) * double(p.batch) >= kMinFlops &&
         p.k >= 64 && !narrow;
}

FailureOr<std::vector<KernelVariant>> GemmPlanner::plan(const StepView &step) {
  std::vector<KernelVariant> variants;
  if (impl->targets.empty())
    return variants;
  std::optional<GemmProblem> problem = describeGemmStep(step);
  if (!problem)
    return variants;
  // Each tier's tiling where some target runs the tier.
  std::optional<TileConfig> tilings[std::size(impl->tiers)];
  bool sm80Serves = false; // tc-sm80 runs sm_90 GPUs where tc-sm90 does not pay
  for (size_t i = 0; i < std::size(impl->tiers); ++i) {
    if (llvm::any_of(impl->targets.cubinArchs,
                     [&](int arch) { return runsOn(impl->tiers[i].tier, arch); }))
      tilings[i] = chooseTiles(*problem, impl->tiers[i].tier);
    sm80Serves |= impl->tiers[i].tier == GemmTier::TensorCoreSm80 && tilings[i];
  }
  for (size_t i = 0; i < std::size(impl->tiers); ++i) {
    Impl::TierKernels &tier = impl->tiers[i];
    const std::optional<TileConfig> &tiles = tilings[i];
    if (!tiles || (tier.tier == GemmTier::TensorCoreSm90 && sm80Serves && !sm90Pays(*problem)))
      continue;
    const GemmKernel &kernel = impl->intern(tier, *problem, *tiles, step.op->getLoc());
    auto bind = [&](llvm::StringRef param) {
      if (param == "workspace")
        return KernelArg::workspace(kernel.workspaceBytes());
      if (param == "a_map" || param == "b_map" || param == "out_map") {
        const llvm::StringRef tensor = param == "a_map" ? "a" : param == "b_map" ? "b" : "out";
        return KernelArg::tensorMapOf(boundTensor(step, *problem, tensor),
                                      kernel.tensorMap(param));
      }
      return KernelArg::tensorAddress(boundTensor(step, *problem, param));
    };
    KernelVariant variant;
    variant.tier = factsOf(tier.tier).engineTier;
    variant.kernel = kernel.name;
    variant.minComputeCapability = ptxArch(tier.tier);
    variant.alignment = kernel.alignment();
    Launch launch;
    launch.module = tier.module;
    launch.kernel = kernel.name;
    launch.grid = kernel.grid();
    launch.block = kernel.block();
    launch.sharedBytes = kernel.sharedBytes(); // 0: static, declared by the kernel
    for (llvm::StringRef param : kernel.parameters())
      launch.args.push_back(bind(param));
    variant.launches.push_back(std::move(launch));
    if (kernel.splitsK()) {
      // The partial sums, then their reduction with the epilogue.
      Launch reduce;
      reduce.module = tier.module;
      reduce.kernel = kernel.reduceName();
      reduce.grid = kernel.reduceGrid();
      reduce.block = kernel.reduceBlock();
      for (llvm::StringRef param : kernel.reduceParameters())
        reduce.args.push_back(bind(param));
      variant.launches.push_back(std::move(reduce));
    }
    variants.push_back(std::move(variant));
  }
  return variants;
}

FailureOr<std::vector<KernelModule>> GemmPlanner::finish() {
  std::vector<KernelModule> modules(impl->modules);
  // Every tier's module lowered at once, each on a thread of its own in an
  // MLIR context of its own (nothing of MLIR is shared between them; LLVM's
  // NVPTX backend gets a context per module); then every tier's cubins
  // assembled at once, on threads of their own; the modules collected in
  // tier order. A lowering that fails reports its diagnostics at the tier's
  // first step.
  std::vector<Impl::TierKernels *> used;
  for (Impl::TierKernels &tier : impl->tiers)
    if (tier.module >= 0)
      used.push_back(&tier);
  struct Lowered {
    std::optional<std::string> ptx;
    std::string diagnostics;
  };
  std::vector<Lowered> lowered(used.size());
  {
    std::vector<std::thread> threads;
    for (size_t i = 0; i < used.size(); ++i)
      threads.emplace_back([&, i] {
        DialectRegistry registry;
        registerCodegenDialects(registry);
        MLIRContext local(registry, MLIRContext::Threading::DISABLED);
        ScopedDiagnosticHandler capture(&local, [&](Diagnostic &diagnostic) {
          lowered[i].diagnostics += (lowered[i].diagnostics.empty() ? "" : "\n") +
                                    diagnostic.str();
          return success();
        });
        FailureOr<std::string> ptx = lowerGemmModule(local, used[i]->tier, used[i]->kernels);
        if (succeeded(ptx))
          lowered[i].ptx = std::move(*ptx);
      });
    for (std::thread &thread : threads)
      thread.join();
  }
  std::vector<std::unique_ptr<PendingGemmModule>> pending;
  for (size_t i = 0; i < used.size(); ++i) {
    Impl::TierKernels &tier = *used[i];
    auto where = [&](size_t k) { return tier.firstUse[k]; };
    if (!lowered[i].ptx)
      return emitError(where(0)) << "the " << tierName(tier.tier)
                                 << " GPU kernels failed to lower: " << lowered[i].diagnostics;
    FailureOr<std::unique_ptr<PendingGemmModule>> started =
        assembleGemmModule(tier.tier, std::move(*lowered[i].ptx), tier.kernels, impl->targets,
                           where);
    if (failed(started))
      return failure(); // the started ones' threads are joined as they go
    pending.push_back(std::move(*started));
  }
  for (size_t i = 0; i < used.size(); ++i) {
    Impl::TierKernels &tier = *used[i];
    FailureOr<KernelModule> done =
        pending[i]->finish([&](size_t k) { return tier.firstUse[k]; });
    if (failed(done))
      return failure();
    modules[tier.module] = std::move(*done);
  }
  return modules;
}

} // namespace tessel::codegen
