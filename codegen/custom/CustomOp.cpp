//===- CustomOp.cpp - custom op manifests ---------------------------------===//
#include "CustomOp.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

namespace tessel::custom {

using nlohmann::json;

//===----------------------------------------------------------------------===//
// DimExpr
//===----------------------------------------------------------------------===//

struct DimExpr::Node {
  enum class Kind { Literal, Dim, Attr, Binary } kind = Kind::Literal;
  int64_t value = 0;   ///< Literal; Dim: the dim index
  int input = 0;       ///< Dim
  std::string attr;    ///< Attr
  char op = 0;         ///< Binary
  std::shared_ptr<const Node> lhs, rhs;
};

namespace {

/// Recursive descent over `expr := term (('+'|'-') term)*`, `term := factor
/// (('*'|'/'|'%') factor)*`, `factor := INT | NAME '[' INT ']' | NAME | '('
/// expr ')' | '-' factor`.
class ExprParser {
public:
  ExprParser(const std::string &text, const std::vector<std::string> &inputs,
             const std::vector<std::string> &intAttrs)
      : text(text), inputs(inputs), intAttrs(intAttrs) {}

  std::shared_ptr<const DimExpr::Node> parse(std::string &error) {
    auto node = comparison();
    skipSpace();
    if (node && pos != text.size())
      fail("unexpected '" + std::string(1, text[pos]) + "'");
    if (!problem.empty()) {
      error = "in '" + text + "' at column " + std::to_string(problemPos + 1) + ": " + problem;
      return nullptr;
    }
    return node;
  }

private:
  using NodePtr = std::shared_ptr<const DimExpr::Node>;

  void skipSpace() {
    while (pos < text.size() && std::isspace(static_cast<unsigned char>(text[pos])))
      ++pos;
  }
  NodePtr fail(const std::string &what) {
    if (problem.empty()) {
      problem = what;
      problemPos = pos;
    }
    return nullptr;
  }
  NodePtr binary(char op, NodePtr lhs, NodePtr rhs) {
    auto node = std::make_shared<DimExpr::Node>();
    node->kind = DimExpr::Node::Kind::Binary;
    node->op = op;
    node->lhs = std::move(lhs);
    node->rhs = std::move(rhs);
    return node;
  }
  /// `expr (CMP expr)?`, CMP one of == != <= >= < >: 1 or 0.
  NodePtr comparison() {
    NodePtr lhs = expr();
    skipSpace();
    if (!lhs || pos >= text.size())
      return lhs;
    static const std::pair<const char *, char> kOps[] = {
        {"==", 'e'}, {"!=", 'n'}, {"<=", 'l'}, {">=", 'g'}, {"<", '<'}, {">", '>'}};
    for (auto [spelling, code] : kOps)
      if (text.compare(pos, std::strlen(spelling), spelling) == 0) {
        pos += std::strlen(spelling);
        NodePtr rhs = expr();
        return rhs ? binary(code, lhs, rhs) : nullptr;
      }
    return lhs;
  }
  NodePtr expr() { return leftAssociative("+-", &ExprParser::term); }
  NodePtr term() { return leftAssociative("*/%", &ExprParser::factor); }
  /// `operand (OP operand)*` for OP one of `ops`, grouped from the left.
  NodePtr leftAssociative(const char *ops, NodePtr (ExprParser::*operand)()) {
    NodePtr lhs = (this->*operand)();
    for (skipSpace(); lhs && pos < text.size() && text[pos] && std::strchr(ops, text[pos]);
         skipSpace()) {
      char op = text[pos++];
      NodePtr rhs = (this->*operand)();
      if (!rhs)
        return nullptr;
      lhs = binary(op, lhs, rhs);
    }
    return lhs;
  }
  std::optional<int64_t> integer() {
    size_t start = pos;
    int64_t value = 0;
    while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
      if (value > (std::numeric_limits<int64_t>::max() - 9) / 10) {
        fail("integer too large");
        return std::nullopt;
      }
      value = value * 10 + (text[pos++] - '0');
    }
    if (pos == start) {
      fail("expected an integer");
      return std::nullopt;
    }
    return value;
  }
  NodePtr factor() {
    skipSpace();
    if (pos >= text.size())
      return fail("unexpected end");
    char c = text[pos];
    if (c == '(') {
      ++pos;
      NodePtr inner = expr();
      skipSpace();
      if (!inner)
        return nullptr;
      if (pos >= text.size() || text[pos] != ')')
        return fail("expected ')'");
      ++pos;
      return inner;
    }
    if (c == '-') {
      ++pos;
      NodePtr operand = factor();
      if (!operand)
        return nullptr;
      auto zero = std::make_shared<DimExpr::Node>();
      return binary('-', zero, operand);
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      std::optional<int64_t> value = integer();
      if (!value)
        return nullptr;
      auto node = std::make_shared<DimExpr::Node>();
      node->value = *value;
      return node;
    }
    if (!std::isalpha(static_cast<unsigned char>(c)) && c != '_')
      return fail("unexpected '" + std::string(1, c) + "'");
    size_t start = pos;
    while (pos < text.size() &&
           (std::isalnum(static_cast<unsigned char>(text[pos])) || text[pos] == '_'))
      ++pos;
    std::string name = text.substr(start, pos - start);
    skipSpace();
    auto node = std::make_shared<DimExpr::Node>();
    if (pos < text.size() && text[pos] == '[') {
      auto it = std::find(inputs.begin(), inputs.end(), name);
      if (it == inputs.end()) {
        pos = start;
        return fail("'" + name + "' is not an input");
      }
      ++pos;
      skipSpace();
      bool negative = pos < text.size() && text[pos] == '-';
      if (negative)
        ++pos;
      std::optional<int64_t> dim = integer();
      skipSpace();
      if (!dim)
        return nullptr;
      if (pos >= text.size() || text[pos] != ']')
        return fail("expected ']'");
      ++pos;
      node->kind = DimExpr::Node::Kind::Dim;
      node->input = static_cast<int>(it - inputs.begin());
      node->value = negative ? -*dim : *dim;
      return node;
    }
    if (std::find(intAttrs.begin(), intAttrs.end(), name) == intAttrs.end()) {
      pos = start;
      return fail("'" + name + "' is neither an input's dim (NAME[i]) nor an int attribute");
    }
    node->kind = DimExpr::Node::Kind::Attr;
    node->attr = name;
    return node;
  }

