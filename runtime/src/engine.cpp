//===- engine.cpp - open and verify an engine file ------------------------===//
//
// Verification runs in layers, each relying on the ones before it: the fixed
// header and the file layout, the checksum (so that later messages describe a
// file the compiler really wrote, not random corruption), the FlatBuffers
// verifier (every offset inside the payload), and the semantic checks (every
// index, size and range the executor will use without checking again).
//
//===----------------------------------------------------------------------===//
#include "engine.h"

#include "gpu/tiers.h"
#include "tessel/window.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

namespace tessel::rt {
namespace fb = tessel::engine;

namespace {

/// The largest workspace a kernel argument may ask for: a bad engine must not
/// make a context try to allocate petabytes.
constexpr uint64_t kMaxWorkspaceBytes = uint64_t(4) << 30;
/// An im2col tensor map (verifyTensorMap): an NHWC tensor as {C, W, H,
/// N}, strides of 16-byte multiples, each dimension's within the next's,
/// the whole within the tensor's bytes; boxes of at most 128 bytes a pixel
/// (the swizzle) and 256 pixels; corners within a 4-D map's [-128, 127]
/// whose walk has a position; element strides of 1 to 8.
Status verifyIm2colMap(const std::string &which, const fb::TensorMap &map, int32_t tensor,
                       const fb::Tensor &t) {
  auto sized = [](const auto *v, size_t n) { return v && v->size() == n; };
  if (!sized(map.dims(), 4) || !sized(map.strides(), 3) || !sized(map.box(), 2) ||
      !sized(map.lower_corner(), 2) || !sized(map.upper_corner(), 2) ||
      !sized(map.element_strides(), 4))
    return invalidEngine(which + "'s im2col tensor map is not four dimensions, three "
                                 "strides, a box, two corners and four element strides");
  bool fits = map.dims()->Get(0) > 0 && map.dims()->Get(0) * 2 <= map.strides()->Get(0);
  for (uint32_t d = 1; d < 4; ++d) {
    const uint64_t extent = map.dims()->Get(d), stride = map.strides()->Get(d - 1);
    fits = fits && extent > 0 && stride % 16 == 0 && stride <= (uint64_t(1) << 40) &&
           (d == 3 || map.strides()->Get(d) / stride >= extent);
  }
  fits = fits && map.dims()->Get(3) <= t.size() / map.strides()->Get(2);
  fits = fits && map.box()->Get(0) > 0 && map.box()->Get(0) * 2 <= 128 &&
         map.box()->Get(1) > 0 && map.box()->Get(1) <= 256;
  for (uint32_t d = 0; d < 2; ++d) {
    const int64_t lower = map.lower_corner()->Get(d), upper = map.upper_corner()->Get(d);
    fits = fits && lower >= -128 && lower <= 127 && upper >= -128 && upper <= 127 &&
           int64_t(map.dims()->Get(d + 1)) - 1 + upper >= lower;
  }
  for (uint32_t d = 0; d < 4; ++d)
    fits = fits && map.element_strides()->Get(d) >= 1 && map.element_strides()->Get(d) <= 8;
  if (!fits)
    return invalidEngine(which + "'s im2col tensor map (" + std::to_string(map.dims()->Get(0)) +
                         " channels, " + std::to_string(map.dims()->Get(1)) + " x " +
                         std::to_string(map.dims()->Get(2)) + " x " +
                         std::to_string(map.dims()->Get(3)) + " pixels, boxes of " +
                         std::to_string(map.box()->Get(0)) + " x " +
                         std::to_string(map.box()->Get(1)) + ") does not fit tensor " +
                         std::to_string(tensor) + " (" + std::to_string(t.size()) +
                         " bytes) or TMA");
  return {};
}

/// A kernel argument's TMA tensor map (KernelArg.tensor_map) of engine
/// tensor `tensor`, of f16. Tiled: two dimensions, rows of a multiple of
/// 16 bytes holding the innermost dimension, within the tensor's bytes; a
/// box of at most 256 rows whose rows are at most 128 bytes (the 128-byte
/// swizzle). With corners, im2col (verifyIm2colMap).
Status verifyTensorMap(const std::string &which, const fb::TensorMap &map, int32_t tensor,
                       const flatbuffers::Vector<flatbuffers::Offset<fb::Tensor>> *tensors) {
  if (tensor < 0)
    return invalidEngine(which + " is a tensor map of no tensor");
  const fb::Tensor *t = tensors->Get(tensor);
  if (t->dtype() != fb::DType::f16)
    return invalidEngine(which + " is a tensor map of a tensor that is not f16");
  if (map.lower_corner() || map.upper_corner() || map.element_strides())
    return verifyIm2colMap(which, map, tensor, *t);
  if (!map.dims() || map.dims()->size() != 2 || !map.strides() || map.strides()->size() != 1 ||
      !map.box() || map.box()->size() != 2)
    return invalidEngine(which + "'s tensor map is not two dimensions, one stride and a box");
  const uint64_t cols = map.dims()->Get(0), rows = map.dims()->Get(1),
                 stride = map.strides()->Get(0);
  const uint32_t boxCols = map.box()->Get(0), boxRows = map.box()->Get(1);
  if (cols == 0 || rows == 0 || stride % 16 != 0 || cols * 2 > stride ||
      rows > t->size() / stride || boxCols == 0 || boxCols * 2 > 128 || boxRows == 0 ||
      boxRows > 256)
    return invalidEngine(which + "'s tensor map (" + std::to_string(cols) + " x " +
                         std::to_string(rows) + ", rows of " + std::to_string(stride) +
                         " bytes, boxes of " + std::to_string(boxCols) + " x " +
                         std::to_string(boxRows) + ") does not fit tensor " +
                         std::to_string(tensor) + " (" + std::to_string(t->size()) +
                         " bytes) or TMA");
  return {};
}

/// The most arrival counters an argument may ask for (KernelArg.counter_bytes).
constexpr uint64_t kMaxCounterBytes = uint64_t(1) << 24;

std::string quoted(const flatbuffers::String *s) {
  return std::string("'") + fbString(s) + "'";
}

std::string describeTensor(size_t index, const fb::Tensor *tensor) {
  return "tensor " + std::to_string(index) + " " + quoted(tensor->name());
}

/// begin + size <= limit, without overflowing.
bool rangeWithin(uint64_t begin, uint64_t size, uint64_t limit) {
  return begin <= limit && size <= limit - begin;
}

/// The FlatBuffers verifier only checks a vector's 4-byte length prefix for
/// alignment; reading 64-bit elements also needs them 8-byte aligned, which
/// builders guarantee for non-empty vectors and only a damaged file breaks.
template <typename T> bool elementsAligned(const flatbuffers::Vector<T> *vector) {
  return !vector || vector->size() == 0 ||
         reinterpret_cast<uintptr_t>(vector->Data()) % alignof(T) == 0;
}

/// Closes a POSIX file descriptor on every path out of openFile.
class FileDescriptor {
public:
  explicit FileDescriptor(int descriptor) : fd(descriptor) {}
  ~FileDescriptor() {
    if (fd >= 0)
      ::close(fd);
  }
  FileDescriptor(const FileDescriptor &) = delete;
  FileDescriptor &operator=(const FileDescriptor &) = delete;
  int get() const { return fd; }

private:
  int fd;
};

Status ioError(const std::string &path, const char *what, int error) {
  return Status(TESSEL_IO_ERROR,
                "cannot " + std::string(what) + " '" + path + "': " + std::strerror(error));
}

} // namespace

std::string describeStep(size_t index, const fb::Step *step) {
  return "step " + std::to_string(index) + " " + quoted(step->op()) + " at " +
         fbString(step->location());
}

Status Engine::openFile(const std::string &path, std::shared_ptr<const Engine> &engine) {
  // Read, not mmap: verification touches every byte for the checksum anyway,
  // and an owned copy cannot change under the engine if the file is rewritten.
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0)
    return ioError(path, "open", errno);
  struct stat info;
  if (::fstat(fd.get(), &info) != 0)
    return ioError(path, "stat", errno);
  if (!S_ISREG(info.st_mode))
    return Status(TESSEL_IO_ERROR, "cannot read '" + path + "': not a regular file");

