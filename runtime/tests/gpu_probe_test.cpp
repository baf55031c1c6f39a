//===- gpu_probe_test.cpp - the CUDA driver probe --------------------------===//
//
// Runs everywhere. Without a CUDA driver (developer machines, CI) the probe
// must report "no CUDA driver" cleanly and every context must land on the cpu
// tier (variant_choice_test.cpp covers the choice itself). A missing or broken driver is simulated with TESSEL_LIBCUDA (a
// nonexistent file, libm.so.6, the toolkit's stub libcuda) in a re-executed
// child process, since the process-wide probe runs once. Tests that need a
// real GPU skip with "GTEST_SKIP: no CUDA driver" when the probe finds none;
// on a GPU machine they check the probed devices, the messages, and that the
// resolved entry points work (allocate, copy, load PTX, launch, time).
//
// Note: this binary links the runtime core statically and libtessel_runtime
// dynamically, so each has its own process-wide probe; every test uses one
// or the other, never both for the same check.
//
//===----------------------------------------------------------------------===//
#include "engine_builder.h"
#include "executor.h"
#include "gpu/driver.h"
#include "gpu/tiers.h"
#include "tessel_runtime.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace tessel::test {
namespace {

using rt::Context;
using rt::Engine;
using rt::Status;
using rt::gpu::DeviceInfo;
using rt::gpu::Driver;

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

DeviceInfo device(int major, int minor, const char *name) {
  DeviceInfo info;
  info.name = name;
  info.ccMajor = major;
  info.ccMinor = minor;
  info.smCount = 132;
  info.memoryBytes = uint64_t(80) << 30;
  return info;
}

//===----------------------------------------------------------------------===//
// Loading a library that is not a working driver (runs everywhere)
//===----------------------------------------------------------------------===//

TEST(GpuDriver, AMissingLibraryIsNoDriver) {
  std::unique_ptr<Driver> driver = Driver::load("/nonexistent/libcuda.so.1");
  EXPECT_FALSE(driver->available());
  EXPECT_EQ(driver->status().code(), TESSEL_UNSUPPORTED);
  EXPECT_EQ(driver->status().message().rfind(
                "no CUDA driver: /nonexistent/libcuda.so.1 not found (dlopen: ", 0),
            0u)
      << driver->status().message();
  EXPECT_TRUE(driver->devices().empty());
  EXPECT_EQ(driver->version(), 0);
  EXPECT_EQ(driver->versionText(), "");
}

TEST(GpuDriver, ALibraryWithoutTheEntryPointsIsReportedNotCalled) {
  std::unique_ptr<Driver> driver = Driver::load("libm.so.6");
  EXPECT_FALSE(driver->available());
  EXPECT_EQ(driver->status().code(), TESSEL_UNSUPPORTED);
  const std::string &message = driver->status().message();
  EXPECT_EQ(message.rfind("no CUDA driver: libm.so.6 lacks ", 0), 0u) << message;
  EXPECT_TRUE(contains(message, "driver API entry points the runtime needs (cuInit, "))
      << message;
  EXPECT_TRUE(contains(message, "it is not the CUDA driver library")) << message;
  EXPECT_TRUE(driver->devices().empty());
  EXPECT_EQ(driver->api().cuInit, nullptr);
}

TEST(GpuDriver, AFileThatIsNotALibraryCannotBeLoaded) {
  char path[] = "/tmp/tessel-not-a-library-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "not an ELF file\n", 16), 16);
  close(fd);
  std::unique_ptr<Driver> driver = Driver::load(path);
  unlink(path);
  EXPECT_FALSE(driver->available());
  EXPECT_EQ(driver->status().message().rfind(
                std::string("no CUDA driver: ") + path + " could not be loaded (dlopen: ", 0),
            0u)
      << driver->status().message();
}

TEST(GpuDriver, TheToolkitStubLibraryFailsCuInit) {
  const char *stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (access(stub, R_OK) != 0)
    GTEST_SKIP() << stub << " not present (no CUDA toolkit)";
  std::unique_ptr<Driver> driver = Driver::load(stub);
  EXPECT_FALSE(driver->available());
  EXPECT_EQ(driver->status().message().rfind("cuInit failed: CUDA_ERROR_STUB_LIBRARY", 0), 0u)
      << driver->status().message();
  EXPECT_TRUE(driver->devices().empty());
}

TEST(GpuDriver, NamesErrorCodesWithoutTheDriver) {
  std::unique_ptr<Driver> driver = Driver::load("/nonexistent/libcuda.so.1");
  EXPECT_EQ(driver->errorText(100), "CUDA_ERROR_NO_DEVICE (error 100)");
  EXPECT_EQ(driver->errorText(12345), "CUDA error 12345");
  EXPECT_TRUE(driver->check(0, "cuInit").ok());
  Status failed = driver->check(2, "cuMemAlloc", TESSEL_OUT_OF_MEMORY);
  EXPECT_EQ(failed.code(), TESSEL_OUT_OF_MEMORY);
  EXPECT_EQ(failed.message(), "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (error 2)");
}

TEST(GpuDriver, DescribesDevices) {
  DeviceInfo h100 = device(9, 0, "NVIDIA H100");
  EXPECT_EQ(h100.arch(), "sm_90");
  EXPECT_EQ(h100.computeCapability(), 90);
  EXPECT_TRUE(h100.tensorCores());
  EXPECT_TRUE(device(7, 0, "V100").tensorCores());
  EXPECT_FALSE(device(6, 1, "GTX 1080").tensorCores());
  EXPECT_EQ(Driver::fake({h100}, 12040)->versionText(), "12.4");
}

//===----------------------------------------------------------------------===//
// The process-wide probe under TESSEL_LIBCUDA, in a fresh child process
//===----------------------------------------------------------------------===//

// The child's checks: an empty string when all hold, else what failed.
using ChildCheck = std::string (*)();

[[noreturn]] void runChild(const char *libcuda, const char *quiet, ChildCheck check) {
  setenv("TESSEL_LIBCUDA", libcuda, 1);
  if (quiet)
    setenv("TESSEL_QUIET", quiet, 1);
  else
    unsetenv("TESSEL_QUIET");
  std::string failure = check();
  std::fprintf(stderr, "%s\n", failure.empty() ? "CHILD OK" : ("CHILD FAILED: " + failure).c_str());
  std::fflush(stderr);
  std::_Exit(failure.empty() ? 0 : 1);
}

/// Runs `body` with fd 2 sent to a temporary file; returns what it printed.
template <typename F> std::string captureStderr(F &&body) {
  std::fflush(stderr);
  FILE *capture = std::tmpfile();
  int saved = dup(2);
  dup2(fileno(capture), 2);
  body();
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  std::string text;
  std::rewind(capture);
  char buffer[512];
  while (size_t n = std::fread(buffer, 1, sizeof(buffer), capture))
    text.append(buffer, n);
  std::fclose(capture);
  return text;
}

size_t countOf(const std::string &text, const std::string &part) {
  size_t count = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1))
    ++count;
  return count;
}