  const std::string &text;
  const std::vector<std::string> &inputs;
  const std::vector<std::string> &intAttrs;
  size_t pos = 0;
  std::string problem;
  size_t problemPos = 0;
};

std::optional<int64_t> evaluateNode(const DimExpr::Node &node,
                                    const std::vector<std::vector<int64_t>> &shapes,
                                    const std::map<std::string, int64_t> &attrs,
                                    std::string &error) {
  using Kind = DimExpr::Node::Kind;
  switch (node.kind) {
  case Kind::Literal:
    return node.value;
  case Kind::Dim: {
    const std::vector<int64_t> &shape = shapes.at(static_cast<size_t>(node.input));
    int64_t rank = static_cast<int64_t>(shape.size());
    int64_t dim = node.value < 0 ? node.value + rank : node.value;
    if (dim < 0 || dim >= rank) {
      error = "dim " + std::to_string(node.value) + " of input " + std::to_string(node.input) +
              " is out of range for its rank " + std::to_string(rank);
      return std::nullopt;
    }
    return shape[static_cast<size_t>(dim)];
  }
  case Kind::Attr: {
    auto it = attrs.find(node.attr);
    if (it == attrs.end()) {
      error = "attribute '" + node.attr + "' has no value";
      return std::nullopt;
    }
    return it->second;
  }
  case Kind::Binary: {
    std::optional<int64_t> a = evaluateNode(*node.lhs, shapes, attrs, error);
    if (!a)
      return std::nullopt;
    std::optional<int64_t> b = evaluateNode(*node.rhs, shapes, attrs, error);
    if (!b)
      return std::nullopt;
    int64_t result = 0;
    bool overflow = false;
    switch (node.op) {
    case 'e': return int64_t(*a == *b);
    case 'n': return int64_t(*a != *b);
    case 'l': return int64_t(*a <= *b);
    case 'g': return int64_t(*a >= *b);
    case '<': return int64_t(*a < *b);
    case '>': return int64_t(*a > *b);
    case '+': overflow = __builtin_add_overflow(*a, *b, &result); break;
    case '-': overflow = __builtin_sub_overflow(*a, *b, &result); break;
    case '*': overflow = __builtin_mul_overflow(*a, *b, &result); break;
    case '/':
    case '%':
      if (*b == 0) {
        error = "division by zero";
        return std::nullopt;
      }
      if (*a == std::numeric_limits<int64_t>::min() && *b == -1) {
        overflow = true;
        break;
      }
      if (node.op == '/') {
        result = *a / *b;
        if ((*a % *b != 0) && ((*a < 0) != (*b < 0)))
          --result; // floor division
      } else {
        result = *a % *b;
        if (result != 0 && ((result < 0) != (*b < 0)))
          result += *b;
      }
      break;
    }
    if (overflow) {
      error = "integer overflow";
      return std::nullopt;
    }
    return result;
  }
  }
  return std::nullopt;
}

} // namespace

