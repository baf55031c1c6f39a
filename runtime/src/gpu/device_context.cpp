//===- device_context.cpp - launch a context's steps on the GPU -----------===//
#include "gpu/device_context.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

namespace tessel::rt::gpu {
namespace fb = tessel::engine;

namespace {

bool environmentIs(const char *name, const char *value) {
  const char *set = std::getenv(name);
  return set && std::strcmp(set, value) == 0;
}

/// Faults a kernel leaves behind for whatever call comes next: they belong
/// to the steps in flight, not to the call that reports them.
bool isKernelFault(CUresult result) {
  switch (result) {
  case 700: // CUDA_ERROR_ILLEGAL_ADDRESS
  case 714: // CUDA_ERROR_HARDWARE_STACK_ERROR
  case 715: // CUDA_ERROR_ILLEGAL_INSTRUCTION
  case 716: // CUDA_ERROR_MISALIGNED_ADDRESS
  case 717: // CUDA_ERROR_INVALID_ADDRESS_SPACE
  case 718: // CUDA_ERROR_INVALID_PC
  case 719: // CUDA_ERROR_LAUNCH_FAILED
    return true;
  }
  return false;
}

std::string dims(const unsigned (&d)[3]) {
  return std::to_string(d[0]) + "x" + std::to_string(d[1]) + "x" + std::to_string(d[2]);
}

} // namespace

Status DeviceContext::create(std::shared_ptr<const Engine> plan,
                             std::shared_ptr<DeviceEngine> device, const Selection &selection,
                             std::vector<cpu::TensorView> &views,
                             std::unique_ptr<DeviceContext> &context) {
  std::unique_ptr<DeviceContext> made(new DeviceContext(std::move(plan), std::move(device)));
  if (Status s = made->prepare(selection, views); !s.ok())
    return s;
  context = std::move(made);
  return {};
}

Status DeviceContext::prepare(const Selection &selection, std::vector<cpu::TensorView> &views) {
  driver = &device->driver();
  const DriverApi &cu = driver->api();
  const Engine &engine = *owner;
  const fb::Engine *root = engine.fb();
  const auto *tensors = root->tensors();
  const auto *engineSteps = root->steps();
  const size_t stepCount = engineSteps ? engineSteps->size() : 0;
  syncEachStep = environmentIs("TESSEL_GPU_SYNC", "1");
  graphsEnabled = !syncEachStep && !environmentIs("TESSEL_CUDA_GRAPH", "0");
  overlapLaunches = !syncEachStep && driver->api().cuLaunchKernelEx &&
                    !environmentIs("TESSEL_OVERLAP_LAUNCHES", "0");

  // Resolve every function first: a module the driver rejects should fail
  // before anything is allocated.
  steps.resize(stepCount);
  size_t paramCount = 0, valueSlots = 0;
  uint64_t workspaceBytes = 0, counterBytes = 0, mapCount = 0;
  allOnGpu = true;
  for (size_t s = 0; s < stepCount; ++s) {
    const StepChoice &choice = selection.steps[s];
    Step &step = steps[s];
    step.onGpu = choice.tier != "cpu";
    allOnGpu &= step.onGpu;
    if (!step.onGpu)
      continue;
    const fb::KernelVariant *variant = engineSteps->Get(s)->variants()->Get(choice.variant);
    step.firstLaunch = launches.size();
    for (const fb::Launch *launch : *variant->launches()) {
      Launch prepared;
      prepared.kernel = launch->kernel()->c_str();
      if (Status st = device->function(static_cast<size_t>(launch->module_()), prepared.kernel,
                                       launch->shared_bytes(), prepared.function,
                                       prepared.waitsForPriorGrids);
          !st.ok())
        return Status(st.code(), describeStep(s, engineSteps->Get(s)) + " (" + choice.tier +
                                     "): " + st.message());
      for (int i = 0; i < 3; ++i) {
        prepared.grid[i] = launch->grid()->Get(i);
        prepared.block[i] = launch->block()->Get(i);
      }
      prepared.sharedBytes = launch->shared_bytes();
      prepared.firstParam = paramCount;
      prepared.paramCount = launch->args() ? launch->args()->size() : 0;
      paramCount += prepared.paramCount;
      if (launch->args())
        for (const fb::KernelArg *arg : *launch->args()) {
          valueSlots += arg->tensor() < 0 && arg->bytes() && arg->bytes()->size()
                            ? (arg->bytes()->size() + 7) / 8
                            : 1;
          workspaceBytes = std::max<uint64_t>(workspaceBytes, arg->workspace_bytes());
          counterBytes = std::max<uint64_t>(counterBytes, arg->counter_bytes());
          mapCount += arg->tensor_map() != nullptr;
        }
      launches.push_back(prepared);
    }
    step.launchEnd = launches.size();
  }
  // What precedes each step's launches on the stream in a run: a kernel of
  // that run (an earlier GPU step's, no host step between), or the run's
  // input copies, a host step's copies, the caller's work.
  for (size_t s = 1; s < steps.size(); ++s) {
    const Step &before = steps[s - 1];
    steps[s].afterKernel =
        before.onGpu && (before.launchEnd > before.firstLaunch || before.afterKernel);
  }

  if (Status s = device->makeCurrent(); !s.ok())
    return s;
  // One allocation: the arena with the engine's offsets, then the graph's
  // inputs and outputs, then the workspace (the largest any launch asks for;
  // steps run in order on one stream, so they share it), then the arrival
  // counters (as large as the most any launch asks for; zeroed below with
  // the rest, and each launch leaves them zero), then the TMA tensor maps
  // (128 bytes each, copied in once the parameters are built), each on the
  // boundary the constants use.
  const size_t tensorCount = tensors ? tensors->size() : 0;
  ioOffsets.assign(tensorCount, 0);
  uint64_t size = format::alignUp(engine.arenaSize(), format::kConstantAlignment);
  for (const auto *list : {&engine.inputs(), &engine.outputs()})
    for (const TensorInfo &info : *list) {
      ioOffsets[info.tensor] = size;
      size += format::alignUp(info.sizeBytes, format::kConstantAlignment);
    }
  const uint64_t workspaceOffset = size;
  size += format::alignUp(workspaceBytes, format::kConstantAlignment);
  const uint64_t counterOffset = size;
  size += format::alignUp(counterBytes, format::kConstantAlignment);
  mapOffset = size;
  size += format::alignUp(mapCount * sizeof(TensorMapSlot::Bytes), format::kConstantAlignment);
  if (mapCount && (!cu.cuTensorMapEncodeTiled || !cu.cuTensorMapEncodeIm2col))
    return Status(TESSEL_UNSUPPORTED,
                  "the engine's tc-sm90 kernels load by TMA, but the CUDA driver has no "
                  "cuTensorMapEncodeTiled or cuTensorMapEncodeIm2col (CUDA 12 or later)");
  tensorMaps.reserve(mapCount);
  if (Status s = driver->check(cu.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING),
                               "cuStreamCreate");
      !s.ok()) {
    stream = nullptr;
    return s;
  }
  if (size) {
    if (Status s = driver->check(cu.cuMemAlloc(&memory, size),
                                 ("cuMemAlloc of the " + std::to_string(size) +
                                  "-byte arena and graph inputs/outputs on " +
                                  device->device().arch())
                                     .c_str(),
                                 TESSEL_OUT_OF_MEMORY);
        !s.ok()) {
      memory = 0;
      return s;
    }
    // Deterministic contents for bytes no kernel writes (channel padding),
    // on this context's own stream, where its runs go; waited for on that
    // stream only: a whole-context synchronization here would fail while
    // another thread's context captures a CUDA graph (issue 17), and the
    // runs on other streams follow this one by event anyway.
    if (Status s = driver->check(cu.cuMemsetD8Async(memory, 0, size, stream),
                                 "cuMemsetD8Async");
        !s.ok())
      return s;
    if (Status s = driver->check(cu.cuStreamSynchronize(stream),
                                 "cuStreamSynchronize after cuMemsetD8Async");
        !s.ok())
      return s;
  }

