//===- tessel-bench.cpp - time engines on the GPU, or on the host ---------===//
//
// tessel-bench ENGINE... [--tier auto|tc|simt|cpu] [--warmup N] [--iterations N]
//              [--rotate auto|N] [--no-graph] [--flops F] [--label S]
//              [--json FILE] [--per-step]
//
// For each engine, in one process: opens it, creates a context on the tier
// and times it.
//   - Every step on the GPU ("timing": "cuda-events"): inputs and outputs
//     live in device memory (random inputs in the engine's dtypes), bound
//     with tessel_context_bind_*_device, so that only the GPU work is timed.
//     After the warm-up, each iteration is one tessel_context_enqueue between
//     a pair of CUDA events on one stream, waited for with
//     cudaEventSynchronize. From a context's second run on, the enqueue
//     launches a captured CUDA graph (--no-graph: step by step, as
//     TESSEL_CUDA_GRAPH=0). The warm-up runs each rotated context at least
//     twice, so that the timed iterations replay graphs.
//   - Otherwise ("timing": "host"): tessel_context_run on host buffers, timed
//     with a steady clock (copies and CPU steps included); the output says
//     so.
// Rotation: --rotate auto makes as many contexts (each with its own input
// and output buffers) as it takes for their input+output bytes to exceed
// twice the device's L2 cache, so that no iteration finds its inputs in L2
// from the last one (at most 32 contexts and about 8 GiB of buffers and
// arenas; 1 when one set is already larger); --rotate N makes N. Iteration i
// runs context i % N. The weights are shared and not rotated. Host timing
// uses one context.
// Figures: median, min, max and mean milliseconds per run. FLOPs are
// 2*M*N*K summed over the conv, gemm and matmul steps (from the engine's
// shapes; --flops F overrides); TFLOP/s = FLOPs / median. Bytes are the
// inputs, outputs and constants (weights) of the engine; GB/s = bytes /
// median (a lower bound on the memory traffic).
// --per-step adds each step's median time over --iterations runs of
// tessel_context_profile_steps (step by step, never a graph: the sum is
// above a graph replay's time).
// --json FILE writes a JSON array, one object per engine:
//   engine, label, device, compute_capability, tier_summary, timing
//   ("cuda-events" or "host"), graph (CUDA graph replay enabled), warmup,
//   iterations, rotation, median_ms, min_ms, max_ms, mean_ms, flops (null
//   when unknown), tflops, bytes, gbps, and with --per-step steps: [{index,
//   op, location, tier, kernel, median_ms}]. An engine that fails gets
//   {engine, label, error} and the others still run.
// --flops and --label apply to a single engine only.
// Exit status: 0 every engine timed; 1 one or more failed (a bad engine
// file, no GPU for --tier tc or simt, a failed run); 2 usage.
//
// An application of the public API: libtessel_runtime for the runs, the
// engine format library for what the C API does not say (step shapes for
// FLOPs, the constants' size; tessel_engine_file), and the CUDA runtime
// (static, as an application would use it) for device memory, streams and
// events, on device 0's primary context, which the runtime shares.
//
//===----------------------------------------------------------------------===//
#include "ToolMain.h"
#include "Json.h"
#include "TensorFiles.h"
#include "TierOption.h"
#include "tessel/engine_format.h"
#include "tessel_runtime.h"

#include <CLI/CLI.hpp>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace tessel;

enum Exit { kOk = 0, kFailed = 1, kUsage = 2 };

constexpr size_t kMaxRotation = 32;
constexpr uint64_t kMaxRotationBytes = uint64_t(8) << 30;

struct Options {
  tessel_tier_t tier = TESSEL_TIER_AUTO;
  int warmup = 10, iterations = 100;
  std::string rotate = "auto";
  bool graph = true, perStep = false;
  std::optional<double> flops;
  std::string label;
  size_t profile = 0; // the batch profile (tessel-compile --batch)
};

struct Stats {
  double median = 0, min = 0, max = 0, mean = 0;
};

Stats summarize(std::vector<double> ms) {
  Stats s;
  if (ms.empty())
    return s;
  std::sort(ms.begin(), ms.end());
  size_t n = ms.size();
  s.median = n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
  s.min = ms.front();
  s.max = ms.back();
  s.mean = std::accumulate(ms.begin(), ms.end(), 0.0) / double(n);
  return s;
}

