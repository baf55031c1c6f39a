//===- executor.h - one execution context of an engine ---------*- C++ -*-===//
//
// A Context is everything mutable about running an engine: the activation
// arena, the caller's bindings and the prepared step list. All of it is built
// at creation (kernels resolved, attributes decoded, tensor views pointing at
// their arena or constant bytes), so run() allocates nothing and only calls
// kernels in order. A context is used by one thread at a
// time; it keeps its engine alive.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_EXECUTOR_H
#define TESSEL_RUNTIME_EXECUTOR_H

#include "aligned_buffer.h"
#include "cpu/kernels.h"
#include "engine.h"
#include "status.h"

#include <memory>
#include <vector>

namespace tessel::rt {

class Context {
public:
  /// Prepares `engine` for the requested tier. TESSEL_TIER_AUTO probes the
  /// device (gpu::Driver, once per process) and runs on the CPU tier, saying
  /// why once per process on stderr (gpu::chooseAuto; TESSEL_QUIET=1
  /// silences it); TESSEL_TIER_CPU runs on the CPU tier without probing.
  /// Forced GPU tiers are TESSEL_UNSUPPORTED with the reason
  /// (gpu::checkForced). A step whose op has no CPU kernel is
  /// TESSEL_UNSUPPORTED.
  /// Throws std::bad_alloc only (e.g. an arena too large for the machine).
  static Status create(std::shared_ptr<const Engine> engine, tessel_tier_t tier,
                       std::unique_ptr<Context> &context);

  /// Binds caller memory of exactly the tensor's size_bytes to a graph input
  /// or output; bindings persist across runs until rebound.
  Status bindInput(size_t index, const void *data, size_t sizeBytes);
  Status bindOutput(size_t index, void *data, size_t sizeBytes);

  /// Runs every step in order. Fails if an input or output is unbound, or
  /// with the failing step's index, op and location if a kernel fails.
  Status run();

  /// "cpu": the tier this context runs on.
  const char *tier() const { return "cpu"; }
  const Engine &engine() const { return *owner; }

private:
  struct PreparedStep {
    cpu::Kernel kernel = nullptr;
    cpu::Attrs attrs;
    std::vector<const cpu::TensorView *> inputs; // nullptr: absent optional
    std::vector<cpu::TensorView *> outputs;
  };

  explicit Context(std::shared_ptr<const Engine> engine) : owner(std::move(engine)) {}
  Status prepare();
  Status bind(bool isInput, size_t index, void *data, size_t sizeBytes);

  std::shared_ptr<const Engine> owner;
  AlignedBuffer arena;
  // One view per engine tensor; steps point into it, so binding an input or
  // output updates every step that uses it. Never resized after prepare().
  std::vector<cpu::TensorView> views;
  std::vector<PreparedStep> steps;
  std::vector<bool> inputBound, outputBound;
};

} // namespace tessel::rt

#endif // TESSEL_RUNTIME_EXECUTOR_H
