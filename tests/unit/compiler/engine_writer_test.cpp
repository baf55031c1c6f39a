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
#include "tessel/engine_format.h"
#include "tessel_runtime.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>
#include <zstd.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>

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

  /// One engine with a plan per module (batch profiles).
  std::vector<uint8_t> compileProfiles(const std::vector<std::string> &sources) {
    std::vector<mlir::OwningOpRef<mlir::ModuleOp>> owned;
    std::vector<mlir::ModuleOp> modules;
    for (const std::string &source : sources) {
      owned.push_back(mlir::parseSourceString<mlir::ModuleOp>(source, &context));
      EXPECT_TRUE(owned.back());
      if (!owned.back())
        return {};
      modules.push_back(*owned.back());
    }
    tessel::CompileOptions options;
    auto bytes = tessel::writeEngine(modules, options);
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

// Where the planner put each tensor: name -> arena offset (-1 elsewhere).
std::map<std::string, int64_t> arenaOffsets(const std::vector<uint8_t> &bytes) {
  tessel::format::Header header;
  std::memcpy(&header, bytes.data(), sizeof(header));
  const tessel::engine::Engine *engine =
      tessel::engine::GetEngine(bytes.data() + header.payload_offset);
  std::map<std::string, int64_t> offsets;
  for (const tessel::engine::Tensor *t : *engine->tensors())
    offsets[t->name()->str()] =
        t->storage() == tessel::engine::Storage::Arena ? int64_t(t->offset()) : -1;
  return offsets;
}

// Runs a one-input, one-output f32 engine on `x`.
std::vector<float> run(const std::vector<uint8_t> &bytes, const std::vector<float> &x,
                       size_t outputs) {
  Engine e(bytes);
  std::vector<float> y(outputs);
  EXPECT_NE(e.context, nullptr);
  if (!e.context)
    return y;
  EXPECT_EQ(tessel_context_bind_input(e.context, 0, x.data(), x.size() * 4), nullptr);
  EXPECT_EQ(tessel_context_bind_output(e.context, 0, y.data(), y.size() * 4), nullptr);
  EXPECT_EQ(tessel_context_run(e.context), nullptr);
  return y;
}

// Each step below may take its operand's buffer: relu overwrites the exp it
// is the last reader of, the reshapes alias (a chain: a reshape of a
// reshape), the add overwrites its full-size operand (not the broadcast
// constant), the cast between i32 and f32 (one width) overwrites its
// operand. The whole chain lives in one buffer.
TEST_F(EngineWriterTest, InPlaceWhereLegal) {
  std::vector<uint8_t> bytes = compile(R"mlir(
func.func @main(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %k = tessel.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>
  %a = tessel.exp %x : tensor<2x8xf32> loc("a")
  %b = tessel.relu %a : tensor<2x8xf32> loc("b")
  %r = tessel.reshape %b : (tensor<2x8xf32>) -> tensor<16xf32> loc("r")
  %r2 = tessel.reshape %r : (tensor<16xf32>) -> tensor<2x8xf32> loc("r2")
  %c = tessel.add %k, %r2 : (tensor<8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32> loc("c")
  %i = tessel.cast %c : tensor<2x8xf32> -> tensor<2x8xi32> loc("i")
  %f = tessel.cast %i : tensor<2x8xi32> -> tensor<2x8xf32> loc("f")
  %y = tessel.neg %f : tensor<2x8xf32> loc("y")
  return %y : tensor<2x8xf32>
}
)mlir");
  ASSERT_FALSE(bytes.empty());
  std::map<std::string, int64_t> offsets = arenaOffsets(bytes);
  for (const char *name : {"b:0", "r:0", "r2:0", "c:0", "i:0", "f:0"}) {
    EXPECT_GE(offsets[name], 0) << name;
    EXPECT_EQ(offsets[name], offsets["a:0"]) << name;
  }
  std::vector<float> x(16);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = -2.0f + 0.3f * float(i);
  std::vector<float> y = run(bytes, x, 16);
  for (size_t i = 0; i < x.size(); ++i) {
    double c = std::exp(double(x[i])) + double(i % 8 + 1);
    EXPECT_EQ(y[i], -float(int32_t(float(c)))) << "element " << i;
  }
}

// Where sharing would be wrong, each tensor keeps its own buffer: an
// operand read again later (the relu's, although the reshape of it is a pure
// alias that may share), a cast to a narrower type, a transpose (it reads
// other elements after writing), a broadcast operand (smaller than the
// result) and where.
TEST_F(EngineWriterTest, NoInPlaceWhereIllegal) {
  std::vector<uint8_t> bytes = compile(R"mlir(
func.func @main(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %a = tessel.exp %x : tensor<4x4xf32> loc("a")
  %v = tessel.reshape %a : (tensor<4x4xf32>) -> tensor<16xf32> loc("v")
  %b = tessel.relu %a : tensor<4x4xf32> loc("b")
  %s = tessel.add %b, %a : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc("s")
  %h = tessel.cast %s : tensor<4x4xf32> -> tensor<4x4xf16> loc("h")
  %w = tessel.cast %h : tensor<4x4xf16> -> tensor<4x4xf32> loc("w")
  %t = tessel.transpose %w {perm = array<i64: 1, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32> loc("t")
  %row = tessel.reduce_sum %t {axes = array<i64: 0>, keepdims = true} : (tensor<4x4xf32>) -> tensor<1x4xf32> loc("row")
  %m = tessel.mul %row, %t : (tensor<1x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc("m")
  %vm = tessel.reshape %v : (tensor<16xf32>) -> tensor<4x4xf32> loc("vm")
  %p = tessel.greater %vm, %m : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xi1> loc("p")
  %wh = tessel.where %p, %m, %vm : (tensor<4x4xi1>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc("wh")
  %y = tessel.neg %wh : tensor<4x4xf32> loc("y")
  return %y : tensor<4x4xf32>
}
)mlir");
  ASSERT_FALSE(bytes.empty());
  std::map<std::string, int64_t> offsets = arenaOffsets(bytes);
  EXPECT_EQ(offsets["v:0"], offsets["a:0"]);  // a pure alias shares...
  EXPECT_NE(offsets["b:0"], offsets["a:0"]);  // ...an overwrite does not: a is read later
  EXPECT_NE(offsets["h:0"], offsets["s:0"]);  // f32 -> f16: half the bytes
  EXPECT_NE(offsets["t:0"], offsets["w:0"]);  // transpose
  EXPECT_NE(offsets["m:0"], offsets["row:0"]); // the broadcast operand
  EXPECT_NE(offsets["wh:0"], offsets["m:0"]);   // where, on either value operand
  EXPECT_NE(offsets["wh:0"], offsets["vm:0"]);
  std::vector<float> x(16);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = -1.5f + 0.2f * float(i);
  std::vector<float> y = run(bytes, x, 16);
  // The same graph in float64, rounding where the engine stores f16.
  double a[4][4], t[4][4], row[4];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      a[i][j] = float(std::exp(double(x[i * 4 + j])));
      double s = float(std::max(a[i][j], 0.0) + a[i][j]);
      t[j][i] = s; // the f16 round trip is checked by its own tolerance below
    }
  for (int j = 0; j < 4; ++j)
    row[j] = t[0][j] + t[1][j] + t[2][j] + t[3][j];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      double m = row[j] * t[i][j];
      double expected = -(a[i][j] > m ? m : a[i][j]);
      EXPECT_NEAR(y[i * 4 + j], expected, 4e-3 * std::fabs(expected)) << i << "," << j;
    }
}

} // namespace

// y = relu(x * w + b) at batch B: the same constants at every batch.
std::string batchedAffine(int batch) {
  std::string t = "tensor<" + std::to_string(batch) + "x4xf32>";
  return R"mlir(
func.func @main(%x: )mlir" + t + R"mlir( {tessel.name = "x"}) -> ()mlir" + t +
         R"mlir( {tessel.name = "y"}) {
  %w = tessel.constant dense<[0.5, -1.0, 2.0, 3.0]> : tensor<4xf32> loc("w")
  %b = tessel.constant dense<[1.0, 2.0, -3.0, 0.25]> : tensor<4xf32> loc("b")
  %m = tessel.mul %x, %w : ()mlir" + t + R"mlir(, tensor<4xf32>) -> )mlir" + t +
         R"mlir( loc("mul(Mul)")
  %a = tessel.add %m, %b : ()mlir" + t + R"mlir(, tensor<4xf32>) -> )mlir" + t +
         R"mlir( loc("add(Add)")
  %y = tessel.relu %a : )mlir" + t + R"mlir( loc("relu(Relu)")
  return %y : )mlir" + t + R"mlir(
}
)mlir";
}

