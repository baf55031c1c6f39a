//===- tiers.h - which tier each step runs on, on this machine -*- C++ -*-===//
//
// The decision the executor makes at context creation, kept apart so that
// tessel-inspect --device can print it without creating a context.
//
// Today the runtime executes the cpu tier only: a GPU and GPU kernel variants
// in the engine are recognized and reported, and every step still runs on the
// cpu tier, with the reason. The GPU tiers plug in here.
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

/// Where one step runs and why.
struct StepTier {
  std::string tier;   // "cpu" today
  std::string reason; // e.g. "the step has only a cpu kernel"
};

/// TESSEL_TIER_AUTO's choice for a whole engine.
struct AutoChoice {
  tessel_tier_t tier = TESSEL_TIER_CPU; // the tier the context runs on
  /// One line for the user when AUTO did not get a GPU tier (what was found
  /// and why the cpu tier runs), e.g. "GPU sm_90 (NVIDIA H100) found, but this
  /// engine has no GPU kernels; using the cpu tier". "" when there is nothing
  /// to say.
  std::string notice;
  std::vector<StepTier> steps; // one per engine step
};

/// AUTO: the best tier per step that both the machine (driver) and the engine
/// have and this runtime can execute.
AutoChoice chooseAuto(const Engine &engine, const Driver &driver);

/// A forced TESSEL_TIER_SIMT or TESSEL_TIER_TC: TESSEL_UNSUPPORTED naming the
/// reason (no driver or GPU: the probe's reason; a GPU without Tensor Cores;
/// an engine without such kernels: the engine's tiers). Today every forced
/// GPU tier ends in TESSEL_UNSUPPORTED, since the runtime cannot launch GPU
/// kernels yet.
Status checkForced(const Engine &engine, const Driver &driver, tessel_tier_t tier);

/// "cpu, tc-sm80": the engine's tiers as its header lists them.
std::string engineTiers(const Engine &engine);

/// Prints "tessel: MESSAGE" on stderr the first time this process sees
/// MESSAGE, unless the environment sets TESSEL_QUIET=1. Thread-safe.
void noticeOnce(const std::string &message);

} // namespace tessel::rt::gpu

#endif // TESSEL_RUNTIME_GPU_TIERS_H
