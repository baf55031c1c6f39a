//===- executor.h - one execution context of an engine ---------*- C++ -*-===//
//
// A Context is everything mutable about running an engine: the activation
// arena, the caller's bindings and the prepared step list. All of it is built
// at creation (variants chosen, kernels resolved, attributes decoded, tensor
// views pointing at their arena or constant bytes, and for GPU steps the
// device memory and launches, gpu/device_context.h), so run() allocates
// nothing and only calls kernels in order. A context is used by one thread at
// a time; it keeps its engine alive.
//
// A context whose steps all run on the cpu tier never touches the GPU: its
// run() is the plain loop over the cpu kernels. One with GPU steps hands
// run() to its DeviceContext, which calls back into this class for the
// steps that fall back to the cpu tier.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_EXECUTOR_H
#define TESSEL_RUNTIME_EXECUTOR_H

#include "aligned_buffer.h"
#include "tessel/cpu_kernels.h"
#include "custom_ops.h"
#include "engine.h"
#include "gpu/tiers.h"
#include "status.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tessel::rt {

namespace gpu {
class DeviceContext;
} // namespace gpu

class Context {
public:
  /// Prepares `engine` for the requested tier (gpu/tiers.h: planTiers).
  /// TESSEL_TIER_CPU runs every step on the cpu tier without probing the
  /// device. TESSEL_TIER_AUTO probes it (gpu::Driver, once per process) and
  /// takes the best variant per step; it never fails for want of a GPU:
  /// without one, or when the GPU cannot be set up, every step runs on the
  /// cpu tier and the reason is said once per process on stderr
  /// (TESSEL_QUIET=1 silences it), and a module the driver rejects only
  /// sends its steps to their next best tier. A forced TESSEL_TIER_SIMT or
  /// TESSEL_TIER_TC bounds each step's tier from above; it is
  /// TESSEL_UNSUPPORTED with the reason when the machine has no usable GPU
  /// (TC: none with Tensor Cores), and reports any failure to set up the GPU
  /// or load a module. A cpu-tier step whose op has no CPU kernel is
  /// TESSEL_UNSUPPORTED.
  /// Throws std::bad_alloc only (e.g. an arena too large for the machine).
  static Status create(std::shared_ptr<const Engine> engine, tessel_tier_t tier,
                       std::unique_ptr<Context> &context);

  /// Binds caller memory of exactly the tensor's size_bytes to a graph input
  /// or output; bindings persist across runs until rebound.
  Status bindInput(size_t index, const void *data, size_t sizeBytes);
  Status bindOutput(size_t index, void *data, size_t sizeBytes);
  /// Binds a device address (in the primary context of the context's
  /// device, 256-byte aligned) instead: kernels read or write it directly.
  /// TESSEL_UNSUPPORTED for a context without GPU steps. In a mixed context
  /// the cpu-tier steps reach it through a host staging buffer, allocated
  /// here.
  Status bindInputDevice(size_t index, uint64_t address, size_t sizeBytes);
  Status bindOutputDevice(size_t index, uint64_t address, size_t sizeBytes);

  /// Runs every step in order. Fails if an input or output is unbound, or
  /// with the failing step's index, op and location if a kernel fails.
  Status run();
  /// Enqueues one run on `stream` (a CUstream; 0: CUDA's default stream)
  /// without waiting. TESSEL_UNSUPPORTED, naming the first cpu-tier step,
  /// unless every step runs on the GPU.
  Status enqueue(void *stream);
  /// Graph output `index`'s shape after the last run: its engine shape, but
  /// along a data-dependent axis (TensorInfo::extentAxis) the extent that
  /// run found. Waits for an enqueued run to finish. TESSEL_INVALID_ARGUMENT
  /// for a data-dependent output before any run.
  Status outputShape(size_t index, std::vector<int64_t> &shape);
  /// The context's own CUDA stream; TESSEL_UNSUPPORTED without GPU steps.
  Status ownStream(void **stream) const;
  /// Runs once step by step, writing each step's milliseconds to ms[0 ..
  /// step count - 1] (gpu::DeviceContext::profile; on the cpu tier a steady
  /// clock around each kernel).
  Status profileSteps(double *ms);

