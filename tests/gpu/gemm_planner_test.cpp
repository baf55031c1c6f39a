//===- gemm_planner_test.cpp - conv/gemm steps to kernel variants --------===//
//
// GemmPlanner: the variants of a step per tier, parameters bound to the
// step's tensors, kernels shared between identical steps, the direct conv
// and split-K's two launches, the modules and their PTX and cubins.
//
//===----------------------------------------------------------------------===//
#include "CubinAssembler.h"
#include "ImplicitGemm.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Operation.h"

#include <gtest/gtest.h>

#include <array>
#include <deque>
#include <string>
#include <vector>

using namespace mlir;
using namespace tessel::codegen;

namespace {

/// Steps as the engine writer shows them, on ops with the graph dialect's
/// attributes (the planner reads attributes, not the dialect's C++ API).
class Steps {
public:
  Steps() { ctx.allowUnregisteredDialects(); }

  int32_t tensor(ArrayRef<int64_t> shape, Type element) {
    types.push_back(RankedTensorType::get(shape, element));
    return int32_t(types.size() - 1);
  }
  Type f16() { return Float16Type::get(&ctx); }
  Type f32() { return Float32Type::get(&ctx); }

  /// A conv step: 3x3 stride 1 pad 1 unless told otherwise.
  StepView conv(std::vector<int32_t> inputs, int32_t output, int64_t group = 1,
                llvm::StringRef act = "relu", int64_t kernel = 3) {
    OpBuilder b(&ctx);
    OperationState state(UnknownLoc::get(&ctx), "tessel.conv");
    int64_t pad = kernel / 2;
    state.addAttribute("layout", b.getStringAttr("NHWC"));
    state.addAttribute("strides", b.getDenseI64ArrayAttr({1, 1}));
    state.addAttribute("pads", b.getDenseI64ArrayAttr({pad, pad, pad, pad}));
    state.addAttribute("dilations", b.getDenseI64ArrayAttr({1, 1}));
    state.addAttribute("group", b.getI64IntegerAttr(group));
    state.addAttribute("activation", b.getStringAttr(act));
    return view(state, "conv", std::move(inputs), output);
  }

  StepView gemm(std::vector<int32_t> inputs, int32_t output, bool transB = true) {
    OpBuilder b(&ctx);
    OperationState state(UnknownLoc::get(&ctx), "tessel.gemm");
    state.addAttribute("alpha", b.getF32FloatAttr(1.0f));
    state.addAttribute("beta", b.getF32FloatAttr(1.0f));
    state.addAttribute("transA", b.getBoolAttr(false));
    state.addAttribute("transB", b.getBoolAttr(transB));
    return view(state, "gemm", std::move(inputs), output);
  }

  MLIRContext ctx;

private:
  StepView view(OperationState &state, llvm::StringRef name, std::vector<int32_t> inputs,
                int32_t output) {
    ops.push_back(Operation::create(state));
    indices.push_back(std::move(inputs));
    indices.push_back({output});
    StepView step;
    step.op = ops.back();
    step.name = name;
    step.inputs = indices[indices.size() - 2];
    step.outputs = indices.back();
    step.tensorTypes = types;
    return step;
  }