  for (const TensorInfo &info : engine.inputs())
    inputs.push_back({address(info.tensor), &views[info.tensor], info.sizeBytes, info.tensor});
  for (const TensorInfo &info : engine.outputs())
    outputs.push_back({address(info.tensor), &views[info.tensor], info.sizeBytes, info.tensor});
  // An output's data-dependent extent comes to the host with the outputs
  // (the arena on the device has it: cpu-tier steps copy results back).
  size_t extentCount = 0;
  for (const TensorInfo &info : engine.outputs())
    extentCount += info.extentTensor >= 0;
  extentValues.assign(extentCount, 0);
  extentViews.reserve(extentCount);
  for (const TensorInfo &info : engine.outputs()) {
    if (info.extentTensor < 0 ||
        tensors->Get(info.extentTensor)->storage() != fb::Storage::Arena)
      continue;
    extentTensors.push_back(info.extentTensor);
    extentViews.push_back({cpu::DType::I64, {1}, &extentValues[extentViews.size()]});
    outputs.push_back({address(info.extentTensor), &extentViews.back(), sizeof(int64_t),
                       info.extentTensor});
  }

  // Kernel parameters: each launch's kernelParams array points at values
  // that never move (both vectors are sized once, here).
  paramPointers.assign(paramCount, nullptr);
  paramValues.assign(valueSlots, 0);
  size_t nextValue = 0;
  for (size_t s = 0; s < stepCount; ++s) {
    if (!steps[s].onGpu)
      continue;
    const fb::KernelVariant *variant =
        engineSteps->Get(s)->variants()->Get(selection.steps[s].variant);
    for (size_t l = 0; l < variant->launches()->size(); ++l) {
      const fb::Launch *launch = variant->launches()->Get(l);
      const Launch &prepared = launches[steps[s].firstLaunch + l];
      for (size_t a = 0; a < prepared.paramCount; ++a) {
        const fb::KernelArg *arg = launch->args()->Get(a);
        uint64_t *value = &paramValues[nextValue];
        paramPointers[prepared.firstParam + a] = value;
        if (arg->tensor() >= 0 && arg->tensor_map()) {
          // Slot i of the maps' region; encoded here, copied below, and
          // again when the tensor is bound elsewhere (bindDevice).
          tensorMaps.push_back({arg->tensor(), arg->tensor_map(), {}});
          if (Status st = encodeMap(tensorMaps.size() - 1, address(arg->tensor())); !st.ok())
            return Status(st.code(), describeStep(s, engineSteps->Get(s)) + ": " + st.message());
          *value = memory + mapOffset + (tensorMaps.size() - 1) * sizeof(TensorMapSlot::Bytes);
          nextValue += 1;
        } else if (arg->tensor() >= 0) {
          *value = address(arg->tensor());
          fb::Storage storage = tensors->Get(arg->tensor())->storage();
          if (storage == fb::Storage::Input || storage == fb::Storage::Output)
            ioParams.push_back({nextValue, arg->tensor()});
          nextValue += 1;
        } else if (arg->bytes() && arg->bytes()->size()) {
          std::memcpy(value, arg->bytes()->data(), arg->bytes()->size());
          nextValue += (arg->bytes()->size() + 7) / 8;
        } else if (arg->workspace_bytes()) {
          *value = memory + workspaceOffset;
          nextValue += 1;
        } else if (arg->counter_bytes()) {
          *value = memory + counterOffset;
          nextValue += 1;
        } else {
          nextValue += 1; // a null pointer: the slot stays 0
        }
      }
    }
  }

