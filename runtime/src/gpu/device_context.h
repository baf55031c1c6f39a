//===- device_context.h - one context's execution on the GPU ---*- C++ -*-===//
//
// The device side of a context whose selection puts steps on the GPU. Made at
// context creation, so that run() only enqueues work:
//   - one stream, and one device allocation holding the activation arena
//     (same offsets as the engine's plan) followed by one 256-byte aligned
//     buffer per graph input and output;
//   - every launch resolved: its function (DeviceEngine), grid, block, shared
//     memory, and its kernel parameter array pointing at prebuilt values (the
//     device addresses are fixed for the context's life);
//   - the TMA tensor maps kernels take (KernelArg.tensor_map), encoded with
//     their tensors' addresses and copied to the context's device memory
//     (again for a tensor later bound to a caller's address: bindDevice);
//   - for each cpu-tier step of a mixed context, the copies that bring its
//     arena and output operands to the host views and its results back.
//
// run(): the bound inputs are copied to their device buffers; then each step
// in order: a GPU step's launches are enqueued; a cpu-tier step waits for the
// stream, copies its operands into the host mirror of the arena (same
// layout, so in-place offsets stay in place), runs on the host and copies
// its results back; finally the outputs come back to the bound buffers and
// the stream is synchronized. When every step runs on the GPU, the second
// run captures the launches (not the copies) into a CUDA graph and later runs
// replay it.
//
// Device-resident IO (bindDevice): a graph input or output may live at a
// caller's device address instead of the context's own buffer. Every kernel
// parameter that points at the tensor (recorded per slot in prepare) and
// every copy of it is patched to that address, so no copy is made; the run's
// host copies skip it, and a cpu-tier step of a mixed context reads and
// writes it through the host view the owner gives it (a staging buffer).
// Changing an address destroys the captured graph (its kernel nodes hold the
// old one); the next run or enqueue captures again.
//
// enqueue(): as run() on the caller's stream (0: CUDA's default stream; the
// context's own when the caller passes ownStream()) without waiting, for contexts whose steps all run on the GPU. A graph is captured
// on the context's own stream and launched on the caller's. Work of a
// context on one stream is ordered after its work on another by an event
// (one arena serves every run).
//
// Environment, read when the context is created:
//   TESSEL_CUDA_GRAPH=0  never capture or replay a CUDA graph.
//   TESSEL_GPU_SYNC=1    synchronize after every GPU step, so that a kernel
//                        fault (an illegal address) names its step rather
//                        than the range of steps in flight; implies no graph.
//   TESSEL_OVERLAP_LAUNCHES=0  launch no kernel during the tail of the one
//                        before it (below).
//
// Overlapped launches: a kernel whose module image waits for the grids before
// it (KernelImage.waits_for_prior_grids: the sm_90 and later cubins the
// compiler makes, codegen/GridDependency.h) is launched with programmatic
// stream serialization when the operation before it on the stream is another
// kernel of the same run: its blocks are scheduled while that kernel's last
// ones finish, and wait there for it (griddepcontrol.wait). Never for a
// run's first kernel (what precedes it is the caller's), after a host step,
// across steps while profiling (each step between its events) or with
// TESSEL_GPU_SYNC=1.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_GPU_DEVICE_CONTEXT_H
#define TESSEL_RUNTIME_GPU_DEVICE_CONTEXT_H

#include "tessel/cpu_kernels.h"
#include "gpu/device_engine.h"
#include "gpu/tiers.h"
#include "status.h"

#include <memory>
#include <vector>

namespace tessel::engine {
struct TensorMap;
}

namespace tessel::rt::gpu {

class DeviceContext {
public:
  /// Runs step `index` on the host: the context's cpu kernel on its views.
  using HostStep = Status (*)(void *owner, size_t index);

