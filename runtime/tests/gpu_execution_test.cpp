//===- gpu_execution_test.cpp - engines running on the GPU ----------------===//
//
// Contexts whose steps run hand-written PTX kernels (gpu_engines.h) on device
// 0: a simt step, steps shared by two contexts, a mixed engine whose middle
// step falls back to the cpu tier (copies through the host mirror of the
// arena, in place), CUDA graph capture and replay, dynamic shared memory
// above 48 KiB, a PTX the driver rejects (reported with its JIT log; AUTO
// falls back), a kernel fault naming its steps, and through the C API
// device-bound inputs and outputs (also in a mixed context), enqueue on a
// caller's stream, rebinding after a graph capture, and step profiles.
// Every result is compared with the host's, exactly: the kernels only add
// and copy f32.
//
// Without a CUDA driver or GPU every test skips with the probe's reason.
//
//===----------------------------------------------------------------------===//
#include "engine_builder.h"
#include "executor.h"
#include "gpu/driver.h"
#include "gpu_engines.h"
#include "tessel_runtime.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace tessel::test {
namespace {

using rt::Context;
using rt::Engine;
using rt::Status;
using rt::gpu::Driver;

#define SKIP_WITHOUT_GPU()                                                                     \
  do {                                                                                         \
    if (!Driver::get().available())                                                            \
      GTEST_SKIP() << "no CUDA driver/GPU: " << Driver::get().status().message();              \
  } while (0)

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

std::shared_ptr<const Engine> openSpec(const EngineSpec &spec) {
  std::vector<uint8_t> file = buildEngine(spec);
  std::shared_ptr<const Engine> engine;
  Status status = Engine::openMemory(file.data(), file.size(), engine);
  EXPECT_TRUE(status.ok()) << status.message();
  return engine;
}

/// A context on `tier` with x bound as its input and y as its output.
struct Bound {
  std::unique_ptr<Context> context;
  std::vector<float> x, y;
};

Bound create(std::shared_ptr<const Engine> engine, tessel_tier_t tier, uint32_t n,
             uint32_t seed) {
  Bound b;
  Status status = Context::create(std::move(engine), tier, b.context);
  EXPECT_TRUE(status.ok()) << status.message();
  if (!b.context)
    return b;
  b.x = testInput(n, seed);
  b.y.assign(n, -1.0f);
  EXPECT_TRUE(b.context->bindInput(0, b.x.data(), n * 4).ok());
  EXPECT_TRUE(b.context->bindOutput(0, b.y.data(), n * 4).ok());
  return b;
}

/// New input values in the bound buffer (assigning a new vector would move
/// the buffer the context holds).
void refill(std::vector<float> &x, uint32_t seed) {
  std::vector<float> values = testInput(static_cast<uint32_t>(x.size()), seed);
  std::copy(values.begin(), values.end(), x.begin());
}

Status run(Bound &b) {
  Status status = b.context->run();
  EXPECT_TRUE(status.ok()) << status.message();
  return status;
}

TEST(GpuExecution, RunsASimtStep) {
  SKIP_WITHOUT_GPU();
  for (uint32_t n : {1u, 128u, 1000u, 100000u}) {
    SCOPED_TRACE(n);
    // No tc variant: a forced tc takes the simt one.
    for (tessel_tier_t tier : {TESSEL_TIER_SIMT, TESSEL_TIER_AUTO, TESSEL_TIER_TC}) {
      if (tier == TESSEL_TIER_TC && !Driver::get().devices()[0].tensorCores())
        continue;
      Bound b = create(openSpec(gpuAddSpec(n)), tier, n, n);
      ASSERT_TRUE(b.context);
      EXPECT_STREQ(b.context->tier(), "simt");
      EXPECT_EQ(b.context->selection().steps[0].kernel, "tessel_test_add");
      ASSERT_TRUE(run(b).ok());
      EXPECT_EQ(b.y, gpuAddExpected(b.x));
    }
  }
}

// Without a GPU: the engine with workspace arguments verifies, and its cpu
// variants compute what the GPU test below expects.
TEST(GpuEngines, TheWorkspaceEngineVerifiesAndRunsOnTheCpu) {
  Bound b = create(openSpec(gpuWorkspaceSpec(1000)), TESSEL_TIER_CPU, 1000, 3);
  ASSERT_TRUE(b.context);
  ASSERT_TRUE(run(b).ok());
  EXPECT_EQ(b.y, gpuChainExpected(b.x));
}

TEST(GpuExecution, LaunchesShareTheContextsWorkspace) {
  SKIP_WITHOUT_GPU();
  for (uint32_t n : {1000u, 100000u}) {
    SCOPED_TRACE(n);
    Bound b = create(openSpec(gpuWorkspaceSpec(n)), TESSEL_TIER_SIMT, n, 3);
    ASSERT_TRUE(b.context);
    EXPECT_STREQ(b.context->tier(), "simt");
    // Step by step, captured, replayed: the workspace's address is fixed.
    for (int round = 0; round < 3; ++round) {
      std::fill(b.y.begin(), b.y.end(), 0.0f);
      ASSERT_TRUE(run(b).ok());
      EXPECT_EQ(b.y, gpuChainExpected(b.x));
    }
  }
}

// A device allocation that fails (the fault hook fails the nth cuMemAlloc
// as a full device would): the engine's constants (the first allocation of
// a fresh engine) and a context's arena (the second). A forced GPU tier
// reports TESSEL_OUT_OF_MEMORY naming the allocation; AUTO falls back to the
// cpu tier; and the process goes on creating GPU contexts that compute the
// right values (issue 17).
TEST(GpuFaults, AFailedDeviceAllocationIsOutOfMemoryAndRecoverable) {
  SKIP_WITHOUT_GPU();
  const uint32_t n = 1000;
  struct Case {
    int nth;
    const char *allocation;
  };
  for (Case c : {Case{1, "-byte constants on "}, Case{2, "-byte arena and graph inputs/outputs"}}) {
    SCOPED_TRACE(c.allocation);
    auto engine = openSpec(gpuAddSpec(n)); // its own bytes: a fresh device engine
    std::unique_ptr<Context> context;
    rt::gpu::failDeviceAllocation(c.nth);
    Status status = Context::create(engine, TESSEL_TIER_SIMT, context);
    rt::gpu::failDeviceAllocation(0);
    EXPECT_EQ(status.code(), TESSEL_OUT_OF_MEMORY) << status.message();
    EXPECT_TRUE(contains(status.message(), c.allocation)) << status.message();
    EXPECT_TRUE(contains(status.message(), "CUDA_ERROR_OUT_OF_MEMORY")) << status.message();
    EXPECT_EQ(context, nullptr);

    rt::gpu::failDeviceAllocation(c.nth);
    Bound fallback = create(engine, TESSEL_TIER_AUTO, n, 7);
    rt::gpu::failDeviceAllocation(0);
    ASSERT_TRUE(fallback.context);
    EXPECT_STREQ(fallback.context->tier(), "cpu");
    ASSERT_TRUE(run(fallback).ok());
    EXPECT_EQ(fallback.y, gpuAddExpected(fallback.x));

    // Nothing is left half set up: the same engine and a new one get GPU
    // contexts again.
    for (auto e : {engine, openSpec(gpuAddSpec(n))}) {
      Bound b = create(e, TESSEL_TIER_SIMT, n, 9);
      ASSERT_TRUE(b.context);
      EXPECT_STREQ(b.context->tier(), "simt");
      ASSERT_TRUE(run(b).ok());
      EXPECT_EQ(b.y, gpuAddExpected(b.x));
    }
  }
}

TEST(GpuExecution, ContextsShareTheEngineOnTheDevice) {
  SKIP_WITHOUT_GPU();
  auto engine = openSpec(gpuChainSpec(5000));
  Bound first = create(engine, TESSEL_TIER_SIMT, 5000, 1);
  Bound second = create(engine, TESSEL_TIER_SIMT, 5000, 2);
  ASSERT_TRUE(first.context && second.context);
  for (int round = 0; round < 3; ++round) {
    ASSERT_TRUE(run(first).ok());
    ASSERT_TRUE(run(second).ok());
    EXPECT_EQ(first.y, gpuChainExpected(first.x));
    EXPECT_EQ(second.y, gpuChainExpected(second.x));
  }
  first.context.reset(); // the second keeps the shared constants and modules
  std::fill(second.y.begin(), second.y.end(), 0.0f);
  ASSERT_TRUE(run(second).ok());
  EXPECT_EQ(second.y, gpuChainExpected(second.x));
}

TEST(GpuExecution, MixedStepsGoThroughTheHost) {
  SKIP_WITHOUT_GPU();
  const uint32_t n = 1000;
  Bound b = create(openSpec(gpuMixedSpec(n)), TESSEL_TIER_AUTO, n, 5);
  ASSERT_TRUE(b.context);
  EXPECT_STREQ(b.context->tier(), "mixed");
  EXPECT_STREQ(b.context->tierSummary(), "mixed: 2 simt, 1 cpu");
  EXPECT_EQ(b.context->selection().steps[1].tier, "cpu");
  for (uint32_t seed : {5u, 6u, 7u}) {
    refill(b.x, seed);
    ASSERT_TRUE(run(b).ok());
    EXPECT_EQ(b.y, gpuMixedExpected(b.x)) << "seed " << seed;
    EXPECT_FALSE(b.context->replaysGraph()); // host steps: never a graph
  }
}

TEST(GpuExecution, ReplaysACudaGraph) {
  SKIP_WITHOUT_GPU();
  const uint32_t n = 3000;
  Bound b = create(openSpec(gpuChainSpec(n)), TESSEL_TIER_SIMT, n, 11);
  ASSERT_TRUE(b.context);
  std::vector<std::vector<float>> results;
  for (int i = 0; i < 3; ++i) {
    std::fill(b.y.begin(), b.y.end(), -1.0f);
    ASSERT_TRUE(run(b).ok()) << "run " << i;
    results.push_back(b.y);
    // Run 1 launches step by step, run 2 captures and launches the graph,
    // run 3 replays it.
    EXPECT_EQ(b.context->replaysGraph(), i >= 1) << "after run " << i;
  }
  EXPECT_EQ(results[0], gpuChainExpected(b.x));
  EXPECT_EQ(results[1], results[0]);
  EXPECT_EQ(results[2], results[0]);

  // The graph holds the launches, not the copies: new input values and a
  // rebound output buffer take effect on the next replay.
  refill(b.x, 12);
  std::vector<float> other(n, -1.0f);
  ASSERT_TRUE(b.context->bindOutput(0, other.data(), n * 4).ok());
  ASSERT_TRUE(run(b).ok());
  EXPECT_EQ(other, gpuChainExpected(b.x));
  EXPECT_EQ(b.y, results[0]); // the old output buffer is left alone
}

TEST(GpuExecution, TesselCudaGraphZeroLaunchesStepByStep) {
  SKIP_WITHOUT_GPU();
  setenv("TESSEL_CUDA_GRAPH", "0", 1);
  Bound b = create(openSpec(gpuChainSpec(1000)), TESSEL_TIER_SIMT, 1000, 13);
  unsetenv("TESSEL_CUDA_GRAPH");
  ASSERT_TRUE(b.context);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(run(b).ok());
    EXPECT_EQ(b.y, gpuChainExpected(b.x));
    EXPECT_FALSE(b.context->replaysGraph());
  }
}

