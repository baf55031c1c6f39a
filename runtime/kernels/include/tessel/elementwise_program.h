//===- elementwise_program.h - a fused group of elementwise ops -*- C++ -*-===//
//
// A `tessel.elementwise_group` step computes one expression per element of
// its result: a connected group of elementwise ops (unary, binary with numpy
// broadcasting, clip, where, casts) whose intermediates nothing else reads,
// fused by --tessel-fuse-elementwise. Its `program` attribute is the
// expression as text, one instruction per `;`:
//
//   sigmoid $0; mul $0 %0; add %1 $1; clip(0, 6) %2; cast_f16 %3
//
// `$k` is the group's input k at the element (broadcast to the result's
// shape, numpy rules), `%k` the value of instruction k, a number a literal
// (C's strtod syntax: `0.5`, `-inf`). Names are the ops' own (the unary ops
// of elementwise_math.h and the binary ones add, sub, mul, div, pow, max,
// min, prelu, and fmod: ONNX Mod with fmod=1), `clip(lo, hi)`, `where c a b`
// (c an input of bool type) and `cast_f16` (the value rounded to f16, where
// the unfused graph stored it in f16). Parameterized unary ops take theirs
// in parentheses: leaky_relu(alpha), elu(alpha), celu(alpha),
// selu(alpha, gamma), thresholded_relu(alpha), hard_sigmoid(alpha, beta),
// shrink(bias, lambd). The result is the last instruction's value.
//
// Every value is computed in float (double where an operand is f64), with
// the formulas of elementwise_math.h, and rounded once, to the result's
// element type, plus wherever a cast_f16 says. The CPU tier interprets the
// program (runtime/kernels/src/elementwise.cpp); the GPU kernels are CUDA C++
// generated from it when the engine is compiled (codegen/custom/
// ElementwiseGroups.cpp), calling the same formulas.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_ELEMENTWISE_PROGRAM_H
#define TESSEL_ELEMENTWISE_PROGRAM_H

#include "tessel/elementwise_math.h"

#include <string>
#include <vector>

