//===- driver.cpp - load libcuda with dlopen and probe the devices --------===//
#include "gpu/driver.h"

#include <dlfcn.h>

#include <atomic>

#include <cstdlib>

namespace tessel::rt::gpu {

namespace {

constexpr const char *kDefaultLibrary = "libcuda.so.1";

template <typename F> void assign(F &slot, void *address) {
  slot = reinterpret_cast<F>(address);
}

// Calls `visit(symbol, slot)` for each entry point of `api`, by its exported
// name. The *_v2 names are the ABI that cuda.h's unversioned names have meant
// since CUDA 4; resolving exported names keeps the runtime free of the header.
template <typename Visit> void forEachEntryPoint(DriverApi &api, Visit &&visit) {
  visit("cuInit", api.cuInit);
  visit("cuDriverGetVersion", api.cuDriverGetVersion);
  visit("cuDeviceGetCount", api.cuDeviceGetCount);
  visit("cuDeviceGet", api.cuDeviceGet);
  visit("cuDeviceGetName", api.cuDeviceGetName);
  visit("cuDeviceGetAttribute", api.cuDeviceGetAttribute);
  visit("cuDeviceTotalMem_v2", api.cuDeviceTotalMem);
  visit("cuDevicePrimaryCtxRetain", api.cuDevicePrimaryCtxRetain);
  visit("cuDevicePrimaryCtxRelease_v2", api.cuDevicePrimaryCtxRelease);
  visit("cuCtxCreate_v2", api.cuCtxCreate);
  visit("cuCtxDestroy_v2", api.cuCtxDestroy);
  visit("cuCtxSetCurrent", api.cuCtxSetCurrent);
  visit("cuModuleLoadData", api.cuModuleLoadData);
  visit("cuModuleLoadDataEx", api.cuModuleLoadDataEx);
  visit("cuModuleUnload", api.cuModuleUnload);
  visit("cuModuleGetFunction", api.cuModuleGetFunction);
  visit("cuFuncSetAttribute", api.cuFuncSetAttribute);
  visit("cuMemAlloc_v2", api.cuMemAlloc);
  visit("cuMemFree_v2", api.cuMemFree);
  visit("cuMemcpyHtoD_v2", api.cuMemcpyHtoD);
  visit("cuMemcpyDtoH_v2", api.cuMemcpyDtoH);
  visit("cuMemcpyHtoDAsync_v2", api.cuMemcpyHtoDAsync);
  visit("cuMemcpyDtoHAsync_v2", api.cuMemcpyDtoHAsync);
  visit("cuMemsetD8Async", api.cuMemsetD8Async);
  visit("cuLaunchKernel", api.cuLaunchKernel);
  visit("cuStreamCreate", api.cuStreamCreate);
  visit("cuStreamDestroy_v2", api.cuStreamDestroy);
  visit("cuStreamSynchronize", api.cuStreamSynchronize);
  visit("cuStreamWaitEvent", api.cuStreamWaitEvent);
  visit("cuStreamBeginCapture_v2", api.cuStreamBeginCapture);
  visit("cuStreamEndCapture", api.cuStreamEndCapture);
  visit("cuGraphInstantiateWithFlags", api.cuGraphInstantiateWithFlags);
  visit("cuGraphLaunch", api.cuGraphLaunch);
  visit("cuGraphExecDestroy", api.cuGraphExecDestroy);
  visit("cuGraphDestroy", api.cuGraphDestroy);
  visit("cuEventCreate", api.cuEventCreate);
  visit("cuEventDestroy_v2", api.cuEventDestroy);
  visit("cuEventRecord", api.cuEventRecord);
  visit("cuEventSynchronize", api.cuEventSynchronize);
  visit("cuEventElapsedTime", api.cuEventElapsedTime);
  visit("cuGetErrorString", api.cuGetErrorString);
  visit("cuGetErrorName", api.cuGetErrorName);
}

// Names for the codes a probe or a launch is likely to meet, for when the
// driver's own cuGetErrorName is missing or refuses (the stub library does).
const char *knownErrorName(CUresult result) {
  switch (result) {
  case 0: return "CUDA_SUCCESS";
  case 1: return "CUDA_ERROR_INVALID_VALUE";
  case 2: return "CUDA_ERROR_OUT_OF_MEMORY";
  case 3: return "CUDA_ERROR_NOT_INITIALIZED";
  case 4: return "CUDA_ERROR_DEINITIALIZED";
  case 34: return "CUDA_ERROR_STUB_LIBRARY";
  case 46: return "CUDA_ERROR_DEVICE_UNAVAILABLE";
  case 100: return "CUDA_ERROR_NO_DEVICE";
  case 101: return "CUDA_ERROR_INVALID_DEVICE";
  case 102: return "CUDA_ERROR_DEVICE_NOT_LICENSED";
  case 200: return "CUDA_ERROR_INVALID_IMAGE";
  case 201: return "CUDA_ERROR_INVALID_CONTEXT";
  case 209: return "CUDA_ERROR_NO_BINARY_FOR_GPU";
  case 218: return "CUDA_ERROR_INVALID_PTX";
  case 222: return "CUDA_ERROR_UNSUPPORTED_PTX_VERSION";
  case 500: return "CUDA_ERROR_NOT_FOUND";
  case 400: return "CUDA_ERROR_INVALID_HANDLE";
  case 700: return "CUDA_ERROR_ILLEGAL_ADDRESS";
  case 701: return "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES";
  case 702: return "CUDA_ERROR_LAUNCH_TIMEOUT";
  case 715: return "CUDA_ERROR_ILLEGAL_INSTRUCTION";
  case 716: return "CUDA_ERROR_MISALIGNED_ADDRESS";
  case 719: return "CUDA_ERROR_LAUNCH_FAILED";
  case 802: return "CUDA_ERROR_SYSTEM_NOT_READY";
  case 803: return "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH";
  case 804: return "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE";
  case 999: return "CUDA_ERROR_UNKNOWN";
  }
  return nullptr;
}

Status unsupported(std::string message) {
  return Status(TESSEL_UNSUPPORTED, std::move(message));
}

// The fault hook (failDeviceAllocation): the process-wide driver's
// cuMemAlloc goes through countedMemAlloc, which fails the call the
// countdown reaches as a full device would.
std::atomic<int> allocationsBeforeFault{0};
CUresult (*realMemAlloc)(CUdeviceptr *, size_t) = nullptr;

CUresult countedMemAlloc(CUdeviceptr *pointer, size_t bytes) {
  int left = allocationsBeforeFault.load();
  while (left > 0 && !allocationsBeforeFault.compare_exchange_weak(left, left - 1)) {
  }
  if (left == 1)
    return CUDA_ERROR_OUT_OF_MEMORY;
  return realMemAlloc(pointer, bytes);
}

} // namespace

void failDeviceAllocation(int nth) { allocationsBeforeFault.store(nth > 0 ? nth : 0); }

std::string DeviceInfo::arch() const {
  return "sm_" + std::to_string(ccMajor) + std::to_string(ccMinor);
}

const Driver &Driver::get() {
  // A function-local static: initialized once, thread-safely, on first use.
  // Deliberately never destroyed: libcuda stays loaded until the process
  // exits, so no exit-time destructor races a thread still using it.
  static const Driver *instance = [] {
    const char *override = std::getenv("TESSEL_LIBCUDA");
    bool fromEnvironment = override && *override;
    Driver *driver = new Driver(fromEnvironment ? override : kDefaultLibrary);
    driver->closeOnDestroy = false;
    driver->open(fromEnvironment);
    return driver;
  }();
  return *instance;
}

std::unique_ptr<Driver> Driver::load(const std::string &library) {
  std::unique_ptr<Driver> driver(new Driver(library));
  driver->open(/*fromEnvironment=*/false);
  return driver;
}

std::unique_ptr<Driver> Driver::fake(std::vector<DeviceInfo> devices, int version) {
  std::unique_ptr<Driver> driver(new Driver("(fake)"));
  driver->driverVersion = version;
  driver->deviceInfos = std::move(devices);
  if (driver->deviceInfos.empty())
    driver->loadStatus = unsupported("no CUDA device: the driver (fake) reports none");
  return driver;
}

Driver::~Driver() {
  if (handle && closeOnDestroy)
    dlclose(handle);
}

void Driver::open(bool fromEnvironment) {
  const std::string origin = fromEnvironment ? "TESSEL_LIBCUDA=" + libraryName + "; " : "";
  // dlerror() is per-thread in glibc, so reading it right after dlopen is safe.
  dlerror();
  handle = dlopen(libraryName.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *error = dlerror();
    std::string why = error ? error : "unknown error";
    bool missing = why.find("No such file") != std::string::npos;
    loadStatus = unsupported("no CUDA driver: " + libraryName +
                             (missing ? " not found" : " could not be loaded") + " (" + origin +
                             "dlopen: " + why + ")");
    return;
  }
  if (Status s = resolve(); !s.ok()) {
    loadStatus = std::move(s);
    return;
  }
  // The version needs no cuInit; knowing it helps explain a failing cuInit.
  if (entry.cuDriverGetVersion(&driverVersion) != CUDA_SUCCESS)
    driverVersion = 0;
  loadStatus = probe();
  if (!loadStatus.ok())
    deviceInfos.clear();
}

Status Driver::resolve() {
  std::vector<const char *> missing;
  size_t total = 0;
  forEachEntryPoint(entry, [&](const char *symbol, auto &slot) {
    ++total;
    void *address = dlsym(handle, symbol);
    assign(slot, address);
    if (!address)
      missing.push_back(symbol);
  });
  if (missing.empty()) {
    assign(entry.cuLaunchKernelEx, dlsym(handle, "cuLaunchKernelEx"));
    assign(entry.cuTensorMapEncodeTiled, dlsym(handle, "cuTensorMapEncodeTiled"));
    assign(entry.cuTensorMapEncodeIm2col, dlsym(handle, "cuTensorMapEncodeIm2col"));
    // The process-wide driver's allocations (every context's) go through
    // the fault hook; a driver a test loads and unloads keeps its own.
    if (!closeOnDestroy) {
      realMemAlloc = entry.cuMemAlloc;
      entry.cuMemAlloc = countedMemAlloc;
    }
    return {};
  }
  std::string list;
  for (size_t i = 0; i < missing.size() && i < 6; ++i)
    list += (i ? ", " : "") + std::string(missing[i]);
  if (missing.size() > 6)
    list += ", ...";
  entry = DriverApi{};
  return unsupported("no CUDA driver: " + libraryName + " lacks " +
                     std::to_string(missing.size()) + " of the " + std::to_string(total) +
                     " driver API entry points the runtime needs (" + list +
                     "): it is not the CUDA driver library, or one older than CUDA 11.4");
}

Status Driver::probe() {
  if (CUresult r = entry.cuInit(0); r != CUDA_SUCCESS)
    return unsupported("cuInit failed: " + errorText(r) + " (" + libraryName +
                       (driverVersion ? ", driver CUDA " + versionText() : std::string()) + ")");
  int count = 0;
  if (CUresult r = entry.cuDeviceGetCount(&count); r != CUDA_SUCCESS)
    return unsupported("cuDeviceGetCount failed: " + errorText(r));
  if (count <= 0)
    return unsupported("no CUDA device: the driver (CUDA " + versionText() +
                       ") reports none");
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    DeviceInfo info;
    info.ordinal = ordinal;
    std::string where = "CUDA device " + std::to_string(ordinal);
    CUdevice device = 0;
    char name[256] = {};
    size_t memory = 0;
    if (CUresult r = entry.cuDeviceGet(&device, ordinal); r != CUDA_SUCCESS)
      return unsupported("cuDeviceGet(" + std::to_string(ordinal) + ") failed: " + errorText(r));
    if (CUresult r = entry.cuDeviceGetName(name, sizeof(name) - 1, device); r != CUDA_SUCCESS)
      return unsupported("cuDeviceGetName failed for " + where + ": " + errorText(r));
    info.name = name;
    struct {
      CUdeviceAttribute attribute;
      int *value;
      const char *what;
    } attributes[] = {
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &info.ccMajor, "compute capability"},
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &info.ccMinor, "compute capability"},
        {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &info.smCount, "SM count"},
        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &info.maxSharedBytesOptin,
         "shared memory limit"},
    };
    for (const auto &a : attributes)
      if (CUresult r = entry.cuDeviceGetAttribute(a.value, a.attribute, device);
          r != CUDA_SUCCESS)
        return unsupported("cannot read the " + std::string(a.what) + " of " + where + ": " +
                           errorText(r));
    if (CUresult r = entry.cuDeviceTotalMem(&memory, device); r != CUDA_SUCCESS)
      return unsupported("cannot read the memory size of " + where + ": " + errorText(r));
    info.memoryBytes = memory;
    deviceInfos.push_back(std::move(info));
  }
  return {};
}

std::string Driver::versionText() const {
  if (driverVersion <= 0)
    return "";
  return std::to_string(driverVersion / 1000) + "." + std::to_string(driverVersion % 1000 / 10);
}

std::string Driver::errorText(CUresult result) const {
  const char *name = nullptr, *description = nullptr;
  if (entry.cuGetErrorName && entry.cuGetErrorName(result, &name) != CUDA_SUCCESS)
    name = nullptr;
  if (entry.cuGetErrorString && entry.cuGetErrorString(result, &description) != CUDA_SUCCESS)
    description = nullptr;
  if (!name)
    name = knownErrorName(result);
  std::string text = name ? name : "CUDA error " + std::to_string(result);
  if (description && *description)
    text += std::string(" (") + description + ")";
  else if (name)
    text += " (error " + std::to_string(result) + ")";
  return text;
}

Status Driver::check(CUresult result, const char *what, tessel_status_code_t code) const {
  if (result == CUDA_SUCCESS)
    return {};
  return Status(code, std::string(what) + " failed: " + errorText(result));
}

} // namespace tessel::rt::gpu