TEST(GpuExecution, DynamicSharedMemoryAbove48KiB) {
  SKIP_WITHOUT_GPU();
  const rt::gpu::DeviceInfo &d = Driver::get().devices()[0];
  if (d.ccMajor < 7)
    GTEST_SKIP() << d.arch() << " has no more than 48 KiB of shared memory per block";
  const uint32_t n = 1000, shared = 64 * 1024;
  Bound b = create(openSpec(gpuSharedCopySpec(n, shared)), TESSEL_TIER_SIMT, n, 17);
  ASSERT_TRUE(b.context);
  EXPECT_STREQ(b.context->tier(), "simt");
  for (int i = 0; i < 3; ++i) { // eager, captured, replayed
    std::fill(b.y.begin(), b.y.end(), 0.0f);
    ASSERT_TRUE(run(b).ok());
    EXPECT_EQ(b.y, b.x);
  }
}

TEST(GpuExecution, ABadPtxIsReportedWithTheJitLog) {
  SKIP_WITHOUT_GPU();
  EngineSpec spec = gpuMixedSpec(100);
  spec.modules[0].images = {ptxImage(60, ".version 7.0\n.target sm_60\n.address_size 64\n"
                                         "this is not PTX;\n")};
  auto engine = openSpec(spec);
  std::unique_ptr<Context> context;
  Status s = Context::create(engine, TESSEL_TIER_SIMT, context);
  std::printf("forced simt: %s\n", s.message().c_str());
  EXPECT_EQ(s.code(), TESSEL_UNSUPPORTED);
  EXPECT_EQ(s.message().rfind("module 0 'test_kernels': loading its PTX (target sm_60) on ", 0),
            0u)
      << s.message();
  EXPECT_TRUE(contains(s.message(), "failed: CUDA_ERROR_INVALID_PTX")) << s.message();
  EXPECT_TRUE(contains(s.message(), "; the driver's JIT log: ")) << s.message();
  EXPECT_EQ(context, nullptr);

  // AUTO drops the module: its steps run on the cpu tier, correctly.
  Bound b = create(engine, TESSEL_TIER_AUTO, 100, 19);
  ASSERT_TRUE(b.context);
  EXPECT_STREQ(b.context->tier(), "cpu");
  EXPECT_EQ(b.context->selection().steps[0].reason,
            "simt: module 'test_kernels' failed to load");
  ASSERT_TRUE(run(b).ok());
  EXPECT_EQ(b.y, gpuMixedExpected(b.x));
}

