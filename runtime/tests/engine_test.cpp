//===- engine_test.cpp - opening, verifying and running engines -----------===//
//
// The internal C++ API: Engine (open + every verifier rejection) and Context
// (tiers, kernel resolution, binding, running). The C API has its own file.
//
//===----------------------------------------------------------------------===//
#include "engine.h"
#include "engine_builder.h"
#include "executor.h"
#include "gpu/driver.h"
#include "gpu_engines.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <new>
#include <unistd.h>

// Counts heap allocations while a test asks for it, to hold the executor to
// "tessel_context_run allocates nothing". Replacing the global operator new
// is the one way to see every allocation; outside the window it only forwards.
// AddressSanitizer brings its own operator new, so the check is off there.
#include "sanitizers.h"
#if !defined(TESSEL_ASAN)
#define TESSEL_COUNT_ALLOCATIONS 1
namespace {
std::atomic<bool> countingAllocations{false};
std::atomic<size_t> allocationCount{0};
} // namespace

void *operator new(size_t size) {
  if (countingAllocations.load(std::memory_order_relaxed))
    allocationCount.fetch_add(1, std::memory_order_relaxed);
  if (void *p = std::malloc(size ? size : 1))
    return p;
  throw std::bad_alloc();
}
void operator delete(void *p) noexcept { std::free(p); }
void operator delete(void *p, size_t) noexcept { std::free(p); }
#endif

namespace tessel::test {
namespace {

using rt::Context;
using rt::Engine;
using rt::Status;

Status open(const std::vector<uint8_t> &file, std::shared_ptr<const Engine> &engine) {
  return Engine::openMemory(file.data(), file.size(), engine);
}

// Opens `file` expecting failure with `code` and a message containing `text`.
void expectRejected(const std::vector<uint8_t> &file, tessel_status_code_t code,
                    const std::string &text) {
  std::shared_ptr<const Engine> engine;
  Status status = open(file, engine);
  EXPECT_EQ(status.code(), code) << status.message();
  EXPECT_NE(status.message().find(text), std::string::npos)
      << "message: " << status.message() << "\nexpected to contain: " << text;
  EXPECT_EQ(engine, nullptr);
}

void expectRejected(const EngineSpec &spec, const std::string &text) {
  expectRejected(buildEngine(spec), TESSEL_INVALID_ENGINE, text);
}

format::Header headerOf(const std::vector<uint8_t> &file) {
  format::Header h;
  std::memcpy(&h, file.data(), sizeof(h));
  return h;
}

void setHeader(std::vector<uint8_t> &file, const format::Header &h) {
  std::memcpy(file.data(), &h, sizeof(h));
}

std::shared_ptr<const Engine> openValid(const std::vector<uint8_t> &file) {
  std::shared_ptr<const Engine> engine;
  Status status = open(file, engine);
  EXPECT_TRUE(status.ok()) << status.message();
  return engine;
}

//===----------------------------------------------------------------------===//
// Round trip
//===----------------------------------------------------------------------===//

TEST(RuntimeEngine, OpensAndDescribesTheSampleEngine) {
  auto engine = openValid(buildEngine(sampleSpec()));
  ASSERT_TRUE(engine);
  EXPECT_EQ(engine->header().format_version, format::kFormatVersion);
  EXPECT_EQ(engine->header().payload_offset, format::kHeaderSize);
  EXPECT_EQ(engine->constantsSize(), 16u);
  EXPECT_EQ(engine->arenaSize(), 512u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(engine->constants()) % format::kConstantAlignment, 0u);
  EXPECT_STREQ(rt::fbString(engine->fb()->producer()), "engine_builder (test)");
  EXPECT_TRUE(engine->hasTier(fb::Tier::cpu));
  EXPECT_FALSE(engine->hasTier(fb::Tier::simt));
  ASSERT_EQ(engine->fb()->steps()->size(), 3u);
  EXPECT_EQ(rt::describeStep(2, engine->fb()->steps()->Get(2)), "step 2 'concat' at y(Concat)");

  ASSERT_EQ(engine->inputs().size(), 1u);
  const rt::TensorInfo &x = engine->inputs()[0];
  EXPECT_EQ(x.name, "x");
  EXPECT_EQ(x.dtype, cpu::DType::F32);
  EXPECT_EQ(x.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(x.sizeBytes, 24u);
  ASSERT_EQ(engine->outputs().size(), 1u);
  EXPECT_EQ(engine->outputs()[0].name, "y");
  EXPECT_EQ(engine->outputs()[0].sizeBytes, 40u);
}

TEST(RuntimeEngine, RunsTheSampleEngineRepeatedly) {
  auto engine = openValid(buildEngine(sampleSpec()));
  ASSERT_TRUE(engine);
  std::unique_ptr<Context> context;
  ASSERT_TRUE(Context::create(engine, TESSEL_TIER_AUTO, context).ok());
  EXPECT_STREQ(context->tier(), "cpu");

  std::vector<float> x = {1, 2, 3, 4, 5, 6}, y(10, -1);
  ASSERT_TRUE(context->bindInput(0, x.data(), 24).ok());
  ASSERT_TRUE(context->bindOutput(0, y.data(), 40).ok());
  ASSERT_TRUE(context->run().ok());
  EXPECT_EQ(y, sampleExpected(x));

  // Bindings persist; new input values flow through on the next run.
  x = {-1, -2, -3, -4, -5, -6};
  ASSERT_TRUE(context->run().ok());
  EXPECT_EQ(y, sampleExpected(x));
}

TEST(RuntimeEngine, ContextsShareOneEngineAndKeepItAlive) {
  std::unique_ptr<Context> first, second;
  {
    auto engine = openValid(buildEngine(sampleSpec()));
    ASSERT_TRUE(Context::create(engine, TESSEL_TIER_CPU, first).ok());
    ASSERT_TRUE(Context::create(engine, TESSEL_TIER_CPU, second).ok());
  } // the last outside reference to the engine goes away here
  std::vector<float> x1 = {1, 2, 3, 4, 5, 6}, x2 = {6, 5, 4, 3, 2, 1}, y1(10), y2(10);
  ASSERT_TRUE(first->bindInput(0, x1.data(), 24).ok());
  ASSERT_TRUE(first->bindOutput(0, y1.data(), 40).ok());
  ASSERT_TRUE(second->bindInput(0, x2.data(), 24).ok());
  ASSERT_TRUE(second->bindOutput(0, y2.data(), 40).ok());
  ASSERT_TRUE(first->run().ok());
  ASSERT_TRUE(second->run().ok());
  EXPECT_EQ(y1, sampleExpected(x1));
  EXPECT_EQ(y2, sampleExpected(x2));
}

TEST(RuntimeEngine, RunsAnAddOfAConstant) {
  if (!cpu::findKernel("add"))
    GTEST_SKIP() << "no CPU add kernel in this build";
  EngineSpec spec;
  std::vector<float> bias = {0.5f, -1.0f, 2.0f};
  uint64_t offset = addConstant(spec.constants, bias);
  spec.tensors = {
      {"x", fb::DType::f32, {2, 3}, fb::Storage::Input, 0, TensorSpec::kAutoSize, ""},
      {"bias", fb::DType::f32, {3}, fb::Storage::Constant, offset, TensorSpec::kAutoSize, ""},
      {"sum", fb::DType::f32, {2, 3}, fb::Storage::Arena, 0, TensorSpec::kAutoSize, ""},
      {"y", fb::DType::f32, {3, 2}, fb::Storage::Output, 0, TensorSpec::kAutoSize, ""},
  };
  spec.inputs = {0};
  spec.outputs = {3};
  spec.steps = {{"add", "a(Add)", {0, 1}, {2}, {}},
                {"transpose", "t(Transpose)", {2}, {3}, {intsAttr("perm", {1, 0})}}};
  spec.arenaSize = 256;
  auto engine = openValid(buildEngine(spec));
  ASSERT_TRUE(engine);
  std::unique_ptr<Context> context;
  ASSERT_TRUE(Context::create(engine, TESSEL_TIER_CPU, context).ok());
  std::vector<float> x = {1, 2, 3, 4, 5, 6}, y(6);
  ASSERT_TRUE(context->bindInput(0, x.data(), 24).ok());
  ASSERT_TRUE(context->bindOutput(0, y.data(), 24).ok());
  Status status = context->run();
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(y, (std::vector<float>{1.5f, 4.5f, 1.0f, 4.0f, 5.0f, 8.0f}));
}

TEST(RuntimeEngine, OpensFromAFile) {
  std::vector<uint8_t> bytes = buildEngine(sampleSpec());
  std::string path = ::testing::TempDir() + "tessel_engine_test_" +
                     std::to_string(::getpid()) + ".tsl";
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char *>(bytes.data()), bytes.size());
  }
  std::shared_ptr<const Engine> engine;
  Status status = Engine::openFile(path, engine);
  EXPECT_TRUE(status.ok()) << status.message();
  ASSERT_TRUE(engine);
  EXPECT_EQ(engine->fileSize(), bytes.size());