  AlignedBuffer bytes(static_cast<size_t>(info.st_size));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::read(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return ioError(path, "read", errno);
    if (n == 0) // shrank while reading
      return Status(TESSEL_IO_ERROR, "cannot read '" + path + "': the file changed while reading");
    done += static_cast<size_t>(n);
  }
  Status status = open(std::move(bytes), engine);
  if (!status.ok())
    return Status(status.code(), path + ": " + status.message());
  return status;
}

Status Engine::openMemory(const void *data, size_t size,
                          std::shared_ptr<const Engine> &engine) {
  if (!data && size != 0)
    return invalidArgument("engine data is NULL but its size is " + std::to_string(size));
  AlignedBuffer bytes(size);
  if (size)
    std::memcpy(bytes.data(), data, size);
  return open(std::move(bytes), engine);
}

Status Engine::open(AlignedBuffer bytes, std::shared_ptr<const Engine> &engine) {
  std::shared_ptr<Engine> candidate(new Engine(std::move(bytes)));
  if (Status s = candidate->verifyLayout(); !s.ok())
    return s;
  if (Status s = candidate->verifyPayload(); !s.ok())
    return s;
  if (Status s = candidate->verifySemantics(); !s.ok())
    return s;
  engine = std::move(candidate);
  return {};
}

size_t Engine::profileCount() const {
  return 1 + (root->profiles() ? root->profiles()->size() : 0);
}

const fb::Engine *Engine::planTable(size_t index) const {
  return index == 0 ? root : root->profiles()->Get(index - 1);
}

std::shared_ptr<const Engine> Engine::withProfile(size_t index) const {
  std::shared_ptr<Engine> view(new Engine(*this));
  view->profile = index;
  view->plan = planTable(index);
  view->inputInfos.clear();
  view->outputInfos.clear();
  // Verified at open: collecting cannot fail.
  (void)view->collectGraphIo(/*isInput=*/true, view->inputInfos);
  (void)view->collectGraphIo(/*isInput=*/false, view->outputInfos);
  return view;
}

