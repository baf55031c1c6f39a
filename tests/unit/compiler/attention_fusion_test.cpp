//===- attention_fusion_test.cpp - the fused graph against the unfused one ===//
//
// Attention as PyTorch exports it, compiled twice: as written (matmul,
// scale, mask, softmax, matmul: the unfused steps) and through the pipeline,
// whose --tessel-fuse-attention makes it one tessel.attention step. Both run
// on the CPU tier on the same inputs and must agree: at fp32 within the
// unfused steps' f32 rounding, at fp16 within one f16 rounding of the result
// (the inputs are multiples of 1/64 in [-1, 1] and the masks multiples of
// 1/4, exact in f16, and the fused CPU kernel computes in double). With the
// projections in the graph (--tessel-attention-layout's cases), inputs and
// weights are multiples of 1/8 in [-1/2, 1/2], so that the projections too
// are exact in f16.
//
//===----------------------------------------------------------------------===//
#include "EngineWriter.h"
#include "Pipeline.h"
#include "TesselDialect.h"
#include "tessel_runtime.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

// BERT's form: additive key-padding mask, scale as a division.
const char *kBert = R"mlir(
func.func @main(%q: tensor<2x3x5x16xf32> {tessel.name = "q"}, %k: tensor<2x3x7x16xf32> {tessel.name = "k"},
                %v: tensor<2x3x7x8xf32> {tessel.name = "v"}, %mask: tensor<2x1x1x7xf32> {tessel.name = "mask"})
    -> (tensor<2x3x5x8xf32> {tessel.name = "y"}) {
  %kt = tessel.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x3x7x16xf32>) -> tensor<2x3x16x7xf32>
  %s = tessel.matmul %q, %kt : (tensor<2x3x5x16xf32>, tensor<2x3x16x7xf32>) -> tensor<2x3x5x7xf32>
  %c = tessel.constant dense<4.0> : tensor<f32>
  %d = tessel.div %s, %c : (tensor<2x3x5x7xf32>, tensor<f32>) -> tensor<2x3x5x7xf32>
  %m = tessel.add %d, %mask : (tensor<2x3x5x7xf32>, tensor<2x1x1x7xf32>) -> tensor<2x3x5x7xf32>
  %w = tessel.softmax %m {axis = 3 : i64} : tensor<2x3x5x7xf32>
  %y = tessel.matmul %w, %v : (tensor<2x3x5x7xf32>, tensor<2x3x7x8xf32>) -> tensor<2x3x5x8xf32>
  return %y : tensor<2x3x5x8xf32>
}
)mlir";

// GPT-2's form: a constant causal triangle as where(tril, s, finfo.min), a
// bool key mask as where(keep, 0, -inf) added, rank 3.
const char *kGpt = R"mlir(
func.func @main(%q: tensor<4x6x8xf32> {tessel.name = "q"}, %k: tensor<4x6x8xf32> {tessel.name = "k"},
                %v: tensor<4x6x8xf32> {tessel.name = "v"}, %keep: tensor<4x1x6xi1> {tessel.name = "keep"})
    -> (tensor<4x6x8xf32> {tessel.name = "y"}) {
  %kt = tessel.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<4x6x8xf32>) -> tensor<4x8x6xf32>
  %s = tessel.matmul %q, %kt : (tensor<4x6x8xf32>, tensor<4x8x6xf32>) -> tensor<4x6x6xf32>
  %c = tessel.constant dense<0.353553385> : tensor<f32>
  %d = tessel.mul %s, %c : (tensor<4x6x6xf32>, tensor<f32>) -> tensor<4x6x6xf32>
  %tril = tessel.constant dense<[[true, false, false, false, false, false], [true, true, false, false, false, false], [true, true, true, false, false, false], [true, true, true, true, false, false], [true, true, true, true, true, false], [true, true, true, true, true, true]]> : tensor<6x6xi1>
  %min = tessel.constant dense<-3.40282347E+38> : tensor<f32>
  %cm = tessel.where %tril, %d, %min : (tensor<6x6xi1>, tensor<4x6x6xf32>, tensor<f32>) -> tensor<4x6x6xf32>
  %zero = tessel.constant dense<0.0> : tensor<f32>
  %ninf = tessel.constant dense<0xFF800000> : tensor<f32>
  %am = tessel.where %keep, %zero, %ninf : (tensor<4x1x6xi1>, tensor<f32>, tensor<f32>) -> tensor<4x1x6xf32>
  %m = tessel.add %cm, %am : (tensor<4x6x6xf32>, tensor<4x1x6xf32>) -> tensor<4x6x6xf32>
  %w = tessel.softmax %m {axis = 2 : i64} : tensor<4x6x6xf32>
  %y = tessel.matmul %w, %v : (tensor<4x6x6xf32>, tensor<4x6x8xf32>) -> tensor<4x6x8xf32>
  return %y : tensor<4x6x8xf32>
}
)mlir";