  for (size_t i = 0; i < tensorMaps.size(); ++i)
    if (Status s = driver->check(
            cu.cuMemcpyHtoDAsync(memory + mapOffset + i * sizeof(TensorMapSlot::Bytes),
                                 tensorMaps[i].bytes.data, sizeof(TensorMapSlot::Bytes), stream),
            "cuMemcpyHtoDAsync of a tensor map");
        !s.ok())
      return s;
  if (!tensorMaps.empty())
    if (Status s = driver->check(cu.cuStreamSynchronize(stream),
                                 "cuStreamSynchronize after the tensor maps");
        !s.ok())
      return s;

  // cpu-tier steps: their operands that live on the device (the arena and
  // the graph's outputs; constants are on the host already, and so are
  // inputs unless bound on the device) come to the host views before they
  // run, and their results go back after.
  auto onDevice = [&](int32_t t) {
    return tensors->Get(t)->storage() != fb::Storage::Constant;
  };
  auto isInput = [&](int32_t t) { return tensors->Get(t)->storage() == fb::Storage::Input; };
  for (size_t s = 0; s < stepCount; ++s) {
    if (steps[s].onGpu)
      continue;
    const fb::Step *step = engineSteps->Get(s);
    Step &prepared = steps[s];
    prepared.firstCopy = hostCopies.size();
    if (step->inputs())
      for (int32_t t : *step->inputs())
        if (t >= 0 && onDevice(t))
          hostCopies.push_back({address(t), &views[t], tensors->Get(t)->size(), t, isInput(t)});
    prepared.copyInEnd = hostCopies.size();
    if (step->outputs())
      for (int32_t t : *step->outputs())
        if (onDevice(t))
          hostCopies.push_back({address(t), &views[t], tensors->Get(t)->size(), t});
    prepared.copyOutEnd = hostCopies.size();
  }
  deviceBound.assign(tensorCount, false);
  if (Status s = driver->check(cu.cuEventCreate(&lastWork, CU_EVENT_DISABLE_TIMING),
                               "cuEventCreate");
      !s.ok()) {
    lastWork = nullptr;
    return s;
  }
  return {};
}