/// Through the C API: the driver status carries `expected`; no devices; AUTO
/// contexts run on cpu and print the reason once (`notices` times in all);
/// forced tc and simt are TESSEL_UNSUPPORTED with the reason.
std::string checkNoDriverThroughTheCApi(const std::string &expected, size_t notices) {
  tessel_status_t status = tessel_driver_status();
  std::string message = tessel_status_message(status);
  tessel_status_code_t code = tessel_status_code(status);
  tessel_status_free(status);
  if (code != TESSEL_UNSUPPORTED || !contains(message, expected))
    return "tessel_driver_status: code " + std::to_string(code) + ", '" + message + "'";
  if (tessel_device_count() != 0)
    return "tessel_device_count is not 0";
  tessel_device_info_t info{};
  status = tessel_device_info(0, &info);
  std::string infoMessage = tessel_status_message(status);
  code = tessel_status_code(status);
  tessel_status_free(status);
  if (code != TESSEL_INVALID_ARGUMENT ||
      infoMessage != "device index 0 is out of range: there is no usable device (" + message + ")")
    return "tessel_device_info(0): '" + infoMessage + "'";

  std::vector<uint8_t> file = buildEngine(sampleSpec());
  tessel_engine_t *engine = nullptr;
  if (tessel_status_t s = tessel_engine_open_memory(file.data(), file.size(), &engine)) {
    tessel_status_free(s);
    return "cannot open the sample engine";
  }
  std::string failure;
  std::string printed = captureStderr([&] {
    for (int i = 0; i < 2 && failure.empty(); ++i) {
      tessel_context_t *context = nullptr;
      if (tessel_status_t s = tessel_context_create(engine, nullptr, &context)) {
        failure = std::string("AUTO context: ") + tessel_status_message(s);
        tessel_status_free(s);
        break;
      }
      if (std::string(tessel_context_tier(context)) != "cpu")
        failure = std::string("AUTO context runs on ") + tessel_context_tier(context);
      tessel_context_release(context);
    }
  });
  if (failure.empty() && countOf(printed, "tessel: " + message + "; using the cpu tier\n") != notices)
    failure = "expected the notice " + std::to_string(notices) + " time(s) on stderr, got '" +
              printed + "'";
  for (tessel_tier_t tier : {TESSEL_TIER_TC, TESSEL_TIER_SIMT}) {
    if (!failure.empty())
      break;
    tessel_context_options_t options{tier};
    tessel_context_t *context = reinterpret_cast<tessel_context_t *>(0x1);
    tessel_status_t s = tessel_context_create(engine, &options, &context);
    std::string forced = tessel_status_message(s);
    if (tessel_status_code(s) != TESSEL_UNSUPPORTED || context != nullptr ||
        !contains(forced, "but this machine has no GPU tier: " + message))
      failure = "forced tier: '" + forced + "'";
    tessel_status_free(s);
  }
  tessel_engine_release(engine);
  return failure;
}

