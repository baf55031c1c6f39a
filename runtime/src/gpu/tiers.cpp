//===- tiers.cpp - tier choice per step ------------------------------------===//
#include "gpu/tiers.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

namespace tessel::rt::gpu {
namespace fb = tessel::engine;

namespace {

const char *tierName(tessel_tier_t tier) {
  switch (tier) {
  case TESSEL_TIER_AUTO: return "auto";
  case TESSEL_TIER_CPU: return "cpu";
  case TESSEL_TIER_SIMT: return "simt";
  case TESSEL_TIER_TC: return "tc";
  }
  return "invalid";
}

/// The compute capability a variant needs: its min_compute_capability, or
/// what its tier name says ("tc-sm80" -> 80), whichever is higher.
int requiredCapability(const fb::KernelVariant *variant) {
  int needed = variant->min_compute_capability();
  std::string tier = fbString(variant->tier());
  if (tier.rfind("tc-sm", 0) == 0)
    needed = std::max(needed, std::atoi(tier.c_str() + 5));
  return needed;
}

bool isGpuVariant(const fb::KernelVariant *variant) {
  std::string tier = fbString(variant->tier());
  return tier == "simt" || tier.rfind("tc-", 0) == 0;
}

/// Whether `variant` belongs to the forced `tier` (simt, or any tc-*).
bool belongsTo(const fb::KernelVariant *variant, tessel_tier_t tier) {
  std::string name = fbString(variant->tier());
  return tier == TESSEL_TIER_SIMT ? name == "simt" : name.rfind("tc-", 0) == 0;
}

/// The first variant of `step` that `device` can run, Tensor Core first.
const fb::KernelVariant *bestGpuVariant(const fb::Step *step, const DeviceInfo &device) {
  const fb::KernelVariant *best = nullptr;
  int bestCapability = -1;
  if (const auto *variants = step->variants())
    for (const fb::KernelVariant *variant : *variants) {
      if (!isGpuVariant(variant) || requiredCapability(variant) > device.computeCapability())
        continue;
      bool tc = fbString(variant->tier())[0] == 't';
      if (tc && !device.tensorCores())
        continue;
      // Prefer Tensor Cores, then the newest architecture the device runs.
      int rank = (tc ? 1000 : 0) + requiredCapability(variant);
      if (rank > bestCapability)
        best = variant, bestCapability = rank;
    }
  return best;
}

std::string gpuVariantList(const fb::Step *step) {
  std::string list;
  if (const auto *variants = step->variants())
    for (const fb::KernelVariant *variant : *variants)
      if (isGpuVariant(variant))
        list += (list.empty() ? "" : ", ") + std::string(fbString(variant->tier()));
  return list;
}

std::string describeDevice(const DeviceInfo &device) {
  return device.arch() + " (" + device.name + ")";
}

} // namespace

std::string engineTiers(const Engine &engine) {
  std::string list;
  if (const auto *tiers = engine.fb()->tiers())
    for (const flatbuffers::String *tier : *tiers)
      list += (list.empty() ? "" : ", ") + tier->str();
  return list.empty() ? "none listed" : list;
}

AutoChoice chooseAuto(const Engine &engine, const Driver &driver) {
  AutoChoice choice;
  const auto *steps = engine.fb()->steps();
  const size_t stepCount = steps ? steps->size() : 0;
  choice.steps.resize(stepCount, StepTier{"cpu", ""});

  if (!driver.available()) {
    for (StepTier &step : choice.steps)
      step.reason = "no usable GPU"; // the notice says why
    choice.notice = driver.status().message() + "; using the cpu tier";
    return choice;
  }

  // The executor runs a context on device 0 (device selection comes with the
  // GPU tiers).
  const DeviceInfo &device = driver.devices().front();
  size_t withGpuKernels = 0, runnable = 0;
  std::string runnableTiers;
  for (size_t s = 0; s < stepCount; ++s) {
    const fb::Step *step = steps->Get(s);
    std::string gpuVariants = gpuVariantList(step);
    if (gpuVariants.empty()) {
      choice.steps[s].reason = "the step has only a cpu kernel";
      continue;
    }
    ++withGpuKernels;
    const fb::KernelVariant *best = bestGpuVariant(step, device);
    if (!best) {
      choice.steps[s].reason =
          "its GPU kernels (" + gpuVariants + ") do not run on " + device.arch();
      continue;
    }
    ++runnable;
    std::string tier = fbString(best->tier());
    if (runnableTiers.find(tier) == std::string::npos)
      runnableTiers += (runnableTiers.empty() ? "" : ", ") + tier;
    choice.steps[s].reason =
        "it has a " + tier + " kernel, but this runtime cannot launch GPU kernels yet";
  }

  std::string found = "GPU " + describeDevice(device) + " found, but ";
  if (withGpuKernels == 0)
    choice.notice = found + "this engine has no GPU kernels; using the cpu tier";
  else if (runnable == 0)
    choice.notice = found + "none of this engine's GPU kernels runs on " + device.arch() +
                    " (the engine has tiers: " + engineTiers(engine) + "); using the cpu tier";
  else
    choice.notice = found + "this runtime cannot launch GPU kernels yet (the engine has " +
                    runnableTiers + " kernels for it); using the cpu tier";
  return choice;
}

Status checkForced(const Engine &engine, const Driver &driver, tessel_tier_t tier) {
  const std::string requested = std::string("tier '") + tierName(tier) + "' requested, but ";
  const std::string tail = " (the engine has tiers: " + engineTiers(engine) +
                           "); use TESSEL_TIER_AUTO or TESSEL_TIER_CPU";
  if (!driver.available())
    return Status(TESSEL_UNSUPPORTED,
                  requested + "this machine has no GPU tier: " + driver.status().message() + tail);
  const DeviceInfo &device = driver.devices().front();
  if (tier == TESSEL_TIER_TC && !device.tensorCores())
    return Status(TESSEL_UNSUPPORTED, requested + "GPU " + describeDevice(device) +
                                          " has no Tensor Cores (they need compute "
                                          "capability 7.0 or newer)" + tail);
  size_t usable = 0, present = 0;
  const auto *steps = engine.fb()->steps();
  if (steps)
    for (const fb::Step *step : *steps) {
      bool has = false, fits = false;
      if (const auto *variants = step->variants())
        for (const fb::KernelVariant *variant : *variants)
          if (belongsTo(variant, tier)) {
            has = true;
            fits |= requiredCapability(variant) <= device.computeCapability();
          }
      present += has;
      usable += fits;
    }
  if (present == 0)
    return Status(TESSEL_UNSUPPORTED, requested + "the engine has no GPU tier for it: no step "
                                                  "has a " + tierName(tier) + " kernel" + tail);
  if (usable == 0)
    return Status(TESSEL_UNSUPPORTED, requested + "the engine has no GPU tier for GPU " +
                                          describeDevice(device) + ": its " + tierName(tier) +
                                          " kernels need a newer GPU" + tail);
  return Status(TESSEL_UNSUPPORTED,
                requested + "this runtime cannot launch GPU kernels yet (GPU " +
                    describeDevice(device) + " found; " + std::to_string(usable) + " of " +
                    std::to_string(steps->size()) + " steps have " + tierName(tier) +
                    " kernels for it)" + tail);
}

void noticeOnce(const std::string &message) {
  const char *quiet = std::getenv("TESSEL_QUIET");
  if (quiet && std::strcmp(quiet, "1") == 0)
    return;
  // Function-local statics: no global constructor, thread-safe initialization.
  static std::mutex mutex;
  static std::set<std::string> *said = new std::set<std::string>();
  std::lock_guard<std::mutex> lock(mutex);
  if (!said->insert(message).second)
    return;
  std::fprintf(stderr, "tessel: %s\n", message.c_str());
  std::fflush(stderr);
}

} // namespace tessel::rt::gpu