class AttentionFusionTest : public ::testing::Test {
public:
  AttentionFusionTest() { context.loadDialect<tessel::TesselDialect, mlir::func::FuncDialect>(); }

  /// The engine of `source`, through the pipeline at `precision` or (empty)
  /// as written; `ops` gets the tessel ops the engine's steps are.
  std::vector<uint8_t> compile(const char *source, const std::string &precision,
                               std::vector<std::string> &ops) {
    mlir::OwningOpRef<mlir::ModuleOp> module =
        mlir::parseSourceString<mlir::ModuleOp>(source, &context);
    EXPECT_TRUE(module);
    if (!module)
      return {};
    tessel::CompileOptions options;
    options.targets = {};
    if (!precision.empty()) {
      options.precision = precision;
      EXPECT_TRUE(mlir::succeeded(tessel::runPipeline(*module, options)));
    }
    module->walk([&](mlir::Operation *op) {
      if (op->getDialect() && op->getDialect()->getNamespace() == "tessel" &&
          op->getName().getStringRef() != "tessel.constant")
        ops.push_back(op->getName().stripDialect().str());
    });
    auto bytes = tessel::writeEngine(*module, options);
    EXPECT_TRUE(mlir::succeeded(bytes));
    return mlir::succeeded(bytes) ? *bytes : std::vector<uint8_t>{};
  }

private:
  mlir::MLIRContext context;
};

/// Runs an engine on the CPU with `inputs` (bytes, in input order) and
/// returns its one f32 output.
std::vector<float> run(const std::vector<uint8_t> &bytes,
                       const std::vector<std::vector<uint8_t>> &inputs, size_t outputs) {
  tessel_engine_t *engine = nullptr;
  tessel_context_t *context = nullptr;
  std::vector<float> y(outputs, NAN);
  EXPECT_EQ(tessel_engine_open_memory(bytes.data(), bytes.size(), &engine), nullptr);
  if (!engine)
    return y;
  EXPECT_EQ(tessel_context_create(engine, nullptr, &context), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i)
    EXPECT_EQ(tessel_context_bind_input(context, i, inputs[i].data(), inputs[i].size()), nullptr);
  EXPECT_EQ(tessel_context_bind_output(context, 0, y.data(), y.size() * sizeof(float)), nullptr);
  EXPECT_EQ(tessel_context_run(context), nullptr);
  tessel_context_release(context);
  tessel_engine_release(engine);
  return y;
}

/// `n` floats, multiples of `step` in [lo, hi], as bytes.
std::vector<uint8_t> floats(size_t n, std::mt19937 &rng, double lo, double hi, double step) {
  std::uniform_int_distribution<int> pick(static_cast<int>(lo / step), static_cast<int>(hi / step));
  std::vector<float> v(n);
  for (float &x : v)
    x = static_cast<float>(pick(rng) * step);
  std::vector<uint8_t> bytes(n * sizeof(float));
  std::memcpy(bytes.data(), v.data(), bytes.size());
  return bytes;
}