// A fault poisons the process's CUDA context, so each case runs in a fresh
// child process (the death-test machinery re-executes this binary).
[[noreturn]] void faultChild(bool syncEachStep) {
  if (syncEachStep)
    setenv("TESSEL_GPU_SYNC", "1", 1);
  std::string failure;
  EngineSpec spec = gpuChainSpec(1 << 20);
  spec.steps[1].variants[0].launches[0].args[0] = nullArg(); // u = null + t
  Bound b = create(openSpec(spec), TESSEL_TIER_SIMT, 1 << 20, 23);
  if (!b.context) {
    failure = "no context";
  } else {
    Status s = b.context->run();
    std::fprintf(stderr, "run: %s\n", s.message().c_str());
    if (s.ok())
      failure = "the faulting run succeeded";
    else if (!contains(s.message(), "CUDA_ERROR_ILLEGAL_ADDRESS"))
      failure = "no illegal address in: " + s.message();
    else if (syncEachStep &&
             s.message().rfind("step 1 'add' at u(Add) failed on the GPU: "
                               "CUDA_ERROR_ILLEGAL_ADDRESS",
                               0) != 0)
      failure = "not naming step 1: " + s.message();
    else if (!syncEachStep &&
             (s.message().rfind("a GPU kernel failed in steps 0 to ", 0) != 0 ||
              !contains(s.message(), "set TESSEL_GPU_SYNC=1 to name the step")))
      failure = "not naming the steps in flight: " + s.message();
    else if (b.context->run().ok())
      failure = "a run after the fault succeeded";
  }
  std::fprintf(stderr, "%s\n", failure.empty() ? "CHILD OK" : ("CHILD FAILED: " + failure).c_str());
  std::fflush(stderr);
  std::_Exit(failure.empty() ? 0 : 1);
}

