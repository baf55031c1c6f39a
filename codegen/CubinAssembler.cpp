//===- CubinAssembler.cpp - PTX to cubin, in-process ----------------------===//
#include "CubinAssembler.h"

#include "llvm/ADT/SmallVector.h"

#include <algorithm>

#ifdef TESSEL_HAVE_NVJITLINK
#include <nvJitLink.h>
#endif

namespace tessel::codegen {

std::vector<std::string> spillingKernels(llvm::StringRef info) {
  // ptxas -v: "Function properties for NAME", then a line
  // "... N bytes spill stores, M bytes spill loads".
  std::vector<std::string> names;
  llvm::StringRef current;
  llvm::SmallVector<llvm::StringRef> lines;
  info.split(lines, '\n');
  for (llvm::StringRef line : lines) {
    size_t at = line.find("Function properties for ");
    if (at != llvm::StringRef::npos) {
      current = line.drop_front(at + 24).trim().trim("':");
      continue;
    }
    size_t spill = line.find(" bytes spill stores");
    if (spill == llvm::StringRef::npos || current.empty())
      continue;
    llvm::StringRef count = line.take_front(spill).rtrim();
    count = count.drop_front(count.find_last_of(" \t") + 1);
    unsigned bytes = 0;
    if (!count.getAsInteger(10, bytes) && bytes > 0)
      names.push_back(current.str());
    current = {};
  }
  return names;
}

int maxRegisters(llvm::StringRef info) {
  int most = 0;
  llvm::SmallVector<llvm::StringRef> lines;
  info.split(lines, '\n');
  for (llvm::StringRef line : lines) {
    size_t at = line.find("Used ");
    if (at == llvm::StringRef::npos)
      continue;
    llvm::StringRef count = line.drop_front(at + 5);
    count = count.take_until([](char c) { return c == ' '; });
    int registers = 0;
    if (!count.getAsInteger(10, registers) && line.drop_front(at).contains(" registers"))
      most = std::max(most, registers);
  }
  return most;
}

std::string withoutMinBlocks(llvm::StringRef ptx, const std::vector<std::string> &kernels) {
  std::string text = ptx.str();
  for (const std::string &name : kernels) {
    size_t entry = text.find(".entry " + name + "(");
    if (entry == std::string::npos)
      continue;
    size_t body = text.find('{', entry);
    size_t directive = text.find(".minnctapersm", entry);
    if (directive == std::string::npos || directive > body)
      continue;
    size_t lineEnd = text.find('\n', directive);
    text.erase(directive, lineEnd == std::string::npos ? std::string::npos
                                                       : lineEnd + 1 - directive);
  }
  return text;
}

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

/// One nvJitLink run, with its verbose log (ptxas's per-kernel registers and
/// spills) in `info`.
CubinResult link(const std::string &text, int arch) {
  CubinResult result;
  // Architecture-specific PTX (.target sm_90a: wgmma) assembles only for
  // its own architecture, named with the suffix.
  const bool specific = text.find(".target sm_" + std::to_string(arch) + "a") != std::string::npos;
  std::string archOption = "-arch=sm_" + std::to_string(arch) + (specific ? "a" : "");
  const char *options[] = {archOption.c_str(), "-O3", "-verbose"};
  nvJitLinkHandle handle = nullptr;
  nvJitLinkResult status = nvJitLinkCreate(&handle, 3, options);
  if (status != NVJITLINK_SUCCESS) {
    result.log = "cannot start nvJitLink for sm_" + std::to_string(arch) + " (error " +
                 std::to_string(int(status)) + ")";
    return result;
  }
  // nvJitLink reads PTX as a C string: hand it a terminated copy.
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
  if (nvJitLinkGetInfoLogSize(handle, &size) == NVJITLINK_SUCCESS && size > 1) {
    result.info.resize(size);
    if (nvJitLinkGetInfoLog(handle, result.info.data()) != NVJITLINK_SUCCESS)
      result.info.clear();
  }
  nvJitLinkDestroy(&handle);
  return result;
}

} // namespace

CubinResult assembleCubin(llvm::StringRef ptx, int arch) {
  CubinResult result = link(ptx.str(), arch);
  // A kernel that asks for several blocks per SM (.minnctapersm) caps its
  // registers; where ptxas can only meet the cap by spilling to local
  // memory, the kernel is assembled again without asking: local-memory
  // traffic in a K loop costs more than the occupancy gains.
  if (!result.ok || ptx.find(".minnctapersm") == llvm::StringRef::npos)
    return result;
  std::vector<std::string> spilling = spillingKernels(result.info);
  if (spilling.empty())
    return result;
  CubinResult again = link(withoutMinBlocks(ptx, spilling), arch);
  return again.ok ? again : result;
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