/// `fp16Spread`: where the attention's f16 result feeds more math (an output
/// projection), the sum over that math's inputs of |weight| * |attention
/// value| bound: each attention value's rounding (2^-11 relative) reaches the
/// result through it.
void expectFusedMatches(AttentionFusionTest &t, const char *source,
                        const std::vector<std::vector<uint8_t>> &inputs, size_t outputs,
                        double fp16Spread = 0) {
  std::vector<std::string> unfusedOps, fused32Ops, fused16Ops;
  std::vector<uint8_t> unfused = t.compile(source, "", unfusedOps);
  std::vector<uint8_t> fused32 = t.compile(source, "fp32", fused32Ops);
  std::vector<uint8_t> fused16 = t.compile(source, "fp16", fused16Ops);
  EXPECT_EQ(std::count(unfusedOps.begin(), unfusedOps.end(), "softmax"), 1);
  // One attention step and nothing of the pattern left.
  for (const std::vector<std::string> *ops : {&fused32Ops, &fused16Ops}) {
    EXPECT_EQ(std::count(ops->begin(), ops->end(), "attention"), 1);
    for (const char *gone : {"softmax", "matmul", "div", "mul"})
      EXPECT_EQ(std::count(ops->begin(), ops->end(), gone), 0) << gone;
  }
  std::vector<float> want = run(unfused, inputs, outputs);
  std::vector<float> got32 = run(fused32, inputs, outputs);
  std::vector<float> got16 = run(fused16, inputs, outputs);
  for (size_t i = 0; i < outputs; ++i) {
    ASSERT_TRUE(std::isfinite(want[i])) << i;
    // The unfused steps round the scores, weights and products to f32.
    EXPECT_NEAR(got32[i], want[i], 1e-5) << "fp32, element " << i;
    // One f16 rounding of the result (the kernel computes in double on
    // exact f16 inputs), plus the unfused f32 error.
    EXPECT_NEAR(got16[i], want[i], std::ldexp(std::fabs(want[i]) + fp16Spread, -11) + 1e-5)
        << "fp16, element " << i;
  }
}

TEST_F(AttentionFusionTest, BertAdditiveMaskMatchesTheUnfusedGraph) {
  std::mt19937 rng(5);
  std::vector<std::vector<uint8_t>> inputs = {
      floats(2 * 3 * 5 * 16, rng, -1, 1, 1.0 / 64), floats(2 * 3 * 7 * 16, rng, -1, 1, 1.0 / 64),
      floats(2 * 3 * 7 * 8, rng, -1, 1, 1.0 / 64), floats(2 * 7, rng, -2, 0, 0.25)};
  float padding = -10000.0f; // the second sequence's last two keys
  std::memcpy(inputs[3].data() + (7 + 5) * 4, &padding, 4);
  std::memcpy(inputs[3].data() + (7 + 6) * 4, &padding, 4);
  expectFusedMatches(*this, kBert, inputs, 2 * 3 * 5 * 8);
}

TEST_F(AttentionFusionTest, GptCausalAndBoolMaskMatchTheUnfusedGraph) {
  std::mt19937 rng(6);
  std::vector<std::vector<uint8_t>> inputs = {floats(4 * 6 * 8, rng, -1, 1, 1.0 / 64),
                                              floats(4 * 6 * 8, rng, -1, 1, 1.0 / 64),
                                              floats(4 * 6 * 8, rng, -1, 1, 1.0 / 64)};
  std::vector<uint8_t> keep(4 * 6);
  std::bernoulli_distribution coin(0.6);
  for (size_t i = 0; i < keep.size(); ++i)
    keep[i] = i % 6 == 0 || coin(rng); // key 0 stays: no row wholly masked
  inputs.push_back(keep);
  expectFusedMatches(*this, kGpt, inputs, 4 * 6 * 8);
}