  // A corrupt file's message names the file.
  bytes.back() ^= 1;
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char *>(bytes.data()), bytes.size());
  }
  std::shared_ptr<const Engine> corrupt;
  status = Engine::openFile(path, corrupt);
  EXPECT_EQ(status.code(), TESSEL_INVALID_ENGINE);
  EXPECT_EQ(status.message(), path + ": checksum mismatch: the engine file is corrupt");
  std::remove(path.c_str());
}

TEST(RuntimeEngine, ReportsUnreadableFilesAsIoErrors) {
  std::shared_ptr<const Engine> engine;
  Status missing = Engine::openFile("/nonexistent/model.tsl", engine);
  EXPECT_EQ(missing.code(), TESSEL_IO_ERROR);
  EXPECT_NE(missing.message().find("/nonexistent/model.tsl"), std::string::npos);
  EXPECT_NE(missing.message().find("No such file"), std::string::npos);
  Status directory = Engine::openFile(::testing::TempDir(), engine);
  EXPECT_EQ(directory.code(), TESSEL_IO_ERROR);
  EXPECT_EQ(engine, nullptr);
}

//===----------------------------------------------------------------------===//
// Layer 1: header and layout
//===----------------------------------------------------------------------===//

TEST(RuntimeEngine, RejectsTruncatedFiles) {
  std::vector<uint8_t> file = buildEngine(sampleSpec());
  format::Header h = headerOf(file);
  for (size_t length : {size_t(0), size_t(1), size_t(63), size_t(64), size_t(65),
                        size_t(64 + h.payload_size / 2), size_t(h.constants_offset),
                        file.size() - 1}) {
    SCOPED_TRACE("length " + std::to_string(length));
    std::vector<uint8_t> truncated(file.begin(), file.begin() + length);
    std::shared_ptr<const Engine> engine;
    Status status = Engine::openMemory(truncated.data(), truncated.size(), engine);
    EXPECT_EQ(status.code(), TESSEL_INVALID_ENGINE);
    EXPECT_NE(status.message().find("truncated"), std::string::npos) << status.message();
  }
}

TEST(RuntimeEngine, RejectsBadMagic) {
  std::vector<uint8_t> file = buildEngine(sampleSpec());
  file[0] = 'X';
  expectRejected(file, TESSEL_INVALID_ENGINE, "not a Tessel engine (bad magic)");
}

TEST(RuntimeEngine, RejectsOtherFormatVersionsNamingBoth) {
  std::vector<uint8_t> file = buildEngine(sampleSpec());
  format::Header h = headerOf(file);
  h.format_version = format::kFormatVersion + 1;
  setHeader(file, h);
  const std::string reads = " is not supported: this runtime reads versions " +
                            std::to_string(format::kOldestReadableVersion) + " to " +
                            std::to_string(format::kFormatVersion);
  expectRejected(file, TESSEL_UNSUPPORTED,
                 "engine format version " + std::to_string(format::kFormatVersion + 1) + reads);
  h.format_version = format::kOldestReadableVersion - 1;
  setHeader(file, h);
  expectRejected(file, TESSEL_UNSUPPORTED,
                 "engine format version " + std::to_string(format::kOldestReadableVersion - 1) +
                     reads);
}

