//===- elementwise_program.cpp - an elementwise group's program as text ---===//
//
// The one reader and writer of the `program` attribute's syntax
// (tessel/elementwise_program.h): the fusion pass writes it, the verifier,
// the CPU kernel and the GPU code generator read it.
//
//===----------------------------------------------------------------------===//
#include "tessel/elementwise_program.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace tessel::elementwise {
namespace {

/// How many constants a unary op takes in parentheses, and where they go.
int unaryParamCount(Unary op) {
  switch (op) {
  case Unary::LeakyRelu:
  case Unary::Elu:
  case Unary::Celu:
  case Unary::ThresholdedRelu: return 1;
  case Unary::Selu:
  case Unary::HardSigmoid:
  case Unary::Shrink: return 2;
  default: return 0;
  }
}

/// The i-th written constant's place in UnaryParams: selu writes alpha and
/// gamma, the others alpha then beta.
double *paramSlot(Unary op, UnaryParams &p, int i) {
  if (i == 0)
    return &p.alpha;
  return op == Unary::Selu ? &p.gamma : &p.beta;
}
double paramValue(Unary op, UnaryParams p, int i) { return *paramSlot(op, p, i); }

std::string formatNumber(double v) {
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "%.17g", v);
  return buffer;
}

std::string trim(const std::string &s) {
  size_t b = s.find_first_not_of(" \t\n"), e = s.find_last_not_of(" \t\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

/// A whole-string number; false if `text` is not one.
bool parseNumber(const std::string &text, double &value) {
  if (text.empty())
    return false;
  errno = 0;
  char *end = nullptr;
  value = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size() && errno != ERANGE;
}

bool parseIndex(const std::string &text, int &index) {
  if (text.empty() || text.size() > 4)
    return false;
  index = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return false;
    index = index * 10 + (c - '0');
  }
  return true;
}

} // namespace

int unaryNamed(const std::string &name) {
  for (int u = 0; u < kUnaryCount; ++u)
    if (name == kUnaryNames[u])
      return u;
  return -1;
}

int binaryNamed(const std::string &name) {
  for (int b = 0; b < kBinaryCount; ++b)
    if (kBinaryNames[b] && name == kBinaryNames[b])
      return b;
  return -1;
}