class GpuProbeEnvironment : public ::testing::Test {
protected:
  void SetUp() override {
    // Re-execute the binary for each child: the probe must not have run yet.
    GTEST_FLAG_SET(death_test_style, "threadsafe");
  }
};

TEST_F(GpuProbeEnvironment, ANonexistentLibcudaIsNoDriver) {
  EXPECT_EXIT(runChild("/nonexistent/libcuda.so.1", nullptr,
                       [] {
                         return checkNoDriverThroughTheCApi(
                             "no CUDA driver: /nonexistent/libcuda.so.1 not found "
                             "(TESSEL_LIBCUDA=/nonexistent/libcuda.so.1; dlopen: ",
                             1);
                       }),
              ::testing::ExitedWithCode(0), "CHILD OK");
}

TEST_F(GpuProbeEnvironment, ANonCudaLibraryReportsMissingEntryPoints) {
  EXPECT_EXIT(runChild("libm.so.6", nullptr,
                       [] {
                         if (tessel_driver_version() != 0)
                           return std::string("tessel_driver_version is not 0");
                         return checkNoDriverThroughTheCApi(
                             "no CUDA driver: libm.so.6 lacks ", 1);
                       }),
              ::testing::ExitedWithCode(0), "CHILD OK");
}

TEST_F(GpuProbeEnvironment, QuietSilencesTheNotice) {
  EXPECT_EXIT(runChild("/nonexistent/libcuda.so.1", "1",
                       [] { return checkNoDriverThroughTheCApi("no CUDA driver: ", 0); }),
              ::testing::ExitedWithCode(0), "CHILD OK");
}

TEST_F(GpuProbeEnvironment, TheFirstProbeIsThreadSafe) {
  EXPECT_EXIT(runChild("/nonexistent/libcuda.so.1", "1",
                       [] {
                         // Many threads race to the first probe; all must see
                         // the same result, and the C++ instance is one object.
                         std::vector<std::string> seen(16);
                         std::vector<const Driver *> instances(16);
                         std::vector<std::thread> threads;
                         for (size_t i = 0; i < seen.size(); ++i)
                           threads.emplace_back([&, i] {
                             tessel_status_t s = tessel_driver_status();
                             seen[i] = tessel_status_message(s);
                             tessel_status_free(s);
                             instances[i] = &Driver::get();
                           });
                         for (std::thread &t : threads)
                           t.join();
                         for (size_t i = 0; i < seen.size(); ++i)
                           if (seen[i] != seen[0] || seen[i].empty() ||
                               instances[i] != instances[0])
                             return "thread " + std::to_string(i) + " saw '" + seen[i] + "'";
                         return std::string();
                       }),
              ::testing::ExitedWithCode(0), "CHILD OK");
}

//===----------------------------------------------------------------------===//
// This machine's real driver (or its absence)
//===----------------------------------------------------------------------===//