std::optional<DimExpr> DimExpr::parse(const std::string &text,
                                      const std::vector<std::string> &inputs,
                                      const std::vector<std::string> &intAttrs,
                                      std::string &error) {
  ExprParser parser(text, inputs, intAttrs);
  std::shared_ptr<const Node> root = parser.parse(error);
  if (!root)
    return std::nullopt;
  DimExpr expr;
  expr.source = text;
  expr.root = std::move(root);
  return expr;
}

std::optional<int64_t> DimExpr::evaluate(const std::vector<std::vector<int64_t>> &inputShapes,
                                         const std::map<std::string, int64_t> &attrs,
                                         std::string &error) const {
  return evaluateNode(*root, inputShapes, attrs, error);
}

//===----------------------------------------------------------------------===//
// Manifests
//===----------------------------------------------------------------------===//

bool CustomOpDecl::accepts(const std::string &dtype) const {
  return std::find(dtypes.begin(), dtypes.end(), dtype) != dtypes.end();
}

std::vector<const AttrDecl *> CustomOpDecl::numericAttributes() const {
  std::vector<const AttrDecl *> numeric;
  for (const AttrDecl &attr : attributes)
    if (attr.kind == AttrDecl::Kind::Int || attr.kind == AttrDecl::Kind::Float)
      numeric.push_back(&attr);
  return numeric;
}

