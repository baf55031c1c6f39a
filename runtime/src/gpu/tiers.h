//===- tiers.h - which kernel variant each step runs, on this machine -*- C++ -*-===//
//
// The decision a context makes at creation, kept apart from execution so that
// it is a pure function of the engine, the device and the request (unit-tested
// without a GPU) and so that tessel-inspect --device can print it without
// creating a context.
//
// Per step, the best variant that the device can run and the request allows:
// tc-sm90 > tc-sm80 > tc-sm70 > simt > cpu. A GPU variant qualifies when
//   - the device's compute capability is at least the variant's
//     min_compute_capability and what its tier name says (tc-sm80: 8.0),
//   - every module its launches use has an image the device loads
//     (format::chooseImage) and did not fail to load,
//   - every tensor it binds lies on the variant's alignment (arena and
//     constant offsets; graph inputs and outputs get 256-byte aligned device
//     buffers), and
//   - its dynamic shared memory fits the device's opt-in limit.
// A step without a qualifying GPU variant runs on the cpu tier (every step has
// one), so one engine runs mixed: GPU steps on the stream, cpu steps on the
// host between them.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_GPU_TIERS_H
#define TESSEL_RUNTIME_GPU_TIERS_H

#include "engine.h"
#include "gpu/driver.h"
#include "status.h"

#include <string>
#include <vector>

namespace tessel::rt::gpu {

/// What one step runs.
struct StepChoice {
  int variant = -1;   // index into Step.variants()
  std::string tier;   // that variant's tier: "cpu", "simt", "tc-sm80", ...
  std::string kernel; // that variant's kernel name
  /// Why no better variant was taken ("" when none was passed over), e.g.
  /// "the step has only a cpu kernel" or "tc-sm90: needs sm_90".
  std::string reason;
};

/// Every step's choice for one context.
struct Selection {
  std::vector<StepChoice> steps;

  bool usesGpu() const;
  /// The tier every step runs on ("cpu", "simt", "tc-sm80"), or "mixed".
  std::string tier() const;
  /// tier(), or for a mixed one the steps per tier, best first:
  /// "mixed: 50 tc-sm80, 10 simt, 3 cpu".
  std::string summary() const;
};

/// The best variant per step that `device` runs (nullptr: no usable GPU, so
/// every step runs on the cpu tier) and `request` allows: TESSEL_TIER_TC and
/// TESSEL_TIER_AUTO any, TESSEL_TIER_SIMT simt and cpu, TESSEL_TIER_CPU cpu.
/// `failedModules[m]` marks module m as unloadable (the driver rejected it);
/// it may be shorter than the module list.
Selection chooseVariants(const Engine &engine, const DeviceInfo *device, tessel_tier_t request,
                         const std::vector<bool> &failedModules = {});

/// A context's tiers, decided against the process's driver.
struct TierPlan {
  Selection selection;
  /// The GPU the selection's GPU steps run on (device 0); nullptr when the
  /// request never looked for one or there is none.
  const DeviceInfo *device = nullptr;
  /// TESSEL_TIER_AUTO only: one line for the user when no step got a GPU
  /// tier although one was looked for (what was found, and why the cpu tier
  /// runs), e.g. "GPU sm_90 (NVIDIA H100) found, but this engine has no GPU
  /// kernels; using the cpu tier". "" otherwise.
  std::string notice;
};

/// Chooses every step's variant for `request`. TESSEL_TIER_CPU never touches
/// the driver. TESSEL_TIER_AUTO never fails: without a usable GPU every step
/// runs on the cpu tier and the notice says why. A forced TESSEL_TIER_SIMT or
/// TESSEL_TIER_TC bounds the tiers from above and needs a GPU: it is
/// TESSEL_UNSUPPORTED, naming the reason, when the machine has no usable GPU
/// or when TC is asked of a GPU without Tensor Cores; otherwise each step
/// takes the best variant the request allows, down to the cpu tier (an
/// engine without any simt or tc kernel runs wholly on the cpu tier).
/// TESSEL_INVALID_ARGUMENT for a value outside tessel_tier_t.
Status planTiers(const Engine &engine, const Driver &driver, tessel_tier_t request,
                 TierPlan &plan, const std::vector<bool> &failedModules = {});

/// "cpu, tc-sm80": the engine's tiers as its header lists them.
std::string engineTiers(const Engine &engine);

/// Prints "tessel: MESSAGE" on stderr the first time this process sees
/// MESSAGE, unless the environment sets TESSEL_QUIET=1. Thread-safe.
void noticeOnce(const std::string &message);

} // namespace tessel::rt::gpu

#endif // TESSEL_RUNTIME_GPU_TIERS_H
