//===- driver.h - the CUDA driver, loaded at run time ----------*- C++ -*-===//
//
// The GPU tiers talk to the CUDA driver API through libcuda.so.1, opened with
// dlopen(RTLD_NOW | RTLD_LOCAL) the first time anything asks for it. Nothing of
// CUDA is linked or included: the few driver types and enums used are
// declared below, so libtessel_runtime builds where no toolkit is installed
// and loads where no driver is.
//
// Driver::get() is the process-wide instance: loaded, initialized (cuInit)
// and probed once, on first use, thread-safely (a function-local static; no
// global constructor). It never fails: when the driver is missing or unusable,
// status() says why and devices() is empty. The library stays loaded until
// the process exits.
//
// TESSEL_LIBCUDA (environment): the library to open instead of libcuda.so.1
// (a path or a soname). Read once, at the first Driver::get(). Tests use it to
// simulate a missing driver (a nonexistent file) or a broken one (a library
// that is not the CUDA driver, e.g. libm.so.6).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_GPU_DRIVER_H
#define TESSEL_RUNTIME_GPU_DRIVER_H

#include "status.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tessel::rt::gpu {

// The driver API's types, as its ABI defines them (cuda.h, CUDA 11-13).
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;
using CUevent = struct CUevent_st *;
using CUgraph = struct CUgraph_st *;
using CUgraphExec = struct CUgraphExec_st *;

constexpr CUresult CUDA_SUCCESS = 0;

// cuLaunchKernelEx's configuration (cuda.h's CUlaunchConfig and
// CUlaunchAttribute, CUDA 12-13), for the one attribute used: programmatic
// stream serialization (a kernel that waits for the grids before it may be
// launched during their tail).
constexpr int CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6;
struct CUlaunchAttribute {
  int id;
  char pad[4];
  union {
    char bytes[64];
    int programmaticStreamSerializationAllowed;
  } value;
};
struct CUlaunchConfig {
  unsigned gridDimX, gridDimY, gridDimZ;
  unsigned blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute *attrs;
  unsigned numAttrs;
};
constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;

// CUjit_option values: the JIT's error log, so that a PTX the driver rejects
// is reported with the reason.
enum CUjitOption : int {
  CU_JIT_ERROR_LOG_BUFFER = 5,
  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
};
// CUfunction_attribute: dynamic shared memory above the default 48 KiB needs
// an opt-in per function.
constexpr int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
constexpr unsigned CU_STREAM_NON_BLOCKING = 1;
// CUevent_flags: an event only for ordering streams needs no timestamps.
constexpr unsigned CU_EVENT_DEFAULT = 0;
constexpr unsigned CU_EVENT_DISABLE_TIMING = 2;
// CUstreamCaptureMode: only this thread's calls are checked while capturing,
// so contexts on other threads keep running undisturbed.
constexpr int CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1;

// CUdevice_attribute values used by the probe and the GPU tiers.
enum CUdeviceAttribute : int {
  CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,
  CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
};