TEST(GpuExecution, AKernelFaultNamesTheStepsInFlight) {
  SKIP_WITHOUT_GPU();
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(faultChild(false), ::testing::ExitedWithCode(0), "CHILD OK");
  EXPECT_EXIT(faultChild(true), ::testing::ExitedWithCode(0), "CHILD OK");
}

TEST(GpuExecution, ThroughTheCApi) {
  SKIP_WITHOUT_GPU();
  const uint32_t n = 777;
  std::vector<uint8_t> file = buildEngine(gpuMixedSpec(n));
  tessel_engine_t *engine = nullptr;
  ASSERT_EQ(tessel_engine_open_memory(file.data(), file.size(), &engine), nullptr);
  tessel_context_t *context = nullptr;
  tessel_status_t status = tessel_context_create(engine, nullptr, &context);
  ASSERT_EQ(status, nullptr) << tessel_status_message(status);
  EXPECT_STREQ(tessel_context_tier(context), "mixed");
  EXPECT_STREQ(tessel_context_tier_summary(context), "mixed: 2 simt, 1 cpu");
  tessel_step_info_t info{};
  ASSERT_EQ(tessel_context_step_info(context, 2, &info), nullptr);
  EXPECT_STREQ(info.tier, "simt");
  EXPECT_STREQ(info.kernel, "tessel_test_add");
  EXPECT_STREQ(info.location, "y(Add)");
  std::vector<float> x = testInput(n, 29), y(n);
  ASSERT_EQ(tessel_context_bind_input(context, 0, x.data(), n * 4), nullptr);
  ASSERT_EQ(tessel_context_bind_output(context, 0, y.data(), n * 4), nullptr);
  for (int i = 0; i < 2; ++i) {
    status = tessel_context_run(context);
    ASSERT_EQ(status, nullptr) << tessel_status_message(status);
    EXPECT_EQ(y, gpuMixedExpected(x));
  }
  tessel_context_release(context);
  tessel_engine_release(engine);
}

//===----------------------------------------------------------------------===//
// Device-resident IO, enqueue and per-step profiles, through the C API
//===----------------------------------------------------------------------===//