TEST(RuntimeEngine, ReadsTheOldestReadableVersion) {
  EngineSpec spec = sampleSpec();
  spec.formatVersion = format::kOldestReadableVersion;
  std::vector<uint8_t> file = buildEngine(spec);
  format::Header h = headerOf(file);
  h.format_version = format::kOldestReadableVersion;
  setHeader(file, h);
  std::shared_ptr<const Engine> engine;
  Status status = open(file, engine);
  EXPECT_TRUE(status.ok()) << status.message();
}

TEST(RuntimeEngine, RejectsAPayloadVersionThatDisagreesWithTheHeader) {
  EngineSpec spec = sampleSpec();
  spec.formatVersion = format::kFormatVersion + 1;
  expectRejected(spec, "the payload's format version");
}

TEST(RuntimeEngine, RejectsBadHeaderFields) {
  const std::vector<uint8_t> file = buildEngine(sampleSpec());
  struct Case {
    const char *what;
    void (*edit)(format::Header &);
    const char *message;
  } cases[] = {
      {"header size", [](format::Header &h) { h.header_size = 32; }, "header size 32"},
      {"reserved", [](format::Header &h) { h.reserved = 1; }, "reserved header bytes"},
      {"payload offset", [](format::Header &h) { h.payload_offset = 128; }, "payload offset"},
      {"payload size", [](format::Header &h) { h.payload_size = 1u << 30; }, "payload"},
      {"empty payload", [](format::Header &h) { h.payload_size = 0; }, "payload size 0"},
      {"constants alignment", [](format::Header &h) { h.constants_offset += 8; },
       "is not 256-byte aligned"},
      {"constants overlap", [](format::Header &h) { h.constants_offset = 0; },
       "overlaps the payload"},
      {"constants size", [](format::Header &h) { h.constants_size += 256; }, "truncated"},
      {"trailing data", [](format::Header &h) { h.constants_size -= 4; }, "trailing data"},
      {"checksum", [](format::Header &h) { h.checksum ^= 1; }, "checksum mismatch"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.what);
    std::vector<uint8_t> edited = file;
    format::Header h = headerOf(edited);
    c.edit(h);
    setHeader(edited, h);
    expectRejected(edited, TESSEL_INVALID_ENGINE, c.message);
  }
}

TEST(RuntimeEngine, RejectsEveryFlippedBitAfterTheHeader) {
  const std::vector<uint8_t> file = buildEngine(sampleSpec());
  for (size_t byte = format::kHeaderSize; byte < file.size(); ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      std::vector<uint8_t> flipped = file;
      flipped[byte] ^= static_cast<uint8_t>(1u << bit);
      std::shared_ptr<const Engine> engine;
      Status status = open(flipped, engine);
      ASSERT_EQ(status.code(), TESSEL_INVALID_ENGINE) << "byte " << byte << " bit " << bit;
      ASSERT_EQ(status.message(), "checksum mismatch: the engine file is corrupt");
    }
  }
}

//===----------------------------------------------------------------------===//
// Layer 2: FlatBuffers
//===----------------------------------------------------------------------===//

TEST(RuntimeEngine, RejectsAForeignFileIdentifier) {
  std::vector<uint8_t> file = buildEngine(sampleSpec());
  // The identifier sits right after the root offset.
  std::memcpy(file.data() + format::kHeaderSize + 4, "XXXX", 4);
  reseal(file);
  expectRejected(file, TESSEL_INVALID_ENGINE, "file identifier is not \"TSL1\"");
}

TEST(RuntimeEngine, RejectsAMalformedPayload) {
  std::vector<uint8_t> file = buildEngine(sampleSpec());
  // A root offset pointing past the payload.
  uint32_t root = 0x7ffffff0;
  std::memcpy(file.data() + format::kHeaderSize, &root, 4);
  reseal(file);
  expectRejected(file, TESSEL_INVALID_ENGINE, "failed FlatBuffers verification");
}

// Corruption the checksum cannot see (the file was "resealed", as a buggy
// writer would) must still never crash the runtime: every single-byte change
// of the payload either fails verification or gives an engine that runs or
// fails cleanly.
TEST(RuntimeEngine, SurvivesResealedPayloadCorruption) {
  const std::vector<uint8_t> file = buildEngine(sampleSpec());
  const format::Header h = headerOf(file);
  int opened = 0, rejected = 0;
  for (size_t byte = h.payload_offset; byte < h.payload_offset + h.payload_size; ++byte) {
    for (uint8_t mask : {uint8_t(0x01), uint8_t(0x80), uint8_t(0xff)}) {
      std::vector<uint8_t> edited = file;
      edited[byte] ^= mask;
      reseal(edited);
      std::shared_ptr<const Engine> engine;
      Status status = open(edited, engine);
      if (!status.ok()) {
        ASSERT_EQ(status.code(), TESSEL_INVALID_ENGINE) << status.message();
        ++rejected;
        continue;
      }
      ++opened;
      // A corrupted arena size is a legitimate allocation failure (the C API
      // test covers it), not something to attempt here.
      if (engine->arenaSize() > (uint64_t(1) << 30))
        continue;
      std::unique_ptr<Context> context;
      if (!Context::create(engine, TESSEL_TIER_CPU, context).ok())
        continue;
      std::vector<std::vector<uint8_t>> buffers;
      for (const rt::TensorInfo &info : engine->inputs()) {
        buffers.emplace_back(info.sizeBytes + 8);
        (void)context->bindInput(buffers.size() - 1, buffers.back().data(), info.sizeBytes);
      }
      for (size_t i = 0; i < engine->outputs().size(); ++i) {
        buffers.emplace_back(engine->outputs()[i].sizeBytes + 8);
        (void)context->bindOutput(i, buffers.back().data(), engine->outputs()[i].sizeBytes);
      }
      (void)context->run();
    }
  }
  EXPECT_GT(rejected, 0);
  EXPECT_GT(opened, 0); // e.g. a changed name or constant value
}

