//===- custom_ops.h - the process's CPU implementations of custom ops -*- C++ -*-===//
//
// tessel_register_custom_op's registry: per (domain, op type) the
// application's function and its user data. Entries are never removed, so a
// context may keep a pointer to one for its whole life.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_CUSTOM_OPS_H
#define TESSEL_RUNTIME_CUSTOM_OPS_H

#include "status.h"
#include "tessel_runtime.h"

#include <string>

namespace tessel::rt {

struct CustomOpImpl {
  std::string domain, opType;
  tessel_custom_cpu_fn fn = nullptr;
  void *userData = nullptr;
};

/// TESSEL_INVALID_ARGUMENT for empty names, a null function or an op
/// registered already. Thread-safe.
Status registerCustomOp(const std::string &domain, const std::string &opType,
                        tessel_custom_cpu_fn fn, void *userData);

/// The registered implementation, or null. Thread-safe.
const CustomOpImpl *findCustomOp(const std::string &domain, const std::string &opType);

} // namespace tessel::rt

#endif // TESSEL_RUNTIME_CUSTOM_OPS_H
