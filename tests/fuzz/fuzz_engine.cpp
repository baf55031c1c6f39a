//===- fuzz_engine.cpp - libFuzzer harness: engine bytes in, no crash out -===//
//
// Opens the input as an engine from memory (tessel_engine_open_memory: the
// header, checksum, FlatBuffers verifier and the runtime's own checks) and,
// when it opens, creates a context on the cpu tier, binds zeroed inputs and
// outputs and runs it. Every outcome is a status; what must never happen is a
// crash, a hang or a sanitizer report (built with ASan + UBSan).
//
// The mutator (LLVMFuzzerCustomMutator) mutates as libFuzzer does, then in 9
// of 10 cases reseals the header's checksum, so that mutants get past it to
// the verifier and the bounds checks, which are what is being tested.
//
//===----------------------------------------------------------------------===//
#include "tessel/engine_format.h"
#include "tessel_runtime.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t maxSize);

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t maxSize,
                                          unsigned int seed) {
  size = LLVMFuzzerMutate(data, size, maxSize);
  if (seed % 10 != 0 && size >= tessel::format::kHeaderSize) {
    tessel::format::Header header;
    std::memcpy(&header, data, sizeof(header));
    header.checksum = tessel::format::checksum(data + tessel::format::kHeaderSize,
                                               size - tessel::format::kHeaderSize);
    std::memcpy(data, &header, sizeof(header));
  }
  return size;
}

namespace {

// Graph inputs and outputs beyond this many bytes in all are not bound: the
// harness's own buffers would be what runs out of memory.
constexpr size_t kMaxIoBytes = 64u << 20;

bool ok(tessel_status_t status) {
  if (!status)
    return true;
  // Every failure must say what failed.
  if (!tessel_status_message(status) || !*tessel_status_message(status))
    __builtin_trap();
  tessel_status_free(status);
  return false;
}

// Nor contexts whose arena exceeds this: the allocation would be honest
// (TESSEL_OUT_OF_MEMORY in a release build), but ASan aborts on any
// allocation it cannot serve.
constexpr uint64_t kMaxArenaBytes = 256u << 20;

void runOnCpu(tessel_engine_t *engine) {
  const void *file = nullptr;
  size_t fileSize = 0;
  if (!ok(tessel_engine_file(engine, &file, &fileSize)))
    return;
  const auto *root = tessel::format::payload(static_cast<const uint8_t *>(file));
  if (root->arena_size() > kMaxArenaBytes)
    return;
  if (const auto *profiles = root->profiles())
    for (const auto *profile : *profiles)
      if (profile->arena_size() > kMaxArenaBytes)
        return;
  const size_t inputs = tessel_engine_input_count(engine),
               outputs = tessel_engine_output_count(engine);
  std::vector<std::vector<uint8_t>> buffers;
  size_t total = 0;
  for (size_t pass = 0; pass < 2; ++pass)
    for (size_t i = 0; i < (pass ? outputs : inputs); ++i) {
      tessel_tensor_info_t info;
      if (!ok(pass ? tessel_engine_output_info(engine, i, &info)
                   : tessel_engine_input_info(engine, i, &info)))
        return;
      total += info.size_bytes;
      if (info.size_bytes > kMaxIoBytes || total > kMaxIoBytes)
        return;
    }
  tessel_context_options_t options{};
  options.tier = TESSEL_TIER_CPU;
  tessel_context_t *context = nullptr;
  if (!ok(tessel_context_create(engine, &options, &context)))
    return;
  bool bound = true;
  for (size_t pass = 0; pass < 2 && bound; ++pass)
    for (size_t i = 0; i < (pass ? outputs : inputs) && bound; ++i) {
      tessel_tensor_info_t info;
      if (!ok(pass ? tessel_engine_output_info(engine, i, &info)
                   : tessel_engine_input_info(engine, i, &info))) {
        bound = false;
        break;
      }
      buffers.emplace_back(info.size_bytes, 0);
      bound = pass ? ok(tessel_context_bind_output(context, i, buffers.back().data(),
                                                   info.size_bytes))
                   : ok(tessel_context_bind_input(context, i, buffers.back().data(),
                                                  info.size_bytes));
    }
  if (bound && ok(tessel_context_run(context)))
    for (size_t i = 0; i < outputs; ++i) {
      tessel_tensor_info_t info;
      if (ok(tessel_engine_output_info(engine, i, &info))) {
        std::vector<int64_t> shape(info.rank);
        (void)ok(tessel_context_output_shape(context, i, shape.data(), shape.size()));
      }
    }
  tessel_context_release(context);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tessel_engine_t *engine = nullptr;
  if (!ok(tessel_engine_open_memory(data, size, &engine)))
    return 0;
  runOnCpu(engine);
  tessel_engine_release(engine);
  return 0;
}