//===----------------------------------------------------------------------===//
// Layer 3: semantics
//===----------------------------------------------------------------------===//

TEST(RuntimeEngine, RejectsTensorIndicesOutOfRange) {
  EngineSpec spec = sampleSpec();
  spec.steps[1].inputs = {7};
  expectRejected(spec, "step 1 'reshape' at r(Reshape): input 0 refers to tensor 7, but the "
                       "engine has 5 tensors");
  spec = sampleSpec();
  spec.steps[1].inputs = {-2};
  expectRejected(spec, "input 0 refers to tensor -2");
  spec = sampleSpec();
  spec.steps[2].outputs = {-1};
  expectRejected(spec, "step 2 'concat' at y(Concat): output 0 refers to tensor -1");
  spec = sampleSpec();
  spec.steps[0].outputs = {5};
  expectRejected(spec, "output 0 refers to tensor 5");
  spec = sampleSpec();
  spec.inputs = {9};
  expectRejected(spec, "graph input 0 refers to tensor 9");
  spec = sampleSpec();
  spec.outputs = {-1};
  expectRejected(spec, "graph output 0 refers to tensor -1");
}

/// Opens a variant of sampleSpec() and runs it on the cpu tier: it must
/// still compute what sampleSpec() does.
void expectSampleResult(const EngineSpec &spec) {
  auto engine = openValid(buildEngine(spec));
  ASSERT_TRUE(engine);
  std::unique_ptr<Context> context;
  ASSERT_TRUE(Context::create(engine, TESSEL_TIER_CPU, context).ok());
  std::vector<float> x = {1, 2, 3, 4, 5, 6}, y(10);
  ASSERT_TRUE(context->bindInput(0, x.data(), 24).ok());
  ASSERT_TRUE(context->bindOutput(0, y.data(), 40).ok());
  ASSERT_TRUE(context->run().ok());
  EXPECT_EQ(y, sampleExpected(x));
}

TEST(RuntimeEngine, AcceptsAbsentOptionalStepInputs) {
  EngineSpec spec = sampleSpec();
  spec.steps[1].inputs = {1, -1}; // reshape ignores its absent second operand
  expectSampleResult(spec);
}

TEST(RuntimeEngine, RejectsConstantsAndArenaTensorsOutOfBounds) {
  EngineSpec spec = sampleSpec();
  spec.tensors[3].offset = 4; // 16 bytes at 4 in a 16-byte blob
  expectRejected(spec, "tensor 3 'c': constant bytes [4, +16) lie outside the 16-byte "
                       "constants blob");
  spec = sampleSpec();
  spec.tensors[3].offset = ~uint64_t(0) - 4; // offset + size wraps around
  expectRejected(spec, "lie outside the 16-byte constants blob");
  spec = sampleSpec();
  spec.constantsSize = 8; // the payload and the header disagree
  expectRejected(spec, "the payload's constants size 8 differs from the header's 16");
  spec = sampleSpec();
  spec.tensors[2].offset = 500;
  expectRejected(spec, "tensor 2 'r': arena bytes [500, +24) lie outside the 512-byte arena");
  spec = sampleSpec();
  spec.tensors[2].offset = 2;
  expectRejected(spec, "tensor 2 'r': offset 2 is not aligned to its 4-byte elements");
}

// A step's arena output shares bytes with its operands only as the planner's
// in-place steps do, all of them: a fuzzed offset one element off had the
// where kernel memcpy between overlapping ranges.
TEST(RuntimeEngine, RejectsStepOperandsOverlappingInPart) {
  EngineSpec spec = sampleSpec();
  spec.tensors[2].offset = 8; // r [8, 32) over t [0, 24)
  expectRejected(spec, "step 1 'reshape' at r(Reshape): output 0 overlaps input 0 in the arena "
                       "in part (arena bytes [8, 32) and [0, 24))");
  spec = sampleSpec();
  spec.steps[0].outputs = {1, 2};
  spec.tensors[2].offset = 16;
  expectRejected(spec, "step 0 'transpose' at t(Transpose): outputs 0 and 1 overlap in the arena");
  // In place, the bytes coinciding, as the planner shares a buffer.
  spec = sampleSpec();
  spec.tensors[2].offset = 0;
  expectSampleResult(spec);
}

TEST(RuntimeEngine, RejectsMalformedTensors) {
  EngineSpec spec = sampleSpec();
  spec.tensors[1].size = 20;
  expectRejected(spec, "tensor 1 't': size 20 bytes, but its shape and dtype need 24");
  spec = sampleSpec();
  spec.tensors[1].shape = {-3, -2};
  spec.tensors[1].size = 24;
  expectRejected(spec, "tensor 1 't': negative dimension -3");
  spec = sampleSpec();
  spec.tensors[1].shape = {int64_t(1) << 40, int64_t(1) << 40};
  spec.tensors[1].size = 0;
  expectRejected(spec, "tensor 1 't': size overflows 64 bits");
  spec = sampleSpec();
  spec.tensors[1].dtype = static_cast<fb::DType>(42);
  spec.tensors[1].size = 24;
  expectRejected(spec, "tensor 1 't': invalid dtype 42");
  spec = sampleSpec();
  spec.tensors[1].storage = static_cast<fb::Storage>(9);
  expectRejected(spec, "tensor 1 't': invalid storage 9");
}

TEST(RuntimeEngine, RejectsInconsistentGraphInputsAndOutputs) {
  EngineSpec spec = sampleSpec();
  spec.inputs = {1};
  expectRejected(spec, "graph input 0 is tensor 1 't', whose storage is Arena, not Input");
  spec = sampleSpec();
  spec.inputs = {0, 0};
  expectRejected(spec, "graph input 1 repeats tensor 0 'x'");
  spec = sampleSpec();
  spec.inputs = {};
  expectRejected(spec, "tensor 0 'x' has storage Input but is not a graph input");
  spec = sampleSpec();
  spec.outputs = {};
  expectRejected(spec, "tensor 4 'y' has storage Output but is not a graph output");
}

