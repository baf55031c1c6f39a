//===- executor.cpp - prepare and run an engine's steps -------------------===//
#include "executor.h"

#include "gpu/device_context.h"
#include "gpu/device_engine.h"
#include "gpu/driver.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>

namespace tessel::rt {
namespace fb = tessel::engine;

namespace {

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

/// The modules the GPU steps of `selection` launch from, in index order.
std::set<size_t> modulesUsed(const Engine &engine, const gpu::Selection &selection) {
  std::set<size_t> used;
  for (size_t s = 0; s < selection.steps.size(); ++s) {
    if (selection.steps[s].tier == "cpu")
      continue;
    const fb::KernelVariant *variant =
        engine.fb()->steps()->Get(s)->variants()->Get(selection.steps[s].variant);
    for (const fb::Launch *launch : *variant->launches())
      used.insert(static_cast<size_t>(launch->module_()));
  }
  return used;
}

/// gpu::planTiers against the process's driver, then what the GPU steps need
/// of the device: the engine's shared DeviceEngine and every module they
/// launch from. Under AUTO a module the driver rejects is dropped and the
/// plan made again (its steps take their next best variant). Fails when the
/// GPU cannot be set up; `shared` stays null when the plan needs no GPU.
Status setUpDevice(const std::shared_ptr<const Engine> &engine, tessel_tier_t tier,
                   gpu::TierPlan &plan, std::shared_ptr<gpu::DeviceEngine> &shared) {
  const gpu::Driver &driver = gpu::Driver::get();
  const auto *modules = engine->modules();
  std::vector<bool> failedModules(modules ? modules->size() : 0, false);
  // Each round drops one more module, so this ends.
  for (;;) {
    if (Status s = gpu::planTiers(*engine, driver, tier, plan, failedModules); !s.ok())
      return s;
    if (!plan.device)
      return {};
    Status status = gpu::DeviceEngine::acquire(engine, driver, *plan.device, shared);
    int failedModule = -1;
    for (size_t m : modulesUsed(*engine, plan.selection))
      if (status.ok() && !(status = shared->loadModule(m)).ok())
        failedModule = static_cast<int>(m);
    if (status.ok())
      return {};
    shared.reset();
    if (tier != TESSEL_TIER_AUTO || failedModule < 0)
      return status;
    failedModules[failedModule] = true;
    gpu::noticeOnce(status.message() + "; its steps run on other tiers");
  }
}

} // namespace

Context::Context(std::shared_ptr<const Engine> engine, gpu::Selection selection)
    : owner(std::move(engine)), chosen(std::move(selection)), tierName(chosen.tier()),
      tierText(chosen.summary()) {}

Context::~Context() = default;

bool Context::replaysGraph() const { return device && device->replaysGraph(); }

Status Context::create(std::shared_ptr<const Engine> engine, tessel_tier_t tier,
                       std::unique_ptr<Context> &context) {
  if (!engine)
    return invalidArgument("no engine");
  gpu::TierPlan plan;
  std::shared_ptr<gpu::DeviceEngine> shared;
  std::unique_ptr<Context> candidate;
  Status gpuSetUp; // why the GPU the plan chose cannot be used, if it cannot
  if (tier == TESSEL_TIER_CPU) // never probes the device
    plan.selection = gpu::chooseVariants(*engine, nullptr, tier);
  else
    gpuSetUp = setUpDevice(engine, tier, plan, shared);
  if (gpuSetUp.ok()) {
    candidate.reset(new Context(engine, plan.selection));
    if (Status s = candidate->prepare(); !s.ok())
      return s;
    if (shared)
      gpuSetUp = gpu::DeviceContext::create(engine, std::move(shared), candidate->chosen,
                                            candidate->views, candidate->device);
  }
  if (!gpuSetUp.ok()) {
    // The one fallback to the cpu tier: under AUTO a GPU that cannot be set
    // up (the engine's device state, its modules, the context's memory)
    // leaves every step on the cpu tier. A forced tier reports why instead.
    if (tier != TESSEL_TIER_AUTO)
      return gpuSetUp;
    plan.notice = gpuSetUp.message() + "; using the cpu tier";
    candidate.reset(new Context(engine, gpu::chooseVariants(*engine, nullptr, tier)));
    if (Status s = candidate->prepare(); !s.ok())
      return s;
  }
  context = std::move(candidate);
  if (!plan.notice.empty())
    gpu::noticeOnce(plan.notice);
  return {};
}

Status Context::prepare() {
  const fb::Engine *root = owner->fb();
  const auto *tensors = root->tensors();
  const auto *engineSteps = root->steps();
  const size_t stepCount = engineSteps ? engineSteps->size() : 0;

  // Resolve kernels before allocating anything large: an engine this runtime
  // cannot run should fail fast and cheaply.
  steps.resize(stepCount);
  bool hostSteps = false;
  for (size_t s = 0; s < stepCount; ++s) {
    if (chosen.steps[s].tier != "cpu")
      continue;
    hostSteps = true;
    const fb::Step *step = engineSteps->Get(s);
    if (step->op()->str() == "custom") {
      // Attributes are sorted by name (the schema's key).
      auto name = [&](const char *key) -> std::string {
        const fb::Attr *attr = step->attrs() ? step->attrs()->LookupByKey(key) : nullptr;
        return attr ? fbString(attr->s()) : "";
      };
      const std::string domain = name("domain"), opType = name("op_type");
      steps[s].custom = findCustomOp(domain, opType);
      if (!steps[s].custom)
        return Status(TESSEL_UNSUPPORTED,
                      describeStep(s, step) + ": custom op " + domain + "." + opType +
                          " has no CPU implementation in this process (register one with "
                          "tessel_register_custom_op, or give tessel-run --custom-op-lib)");
      continue;
    }
    steps[s].kernel = cpu::findKernel(step->op()->str());
    if (!steps[s].kernel)
      return Status(TESSEL_UNSUPPORTED, describeStep(s, step) + ": op '" + step->op()->str() +
                                            "' has no kernel in this runtime's CPU tier");
  }

  // A context whose steps all run on the GPU needs no host arena.
  if (hostSteps || stepCount == 0)
    arena = AlignedBuffer(static_cast<size_t>(owner->arenaSize()));

  const size_t tensorCount = tensors ? tensors->size() : 0;
  views.resize(tensorCount);
  for (size_t t = 0; t < tensorCount; ++t) {
    const fb::Tensor *tensor = tensors->Get(t);
    cpu::TensorView &view = views[t];
    view.dtype = static_cast<cpu::DType>(tensor->dtype());
    if (tensor->shape())
      view.shape.assign(tensor->shape()->begin(), tensor->shape()->end());
    switch (tensor->storage()) {
    case fb::Storage::Arena:
      view.data = arena.data() ? arena.data() + tensor->offset() : nullptr;
      break;
    case fb::Storage::Constant:
      // Kernels only read constants: the verifier rejects steps that write one.
      view.data = const_cast<uint8_t *>(owner->constants() + tensor->offset());
      break;
    case fb::Storage::Input:
    case fb::Storage::Output:
      view.data = nullptr; // set by bind
      break;
    }
  }

  for (size_t s = 0; s < stepCount; ++s) {
    if (!steps[s].onHost())
      continue;
    const fb::Step *step = engineSteps->Get(s);
    PreparedStep &prepared = steps[s];
    prepared.attrs = decodeAttrs(step);
    if (const auto *inputs = step->inputs())
      for (int32_t t : *inputs)
        prepared.inputs.push_back(t < 0 ? nullptr : &views[t]);
    if (const auto *outputs = step->outputs())
      for (int32_t t : *outputs)
        prepared.outputs.push_back(&views[t]);
    if (prepared.custom)
      prepareCustomCall(s, prepared);
  }

  inputBound.assign(owner->inputs().size(), false);
  outputBound.assign(owner->outputs().size(), false);
  return {};
}

const TensorInfo *Context::checkBinding(bool isInput, size_t index, size_t sizeBytes,
                                       std::string &name, Status &status) const {
  const std::vector<TensorInfo> &infos = isInput ? owner->inputs() : owner->outputs();
  const char *what = isInput ? "input" : "output";
  if (index >= infos.size()) {
    status = invalidArgument(std::string(what) + " index " + std::to_string(index) +
                             " is out of range: the engine has " +
                             std::to_string(infos.size()) + " " + what +
                             (infos.size() == 1 ? "" : "s"));
    return nullptr;
  }
  const TensorInfo &info = infos[index];
  name = std::string(what) + " " + std::to_string(index) + " '" + info.name + "'";
  if (sizeBytes != info.sizeBytes) {
    status = invalidArgument(name + " takes " + std::to_string(info.sizeBytes) + " bytes (" +
                             cpu::dtypeName(info.dtype) + " " + shapeText(info.shape) + "), " +
                             std::to_string(sizeBytes) + " given");
    return nullptr;
  }
  return &info;
}

Status Context::bind(bool isInput, size_t index, void *data, size_t sizeBytes) {
  std::string name;
  Status status;
  const TensorInfo *info = checkBinding(isInput, index, sizeBytes, name, status);
  if (!info)
    return status;
  if (!data && sizeBytes != 0)
    return invalidArgument(name + ": data is NULL");
  // Kernels access elements through typed pointers.
  size_t alignment = cpu::dtypeSize(info->dtype);
  if (reinterpret_cast<uintptr_t>(data) % alignment != 0)
    return invalidArgument(name + ": data must be aligned to " + std::to_string(alignment) +
                           " bytes for " + cpu::dtypeName(info->dtype));
  if (device && device->boundOnDevice(info->tensor))
    if (Status s = device->bindDevice(info->tensor, 0); !s.ok())
      return s;
  views[info->tensor].data = data;
  (isInput ? inputBound : outputBound)[index] = true;
  return {};
}

Status Context::bindDevice(bool isInput, size_t index, uint64_t address, size_t sizeBytes) {
  std::string name;
  Status status;
  const TensorInfo *info = checkBinding(isInput, index, sizeBytes, name, status);
  if (!info)
    return status;
  if (!device)
    return Status(TESSEL_UNSUPPORTED,
                  name + ": the context runs on the cpu tier; bind host buffers (" +
                      (isInput ? "tessel_context_bind_input" : "tessel_context_bind_output") +
                      ")");
  if (!address && sizeBytes != 0)
    return invalidArgument(name + ": the device address is 0");
  // The kernels use vector loads and stores as wide as the context's own
  // buffers allow (cuMemAlloc gives 256 bytes).
  if (address % format::kConstantAlignment != 0)
    return invalidArgument(name + ": the device address must be aligned to " +
                           std::to_string(format::kConstantAlignment) + " bytes");
  void *hostView = nullptr;
  if (arena.data()) { // a mixed context: its cpu-tier steps need a host view
    size_t slot = isInput ? index : owner->inputs().size() + index;
    if (staging.empty())
      staging.resize(owner->inputs().size() + owner->outputs().size());
    if (staging[slot].size() != sizeBytes || !staging[slot].data())
      staging[slot] = AlignedBuffer(sizeBytes);
    hostView = staging[slot].data();
  }
  if (Status s = device->bindDevice(info->tensor, address); !s.ok())
    return s;
  views[info->tensor].data = hostView;
  (isInput ? inputBound : outputBound)[index] = true;
  return {};
}

Status Context::bindInput(size_t index, const void *data, size_t sizeBytes) {
  // Inputs are only ever read: the verifier rejects steps that write one.
  return bind(/*isInput=*/true, index, const_cast<void *>(data), sizeBytes);
}

Status Context::bindOutput(size_t index, void *data, size_t sizeBytes) {
  return bind(/*isInput=*/false, index, data, sizeBytes);
}

Status Context::bindInputDevice(size_t index, uint64_t address, size_t sizeBytes) {
  return bindDevice(/*isInput=*/true, index, address, sizeBytes);
}

Status Context::bindOutputDevice(size_t index, uint64_t address, size_t sizeBytes) {
  return bindDevice(/*isInput=*/false, index, address, sizeBytes);
}

Status Context::checkAllBound() const {
  for (size_t i = 0; i < inputBound.size(); ++i)
    if (!inputBound[i])
      return invalidArgument("input " + std::to_string(i) + " '" + owner->inputs()[i].name +
                             "' is not bound");
  for (size_t i = 0; i < outputBound.size(); ++i)
    if (!outputBound[i])
      return invalidArgument("output " + std::to_string(i) + " '" + owner->outputs()[i].name +
                             "' is not bound");
  return {};
}

Status Context::run() {
  if (Status s = checkAllBound(); !s.ok())
    return s;
  if (device) {
    Status status = device->run(&Context::runHostStep, this);
    ran |= status.ok();
    return status;
  }
  for (size_t s = 0; s < steps.size(); ++s)
    if (Status status = runStep(s); !status.ok())
      return status;
  ran = true;
  return {};
}

Status Context::outputShape(size_t index, std::vector<int64_t> &shape) {
  const std::vector<TensorInfo> &outputs = owner->outputs();
  if (index >= outputs.size())
    return Status(TESSEL_INVALID_ARGUMENT, "output index " + std::to_string(index) +
                                               " is out of range (the engine has " +
                                               std::to_string(outputs.size()) + ")");
  const TensorInfo &info = outputs[index];
  shape = info.shape;
  if (info.extentTensor < 0)
    return {};
  if (!ran)
    return Status(TESSEL_INVALID_ARGUMENT, "output '" + info.name +
                                               "' has a data-dependent extent, known after a run");
  const fb::Tensor *count = owner->fb()->tensors()->Get(info.extentTensor);
  int64_t extent = 0;
  if (count->storage() == fb::Storage::Constant) {
    std::memcpy(&extent, owner->constants() + count->offset(), sizeof extent);
  } else if (device) {
    if (Status s = device->extent(info.extentTensor, extent); !s.ok())
      return s;
  } else {
    std::memcpy(&extent, views[info.extentTensor].data, sizeof extent);
  }
  if (extent < 0 || extent > info.shape[info.extentAxis])
    return Status(TESSEL_INTERNAL, "output '" + info.name + "': its extent " +
                                       std::to_string(extent) + " exceeds its bound " +
                                       std::to_string(info.shape[info.extentAxis]));
  shape[info.extentAxis] = extent;
  return {};
}

Status Context::enqueue(void *stream) {
  if (Status s = checkAllBound(); !s.ok())
    return s;
  if (!device)
    return Status(TESSEL_UNSUPPORTED, "enqueue needs every step on the GPU, but the context "
                                      "runs on the cpu tier; use tessel_context_run");
  for (size_t s = 0; s < chosen.steps.size(); ++s)
    if (chosen.steps[s].tier == "cpu")
      return Status(TESSEL_UNSUPPORTED, "enqueue needs every step on the GPU, but " +
                                            describeStep(s, owner->fb()->steps()->Get(s)) +
                                            " runs on the cpu tier (" + tierText +
                                            "); use tessel_context_run");
  Status status = device->enqueue(static_cast<gpu::CUstream>(stream));
  ran |= status.ok();
  return status;
}

Status Context::ownStream(void **stream) const {
  if (!device)
    return Status(TESSEL_UNSUPPORTED, "the context runs on the cpu tier: it has no stream");
  *stream = device->ownStream();
  return {};
}

Status Context::profileSteps(double *ms) {
  if (Status s = checkAllBound(); !s.ok())
    return s;
  if (device) {
    Status status = device->profile(&Context::runHostStep, this, ms);
    ran |= status.ok();
    return status;
  }
  for (size_t s = 0; s < steps.size(); ++s) {
    auto start = std::chrono::steady_clock::now();
    if (Status status = runStep(s); !status.ok())
      return status;
    ms[s] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count();
  }
  ran = true;
  return {};
}

namespace {

/// Whether a float tensor holds an infinity or NaN (integers never do).
bool hasNonFinite(const cpu::TensorView &view) {
  const int64_t n = view.numElements();
  auto any = [&](auto test) {
    for (int64_t i = 0; i < n; ++i)
      if (test(i))
        return true;
    return false;
  };
  switch (view.dtype) {
  case cpu::DType::F32:
    return any([&](int64_t i) { return !std::isfinite(static_cast<const float *>(view.data)[i]); });
  case cpu::DType::F64:
    return any([&](int64_t i) { return !std::isfinite(static_cast<const double *>(view.data)[i]); });
  case cpu::DType::F16: // exponent all ones: an infinity or a NaN
    return any([&](int64_t i) {
      return (static_cast<const uint16_t *>(view.data)[i] & 0x7c00) == 0x7c00;
    });
  case cpu::DType::BF16:
    return any([&](int64_t i) {
      return (static_cast<const uint16_t *>(view.data)[i] & 0x7f80) == 0x7f80;
    });
  default:
    return false;
  }
}

/// Whether a float tensor's nonzero values are f16 subnormals (magnitudes
/// below 2^-14; for f32 and f64, values that would be stored in f16) in at
/// least Context::kUnderflowPercent percent of the cases.
bool underflows(const cpu::TensorView &view) {
  const int64_t n = view.numElements();
  int64_t nonzero = 0, subnormal = 0;
  auto count = [&](auto magnitude) {
    for (int64_t i = 0; i < n; ++i) {
      const double m = magnitude(i);
      nonzero += m != 0;
      subnormal += m != 0 && m < 0x1p-14;
    }
  };
  switch (view.dtype) {
  case cpu::DType::F32:
    count([&](int64_t i) { return std::fabs(double(static_cast<const float *>(view.data)[i])); });
    break;
  case cpu::DType::F64:
    count([&](int64_t i) { return std::fabs(static_cast<const double *>(view.data)[i]); });
    break;
  case cpu::DType::F16: // exponent 0: zero or subnormal
    for (int64_t i = 0; i < n; ++i) {
      const uint16_t bits = static_cast<const uint16_t *>(view.data)[i] & 0x7fff;
      nonzero += bits != 0;
      subnormal += bits != 0 && bits < 0x0400;
    }
    break;
  default:
    return false;
  }
  return subnormal > 0 && subnormal * 100 >= nonzero * Context::kUnderflowPercent;
}

} // namespace

Status Context::findSteps(const ViewTest &operandHas, const ViewTest &resultHas,
                          std::vector<size_t> &found) {
  if (Status s = checkAllBound(); !s.ok())
    return s;
  if (device)
    return Status(TESSEL_UNSUPPORTED, "checking each step's results runs on the cpu tier, but "
                                      "the context has GPU steps (" + tierText +
                                          "); create it on TESSEL_TIER_CPU");
  found.clear();
  for (size_t s = 0; s < steps.size(); ++s) {
    // The operands before the step runs: an in-place step overwrites them.
    const bool clean = std::none_of(steps[s].inputs.begin(), steps[s].inputs.end(),
                                    [&](const cpu::TensorView *in) { return in && operandHas(*in); });
    if (Status status = runStep(s); !status.ok())
      return status;
    if (clean && std::any_of(steps[s].outputs.begin(), steps[s].outputs.end(),
                             [&](const cpu::TensorView *out) { return resultHas(*out); }))
      found.push_back(s);
  }
  ran = true;
  return {};
}

Status Context::findNonFinite(std::vector<size_t> &found) {
  return findSteps(hasNonFinite, hasNonFinite, found);
}

Status Context::findUnderflow(std::vector<size_t> &found) {
  // The engine's constants do not excuse a step: weights that are f16
  // subnormals underflowed when the compiler stored them, and the step that
  // reads them is where that shows. Only an f16 result loses what it
  // underflows; an f32 one (a step kept in f32) holds it.
  const uint8_t *constants = owner->constants();
  const uint8_t *constantsEnd = constants + owner->constantsSize();
  return findSteps([&](const cpu::TensorView &in) {
                     const auto *data = static_cast<const uint8_t *>(in.data);
                     return !(data >= constants && data < constantsEnd) && underflows(in);
                   },
                   [](const cpu::TensorView &out) {
                     return out.dtype == cpu::DType::F16 && underflows(out);
                   },
                   found);
}

void Context::prepareCustomCall(size_t index, PreparedStep &step) {
  const fb::Step *engineStep = owner->fb()->steps()->Get(index);
  const auto *tensors = owner->fb()->tensors();
  auto describe = [&](const cpu::TensorView *view, int32_t t) {
    tessel_custom_tensor_t tensor{};
    if (!view)
      return tensor;
    tensor.dtype = static_cast<tessel_dtype_t>(view->dtype);
    tensor.rank = view->shape.size();
    tensor.shape = view->shape.data(); // views are never resized after prepare()
    tensor.layout = fbString(tensors->Get(static_cast<uint32_t>(t))->layout());
    return tensor;
  };
  for (size_t i = 0; i < step.inputs.size(); ++i)
    step.customInputs.push_back(describe(step.inputs[i], engineStep->inputs()->Get(i)));
  for (size_t i = 0; i < step.outputs.size(); ++i)
    step.customOutputs.push_back(describe(step.outputs[i], engineStep->outputs()->Get(i)));
  step.call.domain = step.custom->domain.c_str();
  step.call.op_type = step.custom->opType.c_str();
  step.call.location = fbString(engineStep->location());
  step.call.input_count = step.customInputs.size();
  step.call.inputs = step.customInputs.data();
  step.call.output_count = step.customOutputs.size();
  step.call.outputs = step.customOutputs.data();
  step.call.attrs = &step.attrs;
}

Status Context::runCustomStep(size_t index, PreparedStep &step) {
  // The operands' addresses as bound now (bindings change between runs).
  for (size_t i = 0; i < step.inputs.size(); ++i)
    step.customInputs[i].data = step.inputs[i] ? step.inputs[i]->data : nullptr;
  for (size_t i = 0; i < step.outputs.size(); ++i)
    step.customOutputs[i].data = step.outputs[i]->data;
  char error[512] = {0};
  int result = step.custom->fn(&step.call, step.custom->userData, error, sizeof error);
  if (result == 0)
    return {};
  error[sizeof error - 1] = 0;
  return Status(TESSEL_INTERNAL, describeStep(index, owner->fb()->steps()->Get(index)) +
                                     ": custom op " + step.custom->domain + "." +
                                     step.custom->opType + " failed (" + std::to_string(result) +
                                     (error[0] ? "): " + std::string(error) : ")"));
}

Status Context::runStep(size_t index) {
  PreparedStep &step = steps[index];
  if (step.custom)
    return runCustomStep(index, step);
  cpu::KernelStatus result = step.kernel(step.attrs, step.inputs, step.outputs);
  // A verified engine from tessel-compile should never get here: a kernel
  // rejecting its operands is a compiler/runtime mismatch or bug, or data
  // the kernel cannot accept (e.g. a gather index out of range).
  if (!result.ok())
    return Status(TESSEL_INTERNAL,
                  describeStep(index, owner->fb()->steps()->Get(index)) + ": " + result.error);
  return {};
}

Status Context::runHostStep(void *context, size_t index) {
  return static_cast<Context *>(context)->runStep(index);
}

} // namespace tessel::rt