TEST(GpuProbeThisMachine, WithoutADriverEverythingRunsOnCpu) {
  tessel_status_t status = tessel_driver_status();
  bool present = status == nullptr;
  std::string message = tessel_status_message(status);
  tessel_status_free(status);
  if (present)
    GTEST_SKIP() << "a CUDA driver is present; see GpuProbeThisMachine.ReportsTheDevices";
  EXPECT_TRUE(message.rfind("no CUDA driver: ", 0) == 0 ||
              message.rfind("cuInit failed: ", 0) == 0 ||
              message.rfind("no CUDA device", 0) == 0)
      << message;
  EXPECT_EQ(tessel_device_count(), 0u);
  EXPECT_EQ(message, Driver::get().status().message()); // the C API's probe and the core's

  // The C++ side: contexts created directly.
  auto engine = openSpec(sampleSpec());
  std::unique_ptr<Context> context;
  Status s = Context::create(engine, TESSEL_TIER_AUTO, context);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_STREQ(context->tier(), "cpu");
  context.reset();
  s = Context::create(engine, TESSEL_TIER_TC, context);
  EXPECT_EQ(s.code(), TESSEL_UNSUPPORTED);
  EXPECT_TRUE(contains(s.message(), "this machine has no GPU tier: " +
                                        Driver::get().status().message()))
      << s.message();
  EXPECT_EQ(context, nullptr);
}

// A trivial kernel, PTX ISA 7.0 for sm_70 and newer (the driver JIT-compiles
// it): out[threadIdx.x] = value + threadIdx.x.
const char kFillPtx[] = R"(.version 7.0
.target sm_70
.address_size 64
.visible .entry tessel_probe_fill(.param .u64 out, .param .u32 value)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [value];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r2, %tid.x;
  add.s32 %r3, %r1, %r2;
  mul.wide.u32 %rd3, %r2, 4;
  add.s64 %rd4, %rd2, %rd3;
  st.global.u32 [%rd4], %r3;
  ret;
}
)";

TEST(GpuProbeThisMachine, ReportsTheDevices) {
  const Driver &driver = Driver::get();
  if (!driver.available())
    GTEST_SKIP() << "GTEST_SKIP: no CUDA driver (" << driver.status().message() << ")";

  EXPECT_GT(driver.version(), 0);
  ASSERT_FALSE(driver.devices().empty());
  for (const DeviceInfo &d : driver.devices()) {
    std::printf("device %d: %s, %s, %d SMs, %.1f GiB, Tensor Cores: %s; driver CUDA %s\n",
                d.ordinal, d.name.c_str(), d.arch().c_str(), d.smCount,
                d.memoryBytes / 1073741824.0, d.tensorCores() ? "yes" : "no",
                driver.versionText().c_str());
    EXPECT_FALSE(d.name.empty());
    EXPECT_GE(d.ccMajor, 3);
    EXPECT_GT(d.smCount, 0);
    EXPECT_GT(d.memoryBytes, uint64_t(1) << 28);
  }

  // The C API agrees (its own probe, inside libtessel_runtime).
  tessel_status_t status = tessel_driver_status();
  EXPECT_EQ(status, nullptr) << tessel_status_message(status);
  tessel_status_free(status);
  EXPECT_EQ(tessel_driver_version(), driver.version());
  ASSERT_EQ(tessel_device_count(), driver.devices().size());
  tessel_device_info_t info{};
  ASSERT_EQ(tessel_device_info(0, &info), nullptr);
  const DeviceInfo &d0 = driver.devices()[0];
  EXPECT_EQ(info.name, d0.name);
  EXPECT_EQ(info.compute_capability_major, d0.ccMajor);
  EXPECT_EQ(info.compute_capability_minor, d0.ccMinor);
  EXPECT_EQ(info.sm_count, d0.smCount);
  EXPECT_EQ(info.memory_bytes, d0.memoryBytes);
  EXPECT_EQ(info.tensor_cores, d0.ccMajor >= 7 ? 1 : 0);
  status = tessel_device_info(driver.devices().size(), &info);
  EXPECT_EQ(tessel_status_code(status), TESSEL_INVALID_ARGUMENT);
  tessel_status_free(status);

  // Tier choice: AUTO runs a cpu-only engine on cpu and says why.
  auto engine = openSpec(sampleSpec());
  rt::gpu::TierPlan plan;
  ASSERT_TRUE(rt::gpu::planTiers(*engine, driver, TESSEL_TIER_AUTO, plan).ok());
  EXPECT_EQ(plan.notice, "GPU " + d0.arch() + " (" + d0.name +
                             ") found, but this engine has no GPU kernels; using the cpu tier");
  std::unique_ptr<Context> context;
  Status s = Context::create(engine, TESSEL_TIER_AUTO, context);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_STREQ(context->tier(), "cpu");
  context.reset();
  // A forced tier bounds each step's tier; this engine's steps are all cpu.
  s = Context::create(engine, TESSEL_TIER_SIMT, context);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_STREQ(context->tier(), "cpu");
}