TEST(RuntimeEngine, RejectsMalformedSteps) {
  EngineSpec spec = sampleSpec();
  spec.steps[1].op = "";
  expectRejected(spec, "step 1 at r(Reshape) has no op");
  spec = gpuAddSpec(8);
  spec.steps[0].tiers = {};
  expectRejected(spec, "step 0 'add' at y(Add): has no \"cpu\" kernel variant");
  spec = sampleSpec();
  spec.steps[1].tiers = {};
  expectRejected(spec, "has no \"cpu\" kernel variant");
  spec = sampleSpec();
  spec.steps[1].outputs = {3};
  expectRejected(spec, "output 0 writes tensor 3 'c', which is a constant");
  spec = sampleSpec();
  spec.steps[1].outputs = {0};
  expectRejected(spec, "output 0 writes tensor 0 'x', which is a graph input");
  spec = sampleSpec();
  AttrSpec bad = intAttr("axis", 0);
  bad.kind = static_cast<fb::AttrKind>(7);
  spec.steps[2].attrs = {bad};
  expectRejected(spec, "attribute 'axis' has invalid kind 7");
}

// Each step's attributes against its shapes (issue 17): an engine changed on
// disk cannot hand a kernel an axis outside its operand or a window that
// does not give the result.
TEST(RuntimeEngine, RejectsAttributesThatDisagreeWithTheShapes) {
  EngineSpec spec = sampleSpec();
  spec.steps[2].attrs = {intAttr("axis", 1)};
  expectRejected(spec, "step 2 'concat' at y(Concat): attribute 'axis' holds 1, outside the "
                       "rank 1 of its first input");
  spec.steps[2].attrs = {intAttr("axis", -1)};
  openValid(buildEngine(spec));
  spec = sampleSpec();
  spec.steps[0].attrs = {intsAttr("perm", {1, 2})};
  expectRejected(spec, "attribute 'perm' holds 2, outside the rank 2 of its first input");
  spec.steps[0].attrs = {intsAttr("perm", {0, -2})};
  expectRejected(spec, "attribute 'perm' names axis -2 twice");
  spec.steps[0].attrs = {intsAttr("perm", {1})};
  expectRejected(spec, "attribute 'perm' holds 1 axes for an input of rank 2");

  // x f32[1,1,4,4] conv w f32[1,1,3,3] -> y f32[1,1,2,2] (no pads, stride 1).
  EngineSpec conv;
  uint64_t wOffset = addConstant(conv.constants, std::vector<float>(9, 1.0f));
  conv.tensors = {
      {"x", fb::DType::f32, {1, 1, 4, 4}, fb::Storage::Input, 0, TensorSpec::kAutoSize, ""},
      {"w", fb::DType::f32, {1, 1, 3, 3}, fb::Storage::Constant, wOffset, TensorSpec::kAutoSize,
       ""},
      {"y", fb::DType::f32, {1, 1, 2, 2}, fb::Storage::Output, 0, TensorSpec::kAutoSize, ""},
  };
  conv.inputs = {0};
  conv.outputs = {2};
  conv.steps = {{"conv", "y(Conv)", {0, 1}, {2}, {}}};
  openValid(buildEngine(conv));
  conv.steps[0].attrs = {intsAttr("pads", {1, 1, 1, 1})};
  expectRejected(conv, "step 0 'conv' at y(Conv): its window: the weight's window [1,1,3,3] must "
                       "fit the padded input [1,1,4,4] and give the result [1,1,2,2]");
  conv.steps[0].attrs = {intsAttr("dilations", {int64_t(1) << 40, 1})};
  expectRejected(conv, "its window: strides, dilations and pads must be at most 16777216");
  conv.steps[0].attrs = {intAttr("group", 0)};
  expectRejected(conv, "its window: channels [1,1,4,4] / weight [1,1,3,3] do not match group 0");
}

TEST(RuntimeEngine, OpensGpuVariantsModulesAndTargets) {
  auto engine = openValid(buildEngine(gpuMixedSpec(300)));
  ASSERT_TRUE(engine);
  const fb::Engine *root = engine->fb();
  ASSERT_EQ(root->modules()->size(), 1u);
  const fb::KernelModule *module = root->modules()->Get(0);
  EXPECT_STREQ(rt::fbString(module->name()), "test_kernels");
  ASSERT_EQ(module->images()->size(), 1u);
  EXPECT_EQ(module->images()->Get(0)->format(), fb::ImageFormat::PTX);
  EXPECT_EQ(module->images()->Get(0)->arch(), 60);
  EXPECT_EQ(root->targets()->Get(0)->str(), "sm_60");
  const fb::KernelVariant *simt = root->steps()->Get(0)->variants()->Get(1);
  EXPECT_EQ(simt->tier(), fb::Tier::simt);
  ASSERT_EQ(simt->launches()->size(), 1u);
  const fb::Launch *launch = simt->launches()->Get(0);
  EXPECT_STREQ(rt::fbString(launch->kernel()), "tessel_test_add");
  EXPECT_EQ(launch->grid()->Get(0), 3u);
  EXPECT_EQ(launch->block()->Get(0), kTestBlock);
  ASSERT_EQ(launch->args()->size(), 4u);
  EXPECT_EQ(launch->args()->Get(2)->tensor(), 3);
  EXPECT_EQ(launch->args()->Get(3)->tensor(), -1);
  EXPECT_EQ(launch->args()->Get(3)->bytes()->size(), 4u);
}