bool Engine::hasTier(fb::Tier tier) const {
  if (const auto *tiers = plan->tiers())
    for (fb::Tier t : *tiers)
      if (t == tier)
        return true;
  return false;
}

//===----------------------------------------------------------------------===//
// Layer 1: header, layout, checksum
//===----------------------------------------------------------------------===//

Status Engine::verifyLayout() {
  const uint64_t fileSize = file->size();
  if (fileSize < format::kHeaderSize)
    return invalidEngine("file too small: " + std::to_string(fileSize) +
                         " bytes, the header alone is " +
                         std::to_string(format::kHeaderSize) + " (truncated?)");
  std::memcpy(&fileHeader, file->data(), sizeof(fileHeader));
  const format::Header &h = fileHeader;

  if (std::memcmp(h.magic, format::kMagic, sizeof(h.magic)) != 0)
    return invalidEngine("not a Tessel engine (bad magic)");
  if (h.format_version < format::kOldestReadableVersion ||
      h.format_version > format::kFormatVersion)
    return Status(TESSEL_UNSUPPORTED,
                  "engine format version " + std::to_string(h.format_version) +
                      " is not supported: this runtime reads versions " +
                      std::to_string(format::kOldestReadableVersion) + " to " +
                      std::to_string(format::kFormatVersion) +
                      "; recompile the model with a matching tessel-compile");
  if (h.header_size != format::kHeaderSize)
    return invalidEngine("header size " + std::to_string(h.header_size) + ", expected " +
                         std::to_string(format::kHeaderSize));
  if (h.reserved != 0)
    return invalidEngine("reserved header bytes are not zero");
  // The payload follows the header directly: that keeps it 8-byte aligned in
  // our 256-aligned copy, which the FlatBuffer's 64-bit fields rely on.
  if (h.payload_offset != format::kHeaderSize)
    return invalidEngine("payload offset " + std::to_string(h.payload_offset) +
                         ", expected " + std::to_string(format::kHeaderSize));
  if (!rangeWithin(h.payload_offset, h.payload_size, fileSize))
    return invalidEngine("the payload [" + std::to_string(h.payload_offset) + ", +" +
                         std::to_string(h.payload_size) + ") does not fit in the " +
                         std::to_string(fileSize) + "-byte file (truncated?)");
  if (h.payload_size == 0 || h.payload_size >= FLATBUFFERS_MAX_BUFFER_SIZE)
    return invalidEngine("payload size " + std::to_string(h.payload_size) +
                         " is not a valid FlatBuffer size");
  if (h.constants_offset % format::kConstantAlignment != 0)
    return invalidEngine("constants offset " + std::to_string(h.constants_offset) +
                         " is not " + std::to_string(format::kConstantAlignment) +
                         "-byte aligned");
  if (h.constants_offset < h.payload_offset + h.payload_size)
    return invalidEngine("the constants blob (offset " + std::to_string(h.constants_offset) +
                         ") overlaps the payload");
  if (!rangeWithin(h.constants_offset, h.constants_size, fileSize))
    return invalidEngine("the constants blob [" + std::to_string(h.constants_offset) + ", +" +
                         std::to_string(h.constants_size) + ") does not fit in the " +
                         std::to_string(fileSize) + "-byte file (truncated?)");
  if (h.constants_offset + h.constants_size != fileSize)
    return invalidEngine("the file has " + std::to_string(fileSize) +
                         " bytes but its layout ends at byte " +
                         std::to_string(h.constants_offset + h.constants_size) +
                         " (trailing data?)");
  if (format::checksum(file->data() + format::kHeaderSize, fileSize - format::kHeaderSize) !=
      h.checksum)
    return invalidEngine("checksum mismatch: the engine file is corrupt");
  return {};
}

//===----------------------------------------------------------------------===//
// Layer 2: the FlatBuffers verifier
//===----------------------------------------------------------------------===//

Status Engine::verifyPayload() {
  const uint8_t *payload = file->data() + fileHeader.payload_offset;
  const size_t payloadSize = static_cast<size_t>(fileHeader.payload_size);
  // The default table limit (1M) could reject a legitimate large model; every
  // table takes at least 4 bytes, so the size bounds the work just as well.
  auto maxTables = static_cast<flatbuffers::uoffset_t>(
      std::max<size_t>(1000000, payloadSize / 4));
  flatbuffers::Verifier verifier(payload, payloadSize, /*max_depth=*/64, maxTables);
  if (!fb::EngineBufferHasIdentifier(payload))
    return invalidEngine("the payload is not a Tessel engine (file identifier is not \"" +
                         std::string(fb::EngineIdentifier()) + "\")");
  if (!fb::VerifyEngineBuffer(verifier))
    return invalidEngine("the payload failed FlatBuffers verification (malformed engine)");
  root = plan = fb::GetEngine(payload);
  return {};
}

//===----------------------------------------------------------------------===//
// Layer 3: semantics
//===----------------------------------------------------------------------===//