DeviceContext::~DeviceContext() {
  if (!driver)
    return;
  // Nothing can be reported from here: work still queued finishes first, and
  // whatever fails to free goes with the primary context.
  const DriverApi &cu = driver->api();
  if (!device->makeCurrent().ok())
    return;
  if (stream)
    cu.cuStreamSynchronize(stream);
  if (pending && lastStream != stream)
    cu.cuEventSynchronize(lastWork);
  if (graph)
    cu.cuGraphExecDestroy(graph);
  for (CUevent event : stepEvents)
    cu.cuEventDestroy(event);
  if (lastWork)
    cu.cuEventDestroy(lastWork);
  if (stream)
    cu.cuStreamDestroy(stream);
  if (memory)
    cu.cuMemFree(memory);
}

CUdeviceptr DeviceContext::address(int32_t tensor) const {
  const fb::Tensor *t = owner->fb()->tensors()->Get(tensor);
  switch (t->storage()) {
  case fb::Storage::Arena:
    return memory + t->offset();
  case fb::Storage::Constant:
    return device->constants() + t->offset();
  case fb::Storage::Input:
  case fb::Storage::Output:
    break;
  }
  return memory + ioOffsets[tensor];
}

Status DeviceContext::fault(CUresult result, const std::string &what) const {
  const fb::Engine *root = owner->fb();
  std::string error = driver->errorText(result);
  if (inFlightFirst == kNone || !isKernelFault(result))
    return Status(TESSEL_INTERNAL, what + " failed: " + error);
  const fb::Step *first = root->steps()->Get(inFlightFirst);
  if (inFlightFirst == inFlightLast)
    return Status(TESSEL_INTERNAL, describeStep(inFlightFirst, first) +
                                       " failed on the GPU: " + error + " (reported by " +
                                       what + ")");
  return Status(TESSEL_INTERNAL,
                std::string("a GPU kernel failed") +
                    (inFlightGraph ? " during the CUDA graph replay" : "") + " in steps " +
                    std::to_string(inFlightFirst) + " to " + std::to_string(inFlightLast) +
                    " (from " + describeStep(inFlightFirst, first) + " to " +
                    describeStep(inFlightLast, root->steps()->Get(inFlightLast)) +
                    "): " + error + " (reported by " + what +
                    "); set TESSEL_GPU_SYNC=1 to name the step");
}

