//===- tiers.cpp - variant choice per step ---------------------------------===//
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

constexpr fb::Tier kTiersBestFirst[] = {fb::Tier::tc_sm90, fb::Tier::tc_sm80, fb::Tier::tc_sm70,
                                        fb::Tier::simt, fb::Tier::cpu};

const char *requestName(tessel_tier_t tier) {
  switch (tier) {
  case TESSEL_TIER_AUTO: return "auto";
  case TESSEL_TIER_CPU: return "cpu";
  case TESSEL_TIER_SIMT: return "simt";
  case TESSEL_TIER_TC: return "tc";
  case TESSEL_TIER_TC_SM70: return "tc-sm70";
  case TESSEL_TIER_TC_SM80: return "tc-sm80";
  }
  return "invalid";
}

bool allowed(fb::Tier tier, tessel_tier_t request) {
  switch (request) {
  case TESSEL_TIER_CPU: return tier == fb::Tier::cpu;
  case TESSEL_TIER_SIMT: return tier == fb::Tier::simt || tier == fb::Tier::cpu;
  case TESSEL_TIER_TC_SM70: return tier != fb::Tier::tc_sm80 && tier != fb::Tier::tc_sm90;
  case TESSEL_TIER_TC_SM80: return tier != fb::Tier::tc_sm90;
  default: return true;
  }
}

/// The compute capability a variant needs: its min_compute_capability, or
/// what its tier says (tc-sm80: 8.0), whichever is higher.
int requiredCapability(const fb::KernelVariant *variant) {
  return std::max(variant->min_compute_capability(), format::tierCapability(variant->tier()));
}

std::string smName(int capability) { return "sm_" + std::to_string(capability); }

std::string describeDevice(const DeviceInfo &device) {
  return device.arch() + " (" + device.name + ")";
}

/// Why `device` cannot run the GPU `variant`, or "" when it can.
std::string rejection(const Engine &engine, const fb::KernelVariant *variant,
                      const DeviceInfo &device, const std::vector<bool> &failedModules) {
  if (requiredCapability(variant) > device.computeCapability())
    return "needs " + smName(requiredCapability(variant));
  // Past the capability: a tier whose code is architecture-specific.
  if (!format::tierRunsOn(variant->tier(), device.computeCapability()))
    return "needs " + smName(format::tierCapability(variant->tier())) + " (sm_90a code)";
  const auto *modules = engine.modules();
  const auto *tensors = engine.fb()->tensors();
  const uint64_t alignment = static_cast<uint64_t>(std::max(variant->alignment(), 1));
  for (const fb::Launch *launch : *variant->launches()) {
    const fb::KernelModule *module = modules->Get(launch->module_());
    std::string name = "module '" + std::string(fbString(module->name())) + "'";
    if (static_cast<size_t>(launch->module_()) < failedModules.size() &&
        failedModules[launch->module_()])
      return name + " failed to load";
    if (format::chooseImage(module, device.computeCapability()) < 0)
      return name + " has no image for " + device.arch();
    if (device.maxSharedBytesOptin > 0 &&
        launch->shared_bytes() > static_cast<uint32_t>(device.maxSharedBytesOptin))
      return "kernel '" + std::string(fbString(launch->kernel())) + "' needs " +
             std::to_string(launch->shared_bytes()) + " bytes of shared memory, " +
             device.arch() + " allows " + std::to_string(device.maxSharedBytesOptin);
    if (const auto *args = launch->args())
      for (const fb::KernelArg *arg : *args) {
        if (arg->tensor() < 0)
          continue;
        const fb::Tensor *tensor = tensors->Get(arg->tensor());
        bool placed = tensor->storage() == fb::Storage::Arena ||
                      tensor->storage() == fb::Storage::Constant;
        if (placed && tensor->offset() % alignment != 0)
          return "tensor '" + std::string(fbString(tensor->name())) + "' at offset " +
                 std::to_string(tensor->offset()) + " is not " + std::to_string(alignment) +
                 "-byte aligned";
      }
  }
  return "";
}

StepChoice chooseStep(const Engine &engine, const fb::Step *step, const DeviceInfo *device,
                      tessel_tier_t request, const std::vector<bool> &failedModules) {
  const auto *variants = step->variants();
  // Candidates best first; the verifier guarantees known tiers and one cpu
  // variant, so the loop always ends on a choice.
  std::vector<std::pair<int, int>> order; // (rank, index): a tier's value is its rank
  for (size_t v = 0; v < variants->size(); ++v)
    order.emplace_back(static_cast<int>(variants->Get(v)->tier()), static_cast<int>(v));
  std::stable_sort(order.begin(), order.end(),
                   [](const auto &a, const auto &b) { return a.first > b.first; });

  StepChoice choice;
  std::string passedOver;
  bool hasGpuVariant = false;
  for (const auto &[rank, index] : order) {
    const fb::KernelVariant *variant = variants->Get(index);
    std::string tier = format::tierName(variant->tier());
    std::string why;
    if (variant->tier() != fb::Tier::cpu) {
      hasGpuVariant = true;
      if (!allowed(variant->tier(), request))
        why = "tier '" + std::string(requestName(request)) + "' requested";
      else if (!device)
        why = "no usable GPU";
      else
        why = rejection(engine, variant, *device, failedModules);
      if (!why.empty()) {
        passedOver += (passedOver.empty() ? "" : "; ") + tier + ": " + why;
        continue;
      }
    }
    choice.variant = index;
    choice.tier = tier;
    choice.kernel = fbString(variant->kernel());
    break;
  }
  if (!hasGpuVariant)
    choice.reason = "the step has only a cpu kernel";
  else if (request == TESSEL_TIER_CPU)
    choice.reason = "tier 'cpu' requested";
  else if (!device)
    choice.reason = "no usable GPU";
  else
    choice.reason = passedOver;
  return choice;
}

