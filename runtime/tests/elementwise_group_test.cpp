//===- elementwise_group_test.cpp - fused elementwise groups ---------------===//
//
// The program syntax (tessel/elementwise_program.h: parse, format, refusals)
// and the CPU kernel elementwise_group against a float64 reference written
// here, op by op, with numpy broadcasting of inputs of four shapes.
//
//===----------------------------------------------------------------------===//
#include "Reference.h"
#include "tessel/elementwise_program.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace tessel::test {
namespace {

using namespace cpu;
namespace ew = tessel::elementwise;

TEST(ElementwiseProgram, FormatGivesTheParsedProgramBack) {
  const std::string text =
      "mul $0 $1; sigmoid %0; add %1 0.5; clip(0, 6) %2; leaky_relu(0.10000000000000001) %3; "
      "selu(1.6732632423543772, 1.0507009873554805) %4; hard_sigmoid(0.20000000000000001, 0.5) "
      "%5; shrink(0, 0.5) %6; where $2 %7 $0; cast_f16 %8; fmod %9 -inf";
  ew::Program program;
  ASSERT_EQ(ew::parseProgram(text, program), "");
  EXPECT_EQ(program.numInputs, 3);
  EXPECT_EQ(program.code.size(), 11u);
  EXPECT_EQ(program.conditions, (std::vector<bool>{false, false, true}));
  EXPECT_EQ(program.code[5].unary, ew::Unary::Selu);
  EXPECT_EQ(program.code[5].params.gamma, 1.0507009873554805);
  EXPECT_EQ(program.code[6].params.beta, 0.5);
  EXPECT_EQ(program.code[3].params.beta, 6.0);
  EXPECT_EQ(ew::formatProgram(program), text);
}

TEST(ElementwiseProgram, RefusesWhatIsNotAProgram) {
  const std::pair<const char *, const char *> bad[] = {
      {"", "empty"},
      {"frobnicate $0", "unknown op 'frobnicate'"},
      {"add $0", "add takes 2 operands, not 1"},
      {"sigmoid %0", "%0 is not an earlier instruction"},
      {"relu $0; add %0 %5", "%5 is not an earlier instruction"},
      {"leaky_relu $0", "leaky_relu takes 1 constants, not 0"},
      {"clip(0) $0", "clip takes 2 constants, not 1"},
      {"relu(1) $0", "relu takes 0 constants, not 1"},
      {"add $0 1.5x", "bad operand '1.5x'"},
      {"add $0 $x", "bad operand '$x'"},
      {"clip(0, 6 $0", "unclosed '('"},
      {"relu $8", "more than 8 inputs"},
      {"relu $0; where %0 $0 $1", "where's condition must be an input"},
      {"where $0 $1 $2; add %0 $0", "input $0 is both a condition and a number"},
      {"relu $0;", "empty"},
      {"mod $0 $1", "unknown op 'mod'"},
  };
  for (const auto &[text, message] : bad) {
    ew::Program program;
    std::string error = ew::parseProgram(text, program);
    EXPECT_NE(error.find(message), std::string::npos) << text << " -> " << error;
  }
  std::string many;
  for (int i = 0; i <= ew::kMaxGroupInstructions; ++i)
    many += i ? "; relu %" + std::to_string(i - 1) : std::string("relu $0");
  ew::Program program;
  EXPECT_NE(ew::parseProgram(many, program).find("more than 64 instructions"), std::string::npos);
}

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

// The reference of the program below, in double, on one element; `mag` the
// size of the terms summed. f16Round rounds a double to the nearest f16.
template <typename Round>
double reference(double x, double w, double b, bool c, Round &&f16Round, double &mag) {
  double v = sigmoid(x * w);                          // mul $0 $1; sigmoid %0
  v = v + b;                                          // add %1 $2
  v = std::min(std::max(v, 0.25), 1.5);               // clip(0.25, 1.5) %2
  v = (v - 1.0) + f16Round(x);                        // sub %3 1; cast_f16 $0; add
  mag = std::fabs(v) + 1.0;
  v = v < 0 ? 0.5 * v : v;                            // leaky_relu(0.5) %6
  v = c ? v : x / 4;                                  // div $0 4; where $3 %7 %8
  const double product = v * v * std::tanh(x), swish = x * sigmoid(x);
  mag = mag * (std::fabs(v) + 1) + std::fabs(product) + std::fabs(swish);
  return product + swish;                             // the rest
}

// An input rounded to f16 (cast_f16 $0) rather than a computed value: a value
// computed in float may lie within float's error of a midpoint between two
// f16 numbers, where float and double round to different neighbours.
const char *kProgram = "mul $0 $1; sigmoid %0; add %1 $2; clip(0.25, 1.5) %2; sub %3 1; "
                       "cast_f16 $0; add %4 %5; leaky_relu(0.5) %6; div $0 4; where $3 %7 %8; "
                       "mul %9 %9; tanh $0; mul %10 %11; silu $0; add %12 %13";

TEST(KernelElementwiseGroup, MatchesFloat64WithBroadcasting) {
  std::mt19937 rng(20);
  for (DType t : {DType::F32, DType::F16, DType::F64}) {
    const Shape shape{2, 3, 5, 16};
    Tensor x = randomTensor(t, shape, rng, -3, 3);
    Tensor w = randomTensor(t, {16}, rng, -2, 2);          // a per-channel weight
    Tensor b = randomTensor(t, {2, 1, 1, 16}, rng, -1, 1); // per image and channel
    Tensor c(DType::Bool, {2, 3, 5, 1});                   // per pixel
    for (int64_t i = 0; i < c.size(); ++i)
      c.set(i, (i * 7) % 3 != 0);
    Tensor y(t, shape);
    Attrs a;
    a.set("program", std::string(kProgram));
    RUN_OK("elementwise_group", a, {&x, &w, &b, &c}, y);

    Tensor half(DType::F16, {1});
    auto f16Round = [&](double v) {
      half.set(0, v);
      return half.get(0);
    };
    std::vector<double> ref(static_cast<size_t>(y.size())), mag(ref.size());
    for (int64_t i = 0; i < y.size(); ++i) {
      const int64_t ch = i % 16, pixel = i / 16, image = i / (3 * 5 * 16);
      const double xv = x.get(i);
      ref[static_cast<size_t>(i)] = reference(xv, w.get(ch), b.get(image * 16 + ch),
                                              c.get(pixel) != 0, f16Round, mag[static_cast<size_t>(i)]);
    }
    // Every value is computed in float (f64: double) and rounded once to
    // the result's type (cast_f16 rounds an input, as the reference does).
    // f32: ~20 float operations of relative
    // error 2^-24 each on terms of size mag (1e-6 of mag). f16: that plus the
    // one rounding of the result (2^-11 of |ref|, 2^-25 below f16's normal
    // range). f64: 1e-13 of mag.
    std::vector<double> tol(ref.size());
    for (size_t i = 0; i < ref.size(); ++i) {
      if (t == DType::F64)
        tol[i] = 1e-13 * mag[i];
      else
        tol[i] = 1e-6 * mag[i] +
                 (t == DType::F16 ? std::ldexp(std::fabs(ref[i]), -11) + std::ldexp(1.0, -25) : 0);
    }
    expectClose(y, ref, tol, std::string("elementwise_group ") + dtypeName(t));
  }
}

TEST(KernelElementwiseGroup, BadOperandsReturnErrors) {
  std::mt19937 rng(21);
  Tensor x = randomTensor(DType::F32, {4, 8}, rng);
  Tensor z = randomTensor(DType::F32, {3}, rng);
  Tensor c(DType::Bool, {4, 8});
  Tensor i32(DType::I32, {4, 8});
  Tensor y(DType::F32, {4, 8});
  auto expectError = [&](const std::string &program, std::vector<const Tensor *> inputs,
                         const std::string &message, Tensor &out) {
    KernelStatus s = run("elementwise_group", makeAttrs({{"program", program}}), inputs, out);
    ASSERT_FALSE(s.ok()) << program;
    EXPECT_NE(s.error.find(message), std::string::npos) << s.error;
  };
  expectError("add $0 $1", {&x, &z}, "does not broadcast", y);
  expectError("relu $0", {&c}, "input 0 is bool, not a float", y);
  expectError("where $0 $1 $1", {&x, &x}, "input 0 is f32, not a bool condition", y);
  expectError("relu $0", {&i32}, "not a float", y);
  expectError("add $0 $1", {&x}, "expected 2 inputs", y);
  expectError("nonsense", {&x}, "program: instruction 0", y);
  Tensor yi(DType::I32, {4, 8});
  expectError("relu $0", {&x}, "unsupported dtype", yi);
}

} // namespace
} // namespace tessel::test