  std::vector<RankedTensorType> types;
  std::deque<std::vector<int32_t>> indices;
  std::vector<Operation *> ops;

public:
  ~Steps() {
    for (Operation *op : ops)
      op->destroy();
  }
};

/// A conv below 128 MFLOP (the 3x3 above at 14 x 14: 14 MFLOP) or with K
/// under 64 gets no tc-sm90 variant: tc-sm80 was mostly the faster there on
/// the H100, and its kernels run on sm_90 GPUs (also where sm_90 is the
/// only target).
TEST(Planner, SmallProblemsGetNoSm90) {
  Steps s;
  Type h = s.f16();
  int32_t x = s.tensor({1, 14, 14, 64}, h), w = s.tensor({64, 3, 3, 64}, h),
          y = s.tensor({1, 14, 14, 64}, h), big = s.tensor({32, 112, 112, 16}, h),
          w1 = s.tensor({32, 1, 1, 16}, h), bigOut = s.tensor({32, 112, 112, 32}, h);
  GemmPlanner planner(s.ctx, Targets{{75, 80, 90}});
  auto small = planner.plan(s.conv({x, w, -1, -1}, y));
  ASSERT_TRUE(succeeded(small));
  ASSERT_EQ(small->size(), 3u);
  EXPECT_EQ((*small)[0].tier, tessel::engine::Tier::tc_sm80);
  // 411 MFLOP but K 16 (EfficientNet-B0's first 1x1 at batch 32).
  auto shallow = planner.plan(s.conv({big, w1, -1, -1}, bigOut, 1, "relu", 1));
  ASSERT_TRUE(succeeded(shallow));
  EXPECT_EQ((*shallow)[0].tier, tessel::engine::Tier::tc_sm80);
  GemmPlanner hopperOnly(s.ctx, Targets{{90}});
  auto only = hopperOnly.plan(s.conv({x, w, -1, -1}, y));
  ASSERT_TRUE(succeeded(only));
  EXPECT_EQ((*only)[0].tier, tessel::engine::Tier::tc_sm80); // sm_80 cubins run on sm_90
}

TEST(Planner, VariantsModulesAndSharedKernels) {
  Steps s;
  Type h = s.f16();
  // 56 x 56: 231 MFLOP, a problem tc-sm90 pays for (SmallProblemsGetNoSm90).
  int32_t x = s.tensor({1, 56, 56, 64}, h), w = s.tensor({64, 3, 3, 64}, h),
          bias = s.tensor({64}, h), y1 = s.tensor({1, 56, 56, 64}, h),
          y2 = s.tensor({1, 56, 56, 64}, h), y3 = s.tensor({1, 56, 56, 64}, h),
          dw = s.tensor({64, 3, 3, 1}, h), xf = s.tensor({1, 56, 56, 64}, s.f32()),
          wf = s.tensor({64, 3, 3, 64}, s.f32()), yf = s.tensor({1, 56, 56, 64}, s.f32()),
          x14 = s.tensor({1, 14, 14, 64}, h), y14 = s.tensor({1, 14, 14, 64}, h);
  GemmPlanner planner(s.ctx, Targets{{75, 80, 90}});

  auto first = planner.plan(s.conv({x, w, bias, -1}, y1));
  ASSERT_TRUE(succeeded(first));
  // tc-sm90 (the targets include sm_90), tc-sm80 (they reach sm_80),
  // tc-sm70 and simt.
  ASSERT_EQ(first->size(), 4u);
  const KernelVariant &tc90 = (*first)[0], &tc80 = (*first)[1], &tc = (*first)[2],
                      &simt = (*first)[3];
  EXPECT_EQ(tc90.tier, tessel::engine::Tier::tc_sm90);
  EXPECT_EQ(tc90.minComputeCapability, 90);
  EXPECT_EQ(tc90.alignment, 16);
  ASSERT_EQ(tc90.launches.size(), 1u);
  EXPECT_EQ(tc90.launches[0].module, 0);
  EXPECT_GT(tc90.launches[0].sharedBytes, 0u);
  EXPECT_EQ(tc90.launches[0].block[0] % 128, 0u); // warpgroups
  EXPECT_EQ(tc80.tier, tessel::engine::Tier::tc_sm80);
  EXPECT_EQ(tc80.minComputeCapability, 80);
  EXPECT_EQ(tc80.alignment, 16);
  ASSERT_EQ(tc80.launches.size(), 1u);
  EXPECT_EQ(tc80.launches[0].module, 1);
  // Its stages live in dynamic shared memory, which the launch passes.
  EXPECT_GT(tc80.launches[0].sharedBytes, 0u);
  EXPECT_EQ(tc.tier, tessel::engine::Tier::tc_sm70);
  EXPECT_EQ(tc.minComputeCapability, 70);
  EXPECT_EQ(tc.alignment, 16);
  EXPECT_EQ(simt.tier, tessel::engine::Tier::simt);
  EXPECT_EQ(simt.minComputeCapability, 60);
  ASSERT_EQ(tc.launches.size(), 1u);
  const Launch &launch = tc.launches[0];
  EXPECT_EQ(launch.module, 2);
  EXPECT_EQ(simt.launches[0].module, 3);
  EXPECT_EQ(launch.kernel, tc.kernel);
  // Parameters bound to the step's tensors: input, weights, bias, result.
  ASSERT_EQ(launch.args.size(), 4u);
  EXPECT_EQ(launch.args[0].tensor, x);
  EXPECT_EQ(launch.args[1].tensor, w);
  EXPECT_EQ(launch.args[2].tensor, bias);
  EXPECT_EQ(launch.args[3].tensor, y1);
  for (const KernelArg &arg : launch.args)
    EXPECT_TRUE(arg.bytes.empty());
  EXPECT_EQ(launch.sharedBytes, 0u);
  EXPECT_EQ(launch.grid[2], 1u);

  // The same conv again shares the kernel; with a residual it does not.
  auto again = planner.plan(s.conv({y1, w, bias, -1}, y2));
  ASSERT_TRUE(succeeded(again));
  EXPECT_EQ((*again)[0].kernel, tc90.kernel);
  EXPECT_EQ((*again)[1].kernel, tc80.kernel);
  EXPECT_EQ((*again)[2].kernel, tc.kernel);
  EXPECT_EQ((*again)[3].kernel, simt.kernel);
  auto residual = planner.plan(s.conv({y2, w, bias, y1}, y3));
  ASSERT_TRUE(succeeded(residual));
  EXPECT_NE((*residual)[2].kernel, tc.kernel);
  EXPECT_EQ((*residual)[2].launches[0].args.size(), 5u);
  EXPECT_EQ((*residual)[2].launches[0].args[3].tensor, y1);

  // Depthwise: the depthwise kernel, simt only. 12544 outputs are too few
  // for more than one channel and output a thread: slabs of 32 channels by
  // 8 pixels, 2 slabs by ceil(196 / 8) pixel blocks.
  auto depthwise = planner.plan(s.conv({x14, dw, -1, -1}, y14, /*group=*/64));
  ASSERT_TRUE(succeeded(depthwise));
  ASSERT_EQ(depthwise->size(), 1u);
  EXPECT_EQ((*depthwise)[0].tier, tessel::engine::Tier::simt);
  ASSERT_EQ((*depthwise)[0].launches.size(), 1u);
  EXPECT_EQ((*depthwise)[0].launches[0].block[0], 256u);
  EXPECT_EQ((*depthwise)[0].launches[0].grid[0], 2u * 25u);
  // f32 operands: SIMT only.
  auto fp32 = planner.plan(s.conv({xf, wf, -1, -1}, yf));
  ASSERT_TRUE(succeeded(fp32));
  ASSERT_EQ(fp32->size(), 1u);
  EXPECT_EQ((*fp32)[0].tier, tessel::engine::Tier::simt);

  auto modules = planner.finish();
  ASSERT_TRUE(succeeded(modules));
  ASSERT_EQ(modules->size(), 4u);
  EXPECT_EQ((*modules)[0].name, "tessel_gemm_tc90");
  EXPECT_EQ((*modules)[1].name, "tessel_gemm_tc80");
  EXPECT_EQ((*modules)[2].name, "tessel_gemm_tc");
  EXPECT_EQ((*modules)[3].name, "tessel_gemm_simt");
  const std::array<int, 4> ptxArchs = {90, 80, 70, 60};
  const std::array<const KernelVariant *, 4> firsts = {&tc90, &tc80, &tc, &simt};
  for (size_t m = 0; m < 4; ++m) {
    const KernelModule &module = (*modules)[m];
    ASSERT_FALSE(module.images.empty());
    const KernelImage &ptx = module.images[0];
    EXPECT_FALSE(ptx.cubin);
    std::string text(ptx.data.begin(), ptx.data.end());
    EXPECT_EQ(ptx.arch, ptxArchs[m]);
    EXPECT_NE(text.find(".entry " + firsts[m]->kernel + "("), std::string::npos)
        << text.substr(0, 400);
    if (!canAssembleCubins())
      continue;
    // Cubins for the targets the tier runs on: tc-sm90 (sm_90a code) for
    // sm_90 alone, tc-sm80 none for sm_75.
    std::vector<int> archs = m == 0   ? std::vector<int>{90}
                             : m == 1 ? std::vector<int>{80, 90}
                                      : std::vector<int>{75, 80, 90};
    ASSERT_EQ(module.images.size(), archs.size() + 1);
    for (size_t i = 1; i < module.images.size(); ++i) {
      EXPECT_TRUE(module.images[i].cubin);
      EXPECT_EQ(module.images[i].arch, archs[i - 1]);
      EXPECT_GT(module.images[i].data.size(), 1000u);
    }
  }
  // The Tensor Core modules have 2 kernels each (plain and residual conv), simt 4
  // (+ the depthwise conv's direct kernel, + f32).
  std::string tc90Ptx((*modules)[0].images[0].data.begin(), (*modules)[0].images[0].data.end());
  std::string tc80Ptx((*modules)[1].images[0].data.begin(), (*modules)[1].images[0].data.end());
  std::string tcPtx((*modules)[2].images[0].data.begin(), (*modules)[2].images[0].data.end());
  std::string simtPtx((*modules)[3].images[0].data.begin(), (*modules)[3].images[0].data.end());
  auto entries = [](const std::string &text) {
    size_t count = 0;
    for (size_t at = text.find(".entry "); at != std::string::npos; at = text.find(".entry ", at + 1))
      ++count;
    return count;
  };
  EXPECT_EQ(entries(tc90Ptx), 2u);
  EXPECT_NE(tc90Ptx.find(".target sm_90a"), std::string::npos);
  EXPECT_NE(tc90Ptx.find("wgmma.mma_async.sync.aligned.m64n"), std::string::npos);
  EXPECT_EQ(entries(tc80Ptx), 2u);
  EXPECT_EQ(entries(tcPtx), 2u);
  EXPECT_EQ(entries(simtPtx), 4u);
}

/// A gemv (B of one column, no transB: K x 1, which lies as 1 x K) is
/// taken K-major, so that the tiers of 16-byte runs have a kernel for it,
/// and gets no tc-sm90 variant (N of 8 or fewer: tc-sm80 was the faster on
/// the H200, bench/NOTES.md (34)), nor do 16 columns of the same A
/// (MN-major B rows of 32 bytes; its 16 tiles of 64 rows less than half a
/// wave, NOTES (37)); 24 columns keep tc-sm90, as do 16 columns of 7680
/// rows (120 tiles).
TEST(Planner, GemvsTakeBKMajorOnSm80) {
  Steps s;
  Type h = s.f16();
  GemmPlanner planner(s.ctx, Targets{{75, 80, 90}});
  // The best tier planned for an M x N x K gemm of graph inputs, no transB.
  auto bestTier = [&](int64_t m, int64_t n, int64_t k) {
    auto variants = planner.plan(
        s.gemm({s.tensor({m, k}, h), s.tensor({k, n}, h)}, s.tensor({m, n}, h), false));
    EXPECT_TRUE(succeeded(variants) && !variants->empty()) << m << "x" << n << "x" << k;
    return succeeded(variants) && !variants->empty() ? (*variants)[0].tier
                                                     : tessel::engine::Tier::cpu;
  };
  EXPECT_EQ(bestTier(1024, 1, 65536), tessel::engine::Tier::tc_sm80);
  EXPECT_EQ(bestTier(1024, 16, 65536), tessel::engine::Tier::tc_sm80);
  EXPECT_EQ(bestTier(1024, 24, 65536), tessel::engine::Tier::tc_sm90);
  EXPECT_EQ(bestTier(7680, 16, 2560), tessel::engine::Tier::tc_sm90);
}

TEST(Planner, GemmBindsCAndNothingWithoutTargets) {
  Steps s;
  Type h = s.f16();
  int32_t a = s.tensor({1, 2048}, h), b = s.tensor({1000, 2048}, h), c = s.tensor({1000}, h),
          y = s.tensor({1, 1000}, h);
  {
    GemmPlanner planner(s.ctx, Targets{{75}});
    auto variants = planner.plan(s.gemm({a, b, c}, y));
    ASSERT_TRUE(succeeded(variants));
    // Targets below sm_80: no tc-sm80 variant.
    ASSERT_EQ(variants->size(), 2u);
    EXPECT_EQ((*variants)[0].tier, tessel::engine::Tier::tc_sm70);
    // The batch-1 classifier (a few tiles, K = 2048) splits K on Tensor
    // Cores: the partial sums take A, B and the workspace, the reduction
    // the workspace, C and Y.
    const std::vector<Launch> &launches = (*variants)[0].launches;
    ASSERT_EQ(launches.size(), 2u);
    ASSERT_EQ(launches[0].args.size(), 3u);
    EXPECT_EQ(launches[0].args[0].tensor, a);
    EXPECT_EQ(launches[0].args[1].tensor, b);
    EXPECT_EQ(launches[0].args[2].tensor, -1);
    EXPECT_GT(launches[0].args[2].workspaceBytes, 0u);
    EXPECT_EQ(launches[1].kernel, launches[0].kernel + "_reduce");
    ASSERT_EQ(launches[1].args.size(), 3u);
    EXPECT_EQ(launches[1].args[0].workspaceBytes, launches[0].args[2].workspaceBytes);
    EXPECT_EQ(launches[1].args[1].tensor, c);
    EXPECT_EQ(launches[1].args[2].tensor, y);
  }
  GemmPlanner none(s.ctx, Targets{});
  auto variants = none.plan(s.gemm({a, b, c}, y));
  ASSERT_TRUE(succeeded(variants));
  EXPECT_TRUE(variants->empty());
  auto modules = none.finish();
  ASSERT_TRUE(succeeded(modules));
  EXPECT_TRUE(modules->empty());
}

} // namespace
