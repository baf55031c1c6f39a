//===- tessel-codegen-gemm.cpp - write the code of one GEMM kernel --------===//
//
// Two modes:
//
// * -m M -n N -k K: the plain WMMA GEMM of codegen/WmmaGemm.h. The first line
//   of the output is a PTX comment with the launch shape,
//     // tessel-launch kernel=NAME grid=X,Y,Z block=X,Y,Z shared=B m=M n=N k=K out=f32
//   which tests/gpu/wmma_gemm_check.cpp reads to launch the kernel.
//
// * --conv, --gemm or --matmul: one implicit-GEMM kernel of the engine's
//   codegen (codegen/GemmKernel.h) for --tier tc or simt, as the tiled IR
//   (--emit ir), as the IR exactly as the emitter built it, before
//   canonicalization and CSE, in generic form (--emit raw-ir: what
//   scripts/dev/compare-gemm-ptx.sh compares op for op across a refactoring)
//   or as PTX (--emit ptx, the default) whose first line,
//     // tessel-igemm kernel=NAME tier=T grid=X,Y,Z block=X,Y,Z op=conv ...
//   describes the problem and the launch for tests/gpu/implicit_gemm_check.cpp.
//   --cubin sm_75,sm_80,sm_90 also assembles the PTX in-process (nvJitLink)
//   for each SM, as tessel-compile does, says so on stdout and writes each
//   cubin beside the output (OUTPUT.sm_XY.cubin).
//
//===----------------------------------------------------------------------===//
#include "ImplicitGemm.h"
#include "WmmaGemm.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

using namespace tessel::codegen;

namespace {

/// "1,2,3" -> {1, 2, 3}; false unless exactly `count` integers.
bool parseList(const std::string &text, size_t count, std::vector<int64_t> &values) {
  values.clear();
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    char *end = nullptr;
    long long v = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end)
      return false;
    values.push_back(v);
  }
  return values.size() == count;
}

bool writeOutput(const std::string &output, const std::string &text) {
  if (output == "-") {
    std::cout << text;
    return true;
  }
  std::ofstream file(output, std::ios::binary);
  file << text;
  if (!file) {
    std::cerr << "error: cannot write " << output << "\n";
    return false;
  }
  return true;
}