Status DeviceContext::synchronize(const char *what, CUstream on) {
  CUresult result = driver->api().cuStreamSynchronize(on ? on : stream);
  if (result != CUDA_SUCCESS)
    return fault(result, what);
  inFlightFirst = inFlightLast = kNone;
  inFlightGraph = false;
  return {};
}

Status DeviceContext::launchStep(size_t index, CUstream on, bool afterKernel) {
  const DriverApi &cu = driver->api();
  const Step &step = steps[index];
  for (size_t l = step.firstLaunch; l < step.launchEnd; ++l) {
    const Launch &launch = launches[l];
    void **params = launch.paramCount ? &paramPointers[launch.firstParam] : nullptr;
    CUresult result;
    if (overlapLaunches && launch.waitsForPriorGrids && (afterKernel || l > step.firstLaunch)) {
      CUlaunchAttribute overlap{};
      overlap.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
      overlap.value.programmaticStreamSerializationAllowed = 1;
      CUlaunchConfig config{launch.grid[0],  launch.grid[1],     launch.grid[2],
                            launch.block[0], launch.block[1],    launch.block[2],
                            launch.sharedBytes, on, &overlap, 1};
      result = cu.cuLaunchKernelEx(&config, launch.function, params, nullptr);
    } else {
      result = cu.cuLaunchKernel(launch.function, launch.grid[0], launch.grid[1],
                                 launch.grid[2], launch.block[0], launch.block[1],
                                 launch.block[2], launch.sharedBytes, on, params, nullptr);
    }
    if (result != CUDA_SUCCESS) {
      if (isKernelFault(result) && inFlightFirst != kNone)
        return fault(result, "cuLaunchKernel");
      return Status(TESSEL_INTERNAL,
                    describeStep(index, owner->fb()->steps()->Get(index)) +
                        ": launching kernel '" + launch.kernel + "' (grid " +
                        dims(launch.grid) + ", block " + dims(launch.block) + ", " +
                        std::to_string(launch.sharedBytes) +
                        " bytes of dynamic shared memory) failed: " +
                        driver->errorText(result));
    }
  }
  if (inFlightFirst == kNone)
    inFlightFirst = index;
  inFlightLast = index;
  return syncEachStep ? synchronize("cuStreamSynchronize", on) : Status();
}

Status DeviceContext::runHostStep(size_t index, HostStep hostStep, void *owner) {
  const DriverApi &cu = driver->api();
  const Step &step = steps[index];
  for (size_t c = step.firstCopy; c < step.copyInEnd; ++c) {
    const Copy &copy = hostCopies[c];
    if (!copy.bytes || (copy.graphInput && !deviceBound[copy.tensor]))
      continue;
    if (CUresult r = cu.cuMemcpyDtoHAsync(copy.view->data, copy.device, copy.bytes, stream);
        r != CUDA_SUCCESS)
      return fault(r, "cuMemcpyDtoHAsync");
  }
  if (Status s = synchronize("cuStreamSynchronize"); !s.ok())
    return s;
  if (Status s = hostStep(owner, index); !s.ok())
    return s;
  // Copies from pageable memory return once the source is staged, so the
  // host views may change again as soon as these calls return.
  for (size_t c = step.copyInEnd; c < step.copyOutEnd; ++c) {
    const Copy &copy = hostCopies[c];
    if (!copy.bytes)
      continue;
    if (CUresult r = cu.cuMemcpyHtoDAsync(copy.device, copy.view->data, copy.bytes, stream);
        r != CUDA_SUCCESS)
      return fault(r, "cuMemcpyHtoDAsync");
  }
  return {};
}