Status Engine::verifyTensor(size_t index, const fb::Tensor *tensor) const {
  auto fail = [&](const std::string &what) {
    return invalidEngine(describeTensor(index, tensor) + ": " + what);
  };
  auto dtype = static_cast<int>(tensor->dtype());
  if (dtype < static_cast<int>(fb::DType::MIN) || dtype > static_cast<int>(fb::DType::MAX))
    return fail("invalid dtype " + std::to_string(dtype));
  auto storage = static_cast<int>(tensor->storage());
  if (storage < static_cast<int>(fb::Storage::MIN) ||
      storage > static_cast<int>(fb::Storage::MAX))
    return fail("invalid storage " + std::to_string(storage));

  if (!elementsAligned(tensor->shape()))
    return fail("misaligned shape vector");
  size_t elementSize = cpu::dtypeSize(static_cast<cpu::DType>(dtype));
  uint64_t expected = elementSize;
  if (const auto *shape = tensor->shape()) {
    for (int64_t dim : *shape) {
      if (dim < 0)
        return fail("negative dimension " + std::to_string(dim));
      if (__builtin_mul_overflow(expected, static_cast<uint64_t>(dim), &expected))
        return fail("size overflows 64 bits");
    }
  }
  if (tensor->size() != expected)
    return fail("size " + std::to_string(tensor->size()) + " bytes, but its shape and dtype " +
                "need " + std::to_string(expected));

  uint64_t offset = tensor->offset();
  if (tensor->storage() == fb::Storage::Constant &&
      !rangeWithin(offset, tensor->size(), fileHeader.constants_size))
    return fail("constant bytes [" + std::to_string(offset) + ", +" +
                std::to_string(tensor->size()) + ") lie outside the " +
                std::to_string(fileHeader.constants_size) + "-byte constants blob");
  if (tensor->storage() == fb::Storage::Arena &&
      !rangeWithin(offset, tensor->size(), plan->arena_size()))
    return fail("arena bytes [" + std::to_string(offset) + ", +" +
                std::to_string(tensor->size()) + ") lie outside the " +
                std::to_string(plan->arena_size()) + "-byte arena");
  // Kernels access elements through typed pointers; both blobs are 256-byte
  // aligned, so a naturally aligned offset gives an aligned address.
  if ((tensor->storage() == fb::Storage::Constant || tensor->storage() == fb::Storage::Arena) &&
      offset % elementSize != 0)
    return fail("offset " + std::to_string(offset) + " is not aligned to its " +
                std::to_string(elementSize) + "-byte elements");
  if (tensor->extent_axis() != -1 || tensor->extent_tensor() != -1) {
    const int64_t rank = tensor->shape() ? tensor->shape()->size() : 0;
    const int64_t axis = tensor->extent_axis(), source = tensor->extent_tensor();
    const auto *tensors = plan->tensors();
    if (tensor->storage() != fb::Storage::Output || axis < 0 || axis >= rank)
      return fail("a data-dependent extent needs an output and an axis within its rank");
    for (int64_t d = 0; d < axis; ++d)
      if (tensor->shape()->Get(d) != 1)
        return fail("its data-dependent axis " + std::to_string(axis) +
                    " follows a dim that is not 1");
    if (source < 0 || source >= static_cast<int64_t>(tensors->size()))
      return fail("its extent tensor " + std::to_string(source) + " does not exist");
    const fb::Tensor *count = tensors->Get(source);
    if (count->dtype() != fb::DType::i64 || count->size() != sizeof(int64_t) ||
        (count->storage() != fb::Storage::Arena && count->storage() != fb::Storage::Constant))
      return fail("its extent tensor " + std::to_string(source) +
                  " is not one i64 in the arena or the constants");
  }
  return {};
}

cpu::Attrs decodeAttrs(const fb::Step *step) {
  cpu::Attrs attrs;
  if (!step->attrs())
    return attrs;
  for (const fb::Attr *attr : *step->attrs()) {
    std::string name = attr->name()->str();
    switch (attr->kind()) {
    case fb::AttrKind::Int:
      attrs.set(name, attr->i());
      break;
    case fb::AttrKind::Float:
      attrs.set(name, attr->f());
      break;
    case fb::AttrKind::Ints: {
      std::vector<int64_t> ints;
      if (attr->ints())
        ints.assign(attr->ints()->begin(), attr->ints()->end());
      attrs.set(name, std::move(ints));
      break;
    }
    case fb::AttrKind::Floats: {
      std::vector<double> floats;
      if (attr->floats())
        floats.assign(attr->floats()->begin(), attr->floats()->end());
      attrs.set(name, std::move(floats));
      break;
    }
    case fb::AttrKind::String:
      attrs.set(name, std::string(fbString(attr->s())));
      break;
    }
  }
  return attrs;
}

