// The elementwise groups' generated kernels (codegen/custom/
// ElementwiseGroups.cpp), without a GPU: the launch a step gets, the source
// generated for its shapes (vector loads where an input runs along the
// innermost dim, one load where it is broadcast along it, collapsed dims),
// one kernel for identical groups, and the module NVRTC compiles (a cubin
// per target and PTX, each defining the entries). The kernels' results are
// checked on the GPU (the tessel node cases test_tessel_elementwise_group_*).
#include "ElementwiseGroups.h"
#include "Nvrtc.h"
#include "TesselDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/DenseMap.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using tessel::codegen::KernelVariant;
using tessel::codegen::StepView;

class ElementwiseGroupKernels : public ::testing::Test {
protected:
  ElementwiseGroupKernels() {
    context.loadDialect<tessel::TesselDialect, mlir::func::FuncDialect>();
  }

  /// Plans every group of @f with `planner`; each step's variants.
  std::vector<std::vector<KernelVariant>> plan(const char *source,
                                               tessel::custom::ElementwiseGroupPlanner &planner) {
    module = mlir::parseSourceString<mlir::ModuleOp>(source, &context);
    EXPECT_TRUE(module);
    std::vector<std::vector<KernelVariant>> result;
    if (!module)
      return result;
    auto f = module->lookupSymbol<mlir::func::FuncOp>("f");
    llvm::DenseMap<mlir::Value, int32_t> index;
    auto number = [&](mlir::Value v) {
      index[v] = static_cast<int32_t>(types.size());
      types.push_back(mlir::cast<mlir::RankedTensorType>(v.getType()));
    };
    for (mlir::Value arg : f.getArguments())
      number(arg);
    f.walk([&](mlir::Operation *op) {
      for (mlir::Value v : op->getResults())
        number(v);
    });
    f.walk([&](mlir::Operation *op) {
      if (op->getName().getStringRef() != "tessel.elementwise_group")
        return;
      std::vector<int32_t> ins, outs;
      for (mlir::Value v : op->getOperands())
        ins.push_back(index.lookup(v));
      outs.push_back(index.lookup(op->getResult(0)));
      inputs.push_back(ins);
      outputs.push_back(outs);
      StepView step{op, op->getName().stripDialect(), inputs.back(), outputs.back(), types};
      mlir::FailureOr<std::vector<KernelVariant>> planned = planner.plan(step);
      EXPECT_TRUE(mlir::succeeded(planned));
      result.push_back(mlir::succeeded(planned) ? *planned : std::vector<KernelVariant>{});
    });
    return result;
  }

  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::vector<mlir::RankedTensorType> types;
  std::vector<std::vector<int32_t>> inputs, outputs; // kept alive for the steps' views
};