Status DeviceContext::launchAllCaptured() {
  const DriverApi &cu = driver->api();
  captureTried = true;
  if (cu.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) != CUDA_SUCCESS)
    return {}; // no graph; the caller launches step by step
  bool launched = true;
  for (size_t s = 0; s < steps.size() && launched; ++s)
    launched = launchStep(s, stream, steps[s].afterKernel).ok();
  CUgraph captured = nullptr;
  CUresult ended = cu.cuStreamEndCapture(stream, &captured);
  if (launched && ended == CUDA_SUCCESS && captured &&
      cu.cuGraphInstantiateWithFlags(&graph, captured, 0) != CUDA_SUCCESS)
    graph = nullptr;
  if (captured)
    cu.cuGraphDestroy(captured);
  // A launch refused while capturing is retried outside the capture, which
  // reports its error with the step.
  inFlightFirst = inFlightLast = kNone;
  return {};
}

Status DeviceContext::extent(int32_t tensor, int64_t &value) {
  for (size_t k = 0; k < extentViews.size(); ++k) {
    if (extentTensors[k] != tensor)
      continue;
    if (pending) {
      if (Status s = device->makeCurrent(); !s.ok())
        return s;
      if (CUresult r = driver->api().cuEventSynchronize(lastWork); r != CUDA_SUCCESS)
        return fault(r, "waiting for the run that computes an output's extent");
      pending = false;
    }
    value = extentValues[k];
    return {};
  }
  return Status(TESSEL_INTERNAL, "tensor " + std::to_string(tensor) + " is no output's extent");
}

Status DeviceContext::follow(CUstream on) {
  if (!pending || lastStream == on)
    return {};
  const DriverApi &cu = driver->api();
  if (CUresult r = cu.cuStreamWaitEvent(on, lastWork, 0); r != CUDA_SUCCESS)
    return fault(r, "ordering after the context's work on another stream (cuStreamWaitEvent)");
  return {};
}

Status DeviceContext::copyInputs(CUstream on) {
  const DriverApi &cu = driver->api();
  for (const Copy &copy : inputs)
    if (copy.bytes && !deviceBound[copy.tensor])
      if (CUresult r = cu.cuMemcpyHtoDAsync(copy.device, copy.view->data, copy.bytes, on);
          r != CUDA_SUCCESS)
        return fault(r, "copying the graph inputs to the GPU (cuMemcpyHtoDAsync)");
  return {};
}

Status DeviceContext::copyOutputs(CUstream on) {
  const DriverApi &cu = driver->api();
  for (const Copy &copy : outputs)
    if (copy.bytes && !deviceBound[copy.tensor])
      if (CUresult r = cu.cuMemcpyDtoHAsync(copy.view->data, copy.device, copy.bytes, on);
          r != CUDA_SUCCESS)
        return fault(r, "copying the graph outputs from the GPU (cuMemcpyDtoHAsync)");
  return {};
}

Status DeviceContext::enqueueRun(CUstream on, HostStep hostStep, void *owner) {
  const DriverApi &cu = driver->api();
  if (Status s = device->makeCurrent(); !s.ok())
    return s;
  inFlightFirst = inFlightLast = kNone;
  inFlightGraph = false;
  if (Status s = follow(on); !s.ok())
    return s;
  if (Status s = copyInputs(on); !s.ok())
    return s;

  // The first run goes step by step (and finds any error with its step); the
  // second captures the launches (on the context's own stream, which only
  // records), which later runs replay in one call on `on`.
  if (allOnGpu && graphsEnabled && runs >= 1 && !captureTried)
    if (Status s = launchAllCaptured(); !s.ok())
      return s;
  if (graph) {
    if (CUresult r = cu.cuGraphLaunch(graph, on); r != CUDA_SUCCESS)
      return fault(r, "cuGraphLaunch");
    inFlightFirst = 0;
    inFlightLast = steps.size() - 1;
    inFlightGraph = true;
  } else {
    for (size_t s = 0; s < steps.size(); ++s) {
      Status status = steps[s].onGpu ? launchStep(s, on, steps[s].afterKernel)
                                     : runHostStep(s, hostStep, owner);
      if (!status.ok())
        return status;
    }
  }
  return copyOutputs(on);
}