/// The entry points the GPU tiers use, resolved by their exported (versioned)
/// names; each is non-null once Driver::status() is OK. Drivers from CUDA 11.4
/// on export them all (cuGraphInstantiateWithFlags is the newest).
struct DriverApi {
  CUresult (*cuInit)(unsigned flags);
  CUresult (*cuDriverGetVersion)(int *version);
  CUresult (*cuDeviceGetCount)(int *count);
  CUresult (*cuDeviceGet)(CUdevice *device, int ordinal);
  CUresult (*cuDeviceGetName)(char *name, int length, CUdevice device);
  CUresult (*cuDeviceGetAttribute)(int *value, int attribute, CUdevice device);
  CUresult (*cuDeviceTotalMem)(size_t *bytes, CUdevice device);       // _v2
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *context, CUdevice device);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice device);             // _v2
  CUresult (*cuCtxCreate)(CUcontext *context, unsigned flags, CUdevice device); // _v2
  CUresult (*cuCtxDestroy)(CUcontext context);                        // _v2
  CUresult (*cuCtxSetCurrent)(CUcontext context);
  CUresult (*cuModuleLoadData)(CUmodule *module, const void *image);
  CUresult (*cuModuleLoadDataEx)(CUmodule *module, const void *image, unsigned numOptions,
                                 CUjitOption *options, void **optionValues);
  CUresult (*cuModuleUnload)(CUmodule module);
  CUresult (*cuModuleGetFunction)(CUfunction *function, CUmodule module, const char *name);
  CUresult (*cuFuncSetAttribute)(CUfunction function, int attribute, int value);
  CUresult (*cuMemAlloc)(CUdeviceptr *pointer, size_t bytes);         // _v2
  CUresult (*cuMemFree)(CUdeviceptr pointer);                         // _v2
  CUresult (*cuMemcpyHtoD)(CUdeviceptr dst, const void *src, size_t bytes); // _v2
  CUresult (*cuMemcpyDtoH)(void *dst, CUdeviceptr src, size_t bytes); // _v2
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr dst, const void *src, size_t bytes,
                                CUstream stream);                     // _v2
  CUresult (*cuMemcpyDtoHAsync)(void *dst, CUdeviceptr src, size_t bytes,
                                CUstream stream);                     // _v2
  CUresult (*cuMemsetD8Async)(CUdeviceptr dst, unsigned char value, size_t bytes,
                              CUstream stream);
  CUresult (*cuLaunchKernel)(CUfunction function, unsigned gridX, unsigned gridY,
                             unsigned gridZ, unsigned blockX, unsigned blockY,
                             unsigned blockZ, unsigned sharedBytes, CUstream stream,
                             void **params, void **extra);
  // Optional (CUDA 12 and later; null where the driver lacks it): without
  // it every kernel is launched with cuLaunchKernel.
  CUresult (*cuLaunchKernelEx)(const CUlaunchConfig *config, CUfunction function,
                               void **params, void **extra);
  // Optional (CUDA 12 and later, as the sm_90a kernels that need it): a
  // TMA tensor map (cuda.h's cuTensorMapEncodeTiled; its enums as ints,
  // the 128-byte CUtensorMap as bytes).
  CUresult (*cuTensorMapEncodeTiled)(void *tensorMap, int dataType, unsigned rank,
                                     void *address, const uint64_t *dims,
                                     const uint64_t *strides, const unsigned *box,
                                     const unsigned *elementStrides, int interleave, int swizzle,
                                     int l2Promotion, int oobFill);
  // Optional, as cuTensorMapEncodeTiled: a TMA tensor map in im2col mode
  // (cuda.h's cuTensorMapEncodeIm2col).
  CUresult (*cuTensorMapEncodeIm2col)(void *tensorMap, int dataType, unsigned rank,
                                      void *address, const uint64_t *dims,
                                      const uint64_t *strides, const int *lowerCorner,
                                      const int *upperCorner, unsigned channelsPerPixel,
                                      unsigned pixelsPerColumn, const unsigned *elementStrides,
                                      int interleave, int swizzle, int l2Promotion, int oobFill);
  CUresult (*cuStreamCreate)(CUstream *stream, unsigned flags);
  CUresult (*cuStreamDestroy)(CUstream stream);                       // _v2
  CUresult (*cuStreamSynchronize)(CUstream stream);
  CUresult (*cuStreamWaitEvent)(CUstream stream, CUevent event, unsigned flags);
  CUresult (*cuStreamBeginCapture)(CUstream stream, int mode);        // _v2
  CUresult (*cuStreamEndCapture)(CUstream stream, CUgraph *graph);
  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec *exec, CUgraph graph,
                                          unsigned long long flags);
  CUresult (*cuGraphLaunch)(CUgraphExec exec, CUstream stream);
  CUresult (*cuGraphExecDestroy)(CUgraphExec exec);
  CUresult (*cuGraphDestroy)(CUgraph graph);
  CUresult (*cuEventCreate)(CUevent *event, unsigned flags);
  CUresult (*cuEventDestroy)(CUevent event);                          // _v2
  CUresult (*cuEventRecord)(CUevent event, CUstream stream);
  CUresult (*cuEventSynchronize)(CUevent event);
  CUresult (*cuEventElapsedTime)(float *milliseconds, CUevent start, CUevent end);
  CUresult (*cuGetErrorString)(CUresult error, const char **text);
  CUresult (*cuGetErrorName)(CUresult error, const char **text);
};