tessel::format::Header headerOf(const std::vector<uint8_t> &bytes) {
  tessel::format::Header header;
  std::memcpy(&header, bytes.data(), sizeof(header));
  return header;
}

// Batch profiles: one plan per batch over one copy of the constants and of
// each kernel module; each profile computes its batch; the profile is found
// by shape; the bytes are deterministic.
TEST_F(EngineWriterTest, ProfilesShareConstantsAndModules) {
  std::vector<uint8_t> single = compile(batchedAffine(1).c_str());
  std::vector<uint8_t> bytes = compileProfiles({batchedAffine(1), batchedAffine(3)});
  ASSERT_FALSE(single.empty());
  ASSERT_FALSE(bytes.empty());
  EXPECT_EQ(bytes, compileProfiles({batchedAffine(1), batchedAffine(3)}));
  EXPECT_EQ(headerOf(bytes).constants_size, headerOf(single).constants_size);
  EXPECT_EQ(headerOf(single).constants_size, 256 + 4 * sizeof(float)); // two, 256-aligned

  const tessel::engine::Engine *root = tessel::format::payload(bytes.data());
  ASSERT_TRUE(root->profiles());
  ASSERT_EQ(root->profiles()->size(), 1u);
  EXPECT_FALSE(root->profiles()->Get(0)->modules());
  // No module twice: the elementwise kernels do not depend on the batch.
  const tessel::engine::Engine *singleRoot = tessel::format::payload(single.data());
  ASSERT_TRUE(root->modules() && singleRoot->modules());
  EXPECT_EQ(root->modules()->size(), singleRoot->modules()->size());

  tessel_engine_t *engine = nullptr;
  ASSERT_EQ(tessel_engine_open_memory(bytes.data(), bytes.size(), &engine), nullptr);
  EXPECT_EQ(tessel_engine_profile_count(engine), 2u);
  EXPECT_EQ(tessel_engine_profile_index(engine), 0u);
  const float w[4] = {0.5f, -1.0f, 2.0f, 3.0f}, b[4] = {1.0f, 2.0f, -3.0f, 0.25f};
  for (int batch : {1, 3}) {
    int64_t shape[2] = {batch, 4};
    size_t index = 99;
    ASSERT_EQ(tessel_engine_find_profile(engine, 0, shape, 2, &index), nullptr);
    EXPECT_EQ(index, batch == 1 ? 0u : 1u);
    tessel_engine_t *profile = nullptr;
    ASSERT_EQ(tessel_engine_profile(engine, index, &profile), nullptr);
    EXPECT_EQ(tessel_engine_profile_index(profile), index);
    EXPECT_EQ(tessel_engine_profile_count(profile), 2u);
    tessel_tensor_info_t info;
    ASSERT_EQ(tessel_engine_input_info(profile, 0, &info), nullptr);
    ASSERT_EQ(info.rank, 2u);
    EXPECT_EQ(info.shape[0], batch);
    EXPECT_STREQ(info.name, "x");
    tessel_context_options_t options{TESSEL_TIER_CPU};
    tessel_context_t *context = nullptr;
    ASSERT_EQ(tessel_context_create(profile, &options, &context), nullptr);
    std::vector<float> x(batch * 4), y(batch * 4, -1.0f);
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = 0.25f * static_cast<float>(i) - 1.0f;
    ASSERT_EQ(tessel_context_bind_input(context, 0, x.data(), x.size() * sizeof(float)), nullptr);
    ASSERT_EQ(tessel_context_bind_output(context, 0, y.data(), y.size() * sizeof(float)),
              nullptr);
    ASSERT_EQ(tessel_context_run(context), nullptr);
    for (size_t i = 0; i < y.size(); ++i) {
      double expected = std::max(0.0, double(x[i]) * w[i % 4] + b[i % 4]);
      EXPECT_NEAR(y[i], expected, 1e-6 * (1 + expected)) << "batch " << batch << " element " << i;
    }
    tessel_context_release(context);
    tessel_engine_release(profile);
  }
  // A shape no profile has, and a profile beyond the count.
  int64_t other[2] = {2, 4};
  size_t index = 0;
  tessel_status_t status = tessel_engine_find_profile(engine, 0, other, 2, &index);
  EXPECT_EQ(tessel_status_code(status), TESSEL_INVALID_ARGUMENT);
  EXPECT_STREQ(tessel_status_message(status),
               "no profile has input 'x' of shape [2,4] (the profiles': [1,4], [3,4])");
  tessel_status_free(status);
  tessel_engine_t *none = nullptr;
  status = tessel_engine_profile(engine, 2, &none);
  EXPECT_EQ(tessel_status_code(status), TESSEL_INVALID_ARGUMENT);
  EXPECT_EQ(none, nullptr);
  tessel_status_free(status);
  tessel_engine_release(engine);
}