/// AUTO on a GPU where no step got a GPU variant: what to tell the user.
std::string autoNotice(const Engine &engine, const Selection &selection,
                       const DeviceInfo &device) {
  std::string found = "GPU " + describeDevice(device) + " found, but ";
  const auto *steps = engine.fb()->steps();
  for (size_t s = 0; s < selection.steps.size(); ++s)
    if (selection.steps[s].reason != "the step has only a cpu kernel")
      return found + "none of this engine's GPU kernels runs on " + device.arch() +
             " (the engine has tiers: " + engineTiers(engine) + "; " +
             describeStep(s, steps->Get(s)) + ": " + selection.steps[s].reason +
             "); using the cpu tier";
  return found + "this engine has no GPU kernels; using the cpu tier";
}

} // namespace

bool Selection::usesGpu() const {
  for (const StepChoice &step : steps)
    if (step.tier != "cpu")
      return true;
  return false;
}

std::string Selection::tier() const {
  if (steps.empty())
    return "cpu";
  for (const StepChoice &step : steps)
    if (step.tier != steps.front().tier)
      return "mixed";
  return steps.front().tier;
}

std::string Selection::summary() const {
  std::string single = tier();
  if (single != "mixed")
    return single;
  std::string text = "mixed: ";
  bool first = true;
  for (fb::Tier tier : kTiersBestFirst) {
    const char *name = format::tierName(tier);
    size_t count = 0;
    for (const StepChoice &step : steps)
      count += step.tier == name;
    if (count) {
      text += (first ? "" : ", ") + std::to_string(count) + " " + name;
      first = false;
    }
  }
  return text;
}

Selection chooseVariants(const Engine &engine, const DeviceInfo *device, tessel_tier_t request,
                         const std::vector<bool> &failedModules) {
  Selection selection;
  if (const auto *steps = engine.fb()->steps())
    for (const fb::Step *step : *steps)
      selection.steps.push_back(chooseStep(engine, step, device, request, failedModules));
  return selection;
}

std::string engineTiers(const Engine &engine) {
  std::string list;
  if (const auto *tiers = engine.fb()->tiers())
    for (fb::Tier tier : *tiers)
      list += (list.empty() ? "" : ", ") + std::string(format::tierName(tier));
  return list.empty() ? "none listed" : list;
}

Status planTiers(const Engine &engine, const Driver &driver, tessel_tier_t request,
                 TierPlan &plan, const std::vector<bool> &failedModules) {
  plan = TierPlan{};
  switch (request) {
  case TESSEL_TIER_CPU:
    plan.selection = chooseVariants(engine, nullptr, request);
    return {};
  case TESSEL_TIER_AUTO:
  case TESSEL_TIER_SIMT:
  case TESSEL_TIER_TC:
  case TESSEL_TIER_TC_SM70:
  case TESSEL_TIER_TC_SM80:
    break;
  default:
    return invalidArgument("invalid tier value " + std::to_string(static_cast<int>(request)));
  }

  const bool forced = request != TESSEL_TIER_AUTO;
  const std::string requested = std::string("tier '") + requestName(request) + "' requested, but ";
  const std::string tail = " (the engine has tiers: " + engineTiers(engine) +
                           "); use TESSEL_TIER_AUTO or TESSEL_TIER_CPU";
  if (!driver.available()) {
    if (forced)
      return Status(TESSEL_UNSUPPORTED, requested + "this machine has no GPU tier: " +
                                            driver.status().message() + tail);
    plan.selection = chooseVariants(engine, nullptr, request);
    plan.notice = driver.status().message() + "; using the cpu tier";
    return {};
  }

  // A context runs on device 0 (device selection is not exposed yet).
  const DeviceInfo &device = driver.devices().front();
  if ((request == TESSEL_TIER_TC || request == TESSEL_TIER_TC_SM70 ||
       request == TESSEL_TIER_TC_SM80) &&
      !device.tensorCores())
    return Status(TESSEL_UNSUPPORTED, requested + "GPU " + describeDevice(device) +
                                          " has no Tensor Cores (they need compute "
                                          "capability 7.0 or newer)" + tail);
  plan.selection = chooseVariants(engine, &device, request, failedModules);
  plan.device = plan.selection.usesGpu() ? &device : nullptr;
  if (!forced && !plan.device)
    plan.notice = autoNotice(engine, plan.selection, device);
  return {};
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