  /// `views` are the owning context's host views, one per engine tensor, never
  /// resized: graph inputs and outputs are copied from and to their `data`
  /// as bound at run time, and cpu-tier steps run on them. `selection` must
  /// put at least one step on the GPU; its GPU steps' modules must load (the
  /// status of the first that does not is returned, as DeviceEngine says).
  /// `plan` is the engine (profile) the context runs; `device` holds its
  /// constants and modules, shared by every profile of the engine.
  static Status create(std::shared_ptr<const Engine> plan, std::shared_ptr<DeviceEngine> device,
                       const Selection &selection, std::vector<cpu::TensorView> &views,
                       std::unique_ptr<DeviceContext> &context);

  DeviceContext(const DeviceContext &) = delete;
  DeviceContext &operator=(const DeviceContext &) = delete;
  ~DeviceContext();

  /// Runs every step; `hostStep(owner, i)` runs the cpu-tier steps. A
  /// failure names the step (or the steps in flight when a kernel fault
  /// surfaced). After a kernel fault the CUDA context is unusable and every
  /// later run fails too. Allocates nothing.
  Status run(HostStep hostStep, void *owner);

  /// Enqueues one run on `stream` (0: CUDA's default stream) and returns
  /// without waiting. Only for a context whose steps all run on the GPU.
  /// Host-bound inputs and outputs are copied asynchronously on `stream`.
  Status enqueue(CUstream stream);
  /// The context's own stream (runs go there; enqueue() there on request).
  CUstream ownStream() const { return stream; }

  /// Runs once step by step (no graph) and writes each step's time in
  /// milliseconds to `ms` (one per step): GPU steps by CUDA events around
  /// their launches, cpu-tier steps by a steady clock around their copies
  /// and kernel. Creates its events on first use.
  Status profile(HostStep hostStep, void *owner, double *ms);

  /// Points graph input or output `tensor` at the caller's device address
  /// `address`, or back at the context's own buffer when it is 0.
  Status bindDevice(int32_t tensor, CUdeviceptr address);
  /// Whether `tensor` is bound to a caller's device address.
  bool boundOnDevice(int32_t tensor) const { return deviceBound[tensor]; }

  /// The run-time extent in `tensor` (an i64 arena tensor some output's
  /// extent_tensor names) after the last run: copied out with the outputs,
  /// and waited for here if that run was enqueued.
  Status extent(int32_t tensor, int64_t &value);

  /// Whether later runs replay a captured CUDA graph.
  bool replaysGraph() const { return graph != nullptr; }

private:
  struct Launch {
    CUfunction function = nullptr;
    unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
    unsigned sharedBytes = 0;
    size_t firstParam = 0, paramCount = 0; // into paramPointers
    const char *kernel = "";
    bool waitsForPriorGrids = false; // its image's entries wait (see above)
  };
  struct Copy {
    CUdeviceptr device = 0;
    cpu::TensorView *view = nullptr; // the host side: view->data when run
    size_t bytes = 0;
    int32_t tensor = -1;
    // A cpu-tier step's graph input: copied to its host view only while the
    // input is bound on the device (a host binding is the view itself).
    bool graphInput = false;
  };
  // A TMA tensor map (KernelArg.tensor_map) of `tensor`, in slot i of the
  // maps' device region; `bytes` its encoding on the host.
  struct TensorMapSlot {
    int32_t tensor = -1;
    const tessel::engine::TensorMap *map = nullptr;
    struct alignas(64) Bytes {
      unsigned char data[128];
    } bytes{};
  };
  // A kernel parameter value that holds a graph input's or output's address.
  struct IoParam {
    size_t value = 0; // into paramValues
    int32_t tensor = -1;
  };
  struct Step {
    bool onGpu = false;
    size_t firstLaunch = 0, launchEnd = 0; // GPU steps
    bool afterKernel = false; // a kernel of the run precedes its launches (prepare)
    size_t firstCopy = 0, copyInEnd = 0, copyOutEnd = 0; // cpu steps, into hostCopies
  };

