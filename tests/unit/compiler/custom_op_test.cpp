// Custom op manifests (codegen/custom/CustomOp.h): the shape expressions'
// arithmetic against values worked by hand, and the example's manifest read
// back field by field.
#include "CustomOp.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

using tessel::custom::CustomOpDecl;
using tessel::custom::DimExpr;
using tessel::custom::OutputDecl;

namespace {

std::optional<int64_t> eval(const std::string &text, std::string &error,
                            const std::vector<std::vector<int64_t>> &shapes = {{2, 3, 5}, {7}},
                            const std::map<std::string, int64_t> &attrs = {{"k", 4}}) {
  std::optional<DimExpr> expr = DimExpr::parse(text, {"x", "y"}, {"k"}, error);
  if (!expr)
    return std::nullopt;
  return expr->evaluate(shapes, attrs, error);
}

int64_t value(const std::string &text) {
  std::string error;
  std::optional<int64_t> v = eval(text, error);
  EXPECT_TRUE(v.has_value()) << text << ": " << error;
  return v.value_or(-12345);
}

std::string failure(const std::string &text) {
  std::string error;
  std::optional<int64_t> v = eval(text, error);
  EXPECT_FALSE(v.has_value()) << text;
  return error;
}

} // namespace

TEST(CustomOpDimExpr, EvaluatesDimsAttributesAndArithmetic) {
  EXPECT_EQ(value("x[0]"), 2);
  EXPECT_EQ(value("x[-1]"), 5);
  EXPECT_EQ(value("y[0] * k"), 28);
  EXPECT_EQ(value("x[1] + x[2] * 2"), 13);   // * before +
  EXPECT_EQ(value("(x[1] + x[2]) * 2"), 16);
  EXPECT_EQ(value("x[2] - x[1] - 1"), 1);    // left to right
  EXPECT_EQ(value("y[0] / 2"), 3);
  EXPECT_EQ(value("-y[0] / 2"), -4);         // floor division
  EXPECT_EQ(value("-y[0] % 3"), 2);          // the remainder of floor division
  EXPECT_EQ(value(" 17 "), 17);
  EXPECT_EQ(value("x[2] % 5 == 0"), 1);      // comparisons: 1 or 0, below arithmetic
  EXPECT_EQ(value("x[0] * x[1] != 6"), 0);
  EXPECT_EQ(value("y[0] <= k * 2"), 1);
  EXPECT_EQ(value("y[0] < 7"), 0);
  EXPECT_EQ(value("y[0] >= 7"), 1);
  EXPECT_EQ(value("x[1] > x[2]"), 0);
}

TEST(CustomOpDimExpr, RefusesWhatItCannotMean) {
  std::string error;
  EXPECT_FALSE(DimExpr::parse("z[0]", {"x"}, {}, error));
  EXPECT_EQ(error, "in 'z[0]' at column 1: 'z' is not an input");
  EXPECT_FALSE(DimExpr::parse("x[0] +", {"x"}, {}, error));
  EXPECT_EQ(error, "in 'x[0] +' at column 7: unexpected end");
  EXPECT_FALSE(DimExpr::parse("x[0] ) ", {"x"}, {}, error));
  EXPECT_EQ(error, "in 'x[0] ) ' at column 6: unexpected ')'");
  EXPECT_FALSE(DimExpr::parse("99999999999999999999", {"x"}, {}, error));
  EXPECT_EQ(error, "in '99999999999999999999' at column 19: integer too large");

  EXPECT_EQ(failure("x[3]"), "dim 3 of input 0 is out of range for its rank 3");
  EXPECT_EQ(failure("x[0] / (k - 4)"), "division by zero");
  EXPECT_EQ(failure("1000000000000 * 1000000000000"), "integer overflow");
}

TEST(CustomOpManifest, ReadsTheExample) {
  std::string error;
  std::optional<CustomOpDecl> decl =
      tessel::custom::loadManifest(TESSEL_SOURCE_DIR "/examples/custom_op/gated_mix.json", error);
  ASSERT_TRUE(decl) << error;
  EXPECT_EQ(decl->qualifiedName(), "com.example.GatedMix");
  EXPECT_EQ(decl->inputs, (std::vector<std::string>{"a", "b", "w"}));
  EXPECT_EQ(decl->sameShapeAs, (std::vector<int>{-1, 0, -1}));
  ASSERT_EQ(decl->inputDims.size(), 3u);
  ASSERT_EQ(decl->inputDims[2].size(), 2u);
  EXPECT_EQ(decl->inputDims[2][1].text(), "a[3]");
  ASSERT_EQ(decl->outputs.size(), 1u);
  EXPECT_EQ(decl->outputs[0].rule, OutputDecl::Rule::SameAs);
  EXPECT_EQ(decl->outputs[0].input, 0);
  EXPECT_EQ(decl->dtypes, (std::vector<std::string>{"f16", "f32"}));
  EXPECT_EQ(decl->layout, "NHWC");
  ASSERT_EQ(decl->numericAttributes().size(), 1u);
  EXPECT_EQ(decl->numericAttributes()[0]->name, "beta");
  // Best tier first.
  ASSERT_EQ(decl->variants.size(), 3u);
  EXPECT_EQ(decl->variants[0].kernel, "gated_mix_tc");
  ASSERT_EQ(decl->variants[0].when.size(), 3u);
  EXPECT_EQ(decl->variants[0].when[0].text(), "a[3] % 16 == 0");
  EXPECT_TRUE(decl->variants[1].when.empty());
  EXPECT_EQ(decl->variants[0].tier, tessel::engine::Tier::tc_sm70);
  EXPECT_EQ(decl->variants[0].elementsPerThread, 8u);
  EXPECT_EQ(decl->variants[1].kernel, "gated_mix_f16");
  EXPECT_EQ(decl->variants[2].kernel, "gated_mix_f32");
  EXPECT_EQ(decl->variants[2].block, 256u);
}
