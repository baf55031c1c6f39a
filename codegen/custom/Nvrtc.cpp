//===- Nvrtc.cpp - CUDA C++ compiled when an engine is compiled ------------===//
#include "Nvrtc.h"

#include <cstdlib>
#include <type_traits>

#ifdef TESSEL_HAVE_NVRTC
#include <dlfcn.h>
#include <nvrtc.h>
#endif

namespace tessel::custom {

#ifdef TESSEL_HAVE_NVRTC
namespace {


/// NVRTC, opened with dlopen on first use (as the runtime opens libcuda): a
/// tessel-compile on a machine without it starts, compiles every model
/// without custom GPU variants, and says why when one needs them.
struct NvrtcLibrary {
  std::string error; ///< empty once loaded
  decltype(&::nvrtcCreateProgram) createProgram = nullptr;
  decltype(&::nvrtcCompileProgram) compileProgram = nullptr;
  decltype(&::nvrtcGetProgramLogSize) getProgramLogSize = nullptr;
  decltype(&::nvrtcGetProgramLog) getProgramLog = nullptr;
  decltype(&::nvrtcGetPTXSize) getPTXSize = nullptr;
  decltype(&::nvrtcGetPTX) getPTX = nullptr;
  decltype(&::nvrtcGetCUBINSize) getCUBINSize = nullptr;
  decltype(&::nvrtcGetCUBIN) getCUBIN = nullptr;
  decltype(&::nvrtcDestroyProgram) destroyProgram = nullptr;
  decltype(&::nvrtcGetErrorString) getErrorString = nullptr;
};

const NvrtcLibrary &nvrtc() {
  static const NvrtcLibrary library = [] {
    NvrtcLibrary lib;
    void *handle = nullptr;
    // $TESSEL_NVRTC alone when set (tests use it to take NVRTC away); else
    // the toolkit's the build found, then the loader's.
    const char *forced = std::getenv("TESSEL_NVRTC");
    std::vector<const char *> names = {TESSEL_NVRTC_LIBRARY, "libnvrtc.so.13", "libnvrtc.so"};
    if (forced && *forced)
      names = {forced};
    for (const char *name : names)
      if ((handle = dlopen(name, RTLD_NOW | RTLD_LOCAL)))
        break;
    if (!handle) {
      const char *why = dlerror();
      lib.error = std::string("NVRTC (CUDA's runtime compiler, ") + names.front() +
                  ") could not be loaded: " + (why ? why : "unknown error");
      return lib;
    }
    auto bind = [&](auto &fn, const char *name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(handle, name));
      if (!fn && lib.error.empty())
        lib.error = std::string("NVRTC has no ") + name;
    };
    bind(lib.createProgram, "nvrtcCreateProgram");
    bind(lib.compileProgram, "nvrtcCompileProgram");
    bind(lib.getProgramLogSize, "nvrtcGetProgramLogSize");
    bind(lib.getProgramLog, "nvrtcGetProgramLog");
    bind(lib.getPTXSize, "nvrtcGetPTXSize");
    bind(lib.getPTX, "nvrtcGetPTX");
    bind(lib.getCUBINSize, "nvrtcGetCUBINSize");
    bind(lib.getCUBIN, "nvrtcGetCUBIN");
    bind(lib.destroyProgram, "nvrtcDestroyProgram");
    bind(lib.getErrorString, "nvrtcGetErrorString");
    return lib;
  }();
  return library;
}

} // namespace

const std::string &nvrtcError() { return nvrtc().error; }

bool nvrtcCompile(const std::string &text, const std::string &name, int arch, bool cubin,
                  const std::vector<std::string> &options,
                  const std::vector<NvrtcHeader> &headers, std::vector<uint8_t> &image,
                  std::string &log) {
  const NvrtcLibrary &lib = nvrtc();
  if (!lib.error.empty()) {
    log = lib.error;
    return false;
  }
  std::vector<const char *> headerTexts, headerNames;
  for (const NvrtcHeader &header : headers) {
    headerTexts.push_back(header.text.c_str());
    headerNames.push_back(header.name.c_str());
  }
  nvrtcProgram program = nullptr;
  if (lib.createProgram(&program, text.c_str(), name.c_str(), static_cast<int>(headers.size()),
                        headerTexts.data(), headerNames.data()) != NVRTC_SUCCESS) {
    log = "nvrtcCreateProgram failed";
    return false;
  }
  const std::string archOption = (cubin ? "-arch=sm_" : "-arch=compute_") + std::to_string(arch);
  std::vector<const char *> argv{archOption.c_str()};
  for (const std::string &option : options)
    argv.push_back(option.c_str());
  nvrtcResult result = lib.compileProgram(program, static_cast<int>(argv.size()), argv.data());
  size_t logSize = 0;
  log.clear();
  if (lib.getProgramLogSize(program, &logSize) == NVRTC_SUCCESS && logSize > 1) {
    log.assign(logSize, '\0');
    lib.getProgramLog(program, log.data());
    log.resize(logSize - 1);
  }
  bool ok = result == NVRTC_SUCCESS;
  if (ok) {
    size_t size = 0;
    ok = (cubin ? lib.getCUBINSize(program, &size) : lib.getPTXSize(program, &size)) ==
         NVRTC_SUCCESS;
    image.assign(size, 0);
    ok = ok && (cubin ? lib.getCUBIN(program, reinterpret_cast<char *>(image.data()))
                      : lib.getPTX(program, reinterpret_cast<char *>(image.data()))) ==
                   NVRTC_SUCCESS;
    // PTX comes NUL-terminated; the plan keeps text without it.
    if (ok && !cubin && !image.empty() && image.back() == 0)
      image.pop_back();
  } else if (log.empty()) {
    log = lib.getErrorString(result);
  }
  lib.destroyProgram(&program);
  return ok;
}

#else

const std::string &nvrtcError() {
  static const std::string error =
      "this tessel-compile was built without NVRTC (the CUDA toolkit)";
  return error;
}

bool nvrtcCompile(const std::string &, const std::string &, int, bool,
                  const std::vector<std::string> &, const std::vector<NvrtcHeader> &,
                  std::vector<uint8_t> &, std::string &log) {
  log = nvrtcError();
  return false;
}

#endif

} // namespace tessel::custom