// Each case edits the one simt variant of gpuAddSpec (or its module).
TEST(RuntimeEngine, RejectsMalformedGpuVariants) {
  struct Case {
    const char *what;
    void (*edit)(EngineSpec &);
    const char *message;
  } cases[] = {
      {"unknown tier", [](EngineSpec &s) { s.steps[0].variants[0].tier = "tc-sm75"; },
       "step 0 'add' at y(Add): variant 1 has an unknown tier 100 (known: cpu, simt, "
       "tc-sm70, tc-sm80, tc-sm90)"},
      {"cpu with launches", [](EngineSpec &s) { s.steps[0].variants[0].tier = "cpu"; },
       "variant 1 'cpu' has GPU launches; the cpu tier runs the op's kernel"},
      {"no launches", [](EngineSpec &s) { s.steps[0].variants[0].launches.clear(); },
       "variant 1 'simt' has no launches"},
      {"plain GPU tier", [](EngineSpec &s) { s.steps[0].tiers.push_back("tc-sm80"); },
       "variant 1 'tc-sm80' has no launches"},
      {"negative capability",
       [](EngineSpec &s) { s.steps[0].variants[0].minComputeCapability = -1; },
       "variant 1 'simt' has a negative minimum compute capability"},
      {"alignment not a power of two", [](EngineSpec &s) { s.steps[0].variants[0].alignment = 12; },
       "variant 1 'simt' has alignment 12, not a power of two up to 256"},
      {"alignment too large", [](EngineSpec &s) { s.steps[0].variants[0].alignment = 512; },
       "has alignment 512, not a power of two up to 256"},
      {"module out of range", [](EngineSpec &s) { s.steps[0].variants[0].launches[0].module = 1; },
       "variant 1 'simt' launch 0 refers to module 1, but the engine has 1 modules"},
      {"negative module", [](EngineSpec &s) { s.steps[0].variants[0].launches[0].module = -1; },
       "launch 0 refers to module -1"},
      {"no modules", [](EngineSpec &s) { s.modules.clear(); },
       "launch 0 refers to module 0, but the engine has 0 modules"},
      {"no kernel name", [](EngineSpec &s) { s.steps[0].variants[0].launches[0].kernel = ""; },
       "variant 1 'simt' launch 0 names no kernel"},
      {"grid of 2", [](EngineSpec &s) { s.steps[0].variants[0].launches[0].grid = {1, 1}; },
       "launch 0: the grid needs 3 non-zero sizes"},
      {"grid of 4", [](EngineSpec &s) { s.steps[0].variants[0].launches[0].grid = {1, 1, 1, 1}; },
       "launch 0: the grid needs 3 non-zero sizes"},
      {"zero block", [](EngineSpec &s) { s.steps[0].variants[0].launches[0].block = {32, 0, 1}; },
       "launch 0: the block needs 3 non-zero sizes"},
      {"no block", [](EngineSpec &s) { s.steps[0].variants[0].launches[0].block = {}; },
       "launch 0: the block needs 3 non-zero sizes"},
      {"block too large",
       [](EngineSpec &s) { s.steps[0].variants[0].launches[0].block = {32, 16, 4}; },
       "launch 0: a block of 2048 threads exceeds CUDA's 1024"},
      {"tensor out of range",
       [](EngineSpec &s) { s.steps[0].variants[0].launches[0].args[1] = tensorArg(3); },
       "variant 1 'simt' launch 0 argument 1 refers to tensor 3, but the engine has 3 tensors"},
      {"tensor below -1",
       [](EngineSpec &s) { s.steps[0].variants[0].launches[0].args[0] = tensorArg(-2); },
       "argument 0 refers to tensor -2"},
      {"tensor and bytes",
       [](EngineSpec &s) { s.steps[0].variants[0].launches[0].args[0].bytes = {1, 2, 3, 4}; },
       "launch 0 argument 0 has both a tensor and bytes"},
      {"workspace and tensor",
       [](EngineSpec &s) { s.steps[0].variants[0].launches[0].args[0].workspaceBytes = 64; },
       "launch 0 argument 0 is a workspace and also a tensor or bytes"},
      {"huge workspace",
       [](EngineSpec &s) {
         s.steps[0].variants[0].launches[0].args.push_back(workspaceArg(uint64_t(1) << 40));
       },
       "launch 0 argument 4 asks for a workspace of 1099511627776 bytes (at most 4294967296)"},
      {"counters and workspace",
       [](EngineSpec &s) {
         KernelArgSpec both = counterArg(16);
         both.workspaceBytes = 64;
         s.steps[0].variants[0].launches[0].args.push_back(both);
       },
       "launch 0 argument 4 is counters and also a tensor, bytes or a workspace"},
      {"huge counters",
       [](EngineSpec &s) {
         s.steps[0].variants[0].launches[0].args.push_back(counterArg(uint64_t(1) << 30));
       },
       "launch 0 argument 4 asks for 1073741824 bytes of counters (at most 16777216)"},
      {"tensor map of f32",
       [](EngineSpec &s) {
         s.steps[0].variants[0].launches[0].args.push_back(tensorMapArg(0, {8, 1}, {32}, {8, 1}));
       },
       "launch 0 argument 4 is a tensor map of a tensor that is not f16"},
      {"tensor map of no tensor",
       [](EngineSpec &s) {
         s.steps[0].variants[0].launches[0].args.push_back(tensorMapArg(-1, {8, 1}, {16}, {8, 1}));
       },
       "launch 0 argument 4 is a tensor map of no tensor"},
      {"tensor map of three dimensions",
       [](EngineSpec &s) {
         s.tensors[0].dtype = fb::DType::f16;
         s.steps[0].variants[0].launches[0].args.push_back(
             tensorMapArg(0, {8, 1, 1}, {16}, {8, 1}));
       },
       "argument 4's tensor map is not two dimensions, one stride and a box"},
      {"tensor map past its tensor",
       [](EngineSpec &s) {
         s.tensors[0].dtype = fb::DType::f16; // 8 elements: 16 bytes
         s.steps[0].variants[0].launches[0].args.push_back(tensorMapArg(0, {8, 2}, {16}, {8, 1}));
       },
       "argument 4's tensor map (8 x 2, rows of 16 bytes, boxes of 8 x 1) does not fit tensor "
       "0 (16 bytes) or TMA"},
      {"tensor map box past the swizzle",
       [](EngineSpec &s) {
         s.tensors[0].dtype = fb::DType::f16;
         s.steps[0].variants[0].launches[0].args.push_back(
             tensorMapArg(0, {8, 1}, {16}, {128, 1}));
       },
       "boxes of 128 x 1) does not fit tensor 0 (16 bytes) or TMA"},
      {"im2col map without element strides",
       [](EngineSpec &s) {
         s.tensors[0].dtype = fb::DType::f16;
         s.steps[0].variants[0].launches[0].args.push_back(
             im2colMapArg(0, {8, 1, 1, 1}, {16, 16, 16}, {8, 1}, {0, 0}, {0, 0}, {}));
       },
       "argument 4's im2col tensor map is not four dimensions, three strides, a box, two "
       "corners and four element strides"},
      {"im2col map past its tensor",
       [](EngineSpec &s) {
         s.tensors[0].dtype = fb::DType::f16; // 16 bytes: one pixel of 8 channels
         s.steps[0].variants[0].launches[0].args.push_back(
             im2colMapArg(0, {8, 1, 1, 2}, {16, 16, 16}, {8, 1}, {0, 0}, {0, 0}, {1, 1, 1, 1}));
       },
       "argument 4's im2col tensor map (8 channels, 1 x 1 x 2 pixels, boxes of 8 x 1) does not "
       "fit tensor 0 (16 bytes) or TMA"},
      {"im2col map corner past a 4-D map's",
       [](EngineSpec &s) {
         s.tensors[0].dtype = fb::DType::f16;
         s.steps[0].variants[0].launches[0].args.push_back(im2colMapArg(
             0, {8, 1, 1, 1}, {16, 16, 16}, {8, 1}, {-129, 0}, {0, 0}, {1, 1, 1, 1}));
       },
       "argument 4's im2col tensor map (8 channels, 1 x 1 x 1 pixels, boxes of 8 x 1) does not "
       "fit tensor 0 (16 bytes) or TMA"},
      {"im2col map of element stride 9",
       [](EngineSpec &s) {
         s.tensors[0].dtype = fb::DType::f16;
         s.steps[0].variants[0].launches[0].args.push_back(
             im2colMapArg(0, {8, 1, 1, 1}, {16, 16, 16}, {8, 1}, {0, 0}, {0, 0}, {1, 9, 1, 1}));
       },
       "does not fit tensor 0 (16 bytes) or TMA"},
      {"PTX without NUL", [](EngineSpec &s) { s.modules[0].images[0].data.pop_back(); },
       "module 0 'test_kernels' image 0 (PTX) is not NUL-terminated"},
      {"empty image", [](EngineSpec &s) { s.modules[0].images[0].data.clear(); },
       "module 0 'test_kernels' image 0 is empty"},
      {"bad format",
       [](EngineSpec &s) { s.modules[0].images[0].format = static_cast<fb::ImageFormat>(5); },
       "module 0 'test_kernels' image 0 has invalid format 5"},
      {"bad arch", [](EngineSpec &s) { s.modules[0].images[0].arch = 0; },
       "module 0 'test_kernels' image 0 has invalid arch 0"},
      {"two cubins for one arch",
       [](EngineSpec &s) {
         s.modules[0].images.push_back(cubinImage(80));
         s.modules[0].images.push_back(cubinImage(90));
         s.modules[0].images.push_back(cubinImage(80));
       },
       "module 0 'test_kernels' has two cubins for sm_80"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.what);
    EngineSpec spec = gpuAddSpec(8);
    c.edit(spec);
    expectRejected(spec, c.message);
  }
  // What the cases break is valid otherwise: null arguments, a cubin per
  // arch beside PTX, a module no launch uses, tensor maps that fit (tiled, im2col).
  EngineSpec spec = gpuAddSpec(8);
  spec.steps[0].variants[0].launches[0].args[0] = nullArg();
  spec.tensors[1].dtype = fb::DType::f16;
  spec.steps[0].variants[0].launches[0].args.push_back(tensorMapArg(1, {8, 1}, {16}, {8, 1}));
  spec.steps[0].variants[0].launches[0].args.push_back(
      im2colMapArg(1, {8, 1, 1, 1}, {16, 16, 16}, {8, 1}, {0, 0}, {0, 0}, {1, 1, 1, 1}));
  spec.modules[0].images.push_back(cubinImage(80));
  spec.modules[0].images.push_back(cubinImage(90));
  spec.modules.push_back(ModuleSpec{"unused", {}});
  EXPECT_TRUE(openValid(buildEngine(spec)));
}

