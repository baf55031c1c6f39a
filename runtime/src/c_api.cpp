//===- c_api.cpp - the C API over the engine and the executor -------------===//
//
// The only exported symbols of libtessel_runtime. Every entry point is
// noexcept: C++ exceptions stop here and become statuses (std::bad_alloc ->
// TESSEL_OUT_OF_MEMORY, anything else -> TESSEL_INTERNAL).
//
//===----------------------------------------------------------------------===//
#include "tessel_runtime.h"

#include "custom_ops.h"
#include "engine.h"
#include "executor.h"
#include "gpu/driver.h"

#include <algorithm>
#include <exception>
#include <memory>
#include <new>
#include <string>

using tessel::rt::Status;

struct tessel_status_s {
  tessel_status_code_t code;
  std::string message;
};

struct tessel_engine_s {
  std::shared_ptr<const tessel::rt::Engine> engine;
};

struct tessel_context_s {
  std::unique_ptr<tessel::rt::Context> context;
};

namespace {

// The C enums mirror the schema's and the kernels' enums value for value.
static_assert(TESSEL_DTYPE_F32 == static_cast<int>(tessel::engine::DType::f32) &&
                  TESSEL_DTYPE_BF16 == static_cast<int>(tessel::engine::DType::bf16) &&
                  TESSEL_DTYPE_BOOL == static_cast<int>(tessel::engine::DType::bool_) &&
                  TESSEL_DTYPE_BOOL == static_cast<int>(tessel::cpu::DType::Bool) &&
                  TESSEL_DTYPE_U64 == static_cast<int>(tessel::cpu::DType::U64),
              "tessel_dtype_t must match the engine schema's DType");

// Reporting that memory ran out must not need memory: this status is
// preallocated and tessel_status_free leaves it alone.
tessel_status_s outOfMemory{TESSEL_OUT_OF_MEMORY, "out of memory"};

tessel_status_t makeStatus(tessel_status_code_t code, const std::string &message) noexcept {
  try {
    return new tessel_status_s{code, message};
  } catch (...) {
    return &outOfMemory;
  }
}

tessel_status_t toC(const Status &status) noexcept {
  return status.ok() ? nullptr : makeStatus(status.code(), status.message());
}

tessel_status_t invalidArgument(const char *message) noexcept {
  return makeStatus(TESSEL_INVALID_ARGUMENT, message);
}

/// Runs `body` (returning a Status) with every exception turned into a status.
template <typename F> tessel_status_t guarded(F &&body) noexcept {
  try {
    return toC(body());
  } catch (const std::bad_alloc &) {
    return &outOfMemory;
  } catch (const std::exception &e) {
    return makeStatus(TESSEL_INTERNAL, std::string("internal error: ") + e.what());
  } catch (...) {
    return makeStatus(TESSEL_INTERNAL, "internal error: unknown exception");
  }
}

/// "[1,3,224,224]".
std::string shapeText(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? "," : "") + std::to_string(shape[i]);
  return text + "]";
}

bool validDType(tessel_dtype_t dtype) {
  return dtype >= TESSEL_DTYPE_F32 && dtype <= TESSEL_DTYPE_BOOL;
}

tessel_status_t tensorInfo(const tessel_engine_t *engine, size_t index,
                           tessel_tensor_info_t *info, bool isInput) noexcept {
  if (!engine)
    return invalidArgument("engine is NULL");
  if (!info)
    return invalidArgument("info is NULL");
  const auto &infos = isInput ? engine->engine->inputs() : engine->engine->outputs();
  if (index >= infos.size()) {
    const char *what = isInput ? "input" : "output";
    return guarded([&] {
      return tessel::rt::invalidArgument(
          std::string(what) + " index " + std::to_string(index) +
          " is out of range: the engine has " + std::to_string(infos.size()) + " " + what +
          (infos.size() == 1 ? "" : "s"));
    });
  }
  const tessel::rt::TensorInfo &t = infos[index];
  info->name = t.name.c_str();
  info->dtype = static_cast<tessel_dtype_t>(t.dtype);
  info->rank = t.shape.size();
  info->shape = t.shape.data();
  info->layout = t.layout.c_str();
  info->size_bytes = t.sizeBytes;
  return nullptr;
}