/// A constant of `shape` (rank 1 or 2), multiples of 1/8 in [-1/2, 1/2]:
/// products with inputs of that form and sums of 16 of them are exact in f16
/// (multiples of 1/64 below 32), so projections at fp16 round nothing.
std::string constant(std::mt19937 &rng, std::vector<int> shape) {
  std::uniform_int_distribution<int> pick(-4, 4);
  auto row = [&](int n) {
    std::string r = "[";
    for (int i = 0; i < n; ++i)
      r += (i ? ", " : "") + std::to_string(pick(rng) / 8.0);
    return r + "]";
  };
  std::string body = shape.size() == 1 ? row(shape[0]) : "[";
  if (shape.size() == 2) {
    for (int i = 0; i < shape[0]; ++i)
      body += (i ? ", " : "") + row(shape[1]);
    body += "]";
  }
  std::string type = "tensor<" + std::to_string(shape[0]) +
                     (shape.size() == 2 ? "x" + std::to_string(shape[1]) : "") + "xf32>";
  return "tessel.constant dense<" + body + "> : " + type;
}

/// BERT's encoder attention with its projections: three Linear layers of one
/// input x [2, 5, 16] (weights and biases constant), heads split by reshape
/// and transpose ([2, 5, 2, 8] -> [2, 2, 5, 8]), merged back after. The
/// pipeline makes the projections one gemm and the attention read its
/// result and write [2, 5, 2, 8] in place: no transpose, no slice.
std::string bertWithProjections(std::mt19937 &rng) {
  std::string s = R"(
func.func @main(%x: tensor<2x5x16xf32> {tessel.name = "x"}, %mask: tensor<2x1x1x5xf32> {tessel.name = "mask"})
    -> (tensor<2x5x16xf32> {tessel.name = "y"}) {
)";
  for (const char *p : {"q", "k", "v"}) {
    s += "  %w" + std::string(p) + " = " + constant(rng, {16, 16}) + "\n";
    s += "  %b" + std::string(p) + " = " + constant(rng, {16}) + "\n";
    s += "  %m" + std::string(p) + " = tessel.matmul %x, %w" + p +
         " : (tensor<2x5x16xf32>, tensor<16x16xf32>) -> tensor<2x5x16xf32>\n";
    s += "  %a" + std::string(p) + " = tessel.add %m" + p + ", %b" + p +
         " : (tensor<2x5x16xf32>, tensor<16xf32>) -> tensor<2x5x16xf32>\n";
    s += "  %r" + std::string(p) + " = tessel.reshape %a" + p +
         " : (tensor<2x5x16xf32>) -> tensor<2x5x2x8xf32>\n";
    s += "  %h" + std::string(p) + " = tessel.transpose %r" + p +
         " {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x5x2x8xf32>) -> tensor<2x2x5x8xf32>\n";
  }
  s += R"(  %kt = tessel.transpose %hk {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x2x5x8xf32>) -> tensor<2x2x8x5xf32>
  %s = tessel.matmul %hq, %kt : (tensor<2x2x5x8xf32>, tensor<2x2x8x5xf32>) -> tensor<2x2x5x5xf32>
  %c = tessel.constant dense<2.0> : tensor<f32>
  %d = tessel.div %s, %c : (tensor<2x2x5x5xf32>, tensor<f32>) -> tensor<2x2x5x5xf32>
  %am = tessel.add %d, %mask : (tensor<2x2x5x5xf32>, tensor<2x1x1x5xf32>) -> tensor<2x2x5x5xf32>
  %w = tessel.softmax %am {axis = 3 : i64} : tensor<2x2x5x5xf32>
  %o = tessel.matmul %w, %hv : (tensor<2x2x5x5xf32>, tensor<2x2x5x8xf32>) -> tensor<2x2x5x8xf32>
  %ot = tessel.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x5x8xf32>) -> tensor<2x5x2x8xf32>
  %y = tessel.reshape %ot : (tensor<2x5x2x8xf32>) -> tensor<2x5x16xf32>
  return %y : tensor<2x5x16xf32>
}
)";
  return s;
}

