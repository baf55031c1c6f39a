//===- importer_test.cpp - ONNX import into the tessel graph dialect ------===//
//
// Imports ONNX node-test models from the conformance suite and small models
// built here with ONNX's protobuf classes, and checks the ops, normalized
// attributes, locations, result types and the diagnostics of bad or
// unsupported models.
//
//===----------------------------------------------------------------------===//
// The models built here use ONNX's protobuf classes with the definitions that
// ONNX's CMake targets give their users (TesselCompiler links them).
#ifndef ONNX_ML
#define ONNX_ML 1
#endif
#ifndef ONNX_NAMESPACE
#define ONNX_NAMESPACE onnx
#endif
#include "onnx/onnx_pb.h"

#include "Importer.h"
#include "TesselDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>

namespace {

using namespace mlir;

/// The ONNX node tests: $TESSEL_CONFORMANCE_DIR, else the suite the build was
/// configured with (CMake's TESSEL_CONFORMANCE_DIR, ../shared/conformance/
/// onnx-node beside the repository by default).
std::string conformanceDir() {
  if (const char *dir = std::getenv("TESSEL_CONFORMANCE_DIR"))
    return dir;
  return TESSEL_CONFORMANCE_SUITE;
}

std::string conformanceModel(const std::string &test) {
  return conformanceDir() + "/" + test + "/model.onnx";
}

#define REQUIRE_CONFORMANCE()                                                  \
  if (!llvm::sys::fs::is_directory(conformanceDir()))                          \
  GTEST_SKIP() << "no ONNX conformance suite at " << conformanceDir()

std::string locName(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  return "<not a NameLoc>";
}

std::string typeText(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << type;
  return os.str();
}

std::vector<int64_t> vec(llvm::ArrayRef<int64_t> values) {
  return std::vector<int64_t>(values.begin(), values.end());
}

//===----------------------------------------------------------------------===//
// Building small models
//===----------------------------------------------------------------------===//

struct ModelBuilder {
  onnx::ModelProto model;
  onnx::GraphProto &graph = *model.mutable_graph();

  explicit ModelBuilder(int64_t opset = 13) {
    model.set_ir_version(8);
    model.set_producer_name("importer_test");
    auto *import = model.add_opset_import();
    import->set_domain("");
    import->set_version(opset);
    graph.set_name("g");
  }

  static void setType(onnx::ValueInfoProto *info, int32_t elemType,
                      const std::vector<int64_t> &dims) {
    auto *tensor = info->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(elemType);
    auto *shape = tensor->mutable_shape();
    for (int64_t d : dims) {
      auto *dim = shape->add_dim();
      if (d >= 0)
        dim->set_dim_value(d);
      else
        dim->set_dim_param("N");
    }
  }
  void input(const std::string &name, const std::vector<int64_t> &dims,
             int32_t elemType = onnx::TensorProto::FLOAT) {
    auto *info = graph.add_input();
    info->set_name(name);
    setType(info, elemType, dims);
  }
  /// Dims of -1 are symbolic, as they are in exported models.
  void output(const std::string &name, const std::vector<int64_t> &dims,
              int32_t elemType = onnx::TensorProto::FLOAT) {
    auto *info = graph.add_output();
    info->set_name(name);
    setType(info, elemType, dims);
  }
  onnx::NodeProto *node(const std::string &opType,
                        const std::vector<std::string> &inputs,
                        const std::vector<std::string> &outputs,
                        const std::string &name = "") {
    auto *n = graph.add_node();
    n->set_op_type(opType);
    n->set_name(name);
    for (const auto &in : inputs)
      n->add_input(in);
    for (const auto &out : outputs)
      n->add_output(out);
    return n;
  }
  static void intAttr(onnx::NodeProto *n, const std::string &name, int64_t v) {
    auto *a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void intsAttr(onnx::NodeProto *n, const std::string &name,
                       const std::vector<int64_t> &v) {
    auto *a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v)
      a->add_ints(x);
  }
  onnx::TensorProto *initializer(const std::string &name,
                                 const std::vector<int64_t> &dims,
                                 const std::vector<float> &values) {
    auto *t = graph.add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims)
      t->add_dims(d);
    for (float v : values)
      t->add_float_data(v);
    return t;
  }

  /// Saves the model under a fresh temporary directory; returns its path.
  std::string save(const std::string &testName) {
    llvm::SmallString<256> dir(::testing::TempDir());
    llvm::sys::path::append(dir, "tessel_importer_test", testName);
    llvm::sys::fs::create_directories(dir);
    std::string path = std::string(dir) + "/model.onnx";
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    model.SerializeToOstream(&file);
    return path;
  }
};

//===----------------------------------------------------------------------===//
// The fixture: a context whose diagnostics are collected as "loc: message"
//===----------------------------------------------------------------------===//

class ImporterTest : public ::testing::Test {
protected:
  ImporterTest()
      : handler(&context, [this](Diagnostic &diag) {
          diagnostics.push_back(locName(diag.getLocation()) + ": " +
                                diag.str());
          return success();
        }) {}