// A step's attributes against its shapes, for the ops whose kernels index or
// size scratch memory by them: pool and conv windows (tessel/window.h, the
// readers the kernels use), and `axis`, `axes` and `perm` within the rank of
// the first input (every op that has one counts it so). An empty string when
// they agree: no changed engine may ask a kernel for absurd scratch memory or
// index arithmetic that overflows.
static std::string checkGeometry(
    const fb::Step *step,
    const flatbuffers::Vector<flatbuffers::Offset<fb::Tensor>> &tensors) {
  // verifyStep has checked every operand index; -1 is an absent operand.
  auto shapeOf = [&](const flatbuffers::Vector<int32_t> *operands, size_t i) {
    std::vector<int64_t> shape;
    if (operands && i < operands->size() && operands->Get(i) >= 0)
      if (const auto *dims = tensors.Get(operands->Get(i))->shape())
        shape.assign(dims->begin(), dims->end());
    return shape;
  };
  const std::string op = step->op()->str();
  const std::vector<int64_t> input = shapeOf(step->inputs(), 0);
  const std::vector<int64_t> result = shapeOf(step->outputs(), 0);
  std::string error;
  if (op == "max_pool" || op == "avg_pool" || op == "max_pool_indices") {
    cpu::PoolGeometry geometry;
    if (!cpu::readPoolGeometry(decodeAttrs(step), input, result, geometry, error))
      return "its window: " + error;
  } else if (op == "conv") {
    cpu::ConvGeometry geometry;
    if (!cpu::readConvGeometry(decodeAttrs(step), input, shapeOf(step->inputs(), 1), result,
                               geometry, error))
      return "its window: " + error;
  } else if (op == "conv_transpose") {
    cpu::Window window;
    if (input.size() < 3 || !cpu::readWindow(decodeAttrs(step), input.size() - 2, window, error))
      return "its window: " + (error.empty() ? "the input must have rank >= 3" : error);
  }
  const auto rank = static_cast<int64_t>(input.size());
  auto axisError = [&](const char *name, int64_t axis) {
    return "attribute '" + std::string(name) + "' holds " + std::to_string(axis) +
           ", outside the rank " + std::to_string(rank) + " of its first input";
  };
  if (!step->attrs())
    return {};
  for (const fb::Attr *attr : *step->attrs()) {
    const std::string name = attr->name()->str();
    if (name == "axis" && attr->kind() == fb::AttrKind::Int &&
        (attr->i() < -rank || attr->i() >= rank))
      return axisError("axis", attr->i());
    if ((name == "axes" || name == "perm") && attr->kind() == fb::AttrKind::Ints && attr->ints()) {
      std::vector<bool> seen(static_cast<size_t>(rank), false);
      for (int64_t axis : *attr->ints()) {
        if (axis < -rank || axis >= rank)
          return axisError(name.c_str(), axis);
        size_t d = static_cast<size_t>(axis < 0 ? axis + rank : axis);
        if (seen[d])
          return "attribute '" + name + "' names axis " + std::to_string(axis) + " twice";
        seen[d] = true;
      }
      if (name == "perm" && attr->ints()->size() != static_cast<size_t>(rank))
        return "attribute 'perm' holds " + std::to_string(attr->ints()->size()) +
               " axes for an input of rank " + std::to_string(rank);
    }
  }
  return {};
}

// A step's arena outputs against its arena operands: each output's bytes are
// disjoint from every other output's and from every input's, or coincide with
// an input's exactly (the planner's in-place steps and aliases). A partial
// overlap, which no planner makes, would have a kernel read what it has just
// written (or memcpy between overlapping ranges). An empty string when none.
static std::string checkArenaOverlap(
    const fb::Step *step,
    const flatbuffers::Vector<flatbuffers::Offset<fb::Tensor>> &tensors) {
  // verifyStep has checked every operand index; -1 is an absent operand.
  auto arenaRange = [&](int32_t t, uint64_t &begin, uint64_t &end) {
    if (t < 0 || tensors.Get(t)->storage() != fb::Storage::Arena || tensors.Get(t)->size() == 0)
      return false;
    begin = tensors.Get(t)->offset();
    end = begin + tensors.Get(t)->size(); // verifyTensor: within the arena
    return true;
  };
  const auto *outputs = step->outputs();
  if (!outputs)
    return {};
  for (size_t o = 0; o < outputs->size(); ++o) {
    uint64_t begin, end, otherBegin, otherEnd;
    if (!arenaRange(outputs->Get(o), begin, end))
      continue;
    for (size_t p = 0; p < o; ++p)
      if (arenaRange(outputs->Get(p), otherBegin, otherEnd) && begin < otherEnd &&
          otherBegin < end)
        return "outputs " + std::to_string(p) + " and " + std::to_string(o) +
               " overlap in the arena";
    if (const auto *inputs = step->inputs())
      for (size_t i = 0; i < inputs->size(); ++i)
        if (arenaRange(inputs->Get(i), otherBegin, otherEnd) && begin < otherEnd &&
            otherBegin < end && (begin != otherBegin || end != otherEnd))
          return "output " + std::to_string(o) + " overlaps input " + std::to_string(i) +
                 " in the arena in part (arena bytes [" + std::to_string(begin) + ", " +
                 std::to_string(end) + ") and [" + std::to_string(otherBegin) + ", " +
                 std::to_string(otherEnd) + "))";
  }
  return {};
}