/// The attribute `name` of a custom call, or null.
const tessel::cpu::AttrValue *customAttr(const tessel_custom_call_t *call, const char *name) {
  if (!call || !call->attrs || !name)
    return nullptr;
  const auto &all = static_cast<const tessel::cpu::Attrs *>(call->attrs)->all();
  auto it = all.find(name);
  return it == all.end() ? nullptr : &it->second;
}

/// tessel_custom_attr_ints / _floats: an array attribute of element type T.
template <typename T>
int customArray(const tessel_custom_call_t *call, const char *name, const T **values,
                size_t *count) {
  const auto *attr = customAttr(call, name);
  const auto *array = attr ? std::get_if<std::vector<T>>(attr) : nullptr;
  if (!array || !values || !count)
    return 0;
  *values = array->data();
  *count = array->size();
  return 1;
}

} // namespace

extern "C" {

tessel_status_code_t tessel_status_code(tessel_status_t status) {
  return status ? status->code : TESSEL_OK;
}

const char *tessel_status_message(tessel_status_t status) {
  return status ? status->message.c_str() : "";
}

void tessel_status_free(tessel_status_t status) {
  if (status != &outOfMemory)
    delete status;
}

const char *tessel_dtype_name(tessel_dtype_t dtype) {
  return validDType(dtype) ? tessel::cpu::dtypeName(static_cast<tessel::cpu::DType>(dtype))
                           : "invalid";
}

size_t tessel_dtype_size(tessel_dtype_t dtype) {
  return validDType(dtype) ? tessel::cpu::dtypeSize(static_cast<tessel::cpu::DType>(dtype)) : 0;
}

tessel_status_t tessel_engine_open_file(const char *path, tessel_engine_t **engine) {
  if (!engine)
    return invalidArgument("engine (the result pointer) is NULL");
  *engine = nullptr;
  if (!path)
    return invalidArgument("path is NULL");
  return guarded([&] {
    auto handle = std::make_unique<tessel_engine_s>();
    Status status = tessel::rt::Engine::openFile(path, handle->engine);
    if (status.ok())
      *engine = handle.release();
    return status;
  });
}

tessel_status_t tessel_engine_open_memory(const void *data, size_t size,
                                          tessel_engine_t **engine) {
  if (!engine)
    return invalidArgument("engine (the result pointer) is NULL");
  *engine = nullptr;
  return guarded([&] {
    auto handle = std::make_unique<tessel_engine_s>();
    Status status = tessel::rt::Engine::openMemory(data, size, handle->engine);
    if (status.ok())
      *engine = handle.release();
    return status;
  });
}

void tessel_engine_release(tessel_engine_t *engine) { delete engine; }

size_t tessel_engine_input_count(const tessel_engine_t *engine) {
  return engine ? engine->engine->inputs().size() : 0;
}

size_t tessel_engine_output_count(const tessel_engine_t *engine) {
  return engine ? engine->engine->outputs().size() : 0;
}

size_t tessel_engine_profile_count(const tessel_engine_t *engine) {
  return engine ? engine->engine->profileCount() : 0;
}

size_t tessel_engine_profile_index(const tessel_engine_t *engine) {
  return engine ? engine->engine->profileIndex() : 0;
}

tessel_status_t tessel_engine_profile(const tessel_engine_t *engine, size_t index,
                                      tessel_engine_t **profile) {
  if (!profile)
    return invalidArgument("profile (the result pointer) is NULL");
  *profile = nullptr;
  if (!engine)
    return invalidArgument("engine is NULL");
  return guarded([&] {
    size_t count = engine->engine->profileCount();
    if (index >= count)
      return tessel::rt::invalidArgument("profile " + std::to_string(index) +
                                         " is out of range: the engine has " +
                                         std::to_string(count));
    auto handle = std::make_unique<tessel_engine_s>();
    handle->engine = engine->engine->withProfile(index);
    *profile = handle.release();
    return Status();
  });
}

tessel_status_t tessel_engine_find_profile(const tessel_engine_t *engine, size_t input,
                                           const int64_t *shape, size_t rank, size_t *index) {
  if (!engine || !index || (!shape && rank != 0))
    return invalidArgument("tessel_engine_find_profile: engine, shape or index is NULL");
  return guarded([&] {
    if (input >= engine->engine->inputs().size())
      return tessel::rt::invalidArgument("input " + std::to_string(input) +
                                         " is out of range: the engine has " +
                                         std::to_string(engine->engine->inputs().size()));
    std::vector<int64_t> wanted(shape, shape + rank);
    std::string shapes;
    for (size_t p = 0; p < engine->engine->profileCount(); ++p) {
      std::shared_ptr<const tessel::rt::Engine> view = engine->engine->withProfile(p);
      const std::vector<int64_t> &have = view->inputs()[input].shape;
      if (have == wanted) {
        *index = p;
        return Status();
      }
      shapes += (shapes.empty() ? "" : ", ") + shapeText(have);
    }
    return tessel::rt::invalidArgument("no profile has input '" +
                                       engine->engine->inputs()[input].name + "' of shape " +
                                       shapeText(wanted) + " (the profiles': " + shapes + ")");
  });
}

tessel_status_t tessel_engine_file(const tessel_engine_t *engine, const void **data,
                                  size_t *size) {
  if (!engine || !data || !size)
    return invalidArgument("tessel_engine_file: engine, data or size is NULL");
  *data = engine->engine->fileData();
  *size = engine->engine->fileSize();
  return nullptr;
}

tessel_status_t tessel_engine_input_info(const tessel_engine_t *engine, size_t index,
                                         tessel_tensor_info_t *info) {
  return tensorInfo(engine, index, info, /*isInput=*/true);
}

tessel_status_t tessel_engine_output_info(const tessel_engine_t *engine, size_t index,
                                          tessel_tensor_info_t *info) {
  return tensorInfo(engine, index, info, /*isInput=*/false);
}

int64_t tessel_engine_output_dynamic_axis(const tessel_engine_t *engine, size_t index) {
  if (!engine || index >= engine->engine->outputs().size())
    return -1;
  return engine->engine->outputs()[index].extentAxis;
}

tessel_status_t tessel_context_create(const tessel_engine_t *engine,
                                      const tessel_context_options_t *options,
                                      tessel_context_t **context) {
  if (!context)
    return invalidArgument("context (the result pointer) is NULL");
  *context = nullptr;
  if (!engine)
    return invalidArgument("engine is NULL");
  tessel_tier_t tier = options ? options->tier : TESSEL_TIER_AUTO;
  if (tier < TESSEL_TIER_AUTO || tier > TESSEL_TIER_TC_SM80)
    return invalidArgument("tier is not a tessel_tier_t (AUTO, CPU, SIMT, TC, TC_SM70 or TC_SM80)");
  return guarded([&] {
    auto handle = std::make_unique<tessel_context_s>();
    Status status = tessel::rt::Context::create(engine->engine, tier, handle->context);
    if (status.ok())
      *context = handle.release();
    return status;
  });
}

void tessel_context_release(tessel_context_t *context) { delete context; }

tessel_status_t tessel_context_bind_input(tessel_context_t *context, size_t index,
                                          const void *data, size_t size_bytes) {
  if (!context)
    return invalidArgument("context is NULL");
  return guarded([&] { return context->context->bindInput(index, data, size_bytes); });
}

tessel_status_t tessel_context_bind_output(tessel_context_t *context, size_t index,
                                           void *data, size_t size_bytes) {
  if (!context)
    return invalidArgument("context is NULL");
  return guarded([&] { return context->context->bindOutput(index, data, size_bytes); });
}

tessel_status_t tessel_context_bind_input_device(tessel_context_t *context, size_t index,
                                                 uint64_t device_ptr, size_t size_bytes) {
  if (!context)
    return invalidArgument("context is NULL");
  return guarded(
      [&] { return context->context->bindInputDevice(index, device_ptr, size_bytes); });
}

tessel_status_t tessel_context_bind_output_device(tessel_context_t *context, size_t index,
                                                  uint64_t device_ptr, size_t size_bytes) {
  if (!context)
    return invalidArgument("context is NULL");
  return guarded(
      [&] { return context->context->bindOutputDevice(index, device_ptr, size_bytes); });
}

tessel_status_t tessel_context_run(tessel_context_t *context) {
  if (!context)
    return invalidArgument("context is NULL");
  return guarded([&] { return context->context->run(); });
}

tessel_status_t tessel_context_enqueue(tessel_context_t *context, void *cu_stream) {
  if (!context)
    return invalidArgument("context is NULL");
  return guarded([&] { return context->context->enqueue(cu_stream); });
}

tessel_status_t tessel_context_stream(const tessel_context_t *context, void **cu_stream) {
  if (!context || !cu_stream)
    return invalidArgument(!context ? "context is NULL" : "cu_stream is NULL");
  return guarded([&] { return context->context->ownStream(cu_stream); });
}

tessel_status_t tessel_context_output_shape(tessel_context_t *context, size_t index,
                                            int64_t *shape, size_t rank) {
  if (!context || !shape)
    return invalidArgument(!context ? "context is NULL" : "shape is NULL");
  return guarded([&] {
    std::vector<int64_t> dims;
    if (tessel::rt::Status s = context->context->outputShape(index, dims); !s.ok())
      return s;
    if (rank != dims.size())
      return tessel::rt::invalidArgument("rank is " + std::to_string(rank) + ", but output " +
                                         std::to_string(index) + " has rank " +
                                         std::to_string(dims.size()));
    std::copy(dims.begin(), dims.end(), shape);
    return tessel::rt::Status{};
  });
}

namespace {
tessel_status_t findSteps(tessel_context_t *context, size_t *steps, size_t capacity, size_t *count,
                          tessel::rt::Status (tessel::rt::Context::*find)(std::vector<size_t> &)) {
  if (!context || !count || (!steps && capacity))
    return invalidArgument(!context ? "context is NULL"
                                    : !count ? "count is NULL" : "steps is NULL");
  return guarded([&] {
    std::vector<size_t> found;
    if (tessel::rt::Status s = (context->context.get()->*find)(found); !s.ok())
      return s;
    *count = found.size();
    std::copy(found.begin(), found.begin() + std::min(capacity, found.size()), steps);
    return tessel::rt::Status{};
  });
}
} // namespace

tessel_status_t tessel_context_find_nonfinite(tessel_context_t *context, size_t *steps,
                                              size_t capacity, size_t *count) {
  return findSteps(context, steps, capacity, count, &tessel::rt::Context::findNonFinite);
}

tessel_status_t tessel_context_find_underflow(tessel_context_t *context, size_t *steps,
                                              size_t capacity, size_t *count) {
  return findSteps(context, steps, capacity, count, &tessel::rt::Context::findUnderflow);
}

tessel_status_t tessel_context_profile_steps(tessel_context_t *context, double *ms,
                                             size_t count) {
  if (!context)
    return invalidArgument("context is NULL");
  if (!ms)
    return invalidArgument("ms is NULL");
  return guarded([&] {
    size_t steps = context->context->selection().steps.size();
    if (count != steps)
      return tessel::rt::invalidArgument(
          "count is " + std::to_string(count) + ", but the context has " +
          std::to_string(steps) + " step" + (steps == 1 ? "" : "s") +
          " (tessel_context_step_count)");
    return context->context->profileSteps(ms);
  });
}

const char *tessel_context_tier(const tessel_context_t *context) {
  return context ? context->context->tier() : "";
}

const char *tessel_context_tier_summary(const tessel_context_t *context) {
  return context ? context->context->tierSummary() : "";
}

size_t tessel_context_step_count(const tessel_context_t *context) {
  return context ? context->context->selection().steps.size() : 0;
}

tessel_status_t tessel_context_step_info(const tessel_context_t *context, size_t index,
                                         tessel_step_info_t *info) {
  if (!context)
    return invalidArgument("context is NULL");
  if (!info)
    return invalidArgument("info is NULL");
  const tessel::rt::Context &c = *context->context;
  const auto &steps = c.selection().steps;
  if (index >= steps.size())
    return guarded([&] {
      return tessel::rt::invalidArgument("step index " + std::to_string(index) +
                                         " is out of range: the engine has " +
                                         std::to_string(steps.size()) + " step" +
                                         (steps.size() == 1 ? "" : "s"));
    });
  const tessel::engine::Step *step = c.engine().fb()->steps()->Get(index);
  info->op = tessel::rt::fbString(step->op());
  info->location = tessel::rt::fbString(step->location());
  info->tier = steps[index].tier.c_str();
  info->kernel = steps[index].kernel.c_str();
  info->reason = steps[index].reason.c_str();
  return nullptr;
}

tessel_status_t tessel_driver_status(void) {
  return guarded([] { return tessel::rt::gpu::Driver::get().status(); });
}

int tessel_driver_version(void) {
  try {
    return tessel::rt::gpu::Driver::get().version();
  } catch (...) {
    return 0; // the probe ran out of memory
  }
}

size_t tessel_device_count(void) {
  try {
    return tessel::rt::gpu::Driver::get().devices().size();
  } catch (...) {
    return 0;
  }
}

tessel_status_t tessel_device_info(size_t index, tessel_device_info_t *info) {
  if (!info)
    return invalidArgument("info is NULL");
  return guarded([&] {
    const tessel::rt::gpu::Driver &driver = tessel::rt::gpu::Driver::get();
    const auto &devices = driver.devices();
    if (index >= devices.size())
      return tessel::rt::invalidArgument(
          "device index " + std::to_string(index) + " is out of range: " +
          (devices.empty() ? "there is no usable device (" + driver.status().message() + ")"
                           : "the machine has " + std::to_string(devices.size()) + " device" +
                                 (devices.size() == 1 ? "" : "s")));
    const tessel::rt::gpu::DeviceInfo &device = devices[index];
    info->name = device.name.c_str();
    info->compute_capability_major = device.ccMajor;
    info->compute_capability_minor = device.ccMinor;
    info->sm_count = device.smCount;
    info->memory_bytes = device.memoryBytes;
    info->tensor_cores = device.tensorCores() ? 1 : 0;
    return Status();
  });
}

tessel_status_t tessel_register_custom_op(const char *domain, const char *op_type,
                                          tessel_custom_cpu_fn fn, void *user_data) {
  if (!domain || !op_type)
    return invalidArgument("tessel_register_custom_op: domain and op_type must not be NULL");
  return guarded([&] { return tessel::rt::registerCustomOp(domain, op_type, fn, user_data); });
}

int tessel_custom_attr_int(const tessel_custom_call_t *call, const char *name, int64_t *value) {
  const auto *attr = customAttr(call, name);
  const int64_t *i = attr ? std::get_if<int64_t>(attr) : nullptr;
  if (!i || !value)
    return 0;
  *value = *i;
  return 1;
}

int tessel_custom_attr_float(const tessel_custom_call_t *call, const char *name, double *value) {
  const auto *attr = customAttr(call, name);
  if (!attr || !value)
    return 0;
  if (const double *f = std::get_if<double>(attr))
    *value = *f;
  else if (const int64_t *i = std::get_if<int64_t>(attr))
    *value = static_cast<double>(*i);
  else
    return 0;
  return 1;
}

int tessel_custom_attr_ints(const tessel_custom_call_t *call, const char *name,
                            const int64_t **values, size_t *count) {
  return customArray(call, name, values, count);
}

int tessel_custom_attr_floats(const tessel_custom_call_t *call, const char *name,
                              const double **values, size_t *count) {
  return customArray(call, name, values, count);
}

int tessel_custom_attr_string(const tessel_custom_call_t *call, const char *name,
                              const char **value) {
  const auto *attr = customAttr(call, name);
  const auto *text = attr ? std::get_if<std::string>(attr) : nullptr;
  if (!text || !value)
    return 0;
  *value = text->c_str();
  return 1;
}

} // extern "C"
