//===- image_decoder.cpp - decode zstd-compressed module images -----------===//
#include "gpu/image_decoder.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

namespace tessel::rt::gpu {
namespace fb = tessel::engine;

namespace {

/// libzstd's one-shot decoder, resolved once per process.
struct Zstd {
  size_t (*decompress)(void *dst, size_t dstCapacity, const void *src, size_t srcSize) = nullptr;
  unsigned (*isError)(size_t code) = nullptr;
  const char *(*errorName)(size_t code) = nullptr;
  std::string failure; // why it could not be loaded, or ""

  static const Zstd &get() {
    static Zstd zstd;
    static std::once_flag once;
    std::call_once(once, [] { zstd.load(); });
    return zstd;
  }

private:
  void load() {
    dlerror();
    void *handle = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char *error = dlerror();
      failure = std::string("libzstd.so.1 could not be loaded (dlopen: ") +
                (error ? error : "unknown error") + "); install libzstd1";
      return;
    }
    decompress = reinterpret_cast<decltype(decompress)>(dlsym(handle, "ZSTD_decompress"));
    isError = reinterpret_cast<decltype(isError)>(dlsym(handle, "ZSTD_isError"));
    errorName = reinterpret_cast<decltype(errorName)>(dlsym(handle, "ZSTD_getErrorName"));
    if (!decompress || !isError || !errorName)
      failure = "libzstd.so.1 lacks ZSTD_decompress, ZSTD_isError or ZSTD_getErrorName";
    // Never closed: the functions are used for the life of the process.
  }
};

/// The largest image the runtime decodes: a bad engine must not make it
/// allocate petabytes (the largest real module is a few MiB).
constexpr uint64_t kMaxImageBytes = uint64_t(1) << 30;

} // namespace

Status decodeZstd(const uint8_t *frame, size_t frameSize, uint64_t size,
                  std::vector<uint8_t> &out) {
  if (size == 0 || size > kMaxImageBytes)
    return invalidEngine("a compressed image declares " + std::to_string(size) +
                         " bytes (1 to " + std::to_string(kMaxImageBytes) + ")");
  const Zstd &zstd = Zstd::get();
  if (!zstd.failure.empty())
    return Status(TESSEL_UNSUPPORTED, "cannot decode a compressed kernel image: " + zstd.failure);
  // One byte more than declared: a frame that decodes to more is caught
  // instead of cut short.
  out.resize(static_cast<size_t>(size) + 1);
  size_t written = zstd.decompress(out.data(), out.size(), frame, frameSize);
  if (zstd.isError(written))
    return invalidEngine(std::string("a compressed image does not decode: ") +
                         zstd.errorName(written));
  if (written != size)
    return invalidEngine("a compressed image decodes to " + std::to_string(written) +
                         " bytes, it declares " + std::to_string(size));
  out.resize(written);
  return {};
}

Status imageBytes(const fb::KernelImage *image, const std::string &what,
                  std::vector<uint8_t> &storage, const uint8_t *&data, size_t &size) {
  data = image->data()->data();
  size = image->data()->size();
  if (image->compression() == fb::Compression::Zstd) {
    if (Status s = decodeZstd(data, size, image->size(), storage); !s.ok())
      return Status(s.code(), what + ": " + s.message());
    data = storage.data();
    size = storage.size();
  }
  // The driver reads PTX as a C string: without its NUL it would read on.
  if (image->format() == fb::ImageFormat::PTX && (size == 0 || data[size - 1] != 0))
    return invalidEngine(what + " (PTX) is not NUL-terminated");
  return {};
}

} // namespace tessel::rt::gpu