TEST(GpuProbeThisMachine, TheResolvedEntryPointsWork) {
  const Driver &driver = Driver::get();
  if (!driver.available())
    GTEST_SKIP() << "GTEST_SKIP: no CUDA driver (" << driver.status().message() << ")";
  const rt::gpu::DriverApi &cu = driver.api();
  auto ok = [&](rt::gpu::CUresult r, const char *what) {
    Status s = driver.check(r, what);
    EXPECT_TRUE(s.ok()) << s.message();
    return s.ok();
  };
  rt::gpu::CUdevice dev = 0;
  rt::gpu::CUcontext ctx = nullptr;
  ASSERT_TRUE(ok(cu.cuDeviceGet(&dev, 0), "cuDeviceGet"));
  ASSERT_TRUE(ok(cu.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain"));
  ASSERT_TRUE(ok(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent"));

  rt::gpu::CUmodule module = nullptr;
  rt::gpu::CUfunction fill = nullptr;
  rt::gpu::CUstream stream = nullptr;
  rt::gpu::CUevent start = nullptr, stop = nullptr;
  rt::gpu::CUdeviceptr buffer = 0;
  constexpr unsigned kThreads = 256;
  if (ok(cu.cuModuleLoadData(&module, kFillPtx), "cuModuleLoadData") &&
      ok(cu.cuModuleGetFunction(&fill, module, "tessel_probe_fill"), "cuModuleGetFunction") &&
      ok(cu.cuMemAlloc(&buffer, kThreads * 4), "cuMemAlloc") &&
      ok(cu.cuStreamCreate(&stream, 0), "cuStreamCreate") &&
      ok(cu.cuEventCreate(&start, 0), "cuEventCreate") &&
      ok(cu.cuEventCreate(&stop, 0), "cuEventCreate")) {
    std::vector<uint32_t> host(kThreads, 0xdeadbeef);
    ok(cu.cuMemcpyHtoD(buffer, host.data(), host.size() * 4), "cuMemcpyHtoD");
    uint32_t value = 1000;
    void *params[] = {&buffer, &value};
    ok(cu.cuEventRecord(start, stream), "cuEventRecord");
    ok(cu.cuLaunchKernel(fill, 1, 1, 1, kThreads, 1, 1, 0, stream, params, nullptr),
       "cuLaunchKernel");
    ok(cu.cuEventRecord(stop, stream), "cuEventRecord");
    ok(cu.cuStreamSynchronize(stream), "cuStreamSynchronize");
    float ms = -1;
    ok(cu.cuEventElapsedTime(&ms, start, stop), "cuEventElapsedTime");
    EXPECT_GE(ms, 0.0f);
    ok(cu.cuMemcpyDtoH(host.data(), buffer, host.size() * 4), "cuMemcpyDtoH");
    for (unsigned i = 0; i < kThreads; ++i)
      ASSERT_EQ(host[i], 1000 + i) << "at " << i;
  }
  // An error comes back named.
  rt::gpu::CUfunction missing = nullptr;
  if (module) {
    Status s = driver.check(cu.cuModuleGetFunction(&missing, module, "no_such_kernel"),
                            "cuModuleGetFunction");
    EXPECT_EQ(s.message().rfind("cuModuleGetFunction failed: CUDA_ERROR_NOT_FOUND (", 0), 0u)
        << s.message();
  }
  if (start) cu.cuEventDestroy(start);
  if (stop) cu.cuEventDestroy(stop);
  if (stream) cu.cuStreamDestroy(stream);
  if (buffer) cu.cuMemFree(buffer);
  if (module) cu.cuModuleUnload(module);
  ok(cu.cuDevicePrimaryCtxRelease(dev), "cuDevicePrimaryCtxRelease");
}

} // namespace
} // namespace tessel::test