/// nn.MultiheadAttention's form (ViT's), sequence-first: x [5, 2, 16] (S, B,
/// E), one in-projection [16, 48] with bias (WEIGHT, BIAS: constants) sliced
/// into Q, K and V, heads as rank 3
/// [B*H, S, D] = [4, 5, 8] by reshape and transpose [1, 0, 2], merged back
/// the same way. The views split B*H into B and H (2 and 2).
const char *kMultiheadSeqFirst = R"mlir(
func.func @main(%x: tensor<5x2x16xf32> {tessel.name = "x"})
    -> (tensor<5x2x16xf32> {tessel.name = "y"}) {
  %win = WEIGHT
  %bin = BIAS
  %pm = tessel.matmul %x, %win : (tensor<5x2x16xf32>, tensor<16x48xf32>) -> tensor<5x2x48xf32>
  %p = tessel.add %pm, %bin : (tensor<5x2x48xf32>, tensor<48xf32>) -> tensor<5x2x48xf32>
  %qs = tessel.slice %p {starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : (tensor<5x2x48xf32>) -> tensor<5x2x16xf32>
  %ks = tessel.slice %p {starts = array<i64: 0, 0, 16>, steps = array<i64: 1, 1, 1>} : (tensor<5x2x48xf32>) -> tensor<5x2x16xf32>
  %vs = tessel.slice %p {starts = array<i64: 0, 0, 32>, steps = array<i64: 1, 1, 1>} : (tensor<5x2x48xf32>) -> tensor<5x2x16xf32>
  %qr = tessel.reshape %qs : (tensor<5x2x16xf32>) -> tensor<5x4x8xf32>
  %kr = tessel.reshape %ks : (tensor<5x2x16xf32>) -> tensor<5x4x8xf32>
  %vr = tessel.reshape %vs : (tensor<5x2x16xf32>) -> tensor<5x4x8xf32>
  %q = tessel.transpose %qr {perm = array<i64: 1, 0, 2>} : (tensor<5x4x8xf32>) -> tensor<4x5x8xf32>
  %k = tessel.transpose %kr {perm = array<i64: 1, 0, 2>} : (tensor<5x4x8xf32>) -> tensor<4x5x8xf32>
  %v = tessel.transpose %vr {perm = array<i64: 1, 0, 2>} : (tensor<5x4x8xf32>) -> tensor<4x5x8xf32>
  %kt = tessel.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<4x5x8xf32>) -> tensor<4x8x5xf32>
  %s = tessel.matmul %q, %kt : (tensor<4x5x8xf32>, tensor<4x8x5xf32>) -> tensor<4x5x5xf32>
  %c = tessel.constant dense<0.353553385> : tensor<f32>
  %d = tessel.mul %s, %c : (tensor<4x5x5xf32>, tensor<f32>) -> tensor<4x5x5xf32>
  %w = tessel.softmax %d {axis = 2 : i64} : tensor<4x5x5xf32>
  %o = tessel.matmul %w, %v : (tensor<4x5x5xf32>, tensor<4x5x8xf32>) -> tensor<4x5x8xf32>
  %ot = tessel.transpose %o {perm = array<i64: 1, 0, 2>} : (tensor<4x5x8xf32>) -> tensor<5x4x8xf32>
  %y = tessel.reshape %ot : (tensor<5x4x8xf32>) -> tensor<5x2x16xf32>
  return %y : tensor<5x2x16xf32>
}
)mlir";

