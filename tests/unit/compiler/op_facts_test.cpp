//===- op_facts_test.cpp - what the dialect declares about each op --------===//
//
// Every op of the tessel dialect declares its facts in ODS (TesselOps.td,
// TesselTraits.h). These tests hold the declarations to the contracts that
// depend on them: each op has exactly one precision class, and the classes
// are the policy docs/architecture.md states (its table, copied here as the
// independent reference); each op that can be a step has a CPU kernel of its
// name (every engine step needs a cpu variant); the traits that passes and
// planners query mean what they say.
//
//===----------------------------------------------------------------------===//
#include "TesselDialect.h"

#include "tessel/cpu_kernels.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

namespace {

using namespace mlir;
using tessel::KernelFamily;
using tessel::PrecisionClass;

std::vector<RegisteredOperationName> tesselOps(MLIRContext &context) {
  context.loadDialect<tessel::TesselDialect>();
  std::vector<RegisteredOperationName> ops;
  for (RegisteredOperationName name : context.getRegisteredOperations())
    if (name.getDialectNamespace() == "tessel")
      ops.push_back(name);
  return ops;
}

std::string opName(RegisteredOperationName name) {
  return name.getStringRef().drop_front(std::string("tessel.").size()).str();
}

int precisionTraits(OperationName name) {
  using namespace tessel::traits;
  return int(name.hasTrait<Precision<PrecisionClass::TensorCore>::Impl>()) +
         int(name.hasTrait<Precision<PrecisionClass::F16>::Impl>()) +
         int(name.hasTrait<Precision<PrecisionClass::F32>::Impl>()) +
         int(name.hasTrait<Precision<PrecisionClass::Exact>::Impl>()) +
         int(name.hasTrait<Precision<PrecisionClass::InputStorage>::Impl>());
}

TEST(OpFacts, EveryOpDeclaresExactlyOnePrecisionClass) {
  MLIRContext context;
  std::vector<RegisteredOperationName> ops = tesselOps(context);
  ASSERT_GT(ops.size(), 90u);
  for (RegisteredOperationName name : ops)
    EXPECT_EQ(precisionTraits(name), 1) << name.getStringRef().str();
}

// docs/architecture.md, "Precision policy": the ops of each class (the
// "f32 ... and any op not listed" row lists the f32 ones).
const std::map<std::string, PrecisionClass> &documentedPolicy() {
  static const std::map<std::string, PrecisionClass> policy = [] {
    std::map<std::string, PrecisionClass> p;
    for (const char *op : {"conv", "conv_transpose", "gemm", "matmul", "attention", "pool_fc"})
      p[op] = PrecisionClass::TensorCore;
    for (const char *op :
         {"add", "sub", "mul", "div", "prelu", "sigmoid", "tanh", "sqrt", "reciprocal", "atan",
          "asinh", "softplus", "softsign", "hard_swish", "gelu", "gelu_tanh", "silu", "hard_sigmoid",
          "leaky_relu", "elu", "celu", "selu", "shrink", "avg_pool", "resize",
          // Declared F16; its manifest's dtypes decide per op (precisionClass:
          // f32 alone makes it F32).
          "custom"})
      p[op] = PrecisionClass::F16;
    for (const char *op :
         {"cumsum", "cumprod", "log_softmax", "reduce_sum", "reduce_prod",
          "reduce_l1", "reduce_l2", "reduce_log_sum", "reduce_log_sum_exp", "reduce_sum_square",
          "batch_norm", "instance_norm", "lrn", "exp", "pow", "sinh", "cosh",
          "log", "erf", "sin", "cos", "tan", "asin", "acos", "acosh", "atanh", "mod",
          "non_max_suppression"})
      p[op] = PrecisionClass::F32;
    for (const char *op :
         {"reshape", "transpose", "concat", "slice", "pad", "im2row", "gather",
          "gather_elements", "gather_nd", "scatter_nd", "trilu", "expand", "tile", "identity", "relu", "abs",
          "neg", "sign",
          "floor", "ceil", "round", "thresholded_relu", "clip", "max", "min", "where", "max_pool",
          "max_pool_indices",
          "reduce_max", "reduce_min", "argmax", "argmin", "top_k", "equal", "less", "less_equal",
          "greater", "greater_equal", "not", "and", "or", "xor", "cast", "constant"})
      p[op] = PrecisionClass::Exact;
    for (const char *op : {"layer_norm", "softmax", "reduce_mean", "elementwise_group"})
      p[op] = PrecisionClass::InputStorage;
    return p;
  }();
  return policy;
}

TEST(OpFacts, PrecisionClassesAreTheDocumentedPolicy) {
  MLIRContext context;
  std::set<std::string> seen;
  for (RegisteredOperationName name : tesselOps(context)) {
    std::string op = opName(name);
    seen.insert(op);
    auto it = documentedPolicy().find(op);
    ASSERT_NE(it, documentedPolicy().end()) << op << " is missing from the documented policy";
    EXPECT_TRUE(tessel::declaresPrecision(name)) << op;
    // An op built without operands is enough to ask its class.
    OperationState state(UnknownLoc::get(&context), name);
    Operation *instance = Operation::create(state);
    EXPECT_EQ(tessel::precisionClass(instance), it->second) << op;
    instance->destroy();
  }
  for (const auto &[op, cls] : documentedPolicy())
    EXPECT_TRUE(seen.count(op)) << op << " is documented but not an op of the dialect";
}

TEST(OpFacts, ACustomOpsClassIsItsManifests) {
  MLIRContext context;
  context.loadDialect<tessel::TesselDialect>();
  auto classOf = [&](const char *dtypes) {
    OperationState state(UnknownLoc::get(&context), "tessel.custom");
    state.addAttribute("dtypes", StringAttr::get(&context, dtypes));
    Operation *instance = Operation::create(state);
    PrecisionClass cls = tessel::precisionClass(instance);
    instance->destroy();
    return cls;
  };
  EXPECT_EQ(classOf("f32"), PrecisionClass::F32);
  EXPECT_EQ(classOf("f16"), PrecisionClass::F16);
  EXPECT_EQ(classOf("f16,f32"), PrecisionClass::F16);
}

TEST(OpFacts, EveryStepOpHasACpuKernelOfItsName) {
  MLIRContext context;
  for (RegisteredOperationName name : tesselOps(context)) {
    std::string op = opName(name);
    if (op == "constant") // constants are engine tensors, not steps
      continue;
    if (op == "custom") // the application's (tessel_register_custom_op)
      continue;
    EXPECT_NE(tessel::cpu::findKernel(op), nullptr) << op;
  }
}

TEST(OpFacts, TraitsMeanWhatTheySay) {
  MLIRContext context;
  std::map<std::string, RegisteredOperationName> byName;
  for (RegisteredOperationName name : tesselOps(context))
    byName.emplace(opName(name), name);
  auto named = [&](const char *op) { return byName.at(op); };
  // Comparisons: exactly the five with a bool result.
  std::set<std::string> comparisons;
  for (auto &[op, name] : byName)
    if (name.hasTrait<tessel::traits::Comparison>())
      comparisons.insert(op);
  EXPECT_EQ(comparisons, (std::set<std::string>{"equal", "less", "less_equal", "greater",
                                                "greater_equal"}));
  // Reductions: the ten reduce_* ops.
  std::set<std::string> reductions;
  for (auto &[op, name] : byName)
    if (name.hasTrait<tessel::traits::Reduction>())
      reductions.insert(op);
  EXPECT_EQ(reductions.size(), 10u);
  for (const std::string &op : reductions)
    EXPECT_EQ(op.rfind("reduce_", 0), 0u) << op;
  // Epilogue activations: the ones a conv/gemm epilogue implements.
  std::set<std::string> activations;
  for (auto &[op, name] : byName)
    if (name.hasInterface<tessel::EpilogueActivationOpInterface>())
      activations.insert(op);
  EXPECT_EQ(activations, (std::set<std::string>{"relu", "clip", "leaky_relu", "sigmoid", "tanh",
                                                "hard_swish", "gelu", "gelu_tanh", "silu",
                                                "hard_sigmoid"}));
  // Elementwise: unary ops keep their operand's type; binary ones broadcast.
  for (auto &[op, name] : byName) {
    bool unary = name.hasTrait<tessel::traits::ElementwiseUnary>();
    bool binary = name.hasTrait<tessel::traits::ElementwiseBinary>();
    EXPECT_FALSE(unary && binary) << op;
    if (unary && op != "cast")
      EXPECT_TRUE(name.hasTrait<OpTrait::SameOperandsAndResultType>()) << op;
  }
  // Kernel families: the Tensor Core ops go to the implicit-GEMM codegen.
  EXPECT_EQ(tessel::kernelFamily(named("conv")), KernelFamily::Gemm);
  EXPECT_EQ(tessel::kernelFamily(named("gemm")), KernelFamily::Gemm);
  EXPECT_EQ(tessel::kernelFamily(named("matmul")), KernelFamily::Gemm);
  EXPECT_EQ(tessel::kernelFamily(named("add")), KernelFamily::Binary);
  EXPECT_EQ(tessel::kernelFamily(named("relu")), KernelFamily::Unary);
  EXPECT_EQ(tessel::kernelFamily(named("reshape")), KernelFamily::Copy);
  EXPECT_EQ(tessel::kernelFamily(named("layer_norm")), KernelFamily::LayerNorm);
  EXPECT_EQ(tessel::kernelFamily(named("pool_fc")), KernelFamily::PoolFc);
  EXPECT_EQ(tessel::kernelFamily(named("elementwise_group")), KernelFamily::ElementwiseGroup);
  EXPECT_EQ(tessel::kernelFamily(named("conv_transpose")), KernelFamily::None);
}

} // namespace