/// Device memory in device 0's primary context (the one the runtime uses).
class DeviceBuffer {
public:
  explicit DeviceBuffer(size_t bytes) : size(bytes) {
    const auto &cu = Driver::get().api();
    rt::gpu::CUdevice device = 0;
    rt::gpu::CUcontext context = nullptr;
    EXPECT_EQ(cu.cuDeviceGet(&device, 0), 0);
    EXPECT_EQ(cu.cuDevicePrimaryCtxRetain(&context, device), 0);
    EXPECT_EQ(cu.cuCtxSetCurrent(context), 0);
    EXPECT_EQ(cu.cuMemAlloc(&address, bytes), 0);
    EXPECT_EQ(cu.cuDevicePrimaryCtxRelease(device), 0); // the runtime's contexts hold it
  }
  ~DeviceBuffer() { Driver::get().api().cuMemFree(address); }
  void upload(const std::vector<float> &values) {
    ASSERT_EQ(Driver::get().api().cuMemcpyHtoD(address, values.data(), size), 0);
  }
  std::vector<float> download() const {
    std::vector<float> values(size / 4);
    EXPECT_EQ(Driver::get().api().cuMemcpyDtoH(values.data(), address, size), 0);
    return values;
  }
  rt::gpu::CUdeviceptr address = 0;
  size_t size;
};

struct CContext {
  tessel_engine_t *engine = nullptr;
  tessel_context_t *context = nullptr;
  CContext(const EngineSpec &spec, tessel_tier_t tier) {
    std::vector<uint8_t> file = buildEngine(spec);
    EXPECT_EQ(tessel_engine_open_memory(file.data(), file.size(), &engine), nullptr);
    tessel_context_options_t options{tier};
    tessel_status_t status = tessel_context_create(engine, &options, &context);
    EXPECT_EQ(status, nullptr) << tessel_status_message(status);
    tessel_status_free(status);
  }
  ~CContext() {
    tessel_context_release(context);
    tessel_engine_release(engine);
  }
};

#define EXPECT_OK(call)                                                                        \
  do {                                                                                         \
    tessel_status_t status_ = (call);                                                          \
    EXPECT_EQ(status_, nullptr) << #call << ": " << tessel_status_message(status_);            \
    tessel_status_free(status_);                                                               \
  } while (0)

/// TC where the device has Tensor Cores (the test kernels are simt, which a
/// forced tc takes), else SIMT.
tessel_tier_t bestTier() {
  return Driver::get().devices()[0].tensorCores() ? TESSEL_TIER_TC : TESSEL_TIER_SIMT;
}

/// A mixed engine whose cpu-tier steps read the graph input and write the
/// graph output: t = x + c (simt); u = x + t (cpu); v = u + x (simt);
/// y = neg(v) (cpu).
EngineSpec mixedIoSpec(uint32_t n) {
  EngineSpec spec = gpuChainSpec(n); // tensors x, c, y, t, u
  int64_t extent = n;
  spec.tensors.push_back({"v", fb::DType::f32, {extent}, fb::Storage::Arena, spec.arenaSize,
                          TensorSpec::kAutoSize, ""}); // 5
  spec.arenaSize += spec.arenaSize / 2;
  spec.steps[1] = StepSpec{"add", "u(Add)", {0, 3}, {4}, {}}; // cpu: no variants
  spec.steps[2] = StepSpec{"add", "v(Add)", {4, 0}, {5}, {}};
  spec.steps[2].variants = {simtAdd(4, 0, 5, n)};
  spec.steps.push_back(StepSpec{"neg", "y(Neg)", {5}, {2}, {}});
  return spec;
}
std::vector<float> mixedIoExpected(const std::vector<float> &x) {
  std::vector<float> y = gpuAddExpected(x); // t
  for (size_t i = 0; i < x.size(); ++i)
    y[i] = -((x[i] + y[i]) + x[i]);
  return y;
}

