//===- aligned_buffer.h - an owned, over-aligned byte buffer ---*- C++ -*-===//
//
// Holds the engine file and each context's arena. Both are 256-byte aligned
// (format::kConstantAlignment): the file's constants start 256-aligned
// relative to the file start, and the arena plan places tensors on the same
// boundary, so these absolute addresses keep every vector width and device
// copy fast path the compiler planned for.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_ALIGNED_BUFFER_H
#define TESSEL_RUNTIME_ALIGNED_BUFFER_H

#include "tessel/engine_format.h"

#include <cstddef>
#include <cstdint>
#include <new>

namespace tessel::rt {

class AlignedBuffer {
public:
  static constexpr std::align_val_t kAlignment{format::kConstantAlignment};

  AlignedBuffer() = default;
  // Throws std::bad_alloc. Zero bytes still allocate one block, so data() is
  // never null and `data() + 0` is well-defined.
  explicit AlignedBuffer(size_t size)
      : bytes(static_cast<uint8_t *>(::operator new(size ? size : 1, kAlignment))),
        length(size) {}
  AlignedBuffer(AlignedBuffer &&other) noexcept
      : bytes(other.bytes), length(other.length) {
    other.bytes = nullptr;
    other.length = 0;
  }
  AlignedBuffer &operator=(AlignedBuffer &&other) noexcept {
    if (this != &other) {
      release();
      bytes = other.bytes;
      length = other.length;
      other.bytes = nullptr;
      other.length = 0;
    }
    return *this;
  }
  AlignedBuffer(const AlignedBuffer &) = delete;
  AlignedBuffer &operator=(const AlignedBuffer &) = delete;
  ~AlignedBuffer() { release(); }

  uint8_t *data() { return bytes; }
  const uint8_t *data() const { return bytes; }
  size_t size() const { return length; }

private:
  void release() {
    if (bytes)
      ::operator delete(bytes, kAlignment);
    bytes = nullptr;
  }

  uint8_t *bytes = nullptr;
  size_t length = 0;
};

} // namespace tessel::rt

#endif // TESSEL_RUNTIME_ALIGNED_BUFFER_H