namespace tessel::elementwise {

/// A group's limits: the kernels' parameter lists and value arrays are sized
/// by them.
constexpr int kMaxGroupInputs = 8;
constexpr int kMaxGroupInstructions = 64;

/// The unary ops' names, in Unary's order (the engine's step names).
inline constexpr const char *kUnaryNames[] = {
    "relu", "sigmoid", "tanh", "abs", "neg", "exp", "log", "sqrt", "reciprocal",
    "floor", "ceil", "round", "sign", "erf", "sin", "cos", "tan", "asin", "acos",
    "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "softplus", "softsign",
    "hard_swish", "leaky_relu", "elu", "celu", "selu", "thresholded_relu",
    "hard_sigmoid", "shrink", "gelu", "gelu_tanh", "silu"};
inline constexpr int kUnaryCount = 38;

/// The binary ops' names in a program, in Binary's order; Mod (integers
/// only) has none.
inline constexpr const char *kBinaryNames[] = {"add", "sub", "mul", "div", "pow",
                                               nullptr, "fmod", "max", "min", "prelu"};
inline constexpr int kBinaryCount = 10;

/// A unary op's constants, as unaryFloat reads them.
struct UnaryParams {
  double alpha = 0, beta = 0, gamma = 0;
};

struct Operand {
  enum class Kind { Input, Value, Literal };
  Kind kind = Kind::Literal;
  int index = 0;       ///< the input (Input) or instruction (Value)
  double literal = 0;  ///< Literal
};

struct Instruction {
  enum class Kind { Unary, Binary, Clip, Where, CastF16 };
  Kind kind = Kind::Unary;
  Unary unary = Unary::Relu;
  Binary binary = Binary::Add;
  UnaryParams params;  ///< Unary's constants; Clip: alpha = lo, beta = hi
  Operand operands[3];
  int numOperands = 0;
};

struct Program {
  std::vector<Instruction> code;
  int numInputs = 0;  ///< one more than the largest $k
  /// Per input: whether it is read as a where's condition (a bool tensor)
  /// rather than as a number; an input is one or the other.
  std::vector<bool> conditions;
};

/// The unary op or binary op a program (and the engine) names `name`; -1
/// for none.
int unaryNamed(const std::string &name);
int binaryNamed(const std::string &name);

/// A unary op's constants from its attributes, by the ops' attribute names
/// and ONNX's defaults: `get(name, fallback)` reads one as a double.
template <typename Get> UnaryParams unaryParams(Unary op, Get &&get) {
  UnaryParams p;
  switch (op) {
  case Unary::LeakyRelu: p.alpha = get("alpha", 0.01); break;
  case Unary::Elu:
  case Unary::Celu:
  case Unary::ThresholdedRelu: p.alpha = get("alpha", 1.0); break;
  case Unary::Selu:
    p.alpha = get("alpha", 1.67326319217681884765625);
    p.gamma = get("gamma", 1.05070102214813232421875);
    break;
  case Unary::HardSigmoid:
    p.alpha = get("alpha", 0.2);
    p.beta = get("beta", 0.5);
    break;
  case Unary::Shrink:
    p.alpha = get("bias", 0.0);
    p.beta = get("lambd", 0.5);
    break;
  default: break;
  }
  return p;
}

/// Parses `text`; the error (naming the instruction) or "" on success.
std::string parseProgram(const std::string &text, Program &program);

/// The program as text (numbers to 17 digits: parsing it gives it back).
std::string formatProgram(const Program &program);

/// `op` on x with its constants, chosen at run time (the interpreter's).
template <typename C> C unaryAt(Unary op, C x, const UnaryParams &p) {
  switch (op) {
#define TSL_UNARY_CASE(id)                                                                         \
  case Unary::id: return unaryFloat<Unary::id, C>(x, p);
    TSL_UNARY_CASE(Relu) TSL_UNARY_CASE(Sigmoid) TSL_UNARY_CASE(Tanh) TSL_UNARY_CASE(Abs)
    TSL_UNARY_CASE(Neg) TSL_UNARY_CASE(Exp) TSL_UNARY_CASE(Log) TSL_UNARY_CASE(Sqrt)
    TSL_UNARY_CASE(Reciprocal) TSL_UNARY_CASE(Floor) TSL_UNARY_CASE(Ceil) TSL_UNARY_CASE(Round)
    TSL_UNARY_CASE(Sign) TSL_UNARY_CASE(Erf) TSL_UNARY_CASE(Sin) TSL_UNARY_CASE(Cos)
    TSL_UNARY_CASE(Tan) TSL_UNARY_CASE(Asin) TSL_UNARY_CASE(Acos) TSL_UNARY_CASE(Atan)
    TSL_UNARY_CASE(Sinh) TSL_UNARY_CASE(Cosh) TSL_UNARY_CASE(Asinh) TSL_UNARY_CASE(Acosh)
    TSL_UNARY_CASE(Atanh) TSL_UNARY_CASE(Softplus) TSL_UNARY_CASE(Softsign)
    TSL_UNARY_CASE(HardSwish) TSL_UNARY_CASE(LeakyRelu) TSL_UNARY_CASE(Elu) TSL_UNARY_CASE(Celu)
    TSL_UNARY_CASE(Selu) TSL_UNARY_CASE(ThresholdedRelu) TSL_UNARY_CASE(HardSigmoid)
    TSL_UNARY_CASE(Shrink) TSL_UNARY_CASE(Gelu) TSL_UNARY_CASE(GeluTanh) TSL_UNARY_CASE(Silu)
#undef TSL_UNARY_CASE
  }
  return x;
}

/// `op` on x and y, chosen at run time.
template <typename C> C binaryAt(Binary op, C x, C y) {
  switch (op) {
  case Binary::Add: return binaryFloat<Binary::Add, C>(x, y);
  case Binary::Sub: return binaryFloat<Binary::Sub, C>(x, y);
  case Binary::Mul: return binaryFloat<Binary::Mul, C>(x, y);
  case Binary::Div: return binaryFloat<Binary::Div, C>(x, y);
  case Binary::Pow: return binaryFloat<Binary::Pow, C>(x, y);
  case Binary::Mod:
  case Binary::FMod: return binaryFloat<Binary::FMod, C>(x, y);
  case Binary::Max: return binaryFloat<Binary::Max, C>(x, y);
  case Binary::Min: return binaryFloat<Binary::Min, C>(x, y);
  case Binary::PRelu: return binaryFloat<Binary::PRelu, C>(x, y);
  }
  return x;
}

/// The program on one element: `input(k)` is input k's element widened to C
/// (a condition's as 0 or 1), `roundF16(v)` v rounded to f16 and widened;
/// `values` holds a value per instruction. Returns the last one.
template <typename C, typename Input, typename RoundF16>
C evaluate(const Program &program, Input &&input, RoundF16 &&roundF16, C *values) {
  auto operand = [&](const Operand &o) -> C {
    switch (o.kind) {
    case Operand::Kind::Input: return input(o.index);
    case Operand::Kind::Value: return values[o.index];
    case Operand::Kind::Literal: break;
    }
    return static_cast<C>(o.literal);
  };
  C v = 0;
  for (size_t i = 0; i < program.code.size(); ++i) {
    const Instruction &in = program.code[i];
    switch (in.kind) {
    case Instruction::Kind::Unary: v = unaryAt<C>(in.unary, operand(in.operands[0]), in.params); break;
    case Instruction::Kind::Binary:
      v = binaryAt<C>(in.binary, operand(in.operands[0]), operand(in.operands[1]));
      break;
    case Instruction::Kind::Clip:
      v = clip<C>(operand(in.operands[0]), static_cast<C>(in.params.alpha),
                  static_cast<C>(in.params.beta));
      break;
    case Instruction::Kind::Where:
      v = operand(in.operands[0]) != C(0) ? operand(in.operands[1]) : operand(in.operands[2]);
      break;
    case Instruction::Kind::CastF16: v = roundF16(operand(in.operands[0])); break;
    }
    values[i] = v;
  }
  return v;
}

} // namespace tessel::elementwise

#endif // TESSEL_ELEMENTWISE_PROGRAM_H
