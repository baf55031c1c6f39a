//===- device_engine.cpp - constants and modules of an engine on one GPU --===//
#include "gpu/device_engine.h"

#include "gpu/image_decoder.h"
#include "gpu/tiers.h"

#include <cstdint>
#include <cstring>

namespace tessel::rt::gpu {
namespace fb = tessel::engine;

namespace {

/// The driver's JIT error log is cut at this size; a PTX error is one line
/// per problem, and the first few name the cause.
constexpr size_t kJitLogBytes = 16 * 1024;

std::string moduleName(const Engine &engine, size_t index) {
  return "module " + std::to_string(index) + " '" +
         fbString(engine.modules()->Get(index)->name()) + "'";
}

} // namespace

DeviceEngine::DeviceEngine(std::shared_ptr<const Engine> engine, const Driver &driver,
                           const DeviceInfo &device)
    : owner(std::move(engine)), api(driver), info(device) {
  const auto *list = owner->modules();
  modules.resize(list ? list->size() : 0);
}

Status DeviceEngine::acquire(std::shared_ptr<const Engine> engine, const Driver &driver,
                             const DeviceInfo &device, std::shared_ptr<DeviceEngine> &shared) {
  // Keyed by the engine file's bytes, which every profile of the engine
  // shares (one copy of the constants on the device for all of them): an
  // entry that still locks holds the bytes alive, so the address cannot have
  // been reused by another engine.
  using Key = std::pair<const uint8_t *, int>;
  static std::mutex registryMutex;
  static auto *registry = new std::map<Key, std::weak_ptr<DeviceEngine>>();
  std::lock_guard<std::mutex> lock(registryMutex);
  for (auto it = registry->begin(); it != registry->end();)
    it = it->second.expired() ? registry->erase(it) : std::next(it);
  Key key{engine->fileData(), device.ordinal};
  auto found = registry->find(key);
  if (found != registry->end())
    if ((shared = found->second.lock()))
      return {};
  std::shared_ptr<DeviceEngine> made(new DeviceEngine(std::move(engine), driver, device));
  if (Status s = made->open(); !s.ok())
    return s;
  (*registry)[key] = made;
  shared = std::move(made);
  return {};
}

Status DeviceEngine::open() {
  const DriverApi &cu = api.api();
  if (Status s = api.check(cu.cuDeviceGet(&deviceHandle, info.ordinal), "cuDeviceGet"); !s.ok())
    return s;
  if (Status s = api.check(cu.cuDevicePrimaryCtxRetain(&context, deviceHandle),
                           "cuDevicePrimaryCtxRetain");
      !s.ok()) {
    context = nullptr;
    return s;
  }
  if (Status s = makeCurrent(); !s.ok())
    return s;
  const uint64_t size = owner->constantsSize();
  if (size == 0)
    return {};
  if (Status s = api.check(cu.cuMemAlloc(&constantBase, size),
                           ("cuMemAlloc of the " + std::to_string(size) +
                            "-byte constants on " + info.arch())
                               .c_str(),
                           TESSEL_OUT_OF_MEMORY);
      !s.ok()) {
    constantBase = 0;
    return s;
  }
  // On a stream of its own, waited for on that stream: a copy from pageable
  // memory may return before its DMA lands, and the contexts' non-blocking
  // streams are not ordered after it, so the upload is finished before any
  // kernel can read the weights; a whole-context synchronization instead
  // would fail while another thread captures a CUDA graph (issue 17).
  CUstream upload = nullptr;
  if (Status s = api.check(cu.cuStreamCreate(&upload, CU_STREAM_NON_BLOCKING),
                           "cuStreamCreate for the constants upload");
      !s.ok())
    return s;
  Status status = api.check(cu.cuMemcpyHtoDAsync(constantBase, owner->constants(), size, upload),
                            "uploading the constants (cuMemcpyHtoDAsync)");
  if (status.ok())
    status = api.check(cu.cuStreamSynchronize(upload), "cuStreamSynchronize after the constants upload");
  cu.cuStreamDestroy(upload);
  return status;
}

DeviceEngine::~DeviceEngine() {
  if (!context)
    return;
  // Errors cannot be reported from here; a failed call leaks what the
  // primary context's release reclaims anyway.
  const DriverApi &cu = api.api();
  cu.cuCtxSetCurrent(context);
  for (ModuleSlot &module : modules)
    if (module.handle)
      cu.cuModuleUnload(module.handle);
  if (constantBase)
    cu.cuMemFree(constantBase);
  cu.cuDevicePrimaryCtxRelease(deviceHandle);
}

Status DeviceEngine::makeCurrent() const {
  return api.check(api.api().cuCtxSetCurrent(context), "cuCtxSetCurrent");
}

Status DeviceEngine::loadModule(size_t index) {
  std::lock_guard<std::mutex> lock(mutex);
  return loadModuleLocked(index);
}

Status DeviceEngine::loadModuleLocked(size_t index) {
  ModuleSlot &slot = modules.at(index);
  if (slot.tried)
    return slot.failure;
  slot.tried = true;
  const fb::KernelModule *module = owner->modules()->Get(index);
  int chosen = format::chooseImage(module, info.computeCapability());
  if (chosen < 0) {
    slot.failure = Status(TESSEL_UNSUPPORTED, moduleName(*owner, index) + " has no image for " +
                                                  info.arch());
    return slot.failure;
  }
  const fb::KernelImage *image = module->images()->Get(chosen);
  const bool ptx = image->format() == fb::ImageFormat::PTX;
  if (Status s = makeCurrent(); !s.ok())
    return slot.failure = s;

  // A compressed image decoded (checked: its size, PTX's NUL).
  std::vector<uint8_t> decoded;
  const uint8_t *bytes = nullptr;
  size_t size = 0;
  if (Status s = imageBytes(image, moduleName(*owner, index) + " image " +
                                       std::to_string(chosen), decoded, bytes, size);
      !s.ok())
    return slot.failure = s;
  // The driver reads a cubin as an ELF image in place, and FlatBuffers aligns
  // vector data to 4 bytes only: give it 8 (a decoded vector's data has it).
  const void *data = bytes;
  std::vector<uint64_t> aligned;
  if (!ptx && reinterpret_cast<uintptr_t>(data) % alignof(uint64_t) != 0) {
    aligned.resize((size + 7) / 8);
    std::memcpy(aligned.data(), data, size);
    data = aligned.data();
  }
  std::string log(kJitLogBytes, '\0');
  CUjitOption options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log.data(), reinterpret_cast<void *>(uintptr_t(log.size()))};
  CUresult result = api.api().cuModuleLoadDataEx(&slot.handle, data, 2, options, values);
  if (result == CUDA_SUCCESS) {
    slot.waitsForPriorGrids = image->waits_for_prior_grids();
    return {};
  }
  slot.handle = nullptr;
  log.resize(std::strlen(log.c_str()));
  while (!log.empty() && (log.back() == '\n' || log.back() == ' '))
    log.pop_back();
  slot.failure = Status(
      TESSEL_UNSUPPORTED,
      moduleName(*owner, index) + ": loading its " +
          (ptx ? "PTX (target sm_" : "cubin (sm_") + std::to_string(image->arch()) + ") on " +
          info.arch() + " (" + info.name + ") failed: " + api.errorText(result) +
          (log.empty() ? "" : "; the driver's JIT log: " + log));
  return slot.failure;
}