//===----------------------------------------------------------------------===//
// Context
//===----------------------------------------------------------------------===//

TEST(RuntimeContext, RefusesGpuTiersWithoutAGpu) {
  auto engine = openValid(buildEngine(sampleSpec()));
  const bool gpu = rt::gpu::Driver::get().available();
  for (tessel_tier_t tier : {TESSEL_TIER_SIMT, TESSEL_TIER_TC}) {
    std::unique_ptr<Context> context;
    Status status = Context::create(engine, tier, context);
    if (gpu) { // a forced tier bounds each step's tier: this engine's are cpu
      EXPECT_TRUE(status.ok()) << status.message();
      EXPECT_STREQ(context->tier(), "cpu");
      continue;
    }
    EXPECT_EQ(status.code(), TESSEL_UNSUPPORTED);
    EXPECT_NE(status.message().find("this machine has no GPU tier"), std::string::npos)
        << status.message();
    EXPECT_NE(status.message().find("the engine has tiers: cpu"), std::string::npos);
    EXPECT_EQ(context, nullptr);
  }
  std::unique_ptr<Context> context;
  EXPECT_EQ(Context::create(engine, static_cast<tessel_tier_t>(17), context).code(),
            TESSEL_INVALID_ARGUMENT);
}

TEST(RuntimeContext, NamesAStepWhoseOpHasNoKernel) {
  EngineSpec spec = sampleSpec();
  spec.steps[1].op = "frobnicate";
  auto engine = openValid(buildEngine(spec));
  std::unique_ptr<Context> context;
  Status status = Context::create(engine, TESSEL_TIER_CPU, context);
  EXPECT_EQ(status.code(), TESSEL_UNSUPPORTED);
  EXPECT_EQ(status.message(), "step 1 'frobnicate' at r(Reshape): op 'frobnicate' has no "
                              "kernel in this runtime's CPU tier");
}