Status DeviceContext::run(HostStep hostStep, void *owner) {
  if (Status s = enqueueRun(stream, hostStep, owner); !s.ok())
    return s;
  if (Status s = synchronize("cuStreamSynchronize"); !s.ok())
    return s;
  pending = false; // nothing of this context is pending
  ++runs;
  return {};
}

Status DeviceContext::enqueue(CUstream on) {
  // `on` is the caller's stream; 0 is CUDA's default stream, as everywhere
  // in CUDA (the context's own stream is passed explicitly: ownStream()).
  // Nothing synchronizes here: a fault surfaces at a later call, which can
  // only say that a run of this context was in flight. Every step is on the
  // GPU (the caller checks), so no host step runs.
  if (Status s = enqueueRun(on, nullptr, nullptr); !s.ok())
    return s;
  if (CUresult r = driver->api().cuEventRecord(lastWork, on); r != CUDA_SUCCESS)
    return fault(r, "cuEventRecord");
  lastStream = on;
  pending = true;
  ++runs;
  return {};
}

Status DeviceContext::profile(HostStep hostStep, void *owner, double *ms) {
  const DriverApi &cu = driver->api();
  if (Status s = device->makeCurrent(); !s.ok())
    return s;
  inFlightFirst = inFlightLast = kNone;
  inFlightGraph = false;
  while (stepEvents.size() < 2 * steps.size()) {
    CUevent event = nullptr;
    if (Status s = driver->check(cu.cuEventCreate(&event, CU_EVENT_DEFAULT), "cuEventCreate");
        !s.ok())
      return s;
    stepEvents.push_back(event);
  }
  if (Status s = follow(stream); !s.ok())
    return s;
  if (Status s = copyInputs(stream); !s.ok())
    return s;
  // The input copies are not the first step's time.
  if (Status s = synchronize("cuStreamSynchronize"); !s.ok())
    return s;
  pending = false;
  for (size_t s = 0; s < steps.size(); ++s) {
    if (steps[s].onGpu) {
      CUevent begin = stepEvents[2 * s], end = stepEvents[2 * s + 1];
      if (CUresult r = cu.cuEventRecord(begin, stream); r != CUDA_SUCCESS)
        return fault(r, "cuEventRecord");
      if (Status status = launchStep(s, stream, /*afterKernel=*/false); !status.ok())
        return status;
      if (CUresult r = cu.cuEventRecord(end, stream); r != CUDA_SUCCESS)
        return fault(r, "cuEventRecord");
      continue;
    }
    // The GPU work before it is not this step's time; its copies back are.
    if (Status status = synchronize("cuStreamSynchronize"); !status.ok())
      return status;
    auto start = std::chrono::steady_clock::now();
    if (Status status = runHostStep(s, hostStep, owner); !status.ok())
      return status;
    if (Status status = synchronize("cuStreamSynchronize"); !status.ok())
      return status;
    ms[s] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count();
  }
  if (Status s = copyOutputs(stream); !s.ok())
    return s;
  if (Status s = synchronize("cuStreamSynchronize"); !s.ok())
    return s;
  for (size_t s = 0; s < steps.size(); ++s) {
    if (!steps[s].onGpu)
      continue;
    float elapsed = 0;
    if (CUresult r = cu.cuEventElapsedTime(&elapsed, stepEvents[2 * s], stepEvents[2 * s + 1]);
        r != CUDA_SUCCESS)
      return fault(r, "cuEventElapsedTime");
    ms[s] = elapsed;
  }
  ++runs;
  return {};
}

