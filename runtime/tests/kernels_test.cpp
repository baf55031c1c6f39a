//===- kernels_test.cpp - the kernel table, f16 coverage, errors ----------===//
//
// What holds for every CPU kernel (kernels.cpp's table): each op is
// registered; every kernel that takes float data, run on f16, is its f32
// kernel rounded once; unsupported dtypes and bad operands are reported as
// errors, never a crash. Each family's numerics are in its own test file
// (conv_test.cpp, gemm_test.cpp, ...), against float64 references.
//
//===----------------------------------------------------------------------===//
#include "Reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

namespace tessel::test {
namespace {

using namespace cpu;

TEST(KernelRegistry, AllKernelsRegistered) {
  const char *names[] = {
      "relu", "sigmoid", "tanh", "abs", "neg", "exp", "log", "sqrt", "reciprocal", "floor",
      "ceil", "round", "sign", "erf", "sin", "cos", "tan", "asin", "acos", "atan", "sinh",
      "cosh", "asinh", "acosh", "atanh", "softplus", "softsign", "hard_swish", "silu", "not",
      "leaky_relu", "elu", "celu", "selu", "thresholded_relu", "hard_sigmoid", "shrink", "clip",
      "add", "sub", "mul", "div", "pow", "mod", "max", "min", "prelu", "equal", "less", "less_equal",
      "greater", "greater_equal", "and", "or", "xor", "where", "conv", "conv_transpose", "gemm",
      "matmul", "batch_norm", "instance_norm", "layer_norm", "lrn", "max_pool", "avg_pool",
      "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "reduce_l1",
      "reduce_l2", "reduce_log_sum", "reduce_log_sum_exp", "reduce_sum_square", "softmax",
      "log_softmax", "argmax", "argmin"};
  for (const char *n : names)
    EXPECT_NE(findKernel(n), nullptr) << n;
}

//===----------------------------------------------------------------------===//
// f16 coverage: every kernel that takes float data runs on f16
//===----------------------------------------------------------------------===//

// At --precision fp16, f16 is the storage type of activations and weights,
// and the precision policy may leave any op in f16. Every CPU kernel follows
// "f16 storage, f32 (or f64) math, one rounding": on inputs that are f16
// values, the f16 kernel must give exactly the f32 kernel's result rounded to
// half (each f32 kernel is checked against float64 elsewhere in this file).
// The table covers every registered kernel except the bool-only ones; a new
// kernel must be added here (the test checks the registry against it).
struct F16Case {
  std::string op;
  Attrs attrs;
  // Per input: shape and kind: 'f' float in [-2, 2), 'p' positive float in
  // [0.25, 2), 'b' bool, 'i' i64 indices in [0, 3).
  std::vector<std::pair<Shape, char>> inputs;
  Shape out;
  char outKind = 'f'; // 'f' float, 'b' bool, 'i' i64
};
std::vector<F16Case> f16Cases() {
  using V = std::vector<int64_t>;
  const Shape s{2, 3, 4, 5};
  std::vector<F16Case> cases;
  for (const char *op :
       {"relu", "sigmoid", "tanh", "abs", "neg", "exp", "floor", "ceil", "round", "sign", "erf",
        "sin", "cos", "tan", "atan", "sinh", "cosh", "asinh", "softplus", "softsign",
        "hard_swish", "gelu", "gelu_tanh", "silu", "identity", "copy"})
    cases.push_back({op, {}, {{s, 'f'}}, s});
  for (const char *op : {"log", "sqrt", "reciprocal"})
    cases.push_back({op, {}, {{s, 'p'}}, s});
  cases.push_back({"asin", {}, {{s, 'f'}}, s}); // NaN outside [-1, 1] on both sides
  cases.push_back({"acos", {}, {{s, 'f'}}, s});
  cases.push_back({"atanh", {}, {{s, 'f'}}, s});
  cases.push_back({"acosh", {}, {{s, 'p'}}, s});
  cases.push_back({"leaky_relu", makeAttrs({{"alpha", 0.1}}), {{s, 'f'}}, s});
  cases.push_back({"elu", makeAttrs({{"alpha", 1.0}}), {{s, 'f'}}, s});
  cases.push_back({"celu", makeAttrs({{"alpha", 0.7}}), {{s, 'f'}}, s});
  cases.push_back({"selu", makeAttrs({{"alpha", 1.67}, {"gamma", 1.05}}), {{s, 'f'}}, s});
  cases.push_back({"thresholded_relu", makeAttrs({{"alpha", 0.5}}), {{s, 'f'}}, s});
  cases.push_back({"hard_sigmoid", makeAttrs({{"alpha", 0.2}, {"beta", 0.5}}), {{s, 'f'}}, s});
  cases.push_back({"shrink", makeAttrs({{"bias", 0.1}, {"lambd", 0.5}}), {{s, 'f'}}, s});
  cases.push_back({"clip", makeAttrs({{"min", -0.3}, {"max", 0.7001}}), {{s, 'f'}}, s});
  for (const char *op : {"add", "sub", "mul", "div", "max", "min", "prelu"})
    cases.push_back({op, {}, {{s, 'f'}, {Shape{3, 1, 5}, 'f'}}, s});
  cases.push_back({"pow", {}, {{s, 'p'}, {Shape{5}, 'f'}}, s});
  cases.push_back({"mod", makeAttrs({{"fmod", int64_t(1)}}), {{s, 'f'}, {Shape{3, 1, 5}, 'p'}}, s});
  for (const char *op : {"equal", "less", "less_equal", "greater", "greater_equal"})
    cases.push_back({op, {}, {{s, 'f'}, {Shape{4, 1}, 'f'}}, s, 'b'});
  cases.push_back({"where", {}, {{Shape{3, 1, 5}, 'b'}, {s, 'f'}, {Shape{5}, 'f'}}, s});
  // conv in both layouts with its epilogue; conv_transpose; gemm; matmul.
  cases.push_back({"conv",
                   makeAttrs({{"strides", V{1, 2}}, {"pads", V{1, 0, 1, 1}}, {"dilations", V{1, 1}},
                              {"group", int64_t(1)}, {"activation", std::string("relu")}}),
                   {{Shape{1, 6, 7, 8}, 'f'}, {Shape{20, 6, 3, 3}, 'f'}, {Shape{20}, 'f'},
                    {Shape{1, 20, 7, 4}, 'f'}},
                   Shape{1, 20, 7, 4}});
  cases.push_back({"conv",
                   makeAttrs({{"strides", V{1, 1}}, {"pads", V{1, 1, 1, 1}}, {"dilations", V{1, 1}},
                              {"group", int64_t(2)}, {"layout", std::string("NHWC")},
                              {"activation", std::string("hard_swish")}}),
                   {{Shape{1, 7, 8, 6}, 'f'}, {Shape{20, 3, 3, 3}, 'f'}, {Shape{20}, 'f'},
                    {Shape{1, 7, 8, 20}, 'f'}},
                   Shape{1, 7, 8, 20}});
  cases.push_back({"conv",
                   makeAttrs({{"strides", V{2, 2}}, {"pads", V{1, 1, 1, 1}}, {"dilations", V{1, 1}},
                              {"group", int64_t(6)}, {"layout", std::string("NHWC")},
                              {"activation", std::string("clip")}, {"alpha", 0.0}, {"beta", 6.0}}),
                   {{Shape{1, 7, 8, 6}, 'f'}, {Shape{6, 3, 3, 1}, 'f'}},
                   Shape{1, 4, 4, 6}});
  // A fused group: f16 inputs widen exactly, the program runs in float, and
  // the result is rounded once, as the f32 kernel's result rounded to half.
  cases.push_back({"elementwise_group",
                   makeAttrs({{"program", std::string("mul $0 $1; silu %0; clip(-1, 1.5) %1; "
                                                      "where $2 %2 $0")}}),
                   {{Shape{2, 3, 8}, 'f'}, {Shape{8}, 'f'}, {Shape{2, 3, 1}, 'b'}},
                   Shape{2, 3, 8}});
  cases.push_back({"pool_fc", makeAttrs({{"activation", std::string("silu")}}),
                   {{Shape{2, 5, 3, 16}, 'f'}, {Shape{12, 1, 1, 16}, 'f'}, {Shape{12}, 'f'}},
                   Shape{2, 1, 1, 12}});
  cases.push_back({"conv_transpose",
                   makeAttrs({{"strides", V{2, 1}}, {"pads", V{0, 1, 0, 1}}, {"dilations", V{1, 1}},
                              {"group", int64_t(1)}}),
                   {{Shape{1, 4, 3, 5}, 'f'}, {Shape{4, 3, 3, 3}, 'f'}, {Shape{3}, 'f'}},
                   Shape{1, 3, 7, 5}});
  cases.push_back({"gemm",
                   makeAttrs({{"alpha", 0.5}, {"beta", 1.0}, {"transA", int64_t(0)},
                              {"transB", int64_t(1)}, {"activation", std::string("tanh")}}),
                   {{Shape{7, 30}, 'f'}, {Shape{19, 30}, 'f'}, {Shape{19}, 'f'}},
                   Shape{7, 19}});
  cases.push_back({"matmul", {}, {{Shape{2, 5, 9}, 'f'}, {Shape{9, 17}, 'f'}}, Shape{2, 5, 17}});
  cases.push_back({"attention", makeAttrs({{"scale", 0.35}, {"causal", int64_t(1)}}),
                   {{Shape{2, 3, 5, 8}, 'f'}, {Shape{2, 3, 6, 8}, 'f'}, {Shape{2, 3, 6, 4}, 'f'},
                    {Shape{3, 1, 6}, 'f'}},
                   Shape{2, 3, 5, 4}});
  // Norms.
  cases.push_back({"batch_norm", makeAttrs({{"epsilon", 1e-5}}),
                   {{s, 'f'}, {Shape{3}, 'f'}, {Shape{3}, 'f'}, {Shape{3}, 'f'}, {Shape{3}, 'p'}},
                   s});
  cases.push_back({"instance_norm", makeAttrs({{"epsilon", 1e-5}}),
                   {{s, 'f'}, {Shape{3}, 'f'}, {Shape{3}, 'f'}}, s});
  cases.push_back({"layer_norm", makeAttrs({{"axis", int64_t(2)}, {"epsilon", 1e-5}}),
                   {{s, 'f'}, {Shape{4, 5}, 'f'}, {Shape{5}, 'f'}}, s});
  cases.push_back({"lrn",
                   makeAttrs({{"size", int64_t(3)}, {"alpha", 1e-2}, {"beta", 0.75}, {"bias", 1.0}}),
                   {{s, 'f'}}, s});
  // Pools in both layouts.
  for (const char *op : {"max_pool", "avg_pool"}) {
    Attrs a = makeAttrs({{"kernel_shape", V{3, 2}}, {"strides", V{2, 1}}, {"pads", V{1, 0, 1, 1}},
                         {"dilations", V{1, 1}}, {"count_include_pad", int64_t(1)}});
    cases.push_back({op, a, {{s, 'f'}}, Shape{2, 3, 2, 5}});
    a.set("layout", std::string("NHWC"));
    cases.push_back({op, a, {{Shape{2, 4, 5, 3}, 'f'}}, Shape{2, 2, 5, 3}});
  }
  // Reductions, softmax, arg*.
  const Attrs axes = makeAttrs({{"axes", V{1, 3}}, {"keepdims", int64_t(1)}});
  for (const char *op : {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod",
                         "reduce_l1", "reduce_l2", "reduce_log_sum_exp", "reduce_sum_square"})
    cases.push_back({op, axes, {{s, 'f'}}, Shape{2, 1, 4, 1}});
  cases.push_back({"reduce_log_sum", axes, {{s, 'p'}}, Shape{2, 1, 4, 1}});
  cases.push_back({"softmax", makeAttrs({{"axis", int64_t(1)}}), {{s, 'f'}}, s});
  cases.push_back({"log_softmax", makeAttrs({{"axis", int64_t(3)}}), {{s, 'f'}}, s});
  for (const char *op : {"argmax", "argmin"})
    cases.push_back({op,
                     makeAttrs({{"axis", int64_t(2)}, {"keepdims", int64_t(0)},
                                {"select_last_index", int64_t(0)}}),
                     {{s, 'f'}}, Shape{2, 3, 5}, 'i'});
  // Data movement (bytewise, and pad's fill value converted to half).
  cases.push_back({"reshape", {}, {{s, 'f'}}, Shape{6, 20}});
  cases.push_back({"transpose", makeAttrs({{"perm", V{0, 2, 3, 1}}}), {{s, 'f'}}, Shape{2, 4, 5, 3}});
  cases.push_back({"slice", makeAttrs({{"starts", V{0, 1, 3, 0}}, {"steps", V{1, 1, -1, 2}}}),
                   {{s, 'f'}}, Shape{2, 2, 4, 3}});
  cases.push_back({"concat", makeAttrs({{"axis", int64_t(1)}}),
                   {{s, 'f'}, {Shape{2, 2, 4, 5}, 'f'}}, Shape{2, 5, 4, 5}});
  cases.push_back({"pad",
                   makeAttrs({{"pads", V{0, 1, 0, 2, 0, 0, 1, 0}}, {"mode", std::string("constant")},
                              {"value", 0.3}}),
                   {{s, 'f'}}, Shape{2, 4, 5, 7}});
  cases.push_back({"im2row",
                   makeAttrs({{"kernel", int64_t(3)}, {"stride", int64_t(2)},
                              {"dilation", int64_t(1)}, {"pad", int64_t(1)}}),
                   {{s, 'f'}}, Shape{2, 3, 2, 16}});
  cases.push_back({"trilu", makeAttrs({{"k", int64_t(-1)}, {"upper", int64_t(0)}}), {{s, 'f'}}, s});
  cases.push_back({"cumsum", makeAttrs({{"axis", int64_t(1)}, {"reverse", int64_t(1)}}),
                   {{s, 'f'}}, s});
  cases.push_back({"cumprod", makeAttrs({{"axis", int64_t(2)}, {"exclusive", int64_t(1)}}),
                   {{s, 'f'}}, s});
  cases.push_back({"resize",
                   makeAttrs({{"mode", std::string("cubic")},
                              {"scales", std::vector<double>{1, 1, 1.5, 0.75}}}),
                   {{s, 'f'}}, Shape{s[0], s[1], s[2] * 3 / 2, s[3] * 3 / 4}});
  cases.push_back({"gather_elements", makeAttrs({{"axis", int64_t(2)}}),
                   {{s, 'f'}, {Shape{2, 3, 6, 5}, 'i'}}, Shape{2, 3, 6, 5}});
  cases.push_back({"gather", makeAttrs({{"axis", int64_t(1)}}), {{s, 'f'}, {Shape{4}, 'i'}},
                   Shape{2, 4, 4, 5}});
  cases.push_back({"gather_nd", makeAttrs({{"batch_dims", int64_t(1)}}),
                   {{s, 'f'}, {Shape{2, 6, 2}, 'i'}}, Shape{2, 6, 5}});
  // Tuples of 2 indices in [0, 3) into data [3, 3, 5]; repeated tuples keep
  // the later slice in both runs.
  cases.push_back({"scatter_nd", makeAttrs({{"reduction", std::string("none")}}),
                   {{Shape{3, 3, 5}, 'f'}, {Shape{4, 2}, 'i'}, {Shape{4, 5}, 'f'}},
                   Shape{3, 3, 5}});
  cases.push_back({"expand", {}, {{Shape{3, 1, 5}, 'f'}}, s});
  cases.push_back({"tile", {}, {{Shape{1, 3, 2, 5}, 'f'}}, Shape{2, 3, 4, 5}});
  return cases;
}

TEST(KernelF16, EveryFloatKernelIsItsF32KernelRoundedOnce) {
  std::mt19937 rng(127);
  std::set<std::string> covered;
  for (const F16Case &c : f16Cases()) {
    covered.insert(c.op);
    std::vector<Tensor> in16, in32;
    for (const auto &[shape, kind] : c.inputs) {
      if (kind == 'f' || kind == 'p') {
        Tensor h = kind == 'f' ? randomTensor(DType::F16, shape, rng, -2, 2)
                               : randomTensor(DType::F16, shape, rng, 0.25, 2);
        Tensor f(DType::F32, shape);
        for (int64_t i = 0; i < h.size(); ++i)
          f.set(i, h.get(i)); // exact: every half is a float
        in16.push_back(h);
        in32.push_back(f);
      } else {
        Tensor t = kind == 'b' ? randomTensor(DType::Bool, shape, rng, 0, 2)
                               : randomTensor(DType::I64, shape, rng, 0, 3);
        in16.push_back(t);
        in32.push_back(t);
      }
    }
    const DType outType = c.outKind == 'b' ? DType::Bool : c.outKind == 'i' ? DType::I64 : DType::F16;
    Tensor y16(outType, c.out), y32(c.outKind == 'f' ? DType::F32 : outType, c.out);
    std::vector<const Tensor *> p16, p32;
    for (size_t i = 0; i < in16.size(); ++i) {
      p16.push_back(&in16[i]);
      p32.push_back(&in32[i]);
    }
    const KernelStatus s16 = run(c.op, c.attrs, p16, y16);
    ASSERT_TRUE(s16.ok()) << c.op << " f16: " << s16.error;
    RUN_OK(c.op, c.attrs, p32, y32);
    int failures = 0;
    for (int64_t i = 0; i < y16.size(); ++i) {
      bool same;
      if (c.outKind == 'f') {
        const uint16_t want = refDoubleToHalf(y32.get(i)), got = y16.as<uint16_t>()[i];
        same = got == want || (std::isnan(y32.get(i)) && std::isnan(y16.get(i)));
        if (!same && ++failures <= 3)
          ADD_FAILURE() << c.op << " element " << i << ": f16 " << y16.get(i) << ", f32 "
                        << y32.get(i) << " rounds to " << refHalfToDouble(want);
      } else {
        same = y16.getI(i) == y32.getI(i);
        if (!same && ++failures <= 3)
          ADD_FAILURE() << c.op << " element " << i;
      }
    }
    EXPECT_EQ(failures, 0) << c.op;
  }
  // cast f16 <-> f32: exact widening, and one correct rounding.
  Tensor h = randomTensor(DType::F16, {64}, rng, -70000, 70000), f(DType::F32, {64});
  RUN_OK("cast", Attrs{}, {&h}, f);
  for (int64_t i = 0; i < 64; ++i)
    EXPECT_EQ(f.get(i), h.get(i));
  Tensor g = randomTensor(DType::F32, {64}, rng, -70000, 70000), gh(DType::F16, {64});
  RUN_OK("cast", Attrs{}, {&g}, gh);
  for (int64_t i = 0; i < 64; ++i)
    EXPECT_EQ(gh.as<uint16_t>()[i], refDoubleToHalf(g.get(i)));
  covered.insert("cast");
  // top_k (two results): the f16 values are the f32 kernel's on the widened
  // input, the indices the same (ties among the rounded values included).
  {
    Tensor x16 = randomTensor(DType::F16, {3, 40, 2}, rng, -4, 4), x32(DType::F32, {3, 40, 2});
    for (int64_t i = 0; i < x16.size(); ++i)
      x32.set(i, x16.get(i));
    Tensor v16(DType::F16, {3, 7, 2}), i16(DType::I64, {3, 7, 2});
    Tensor v32(DType::F32, {3, 7, 2}), i32(DType::I64, {3, 7, 2});
    Attrs a;
    a.set("axis", int64_t(1));
    a.set("largest", int64_t(0));
    RUN_OK("top_k", a, {&x16}, v16, i16);
    RUN_OK("top_k", a, {&x32}, v32, i32);
    for (int64_t i = 0; i < v16.size(); ++i) {
      EXPECT_EQ(v16.get(i), v32.get(i)) << "top_k element " << i;
      EXPECT_EQ(i16.getI(i), i32.getI(i)) << "top_k index " << i;
    }
    covered.insert("top_k");
  }
  // max_pool_indices (i64 out): on f16 the indices the f32 kernel gives on
  // the widened input (ties among the rounded values included), NHWC,
  // column-major.
  {
    Tensor x16 = randomTensor(DType::F16, {2, 6, 7, 3}, rng, -4, 4), x32(DType::F32, {2, 6, 7, 3});
    for (int64_t i = 0; i < x16.size(); ++i)
      x32.set(i, x16.get(i));
    Tensor i16(DType::I64, {2, 3, 4, 3}), i32(DType::I64, {2, 3, 4, 3});
    Attrs a;
    a.set("layout", std::string("NHWC"));
    a.set("kernel_shape", std::vector<int64_t>{3, 2});
    a.set("strides", std::vector<int64_t>{2, 2});
    a.set("pads", std::vector<int64_t>{1, 1, 0, 0});
    a.set("dilations", std::vector<int64_t>{1, 1});
    a.set("storage_order", int64_t(1));
    RUN_OK("max_pool_indices", a, {&x16}, i16);
    RUN_OK("max_pool_indices", a, {&x32}, i32);
    for (int64_t i = 0; i < i16.size(); ++i)
      EXPECT_EQ(i16.getI(i), i32.getI(i)) << "max_pool_indices element " << i;
    covered.insert("max_pool_indices");
  }
  // non_max_suppression (i64 out): on f16 boxes and scores the rows and
  // count the f32 kernel gives on the widened values (score ties included).
  {
    Tensor b16 = randomTensor(DType::F16, {2, 30, 4}, rng, 0, 4), b32(DType::F32, {2, 30, 4});
    Tensor s16 = randomTensor(DType::F16, {2, 3, 30}, rng, -1, 1), s32(DType::F32, {2, 3, 30});
    for (int64_t i = 0; i < b16.size(); ++i)
      b32.set(i, b16.get(i));
    for (int64_t i = 0; i < s16.size(); ++i)
      s32.set(i, s16.get(i));
    Tensor r16(DType::I64, {60, 3}), c16(DType::I64, {1}), r32(DType::I64, {60, 3}),
        c32(DType::I64, {1});
    Attrs a;
    a.set("max_output_boxes_per_class", int64_t(10));
    a.set("iou_threshold", 0.3);
    a.set("score_threshold", 0.0);
    RUN_OK("non_max_suppression", a, {&b16, &s16}, r16, c16);
    RUN_OK("non_max_suppression", a, {&b32, &s32}, r32, c32);
    EXPECT_EQ(c16.getI(0), c32.getI(0));
    EXPECT_GT(c32.getI(0), 0);
    for (int64_t i = 0; i < r16.size(); ++i)
      EXPECT_EQ(r16.getI(i), r32.getI(i)) << "non_max_suppression element " << i;
    covered.insert("non_max_suppression");
  }
  // The bool-only kernels have no f16 form; every other kernel is covered.
  for (const std::string &name : kernelNames())
    if (name != "and" && name != "or" && name != "xor" && name != "not")
      EXPECT_TRUE(covered.count(name)) << name << " has no f16 case";
}

//===----------------------------------------------------------------------===//
// Errors: unsupported dtypes and bad operands are reported, never crash
//===----------------------------------------------------------------------===//

TEST(KernelErrors, UnsupportedDtypesReturnErrors) {
  Tensor b(DType::Bool, {4}), bf(DType::BF16, {4}), i32(DType::I32, {2, 3, 4, 4}),
      bf4(DType::BF16, {2, 3, 4, 4}),
      f(DType::F32, {4}), w32(DType::I32, {2, 3, 1, 1});
  struct Case {
    const char *op;
    std::vector<const Tensor *> ins;
    Tensor out;
    Attrs attrs;
  };
  Attrs pool;
  pool.set("kernel_shape", Shape{2, 2});
  Attrs axes;
  axes.set("axes", Shape{0});
  std::vector<Case> cases = {
      {"relu", {&b}, Tensor(DType::Bool, {4}), {}},
      {"exp", {&i32}, Tensor(DType::I32, {2, 3, 4, 4}), {}},
      {"sigmoid", {&bf}, Tensor(DType::BF16, {4}), {}},
      {"not", {&f}, Tensor(DType::F32, {4}), {}},
      {"add", {&bf, &bf}, Tensor(DType::BF16, {4}), {}},
      {"add", {&b, &b}, Tensor(DType::Bool, {4}), {}},
      {"and", {&f, &f}, Tensor(DType::Bool, {4}), {}},
      {"less", {&bf, &bf}, Tensor(DType::Bool, {4}), {}},
      {"conv", {&i32, &w32}, Tensor(DType::I32, {2, 2, 4, 4}), {}},
      {"gemm", {&bf, &bf}, Tensor(DType::BF16, {2, 2}), {}},
      {"matmul", {&b, &b}, Tensor(DType::Bool, {}), {}},
      {"avg_pool", {&i32}, Tensor(DType::I32, {2, 3, 3, 3}), pool},
      {"max_pool", {&bf4}, Tensor(DType::BF16, {2, 3, 3, 3}), pool},
      {"reduce_sum", {&b}, Tensor(DType::Bool, {}), axes},
      {"reduce_mean", {&bf}, Tensor(DType::BF16, {}), axes},
      {"softmax", {&i32}, Tensor(DType::I32, {2, 3, 4, 4}), {}},
      {"argmax", {&bf}, Tensor(DType::I64, {}), {}},
      {"batch_norm", {&i32, &f, &f, &f, &f}, Tensor(DType::I32, {2, 3, 4, 4}), {}},
      {"layer_norm", {&b, &b}, Tensor(DType::Bool, {4}), {}},
  };
  for (Case &c : cases) {
    KernelStatus s = run(c.op, c.attrs, c.ins, c.out);
    EXPECT_FALSE(s.ok()) << c.op;
    EXPECT_NE(s.error.find(c.op), std::string::npos) << c.op << ": " << s.error;
  }
}

TEST(KernelErrors, BadShapesAndOperandsReturnErrors) {
  Tensor a(DType::F32, {2, 3}), b(DType::F32, {4}), c(DType::F32, {3, 5});
  Tensor y23(DType::F32, {2, 3}), y25(DType::F32, {2, 5}), yb(DType::Bool, {2, 3});
  Attrs none;
  EXPECT_FALSE(run("add", none, {&a, &b}, y23).ok());       // not broadcastable
  EXPECT_FALSE(run("add", none, {&a, &a}, y25).ok());       // result shape wrong
  EXPECT_FALSE(run("add", none, {&a, nullptr}, y23).ok());  // missing operand
  EXPECT_FALSE(run("add", none, {&a}, y23).ok());           // too few operands
  EXPECT_FALSE(run("matmul", none, {&a, &b}, y25).ok());    // inner dims differ
  EXPECT_TRUE(run("matmul", none, {&a, &c}, y25).ok());
  EXPECT_FALSE(run("gemm", none, {&a, &a}, y23).ok());      // 2x3 * 2x3
  EXPECT_FALSE(run("where", none, {&a, &a, &a}, y23).ok()); // condition not bool
  EXPECT_FALSE(run("equal", none, {&a, &a}, y23).ok());     // result not bool
  EXPECT_TRUE(run("equal", none, {&a, &a}, yb).ok());
  Tensor i(DType::I32, {2, 3});
  EXPECT_FALSE(run("add", none, {&a, &i}, y23).ok());       // mixed dtypes
  Attrs axis;
  axis.set("axis", int64_t(5));
  Tensor idx(DType::I64, {2});
  EXPECT_FALSE(run("softmax", axis, {&a}, y23).ok());       // axis out of range
  EXPECT_FALSE(run("argmax", axis, {&a}, idx).ok());
  Attrs ok0;
  ok0.set("axis", int64_t(1));
  Tensor f32idx(DType::F32, {2});
  EXPECT_FALSE(run("argmax", ok0, {&a}, f32idx).ok());      // result must be i64
  EXPECT_TRUE(run("argmax", ok0, {&a}, idx).ok());
  Attrs red;
  red.set("axes", Shape{1});
  Tensor wrong(DType::F32, {3});
  EXPECT_FALSE(run("reduce_sum", red, {&a}, wrong).ok());   // 2 results expected
  Attrs redBad;
  redBad.set("axes", Shape{4});
  EXPECT_FALSE(run("reduce_sum", redBad, {&a}, wrong).ok());
  // conv: channels do not match the group / weight.
  Tensor x(DType::F32, {1, 4, 5, 5}), w(DType::F32, {6, 3, 3, 3}), y(DType::F32, {1, 6, 3, 3});
  Attrs g;
  g.set("group", int64_t(1));
  EXPECT_FALSE(run("conv", g, {&x, &w}, y).ok());
  Attrs pool;
  pool.set("kernel_shape", Shape{2});
  EXPECT_FALSE(run("max_pool", pool, {&x}, y).ok());        // kernel rank mismatch
  EXPECT_FALSE(run("conv", g, {&x}, y).ok());               // weight missing
}

} // namespace
} // namespace tessel::test