namespace {

/// A manifest error: thrown while reading, caught once in loadManifest.
struct ManifestError {
  std::string message;
};

[[noreturn]] void fail(const std::string &message) { throw ManifestError{message}; }

bool isIdentifier(const std::string &name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_'))
    return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

/// Refuses keys of `object` not in `known` (a typo must not pass silently).
void onlyKeys(const json &object, const std::string &where, std::initializer_list<const char *> known) {
  for (auto it = object.begin(); it != object.end(); ++it) {
    bool ok = false;
    for (const char *key : known)
      ok |= it.key() == key;
    if (!ok) {
      std::string list;
      for (const char *key : known)
        list += std::string(list.empty() ? "" : ", ") + key;
      fail(where + " has an unknown key '" + it.key() + "' (known: " + list + ")");
    }
  }
}

const json &required(const json &object, const char *key, const std::string &where) {
  if (!object.contains(key))
    fail(where + " has no \"" + key + "\"");
  return object.at(key);
}

std::string stringField(const json &object, const char *key, const std::string &where) {
  const json &value = required(object, key, where);
  if (!value.is_string() || value.get<std::string>().empty())
    fail(where + ": \"" + key + "\" must be a non-empty string");
  return value.get<std::string>();
}

uint32_t positiveField(const json &object, const char *key, const std::string &where,
                       uint32_t dflt, uint32_t most) {
  if (!object.contains(key))
    return dflt;
  const json &value = object.at(key);
  if (!value.is_number_integer() || value.get<int64_t>() < 1 || value.get<int64_t>() > most)
    fail(where + ": \"" + key + "\" must be an integer from 1 to " + std::to_string(most));
  return static_cast<uint32_t>(value.get<int64_t>());
}

/// A list of dims, each an integer or an expression over `inputs`' dims and
/// `intAttrs` (DimExpr).
std::vector<DimExpr> readDims(const json &shape, const std::string &where,
                              const std::vector<std::string> &inputs,
                              const std::vector<std::string> &intAttrs) {
  if (shape.size() > static_cast<size_t>(kMaxRank))
    fail(where + ": at most " + std::to_string(kMaxRank) + " dims");
  std::vector<DimExpr> dims;
  for (const json &dim : shape) {
    std::string text = dim.is_number_integer() ? std::to_string(dim.get<int64_t>())
                       : dim.is_string()       ? dim.get<std::string>()
                                               : "";
    if (text.empty())
      fail(where + ": each dim must be an integer or an expression string");
    std::string why;
    std::optional<DimExpr> expr = DimExpr::parse(text, inputs, intAttrs, why);
    if (!expr)
      fail(where + ": " + why);
    dims.push_back(std::move(*expr));
  }
  return dims;
}

std::optional<AttrDecl::Kind> attrKind(const std::string &name) {
  if (name == "int") return AttrDecl::Kind::Int;
  if (name == "float") return AttrDecl::Kind::Float;
  if (name == "ints") return AttrDecl::Kind::Ints;
  if (name == "floats") return AttrDecl::Kind::Floats;
  if (name == "string") return AttrDecl::Kind::String;
  return std::nullopt;
}

cpu::AttrValue attrValue(const json &value, AttrDecl::Kind kind, const std::string &where) {
  auto wrong = [&](const char *what) -> cpu::AttrValue { fail(where + ": the default must be " + what); };
  switch (kind) {
  case AttrDecl::Kind::Int:
    if (!value.is_number_integer())
      return wrong("an integer");
    return value.get<int64_t>();
  case AttrDecl::Kind::Float:
    if (!value.is_number())
      return wrong("a number");
    return value.get<double>();
  case AttrDecl::Kind::Ints:
    if (!value.is_array() || !std::all_of(value.begin(), value.end(),
                                          [](const json &v) { return v.is_number_integer(); }))
      return wrong("an array of integers");
    return value.get<std::vector<int64_t>>();
  case AttrDecl::Kind::Floats:
    if (!value.is_array() ||
        !std::all_of(value.begin(), value.end(), [](const json &v) { return v.is_number(); }))
      return wrong("an array of numbers");
    return value.get<std::vector<double>>();
  case AttrDecl::Kind::String:
    if (!value.is_string())
      return wrong("a string");
    return value.get<std::string>();
  }
  return wrong("valid");
}

std::optional<engine::Tier> variantTier(const std::string &name) {
  if (name == "simt") return engine::Tier::simt;
  if (name == "tc" || name == "tc-sm70") return engine::Tier::tc_sm70;
  if (name == "tc-sm80") return engine::Tier::tc_sm80;
  if (name == "tc-sm90") return engine::Tier::tc_sm90;
  return std::nullopt;
}

/// Names the engine step's own attributes take: a user attribute may not.
const std::set<std::string> kReservedAttrs = {"domain", "op_type", "dtypes", "layout"};

CustomOpDecl readManifest(const json &root, const std::string &path) {
  if (!root.is_object())
    fail("the manifest must be a JSON object");
  CustomOpDecl decl;
  decl.file = path;
  decl.domain = stringField(root, "domain", "the manifest");
  decl.opType = stringField(root, "op_type", "the manifest");
  if (decl.domain == "ai.onnx" || decl.domain == "ai.onnx.ml")
    fail("domain '" + decl.domain + "' is ONNX's own: a custom op needs a domain of its own");
  const std::string op = "custom op " + decl.qualifiedName();
  try {
    onlyKeys(root, op, {"domain", "op_type", "inputs", "outputs", "types", "layout",
                        "attributes", "variants"});

    const json &inputs = required(root, "inputs", op);
    if (!inputs.is_array() || inputs.empty() || inputs.size() > kMaxOperands)
      fail(op + ": \"inputs\" must list 1 to " + std::to_string(kMaxOperands) + " input names");
    for (const json &input : inputs) {
      // "a", or {"name": "b", "shape": {"same_as": "a"}}.
      std::string name = input.is_string() ? input.get<std::string>() : "";
      int sameAs = -1;
      std::vector<DimExpr> dims;
      if (input.is_object()) {
        name = stringField(input, "name", op + ": an input");
        const std::string where = op + ": input '" + name + "'";
        onlyKeys(input, where, {"name", "shape"});
        const json &shape = required(input, "shape", where);
        if (shape.is_array()) {
          dims = readDims(shape, where, decl.inputs, {});
        } else {
          if (!shape.is_object())
            fail(where + ": \"shape\" must be {\"same_as\": EARLIER_INPUT} or a list of dims "
                         "over earlier inputs' dims");
          onlyKeys(shape, where + "'s shape", {"same_as"});
          std::string other = stringField(shape, "same_as", where + "'s shape");
          auto it = std::find(decl.inputs.begin(), decl.inputs.end(), other);
          if (it == decl.inputs.end())
            fail(where + ": \"same_as\" names '" + other + "', which is not an earlier input");
          sameAs = static_cast<int>(it - decl.inputs.begin());
        }
      }
      if (!isIdentifier(name))
        fail(op + ": an input must be an identifier (letters, digits, '_') or an object with "
                  "\"name\" and \"shape\"");
      if (std::count(decl.inputs.begin(), decl.inputs.end(), name))
        fail(op + ": input '" + name + "' is declared twice");
      decl.inputs.push_back(name);
      decl.sameShapeAs.push_back(sameAs);
      decl.inputDims.push_back(std::move(dims));
    }

    const json &types = required(root, "types", op);
    if (!types.is_array() || types.empty())
      fail(op + ": \"types\" must list the element types it accepts (\"f32\", \"f16\")");
    for (const json &type : types) {
      std::string name = type.is_string() ? type.get<std::string>() : "";
      if (name != "f32" && name != "f16")
        fail(op + ": unknown element type " + type.dump() + " (\"f32\" or \"f16\")");
      if (!decl.accepts(name))
        decl.dtypes.push_back(name);
    }

    if (root.contains("layout")) {
      const json &layout = root.at("layout");
      decl.layout = layout.is_string() ? layout.get<std::string>() : "";
      if (decl.layout != "any" && decl.layout != "NCHW" && decl.layout != "NHWC")
        fail(op + ": unknown layout " + layout.dump() + " (\"any\", \"NCHW\" or \"NHWC\")");
    }

    std::vector<std::string> intAttrs;
    if (root.contains("attributes")) {
      const json &attributes = root.at("attributes");
      if (!attributes.is_array())
        fail(op + ": \"attributes\" must be an array");
      for (const json &attribute : attributes) {
        if (!attribute.is_object())
          fail(op + ": each attribute must be an object");
        AttrDecl attr;
        attr.name = stringField(attribute, "name", op + ": an attribute");
        const std::string where = op + ": attribute '" + attr.name + "'";
        onlyKeys(attribute, where, {"name", "type", "default"});
        if (kReservedAttrs.count(attr.name))
          fail(where + ": the name is reserved for the step's own attributes");
        for (const AttrDecl &other : decl.attributes)
          if (other.name == attr.name)
            fail(where + " is declared twice");
        std::optional<AttrDecl::Kind> kind = attrKind(stringField(attribute, "type", where));
        if (!kind)
          fail(where + ": unknown type '" + attribute.at("type").get<std::string>() +
               "' (int, float, ints, floats or string)");
        attr.kind = *kind;
        if (attribute.contains("default"))
          attr.dflt = attrValue(attribute.at("default"), attr.kind, where);
        if (attr.kind == AttrDecl::Kind::Int)
          intAttrs.push_back(attr.name);
        decl.attributes.push_back(std::move(attr));
      }
      if (decl.numericAttributes().size() > static_cast<size_t>(kMaxNumericAttrs))
        fail(op + ": at most " + std::to_string(kMaxNumericAttrs) +
             " int and float attributes (the kernels' TesselCustomArgs holds that many)");
    }

    const json &outputs = required(root, "outputs", op);
    if (!outputs.is_array() || outputs.empty() || outputs.size() > kMaxOperands)
      fail(op + ": \"outputs\" must list 1 to " + std::to_string(kMaxOperands) + " outputs");
    for (const json &output : outputs) {
      if (!output.is_object())
        fail(op + ": each output must be an object with \"name\" and \"shape\"");
      OutputDecl out;
      out.name = stringField(output, "name", op + ": an output");
      const std::string where = op + ": output '" + out.name + "'";
      onlyKeys(output, where, {"name", "shape"});
      const json &shape = required(output, "shape", where);
      if (shape.is_string() && shape.get<std::string>() == "broadcast") {
        out.rule = OutputDecl::Rule::Broadcast;
      } else if (shape.is_object()) {
        onlyKeys(shape, where + "'s shape", {"same_as"});
        std::string input = stringField(shape, "same_as", where + "'s shape");
        auto it = std::find(decl.inputs.begin(), decl.inputs.end(), input);
        if (it == decl.inputs.end())
          fail(where + ": \"same_as\" names '" + input + "', which is not an input");
        out.rule = OutputDecl::Rule::SameAs;
        out.input = static_cast<int>(it - decl.inputs.begin());
      } else if (shape.is_array()) {
        out.rule = OutputDecl::Rule::Dims;
        out.dims = readDims(shape, where, decl.inputs, intAttrs);
      } else {
        fail(where + ": \"shape\" must be {\"same_as\": INPUT}, \"broadcast\" or a list of "
                     "dims (integers or expressions such as \"x[0]\" or \"x[2] * scale\")");
      }
      decl.outputs.push_back(std::move(out));
    }

    const json &variants = required(root, "variants", op);
    if (!variants.is_array())
      fail(op + ": \"variants\" must be an array (it may be empty: CPU tier only)");
    const std::filesystem::path folder = std::filesystem::path(path).parent_path();
    for (const json &variant : variants) {
      if (!variant.is_object())
        fail(op + ": each variant must be an object");
      VariantDecl v;
      v.kernel = stringField(variant, "kernel", op + ": a variant");
      const std::string where = op + ": variant '" + v.kernel + "'";
      onlyKeys(variant, where,
               {"tier", "type", "source", "kernel", "block", "elements_per_thread", "when"});
      if (variant.contains("when")) {
        const json &when = variant.at("when");
        if (!when.is_array())
          fail(where + ": \"when\" must list conditions such as \"a[3] % 16 == 0\"");
        for (const json &condition : when) {
          if (!condition.is_string())
            fail(where + ": each condition of \"when\" must be a string");
          std::string why;
          std::optional<DimExpr> expr =
              DimExpr::parse(condition.get<std::string>(), decl.inputs, intAttrs, why);
          if (!expr)
            fail(where + ": \"when\": " + why);
          v.when.push_back(std::move(*expr));
        }
      }
      if (!isIdentifier(v.kernel))
        fail(where + ": the kernel's name must be an identifier (extern \"C\")");
      std::string tier = stringField(variant, "tier", where);
      std::optional<engine::Tier> parsed = variantTier(tier);
      if (!parsed)
        fail(where + ": unknown tier '" + tier + "' (simt, tc, tc-sm80 or tc-sm90)");
      v.tier = *parsed;
      v.dtype = stringField(variant, "type", where);
      if (!decl.accepts(v.dtype))
        fail(where + ": type '" + v.dtype + "' is not among the op's \"types\"");
      v.sourceName = stringField(variant, "source", where);
      std::filesystem::path source(v.sourceName);
      if (source.is_relative())
        source = folder / source;
      std::error_code ec;
      if (!std::filesystem::is_regular_file(source, ec))
        fail(where + ": source '" + v.sourceName + "' not found (looked at " + source.string() + ")");
      v.source = source.string();
      v.block = positiveField(variant, "block", where, 256, 1024);
      v.elementsPerThread = positiveField(variant, "elements_per_thread", where, 1, 1u << 16);
      for (const VariantDecl &other : decl.variants)
        if (other.tier == v.tier && other.dtype == v.dtype)
          fail(where + ": a second " + tier + " variant for " + v.dtype);
      decl.variants.push_back(std::move(v));
    }
    for (const OutputDecl &output : decl.outputs)
      if (output.rule == OutputDecl::Rule::Dims && decl.layout == "any")
        fail(op + ": output '" + output.name + "' lists its dims, which name positions: "
                  "declare \"layout\": \"NCHW\" or \"NHWC\" (\"any\" promises results "
                  "that permute with the operands)");
  } catch (const json::exception &e) {
    fail(op + ": " + e.what());
  } catch (const ManifestError &e) {
    // Messages above already name the op.
    throw;
  }
  // Best tier first, as every planner lists variants.
  std::stable_sort(decl.variants.begin(), decl.variants.end(),
                   [](const VariantDecl &a, const VariantDecl &b) { return a.tier > b.tier; });
  return decl;
}

} // namespace

std::optional<CustomOpDecl> loadManifest(const std::string &path, std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = path + ": cannot read the custom op manifest";
    return std::nullopt;
  }
  std::stringstream text;
  text << in.rdbuf();
  json root = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) {
    error = path + ": not valid JSON";
    // Say where: parse again for the exception's position.
    try {
      (void)json::parse(text.str());
    } catch (const json::parse_error &e) {
      error = path + ": not valid JSON: " + e.what();
    }
    return std::nullopt;
  }
  try {
    return readManifest(root, path);
  } catch (const ManifestError &e) {
    error = path + ": " + e.message;
    return std::nullopt;
  }
}

bool CustomOpRegistry::load(const std::string &path, std::string &error) {
  std::optional<CustomOpDecl> decl = loadManifest(path, error);
  if (!decl)
    return false;
  if (const CustomOpDecl *other = find(decl->domain, decl->opType)) {
    error = path + ": custom op " + decl->qualifiedName() + " is already declared by " +
            other->file;
    return false;
  }
  decls.push_back(std::move(*decl));
  return true;
}

const CustomOpDecl *CustomOpRegistry::find(const std::string &domain,
                                           const std::string &opType) const {
  for (const CustomOpDecl &decl : decls)
    if (decl.domain == domain && decl.opType == opType)
      return &decl;
  return nullptr;
}

} // namespace tessel::custom