  DeviceContext(std::shared_ptr<const Engine> plan, std::shared_ptr<DeviceEngine> engine)
      : owner(std::move(plan)), device(std::move(engine)) {}
  Status prepare(const Selection &selection, std::vector<cpu::TensorView> &views);
  CUdeviceptr address(int32_t tensor) const;
  /// Launches step `index` on `on`; `afterKernel`: the operation before it
  /// on `on` is a kernel of this run, so that its first launch may overlap.
  Status launchStep(size_t index, CUstream on, bool afterKernel);
  Status runHostStep(size_t index, HostStep hostStep, void *owner);
  Status launchAllCaptured();
  /// One run's work on `on`, not waited for: follow the context's earlier
  /// work, copy the host-bound inputs in, launch (step by step, capturing,
  /// or replaying the graph; cpu-tier steps through `hostStep`), copy the
  /// host-bound outputs out.
  Status enqueueRun(CUstream on, HostStep hostStep, void *owner);
  /// Orders work on `on` after the context's work on another stream.
  Status follow(CUstream on);
  Status copyInputs(CUstream on);
  /// Encodes tensor map slot `i` for its tensor at `address` (host bytes).
  Status encodeMap(size_t i, CUdeviceptr address);
  Status copyOutputs(CUstream on);
  /// Synchronizes `on` (null: the context's own stream).
  Status synchronize(const char *what, CUstream on = nullptr);
  /// A failure of `what` with `result`, naming the steps in flight if any.
  Status fault(CUresult result, const std::string &what) const;

  std::shared_ptr<const Engine> owner; // the plan: tensors and steps
  std::shared_ptr<DeviceEngine> device;
  const Driver *driver = nullptr;
  CUstream stream = nullptr;
  CUdeviceptr memory = 0;              // arena, then graph inputs and outputs
  std::vector<uint64_t> ioOffsets;     // per tensor: its graph IO buffer's offset in memory
  std::vector<Copy> inputs, outputs;   // the graph's (and the extents'), every run
  std::vector<int32_t> extentTensors;  // the outputs' arena extent tensors
  std::vector<int64_t> extentValues;   // their values, copied out every run
  std::vector<cpu::TensorView> extentViews; // the copies' host side
  std::vector<Copy> hostCopies;        // cpu steps' operands and results
  std::vector<Launch> launches;
  std::vector<Step> steps;
  std::vector<void *> paramPointers;   // kernelParams arrays, back to back
  std::vector<uint64_t> paramValues;   // what they point at
  std::vector<IoParam> ioParams;       // the values holding graph IO addresses
  std::vector<TensorMapSlot> tensorMaps; // KernelArg.tensor_map, in argument order
  uint64_t mapOffset = 0;              // their device region's offset in memory
  std::vector<bool> deviceBound;       // per tensor: bound to a caller's address
  CUevent lastWork = nullptr;          // recorded after each enqueue
  CUstream lastStream = nullptr;       // where the last enqueue went (0: the default stream)
  bool pending = false;                // whether that work may still be in flight
  std::vector<CUevent> stepEvents;     // profile(): a begin and an end per step
  bool allOnGpu = false;
  bool graphsEnabled = true;
  bool syncEachStep = false;
  bool overlapLaunches = false; // cuLaunchKernelEx there, not TESSEL_OVERLAP_LAUNCHES=0 or sync
  bool captureTried = false;
  unsigned runs = 0;
  CUgraphExec graph = nullptr;
  // The GPU steps enqueued since the stream last synchronized, for naming the
  // culprit of an asynchronous fault; kNone when none.
  static constexpr size_t kNone = ~size_t(0);
  size_t inFlightFirst = kNone, inFlightLast = kNone;
  bool inFlightGraph = false;
};

} // namespace tessel::rt::gpu

#endif // TESSEL_RUNTIME_GPU_DEVICE_CONTEXT_H