struct StepResult {
  std::string op, location, tier, kernel;
  double medianMs = 0;
};

struct Result {
  std::string engine, label, error;
  std::string device, computeCapability, tierSummary, timing;
  bool graph = false;
  int warmup = 0, iterations = 0;
  size_t rotation = 1;
  Stats stats;
  std::optional<double> flops;
  uint64_t bytes = 0;
  std::vector<StepResult> steps;
};

/// What tessel_runtime's C API reports as an error, turned into a string.
struct Failure {
  std::string message;
};

void check(tessel_status_t status, const std::string &what) {
  if (!status)
    return;
  std::string message = what + ": " + tessel_status_message(status);
  tessel_status_free(status);
  throw Failure{message};
}

void checkCuda(cudaError_t result, const char *what) {
  if (result != cudaSuccess)
    throw Failure{std::string(what) + " failed: " + cudaGetErrorName(result) + " (" +
                  cudaGetErrorString(result) + ")"};
}

using EnginePtr = std::unique_ptr<tessel_engine_t, decltype(&tessel_engine_release)>;
using ContextPtr = std::unique_ptr<tessel_context_t, decltype(&tessel_context_release)>;

/// Device memory from cudaMalloc (256-byte aligned, as the runtime asks).
class DeviceMemory {
public:
  explicit DeviceMemory(size_t bytes) {
    void *pointer = nullptr;
    checkCuda(cudaMalloc(&pointer, bytes ? bytes : 1), "cudaMalloc");
    address = reinterpret_cast<uint64_t>(pointer);
  }
  DeviceMemory(const DeviceMemory &) = delete;
  DeviceMemory &operator=(const DeviceMemory &) = delete;
  ~DeviceMemory() { cudaFree(reinterpret_cast<void *>(address)); }
  uint64_t address = 0;
};

/// Device 0 with its primary context created and current on this thread:
/// the context the runtime uses, so that its contexts take our addresses and
/// stream.
class CudaDevice {
public:
  CudaDevice() {
    checkCuda(cudaSetDevice(0), "cudaSetDevice(0)");
    checkCuda(cudaFree(nullptr), "initializing device 0");
  }
  int l2Bytes() const {
    int bytes = 0;
    checkCuda(cudaDeviceGetAttribute(&bytes, cudaDevAttrL2CacheSize, 0),
              "cudaDeviceGetAttribute(L2 cache size)");
    return bytes;
  }
};

