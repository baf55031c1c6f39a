//===- device_engine.h - an engine's read-only state on one GPU -*- C++ -*-===//
//
// What every context of one engine on one device shares, made once: the
// device's primary context (retained), the whole constants blob uploaded in
// one allocation, and the kernel modules loaded from the image each device
// takes (format::chooseImage) with their functions resolved. Contexts hold
// it by shared_ptr; the last one to go frees the constants, unloads the
// modules and releases the primary context.
//
// Thread-safe: contexts on different threads may acquire it and resolve
// functions concurrently.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_GPU_DEVICE_ENGINE_H
#define TESSEL_RUNTIME_GPU_DEVICE_ENGINE_H

#include "engine.h"
#include "gpu/driver.h"
#include "status.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace tessel::rt::gpu {

class DeviceEngine {
public:
  /// The shared state of `engine` on `device`: made (primary context
  /// retained, constants uploaded) by the first caller, shared with later
  /// ones, whichever profile of the engine they view, while any holds it.
  /// `driver` must outlive it (Driver::get() does).
  static Status acquire(std::shared_ptr<const Engine> engine, const Driver &driver,
                        const DeviceInfo &device, std::shared_ptr<DeviceEngine> &shared);

  DeviceEngine(const DeviceEngine &) = delete;
  DeviceEngine &operator=(const DeviceEngine &) = delete;
  ~DeviceEngine();

  /// The engine (some profile's view): its modules and constants only,
  /// which every profile shares.
  const Engine &engine() const { return *owner; }
  const Driver &driver() const { return api; }
  const DeviceInfo &device() const { return info; }
  /// Makes the primary context current on the calling thread.
  Status makeCurrent() const;
  /// The constants blob's device copy (0 when the engine has none):
  /// Tensor.offset of a constant is relative to it.
  CUdeviceptr constants() const { return constantBase; }

  /// Loads module `index` from its image for this device, once. On failure
  /// the status (TESSEL_UNSUPPORTED) names the module and image and carries
  /// the driver's JIT log; every later call returns it again.
  Status loadModule(size_t index);
  /// The entry `name` of module `index` (loaded first), allowed at least
  /// `sharedBytes` of dynamic shared memory (the attribute is raised above
  /// the default 48 KiB only when asked); `waitsForPriorGrids`: whether the
  /// image loaded says its entries wait for the grids before them
  /// (KernelImage.waits_for_prior_grids).
  Status function(size_t index, const std::string &name, unsigned sharedBytes,
                  CUfunction &function, bool &waitsForPriorGrids);

private:
  DeviceEngine(std::shared_ptr<const Engine> engine, const Driver &driver,
               const DeviceInfo &device);
  Status open();
  Status loadModuleLocked(size_t index);

  struct ModuleSlot {
    bool tried = false;
    CUmodule handle = nullptr;
    bool waitsForPriorGrids = false;
    Status failure;
  };
  struct FunctionSlot {
    CUfunction handle = nullptr;
    /// Dynamic shared bytes the function's attribute allows: every request
    /// sets it once. Without it a kernel may take 48 KiB less its static
    /// shared memory, so a tc-sm80 launch of exactly 48 KiB (DeepBench's
    /// 3072 x 16 x 1024 on the H100) failed with CUDA_ERROR_INVALID_VALUE.
    unsigned sharedAllowed = 0;
  };

  std::shared_ptr<const Engine> owner;
  const Driver &api;
  DeviceInfo info;
  CUdevice deviceHandle = 0;
  CUcontext context = nullptr;
  CUdeviceptr constantBase = 0;
  std::mutex mutex; // guards modules and functions
  std::vector<ModuleSlot> modules;
  std::map<std::pair<size_t, std::string>, FunctionSlot> functions;
};

} // namespace tessel::rt::gpu

#endif // TESSEL_RUNTIME_GPU_DEVICE_ENGINE_H