Status Engine::verifyStep(size_t index, const fb::Step *step) const {
  auto fail = [&](const std::string &what) {
    return invalidEngine(describeStep(index, step) + ": " + what);
  };
  if (!step->op() || step->op()->size() == 0)
    return invalidEngine("step " + std::to_string(index) + " at " +
                         fbString(step->location()) + " has no op");
  const auto *tensors = plan->tensors();
  const size_t tensorCount = tensors ? tensors->size() : 0;
  if (const auto *inputs = step->inputs()) {
    for (size_t i = 0; i < inputs->size(); ++i) {
      int32_t t = inputs->Get(i);
      // -1 marks an absent optional operand; the kernel sees nullptr.
      if (t < -1 || (t >= 0 && static_cast<size_t>(t) >= tensorCount))
        return fail("input " + std::to_string(i) + " refers to tensor " + std::to_string(t) +
                    ", but the engine has " + std::to_string(tensorCount) + " tensors");
    }
  }
  if (const auto *outputs = step->outputs()) {
    for (size_t i = 0; i < outputs->size(); ++i) {
      int32_t t = outputs->Get(i);
      if (t < 0 || static_cast<size_t>(t) >= tensorCount)
        return fail("output " + std::to_string(i) + " refers to tensor " + std::to_string(t) +
                    ", but the engine has " + std::to_string(tensorCount) + " tensors");
      // Constants and inputs are shared, read-only memory: the engine is used
      // by many contexts at once and the caller's input buffers are const.
      fb::Storage storage = tensors->Get(t)->storage();
      if (storage == fb::Storage::Constant || storage == fb::Storage::Input)
        return fail("output " + std::to_string(i) + " writes " +
                    describeTensor(t, tensors->Get(t)) + ", which is " +
                    (storage == fb::Storage::Constant ? "a constant" : "a graph input"));
    }
  }
  if (const auto *attrs = step->attrs()) {
    for (const fb::Attr *attr : *attrs) {
      auto kind = static_cast<int>(attr->kind());
      if (kind < static_cast<int>(fb::AttrKind::MIN) || kind > static_cast<int>(fb::AttrKind::MAX))
        return fail("attribute " + quoted(attr->name()) + " has invalid kind " +
                    std::to_string(kind));
      if (attr->name()->size() == 0)
        return fail("an attribute has an empty name");
      if (!elementsAligned(attr->ints()) || !elementsAligned(attr->floats()))
        return fail("attribute " + quoted(attr->name()) + " has a misaligned vector");
    }
  }
  if (tensors) {
    if (std::string error = checkGeometry(step, *tensors); !error.empty())
      return fail(error);
    if (std::string error = checkArenaOverlap(step, *tensors); !error.empty())
      return fail(error);
  }
  bool hasCpu = false;
  if (const auto *variants = step->variants()) {
    for (size_t v = 0; v < variants->size(); ++v) {
      const fb::KernelVariant *variant = variants->Get(v);
      if (Status s = verifyVariant(v, variant); !s.ok())
        return fail(s.message());
      hasCpu |= variant->tier() == fb::Tier::cpu;
    }
  }
  // The CPU tier is the fallback of last resort: a step without it could not
  // run on a machine without a GPU, so such an engine is rejected up front.
  if (!hasCpu)
    return fail("has no \"cpu\" kernel variant");
  return {};
}