TEST(GpuExecution, DeviceBoundIoMatchesHostBoundIo) {
  SKIP_WITHOUT_GPU();
  const uint32_t n = 4099;
  std::vector<float> x = testInput(n, 41), hostY(n, -1.0f);
  CContext hostBound(gpuChainSpec(n), bestTier());
  ASSERT_TRUE(hostBound.context);
  EXPECT_OK(tessel_context_bind_input(hostBound.context, 0, x.data(), n * 4));
  EXPECT_OK(tessel_context_bind_output(hostBound.context, 0, hostY.data(), n * 4));
  EXPECT_OK(tessel_context_run(hostBound.context));
  EXPECT_EQ(hostY, gpuChainExpected(x));

  CContext deviceBound(gpuChainSpec(n), bestTier());
  ASSERT_TRUE(deviceBound.context);
  DeviceBuffer dx(n * 4), dy(n * 4);
  dx.upload(x);
  EXPECT_OK(tessel_context_bind_input_device(deviceBound.context, 0, dx.address, n * 4));
  EXPECT_OK(tessel_context_bind_output_device(deviceBound.context, 0, dy.address, n * 4));
  for (int i = 0; i < 3; ++i) { // step by step, captured, replayed
    std::vector<float> zeros(n, 0.0f);
    dy.upload(zeros);
    EXPECT_OK(tessel_context_run(deviceBound.context));
    EXPECT_EQ(dy.download(), hostY) << "run " << i;
  }

  // Misaligned or null device addresses are refused with the reason.
  tessel_status_t status =
      tessel_context_bind_input_device(deviceBound.context, 0, dx.address + 16, n * 4);
  EXPECT_EQ(tessel_status_code(status), TESSEL_INVALID_ARGUMENT);
  EXPECT_STREQ(tessel_status_message(status),
               "input 0 'x': the device address must be aligned to 256 bytes");
  tessel_status_free(status);
  status = tessel_context_bind_output_device(deviceBound.context, 0, 0, n * 4);
  EXPECT_EQ(tessel_status_code(status), TESSEL_INVALID_ARGUMENT);
  tessel_status_free(status);

  // Back to host buffers: the context's own device buffers again.
  std::vector<float> y(n, -1.0f);
  EXPECT_OK(tessel_context_bind_input(deviceBound.context, 0, x.data(), n * 4));
  EXPECT_OK(tessel_context_bind_output(deviceBound.context, 0, y.data(), n * 4));
  EXPECT_OK(tessel_context_run(deviceBound.context));
  EXPECT_EQ(y, hostY);
}

TEST(GpuExecution, MixedContextsReachDeviceBoundIoThroughTheHost) {
  SKIP_WITHOUT_GPU();
  const uint32_t n = 1000;
  CContext c(mixedIoSpec(n), TESSEL_TIER_AUTO);
  ASSERT_TRUE(c.context);
  EXPECT_STREQ(tessel_context_tier_summary(c.context), "mixed: 2 simt, 2 cpu");
  std::vector<float> x = testInput(n, 43);
  DeviceBuffer dx(n * 4), dy(n * 4);
  dx.upload(x);
  EXPECT_OK(tessel_context_bind_input_device(c.context, 0, dx.address, n * 4));
  EXPECT_OK(tessel_context_bind_output_device(c.context, 0, dy.address, n * 4));
  for (int i = 0; i < 2; ++i) {
    EXPECT_OK(tessel_context_run(c.context));
    EXPECT_EQ(dy.download(), mixedIoExpected(x));
  }
  tessel_status_t status = tessel_context_enqueue(c.context, nullptr);
  EXPECT_EQ(tessel_status_code(status), TESSEL_UNSUPPORTED);
  EXPECT_STREQ(tessel_status_message(status),
               "enqueue needs every step on the GPU, but step 1 'add' at u(Add) runs on the "
               "cpu tier (mixed: 2 simt, 2 cpu); use tessel_context_run");
  tessel_status_free(status);

  // Per-step times: every step, outputs as run() writes them.
  std::vector<double> ms(4, -1.0);
  EXPECT_OK(tessel_context_profile_steps(c.context, ms.data(), ms.size()));
  for (double t : ms)
    EXPECT_GE(t, 0.0);
  EXPECT_EQ(dy.download(), mixedIoExpected(x));
}