TEST_F(ElementwiseGroupKernels, ALaunchPerGroupSpecializedOnItsShapes) {
  tessel::custom::ElementwiseGroupPlanner planner(tessel::codegen::Targets{{75, 80, 90}});
  auto steps = plan(R"(
    func.func @f(%x: tensor<2x7x9x24xf16>, %w: tensor<24xf16>, %c: tensor<2x7x9x1xi1>, %s: tensor<3x5x7xf32>, %r: tensor<5x1xf32>, %big: tensor<1x2x3xf64>) {
      %0 = tessel.elementwise_group "mul $0 $1; sigmoid %0; where $2 %1 $0"(%x, %w, %c) : (tensor<2x7x9x24xf16>, tensor<24xf16>, tensor<2x7x9x1xi1>) -> tensor<2x7x9x24xf16>
      %1 = tessel.elementwise_group "add $0 $1; tanh %0"(%s, %r) : (tensor<3x5x7xf32>, tensor<5x1xf32>) -> tensor<3x5x7xf32>
      %2 = tessel.elementwise_group "mul $0 $1; sigmoid %0; where $2 %1 $0"(%x, %w, %c) : (tensor<2x7x9x24xf16>, tensor<24xf16>, tensor<2x7x9x1xi1>) -> tensor<2x7x9x24xf16>
      %3 = tessel.elementwise_group "relu $0; neg %0"(%big) : (tensor<1x2x3xf64>) -> tensor<1x2x3xf64>
      return
    })",
                    planner);
  ASSERT_EQ(steps.size(), 4u);
  // 3024 elements in runs of 8 (24 channels), 378 threads: 2 blocks of 256.
  ASSERT_EQ(steps[0].size(), 1u);
  const KernelVariant &v = steps[0][0];
  EXPECT_EQ(v.tier, tessel::engine::Tier::simt);
  EXPECT_EQ(v.minComputeCapability, 75);
  ASSERT_EQ(v.launches.size(), 1u);
  EXPECT_EQ(v.launches[0].kernel, "tsl_group_0");
  EXPECT_EQ(v.launches[0].grid[0], 2u);
  EXPECT_EQ(v.launches[0].block[0], 256u);
  ASSERT_EQ(v.launches[0].args.size(), 4u); // x, w, c, the result
  EXPECT_EQ(v.launches[0].args[0].tensor, 0);
  EXPECT_EQ(v.launches[0].args[2].tensor, 2);
  EXPECT_EQ(v.launches[0].args[3].tensor, 6);
  // The same program on the same shapes: the same kernel.
  ASSERT_EQ(steps[2].size(), 1u);
  EXPECT_EQ(steps[2][0].launches[0].kernel, "tsl_group_0");
  // Innermost dim 7: one element a thread, 105 of them.
  ASSERT_EQ(steps[1].size(), 1u);
  EXPECT_EQ(steps[1][0].launches[0].kernel, "tsl_group_1");
  EXPECT_EQ(steps[1][0].launches[0].grid[0], 1u);
  // f64 stays on the CPU tier.
  EXPECT_TRUE(steps[3].empty());

  const std::string source = planner.source();
  // x runs along the innermost dim: 16-byte loads of 8 halves; w by
  // channel, every image and pixel (the dims 2 x 7 x 9 merge: one stride 0);
  // c is broadcast along the channels: one byte a run.
  EXPECT_NE(source.find("const TslVec<unsigned short, 8> w = *reinterpret_cast<const "
                        "TslVec<unsigned short, 8> *>(a0 + o + c);"),
            std::string::npos)
      << source;
  EXPECT_NE(source.find("const unsigned i1 = rest % 3u * V; rest /= 3u;"), std::string::npos)
      << source;
  EXPECT_NE(source.find("const unsigned o = i0 * 24u + i1;"), std::string::npos) << source;
  EXPECT_NE(source.find("const unsigned o = i1;"), std::string::npos) << source;
  EXPECT_NE(source.find("const unsigned o = i0;\n    const float s = tsl_widen(a2[o]);"),
            std::string::npos)
      << source;
  EXPECT_NE(source.find("(x2[e] != 0.0f ? v1 : x0[e])"), std::string::npos) << source;
  // [3, 5, 7] + [5, 1]: r is broadcast along the innermost dim and the first.
  EXPECT_NE(source.find("constexpr int V = 1;"), std::string::npos) << source;
  EXPECT_NE(source.find("if (run >= 105u) return;"), std::string::npos) << source;
  // Twice the same program: one kernel in the module.
  EXPECT_EQ(source.find("tsl_group_2"), std::string::npos);

  if (!tessel::custom::nvrtcError().empty())
    GTEST_SKIP() << tessel::custom::nvrtcError();
  mlir::FailureOr<std::vector<tessel::codegen::KernelModule>> modules = planner.finish();
  ASSERT_TRUE(mlir::succeeded(modules));
  ASSERT_EQ(modules->size(), 1u);
  const tessel::codegen::KernelModule &m = modules->front();
  ASSERT_EQ(m.images.size(), 4u); // sm_75, sm_80, sm_90, compute_75 PTX
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(m.images[i].cubin);
    EXPECT_EQ(m.images[i].arch, std::vector<int>({75, 80, 90})[i]);
    EXPECT_EQ(m.images[i].waitsForPriorGrids, i == 2);
    EXPECT_EQ(std::string(m.images[i].data.begin(), m.images[i].data.begin() + 4), "\x7f" "ELF");
  }
  const std::string ptx(m.images[3].data.begin(), m.images[3].data.end());
  EXPECT_FALSE(m.images[3].cubin);
  EXPECT_NE(ptx.find(".entry tsl_group_0("), std::string::npos);
  EXPECT_NE(ptx.find(".entry tsl_group_1("), std::string::npos);
  // The sm_75 PTX does not wait (griddepcontrol is sm_90's).
  EXPECT_EQ(ptx.find("griddepcontrol"), std::string::npos);

  // Deterministic: planned and compiled again, the same bytes.
  tessel::custom::ElementwiseGroupPlanner again(tessel::codegen::Targets{{75, 80, 90}});
  inputs.clear();
  outputs.clear();
  types.clear();
  plan(R"(
    func.func @f(%x: tensor<2x7x9x24xf16>, %w: tensor<24xf16>, %c: tensor<2x7x9x1xi1>, %s: tensor<3x5x7xf32>, %r: tensor<5x1xf32>, %big: tensor<1x2x3xf64>) {
      %0 = tessel.elementwise_group "mul $0 $1; sigmoid %0; where $2 %1 $0"(%x, %w, %c) : (tensor<2x7x9x24xf16>, tensor<24xf16>, tensor<2x7x9x1xi1>) -> tensor<2x7x9x24xf16>
      %1 = tessel.elementwise_group "add $0 $1; tanh %0"(%s, %r) : (tensor<3x5x7xf32>, tensor<5x1xf32>) -> tensor<3x5x7xf32>
      return
    })",
       again);
  mlir::FailureOr<std::vector<tessel::codegen::KernelModule>> same = again.finish();
  ASSERT_TRUE(mlir::succeeded(same));
  ASSERT_EQ(same->front().images.size(), 4u);
  for (size_t i = 0; i < 4; ++i)
    EXPECT_EQ(same->front().images[i].data, m.images[i].data) << "image " << i;
}

TEST_F(ElementwiseGroupKernels, NothingPlannedNoModule) {
  tessel::custom::ElementwiseGroupPlanner planner(tessel::codegen::Targets{{80}});
  mlir::FailureOr<std::vector<tessel::codegen::KernelModule>> modules = planner.finish();
  ASSERT_TRUE(mlir::succeeded(modules));
  EXPECT_TRUE(modules->empty());
}

} // namespace
