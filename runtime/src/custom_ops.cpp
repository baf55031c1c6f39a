//===- custom_ops.cpp - the process's CPU implementations of custom ops ---===//
#include "custom_ops.h"

#include <deque>
#include <mutex>

namespace tessel::rt {

namespace {

std::mutex registryMutex;
// A deque: registering never moves the entries contexts point to.
std::deque<CustomOpImpl> &registry() {
  static std::deque<CustomOpImpl> entries;
  return entries;
}

const CustomOpImpl *findLocked(const std::string &domain, const std::string &opType) {
  for (const CustomOpImpl &impl : registry())
    if (impl.domain == domain && impl.opType == opType)
      return &impl;
  return nullptr;
}

} // namespace

Status registerCustomOp(const std::string &domain, const std::string &opType,
                        tessel_custom_cpu_fn fn, void *userData) {
  if (domain.empty() || opType.empty() || !fn)
    return Status(TESSEL_INVALID_ARGUMENT,
                  "tessel_register_custom_op needs a domain, an op type and a function");
  std::lock_guard<std::mutex> lock(registryMutex);
  if (findLocked(domain, opType))
    return Status(TESSEL_INVALID_ARGUMENT, "custom op " + domain + "." + opType +
                                               " has a CPU implementation registered already");
  registry().push_back(CustomOpImpl{domain, opType, fn, userData});
  return {};
}

const CustomOpImpl *findCustomOp(const std::string &domain, const std::string &opType) {
  std::lock_guard<std::mutex> lock(registryMutex);
  return findLocked(domain, opType);
}

} // namespace tessel::rt
