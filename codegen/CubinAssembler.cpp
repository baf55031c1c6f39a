//===- CubinAssembler.cpp - PTX to cubin, in-process ----------------------===//
#include "CubinAssembler.h"

#ifdef TESSEL_HAVE_NVJITLINK
#include <nvJitLink.h>
#endif

namespace tessel::codegen {

#ifdef TESSEL_HAVE_NVJITLINK

bool canAssembleCubins() { return true; }

namespace {
std::string errorLog(nvJitLinkHandle handle, nvJitLinkResult result) {
  size_t size = 0;
  std::string log;
  if (nvJitLinkGetErrorLogSize(handle, &size) == NVJITLINK_SUCCESS && size > 1) {
    log.resize(size);
    if (nvJitLinkGetErrorLog(handle, log.data()) != NVJITLINK_SUCCESS)
      log.clear();
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n'))
      log.pop_back();
  }
  if (log.empty())
    log = "nvJitLink error " + std::to_string(int(result));
  return log;
}
} // namespace

CubinResult assembleCubin(llvm::StringRef ptx, int arch) {
  CubinResult result;
  std::string archOption = "-arch=sm_" + std::to_string(arch);
  const char *options[] = {archOption.c_str(), "-O3"};
  nvJitLinkHandle handle = nullptr;
  nvJitLinkResult status = nvJitLinkCreate(&handle, 2, options);
  if (status != NVJITLINK_SUCCESS) {
    result.log = "cannot start nvJitLink for sm_" + std::to_string(arch) + " (error " +
                 std::to_string(int(status)) + ")";
    return result;
  }
  // nvJitLink reads PTX as a C string: hand it a terminated copy.
  std::string text = ptx.str();
  status = nvJitLinkAddData(handle, NVJITLINK_INPUT_PTX, text.c_str(), text.size() + 1,
                            "tessel.ptx");
  if (status == NVJITLINK_SUCCESS)
    status = nvJitLinkComplete(handle);
  size_t size = 0;
  if (status == NVJITLINK_SUCCESS)
    status = nvJitLinkGetLinkedCubinSize(handle, &size);
  if (status == NVJITLINK_SUCCESS) {
    result.cubin.resize(size);
    status = nvJitLinkGetLinkedCubin(handle, result.cubin.data());
  }
  result.ok = status == NVJITLINK_SUCCESS;
  if (!result.ok) {
    result.cubin.clear();
    result.log = errorLog(handle, status);
  }
  nvJitLinkDestroy(&handle);
  return result;
}

#else

bool canAssembleCubins() { return false; }

CubinResult assembleCubin(llvm::StringRef, int arch) {
  CubinResult result;
  result.log = "this build has no nvJitLink (CUDA toolkit not found when configured): cannot "
               "assemble for sm_" + std::to_string(arch);
  return result;
}

#endif

} // namespace tessel::codegen