class Stream {
public:
  Stream() { checkCuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate"); }
  Stream(const Stream &) = delete;
  Stream &operator=(const Stream &) = delete;
  ~Stream() {
    cudaStreamSynchronize(stream);
    cudaStreamDestroy(stream);
  }
  cudaStream_t stream = nullptr;
};

class Event {
public:
  Event() { checkCuda(cudaEventCreate(&event), "cudaEventCreate"); }
  Event(const Event &) = delete;
  Event &operator=(const Event &) = delete;
  ~Event() { cudaEventDestroy(event); }
  cudaEvent_t event = nullptr;
};

int64_t numElements(const engine::Tensor *t) {
  int64_t n = 1;
  if (t->shape())
    for (int64_t d : *t->shape())
      n *= d;
  return n;
}

int64_t intAttr(const engine::Step *step, const char *name, int64_t otherwise) {
  if (step->attrs())
    for (const engine::Attr *a : *step->attrs())
      if (a->kind() == engine::AttrKind::Int && a->name() && a->name()->str() == name)
        return a->i();
  return otherwise;
}

/// 2*M*N*K over the conv, gemm and matmul steps: 2 * (result elements) *
/// (the reduction length). nullopt when the engine has none.
std::optional<double> engineFlops(const engine::Engine *fb) {
  if (!fb->steps() || !fb->tensors())
    return std::nullopt;
  double flops = 0;
  bool any = false;
  for (const engine::Step *step : *fb->steps()) {
    std::string op = step->op() ? step->op()->str() : "";
    if (op != "conv" && op != "gemm" && op != "matmul")
      continue;
    if (!step->inputs() || step->inputs()->size() < 2 || !step->outputs() ||
        step->outputs()->size() < 1 || step->inputs()->Get(0) < 0 || step->inputs()->Get(1) < 0)
      continue;
    const engine::Tensor *a = fb->tensors()->Get(step->inputs()->Get(0));
    const engine::Tensor *b = fb->tensors()->Get(step->inputs()->Get(1));
    const engine::Tensor *out = fb->tensors()->Get(step->outputs()->Get(0));
    if (!a->shape() || !b->shape() || a->shape()->size() == 0 || b->shape()->size() == 0)
      continue;
    double reduction = 0;
    if (op == "conv") // weight M x (C/group) x kernel, in either layout
      reduction = double(numElements(b)) / double(std::max<int64_t>(b->shape()->Get(0), 1));
    else if (op == "gemm")
      reduction = double(a->shape()->Get(intAttr(step, "transA", 0) ? 0 : 1));
    else
      reduction = double(a->shape()->Get(a->shape()->size() - 1));
    flops += 2.0 * double(numElements(out)) * reduction;
    any = true;
  }
  return any ? std::optional<double>(flops) : std::nullopt;
}

std::vector<tessel_tensor_info_t> tensorInfos(const tessel_engine_t *engine, bool inputs) {
  size_t count = inputs ? tessel_engine_input_count(engine) : tessel_engine_output_count(engine);
  std::vector<tessel_tensor_info_t> infos(count);
  for (size_t i = 0; i < count; ++i)
    check(inputs ? tessel_engine_input_info(engine, i, &infos[i])
                 : tessel_engine_output_info(engine, i, &infos[i]),
          inputs ? "input info" : "output info");
  return infos;
}

/// Random input values at any size for little host time: kPoolElements
/// values per dtype drawn once by tools::fillRandom, then laid down from a
/// moving offset, the pool repeated. Drawing every element took seconds per
/// engine (DeepBench's 500000-deep GEMMs have 1 GB of inputs); timing needs
/// realistic values, not that much entropy.
class RandomInputs {
public:
  /// Calls write(bytes, offset, count) over `info.size_bytes` bytes.
  template <typename Write> void fill(const tessel_tensor_info_t &info, Write write) {
    const size_t width = tessel_dtype_size(info.dtype);
    const std::vector<uint8_t> &values = pool(info.dtype);
    size_t from = (next++ * kStride % kPoolElements) * width;
    for (size_t done = 0; done < info.size_bytes; from = 0) {
      size_t count = std::min(values.size() - from, size_t(info.size_bytes) - done);
      write(values.data() + from, done, count);
      done += count;
    }
  }

  tools::HostTensor tensor(const tessel_tensor_info_t &info) {
    tools::HostTensor t;
    t.dtype = info.dtype;
    t.shape.assign(info.shape, info.shape + info.rank);
    t.data.resize(info.size_bytes);
    fill(info, [&](const uint8_t *bytes, size_t offset, size_t count) {
      std::memcpy(t.data.data() + offset, bytes, count);
    });
    return t;
  }

private:
  static constexpr size_t kPoolElements = size_t(1) << 22;
  static constexpr size_t kStride = 1000003; // a prime: each tensor starts elsewhere

  const std::vector<uint8_t> &pool(tessel_dtype_t dtype) {
    std::vector<uint8_t> &values = pools[dtype];
    if (values.empty()) {
      tools::HostTensor t;
      t.dtype = dtype;
      t.shape = {int64_t(kPoolElements)};
      t.data.resize(kPoolElements * tessel_dtype_size(dtype));
      tools::fillRandom(t, rng);
      values = std::move(t.data);
    }
    return values;
  }