TEST(GpuExecution, EnqueuesOnAUserStream) {
  SKIP_WITHOUT_GPU();
  const auto &cu = Driver::get().api();
  const uint32_t n = 70000;
  CContext c(gpuChainSpec(n), bestTier());
  ASSERT_TRUE(c.context);
  DeviceBuffer dx(n * 4), dy(n * 4);
  std::vector<float> x = testInput(n, 47);
  dx.upload(x);
  EXPECT_OK(tessel_context_bind_input_device(c.context, 0, dx.address, n * 4));
  EXPECT_OK(tessel_context_bind_output_device(c.context, 0, dy.address, n * 4));
  rt::gpu::CUstream stream = nullptr;
  ASSERT_EQ(cu.cuStreamCreate(&stream, rt::gpu::CU_STREAM_NON_BLOCKING), 0);
  for (int round = 0; round < 3; ++round) { // step by step, then captured, then replayed
    EXPECT_OK(tessel_context_enqueue(c.context, stream));
    EXPECT_OK(tessel_context_enqueue(c.context, stream));
    ASSERT_EQ(cu.cuStreamSynchronize(stream), 0);
    EXPECT_EQ(dy.download(), gpuChainExpected(x)) << "round " << round;
  }
  // Host bindings: copied on the stream.
  std::vector<float> hx = testInput(n, 48), hy(n, -1.0f);
  EXPECT_OK(tessel_context_bind_input(c.context, 0, hx.data(), n * 4));
  EXPECT_OK(tessel_context_bind_output(c.context, 0, hy.data(), n * 4));
  EXPECT_OK(tessel_context_enqueue(c.context, stream));
  ASSERT_EQ(cu.cuStreamSynchronize(stream), 0);
  EXPECT_EQ(hy, gpuChainExpected(hx));
  // The context's own stream, asked for explicitly, then run(): ordered
  // after the enqueues.
  void *own = nullptr;
  EXPECT_OK(tessel_context_stream(c.context, &own));
  EXPECT_NE(own, nullptr);
  EXPECT_NE(own, static_cast<void *>(stream));
  EXPECT_OK(tessel_context_enqueue(c.context, own));
  EXPECT_OK(tessel_context_run(c.context));
  EXPECT_EQ(hy, gpuChainExpected(hx));
  std::vector<double> ms(3, -1.0);
  EXPECT_OK(tessel_context_profile_steps(c.context, ms.data(), ms.size()));
  for (double t : ms)
    EXPECT_GE(t, 0.0);
  EXPECT_GT(ms[0] + ms[1] + ms[2], 0.0);
  EXPECT_EQ(hy, gpuChainExpected(hx));
  EXPECT_EQ(cu.cuStreamDestroy(stream), 0);
}

// Stream 0 is CUDA's default stream, as everywhere in CUDA: an enqueue on
// it is ordered with the caller's default-stream work. Each round writes a
// new input with a default-stream copy, enqueues on 0 and reads the output
// with a default-stream copy, synchronizing only at the end: on any other
// stream the run would race the copies.
TEST(GpuExecution, StreamZeroIsTheDefaultStream) {
  SKIP_WITHOUT_GPU();
  const auto &cu = Driver::get().api();
  const uint32_t n = 1 << 20;
  CContext c(gpuChainSpec(n), bestTier());
  ASSERT_TRUE(c.context);
  DeviceBuffer dx(n * 4), dy(n * 4);
  EXPECT_OK(tessel_context_bind_input_device(c.context, 0, dx.address, n * 4));
  EXPECT_OK(tessel_context_bind_output_device(c.context, 0, dy.address, n * 4));
  std::vector<std::vector<float>> xs, ys;
  for (int round = 0; round < 4; ++round) { // step by step, captured, replayed
    xs.push_back(testInput(n, 60 + round));
    ys.emplace_back(n, -1.0f);
  }
  for (int round = 0; round < 4; ++round) {
    ASSERT_EQ(cu.cuMemcpyHtoDAsync(dx.address, xs[round].data(), n * 4, nullptr), 0);
    EXPECT_OK(tessel_context_enqueue(c.context, nullptr));
    ASSERT_EQ(cu.cuMemcpyDtoHAsync(ys[round].data(), dy.address, n * 4, nullptr), 0);
  }
  ASSERT_EQ(cu.cuStreamSynchronize(nullptr), 0);
  for (int round = 0; round < 4; ++round)
    EXPECT_EQ(ys[round], gpuChainExpected(xs[round])) << "round " << round;
}