Status DeviceContext::encodeMap(size_t i, CUdeviceptr address) {
  // f16 (6), no interleave (0), the 128-byte swizzle (3), L2 promotion of
  // 256 bytes (3), zero fill (0): engine.fbs TensorMap.
  TensorMapSlot &slot = tensorMaps[i];
  const fb::TensorMap &map = *slot.map;
  const unsigned unit[2] = {1, 1};
  std::vector<unsigned> box(map.box()->begin(), map.box()->end());
  std::vector<uint64_t> dims(map.dims()->begin(), map.dims()->end());
  std::vector<uint64_t> strides(map.strides()->begin(), map.strides()->end());
  if (map.lower_corner()) { // im2col (the engine verified its fields)
    std::vector<int> lower(map.lower_corner()->begin(), map.lower_corner()->end());
    std::vector<int> upper(map.upper_corner()->begin(), map.upper_corner()->end());
    std::vector<unsigned> steps(map.element_strides()->begin(), map.element_strides()->end());
    return driver->check(
        driver->api().cuTensorMapEncodeIm2col(
            slot.bytes.data, 6, unsigned(dims.size()), reinterpret_cast<void *>(address),
            dims.data(), strides.data(), lower.data(), upper.data(), box[0], box[1],
            steps.data(), 0, 3, 3, 0),
        ("cuTensorMapEncodeIm2col of tensor " + std::to_string(slot.tensor)).c_str());
  }
  return driver->check(driver->api().cuTensorMapEncodeTiled(
                           slot.bytes.data, 6, unsigned(dims.size()),
                           reinterpret_cast<void *>(address), dims.data(), strides.data(),
                           box.data(), unit, 0, 3, 3, 0),
                       ("cuTensorMapEncodeTiled of tensor " + std::to_string(slot.tensor)).c_str());
}

Status DeviceContext::bindDevice(int32_t tensor, CUdeviceptr bound) {
  CUdeviceptr target = bound ? bound : memory + ioOffsets[tensor];
  deviceBound[tensor] = bound != 0;
  // Tensor maps of the tensor: encoded for the new address and copied over
  // the old once the work that may read them is done.
  for (size_t i = 0; i < tensorMaps.size(); ++i) {
    if (tensorMaps[i].tensor != tensor)
      continue;
    if (Status s = device->makeCurrent(); !s.ok())
      return s;
    if (pending) {
      if (CUresult r = driver->api().cuEventSynchronize(lastWork); r != CUDA_SUCCESS)
        return fault(r, "waiting for the last run before a tensor map changes");
      pending = false;
    }
    if (Status s = encodeMap(i, target); !s.ok())
      return s;
    if (Status s = driver->check(
            driver->api().cuMemcpyHtoD(memory + mapOffset + i * sizeof(TensorMapSlot::Bytes),
                                       tensorMaps[i].bytes.data, sizeof(TensorMapSlot::Bytes)),
            "cuMemcpyHtoD of a tensor map");
        !s.ok())
      return s;
  }
  bool changed = false;
  for (const IoParam &param : ioParams)
    if (param.tensor == tensor && paramValues[param.value] != target) {
      paramValues[param.value] = target;
      changed = true;
    }
  for (std::vector<Copy> *list : {&inputs, &outputs, &hostCopies})
    for (Copy &copy : *list)
      if (copy.tensor == tensor)
        copy.device = target;
  // The graph's kernel nodes hold the old address: capture again on the next
  // run (cuGraphExecDestroy of a graph still running frees it once done).
  if (changed && graph) {
    if (Status s = device->makeCurrent(); !s.ok())
      return s;
    driver->api().cuGraphExecDestroy(graph);
    graph = nullptr;
    captureTried = false;
  }
  return {};
}

} // namespace tessel::rt::gpu