/// PyTorch 2's batch_first nn.MultiheadAttention inside a residual block:
/// x [B, S, E] = [2, 5, 16] transposed to [S, B, E] for the in-projection,
/// the heads as above, the output projection over [S*B, E] rows reshaped to
/// [S, B, E] and transposed back to [B, S, E] for the skip connection. The
/// pipeline projects before transposing and permutes the attention's output
/// rows instead: no transpose is left, and the skip add is the output
/// projection's residual.
const char *kMultiheadBatchFirst = R"mlir(
func.func @main(%x: tensor<2x5x16xf32> {tessel.name = "x"})
    -> (tensor<2x5x16xf32> {tessel.name = "y"}) {
  %win = WEIGHT
  %bin = BIAS
  %wout = OUTWEIGHT
  %xt = tessel.transpose %x {perm = array<i64: 1, 0, 2>} : (tensor<2x5x16xf32>) -> tensor<5x2x16xf32>
  %pm = tessel.matmul %xt, %win : (tensor<5x2x16xf32>, tensor<16x48xf32>) -> tensor<5x2x48xf32>
  %p = tessel.add %pm, %bin : (tensor<5x2x48xf32>, tensor<48xf32>) -> tensor<5x2x48xf32>
  %qs = tessel.slice %p {starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : (tensor<5x2x48xf32>) -> tensor<5x2x16xf32>
  %ks = tessel.slice %p {starts = array<i64: 0, 0, 16>, steps = array<i64: 1, 1, 1>} : (tensor<5x2x48xf32>) -> tensor<5x2x16xf32>
  %vs = tessel.slice %p {starts = array<i64: 0, 0, 32>, steps = array<i64: 1, 1, 1>} : (tensor<5x2x48xf32>) -> tensor<5x2x16xf32>
  %qr = tessel.reshape %qs : (tensor<5x2x16xf32>) -> tensor<5x4x8xf32>
  %kr = tessel.reshape %ks : (tensor<5x2x16xf32>) -> tensor<5x4x8xf32>
  %vr = tessel.reshape %vs : (tensor<5x2x16xf32>) -> tensor<5x4x8xf32>
  %q = tessel.transpose %qr {perm = array<i64: 1, 0, 2>} : (tensor<5x4x8xf32>) -> tensor<4x5x8xf32>
  %k = tessel.transpose %kr {perm = array<i64: 1, 0, 2>} : (tensor<5x4x8xf32>) -> tensor<4x5x8xf32>
  %v = tessel.transpose %vr {perm = array<i64: 1, 0, 2>} : (tensor<5x4x8xf32>) -> tensor<4x5x8xf32>
  %kt = tessel.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<4x5x8xf32>) -> tensor<4x8x5xf32>
  %s = tessel.matmul %q, %kt : (tensor<4x5x8xf32>, tensor<4x8x5xf32>) -> tensor<4x5x5xf32>
  %c = tessel.constant dense<0.353553385> : tensor<f32>
  %d = tessel.mul %s, %c : (tensor<4x5x5xf32>, tensor<f32>) -> tensor<4x5x5xf32>
  %w = tessel.softmax %d {axis = 2 : i64} : tensor<4x5x5xf32>
  %o = tessel.matmul %w, %v : (tensor<4x5x5xf32>, tensor<4x5x8xf32>) -> tensor<4x5x8xf32>
  %ot = tessel.transpose %o {perm = array<i64: 1, 0, 2>} : (tensor<4x5x8xf32>) -> tensor<5x4x8xf32>
  %of = tessel.reshape %ot : (tensor<5x4x8xf32>) -> tensor<10x16xf32>
  %om = tessel.matmul %of, %wout : (tensor<10x16xf32>, tensor<16x16xf32>) -> tensor<10x16xf32>
  %ob = tessel.add %om, %bin16 : (tensor<10x16xf32>, tensor<16xf32>) -> tensor<10x16xf32>
  %ou = tessel.reshape %ob : (tensor<10x16xf32>) -> tensor<5x2x16xf32>
  %oT = tessel.transpose %ou {perm = array<i64: 1, 0, 2>} : (tensor<5x2x16xf32>) -> tensor<2x5x16xf32>
  %y = tessel.add %oT, %x : (tensor<2x5x16xf32>, tensor<2x5x16xf32>) -> tensor<2x5x16xf32>
  return %y : tensor<2x5x16xf32>
}
)mlir";