Status DeviceEngine::function(size_t index, const std::string &name, unsigned sharedBytes,
                              CUfunction &function, bool &waitsForPriorGrids) {
  std::lock_guard<std::mutex> lock(mutex);
  if (Status s = loadModuleLocked(index); !s.ok())
    return s;
  if (Status s = makeCurrent(); !s.ok())
    return s;
  FunctionSlot &slot = functions[{index, name}];
  if (!slot.handle) {
    CUresult result = api.api().cuModuleGetFunction(&slot.handle, modules[index].handle,
                                                    name.c_str());
    if (result != CUDA_SUCCESS) {
      slot.handle = nullptr;
      return Status(TESSEL_INVALID_ENGINE, moduleName(*owner, index) + " has no kernel '" +
                                               name + "': " + api.errorText(result));
    }
  }
  if (sharedBytes > slot.sharedAllowed) {
    CUresult result = api.api().cuFuncSetAttribute(
        slot.handle, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
        static_cast<int>(sharedBytes));
    if (result != CUDA_SUCCESS)
      return Status(TESSEL_UNSUPPORTED, "kernel '" + name + "' of " +
                                            moduleName(*owner, index) + " needs " +
                                            std::to_string(sharedBytes) +
                                            " bytes of dynamic shared memory, which " +
                                            info.arch() + " refuses: " + api.errorText(result));
    slot.sharedAllowed = sharedBytes;
  }
  function = slot.handle;
  waitsForPriorGrids = modules[index].waitsForPriorGrids;
  return {};
}

} // namespace tessel::rt::gpu