TEST(RuntimeContext, ReportsAKernelErrorWithItsStep) {
  // gather with an index that is out of range at run time.
  EngineSpec spec;
  spec.tensors = {
      {"data", fb::DType::f32, {4}, fb::Storage::Input, 0, TensorSpec::kAutoSize, ""},
      {"idx", fb::DType::i64, {2}, fb::Storage::Input, 0, TensorSpec::kAutoSize, ""},
      {"out", fb::DType::f32, {2}, fb::Storage::Output, 0, TensorSpec::kAutoSize, ""},
  };
  spec.inputs = {0, 1};
  spec.outputs = {2};
  spec.steps = {{"gather", "g(Gather)", {0, 1}, {2}, {intAttr("axis", 0)}}};
  auto engine = openValid(buildEngine(spec));
  std::unique_ptr<Context> context;
  ASSERT_TRUE(Context::create(engine, TESSEL_TIER_CPU, context).ok());
  std::vector<float> data = {1, 2, 3, 4}, out(2);
  std::vector<int64_t> idx = {-1, 4};
  ASSERT_TRUE(context->bindInput(0, data.data(), 16).ok());
  ASSERT_TRUE(context->bindInput(1, idx.data(), 16).ok());
  ASSERT_TRUE(context->bindOutput(0, out.data(), 8).ok());
  Status status = context->run();
  EXPECT_EQ(status.code(), TESSEL_INTERNAL);
  EXPECT_EQ(status.message(), "step 0 'gather' at g(Gather): gather: index 4 is out of range "
                              "for axis 0 of extent 4");
  idx = {-1, 0};
  ASSERT_TRUE(context->run().ok());
  EXPECT_EQ(out, (std::vector<float>{4, 1}));
}

TEST(RuntimeContext, RunAllocatesNothing) {
#ifndef TESSEL_COUNT_ALLOCATIONS
  GTEST_SKIP() << "allocation counting is off under AddressSanitizer";
#else
  auto engine = openValid(buildEngine(sampleSpec()));
  std::unique_ptr<Context> context;
  // Creation allocates (and shows that the counter sees allocations).
  allocationCount = 0;
  countingAllocations = true;
  ASSERT_TRUE(Context::create(engine, TESSEL_TIER_CPU, context).ok());
  countingAllocations = false;
  EXPECT_GT(allocationCount.load(), 0u);
  std::vector<float> x = {1, 2, 3, 4, 5, 6}, y(10);
  ASSERT_TRUE(context->bindInput(0, x.data(), 24).ok());
  ASSERT_TRUE(context->bindOutput(0, y.data(), 40).ok());
  allocationCount = 0;
  countingAllocations = true;
  Status status = context->run();
  countingAllocations = false;
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(allocationCount.load(), 0u);
  EXPECT_EQ(y, sampleExpected(x));
#endif
}

// The GPU path too: the first run goes step by step (not counted: the
// driver may set things up lazily), the second captures a CUDA graph, the
// third replays it; the mixed engine copies through the host. None allocates
// on the heap.
TEST(RuntimeContext, GpuRunAllocatesNothing) {
#ifndef TESSEL_COUNT_ALLOCATIONS
  GTEST_SKIP() << "allocation counting is off under AddressSanitizer";
#else
  if (!rt::gpu::Driver::get().available())
    GTEST_SKIP() << "no CUDA driver/GPU: " << rt::gpu::Driver::get().status().message();
  for (const EngineSpec &spec : {gpuChainSpec(1000), gpuMixedSpec(1000)}) {
    auto engine = openValid(buildEngine(spec));
    std::unique_ptr<Context> context;
    Status created = Context::create(engine, TESSEL_TIER_SIMT, context);
    ASSERT_TRUE(created.ok()) << created.message();
    std::vector<float> x = testInput(1000, 7), y(1000);
    ASSERT_TRUE(context->bindInput(0, x.data(), x.size() * 4).ok());
    ASSERT_TRUE(context->bindOutput(0, y.data(), y.size() * 4).ok());
    Status status = context->run();
    ASSERT_TRUE(status.ok()) << status.message();
    allocationCount = 0;
    countingAllocations = true;
    for (int run = 0; run < 3 && status.ok(); ++run)
      status = context->run();
    countingAllocations = false;
    ASSERT_TRUE(status.ok()) << status.message();
    EXPECT_EQ(allocationCount.load(), 0u) << context->tierSummary();
  }
#endif
}

TEST(RuntimeContext, ChecksBindings) {
  auto engine = openValid(buildEngine(sampleSpec()));
  std::unique_ptr<Context> context;
  ASSERT_TRUE(Context::create(engine, TESSEL_TIER_CPU, context).ok());
  std::vector<float> x(6), y(10);

  Status unbound = context->run();
  EXPECT_EQ(unbound.code(), TESSEL_INVALID_ARGUMENT);
  EXPECT_EQ(unbound.message(), "input 0 'x' is not bound");
  ASSERT_TRUE(context->bindInput(0, x.data(), 24).ok());
  EXPECT_EQ(context->run().message(), "output 0 'y' is not bound");

  Status size = context->bindInput(0, x.data(), 20);
  EXPECT_EQ(size.code(), TESSEL_INVALID_ARGUMENT);
  EXPECT_EQ(size.message(), "input 0 'x' takes 24 bytes (f32 [2, 3]), 20 given");
  EXPECT_EQ(context->bindOutput(1, y.data(), 40).message(),
            "output index 1 is out of range: the engine has 1 output");
  EXPECT_EQ(context->bindInput(0, nullptr, 24).message(), "input 0 'x': data is NULL");
  EXPECT_EQ(context->bindOutput(0, reinterpret_cast<uint8_t *>(y.data()) + 1, 40).message(),
            "output 0 'y': data must be aligned to 4 bytes for f32");
}

} // namespace
} // namespace tessel::test