TEST(GpuExecution, RebindingAfterCaptureUsesTheNewBuffers) {
  SKIP_WITHOUT_GPU();
  const uint32_t n = 5000;
  CContext c(gpuChainSpec(n), bestTier());
  ASSERT_TRUE(c.context);
  DeviceBuffer ax(n * 4), ay(n * 4), bx(n * 4), by(n * 4);
  std::vector<float> a = testInput(n, 51), b = testInput(n, 52);
  ax.upload(a);
  bx.upload(b);
  auto bindTo = [&](DeviceBuffer &x, DeviceBuffer &y) {
    EXPECT_OK(tessel_context_bind_input_device(c.context, 0, x.address, n * 4));
    EXPECT_OK(tessel_context_bind_output_device(c.context, 0, y.address, n * 4));
  };
  bindTo(ax, ay);
  for (int i = 0; i < 3; ++i) // the graph is captured on the second
    EXPECT_OK(tessel_context_enqueue(c.context, nullptr));
  EXPECT_OK(tessel_context_run(c.context));
  EXPECT_EQ(ay.download(), gpuChainExpected(a));
  for (int round = 0; round < 2; ++round) {
    std::vector<float> zeros(n, 0.0f);
    by.upload(zeros);
    bindTo(bx, by);
    EXPECT_OK(tessel_context_enqueue(c.context, nullptr));
    EXPECT_OK(tessel_context_enqueue(c.context, nullptr));
    EXPECT_OK(tessel_context_run(c.context));
    EXPECT_EQ(by.download(), gpuChainExpected(b)) << "round " << round;
    ay.upload(zeros);
    bindTo(ax, ay);
    EXPECT_OK(tessel_context_run(c.context));
    EXPECT_EQ(ay.download(), gpuChainExpected(a)) << "round " << round;
  }
}

// The header's promise under load (issue 17): one engine shared by 16
// threads, each running its own contexts 100 times and releasing and
// creating a context every 10 runs (so creation, first runs, graph capture,
// replay and release of different contexts overlap), each thread with its
// own input. Every output must equal, bit for bit, a single-threaded run of
// the same input, which must equal the chain's float reference.
void stressOneEngine(tessel_tier_t tier) {
  const uint32_t n = 4096;
  constexpr int kThreads = 16, kRuns = 100, kRunsPerContext = 10;
  std::vector<uint8_t> file = buildEngine(gpuChainSpec(n));
  tessel_engine_t *engine = nullptr;
  ASSERT_EQ(tessel_engine_open_memory(file.data(), file.size(), &engine), nullptr);
  auto create = [&](tessel_context_t **context) {
    tessel_context_options_t options{tier};
    tessel_status_t status = tessel_context_create(engine, &options, context);
    std::string message = tessel_status_message(status);
    tessel_status_free(status);
    return message;
  };
  auto run = [&](tessel_context_t *context, const std::vector<float> &x,
                 std::vector<float> &y) {
    tessel_status_t status = tessel_context_bind_input(context, 0, x.data(), n * 4);
    if (!status)
      status = tessel_context_bind_output(context, 0, y.data(), n * 4);
    if (!status)
      status = tessel_context_run(context);
    std::string message = tessel_status_message(status);
    tessel_status_free(status);
    return message;
  };
  std::vector<std::vector<float>> inputs, references;
  {
    tessel_context_t *context = nullptr;
    ASSERT_EQ(create(&context), "");
    for (int t = 0; t < kThreads; ++t) {
      inputs.push_back(testInput(n, 1000 + t));
      references.emplace_back(n);
      ASSERT_EQ(run(context, inputs[t], references[t]), "");
      ASSERT_EQ(references[t], gpuChainExpected(inputs[t])) << "thread " << t;
    }
    tessel_context_release(context);
  }
  std::atomic<int> failures{0}, runs{0};
  std::vector<std::string> firstError(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      std::vector<float> y(n);
      tessel_context_t *context = nullptr;
      for (int r = 0; r < kRuns; ++r) {
        if (r % kRunsPerContext == 0) {
          tessel_context_release(context);
          context = nullptr;
          if (std::string error = create(&context); !error.empty()) {
            if (failures++ == 0 || firstError[t].empty())
              firstError[t] = "create: " + error;
            continue;
          }
        }
        std::fill(y.begin(), y.end(), -1.0f);
        std::string error = run(context, inputs[t], y);
        if (!error.empty() || y != references[t]) {
          if (firstError[t].empty())
            firstError[t] = error.empty() ? "run " + std::to_string(r) + ": output differs"
                                          : "run " + std::to_string(r) + ": " + error;
          ++failures;
        }
        ++runs;
      }
      tessel_context_release(context);
    });
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_EQ(runs.load(), kThreads * kRuns);
  EXPECT_EQ(failures.load(), 0);
  for (int t = 0; t < kThreads; ++t)
    EXPECT_EQ(firstError[t], "") << "thread " << t;
  tessel_engine_release(engine);
}

TEST(Concurrency, SixteenThreadsShareOneEngineOnTheCpu) { stressOneEngine(TESSEL_TIER_CPU); }

TEST(Concurrency, SixteenThreadsShareOneEngineOnTheGpu) {
  SKIP_WITHOUT_GPU();
  stressOneEngine(bestTier());
}

} // namespace
} // namespace tessel::test
