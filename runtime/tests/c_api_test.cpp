//===- c_api_test.cpp - the C API and the C++ wrapper ---------------------===//
//
// What an application sees through libtessel_runtime: statuses, NULL
// handling, IO info, binding rules and a full run, plus the header-only C++
// wrapper over it.
//
//===----------------------------------------------------------------------===//
#include "engine_builder.h"
#include "sanitizers.h"
#include "tessel_runtime.h"
#include "tessel_runtime.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace tessel::test {
namespace {

// Owns a status; the code and message of a failure, or OK.
struct Result {
  tessel_status_code_t code;
  std::string message;
};

Result take(tessel_status_t status) {
  Result r{tessel_status_code(status), tessel_status_message(status)};
  tessel_status_free(status);
  return r;
}

struct EngineDeleter {
  void operator()(tessel_engine_t *e) const { tessel_engine_release(e); }
};
struct ContextDeleter {
  void operator()(tessel_context_t *c) const { tessel_context_release(c); }
};
using EnginePtr = std::unique_ptr<tessel_engine_t, EngineDeleter>;
using ContextPtr = std::unique_ptr<tessel_context_t, ContextDeleter>;

EnginePtr openSample() {
  std::vector<uint8_t> file = buildEngine(sampleSpec());
  tessel_engine_t *engine = nullptr;
  Result r = take(tessel_engine_open_memory(file.data(), file.size(), &engine));
  EXPECT_EQ(r.code, TESSEL_OK) << r.message;
  return EnginePtr(engine);
}

ContextPtr createContext(const tessel_engine_t *engine) {
  tessel_context_t *context = nullptr;
  Result r = take(tessel_context_create(engine, nullptr, &context));
  EXPECT_EQ(r.code, TESSEL_OK) << r.message;
  return ContextPtr(context);
}

TEST(RuntimeCApi, RunsTheSampleEngine) {
  EnginePtr engine = openSample();
  ASSERT_TRUE(engine);
  ASSERT_EQ(tessel_engine_input_count(engine.get()), 1u);
  ASSERT_EQ(tessel_engine_output_count(engine.get()), 1u);

  tessel_tensor_info_t info;
  ASSERT_EQ(take(tessel_engine_input_info(engine.get(), 0, &info)).code, TESSEL_OK);
  EXPECT_STREQ(info.name, "x");
  EXPECT_EQ(info.dtype, TESSEL_DTYPE_F32);
  ASSERT_EQ(info.rank, 2u);
  EXPECT_EQ(info.shape[0], 2);
  EXPECT_EQ(info.shape[1], 3);
  EXPECT_STREQ(info.layout, "");
  EXPECT_EQ(info.size_bytes, 24u);
  ASSERT_EQ(take(tessel_engine_output_info(engine.get(), 0, &info)).code, TESSEL_OK);
  EXPECT_STREQ(info.name, "y");
  EXPECT_EQ(info.size_bytes, 40u);

  ContextPtr context = createContext(engine.get());
  ASSERT_TRUE(context);
  EXPECT_STREQ(tessel_context_tier(context.get()), "cpu");
  std::vector<float> x = {1, 2, 3, 4, 5, 6}, y(10);
  ASSERT_EQ(take(tessel_context_bind_input(context.get(), 0, x.data(), 24)).code, TESSEL_OK);
  ASSERT_EQ(take(tessel_context_bind_output(context.get(), 0, y.data(), 40)).code, TESSEL_OK);
  Result run = take(tessel_context_run(context.get()));
  ASSERT_EQ(run.code, TESSEL_OK) << run.message;
  EXPECT_EQ(y, sampleExpected(x));
}

TEST(RuntimeCApi, ContextMayOutliveItsEngineHandle) {
  EnginePtr engine = openSample();
  ContextPtr context = createContext(engine.get());
  engine.reset();
  std::vector<float> x = {1, 2, 3, 4, 5, 6}, y(10);
  ASSERT_EQ(take(tessel_context_bind_input(context.get(), 0, x.data(), 24)).code, TESSEL_OK);
  ASSERT_EQ(take(tessel_context_bind_output(context.get(), 0, y.data(), 40)).code, TESSEL_OK);
  ASSERT_EQ(take(tessel_context_run(context.get())).code, TESSEL_OK);
  EXPECT_EQ(y, sampleExpected(x));
}

TEST(RuntimeCApi, SuccessIsNullAndNullIsHarmless) {
  EXPECT_EQ(tessel_status_code(nullptr), TESSEL_OK);
  EXPECT_STREQ(tessel_status_message(nullptr), "");
  tessel_status_free(nullptr);
  tessel_engine_release(nullptr);
  tessel_context_release(nullptr);
  EXPECT_EQ(tessel_engine_input_count(nullptr), 0u);
  EXPECT_EQ(tessel_engine_output_count(nullptr), 0u);
  EXPECT_STREQ(tessel_context_tier(nullptr), "");
}

TEST(RuntimeCApi, RejectsNullArguments) {
  tessel_engine_t *engine = reinterpret_cast<tessel_engine_t *>(0x1);
  Result r = take(tessel_engine_open_file(nullptr, &engine));
  EXPECT_EQ(r.code, TESSEL_INVALID_ARGUMENT);
  EXPECT_EQ(r.message, "path is NULL");
  EXPECT_EQ(engine, nullptr); // cleared on failure
  EXPECT_EQ(take(tessel_engine_open_file("x.tsl", nullptr)).code, TESSEL_INVALID_ARGUMENT);
  EXPECT_EQ(take(tessel_engine_open_memory(nullptr, 100, &engine)).code,
            TESSEL_INVALID_ARGUMENT);

  tessel_tensor_info_t info;
  EXPECT_EQ(take(tessel_engine_input_info(nullptr, 0, &info)).message, "engine is NULL");
  EnginePtr sample = openSample();
  EXPECT_EQ(take(tessel_engine_output_info(sample.get(), 0, nullptr)).message, "info is NULL");

  tessel_context_t *context = nullptr;
  EXPECT_EQ(take(tessel_context_create(nullptr, nullptr, &context)).message, "engine is NULL");
  EXPECT_EQ(take(tessel_context_create(sample.get(), nullptr, nullptr)).code,
            TESSEL_INVALID_ARGUMENT);
  float x[6];
  EXPECT_EQ(take(tessel_context_bind_input(nullptr, 0, x, 24)).message, "context is NULL");
  EXPECT_EQ(take(tessel_context_bind_output(nullptr, 0, x, 24)).message, "context is NULL");
  EXPECT_EQ(take(tessel_context_run(nullptr)).message, "context is NULL");
}

TEST(RuntimeCApi, ReportsBadEnginesWithTheirReason) {
  std::vector<uint8_t> file = buildEngine(sampleSpec());
  file[100] ^= 4;
  tessel_engine_t *engine = nullptr;
  Result r = take(tessel_engine_open_memory(file.data(), file.size(), &engine));
  EXPECT_EQ(r.code, TESSEL_INVALID_ENGINE);
  EXPECT_EQ(r.message, "checksum mismatch: the engine file is corrupt");
  EXPECT_EQ(engine, nullptr);

  r = take(tessel_engine_open_file("/nonexistent/model.tsl", &engine));
  EXPECT_EQ(r.code, TESSEL_IO_ERROR);
  EXPECT_NE(r.message.find("/nonexistent/model.tsl"), std::string::npos);

  EXPECT_EQ(take(tessel_engine_open_memory("", 0, &engine)).code, TESSEL_INVALID_ENGINE);
}

TEST(RuntimeCApi, ChecksIndicesAndSizes) {
  EnginePtr engine = openSample();
  tessel_tensor_info_t info;
  Result r = take(tessel_engine_input_info(engine.get(), 1, &info));
  EXPECT_EQ(r.code, TESSEL_INVALID_ARGUMENT);
  EXPECT_EQ(r.message, "input index 1 is out of range: the engine has 1 input");

  ContextPtr context = createContext(engine.get());
  std::vector<float> x(6), y(10);
  r = take(tessel_context_bind_input(context.get(), 0, x.data(), 23));
  EXPECT_EQ(r.code, TESSEL_INVALID_ARGUMENT);
  EXPECT_EQ(r.message, "input 0 'x' takes 24 bytes (f32 [2, 3]), 23 given");
  r = take(tessel_context_bind_output(context.get(), 0, y.data(), 44));
  EXPECT_EQ(r.message, "output 0 'y' takes 40 bytes (f32 [10]), 44 given");
  r = take(tessel_context_bind_input(context.get(), 3, x.data(), 24));
  EXPECT_EQ(r.message, "input index 3 is out of range: the engine has 1 input");

  r = take(tessel_context_run(context.get()));
  EXPECT_EQ(r.code, TESSEL_INVALID_ARGUMENT);
  EXPECT_EQ(r.message, "input 0 'x' is not bound");
}

TEST(RuntimeCApi, ChoosesTiers) {
  EnginePtr engine = openSample();
  for (tessel_tier_t tier : {TESSEL_TIER_AUTO, TESSEL_TIER_CPU}) {
    tessel_context_options_t options{tier};
    tessel_context_t *context = nullptr;
    ASSERT_EQ(take(tessel_context_create(engine.get(), &options, &context)).code, TESSEL_OK);
    EXPECT_STREQ(tessel_context_tier(context), "cpu");
    tessel_context_release(context);
  }
  tessel_context_options_t tc{TESSEL_TIER_TC};
  tessel_context_t *context = reinterpret_cast<tessel_context_t *>(0x1);
  Result r = take(tessel_context_create(engine.get(), &tc, &context));
  if (take(tessel_driver_status()).code == TESSEL_OK) {
    // A GPU: forced tc bounds each step's tier, and this engine's are cpu.
    EXPECT_EQ(r.code, TESSEL_OK) << r.message;
    EXPECT_STREQ(tessel_context_tier(context), "cpu");
    tessel_context_release(context);
    return;
  }
  EXPECT_EQ(r.code, TESSEL_UNSUPPORTED);
  EXPECT_NE(r.message.find("tier 'tc' requested"), std::string::npos) << r.message;
  EXPECT_EQ(context, nullptr);
}

TEST(RuntimeCApi, ReportsAnArenaTooLargeAsOutOfMemory) {
#if defined(TESSEL_ASAN)
  GTEST_SKIP() << "AddressSanitizer aborts on impossible allocations instead of throwing";
#endif
  EngineSpec spec = sampleSpec();
  spec.arenaSize = uint64_t(1) << 62;
  std::vector<uint8_t> file = buildEngine(spec);
  tessel_engine_t *raw = nullptr;
  ASSERT_EQ(take(tessel_engine_open_memory(file.data(), file.size(), &raw)).code, TESSEL_OK);
  EnginePtr engine(raw);
  tessel_context_t *context = nullptr;
  tessel_status_t status = tessel_context_create(engine.get(), nullptr, &context);
  EXPECT_EQ(tessel_status_code(status), TESSEL_OUT_OF_MEMORY);
  EXPECT_STREQ(tessel_status_message(status), "out of memory");
  tessel_status_free(status); // the preallocated status: freeing it is a no-op
  EXPECT_EQ(context, nullptr);
}

TEST(RuntimeCApi, NamesDTypes) {
  EXPECT_STREQ(tessel_dtype_name(TESSEL_DTYPE_F16), "f16");
  EXPECT_STREQ(tessel_dtype_name(TESSEL_DTYPE_BOOL), "bool");
  EXPECT_STREQ(tessel_dtype_name(static_cast<tessel_dtype_t>(99)), "invalid");
  EXPECT_STREQ(tessel_dtype_name(static_cast<tessel_dtype_t>(-1)), "invalid");
  EXPECT_EQ(tessel_dtype_size(TESSEL_DTYPE_BF16), 2u);
  EXPECT_EQ(tessel_dtype_size(TESSEL_DTYPE_U64), 8u);
  EXPECT_EQ(tessel_dtype_size(TESSEL_DTYPE_BOOL), 1u);
  EXPECT_EQ(tessel_dtype_size(static_cast<tessel_dtype_t>(13)), 0u);
}

TEST(RuntimeCApi, DeviceBindingsAndEnqueueNeedGpuSteps) {
  EnginePtr engine = openSample();
  tessel_context_options_t cpu{TESSEL_TIER_CPU};
  tessel_context_t *raw = nullptr;
  ASSERT_EQ(take(tessel_context_create(engine.get(), &cpu, &raw)).code, TESSEL_OK);
  ContextPtr context(raw);
  // Any 256-aligned address: a cpu-tier context refuses before using it.
  const uint64_t address = 0x10000;
  Result r = take(tessel_context_bind_input_device(context.get(), 0, address, 24));
  EXPECT_EQ(r.code, TESSEL_UNSUPPORTED);
  EXPECT_EQ(r.message, "input 0 'x': the context runs on the cpu tier; bind host buffers "
                       "(tessel_context_bind_input)");
  r = take(tessel_context_bind_output_device(context.get(), 0, address, 40));
  EXPECT_EQ(r.code, TESSEL_UNSUPPORTED);
  EXPECT_NE(r.message.find("context runs on the cpu tier; bind host buffers"),
            std::string::npos);
  // Sizes and indices are checked as for host buffers.
  r = take(tessel_context_bind_input_device(context.get(), 0, address, 23));
  EXPECT_EQ(r.code, TESSEL_INVALID_ARGUMENT);
  EXPECT_EQ(r.message, "input 0 'x' takes 24 bytes (f32 [2, 3]), 23 given");
  r = take(tessel_context_bind_output_device(context.get(), 1, address, 40));
  EXPECT_EQ(r.message, "output index 1 is out of range: the engine has 1 output");
  EXPECT_EQ(take(tessel_context_bind_input_device(nullptr, 0, address, 24)).message,
            "context is NULL");

  r = take(tessel_context_enqueue(context.get(), nullptr));
  EXPECT_EQ(r.code, TESSEL_INVALID_ARGUMENT);
  EXPECT_EQ(r.message, "input 0 'x' is not bound");
  std::vector<float> x = {1, 2, 3, 4, 5, 6}, y(10);
  ASSERT_EQ(take(tessel_context_bind_input(context.get(), 0, x.data(), 24)).code, TESSEL_OK);
  ASSERT_EQ(take(tessel_context_bind_output(context.get(), 0, y.data(), 40)).code, TESSEL_OK);
  r = take(tessel_context_enqueue(context.get(), nullptr));
  EXPECT_EQ(r.code, TESSEL_UNSUPPORTED);
  EXPECT_EQ(r.message, "enqueue needs every step on the GPU, but the context runs on the cpu "
                       "tier; use tessel_context_run");
  EXPECT_EQ(take(tessel_context_enqueue(nullptr, nullptr)).message, "context is NULL");
  void *own = nullptr;
  EXPECT_EQ(take(tessel_context_stream(nullptr, &own)).message, "context is NULL");
  EXPECT_EQ(take(tessel_context_stream(context.get(), nullptr)).message, "cu_stream is NULL");
  // The refused calls left the host bindings alone.
  ASSERT_EQ(take(tessel_context_run(context.get())).code, TESSEL_OK);
  EXPECT_EQ(y, sampleExpected(x));
}

TEST(RuntimeCApi, ProfilesStepsOnTheCpuTier) {
  EnginePtr engine = openSample();
  ContextPtr context = createContext(engine.get());
  const size_t steps = tessel_context_step_count(context.get());
  ASSERT_EQ(steps, 3u);
  std::vector<double> ms(steps, -1.0);
  Result r = take(tessel_context_profile_steps(context.get(), ms.data(), steps));
  EXPECT_EQ(r.code, TESSEL_INVALID_ARGUMENT);
  EXPECT_EQ(r.message, "input 0 'x' is not bound");

  std::vector<float> x = {1, 2, 3, 4, 5, 6}, profiled(10, -1.0f), ran(10, -1.0f);
  ASSERT_EQ(take(tessel_context_bind_input(context.get(), 0, x.data(), 24)).code, TESSEL_OK);
  ASSERT_EQ(take(tessel_context_bind_output(context.get(), 0, profiled.data(), 40)).code,
            TESSEL_OK);
  auto start = std::chrono::steady_clock::now();
  r = take(tessel_context_profile_steps(context.get(), ms.data(), steps));
  double wall =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(r.code, TESSEL_OK) << r.message;
  double sum = 0;
  for (double t : ms) {
    EXPECT_GE(t, 0.0);
    sum += t;
  }
  EXPECT_LE(sum, wall); // each step's time lies within the call
  // The outputs are run()'s.
  ASSERT_EQ(take(tessel_context_bind_output(context.get(), 0, ran.data(), 40)).code, TESSEL_OK);
  ASSERT_EQ(take(tessel_context_run(context.get())).code, TESSEL_OK);
  EXPECT_EQ(profiled, ran);
  EXPECT_EQ(profiled, sampleExpected(x));

  r = take(tessel_context_profile_steps(context.get(), ms.data(), 2));
  EXPECT_EQ(r.code, TESSEL_INVALID_ARGUMENT);
  EXPECT_EQ(r.message, "count is 2, but the context has 3 steps (tessel_context_step_count)");
  EXPECT_EQ(take(tessel_context_profile_steps(context.get(), nullptr, steps)).message,
            "ms is NULL");
  EXPECT_EQ(take(tessel_context_profile_steps(nullptr, ms.data(), steps)).message,
            "context is NULL");
}

//===----------------------------------------------------------------------===//
// The C++ wrapper
//===----------------------------------------------------------------------===//

TEST(RuntimeCppWrapper, RunsAndThrowsErrorsWithCodes) {
  std::vector<uint8_t> file = buildEngine(sampleSpec());
  tessel::Engine engine = tessel::Engine::openMemory(file.data(), file.size());
  ASSERT_EQ(engine.inputCount(), 1u);
  tessel::TensorInfo x = engine.input(0);
  EXPECT_EQ(x.name, "x");
  EXPECT_EQ(x.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(x.numElements(), 6);
  EXPECT_EQ(engine.output(0).sizeBytes, 40u);

  tessel::Context context(engine);
  EXPECT_EQ(context.tier(), "cpu");
  std::vector<float> input = {1, 2, 3, 4, 5, 6}, output(10);
  context.bindInput(0, input);
  context.bindOutput(0, output);
  context.run();
  EXPECT_EQ(output, sampleExpected(input));
  // Step profiles work on the cpu tier and write the outputs as run() does;
  // device IO and enqueue need GPU steps.
  std::fill(output.begin(), output.end(), 0.0f);
  std::vector<double> ms = context.profileSteps();
  ASSERT_EQ(ms.size(), context.stepCount());
  for (double t : ms)
    EXPECT_GE(t, 0.0);
  EXPECT_EQ(output, sampleExpected(input));
  for (auto call : {std::function<void()>([&] { context.bindInputDevice(0, 256, 24); }),
                    std::function<void()>([&] { context.bindOutputDevice(0, 256, 40); }),
                    std::function<void()>([&] { context.enqueue(nullptr); }),
                    std::function<void()>([&] { (void)context.stream(); })}) {
    try {
      call();
      FAIL() << "expected tessel::Error";
    } catch (const tessel::Error &e) {
      EXPECT_EQ(e.code(), TESSEL_UNSUPPORTED) << e.what();
    }
  }

  try {
    context.bindInput(0, input.data(), 4);
    FAIL() << "expected tessel::Error";
  } catch (const tessel::Error &e) {
    EXPECT_EQ(e.code(), TESSEL_INVALID_ARGUMENT);
    EXPECT_STREQ(e.what(), "input 0 'x' takes 24 bytes (f32 [2, 3]), 4 given");
  }
  try {
    (void)engine.output(5);
    FAIL() << "expected tessel::Error";
  } catch (const tessel::Error &e) {
    EXPECT_EQ(e.code(), TESSEL_INVALID_ARGUMENT);
  }
  file[200] ^= 1;
  try {
    (void)tessel::Engine::openMemory(file.data(), file.size());
    FAIL() << "expected tessel::Error";
  } catch (const tessel::Error &e) {
    EXPECT_EQ(e.code(), TESSEL_INVALID_ENGINE);
    EXPECT_STREQ(e.what(), "checksum mismatch: the engine file is corrupt");
  }
  try {
    (void)tessel::Context(engine, static_cast<tessel_tier_t>(7));
    FAIL() << "expected tessel::Error";
  } catch (const tessel::Error &e) {
    EXPECT_EQ(e.code(), TESSEL_INVALID_ARGUMENT);
    EXPECT_STREQ(e.what(), "tier is not a tessel_tier_t (AUTO, CPU, SIMT, TC, TC_SM70 or TC_SM80)");
  }
  // A forced GPU tier caps each step's tier: without a usable GPU it is an
  // error; with one, this engine (no GPU kernels) runs on the CPU tier.
  try {
    tessel::Context forced(engine, TESSEL_TIER_SIMT);
    EXPECT_EQ(forced.tier(), "cpu");
  } catch (const tessel::Error &e) {
    EXPECT_EQ(e.code(), TESSEL_UNSUPPORTED);
  }
  EXPECT_THROW(tessel::Engine::openFile("/nonexistent.tsl"), tessel::Error);

  // Handles move.
  tessel::Engine moved = std::move(engine);
  EXPECT_EQ(moved.outputCount(), 1u);
}

} // namespace
} // namespace tessel::test