  tessel::ImportResult import(const std::string &path,
                              const tessel::ImportOptions &options = {}) {
    diagnostics.clear();
    return tessel::importOnnxFile(context, path, options);
  }

  /// Imports and expects success; returns @main (null on failure).
  func::FuncOp importMain(const std::string &path,
                          const tessel::ImportOptions &options = {}) {
    result = import(path, options);
    EXPECT_TRUE(result.module) << allDiagnostics();
    EXPECT_EQ(result.failure, tessel::ImportFailure::None);
    if (!result.module)
      return nullptr;
    return result.module->lookupSymbol<func::FuncOp>("main");
  }

  std::string allDiagnostics() const {
    std::string text;
    for (const std::string &d : diagnostics)
      text += d + "\n";
    return text;
  }

  bool diagnosed(const std::string &needle) const {
    return llvm::any_of(diagnostics, [&](const std::string &d) {
      return d.find(needle) != std::string::npos;
    });
  }

  /// The ops of `func`'s body other than the return, in order.
  static std::vector<Operation *> bodyOps(func::FuncOp func) {
    std::vector<Operation *> ops;
    for (Operation &op : func.getBody().front().without_terminator())
      ops.push_back(&op);
    return ops;
  }

  MLIRContext context;
  ScopedDiagnosticHandler handler;
  std::vector<std::string> diagnostics;
  tessel::ImportResult result;
};

//===----------------------------------------------------------------------===//
// Conformance models
//===----------------------------------------------------------------------===//