  /// Runs once step by step and lists, in order, the steps whose float
  /// results hold an infinity or NaN where none of their float operands held
  /// one: where an f16 engine overflows f16's range (or an operation is
  /// invalid). Only on the cpu tier (TESSEL_UNSUPPORTED otherwise), whose
  /// kernels store f16 as the GPU tiers' do.
  Status findNonFinite(std::vector<size_t> &steps);
  /// Likewise the steps whose f16 results underflow: at least
  /// kUnderflowPercent percent of their nonzero values are f16 subnormals
  /// (magnitudes below 2^-14, where f16 keeps fewer than its 11 bits and
  /// below 2^-25 rounds to zero), where their float operands other than the
  /// engine's constants held fewer such values (an f32 operand counted as if
  /// it were stored in f16).
  Status findUnderflow(std::vector<size_t> &steps);
  static constexpr int kUnderflowPercent = 1;

  /// The tier every step runs on ("cpu", "simt", "tc-sm70", "tc-sm80",
  /// "tc-sm90"), or "mixed".
  const char *tier() const { return tierName.c_str(); }
  /// tier(), or for a mixed context the steps per tier, best first:
  /// "mixed: 50 tc-sm80, 10 simt, 3 cpu".
  const char *tierSummary() const { return tierText.c_str(); }
  /// Each step's variant: tier, kernel and why no better one was taken.
  const gpu::Selection &selection() const { return chosen; }
  /// Whether run() replays a captured CUDA graph: true from the second run
  /// of a context whose steps all run on the GPU (the second run captures),
  /// unless TESSEL_CUDA_GRAPH=0 or the capture failed.
  bool replaysGraph() const;
  const Engine &engine() const { return *owner; }

  ~Context();

private:
  // A cpu-tier step; GPU steps keep it empty. A custom op's step runs the
  // application's implementation (custom) instead of a kernel, on operands
  // described once here (their data pointers set at each run).
  struct PreparedStep {
    cpu::Kernel kernel = nullptr;
    const CustomOpImpl *custom = nullptr;
    cpu::Attrs attrs;
    std::vector<const cpu::TensorView *> inputs; // nullptr: absent optional
    std::vector<cpu::TensorView *> outputs;
    std::vector<tessel_custom_tensor_t> customInputs, customOutputs;
    tessel_custom_call_t call{};
    bool onHost() const { return kernel || custom; }
  };

  Context(std::shared_ptr<const Engine> engine, gpu::Selection selection);
  Status prepare();
  /// The input's or output's info after checking its index and size, or
  /// null with `status` set.
  const TensorInfo *checkBinding(bool isInput, size_t index, size_t sizeBytes,
                                 std::string &name, Status &status) const;
  Status bind(bool isInput, size_t index, void *data, size_t sizeBytes);
  Status bindDevice(bool isInput, size_t index, uint64_t address, size_t sizeBytes);
  Status checkAllBound() const;
  Status runStep(size_t index);
  /// A custom step's call: operand descriptions, attributes (data pointers
  /// are set by runCustomStep at each run).
  void prepareCustomCall(size_t index, PreparedStep &step);
  Status runCustomStep(size_t index, PreparedStep &step);
  /// Runs once step by step on the cpu tier and lists the steps none of
  /// whose operands `operandHas` before the step runs but one of whose
  /// results `resultHas` after it.
  using ViewTest = std::function<bool(const cpu::TensorView &)>;
  Status findSteps(const ViewTest &operandHas, const ViewTest &resultHas,
                   std::vector<size_t> &found);
  static Status runHostStep(void *context, size_t index);

  std::shared_ptr<const Engine> owner;
  gpu::Selection chosen;
  std::string tierName, tierText;
  // Null when every step runs on the cpu tier.
  std::unique_ptr<gpu::DeviceContext> device;
  // On the host: the arena, or for a context with GPU steps the mirror of its
  // device arena (same offsets) for its cpu-tier steps; empty when it has
  // none.
  AlignedBuffer arena;
  // One view per engine tensor; steps point into it, so binding an input or
  // output updates every step (and the device copies) that use it. Never
  // resized after prepare().
  std::vector<cpu::TensorView> views;
  std::vector<PreparedStep> steps;
  std::vector<bool> inputBound, outputBound;
  bool ran = false; // a run, enqueue or profile succeeded: extents are known
  // Mixed contexts: per graph input, then output, the host view of one bound
  // on the device, for the cpu-tier steps; empty until such a binding.
  std::vector<AlignedBuffer> staging;
};

} // namespace tessel::rt

#endif // TESSEL_RUNTIME_EXECUTOR_H