/// The pipeline's engine of `source` at fp32 and fp16 has one attention,
/// `gemms` gemms and no transpose or slice left (the heads read and written
/// in place).
void expectHeadsInPlace(AttentionFusionTest &t, const char *source, int gemms) {
  for (const char *precision : {"fp32", "fp16"}) {
    std::vector<std::string> ops;
    t.compile(source, precision, ops);
    EXPECT_EQ(std::count(ops.begin(), ops.end(), "attention"), 1) << precision;
    EXPECT_EQ(std::count(ops.begin(), ops.end(), "gemm"), gemms) << precision;
    EXPECT_EQ(std::count(ops.begin(), ops.end(), "transpose"), 0) << precision;
    EXPECT_EQ(std::count(ops.begin(), ops.end(), "slice"), 0) << precision;
  }
}

TEST_F(AttentionFusionTest, BertProjectionsMergeAndHeadsStayInPlace) {
  std::mt19937 rng(8);
  const std::string source = bertWithProjections(rng);
  expectHeadsInPlace(*this, source.c_str(), 1);
  std::vector<std::vector<uint8_t>> inputs = {floats(2 * 5 * 16, rng, -0.5, 0.5, 1.0 / 8),
                                              floats(2 * 5, rng, -2, 0, 0.25)};
  expectFusedMatches(*this, source.c_str(), inputs, 2 * 5 * 16);
}

TEST_F(AttentionFusionTest, MultiheadBatchFirstNeedsNoTranspose) {
  std::mt19937 rng(10);
  std::string source = kMultiheadBatchFirst;
  source.replace(source.find("WEIGHT"), 6, constant(rng, {16, 48}));
  source.replace(source.find("BIAS"), 4, constant(rng, {48}));
  source.replace(source.find("OUTWEIGHT"), 9, constant(rng, {16, 16}));
  source.insert(source.find("  %xt ="), "  %bin16 = " + constant(rng, {16}) + "\n");
  // The in-projection and the output projection (the skip add its residual).
  expectHeadsInPlace(*this, source.c_str(), 2);
  for (const char *precision : {"fp32", "fp16"}) {
    std::vector<std::string> ops;
    compile(source.c_str(), precision, ops);
    EXPECT_EQ(std::count(ops.begin(), ops.end(), "add"), 0) << precision;
  }
  std::vector<std::vector<uint8_t>> inputs = {floats(2 * 5 * 16, rng, -0.5, 0.5, 1.0 / 8)};
  // The output projection sums 16 attention values, each a weighted mean of
  // V's (|v| <= 16 * 1/4 + 1/2 = 4.5), times weights |w| <= 1/2: 36.
  expectFusedMatches(*this, source.c_str(), inputs, 2 * 5 * 16, 16 * 0.5 * 4.5);
}

TEST_F(AttentionFusionTest, MultiheadSequenceFirstHeadsStayInPlace) {
  std::mt19937 rng(9);
  std::string source = kMultiheadSeqFirst;
  source.replace(source.find("WEIGHT"), 6, constant(rng, {16, 48}));
  source.replace(source.find("BIAS"), 4, constant(rng, {48}));
  expectHeadsInPlace(*this, source.c_str(), 1);
  std::vector<std::vector<uint8_t>> inputs = {floats(5 * 2 * 16, rng, -0.5, 0.5, 1.0 / 8)};
  expectFusedMatches(*this, source.c_str(), inputs, 5 * 2 * 16);
}

} // namespace