/// One CUDA device, as probed at load.
struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int ccMajor = 0, ccMinor = 0;
  int smCount = 0;
  uint64_t memoryBytes = 0;
  /// The most dynamic shared memory one block may opt in to; 0 if unknown.
  int maxSharedBytesOptin = 0;

  /// major * 10 + minor, as KernelVariant.min_compute_capability counts.
  int computeCapability() const { return ccMajor * 10 + ccMinor; }
  /// Tensor Cores (WMMA f16) exist from compute capability 7.0 (Volta).
  bool tensorCores() const { return ccMajor >= 7; }
  /// "sm_90".
  std::string arch() const;
};

class Driver {
public:
  /// The process-wide driver: TESSEL_LIBCUDA or libcuda.so.1, loaded,
  /// initialized and probed on the first call. Thread-safe; never fails.
  static const Driver &get();

  /// A separate instance loading `library` (a path or soname), for tests and
  /// tools. It closes the library when destroyed, so it must outlive every
  /// use of api(). Throws std::bad_alloc only.
  static std::unique_ptr<Driver> load(const std::string &library);

  /// A driver that loaded nothing but reports `devices` and `version`, for
  /// testing tier choice without a GPU; its api() is all null.
  static std::unique_ptr<Driver> fake(std::vector<DeviceInfo> devices, int version);

  Driver(const Driver &) = delete;
  Driver &operator=(const Driver &) = delete;
  ~Driver();

  /// OK when the driver loaded, cuInit succeeded and at least one device was
  /// probed; otherwise TESSEL_UNSUPPORTED with the reason, e.g.
  /// "no CUDA driver: libcuda.so.1 not found (dlopen: ...)" or
  /// "cuInit failed: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)".
  const Status &status() const { return loadStatus; }
  bool available() const { return loadStatus.ok(); }

  /// What was opened ("libcuda.so.1", or TESSEL_LIBCUDA's value).
  const std::string &library() const { return libraryName; }
  /// cuDriverGetVersion: 12040 for CUDA 12.4; 0 when the driver did not load
  /// or initialize.
  int version() const { return driverVersion; }
  /// "12.4", or "" when version() is 0.
  std::string versionText() const;
  /// The probed devices; empty unless available().
  const std::vector<DeviceInfo> &devices() const { return deviceInfos; }
  /// The resolved entry points; only meaningful when available().
  const DriverApi &api() const { return entry; }

  /// "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)"; works for
  /// any code, with or without the driver's own names.
  std::string errorText(CUresult result) const;
  /// OK for CUDA_SUCCESS, else `code` with "WHAT failed: <errorText>".
  Status check(CUresult result, const char *what,
               tessel_status_code_t code = TESSEL_INTERNAL) const;

private:
  explicit Driver(std::string library) : libraryName(std::move(library)) {}
  void open(bool fromEnvironment);
  Status resolve();
  Status probe();

  std::string libraryName;
  void *handle = nullptr;
  bool closeOnDestroy = true;
  DriverApi entry{};
  Status loadStatus;
  int driverVersion = 0;
  std::vector<DeviceInfo> deviceInfos;
};

/// Fault injection for tests (issue 17): the nth device allocation from now
/// (1: the next one) through the process-wide driver (Driver::get(): every
/// context's and engine's) fails with
/// CUDA_ERROR_OUT_OF_MEMORY as a full device would; later ones succeed
/// again. 0 turns it off. Process-wide.
void failDeviceAllocation(int nth);

} // namespace tessel::rt::gpu

#endif // TESSEL_RUNTIME_GPU_DRIVER_H