TEST_F(ImporterTest, ConvWithStridesAndPadding) {
  REQUIRE_CONFORMANCE();
  func::FuncOp main =
      importMain(conformanceModel("test_conv_with_strides_padding"));
  ASSERT_TRUE(main);
  // Arguments and results carry the ONNX names.
  ASSERT_EQ(main.getNumArguments(), 2u);
  EXPECT_EQ(main.getArgAttrOfType<StringAttr>(0, "tessel.name").str(), "x");
  EXPECT_EQ(main.getArgAttrOfType<StringAttr>(1, "tessel.name").str(), "W");
  ASSERT_EQ(main.getNumResults(), 1u);
  EXPECT_EQ(main.getResultAttrOfType<StringAttr>(0, "tessel.name").str(), "y");
  EXPECT_EQ(
      typeText(main.getFunctionType()),
      "(tensor<1x1x7x5xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x4x3xf32>");

  std::vector<Operation *> ops = bodyOps(main);
  ASSERT_EQ(ops.size(), 1u);
  auto conv = dyn_cast<tessel::ConvOp>(ops[0]);
  ASSERT_TRUE(conv);
  EXPECT_EQ(vec(conv.getStrides()), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(vec(conv.getPads()), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(vec(conv.getDilations()), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(conv.getGroup(), 1u);
  EXPECT_FALSE(conv.getBias());
  // The node is unnamed: "<OpType>_<index>".
  EXPECT_EQ(locName(conv.getLoc()), "Conv_0(Conv)");
}

TEST_F(ImporterTest, ConvAutoPadSameLowerBecomesExplicitPads) {
  REQUIRE_CONFORMANCE();
  func::FuncOp main =
      importMain(conformanceModel("test_conv_with_autopad_same"));
  ASSERT_TRUE(main);
  auto conv = dyn_cast<tessel::ConvOp>(bodyOps(main).at(0));
  ASSERT_TRUE(conv);
  EXPECT_EQ(vec(conv.getPads()), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(typeText(conv.getType()), "tensor<1x1x3x3xf32>");
}

TEST_F(ImporterTest, GemmAllAttributes) {
  REQUIRE_CONFORMANCE();
  func::FuncOp main = importMain(conformanceModel("test_gemm_all_attributes"));
  ASSERT_TRUE(main);
  std::vector<Operation *> ops = bodyOps(main);
  ASSERT_EQ(ops.size(), 1u);
  auto gemm = dyn_cast<tessel::GemmOp>(ops[0]);
  ASSERT_TRUE(gemm);
  EXPECT_FLOAT_EQ(gemm.getAlpha().convertToFloat(), 0.25f);
  EXPECT_FLOAT_EQ(gemm.getBeta().convertToFloat(), 0.35f);
  EXPECT_TRUE(gemm.getTransA());
  EXPECT_TRUE(gemm.getTransB());
  EXPECT_TRUE(gemm.getC());
  EXPECT_EQ(typeText(gemm.getType()), "tensor<3x5xf32>");
  EXPECT_EQ(locName(gemm.getLoc()), "Gemm_0(Gemm)");
}

TEST_F(ImporterTest, AveragePoolCeilMode) {
  REQUIRE_CONFORMANCE();
  func::FuncOp main = importMain(conformanceModel("test_averagepool_2d_ceil"));
  ASSERT_TRUE(main);
  auto pool = dyn_cast<tessel::AvgPoolOp>(bodyOps(main).at(0));
  ASSERT_TRUE(pool);
  EXPECT_EQ(vec(pool.getKernelShape()), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(vec(pool.getStrides()), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(vec(pool.getPads()), (std::vector<int64_t>{0, 0, 0, 0}));
  EXPECT_FALSE(pool.getCountIncludePad());
  // 4x4 input, 3x3 window, stride 2: floor mode gives 1x1, ceil mode 2x2.
  EXPECT_EQ(typeText(pool.getType()), "tensor<1x1x2x2xf32>");
}

TEST_F(ImporterTest, ReshapeWithFrozenShapeInput) {
  REQUIRE_CONFORMANCE();
  tessel::ImportOptions options;
  options.frozenInputs = {
      {"shape", conformanceDir() +
                    "/test_reshape_negative_dim/test_data_set_0/input_1.pb"}};
  func::FuncOp main =
      importMain(conformanceModel("test_reshape_negative_dim"), options);
  ASSERT_TRUE(main);
  // The frozen input is no longer an argument; -1 is resolved.
  ASSERT_EQ(main.getNumArguments(), 1u);
  EXPECT_EQ(main.getArgAttrOfType<StringAttr>(0, "tessel.name").str(), "data");
  std::vector<Operation *> ops = bodyOps(main);
  ASSERT_EQ(ops.size(), 1u);
  auto reshape = dyn_cast<tessel::ReshapeOp>(ops[0]);
  ASSERT_TRUE(reshape);
  EXPECT_EQ(typeText(reshape.getType()), "tensor<2x6x2xf32>");
}

TEST_F(ImporterTest, ReshapeTakesTheDeclaredOutputShapeWhenNotFrozen) {
  REQUIRE_CONFORMANCE();
  // The model declares the output 2x6x2, so the reshape is static even though
  // its shape operand stays a (now unused) graph input.
  func::FuncOp main = importMain(conformanceModel("test_reshape_negative_dim"));
  ASSERT_TRUE(main);
  EXPECT_EQ(main.getNumArguments(), 2u);
  EXPECT_EQ(typeText(main.getFunctionType().getResult(0)), "tensor<2x6x2xf32>");
}

TEST_F(ImporterTest, ReshapeWithUnknownShapeInputIsUnsupported) {
  ModelBuilder m(13);
  m.input("x", {2, 3, 4});
  m.input("shape", {3}, onnx::TensorProto::INT64);
  m.output("y", {-1, -1, -1});
  m.node("Reshape", {"x", "shape"}, {"y"}, "r");
  result = import(m.save("reshape_dynamic"));
  EXPECT_FALSE(result.module);
  EXPECT_EQ(result.failure, tessel::ImportFailure::Unsupported);
  EXPECT_TRUE(
      diagnosed("r(Reshape): unsupported: Reshape node 'r': shape 'shape' "
                "is a graph input, not a compile-time constant (freeze it"))
      << allDiagnostics();
}

TEST_F(ImporterTest, SoftmaxOpset13KeepsTheAxis) {
  REQUIRE_CONFORMANCE();
  func::FuncOp main = importMain(conformanceModel("test_softmax_axis_0"));
  ASSERT_TRUE(main);
  std::vector<Operation *> ops = bodyOps(main);
  ASSERT_EQ(ops.size(), 1u);
  auto softmax = dyn_cast<tessel::SoftmaxOp>(ops[0]);
  ASSERT_TRUE(softmax);
  EXPECT_EQ(softmax.getAxis(), 0u);
}

TEST_F(ImporterTest, LstmIsUnsupportedAndNamed) {
  REQUIRE_CONFORMANCE();
  result = import(conformanceModel("test_lstm_defaults"));
  EXPECT_FALSE(result.module);
  EXPECT_EQ(result.failure, tessel::ImportFailure::Unsupported);
  ASSERT_EQ(diagnostics.size(), 1u) << allDiagnostics();
  EXPECT_EQ(diagnostics[0].rfind(
                "LSTM_0(LSTM): unsupported: LSTM node 'LSTM_0': ", 0),
            0u)
      << diagnostics[0];
}

//===----------------------------------------------------------------------===//
// Models built here
//===----------------------------------------------------------------------===//

TEST_F(ImporterTest, SoftmaxBeforeOpset13CoercesTo2D) {
  ModelBuilder m(/*opset=*/11);
  m.input("x", {2, 3, 4});
  m.output("y", {2, 3, 4});
  ModelBuilder::intAttr(m.node("Softmax", {"x"}, {"y"}, "sm"), "axis", 1);
  func::FuncOp main = importMain(m.save("softmax11"));
  ASSERT_TRUE(main);
  std::vector<Operation *> ops = bodyOps(main);
  ASSERT_EQ(ops.size(), 3u);
  auto flatten = dyn_cast<tessel::ReshapeOp>(ops[0]);
  auto softmax = dyn_cast<tessel::SoftmaxOp>(ops[1]);
  auto restore = dyn_cast<tessel::ReshapeOp>(ops[2]);
  ASSERT_TRUE(flatten && softmax && restore);
  EXPECT_EQ(typeText(flatten.getType()), "tensor<2x12xf32>");
  EXPECT_EQ(softmax.getAxis(), 1u);
  EXPECT_EQ(typeText(restore.getType()), "tensor<2x3x4xf32>");
  for (Operation *op : ops)
    EXPECT_EQ(locName(op->getLoc()), "sm(Softmax)");
}

TEST_F(ImporterTest, EveryUnsupportedNodeIsReported) {
  ModelBuilder m(13);
  m.input("x", {2, 3});
  m.output("y", {2, 3});
  m.output("z", {2, 3});
  m.node("GlobalLpPool", {"x"}, {"h"}, "first");
  m.node("Relu", {"h"}, {"y"}, "after_first"); // skipped: its input failed
  m.node("MeanVarianceNormalization", {"x"}, {"z"}, "second");
  result = import(m.save("two_unsupported"));
  EXPECT_FALSE(result.module);
  EXPECT_EQ(result.failure, tessel::ImportFailure::Unsupported);
  ASSERT_EQ(diagnostics.size(), 2u) << allDiagnostics();
  EXPECT_TRUE(diagnosed("first(GlobalLpPool): unsupported: GlobalLpPool node 'first'"))
      << allDiagnostics();
  EXPECT_TRUE(diagnosed("second(MeanVarianceNormalization): unsupported: "
                        "MeanVarianceNormalization node 'second'"))
      << allDiagnostics();
}

TEST_F(ImporterTest, InitializersBecomeConstantsThatRoundTrip) {
  ModelBuilder m(13);
  m.input("x", {2, 2});
  m.initializer("w", {2, 2}, {1.0f, 2.0f, 3.0f, 4.0f});
  m.output("y", {2, 2});
  m.node("Add", {"x", "w"}, {"y"}, "add");
  func::FuncOp main = importMain(m.save("initializer"));
  ASSERT_TRUE(main);
  ASSERT_EQ(main.getNumArguments(), 1u); // initializers are not arguments
  std::vector<Operation *> ops = bodyOps(main);
  ASSERT_EQ(ops.size(), 2u);
  auto constant = dyn_cast<tessel::ConstantOp>(ops[0]);
  ASSERT_TRUE(constant);
  EXPECT_EQ(locName(constant.getLoc()), "w(initializer)");
  auto values = cast<DenseElementsAttr>(constant.getValue()).getValues<float>();
  EXPECT_EQ(std::vector<float>(values.begin(), values.end()),
            (std::vector<float>{1, 2, 3, 4}));
  EXPECT_TRUE(isa<tessel::AddOp>(ops[1]));

  // The printed module parses back to the same constant.
  std::string text;
  llvm::raw_string_ostream os(text);
  result.module->print(os);
  OwningOpRef<ModuleOp> reparsed =
      parseSourceString<ModuleOp>(os.str(), &context);
  ASSERT_TRUE(reparsed) << text;
  tessel::ConstantOp again;
  reparsed->walk([&](tessel::ConstantOp op) { again = op; });
  ASSERT_TRUE(again);
  EXPECT_EQ(again.getValue(), constant.getValue());
}

TEST_F(ImporterTest, ExternalDataIsLoadedAndBoundsChecked) {
  ModelBuilder m(13);
  m.input("x", {4});
  m.output("y", {4});
  m.node("Mul", {"x", "w"}, {"y"}, "mul");
  onnx::TensorProto *w = m.initializer("w", {4}, {});
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto entry = [&](const char *key, const std::string &value) {
    auto *e = w->add_external_data();
    e->set_key(key);
    e->set_value(value);
  };
  entry("location", "weights.bin");
  entry("offset", "4");
  entry("length", "16");
  std::string path = m.save("external");
  llvm::SmallString<256> data(path);
  llvm::sys::path::remove_filename(data);
  llvm::sys::path::append(data, "weights.bin");
  {
    std::ofstream file(std::string(data), std::ios::binary | std::ios::trunc);
    float values[5] = {-1.0f, 0.5f, 1.5f, 2.5f, 3.5f}; // the first is skipped
    file.write(reinterpret_cast<const char *>(values), sizeof(values));
  }
  func::FuncOp main = importMain(path);
  ASSERT_TRUE(main);
  tessel::ConstantOp constant;
  main.walk([&](tessel::ConstantOp op) { constant = op; });
  ASSERT_TRUE(constant);
  auto values = cast<DenseElementsAttr>(constant.getValue()).getValues<float>();
  EXPECT_EQ(std::vector<float>(values.begin(), values.end()),
            (std::vector<float>{0.5f, 1.5f, 2.5f, 3.5f}));

  // 4 + 20 bytes is past the 20-byte file.
  w->mutable_external_data(2)->set_value("20");
  result = import(m.save("external"));
  EXPECT_FALSE(result.module);
  EXPECT_EQ(result.failure, tessel::ImportFailure::Invalid);
  EXPECT_TRUE(diagnosed("tensor 'w': external data [4, 24) is outside"))
      << allDiagnostics();

  // Nothing outside the model's directory is read.
  w->mutable_external_data(0)->set_value("../external/weights.bin");
  w->mutable_external_data(2)->set_value("16");
  result = import(m.save("external"));
  EXPECT_EQ(result.failure, tessel::ImportFailure::Invalid);
  EXPECT_TRUE(diagnosed("must be a relative path inside the model's directory"))
      << allDiagnostics();
}

TEST_F(ImporterTest, ShapeArithmeticIsEvaluatedAtImport) {
  // Flatten all but the batch dim through Shape -> Gather -> Unsqueeze ->
  // Concat -> Reshape, the way PyTorch exports x.view(x.size(0), -1).
  ModelBuilder m(13);
  m.input("x", {2, 3, 4});
  m.output("y", {-1, -1});
  auto *zero = m.graph.add_initializer();
  zero->set_name("zero");
  zero->set_data_type(onnx::TensorProto::INT64);
  zero->add_int64_data(0);
  auto *minusOne = m.graph.add_initializer();
  minusOne->set_name("minus_one");
  minusOne->set_data_type(onnx::TensorProto::INT64);
  minusOne->add_dims(1);
  minusOne->add_int64_data(-1);
  auto *axes = m.graph.add_initializer();
  axes->set_name("axes");
  axes->set_data_type(onnx::TensorProto::INT64);
  axes->add_dims(1);
  axes->add_int64_data(0);
  m.node("Shape", {"x"}, {"s"}, "shape");
  m.node("Gather", {"s", "zero"}, {"n"}, "gather");
  m.node("Unsqueeze", {"n", "axes"}, {"n1"}, "unsqueeze");
  ModelBuilder::intAttr(
      m.node("Concat", {"n1", "minus_one"}, {"target"}, "concat"), "axis", 0);
  m.node("Reshape", {"x", "target"}, {"y"}, "reshape");
  func::FuncOp main = importMain(m.save("shape_arithmetic"));
  ASSERT_TRUE(main);
  // Only the reshape is left: the shape subgraph was evaluated, and the
  // constants it used are gone.
  std::vector<Operation *> ops = bodyOps(main);
  ASSERT_EQ(ops.size(), 1u) << allDiagnostics();
  auto reshape = dyn_cast<tessel::ReshapeOp>(ops[0]);
  ASSERT_TRUE(reshape);
  EXPECT_EQ(typeText(reshape.getType()), "tensor<2x12xf32>");
  EXPECT_EQ(locName(reshape.getLoc()), "reshape(Reshape)");
}

TEST_F(ImporterTest, ShapeArithmeticHasTheRuntimeKernelsSemantics) {
  // The importer evaluates integer arithmetic on constants with the runtime's
  // CPU kernels (passes/ConstantEvaluator.h): an integer division by zero is
  // 0, as the kernel defines it at run time; an index out of range leaves the
  // gather for the runtime to report.
  ModelBuilder m(13);
  auto int64s = [&](const std::string &name, const std::vector<int64_t> &dims,
                    const std::vector<int64_t> &values) {
    auto *t = m.graph.add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    for (int64_t d : dims)
      t->add_dims(d);
    for (int64_t v : values)
      t->add_int64_data(v);
  };
  int64s("d", {3}, {10, -20, 30});
  int64s("zero", {}, {0});
  int64s("table", {2, 2}, {1, 2, 3, 4});
  int64s("index", {1}, {5});
  m.output("q", {3}, onnx::TensorProto::INT64);
  m.output("g", {1, 2}, onnx::TensorProto::INT64);
  m.node("Div", {"d", "zero"}, {"q"}, "div");
  m.node("Gather", {"table", "index"}, {"g"}, "gather");
  func::FuncOp main = importMain(m.save("kernel_semantics"));
  ASSERT_TRUE(main);
  auto results = main.getBody().front().getTerminator()->getOperands();
  ASSERT_EQ(results.size(), 2u);
  auto quotient = results[0].getDefiningOp<tessel::ConstantOp>();
  ASSERT_TRUE(quotient) << "the division was not evaluated";
  auto values = cast<DenseElementsAttr>(quotient.getValue());
  EXPECT_TRUE(values.isSplat() && values.getSplatValue<int64_t>() == 0);
  EXPECT_TRUE(results[1].getDefiningOp<tessel::GatherOp>());
}

TEST_F(ImporterTest, SliceIsNormalizedToFullRank) {
  ModelBuilder m(13);
  m.input("x", {5, 6, 7});
  m.output("y", {-1, -1, -1});
  auto ints = [&](const std::string &name, const std::vector<int64_t> &values) {
    auto *t = m.graph.add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(values.size());
    for (int64_t v : values)
      t->add_int64_data(v);
  };
  ints("starts", {-1, 100});
  ints("ends", {-1000, 1});
  ints("axes", {-1, 1});
  ints("steps", {-2, 1});
  m.node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"}, "slice");
  func::FuncOp main = importMain(m.save("slice"));
  ASSERT_TRUE(main);
  auto slice = dyn_cast<tessel::SliceOp>(bodyOps(main).at(0));
  ASSERT_TRUE(slice);
  // Axis 2: from 6 down to 0 by 2 (4 elements); axis 1: start clamped to 6,
  // past the end 1, so empty; axis 0 untouched.
  EXPECT_EQ(vec(slice.getStarts()), (std::vector<int64_t>{0, 0, 6}));
  EXPECT_EQ(vec(slice.getSteps()), (std::vector<int64_t>{1, 1, -2}));
  EXPECT_EQ(typeText(slice.getType()), "tensor<5x0x4xf32>");
}

TEST_F(ImporterTest, ReductionAxesAreSortedAndNonNegative) {
  ModelBuilder m(13);
  m.input("x", {2, 3, 4, 5});
  m.output("y", {-1, -1});
  auto *node = m.node("ReduceMean", {"x"}, {"y"}, "mean");
  ModelBuilder::intsAttr(node, "axes", {-1, 1});
  ModelBuilder::intAttr(node, "keepdims", 0);
  func::FuncOp main = importMain(m.save("reduce"));
  ASSERT_TRUE(main);
  auto reduce = dyn_cast<tessel::ReduceMeanOp>(bodyOps(main).at(0));
  ASSERT_TRUE(reduce);
  EXPECT_EQ(vec(reduce.getAxes()), (std::vector<int64_t>{1, 3}));
  EXPECT_FALSE(reduce.getKeepdims());
  EXPECT_EQ(typeText(reduce.getType()), "tensor<2x4xf32>");
}

TEST_F(ImporterTest, DynamicInputShapeIsInvalid) {
  ModelBuilder m(13);
  m.input("images", {-1, 3, 8, 8});
  m.output("y", {-1, 3, 8, 8});
  m.node("Relu", {"images"}, {"y"}, "relu");
  result = import(m.save("dynamic"));
  EXPECT_FALSE(result.module);
  EXPECT_EQ(result.failure, tessel::ImportFailure::Invalid);
  EXPECT_TRUE(diagnosed("graph input 'images' has a dynamic shape [N,3,8,8]"))
      << allDiagnostics();
}

/// y = reshape(x, [x.shape[0], -1]) for x [N,3,4]: the batch flows through a
/// shape computation, as in exported models.
std::string dynamicFlattenModel(ModelBuilder &m, const std::string &name) {
  m.input("x", {-1, 3, 4});
  m.output("y", {-1, -1});
  for (auto [tensor, values] : {std::pair{"zero", std::vector<int64_t>{}},
                                std::pair{"minus_one", std::vector<int64_t>{1}}}) {
    onnx::TensorProto *t = m.initializer(tensor, values, {});
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_int64_data(values.empty() ? 0 : -1);
  }
  m.node("Shape", {"x"}, {"shape"}, "shape");
  m.node("Gather", {"shape", "zero"}, {"batch"}, "gather");
  ModelBuilder::intsAttr(m.node("Unsqueeze", {"batch"}, {"batch1"}, "unsqueeze"), "axes", {0});
  ModelBuilder::intAttr(m.node("Concat", {"batch1", "minus_one"}, {"target"}, "concat"), "axis",
                        0);
  m.node("Reshape", {"x", "target"}, {"y"}, "reshape");
  return m.save(name);
}

TEST_F(ImporterTest, InputShapeFixesDynamicDims) {
  ModelBuilder m(11);
  tessel::ImportOptions options;
  options.inputShapes = {{"x", {5, 3, 4}}};
  func::FuncOp main = importMain(dynamicFlattenModel(m, "input_shape"), options);
  ASSERT_TRUE(main);
  EXPECT_EQ(typeText(main.getFunctionType()), "(tensor<5x3x4xf32>) -> tensor<5x12xf32>");
}

TEST_F(ImporterTest, BatchFixesTheFirstDynamicDim) {
  for (int64_t batch : {1, 7}) {
    ModelBuilder m(11);
    tessel::ImportOptions options;
    options.batch = batch;
    func::FuncOp main =
        importMain(dynamicFlattenModel(m, "batch" + std::to_string(batch)), options);
    ASSERT_TRUE(main);
    std::string b = std::to_string(batch);
    EXPECT_EQ(typeText(main.getFunctionType()),
              "(tensor<" + b + "x3x4xf32>) -> tensor<" + b + "x12xf32>");
  }
}

TEST_F(ImporterTest, DynamicInputNamesTheFlagsThatFixIt) {
  ModelBuilder m(11);
  result = import(dynamicFlattenModel(m, "dynamic_flags"));
  EXPECT_EQ(result.failure, tessel::ImportFailure::Invalid);
  EXPECT_TRUE(diagnosed("graph input 'x' has a dynamic shape [N,3,4] (fix its dims with "
                        "--input-shape x=1x3x4, or its first with --batch)"))
      << allDiagnostics();
}

TEST_F(ImporterTest, InputShapeThatDoesNotFitIsInvalid) {
  struct Case {
    std::vector<std::pair<std::string, std::vector<int64_t>>> shapes;
    int64_t batch;
    const char *message;
  } cases[] = {
      {{{"x", {5, 12}}}, 0, "--input-shape x=[5,12]: the input has rank 3 [N,3,4]"},
      {{{"x", {5, 3, 5}}}, 0, "--input-shape x=[5,3,5]: dim 2 of the input is static, 4 [N,3,4]"},
      {{{"images", {1}}}, 0, "--input-shape images: not a graph input (inputs: x [N,3,4])"},
      {{{"x", {2, 3, 4}}}, 4, "--batch: no graph input has a dynamic first dim (inputs: x [2,3,4])"},
  };
  for (const Case &c : cases) {
    ModelBuilder m(11);
    tessel::ImportOptions options;
    options.inputShapes = c.shapes;
    options.batch = c.batch;
    result = import(dynamicFlattenModel(m, "bad_shape"), options);
    EXPECT_FALSE(result.module);
    EXPECT_EQ(result.failure, tessel::ImportFailure::Invalid);
    EXPECT_TRUE(diagnosed(c.message)) << c.message << "\n" << allDiagnostics();
  }
}

TEST_F(ImporterTest, FreezingSomethingThatIsNotAnInputIsInvalid) {
  ModelBuilder m(13);
  m.input("x", {2});
  m.output("y", {2});
  m.node("Relu", {"x"}, {"y"}, "relu");
  tessel::ImportOptions options;
  options.frozenInputs = {{"nope", "/nonexistent.pb"}};
  result = import(m.save("freeze_missing"), options);
  EXPECT_EQ(result.failure, tessel::ImportFailure::Invalid);
  EXPECT_TRUE(
      diagnosed("cannot freeze 'nope': it is not a graph input (inputs: x)"))
      << allDiagnostics();
}

TEST_F(ImporterTest, NewerOpsetIsUnsupported) {
  ModelBuilder m(28);
  m.input("x", {2});
  m.output("y", {2});
  m.node("Relu", {"x"}, {"y"}, "relu");
  result = import(m.save("opset28"));
  EXPECT_EQ(result.failure, tessel::ImportFailure::Unsupported);
  EXPECT_TRUE(diagnosed("uses opset 28 of the default domain (re-export it with opset 7 to 27)"))
      << allDiagnostics();
}

TEST_F(ImporterTest, OpsetsBeyondTheOnnxLibraryImport) {
  // Opset 18 is newer than the ONNX library here (1.12); the model is
  // checked on its library view and the node imported as at opset 17.
  ModelBuilder m(18);
  m.input("x", {2});
  m.output("y", {2});
  m.node("Relu", {"x"}, {"y"}, "relu");
  result = import(m.save("opset18"));
  ASSERT_TRUE(result.module) << allDiagnostics();
  EXPECT_TRUE(diagnostics.empty()) << allDiagnostics();
}

TEST_F(ImporterTest, OldOpsetIsUpgradedWhereAnOpChanged) {
  // Relu-6 is still current at opset 7; Add-6 (with its own broadcast
  // attribute) is not: ONNX's version converter upgrades the model to opset
  // 7 (upgradeOldOpset), and both import.
  ModelBuilder m(6);
  m.input("x", {2});
  m.output("y", {2});
  m.output("z", {2});
  m.node("Relu", {"x"}, {"y"}, "relu");
  m.node("Add", {"x", "x"}, {"z"}, "add");
  result = import(m.save("opset6"));
  ASSERT_TRUE(result.module) << allDiagnostics();
  EXPECT_TRUE(diagnostics.empty()) << allDiagnostics();
  int adds = 0, relus = 0;
  result.module->walk([&](mlir::Operation *op) {
    adds += isa<tessel::AddOp>(op);
    relus += isa<tessel::ReluOp>(op);
  });
  EXPECT_EQ(adds, 1);
  EXPECT_EQ(relus, 1);
}

TEST_F(ImporterTest, CheckerFailureIsInvalid) {
  ModelBuilder m(13);
  m.input("x", {2});
  m.output("y", {2});
  m.node("Relu", {"undefined_value"}, {"y"}, "relu");
  result = import(m.save("checker"));
  EXPECT_FALSE(result.module);
  EXPECT_EQ(result.failure, tessel::ImportFailure::Invalid);
  EXPECT_TRUE(diagnosed("ONNX checker")) << allDiagnostics();
}

TEST_F(ImporterTest, OnnxInferenceCrashIsADiagnostic) {
  // ONNX 1.12's LayerNormalization shape inference writes the Mean output's
  // shape out of bounds for an axis outside the rank (SIGSEGV); it runs in a
  // child process.
  ModelBuilder m(17);
  m.input("x", {3, 4});
  m.input("scale", {3, 4});
  m.input("bias", {3, 4});
  for (const char *out : {"y", "mean", "inv_std_dev"})
    m.output(out, {-1, -1});
  ModelBuilder::intAttr(m.node("LayerNormalization", {"x", "scale", "bias"},
                               {"y", "mean", "inv_std_dev"}, "ln"),
                        "axis", -5);
  result = import(m.save("inference_crash"));
  EXPECT_FALSE(result.module);
  EXPECT_EQ(result.failure, tessel::ImportFailure::Invalid);
  EXPECT_TRUE(
      diagnosed("ONNX checker or shape inference crashed (")) // the signal's name
      << allDiagnostics();
}

TEST_F(ImporterTest, OnnxInferencePastItsLimitIsADiagnostic) {
  // ONNX's ConstantOfShape inference adds one dim per element of the shape
  // operand: declared 2^31 - 1 long (within tessel's extents), it would run
  // for minutes and take ~100 GB. The child process ends at the limit.
  ModelBuilder m(13);
  m.input("shape", {2147483647}, onnx::TensorProto::INT64);
  m.output("y", {2, 3});
  m.node("ConstantOfShape", {"shape"}, {"y"}, "fill");
  tessel::ImportOptions options;
  options.onnxLibrarySeconds = 1;
  auto start = std::chrono::steady_clock::now();
  result = import(m.save("inference_limit"), options);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_FALSE(result.module);
  EXPECT_EQ(result.failure, tessel::ImportFailure::Invalid);
  EXPECT_TRUE(diagnosed("ONNX checker or shape inference ran past its limit of 1 s on this "
                        "model: it is malformed"))
      << allDiagnostics();
  EXPECT_LT(seconds, 30.0);
}

TEST_F(ImporterTest, HugeAttributeValuesAreInvalid) {
  ModelBuilder m(13);
  m.input("x", {1, 1, 5, 5});
  m.input("w", {1, 1, 3, 3});
  m.output("y", {-1, -1, -1, -1});
  auto *conv = m.node("ConvTranspose", {"x", "w"}, {"y"}, "deconv");
  ModelBuilder::intsAttr(conv, "strides", {int64_t{1} << 62, 1});
  ModelBuilder::intsAttr(conv, "output_shape", {10, 10});
  result = import(m.save("huge_strides"));
  EXPECT_FALSE(result.module);
  EXPECT_EQ(result.failure, tessel::ImportFailure::Invalid);
  EXPECT_TRUE(
      diagnosed("deconv(ConvTranspose): ConvTranspose node 'deconv': strides "))
      << allDiagnostics();
}

TEST_F(ImporterTest, GarbageAndTruncatedFilesAreInvalid) {
  llvm::SmallString<256> dir(::testing::TempDir());
  llvm::sys::path::append(dir, "tessel_importer_test");
  llvm::sys::fs::create_directories(dir);
  std::string garbage = std::string(dir) + "/garbage.onnx";
  {
    std::ofstream file(garbage, std::ios::binary | std::ios::trunc);
    file << "\xff\xff\xff\xff this is not a protobuf \x01\x02";
  }
  result = import(garbage);
  EXPECT_FALSE(result.module);
  EXPECT_EQ(result.failure, tessel::ImportFailure::Invalid);
  EXPECT_TRUE(diagnosed("cannot parse ONNX model " + garbage))
      << allDiagnostics();

  // Every prefix of a real model fails cleanly (parse, checker or missing
  // graph), never crashes.
  ModelBuilder m(13);
  m.input("x", {2, 2});
  m.initializer("w", {2, 2}, {1, 2, 3, 4});
  m.output("y", {2, 2});
  m.node("MatMul", {"x", "w"}, {"y"}, "mm");
  std::string bytes;
  m.model.SerializeToString(&bytes);
  std::string truncated = std::string(dir) + "/truncated.onnx";
  for (size_t size = 0; size + 1 < bytes.size(); ++size) {
    {
      std::ofstream file(truncated, std::ios::binary | std::ios::trunc);
      file.write(bytes.data(), size);
    }
    result = import(truncated);
    EXPECT_FALSE(result.module) << "prefix of " << size << " bytes";
    EXPECT_NE(result.failure, tessel::ImportFailure::None);
    EXPECT_FALSE(diagnostics.empty()) << "prefix of " << size << " bytes";
  }

  result = import(std::string(dir) + "/does_not_exist.onnx");
  EXPECT_EQ(result.failure, tessel::ImportFailure::Invalid);
  EXPECT_TRUE(diagnosed("cannot open ONNX model")) << allDiagnostics();
}

TEST(SupportedOnnxOps, SortedUniqueAndComplete) {
  std::vector<std::string> ops = tessel::supportedOnnxOps();
  EXPECT_TRUE(std::is_sorted(ops.begin(), ops.end()));
  EXPECT_EQ(std::adjacent_find(ops.begin(), ops.end()), ops.end());
  for (const char *op : {"Conv", "ConvTranspose", "Gemm", "MatMul", "Softmax",
                         "Reshape", "Slice", "Constant", "Shape", "Mean"})
    EXPECT_TRUE(std::binary_search(ops.begin(), ops.end(), op)) << op;
  for (const char *op : {"BitShift", "LSTM", "RoiAlign"})
    EXPECT_FALSE(std::binary_search(ops.begin(), ops.end(), op)) << op;
}

} // namespace