  std::mt19937_64 rng{1};
  std::map<tessel_dtype_t, std::vector<uint8_t>> pools;
  size_t next = 0;
};

ContextPtr createContext(const tessel_engine_t *engine, tessel_tier_t tier) {
  tessel_context_options_t options{tier};
  tessel_context_t *raw = nullptr;
  check(tessel_context_create(engine, &options, &raw), "cannot create a context");
  return ContextPtr(raw, tessel_context_release);
}

double elapsedMs(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

/// Per-step medians of `iterations` profiles of `context`.
std::vector<StepResult> profileSteps(tessel_context_t *context, int iterations) {
  size_t count = tessel_context_step_count(context);
  std::vector<std::vector<double>> times(count);
  std::vector<double> ms(count);
  for (int i = 0; i < iterations; ++i) {
    check(tessel_context_profile_steps(context, ms.data(), count), "profile");
    for (size_t s = 0; s < count; ++s)
      times[s].push_back(ms[s]);
  }
  std::vector<StepResult> steps(count);
  for (size_t s = 0; s < count; ++s) {
    tessel_step_info_t info;
    check(tessel_context_step_info(context, s, &info), "step info");
    steps[s] = {info.op, info.location, info.tier, info.kernel, summarize(times[s]).median};
  }
  return steps;
}

bool allOnGpu(const tessel_context_t *context) {
  size_t count = tessel_context_step_count(context);
  for (size_t s = 0; s < count; ++s) {
    tessel_step_info_t info;
    check(tessel_context_step_info(context, s, &info), "step info");
    if (std::string(info.tier) == "cpu")
      return false;
  }
  return count > 0;
}

void timeOnHost(tessel_context_t *context, const tessel_engine_t *engine, const Options &o,
                Result &r) {
  RandomInputs random;
  std::vector<tools::HostTensor> inputs, outputs;
  std::vector<tessel_tensor_info_t> inInfos = tensorInfos(engine, true);
  std::vector<tessel_tensor_info_t> outInfos = tensorInfos(engine, false);
  for (size_t i = 0; i < inInfos.size(); ++i) {
    inputs.push_back(random.tensor(inInfos[i]));
    check(tessel_context_bind_input(context, i, inputs[i].data.data(), inputs[i].data.size()),
          "bind input");
  }
  for (size_t i = 0; i < outInfos.size(); ++i) {
    outputs.emplace_back();
    outputs[i].data.resize(outInfos[i].size_bytes);
    check(tessel_context_bind_output(context, i, outputs[i].data.data(), outInfos[i].size_bytes),
          "bind output");
  }
  for (int i = 0; i < o.warmup; ++i)
    check(tessel_context_run(context), "run");
  std::vector<double> ms;
  for (int i = 0; i < o.iterations; ++i) {
    auto start = std::chrono::steady_clock::now();
    check(tessel_context_run(context), "run");
    ms.push_back(elapsedMs(start));
  }
  r.timing = "host";
  r.warmup = o.warmup;
  r.rotation = 1;
  r.stats = summarize(ms);
  if (o.perStep)
    r.steps = profileSteps(context, o.iterations);
}

/// One rotated context and the device buffers bound to it (declared first,
/// so that they outlive the context).
struct Rotated {
  std::vector<std::unique_ptr<DeviceMemory>> buffers;
  ContextPtr context{nullptr, tessel_context_release};
};

size_t rotationCount(const Options &o, uint64_t ioBytes, uint64_t arenaBytes, int l2Bytes) {
  if (o.rotate != "auto")
    return size_t(std::stoul(o.rotate));
  if (ioBytes == 0)
    return 1;
  uint64_t wanted = 2 * uint64_t(std::max(l2Bytes, 0));
  size_t count = ioBytes > wanted ? 1 : size_t(wanted / ioBytes + 1);
  count = std::min(count, kMaxRotation);
  uint64_t perContext = ioBytes + arenaBytes;
  if (perContext)
    count = std::min<size_t>(count, std::max<uint64_t>(kMaxRotationBytes / perContext, 1));
  return std::max<size_t>(count, 1);
}

void timeOnGpu(ContextPtr first, const tessel_engine_t *engine, uint64_t arenaBytes,
               const CudaDevice &primary, const Options &o, Result &r) {
  std::vector<tessel_tensor_info_t> inInfos = tensorInfos(engine, true);
  std::vector<tessel_tensor_info_t> outInfos = tensorInfos(engine, false);
  uint64_t ioBytes = 0;
  for (const auto *infos : {&inInfos, &outInfos})
    for (const tessel_tensor_info_t &info : *infos)
      ioBytes += info.size_bytes;
  size_t count = rotationCount(o, ioBytes, arenaBytes, primary.l2Bytes());

  std::vector<Rotated> rotated(count);
  rotated[0].context = std::move(first);
  RandomInputs random;
  for (size_t c = 0; c < count; ++c) {
    Rotated &set = rotated[c];
    if (!set.context)
      set.context = createContext(engine, o.tier);
    for (size_t i = 0; i < inInfos.size(); ++i) {
      set.buffers.push_back(std::make_unique<DeviceMemory>(inInfos[i].size_bytes));
      uint64_t address = set.buffers.back()->address;
      random.fill(inInfos[i], [&](const uint8_t *bytes, size_t offset, size_t count) {
        checkCuda(cudaMemcpy(reinterpret_cast<void *>(address + offset), bytes, count,
                             cudaMemcpyHostToDevice),
                  "cudaMemcpy");
      });
      check(tessel_context_bind_input_device(set.context.get(), i, address,
                                             inInfos[i].size_bytes),
            "bind input");
    }
    for (size_t i = 0; i < outInfos.size(); ++i) {
      set.buffers.push_back(std::make_unique<DeviceMemory>(outInfos[i].size_bytes));
      check(tessel_context_bind_output_device(set.context.get(), i,
                                              set.buffers.back()->address,
                                              outInfos[i].size_bytes),
            "bind output");
    }
  }

  Stream stream;
  Event start, end;
  // Two runs per context before timing: the first launches step by step,
  // the second captures the graph that the timed ones replay.
  int warmup = std::max<int>(o.warmup, o.graph ? int(2 * count) : 0);
  for (int i = 0; i < warmup; ++i)
    check(tessel_context_enqueue(rotated[size_t(i) % count].context.get(), stream.stream),
          "enqueue");
  checkCuda(cudaStreamSynchronize(stream.stream), "cudaStreamSynchronize after the warm-up");

  std::vector<double> ms;
  for (int i = 0; i < o.iterations; ++i) {
    tessel_context_t *context = rotated[size_t(i) % count].context.get();
    checkCuda(cudaEventRecord(start.event, stream.stream), "cudaEventRecord");
    check(tessel_context_enqueue(context, stream.stream), "enqueue");
    checkCuda(cudaEventRecord(end.event, stream.stream), "cudaEventRecord");
    checkCuda(cudaEventSynchronize(end.event), "cudaEventSynchronize");
    float elapsed = 0;
    checkCuda(cudaEventElapsedTime(&elapsed, start.event, end.event), "cudaEventElapsedTime");
    ms.push_back(elapsed);
  }
  r.timing = "cuda-events";
  r.warmup = warmup;
  r.rotation = count;
  r.stats = summarize(ms);
  if (o.perStep)
    r.steps = profileSteps(rotated[0].context.get(), o.iterations);
}

Result benchmark(const std::string &path, const Options &o,
                 std::unique_ptr<CudaDevice> &primary) {
  Result r;
  r.engine = path;
  r.label = o.label.empty() ? path.substr(path.find_last_of('/') + 1) : o.label;
  r.iterations = o.iterations;
  try {
    tessel_engine_t *raw = nullptr;
    check(tessel_engine_open_file(path.c_str(), &raw), path);
    EnginePtr engine(raw, tessel_engine_release);
    if (o.profile != 0) {
      check(tessel_engine_profile(engine.get(), o.profile, &raw), path);
      engine.reset(raw);
    }
    // The C API says nothing of step shapes or constants: read the engine
    // the runtime verified through the engine format library for those.
    const void *file = nullptr;
    size_t fileSize = 0;
    check(tessel_engine_file(engine.get(), &file, &fileSize), path);
    format::Header header;
    std::memcpy(&header, file, sizeof(header));
    const engine::Engine *fb = format::payload(static_cast<const uint8_t *>(file));
    if (o.profile != 0) // the profile's plan (the runtime verified it exists)
      fb = fb->profiles()->Get(o.profile - 1);
    r.flops = o.flops ? o.flops : engineFlops(fb);
    r.bytes = header.constants_size;
    for (bool inputs : {true, false})
      for (const tessel_tensor_info_t &info : tensorInfos(engine.get(), inputs))
        r.bytes += info.size_bytes;

    ContextPtr context = createContext(engine.get(), o.tier);
    r.tierSummary = tessel_context_tier_summary(context.get());
    bool gpuSteps = std::string(tessel_context_tier(context.get())) != "cpu";
    r.device = "cpu";
    if (gpuSteps) {
      tessel_device_info_t device;
      check(tessel_device_info(0, &device), "device info");
      r.device = device.name;
      r.computeCapability = std::to_string(device.compute_capability_major) + "." +
                            std::to_string(device.compute_capability_minor);
    }
    if (allOnGpu(context.get())) {
      if (!primary)
        primary = std::make_unique<CudaDevice>();
      r.graph = o.graph;
      timeOnGpu(std::move(context), engine.get(), fb->arena_size(), *primary, o, r);
    } else {
      timeOnHost(context.get(), engine.get(), o, r);
    }
  } catch (const Failure &f) {
    r.error = f.message;
  }
  return r;
}

using tools::jsonString;

std::string jsonNumber(double value) {
  if (!std::isfinite(value))
    return "null";
  char text[64];
  std::snprintf(text, sizeof(text), "%.6g", value);
  return text;
}

std::string toJson(const Result &r) {
  std::string j = "{\"engine\": " + jsonString(r.engine) + ", \"label\": " + jsonString(r.label);
  if (!r.error.empty())
    return j + ", \"error\": " + jsonString(r.error) + "}";
  auto rate = [&](std::optional<double> amount, double scale) {
    return amount && r.stats.median > 0 ? jsonNumber(*amount / (r.stats.median * 1e-3) / scale)
                                        : std::string("null");
  };
  j += ", \"device\": " + jsonString(r.device);
  j += ", \"compute_capability\": " +
       (r.computeCapability.empty() ? "null" : jsonString(r.computeCapability));
  j += ", \"tier_summary\": " + jsonString(r.tierSummary);
  j += ", \"timing\": " + jsonString(r.timing);
  j += std::string(", \"graph\": ") + (r.graph ? "true" : "false");
  j += ", \"warmup\": " + std::to_string(r.warmup);
  j += ", \"iterations\": " + std::to_string(r.iterations);
  j += ", \"rotation\": " + std::to_string(r.rotation);
  j += ", \"median_ms\": " + jsonNumber(r.stats.median);
  j += ", \"min_ms\": " + jsonNumber(r.stats.min);
  j += ", \"max_ms\": " + jsonNumber(r.stats.max);
  j += ", \"mean_ms\": " + jsonNumber(r.stats.mean);
  j += ", \"flops\": " + (r.flops ? jsonNumber(*r.flops) : "null");
  j += ", \"tflops\": " + rate(r.flops, 1e12);
  j += ", \"bytes\": " + std::to_string(r.bytes);
  j += ", \"gbps\": " + rate(double(r.bytes), 1e9);
  if (!r.steps.empty()) {
    j += ", \"steps\": [";
    for (size_t s = 0; s < r.steps.size(); ++s) {
      const StepResult &step = r.steps[s];
      j += std::string(s ? ", " : "") + "{\"index\": " + std::to_string(s) +
           ", \"op\": " + jsonString(step.op) + ", \"location\": " + jsonString(step.location) +
           ", \"tier\": " + jsonString(step.tier) + ", \"kernel\": " + jsonString(step.kernel) +
           ", \"median_ms\": " + jsonNumber(step.medianMs) + "}";
    }
    j += "]";
  }
  return j + "}";
}

void printResult(const Result &r) {
  if (!r.error.empty()) {
    bool named = r.error.rfind(r.engine, 0) == 0;
    std::fprintf(stderr, "error: %s%s%s\n", named ? "" : r.engine.c_str(), named ? "" : ": ",
                 r.error.c_str());
    return;
  }
  std::string rates;
  char text[128];
  if (r.flops && r.stats.median > 0) {
    std::snprintf(text, sizeof(text), ", %.3f TFLOP/s", *r.flops / (r.stats.median * 1e9));
    rates += text;
  }
  if (r.stats.median > 0) {
    std::snprintf(text, sizeof(text), ", %.1f GB/s", double(r.bytes) / (r.stats.median * 1e6));
    rates += text;
  }
  std::printf("%s (%s on %s): median %.4f ms (min %.4f, max %.4f, mean %.4f)%s; %s timing, "
              "rotation %zu, graph %s, %d iterations\n",
              r.label.c_str(), r.tierSummary.c_str(),
              r.device == "cpu" ? "the host CPU" : r.device.c_str(), r.stats.median,
              r.stats.min, r.stats.max, r.stats.mean, rates.c_str(), r.timing.c_str(),
              r.rotation, r.graph ? "yes" : "no", r.iterations);
  for (size_t s = 0; s < r.steps.size(); ++s)
    std::printf("  [%zu] %s at %s: %s (%s) %.4f ms\n", s, r.steps[s].op.c_str(),
                r.steps[s].location.c_str(), r.steps[s].tier.c_str(), r.steps[s].kernel.c_str(),
                r.steps[s].medianMs);
}

} // namespace

static int toolMain(int argc, char **argv) {
  CLI::App app{"tessel-bench: time Tessel engines (GPU work with CUDA events, else host runs)"};
  std::vector<std::string> engines;
  std::string tier = "auto", jsonPath;
  Options o;
  double flops = 0;
  bool noGraph = false;
  app.add_option("engines", engines, "engine files (.tsl)")->required();
  app.add_option("--tier", tier,
                 "execution tier: auto, tc, tc-sm80, tc-sm70, simt or cpu (as tessel-run)")
      ->check(CLI::IsMember(tessel::tools::tierNames()));
  app.add_option("--warmup", o.warmup, "untimed runs first (at least 2 per rotated context "
                                       "with graphs)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--iterations", o.iterations, "timed runs")->check(CLI::PositiveNumber);
  app.add_option("--rotate", o.rotate,
                 "contexts (with their own IO buffers) to rotate: auto (enough to exceed twice "
                 "the L2 cache, at most 32) or a count")
      ->check(CLI::IsMember({"auto"}) | CLI::Range(1, 1024));
  app.add_flag("--no-graph", noGraph, "launch step by step (no CUDA graph replay)");
  auto *flopsOption =
      app.add_option("--flops", flops, "FLOPs per run (instead of 2*M*N*K of the engine)")
          ->check(CLI::PositiveNumber);
  app.add_option("--profile", o.profile,
                 "the batch profile to run (tessel-compile --batch), 0 by default");
  app.add_option("--label", o.label, "the name to report (default: the file name)");
  app.add_option("--json", jsonPath, "write the results as a JSON array to FILE");
  app.add_flag("--per-step", o.perStep,
               "also time each step (tessel_context_profile_steps, median over --iterations)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return app.exit(e) == 0 ? kOk : kUsage;
  }
  if (engines.size() > 1 && (flopsOption->count() || !o.label.empty())) {
    std::fprintf(stderr, "error: --flops and --label apply to a single engine\n");
    return kUsage;
  }
  if (flopsOption->count())
    o.flops = flops;
  o.tier = tessel::tools::parseTier(tier);
  o.graph = !noGraph;
  // Read when a context is created (tessel_runtime.h).
  if (noGraph)
    setenv("TESSEL_CUDA_GRAPH", "0", 1);
  if (const char *graphs = std::getenv("TESSEL_CUDA_GRAPH"); graphs && std::string(graphs) == "0")
    o.graph = false;

  std::unique_ptr<CudaDevice> primary;
  std::vector<Result> results;
  int exitCode = kOk;
  try {
    for (const std::string &path : engines) {
      results.push_back(benchmark(path, o, primary));
      printResult(results.back());
      std::fflush(stdout);
      if (!results.back().error.empty())
        exitCode = kFailed;
    }
  } catch (const Failure &f) { // setting up the device for all engines
    std::fprintf(stderr, "error: %s\n", f.message.c_str());
    return kFailed;
  }
  if (!jsonPath.empty()) {
    std::FILE *file = std::fopen(jsonPath.c_str(), "w");
    if (!file) {
      std::fprintf(stderr, "error: cannot write %s\n", jsonPath.c_str());
      return kFailed;
    }
    std::fprintf(file, "[");
    for (size_t i = 0; i < results.size(); ++i)
      std::fprintf(file, "%s\n  %s", i ? "," : "", toJson(results[i]).c_str());
    std::fprintf(file, "\n]\n");
    if (std::fclose(file) != 0) {
      std::fprintf(stderr, "error: cannot write %s\n", jsonPath.c_str());
      return kFailed;
    }
  }
  return exitCode;
}

int main(int argc, char **argv) {
  return tessel::tools::guardedMain("tessel-bench", kFailed, [&] { return toolMain(argc, argv); });
}
