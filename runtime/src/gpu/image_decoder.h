//===- image_decoder.h - a module image's bytes as the driver loads them -*- C++ -*-===//
//
// The compiler stores kernel images zstd-compressed (engine.fbs, Compression).
// The runtime decodes one when a GPU loads its module, through libzstd.so.1
// loaded with dlopen (as libcuda is): the runtime links nothing new, and an
// application that never loads a GPU module never needs it. Debian and
// Ubuntu install libzstd1 with dpkg itself.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_GPU_IMAGE_DECODER_H
#define TESSEL_RUNTIME_GPU_IMAGE_DECODER_H

#include "status.h"
#include "tessel/engine_format.h"

#include <cstdint>
#include <vector>

namespace tessel::rt::gpu {

/// The bytes of `image` as the driver loads them: a view of the engine's
/// bytes when stored plainly, else decoded into `storage`. The decoded size
/// must be the image's declared size, and a PTX image must end in its NUL;
/// anything else is TESSEL_INVALID_ENGINE. TESSEL_UNSUPPORTED when libzstd
/// cannot be loaded. `what` names the image in messages.
Status imageBytes(const tessel::engine::KernelImage *image, const std::string &what,
                  std::vector<uint8_t> &storage, const uint8_t *&data, size_t &size);

/// zstd-decodes `frame` into exactly `size` bytes (the same rules as above).
/// For tests.
Status decodeZstd(const uint8_t *frame, size_t frameSize, uint64_t size,
                  std::vector<uint8_t> &out);

} // namespace tessel::rt::gpu

#endif // TESSEL_RUNTIME_GPU_IMAGE_DECODER_H
