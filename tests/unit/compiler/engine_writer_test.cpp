//===- engine_writer_test.cpp - graph IR -> engine -> runtime round trip --===//
//
// Writes engines from small hand-written modules, opens them with the runtime's
// C API and checks the IO signature, the arena plan, determinism and the
// computed values against references computed here.
//
//===----------------------------------------------------------------------===//
#include "EngineWriter.h"
#include "Pipeline.h"
#include "TesselDialect.h"
#include "engine_format.h"
#include "tessel_runtime.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

namespace {

class EngineWriterTest : public ::testing::Test {
protected:
  EngineWriterTest() {
    context.loadDialect<tessel::TesselDialect, mlir::func::FuncDialect>();
  }

  std::vector<uint8_t> compile(const char *source) {
    mlir::OwningOpRef<mlir::ModuleOp> module =
        mlir::parseSourceString<mlir::ModuleOp>(source, &context);
    EXPECT_TRUE(module);
    if (!module)
      return {};
    tessel::CompileOptions options;
    auto bytes = tessel::writeEngine(*module, options);
    EXPECT_TRUE(mlir::succeeded(bytes));
    return mlir::succeeded(bytes) ? *bytes : std::vector<uint8_t>{};
  }

  mlir::MLIRContext context;
};

struct Engine {
  tessel_engine_t *engine = nullptr;
  tessel_context_t *context = nullptr;
  explicit Engine(const std::vector<uint8_t> &bytes) {
    tessel_status_t status = tessel_engine_open_memory(bytes.data(), bytes.size(), &engine);
    EXPECT_EQ(status, nullptr) << tessel_status_message(status);
    tessel_status_free(status);
    if (engine) {
      status = tessel_context_create(engine, nullptr, &context);
      EXPECT_EQ(status, nullptr) << tessel_status_message(status);
      tessel_status_free(status);
    }
  }
  ~Engine() {
    tessel_context_release(context);
    tessel_engine_release(engine);
  }
};

// y = relu(x + c) * x, with a constant c: three steps, two intermediates.
const char *kElementwise = R"mlir(
func.func @main(%x: tensor<2x3xf32> {tessel.name = "x"}) -> (tensor<2x3xf32> {tessel.name = "y"}) {
  %c = tessel.constant dense<[[0.5, -1.0, 2.0], [1.5, -0.25, 0.0]]> : tensor<2x3xf32> loc("c")
  %s = tessel.add %x, %c : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32> loc("add0(Add)")
  %r = tessel.relu %s : tensor<2x3xf32> loc("relu0(Relu)")
  %y = tessel.mul %r, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32> loc("mul0(Mul)")
  return %y : tensor<2x3xf32>
}
)mlir";

TEST_F(EngineWriterTest, RoundTripComputesTheGraph) {
  std::vector<uint8_t> bytes = compile(kElementwise);
  ASSERT_FALSE(bytes.empty());
  Engine e(bytes);
  ASSERT_NE(e.context, nullptr);

  ASSERT_EQ(tessel_engine_input_count(e.engine), 1u);
  ASSERT_EQ(tessel_engine_output_count(e.engine), 1u);
  tessel_tensor_info_t info;
  ASSERT_EQ(tessel_engine_input_info(e.engine, 0, &info), nullptr);
  EXPECT_STREQ(info.name, "x");
  EXPECT_EQ(info.dtype, TESSEL_DTYPE_F32);
  ASSERT_EQ(info.rank, 2u);
  EXPECT_EQ(info.shape[0], 2);
  EXPECT_EQ(info.shape[1], 3);
  ASSERT_EQ(tessel_engine_output_info(e.engine, 0, &info), nullptr);
  EXPECT_STREQ(info.name, "y");

  const float c[6] = {0.5f, -1.0f, 2.0f, 1.5f, -0.25f, 0.0f};
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-2, 2);
  float x[6], y[6];
  for (float &v : x)
    v = dist(rng);
  ASSERT_EQ(tessel_context_bind_input(e.context, 0, x, sizeof(x)), nullptr);
  ASSERT_EQ(tessel_context_bind_output(e.context, 0, y, sizeof(y)), nullptr);
  ASSERT_EQ(tessel_context_run(e.context), nullptr);
  for (int i = 0; i < 6; ++i) {
    double expected = std::max(0.0, double(x[i]) + c[i]) * x[i];
    EXPECT_NEAR(y[i], expected, 1e-6 * (1 + std::fabs(expected))) << "element " << i;
  }
}

TEST_F(EngineWriterTest, SameModuleGivesIdenticalBytes) {
  std::vector<uint8_t> first = compile(kElementwise), second = compile(kElementwise);
  ASSERT_FALSE(first.empty());
  EXPECT_EQ(first, second);
}

TEST_F(EngineWriterTest, HeaderAndConstantsAreAligned) {
  std::vector<uint8_t> bytes = compile(kElementwise);
  ASSERT_GE(bytes.size(), tessel::format::kHeaderSize);
  tessel::format::Header header;
  std::memcpy(&header, bytes.data(), sizeof(header));
  EXPECT_EQ(std::memcmp(header.magic, tessel::format::kMagic, 8), 0);
  EXPECT_EQ(header.format_version, tessel::format::kFormatVersion);
  EXPECT_EQ(header.constants_offset % tessel::format::kConstantAlignment, 0u);
  EXPECT_EQ(header.constants_size, 6 * sizeof(float));
  EXPECT_EQ(header.constants_offset + header.constants_size, bytes.size());
  EXPECT_EQ(header.checksum,
            tessel::format::checksum(bytes.data() + tessel::format::kHeaderSize,
                                     bytes.size() - tessel::format::kHeaderSize));
}

// Outputs that are an input or a constant, or returned twice, get copy steps.
TEST_F(EngineWriterTest, PassThroughAndDuplicateOutputsAreCopied) {
  std::vector<uint8_t> bytes = compile(R"mlir(
func.func @main(%x: tensor<4xf32> {tessel.name = "x"}) -> (tensor<4xf32> {tessel.name = "a"}, tensor<4xf32> {tessel.name = "b"}, tensor<4xf32> {tessel.name = "c"}, tensor<4xf32> {tessel.name = "d"}) {
  %k = tessel.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %n = tessel.neg %x : tensor<4xf32>
  return %x, %k, %n, %n : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
)mlir");
  Engine e(bytes);
  ASSERT_NE(e.context, nullptr);
  float x[4] = {1, -2, 3, -4}, out[4][4];
  ASSERT_EQ(tessel_context_bind_input(e.context, 0, x, sizeof(x)), nullptr);
  for (int i = 0; i < 4; ++i)
    ASSERT_EQ(tessel_context_bind_output(e.context, i, out[i], sizeof(out[i])), nullptr);
  ASSERT_EQ(tessel_context_run(e.context), nullptr);
  for (int j = 0; j < 4; ++j) {
    EXPECT_EQ(out[0][j], x[j]);
    EXPECT_EQ(out[1][j], float(j + 1));
    EXPECT_EQ(out[2][j], -x[j]);
    EXPECT_EQ(out[3][j], -x[j]);
  }
}

} // namespace