Status Engine::verifyVariant(size_t index, const fb::KernelVariant *variant) const {
  const char *tier = format::tierName(variant->tier());
  if (!tier)
    return invalidEngine("variant " + std::to_string(index) + " has an unknown tier " +
                         std::to_string(static_cast<int>(variant->tier())) +
                         " (known: cpu, simt, tc-sm70, tc-sm80, tc-sm90)");
  const std::string name = "variant " + std::to_string(index) + " '" + tier + "'";
  if (variant->min_compute_capability() < 0)
    return invalidEngine(name + " has a negative minimum compute capability");
  // Graph inputs and outputs get device buffers aligned to kConstantAlignment,
  // so no larger alignment could be promised for them.
  const int alignment = variant->alignment();
  if (alignment < 0 || alignment > static_cast<int>(format::kConstantAlignment) ||
      (alignment & (alignment - 1)) != 0)
    return invalidEngine(name + " has alignment " + std::to_string(alignment) +
                         ", not a power of two up to " +
                         std::to_string(format::kConstantAlignment));
  const size_t launchCount = variant->launches() ? variant->launches()->size() : 0;
  if (variant->tier() == fb::Tier::cpu)
    return launchCount == 0
               ? Status()
               : invalidEngine(name + " has GPU launches; the cpu tier runs the op's kernel");
  if (launchCount == 0)
    return invalidEngine(name + " has no launches");

  const size_t moduleCount = root->modules() ? root->modules()->size() : 0;
  const size_t tensorCount = plan->tensors() ? plan->tensors()->size() : 0;
  for (size_t l = 0; l < launchCount; ++l) {
    const fb::Launch *launch = variant->launches()->Get(l);
    const std::string where = name + " launch " + std::to_string(l);
    if (launch->module_() < 0 || static_cast<size_t>(launch->module_()) >= moduleCount)
      return invalidEngine(where + " refers to module " + std::to_string(launch->module_()) +
                           ", but the engine has " + std::to_string(moduleCount) + " modules");
    if (!launch->kernel() || launch->kernel()->size() == 0)
      return invalidEngine(where + " names no kernel");
    for (const auto &[label, dims] : {std::pair{"grid", launch->grid()},
                                      std::pair{"block", launch->block()}}) {
      bool valid = dims && dims->size() == 3 && dims->Get(0) && dims->Get(1) && dims->Get(2);
      if (!valid)
        return invalidEngine(where + ": the " + label + " needs 3 non-zero sizes");
    }
    const auto *block = launch->block();
    uint64_t threads = uint64_t(block->Get(0)) * block->Get(1) * block->Get(2);
    if (threads > 1024)
      return invalidEngine(where + ": a block of " + std::to_string(threads) +
                           " threads exceeds CUDA's 1024");
    if (const auto *args = launch->args())
      for (size_t a = 0; a < args->size(); ++a) {
        const fb::KernelArg *arg = args->Get(a);
        const std::string which = where + " argument " + std::to_string(a);
        if (arg->tensor() < -1 || (arg->tensor() >= 0 &&
                                   static_cast<size_t>(arg->tensor()) >= tensorCount))
          return invalidEngine(which + " refers to tensor " + std::to_string(arg->tensor()) +
                               ", but the engine has " + std::to_string(tensorCount) +
                               " tensors");
        bool hasBytes = arg->bytes() && arg->bytes()->size() != 0;
        if (arg->tensor() >= 0 && hasBytes)
          return invalidEngine(which + " has both a tensor and bytes");
        if (arg->workspace_bytes() != 0 && (arg->tensor() >= 0 || hasBytes))
          return invalidEngine(which + " is a workspace and also a tensor or bytes");
        if (arg->workspace_bytes() > kMaxWorkspaceBytes)
          return invalidEngine(which + " asks for a workspace of " +
                               std::to_string(arg->workspace_bytes()) + " bytes (at most " +
                               std::to_string(kMaxWorkspaceBytes) + ")");
        if (arg->counter_bytes() != 0 &&
            (arg->tensor() >= 0 || hasBytes || arg->workspace_bytes() != 0))
          return invalidEngine(which + " is counters and also a tensor, bytes or a workspace");
        if (arg->counter_bytes() > kMaxCounterBytes)
          return invalidEngine(which + " asks for " + std::to_string(arg->counter_bytes()) +
                               " bytes of counters (at most " +
                               std::to_string(kMaxCounterBytes) + ")");
        if (const fb::TensorMap *map = arg->tensor_map())
          if (Status s = verifyTensorMap(which, *map, arg->tensor(), plan->tensors()); !s.ok())
            return s;
      }
  }
  return {};
}

Status Engine::verifyModules() const {
  const auto *modules = root->modules();
  if (!modules)
    return {};
  for (size_t m = 0; m < modules->size(); ++m) {
    const fb::KernelModule *module = modules->Get(m);
    const std::string name = "module " + std::to_string(m) + " " + quoted(module->name());
    if (!module->images())
      continue;
    std::set<int> cubinArchs;
    for (size_t i = 0; i < module->images()->size(); ++i) {
      const fb::KernelImage *image = module->images()->Get(i);
      const std::string which = name + " image " + std::to_string(i);
      auto format = static_cast<int>(image->format());
      if (format < static_cast<int>(fb::ImageFormat::MIN) ||
          format > static_cast<int>(fb::ImageFormat::MAX))
        return invalidEngine(which + " has invalid format " + std::to_string(format));
      if (image->arch() <= 0)
        return invalidEngine(which + " has invalid arch " + std::to_string(image->arch()));
      if (!image->data() || image->data()->size() == 0)
        return invalidEngine(which + " is empty");
      auto compression = static_cast<int>(image->compression());
      if (compression < static_cast<int>(fb::Compression::MIN) ||
          compression > static_cast<int>(fb::Compression::MAX))
        return invalidEngine(which + " has invalid compression " + std::to_string(compression));
      // The driver reads PTX as a C string: without its NUL it would read on.
      // (A compressed image is checked when a GPU loads it and it is decoded:
      // gpu/image_decoder.h.)
      if (image->compression() == fb::Compression::None &&
          image->format() == fb::ImageFormat::PTX &&
          image->data()->Get(image->data()->size() - 1) != 0)
        return invalidEngine(which + " (PTX) is not NUL-terminated");
      if ((image->compression() == fb::Compression::None) != (image->size() == 0))
        return invalidEngine(which + " declares a decoded size of " +
                             std::to_string(image->size()) + " bytes, which " +
                             (image->size() ? "only a compressed image has"
                                            : "a compressed image needs"));
      if (image->format() == fb::ImageFormat::Cubin && !cubinArchs.insert(image->arch()).second)
        return invalidEngine(name + " has two cubins for sm_" + std::to_string(image->arch()));
    }
  }
  return {};
}