/// The header line tests/gpu/implicit_gemm_check.cpp reads.
std::string describe(const GemmKernel &kernel) {
  const GemmProblem &p = kernel.problem;
  const TileConfig &t = kernel.tiles;
  auto type = [](ElemType e) { return e == ElemType::F16 ? "f16" : "f32"; };
  std::string text;
  llvm::raw_string_ostream os(text);
  auto [gx, gy, gz] = kernel.grid();
  os << "// tessel-igemm kernel=" << kernel.name << " tier=" << tierName(t.tier) << " grid=" << gx
     << "," << gy << "," << gz << " block=" << kernel.block()[0] << ",1,1"
     << " tile=" << t.blockM << "x" << t.blockN << "x" << t.blockK;
  if (onTensorCores(t.tier))
    os << " fragment=" << t.fragM << "x" << t.fragN << "x" << t.fragK << " warps=" << t.warpsM
       << "x" << t.warpsN << " frags=" << t.fragsM << "x" << t.fragsN;
  else
    os << " threads=" << t.threadsM << "x" << t.threadsN << " micro=" << t.microM << "x"
       << t.microN;
  if (t.tier == GemmTier::TensorCoreSm80 || t.tier == GemmTier::TensorCoreSm90)
    os << " stages=" << t.stages << " raster=" << t.rasterM;
  if (t.persistent)
    os << " persistent=" << t.persistent;
  if (t.tma)
    os << " tma=1";
  if (t.tmaStore)
    os << " tma_store=1";
  if (t.warpSpecialized)
    os << " warp_specialized=1";
  if (t.pingpong)
    os << " pingpong=1";
  os << " align=" << kernel.alignment() << " shared=" << kernel.sharedBytes();
  if (t.direct)
    os << " direct=1";
  if (t.dwLanes)
    os << " dw=" << t.dwLanes << "x" << t.dwWidth << " slab=" << t.dwVectors << "x" << t.dwRows;
  if (kernel.splitsK()) {
    auto [rx, ry, rz] = kernel.reduceGrid();
    os << " split=" << t.splitK << " workspace=" << kernel.workspaceBytes() << " reduce="
       << kernel.reduceName() << " reduce_grid=" << rx << "," << ry << "," << rz
       << " reduce_block=" << kernel.reduceBlock()[0] << ",1,1";
  }
  os << " a=" << type(p.a) << " b=" << type(p.b) << " out=" << type(p.out)
     << " addend=" << (p.addend ? type(*p.addend) : "none")
     << " residual=" << (p.residual ? type(*p.residual) : "none")
     << " act=" << activationName(p.act) << " act_alpha=" << p.actAlpha
     << " act_beta=" << p.actBeta << " m=" << p.m << " n=" << p.n << " k=" << p.k
     << " batch=" << p.batch;
  const ConvShape &c = p.conv;
  switch (p.op) {
  case GemmOpKind::Conv:
    os << " op=conv conv=" << c.batch << "," << c.inH << "," << c.inW << "," << c.inC << ","
       << c.outC << "," << c.kH << "," << c.kW << "," << c.strideH << "," << c.strideW << ","
       << c.padH << "," << c.padW << "," << c.dilH << "," << c.dilW << "," << c.group << ","
       << c.outH << "," << c.outW;
    break;
  case GemmOpKind::Gemm:
    os << " op=gemm trans_a=" << p.transA << " trans_b=" << p.transB << " alpha=" << p.alpha
       << " beta=" << p.beta << " c_strides=" << p.addendRowStride << ","
       << p.addendColStride;
    break;
  case GemmOpKind::MatMul:
    os << " op=matmul batch_dims=";
    for (size_t i = 0; i < p.batchDims.size(); ++i)
      os << (i ? ";" : "") << p.batchDims[i].extent << ":" << p.batchDims[i].aStride << ":"
         << p.batchDims[i].bStride;
    if (p.batchDims.empty())
      os << "none";
    break;
  }
  os << "\n";
  return text;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"Writes the code of one GEMM kernel: the plain WMMA GEMM (-m -n -k) or an "
               "implicit-GEMM kernel of the engine codegen (--conv, --gemm, --matmul)"};
  GemmKernelSpec spec;
  std::string fragment = "16x16x16", output = "-";
  app.add_option("-m", spec.m, "WMMA GEMM: rows of A and C");
  app.add_option("-n", spec.n, "WMMA GEMM: columns of B and C");
  app.add_option("-k", spec.k, "WMMA GEMM: columns of A, rows of B");
  app.add_option("--chip", spec.chip, "WMMA GEMM: sm_70, sm_75, sm_80 or sm_90")
      ->capture_default_str();
  app.add_flag("--out-f16", spec.outF16, "WMMA GEMM: C in f16 instead of f32");
  app.add_option("--fragment", fragment, "WMMA GEMM: 16x16x16, 32x8x16 or 8x32x16")
      ->capture_default_str();
  app.add_option("--warps-m", spec.warpsM, "WMMA GEMM: warps per block along M")
      ->capture_default_str();
  app.add_option("--warps-n", spec.warpsN, "WMMA GEMM: warps per block along N")
      ->capture_default_str();
  app.add_option("--frags-m", spec.fragsM, "WMMA GEMM: fragments per warp along M")
      ->capture_default_str();
  app.add_option("--frags-n", spec.fragsN, "WMMA GEMM: fragments per warp along N")
      ->capture_default_str();

  std::string conv, gemm, matmul, dtype = "f16", tier = "tc", emit = "ptx", act = "none",
                                  cShape = "none", cubin, forceTiles;
  int64_t dilation = 1, group = 1;
  bool bias = false, residual = false, transA = false, transB = false, sharedB = false;
  float alpha = 1, beta = 1, actAlpha = 0, actBeta = 0;
  app.add_option("--conv", conv,
                 "N,H,W,C,K,R,S,stride,pad (or ...,S,strideH,strideW,padH,padW): NHWC conv, "
                 "OHWI weights");
  app.add_option("--dilation", dilation, "conv dilation")->capture_default_str();
  app.add_option("--group", group, "conv groups")->capture_default_str();
  app.add_flag("--bias", bias, "conv bias");
  app.add_flag("--residual", residual, "conv residual");
  app.add_option("--gemm", gemm, "M,N,K: gemm");
  app.add_flag("--trans-a", transA, "gemm transA");
  app.add_flag("--trans-b", transB, "gemm transB");
  app.add_option("--alpha", alpha, "gemm alpha")->capture_default_str();
  app.add_option("--beta", beta, "gemm beta")->capture_default_str();
  app.add_option("--c", cShape, "gemm C: none, 1, n, m1 or mn")->capture_default_str();
  app.add_option("--matmul", matmul, "B,M,N,K: batched matmul [B,M,K] x [B,K,N]");
  app.add_flag("--shared-b", sharedB, "matmul: B is [K,N], broadcast over the batch");
  app.add_option("--act", act, "activation: none, relu, clip, leaky_relu, sigmoid, tanh, "
                               "hard_swish, gelu, gelu_tanh, silu, hard_sigmoid")
      ->capture_default_str();
  app.add_option("--act-alpha", actAlpha, "activation alpha")->capture_default_str();
  app.add_option("--act-beta", actBeta, "activation beta")->capture_default_str();
  app.add_option("--dtype", dtype, "operand and result type: f16 or f32")
      ->check(CLI::IsMember({"f16", "f32"}))
      ->capture_default_str();
  app.add_option("--tier", tier,
                 "tc (sm_70 WMMA), tc80 (sm_80 mma.sync, cp.async), tc90 (sm_90a wgmma) or simt")
      ->check(CLI::IsMember({"tc", "tc80", "tc90", "simt"}))
      ->capture_default_str();
  app.add_option("--emit", emit,
                 "ir (tiled gpu-dialect IR), raw-ir (as built, before canonicalization) or ptx")
      ->check(CLI::IsMember({"ir", "raw-ir", "ptx"}))
      ->capture_default_str();
  app.add_option("--force-tiles", forceTiles,
                 "tc: WMxWN,FMxFN,BK, warps per block, fragments per warp and blockK "
                 "instead of the heuristic's (its fragment shape kept), e.g. 2x2,4x4,32; "
                 "a depthwise conv: dw:LANES,WIDTH, channels and outputs along W a thread");
  int64_t splitK = 0, stages = 0, raster = -1, persistent = 0;
  bool tma = false, warpSpecialized = false, pingpong = false, tmaStore = false;
  app.add_flag("--tma-store", tmaStore,
               "tc90: with --persistent and --warp-specialized, one warpgroup a side: the "
               "epilogue in registers, its f16 output stored by TMA from a map passed "
               "after b_map (out_map); no residual");
  app.add_flag("--pingpong", pingpong,
               "tc90: with --persistent, two math sides taking the block's tiles in turn "
               "(one's epilogue beside the other's wgmmas); implies --warp-specialized");
  app.add_flag("--warp-specialized", warpSpecialized,
               "tc90: a producer warpgroup issuing the TMA copies beside the math "
               "warpgroups, mbarriers between them (with --persistent, across tiles); "
               "implies --tma");
  app.add_flag("--tma", tma,
               "tc90: A and B tiles by TMA from tensor maps passed first (a_map, b_map), "
               "K-major or MN-major as the operands lie (a windowed conv's A by TMA's "
               "im2col mode: channels a multiple of 64, one group), one batch, whole K");
  app.add_option("--persistent", persistent,
                 "tc90: a persistent grid of this many blocks, each taking tiles in turn "
                 "(-1: the reference GPU's SMs times the blocks an SM holds)");
  app.add_option("--raster", raster,
                 "tc80/tc90: the grid's tiles in groups of this many row tiles (0: as "
                 "launched; default: the heuristic's); the other tiers ignore it");
  app.add_option("--stages", stages, "tc80: shared buffers of the cp.async pipeline (2 to 8) "
                                     "instead of the heuristic's");
  app.add_option("--split-k", splitK,
                 "divide the K steps among this many blocks instead of the heuristic's "
                 "choice (1: no split)");
  app.add_option("--cubin", cubin, "also assemble for these SMs, e.g. sm_75,sm_80,sm_90");
  app.add_option("-o,--output", output, "file to write (- for stdout)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  mlir::MLIRContext context;
  mlir::ScopedDiagnosticHandler handler(&context, [](mlir::Diagnostic &diag) {
    llvm::errs() << "error: " << diag.str() << "\n";
    return mlir::success();
  });

  int modes = !conv.empty() + !gemm.empty() + !matmul.empty();
  if (modes == 0) {
    // The plain WMMA GEMM.
    if (!spec.m || !spec.n || !spec.k) {
      std::cerr << "error: give -m, -n and -k, or one of --conv, --gemm, --matmul\n";
      return 2;
    }
    if (std::sscanf(fragment.c_str(), "%ldx%ldx%ld", &spec.fragment.m, &spec.fragment.n,
                    &spec.fragment.k) != 3) {
      std::cerr << "error: --fragment wants MxNxK, got '" << fragment << "'\n";
      return 2;
    }
    auto launch = planWmmaGemm(mlir::UnknownLoc::get(&context), spec);
    if (mlir::failed(launch))
      return 1;
    mlir::FailureOr<std::string> ptx = emitWmmaGemmPtx(context, spec);
    if (mlir::failed(ptx))
      return 1;
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "// tessel-launch kernel=" << spec.kernelName << " grid=" << launch->grid[0] << ","
       << launch->grid[1] << "," << launch->grid[2] << " block=" << launch->block[0] << ","
       << launch->block[1] << "," << launch->block[2] << " shared=" << launch->sharedBytes
       << " m=" << spec.m << " n=" << spec.n << " k=" << spec.k
       << " out=" << (spec.outF16 ? "f16" : "f32") << "\n"
       << *ptx;
    return writeOutput(output, text) ? 0 : 1;
  }
  if (modes > 1) {
    std::cerr << "error: give one of --conv, --gemm, --matmul\n";
    return 2;
  }

  ElemType type = dtype == "f16" ? ElemType::F16 : ElemType::F32;
  GemmProblem problem;
  std::vector<int64_t> v;
  if (!conv.empty()) {
    if (!parseList(conv, 9, v) && !parseList(conv, 11, v)) {
      std::cerr << "error: --conv wants N,H,W,C,K,R,S,stride,pad or "
                   "N,H,W,C,K,R,S,strideH,strideW,padH,padW\n";
      return 2;
    }
    ConvShape c;
    c.batch = v[0];
    c.inH = v[1];
    c.inW = v[2];
    c.inC = v[3];
    c.outC = v[4];
    c.kH = v[5];
    c.kW = v[6];
    const bool apart = v.size() == 11; // the im2row'ed stem: stride 2 x 1, pads 3 x 0
    c.strideH = v[7];
    c.strideW = v[apart ? 8 : 7];
    c.padH = v[apart ? 9 : 8];
    c.padW = v[apart ? 10 : 8];
    c.dilH = c.dilW = dilation;
    if (c.strideH < 1 || c.strideW < 1 || c.padH < 0 || c.padW < 0 || dilation < 1) {
      std::cerr << "error: --conv wants strides and a dilation of at least 1, pads of 0 or more\n";
      return 2;
    }
    c.group = group;
    c.outH = (c.inH + 2 * c.padH - dilation * (c.kH - 1) - 1) / c.strideH + 1;
    c.outW = (c.inW + 2 * c.padW - dilation * (c.kW - 1) - 1) / c.strideW + 1;
    if (group < 1 || c.inC % group || c.outC % group || c.outH < 1 || c.outW < 1) {
      std::cerr << "error: --conv shape has no output or does not divide into groups\n";
      return 2;
    }
    problem = GemmProblem::forConv(c, type);
    if (bias)
      problem.addend = type;
    if (residual)
      problem.residual = type;
  } else if (!gemm.empty()) {
    if (!parseList(gemm, 3, v)) {
      std::cerr << "error: --gemm wants M,N,K\n";
      return 2;
    }
    problem.op = GemmOpKind::Gemm;
    problem.a = problem.b = problem.out = type;
    problem.m = v[0];
    problem.n = v[1];
    problem.k = v[2];
    problem.transA = transA;
    problem.transB = transB;
    problem.alpha = alpha;
    problem.beta = beta;
    if (cShape != "none") {
      problem.addend = type;
      if (cShape == "1") {
        problem.addendRowStride = problem.addendColStride = 0;
      } else if (cShape == "n") {
        problem.addendRowStride = 0;
        problem.addendColStride = 1;
      } else if (cShape == "m1") {
        problem.addendRowStride = 1;
        problem.addendColStride = 0;
      } else if (cShape == "mn") {
        problem.addendRowStride = problem.n;
        problem.addendColStride = 1;
      } else {
        std::cerr << "error: --c wants none, 1, n, m1 or mn\n";
        return 2;
      }
    }
  } else {
    if (!parseList(matmul, 4, v)) {
      std::cerr << "error: --matmul wants B,M,N,K\n";
      return 2;
    }
    problem.op = GemmOpKind::MatMul;
    problem.a = problem.b = problem.out = type;
    problem.batch = v[0];
    problem.m = v[1];
    problem.n = v[2];
    problem.k = v[3];
    problem.batchDims.push_back(BatchDim{v[0], 1, sharedB ? 0 : 1});
  }
  std::optional<Activation> activation = parseActivation(act);
  if (!activation) {
    std::cerr << "error: unknown activation '" << act << "'\n";
    return 2;
  }
  problem.act = *activation;
  problem.actAlpha = actAlpha;
  problem.actBeta = actBeta;

  GemmTier gemmTier = tier == "tc"     ? GemmTier::TensorCore
                      : tier == "tc80" ? GemmTier::TensorCoreSm80
                      : tier == "tc90" ? GemmTier::TensorCoreSm90
                                       : GemmTier::Simt;
  std::optional<TileConfig> tiles = chooseTiles(problem, gemmTier);
  if (!tiles) {
    std::cerr << "error: the " << tier << " tier has no kernel for this problem"
              << (onTensorCores(gemmTier) && type != ElemType::F16
                      ? " (Tensor Cores need f16 operands)"
                      : "")
              << "\n";
    return 1;
  }
  if (!forceTiles.empty() && tiles->dwLanes) {
    // The depthwise kernel: dw:LANES,WIDTH.
    int lanes, width;
    char tail;
    std::optional<TileConfig> forced;
    if (std::sscanf(forceTiles.c_str(), "dw:%d,%d%c", &lanes, &width, &tail) == 2)
      forced = depthwiseTiles(problem, lanes, width);
    if (!forced) {
      std::cerr << "error: --force-tiles wants dw:LANES,WIDTH for a depthwise conv (lanes "
                   "dividing the channels, at most 16 bytes; width at most the output's)\n";
      return 2;
    }
    tiles = forced;
  } else if (!forceTiles.empty()) {
    int wm, wn, fm, fn, bk;
    char tail;
    if (!onTensorCores(gemmTier) ||
        std::sscanf(forceTiles.c_str(), "%dx%d,%dx%d,%d%c", &wm, &wn, &fm, &fn, &bk, &tail) != 5 ||
        wm < 1 || wn < 1 || fm < 1 || fn < 1 || bk < 16 || bk % 16) {
      std::cerr << "error: --force-tiles wants WMxWN,FMxFN,BK (tc tier, BK a multiple of 16)\n";
      return 2;
    }
    if (gemmTier == GemmTier::TensorCoreSm90) {
      // WGMxWGN,FMxN,64: warpgroups, fm wgmma tiles of m64 x n each.
      if (bk != 64 || fn % 8 || fn > 256) {
        std::cerr << "error: tc90 tiles are WGMxWGN,FMxN,64 with N a multiple of 8 up to 256\n";
        return 2;
      }
      tiles->fragN = fn;
      fn = 1;
    }
    tiles->warpsM = wm;
    tiles->warpsN = wn;
    tiles->fragsM = fm;
    tiles->fragsN = fn;
    tiles->blockM = wm * fm * tiles->fragM;
    tiles->blockN = wn * fn * tiles->fragN;
    tiles->blockK = bk;
    tiles->splitK = 1;
  }
  if (stages != 0) {
    if ((gemmTier != GemmTier::TensorCoreSm80 && gemmTier != GemmTier::TensorCoreSm90) ||
        stages < 2 || stages > 8) {
      std::cerr << "error: --stages wants 2 to 8 (tc80 and tc90 tiers)\n";
      return 2;
    }
    tiles->stages = stages;
  }
  // The other tiers take their tiles as launched: --raster leaves them so.
  if (raster >= 0 &&
      (gemmTier == GemmTier::TensorCoreSm80 || gemmTier == GemmTier::TensorCoreSm90))
    tiles->rasterM = raster;
  if (tma || warpSpecialized || pingpong)
    tiles->tma = true;
  if (warpSpecialized || pingpong)
    tiles->warpSpecialized = true;
  if (pingpong)
    tiles->pingpong = true;
  if (tmaStore)
    tiles->tmaStore = true;
  if (persistent != 0)
    tiles->persistent = persistent < 0 ? persistentGrid(problem, *tiles) : persistent;
  if (splitK != 0) {
    const int64_t steps = (problem.k + tiles->blockK - 1) / tiles->blockK;
    tiles->splitK = splitK;
    if (splitK < 1 || tiles->direct || problem.batch * splitK > 65535 ||
        (splitK - 1) * tiles->stepsPerSplit(problem.k) >= steps) {
      std::cerr << "error: --split-k wants a count that leaves no split empty (not for the "
                   "direct conv)\n";
      return 2;
    }
  }
  // A forced tiling (the direct depthwise kernel's is checked above) must
  // be one the heuristic could have picked.
  const bool forced =
      !forceTiles.empty() || stages != 0 || splitK != 0 || persistent != 0 || tma ||
      warpSpecialized || pingpong || tmaStore;
  if (forced && !tiles->direct && !tilingFits(problem, *tiles)) {
    // e.g. a tc90 tile whose MN-major operand is not whole 64-row atoms
    // (N = 96 of a B without transB): the kernel would read past its tiles.
    std::cerr << "error: the forced tiling does not fit this problem on " << tier
              << " (shared memory, the operands' runs, wgmma's layouts or the grid)\n";
    return 2;
  }
  GemmKernel kernel{problem, *tiles, tier + "_kernel"};

  if (emit == "raw-ir") {
    // The emitter's builder calls as they were made: nothing folded or
    // deduplicated, so two emitters agree here only if they built the same
    // ops in the same order.
    mlir::DialectRegistry registry;
    registerCodegenDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    mlir::OpBuilder b(&context);
    mlir::OwningOpRef<mlir::ModuleOp> module = mlir::ModuleOp::create(b.getUnknownLoc());
    b.setInsertionPointToStart(module->getBody());
    auto gpuModule = b.create<mlir::gpu::GPUModuleOp>(b.getUnknownLoc(), "tessel_gemm_" + tier);
    if (mlir::failed(buildGemmKernel(b, gpuModule, kernel)))
      return 1;
    std::string text = describe(kernel);
    llvm::raw_string_ostream os(text);
    (*module)->print(os, mlir::OpPrintingFlags().printGenericOpForm().enableDebugInfo().assumeVerified());
    return writeOutput(output, text) ? 0 : 1;
  }

  if (emit == "ir") {
    auto module = buildGemmModule(context, "tessel_gemm_" + tier, {kernel});
    if (mlir::failed(module))
      return 1;
    std::string text = describe(kernel);
    llvm::raw_string_ostream os(text);
    (*module)->print(os);
    return writeOutput(output, text) ? 0 : 1;
  }

  Targets targets;
  if (!cubin.empty()) {
    std::stringstream in(cubin);
    std::string item;
    while (std::getline(in, item, ',')) {
      if (item.rfind("sm_", 0) != 0) {
        std::cerr << "error: --cubin wants sm_XY,...\n";
        return 2;
      }
      targets.cubinArchs.push_back(std::stoi(item.substr(3)));
    }
  }
  auto module = compileGemmModule(context, gemmTier, {kernel}, targets,
                                  [&](size_t) { return mlir::UnknownLoc::get(&context); });
  if (mlir::failed(module))
    return 1;
  const KernelImage &ptx = module->images.front();
  std::string text = describe(kernel) + std::string(ptx.data.begin(), ptx.data.end());
  if (!writeOutput(output, text))
    return 1;
  // Cubins go beside the PTX (OUTPUT.sm_XY.cubin), for the GPU check.
  for (size_t i = 1; i < module->images.size(); ++i) {
    const KernelImage &image = module->images[i];
    std::cout << "cubin sm_" << image.arch << ": " << image.data.size() << " bytes\n";
    if (output != "-" &&
        !writeOutput(output + ".sm_" + std::to_string(image.arch) + ".cubin",
                     std::string(image.data.begin(), image.data.end())))
      return 1;
  }
  size_t runnable = llvm::count_if(targets.cubinArchs,
                                   [&](int arch) { return runsOn(gemmTier, arch); });
  if (runnable && module->images.size() != runnable + 1) {
    std::cerr << "error: this build cannot assemble cubins (no nvJitLink)\n";
    return 1;
  }
  return 0;
}