// Profiles whose inputs differ in name make a malformed engine: an
// application binds every profile's inputs the same way.
TEST_F(EngineWriterTest, ProfilesWithOtherInputsAreRejected) {
  std::string renamed = batchedAffine(3);
  renamed.replace(renamed.find("tessel.name = \"x\""), 17, "tessel.name = \"z\"");
  std::vector<uint8_t> mismatched = compileProfiles({batchedAffine(1), renamed});
  ASSERT_FALSE(mismatched.empty());
  tessel_engine_t *engine = nullptr;
  tessel_status_t status =
      tessel_engine_open_memory(mismatched.data(), mismatched.size(), &engine);
  EXPECT_EQ(tessel_status_code(status), TESSEL_INVALID_ENGINE);
  EXPECT_NE(std::string(tessel_status_message(status))
                .find("profile 0: its graph inputs or outputs differ from profile 1's"),
            std::string::npos)
      << tessel_status_message(status);
  tessel_status_free(status);
  EXPECT_EQ(engine, nullptr);
}

// Kernel images are stored as zstd frames that decode to their declared
// size: a cubin to an ELF file, PTX to NUL-terminated text with its header.
// Compressed, the engine's modules take several times fewer bytes.
TEST_F(EngineWriterTest, KernelImagesAreCompressed) {
  std::vector<uint8_t> bytes = compile(batchedAffine(4).c_str());
  ASSERT_FALSE(bytes.empty());
  const tessel::engine::Engine *root = tessel::format::payload(bytes.data());
  ASSERT_TRUE(root->modules() && root->modules()->size() > 0);
  uint64_t stored = 0, decodedTotal = 0;
  int cubins = 0, ptx = 0;
  for (const tessel::engine::KernelModule *module : *root->modules())
    for (const tessel::engine::KernelImage *image : *module->images()) {
      ASSERT_EQ(image->compression(), tessel::engine::Compression::Zstd);
      std::vector<uint8_t> decoded(image->size());
      size_t written = ZSTD_decompress(decoded.data(), decoded.size(), image->data()->data(),
                                       image->data()->size());
      ASSERT_FALSE(ZSTD_isError(written));
      ASSERT_EQ(written, image->size());
      stored += image->data()->size();
      decodedTotal += written;
      if (image->format() == tessel::engine::ImageFormat::Cubin) {
        ++cubins;
        EXPECT_EQ(std::string(decoded.begin(), decoded.begin() + 4), "\x7f" "ELF");
      } else {
        ++ptx;
        EXPECT_EQ(decoded.back(), 0);
        std::string text(decoded.begin(), decoded.end() - 1);
        EXPECT_NE(text.find(".version"), std::string::npos);
        EXPECT_NE(text.find(".target sm_"), std::string::npos);
      }
    }
  EXPECT_GT(cubins, 0);
  EXPECT_GT(ptx, 0);
  EXPECT_LT(stored * 3, decodedTotal) << stored << " stored, " << decodedTotal << " decoded";
}