std::string parseProgram(const std::string &text, Program &program) {
  program = Program();
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(';', start);
    if (end == std::string::npos)
      end = text.size();
    const std::string instruction = trim(text.substr(start, end - start));
    start = end + 1;
    const int position = static_cast<int>(program.code.size());
    const std::string where = "instruction " + std::to_string(position) + " ('" + instruction + "')";
    if (instruction.empty())
      return where + ": empty";
    if (position >= kMaxGroupInstructions)
      return "more than " + std::to_string(kMaxGroupInstructions) + " instructions";

    // The name, its constants in parentheses, then space-separated operands.
    size_t nameEnd = instruction.find_first_of(" (");
    std::string name = instruction.substr(0, nameEnd);
    std::vector<double> params;
    size_t rest = nameEnd == std::string::npos ? instruction.size() : nameEnd;
    if (rest < instruction.size() && instruction[rest] == '(') {
      size_t close = instruction.find(')', rest);
      if (close == std::string::npos)
        return where + ": unclosed '('";
      std::string list = instruction.substr(rest + 1, close - rest - 1);
      size_t p = 0;
      while (p <= list.size()) {
        size_t comma = list.find(',', p);
        if (comma == std::string::npos)
          comma = list.size();
        double value = 0;
        if (!parseNumber(trim(list.substr(p, comma - p)), value))
          return where + ": bad constant '" + trim(list.substr(p, comma - p)) + "'";
        params.push_back(value);
        p = comma + 1;
      }
      rest = close + 1;
    }
    std::vector<std::string> operands;
    for (size_t p = rest; p < instruction.size();) {
      p = instruction.find_first_not_of(' ', p);
      if (p == std::string::npos)
        break;
      size_t q = instruction.find(' ', p);
      if (q == std::string::npos)
        q = instruction.size();
      operands.push_back(instruction.substr(p, q - p));
      p = q;
    }

    Instruction in;
    int arity = 0;
    size_t paramCount = 0;
    bool found = false;
    if (int u = unaryNamed(name); u >= 0) {
      in.kind = Instruction::Kind::Unary;
      in.unary = static_cast<Unary>(u);
      arity = 1;
      paramCount = static_cast<size_t>(unaryParamCount(in.unary));
      found = true;
    } else if (int b = binaryNamed(name); b >= 0) {
      in.kind = Instruction::Kind::Binary;
      in.binary = static_cast<Binary>(b);
      arity = 2;
      found = true;
    }
    if (!found) {
      if (name == "clip") {
        in.kind = Instruction::Kind::Clip;
        arity = 1;
        paramCount = 2;
      } else if (name == "where") {
        in.kind = Instruction::Kind::Where;
        arity = 3;
      } else if (name == "cast_f16") {
        in.kind = Instruction::Kind::CastF16;
        arity = 1;
      } else {
        return where + ": unknown op '" + name + "'";
      }
    }
    if (params.size() != paramCount)
      return where + ": " + name + " takes " + std::to_string(paramCount) + " constants, not " +
             std::to_string(params.size());
    if (static_cast<int>(operands.size()) != arity)
      return where + ": " + name + " takes " + std::to_string(arity) + " operands, not " +
             std::to_string(operands.size());
    if (in.kind == Instruction::Kind::Clip) {
      in.params.alpha = params[0];
      in.params.beta = params[1];
    } else {
      for (size_t i = 0; i < params.size(); ++i)
        *paramSlot(in.unary, in.params, static_cast<int>(i)) = params[i];
    }
    in.numOperands = arity;
    for (int i = 0; i < arity; ++i) {
      const std::string &o = operands[static_cast<size_t>(i)];
      Operand &operand = in.operands[i];
      if (o[0] == '$' || o[0] == '%') {
        if (!parseIndex(o.substr(1), operand.index))
          return where + ": bad operand '" + o + "'";
        if (o[0] == '%') {
          operand.kind = Operand::Kind::Value;
          if (operand.index >= position)
            return where + ": " + o + " is not an earlier instruction";
        } else {
          operand.kind = Operand::Kind::Input;
          if (operand.index >= kMaxGroupInputs)
            return where + ": more than " + std::to_string(kMaxGroupInputs) + " inputs";
          program.numInputs = std::max(program.numInputs, operand.index + 1);
          program.conditions.resize(static_cast<size_t>(program.numInputs), false);
        }
      } else if (!parseNumber(o, operand.literal)) {
        return where + ": bad operand '" + o + "'";
      }
    }
    if (in.kind == Instruction::Kind::Where && in.operands[0].kind != Operand::Kind::Input)
      return where + ": where's condition must be an input ($k)";
    program.code.push_back(in);
  }
  // An input is a condition or a number, never both.
  std::vector<int> use(static_cast<size_t>(program.numInputs), 0); // 1 number, 2 condition
  for (const Instruction &in : program.code)
    for (int i = 0; i < in.numOperands; ++i)
      if (in.operands[i].kind == Operand::Kind::Input) {
        int kind = in.kind == Instruction::Kind::Where && i == 0 ? 2 : 1;
        int &seen = use[static_cast<size_t>(in.operands[i].index)];
        if (seen && seen != kind)
          return "input $" + std::to_string(in.operands[i].index) +
                 " is both a condition and a number";
        seen = kind;
        program.conditions[static_cast<size_t>(in.operands[i].index)] = kind == 2;
      }
  return {};
}

std::string formatProgram(const Program &program) {
  std::string text;
  for (const Instruction &in : program.code) {
    if (!text.empty())
      text += "; ";
    std::vector<double> params;
    switch (in.kind) {
    case Instruction::Kind::Unary:
      text += kUnaryNames[static_cast<int>(in.unary)];
      for (int i = 0; i < unaryParamCount(in.unary); ++i)
        params.push_back(paramValue(in.unary, in.params, i));
      break;
    case Instruction::Kind::Binary: text += kBinaryNames[static_cast<int>(in.binary)]; break;
    case Instruction::Kind::Clip:
      text += "clip";
      params = {in.params.alpha, in.params.beta};
      break;
    case Instruction::Kind::Where: text += "where"; break;
    case Instruction::Kind::CastF16: text += "cast_f16"; break;
    }
    for (size_t i = 0; i < params.size(); ++i)
      text += (i ? ", " : "(") + formatNumber(params[i]) + (i + 1 == params.size() ? ")" : "");
    for (int i = 0; i < in.numOperands; ++i) {
      const Operand &o = in.operands[i];
      text += ' ';
      switch (o.kind) {
      case Operand::Kind::Input: text += "$" + std::to_string(o.index); break;
      case Operand::Kind::Value: text += "%" + std::to_string(o.index); break;
      case Operand::Kind::Literal: text += formatNumber(o.literal); break;
      }
    }
  }
  return text;
}

} // namespace tessel::elementwise
