//===- CudaCheck.h - the CUDA driver for GPU checks, without linking it ---===//
//
// What the GPU checks share: libcuda.so.1 opened with dlopen (so that a check
// builds and runs anywhere, and prints SKIP where no driver or GPU exists),
// the few driver entry points they use, and IEEE binary16 conversions.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TESTS_GPU_CUDACHECK_H
#define TESSEL_TESTS_GPU_CUDACHECK_H

#include <dlfcn.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <type_traits>

namespace tessel::gpucheck {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = void *;
using CUmodule = void *;
using CUfunction = void *;
using CUstream = void *;
constexpr int kComputeCapabilityMajor = 75, kComputeCapabilityMinor = 76;
constexpr int kMaxDynamicSharedSizeBytes = 8; // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES

struct Driver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*cuCtxCreate)(CUcontext *, unsigned, CUdevice);
  CUresult (*cuModuleLoadData)(CUmodule *, const void *);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, CUstream, void **, void **);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuGetErrorString)(CUresult, const char **);
  // Optional (CUDA 12 and later): a CUtensorMap for TMA kernels.
  CUresult (*cuTensorMapEncodeTiled)(void *map, int dataType, unsigned rank, void *address,
                                     const uint64_t *dims, const uint64_t *strides,
                                     const unsigned *box, const unsigned *elementStrides,
                                     int interleave, int swizzle, int l2Promotion, int oobFill);
  CUresult (*cuTensorMapEncodeIm2col)(void *map, int dataType, unsigned rank, void *address,
                                      const uint64_t *dims, const uint64_t *strides,
                                      const int *lowerCorner, const int *upperCorner,
                                      unsigned channelsPerPixel, unsigned pixelsPerColumn,
                                      const unsigned *elementStrides, int interleave,
                                      int swizzle, int l2Promotion, int oobFill);
};

inline Driver &driver() {
  static Driver d{};
  return d;
}

inline bool check(CUresult r, const char *what) {
  if (r == 0)
    return true;
  const char *msg = "unknown error";
  if (driver().cuGetErrorString)
    driver().cuGetErrorString(r, &msg);
  std::fprintf(stderr, "FAIL: %s: CUDA error %d (%s)\n", what, r, msg);
  return false;
}

enum class Open { Ready, Skip, Fail };

/// Opens the driver and a context on device 0; prints SKIP and returns Skip
/// where there is no driver or no GPU. `major`/`minor`: the device's
/// compute capability.
inline Open openDevice(int &major, int &minor) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    std::printf("SKIP: no CUDA driver (libcuda.so.1 not found)\n");
    return Open::Skip;
  }
  Driver &d = driver();
  auto resolve = [&](const char *name, auto &fn) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
    if (!fn)
      std::fprintf(stderr, "FAIL: libcuda.so.1 has no %s\n", name);
    return fn != nullptr;
  };
  bool ok = resolve("cuInit", d.cuInit) && resolve("cuDeviceGet", d.cuDeviceGet) &&
            resolve("cuDeviceGetAttribute", d.cuDeviceGetAttribute) &&
            resolve("cuCtxCreate_v2", d.cuCtxCreate) &&
            resolve("cuModuleLoadData", d.cuModuleLoadData) &&
            resolve("cuModuleUnload", d.cuModuleUnload) &&
            resolve("cuModuleGetFunction", d.cuModuleGetFunction) &&
            resolve("cuMemAlloc_v2", d.cuMemAlloc) && resolve("cuMemcpyHtoD_v2", d.cuMemcpyHtoD) &&
            resolve("cuMemcpyDtoH_v2", d.cuMemcpyDtoH) &&
            resolve("cuMemsetD8_v2", d.cuMemsetD8) &&
            resolve("cuLaunchKernel", d.cuLaunchKernel) &&
            resolve("cuCtxSynchronize", d.cuCtxSynchronize) &&
            resolve("cuFuncSetAttribute", d.cuFuncSetAttribute) &&
            resolve("cuMemFree_v2", d.cuMemFree) && resolve("cuGetErrorString", d.cuGetErrorString);
  if (!ok)
    return Open::Fail;
  d.cuTensorMapEncodeTiled = reinterpret_cast<decltype(d.cuTensorMapEncodeTiled)>(
      dlsym(lib, "cuTensorMapEncodeTiled"));
  d.cuTensorMapEncodeIm2col = reinterpret_cast<decltype(d.cuTensorMapEncodeIm2col)>(
      dlsym(lib, "cuTensorMapEncodeIm2col"));
  CUresult init = d.cuInit(0);
  if (init == 100 /* CUDA_ERROR_NO_DEVICE */) {
    std::printf("SKIP: CUDA driver present but no GPU\n");
    return Open::Skip;
  }
  CUdevice dev;
  CUcontext ctx;
  if (!check(init, "cuInit") || !check(d.cuDeviceGet(&dev, 0), "cuDeviceGet") ||
      !check(d.cuDeviceGetAttribute(&major, kComputeCapabilityMajor, dev),
             "cuDeviceGetAttribute") ||
      !check(d.cuDeviceGetAttribute(&minor, kComputeCapabilityMinor, dev),
             "cuDeviceGetAttribute") ||
      !check(d.cuCtxCreate(&ctx, 0, dev), "cuCtxCreate"))
    return Open::Fail;
  return Open::Ready;
}

/// IEEE binary16 <-> binary32, round to nearest even.
inline uint16_t toHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u, absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) // inf or nan
    return uint16_t(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0u));
  if (absx >= 0x477ff000u) // rounds to >= 65520: inf
    return uint16_t(sign | 0x7c00u);
  if (absx < 0x38800000u) { // subnormal half
    float a;
    std::memcpy(&a, &absx, 4);
    return uint16_t(sign | uint16_t(std::nearbyint(a * 16777216.0f))); // a / 2^-24
  }
  uint32_t mant = absx & 0x7fffffu;
  uint32_t h = ((absx >> 23) - 112) << 10 | (mant >> 13);
  uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
    ++h;
  return uint16_t(sign | h);
}

inline float fromHalf(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ffu;
  float v;
  if (exp == 0) {
    v = std::ldexp(float(mant), -24);
    return sign ? -v : v;
  }
  uint32_t x = sign | (exp == 31 ? 0x7f800000u | (mant << 13) : ((exp + 112) << 23) | (mant << 13));
  std::memcpy(&v, &x, 4);
  return v;
}

} // namespace tessel::gpucheck

#endif // TESSEL_TESTS_GPU_CUDACHECK_H