Status Engine::collectGraphIo(bool isInput, std::vector<TensorInfo> &infos) const {
  const auto *list = isInput ? plan->inputs() : plan->outputs();
  const char *what = isInput ? "input" : "output";
  const fb::Storage expected = isInput ? fb::Storage::Input : fb::Storage::Output;
  const auto *tensors = plan->tensors();
  const size_t tensorCount = tensors ? tensors->size() : 0;
  std::vector<bool> listed(tensorCount, false);
  if (list) {
    for (size_t i = 0; i < list->size(); ++i) {
      int32_t t = list->Get(i);
      std::string prefix = "graph " + std::string(what) + " " + std::to_string(i);
      if (t < 0 || static_cast<size_t>(t) >= tensorCount)
        return invalidEngine(prefix + " refers to tensor " + std::to_string(t) +
                             ", but the engine has " + std::to_string(tensorCount) + " tensors");
      const fb::Tensor *tensor = tensors->Get(t);
      if (tensor->storage() != expected)
        return invalidEngine(prefix + " is " + describeTensor(t, tensor) + ", whose storage is " +
                             fb::EnumNameStorage(tensor->storage()) + ", not " +
                             fb::EnumNameStorage(expected));
      if (listed[t])
        return invalidEngine(prefix + " repeats " + describeTensor(t, tensor));
      listed[t] = true;

      TensorInfo info;
      info.name = fbString(tensor->name());
      info.dtype = static_cast<cpu::DType>(tensor->dtype());
      if (tensor->shape())
        info.shape.assign(tensor->shape()->begin(), tensor->shape()->end());
      info.layout = fbString(tensor->layout());
      info.sizeBytes = static_cast<size_t>(tensor->size());
      info.tensor = t;
      info.extentAxis = tensor->extent_axis();
      info.extentTensor = tensor->extent_tensor();
      infos.push_back(std::move(info));
    }
  }
  // An input/output tensor nobody binds would reach a kernel as a null
  // pointer at run time.
  for (size_t t = 0; t < tensorCount; ++t)
    if (tensors->Get(t)->storage() == expected && !listed[t])
      return invalidEngine(describeTensor(t, tensors->Get(t)) + " has storage " +
                           fb::EnumNameStorage(expected) + " but is not a graph " + what);
  return {};
}

Status Engine::verifySemantics() {
  if (root->format_version() != fileHeader.format_version)
    return invalidEngine("the payload's format version " +
                         std::to_string(root->format_version()) +
                         " differs from the header's " +
                         std::to_string(fileHeader.format_version));
  if (root->constants_size() != fileHeader.constants_size)
    return invalidEngine("the payload's constants size " +
                         std::to_string(root->constants_size()) +
                         " differs from the header's " +
                         std::to_string(fileHeader.constants_size));
  if (Status s = verifyModules(); !s.ok())
    return s;
  for (size_t p = profileCount(); p-- > 0;) {
    plan = planTable(p);
    profile = p;
    if (Status s = verifyPlan(p); !s.ok())
      return profileCount() == 1
                 ? s
                 : Status(s.code(), "profile " + std::to_string(p) + ": " + s.message());
  }
  return {};
}

/// One plan: its tensors, graph inputs and outputs (collected for the
/// accessors), steps and tiers. Profiles other than the first hold nothing
/// else and take the first's inputs and outputs with other shapes.
Status Engine::verifyPlan(size_t index) {
  if (index != 0 && (plan->modules() || plan->profiles() || plan->options() ||
                     plan->targets() || plan->constants_size() != 0))
    return invalidEngine("holds modules, profiles, options, targets or constants, which only "
                         "the engine's root may");
  if (const auto *tensors = plan->tensors())
    for (size_t i = 0; i < tensors->size(); ++i)
      if (Status s = verifyTensor(i, tensors->Get(i)); !s.ok())
        return s;
  std::vector<TensorInfo> nextInputs = std::move(inputInfos),
                          nextOutputs = std::move(outputInfos);
  inputInfos.clear();
  outputInfos.clear();
  if (Status s = collectGraphIo(/*isInput=*/true, inputInfos); !s.ok())
    return s;
  if (Status s = collectGraphIo(/*isInput=*/false, outputInfos); !s.ok())
    return s;
  // Verified from the last profile to the first: the later ones must have the
  // inputs and outputs (names, dtypes, ranks, layouts) of the one after.
  auto sameSignature = [](const std::vector<TensorInfo> &a, const std::vector<TensorInfo> &b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                      [](const TensorInfo &x, const TensorInfo &y) {
                        return x.name == y.name && x.dtype == y.dtype &&
                               x.shape.size() == y.shape.size() && x.layout == y.layout &&
                               x.extentAxis == y.extentAxis;
                      });
  };
  if (index + 1 < profileCount() &&
      (!sameSignature(inputInfos, nextInputs) || !sameSignature(outputInfos, nextOutputs)))
    return invalidEngine("its graph inputs or outputs differ from profile " +
                         std::to_string(index + 1) + "'s in name, dtype, rank or layout");
  if (const auto *steps = plan->steps())
    for (size_t i = 0; i < steps->size(); ++i)
      if (Status s = verifyStep(i, steps->Get(i)); !s.ok())
        return s;
  if (const auto *tiers = plan->tiers())
    for (fb::Tier tier : *tiers)
      if (!format::tierName(tier))
        return invalidEngine("the tier list holds an unknown tier " +
                             std::to_string(static_cast<int>(tier)));
  return {};
}

} // namespace tessel::rt
