//===- engine.h - a loaded, fully verified engine file ---------*- C++ -*-===//
//
// An Engine owns the bytes of one .tsl file and is immutable once opened, so
// one engine can back any number of contexts on any number of threads.
// Opening verifies everything the executor and the tools later rely on; after
// a successful open every accessor below is safe to use without checks:
// tensor indices are in range, sizes match shapes, constants and arena
// tensors lie inside their blobs, every step has an op and a CPU variant,
// every variant's tier is known, GPU variants have launches whose modules,
// tensors and launch shapes are in range, and plain PTX images are C strings
// (compressed images are checked when decoded, gpu/image_decoder.h).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_ENGINE_H
#define TESSEL_RUNTIME_ENGINE_H

#include "aligned_buffer.h"
#include "tessel/cpu_kernels.h"
#include "tessel/engine_format.h"
#include "status.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tessel::rt {

/// A FlatBuffers string as a C string; "" for an absent optional field.
inline const char *fbString(const flatbuffers::String *s) {
  return s ? s->c_str() : "";
}

/// "step N 'op' at LOCATION": how every message names a step.
std::string describeStep(size_t index, const tessel::engine::Step *step);

/// A step's attributes as the CPU kernels read them.
cpu::Attrs decodeAttrs(const tessel::engine::Step *step);

/// A graph input or output, decoded once at open: the C API hands out
/// pointers into these, valid while the engine lives.
struct TensorInfo {
  std::string name;
  cpu::DType dtype = cpu::DType::F32;
  std::vector<int64_t> shape;
  std::string layout;
  size_t sizeBytes = 0;
  int32_t tensor = 0; // index into fb()->tensors()
  // An output whose extent along extentAxis is data dependent (shape is its
  // bound): the i64 tensor holding the extent after a run; -1, -1 otherwise.
  int32_t extentAxis = -1, extentTensor = -1;
};

class Engine {
public:
  /// Reads the whole file and verifies it. Errors: TESSEL_IO_ERROR when the
  /// file cannot be read, TESSEL_UNSUPPORTED for another format version,
  /// TESSEL_INVALID_ENGINE for anything else that is not a valid engine; the
  /// message starts with the path. Throws std::bad_alloc only.
  static Status openFile(const std::string &path,
                         std::shared_ptr<const Engine> &engine);
  /// Copies `size` bytes (the caller keeps its buffer) and verifies them.
  static Status openMemory(const void *data, size_t size,
                           std::shared_ptr<const Engine> &engine);

  /// The verified header and FlatBuffer root.
  const format::Header &header() const { return fileHeader; }
  /// The plan this engine runs: the root's own for profile 0, else the
  /// profile's table (which holds only a plan's fields: tensors, inputs,
  /// outputs, steps, arena sizes, tiers).
  const tessel::engine::Engine *fb() const { return plan; }
  /// The root table: options, producer, targets, the profiles.
  const tessel::engine::Engine *top() const { return root; }
  /// The GPU modules, shared by every profile.
  const flatbuffers::Vector<flatbuffers::Offset<tessel::engine::KernelModule>> *modules() const {
    return root->modules();
  }

  /// The whole file, 256-byte aligned.
  const uint8_t *fileData() const { return file->data(); }
  size_t fileSize() const { return file->size(); }

  /// The constants blob (256-byte aligned), shared by every profile;
  /// Tensor.offset of a constant is relative to it.
  const uint8_t *constants() const { return file->data() + fileHeader.constants_offset; }
  uint64_t constantsSize() const { return fileHeader.constants_size; }
  uint64_t arenaSize() const { return plan->arena_size(); }

  const std::vector<TensorInfo> &inputs() const { return inputInfos; }
  const std::vector<TensorInfo> &outputs() const { return outputInfos; }

  /// True if the plan lists `tier` among its tiers.
  bool hasTier(tessel::engine::Tier tier) const;

  /// The engine's plans (tessel-compile --batch): 1 for a single-plan engine.
  size_t profileCount() const;
  size_t profileIndex() const { return profile; }
  /// The engine viewing plan `index` (< profileCount()): it shares this
  /// one's bytes, and its inputs, outputs and steps are that plan's.
  /// Throws std::bad_alloc only.
  std::shared_ptr<const Engine> withProfile(size_t index) const;

private:
  explicit Engine(AlignedBuffer bytes)
      : file(std::make_shared<AlignedBuffer>(std::move(bytes))) {}
  Engine(const Engine &other) = default;
  static Status open(AlignedBuffer bytes, std::shared_ptr<const Engine> &engine);

  /// The plan table of profile `index`.
  const tessel::engine::Engine *planTable(size_t index) const;

  Status verifyLayout();
  Status verifyPayload();
  Status verifySemantics();
  Status verifyPlan(size_t index);
  Status verifyTensor(size_t index, const tessel::engine::Tensor *tensor) const;
  Status verifyStep(size_t index, const tessel::engine::Step *step) const;
  Status verifyVariant(size_t index, const tessel::engine::KernelVariant *variant) const;
  Status verifyModules() const;
  Status collectGraphIo(bool isInput, std::vector<TensorInfo> &infos) const;

  std::shared_ptr<AlignedBuffer> file; // shared by the profiles' views
  format::Header fileHeader{};
  const tessel::engine::Engine *root = nullptr;
  const tessel::engine::Engine *plan = nullptr;
  size_t profile = 0;
  std::vector<TensorInfo> inputInfos, outputInfos;
};

} // namespace tessel::rt

#endif // TESSEL_RUNTIME_ENGINE_H
