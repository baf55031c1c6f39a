//===- KernelLibrary.cpp - CUDA kernels for the non-GEMM ops --------------===//
//
// The planner half of the library: maps a step (op name, operand types,
// attributes as the engine stores them) to launches of the entry points of
// Library.cu, with grid and block sizes from the static shapes and the
// by-value parameter struct of KernelParams.h. What the library can launch,
// and in which family's module, is read from the families' own PTX (their
// `.entry` names), so a kernel the .cu does not define is never named: a
// step without one runs on the CPU tier.
//
// Attributes are read through the CPU tier's Attrs with the CPU kernels'
// defaults (a pool's layout and window by the CPU kernels' own reader,
// tessel/window.h), and constants that need a conversion (clip's bounds,
// pad's fill) are converted by the CPU tier's own functions, so both tiers
// see the same values.
//
//===----------------------------------------------------------------------===//
#include "KernelLibrary.h"

#include "EmbeddedImages.h"
#include "KernelParams.h"
#include "StepEncoding.h"
#include "TesselTraits.h"
#include "tessel/cpu_kernels.h"
#include "tessel/attention.h"
#include "tessel/window.h"

#include "mlir/IR/Diagnostics.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <map>

extern "C" {
#define TESSEL_FAMILY(family)                                                  \
  extern const uint8_t tessel_kernel_library_##family##_ptx_begin[],           \
      tessel_kernel_library_##family##_ptx_end[];
TESSEL_KERNEL_LIBRARY_FAMILIES
#undef TESSEL_FAMILY
#define TESSEL_CUBIN(family, arch)                                             \
  extern const uint8_t tessel_kernel_library_##family##_sm_##arch##_begin[],   \
      tessel_kernel_library_##family##_sm_##arch##_end[];
TESSEL_KERNEL_LIBRARY_CUBINS
#undef TESSEL_CUBIN
}

namespace tessel::codegen {
namespace {

using cpu::DType;
using kernels::kMaxRank;
using Dims = std::vector<int64_t>;

//===----------------------------------------------------------------------===//
// The embedded images
//===----------------------------------------------------------------------===//

struct Image {
  int arch; ///< 0 for the PTX
  const uint8_t *begin, *end;
};

/// A family: its name, its PTX (compute_75), its cubins by ascending arch,
/// and the entry points its PTX defines, sorted.
struct Family {
  std::string name;
  Image ptx;
  std::vector<Image> cubins;
  std::vector<std::string> entries;

  llvm::StringRef ptxText() const {
    return llvm::StringRef(reinterpret_cast<const char *>(ptx.begin), ptx.end - ptx.begin);
  }
};

/// The `.entry` names of a PTX text, sorted.
std::vector<std::string> ptxEntries(llvm::StringRef text) {
  std::vector<std::string> found;
  const llvm::StringRef marker = ".entry ";
  for (size_t at = text.find(marker); at != llvm::StringRef::npos;
       at = text.find(marker, at + marker.size())) {
    llvm::StringRef rest = text.drop_front(at + marker.size());
    found.push_back(rest.take_until([](char c) { return c == '(' || c == ' ' || c == '\n'; }).str());
  }
  std::sort(found.begin(), found.end());
  return found;
}

const std::vector<Family> &families() {
  static const std::vector<Family> all = [] {
    std::vector<Family> list;
#define TESSEL_FAMILY(family)                                                  \
  list.push_back(Family{#family,                                               \
                        Image{0, tessel_kernel_library_##family##_ptx_begin,   \
                              tessel_kernel_library_##family##_ptx_end},       \
                        {}, {}});
    TESSEL_KERNEL_LIBRARY_FAMILIES
#undef TESSEL_FAMILY
    auto named = [&](llvm::StringRef name) -> Family & {
      return *llvm::find_if(list, [&](const Family &f) { return f.name == name; });
    };
#define TESSEL_CUBIN(family, arch)                                             \
  named(#family).cubins.push_back(Image{arch, tessel_kernel_library_##family##_sm_##arch##_begin, \
                                        tessel_kernel_library_##family##_sm_##arch##_end});
    TESSEL_KERNEL_LIBRARY_CUBINS
#undef TESSEL_CUBIN
    for (Family &family : list)
      family.entries = ptxEntries(family.ptxText());
    return list;
  }();
  return all;
}

/// Every entry point with its family, sorted by name.
const std::vector<std::pair<std::string, int32_t>> &entryFamilies() {
  static const std::vector<std::pair<std::string, int32_t>> table = [] {
    std::vector<std::pair<std::string, int32_t>> entries;
    const std::vector<Family> &all = families();
    for (size_t f = 0; f < all.size(); ++f)
      for (const std::string &name : all[f].entries)
        entries.emplace_back(name, static_cast<int32_t>(f));
    std::sort(entries.begin(), entries.end());
    return entries;
  }();
  return table;
}

//===----------------------------------------------------------------------===//
// Shapes
//===----------------------------------------------------------------------===//

/// The product of dims [begin, end), end clamped to the rank.
int64_t product(const Dims &dims, size_t begin = 0, size_t end = SIZE_MAX) {
  auto last = dims.begin() + static_cast<std::ptrdiff_t>(std::min(end, dims.size()));
  auto first = dims.begin() + static_cast<std::ptrdiff_t>(std::min(begin, dims.size()));
  int64_t p = 1;
  for (auto it = first; it < last; ++it)
    p *= *it;
  return p;
}

Dims rowMajorStrides(const Dims &shape) {
  Dims strides(shape.size());
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= shape[d];
  }
  return strides;
}

/// Rewrites an iteration space of `shape` whose operands step by `strides`
/// into the fewest dims: extent-1 dims go, and dim d joins dim d+1 when every
/// operand steps over d as over a run of d+1. An empty space becomes rank 0
/// (its element count, 0, is kept by the caller).
void coalesce(Dims &shape, std::vector<Dims> &strides) {
  Dims outShape;
  std::vector<Dims> outStrides(strides.size());
  if (product(shape) == 0) {
    shape.clear();
    for (Dims &s : strides)
      s.clear();
    return;
  }
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1)
      continue;
    bool merge = !outShape.empty();
    for (size_t k = 0; merge && k < strides.size(); ++k)
      merge = outStrides[k].back() == strides[k][d] * shape[d];
    if (merge) {
      outShape.back() *= shape[d];
      for (size_t k = 0; k < strides.size(); ++k)
        outStrides[k].back() = strides[k][d];
    } else {
      outShape.push_back(shape[d]);
      for (size_t k = 0; k < strides.size(); ++k)
        outStrides[k].push_back(strides[k][d]);
    }
  }
  shape = std::move(outShape);
  strides = std::move(outStrides);
}

template <size_t N> void copyDims(const Dims &from, int64_t (&to)[N]) {
  std::fill(std::begin(to), std::end(to), 0);
  std::copy(from.begin(), from.end(), to);
}

//===----------------------------------------------------------------------===//
// Launches
//===----------------------------------------------------------------------===//

constexpr uint32_t kBlock = 256;
// Grid-stride loops cover any size; the kernels rely on a grid of at most
// 65535 blocks of at most 1024 threads (Common.cuh).
constexpr int64_t kMaxGrid = 65535;

uint32_t gridFor(int64_t threads, uint32_t block) {
  int64_t blocks = (threads + block - 1) / block;
  return static_cast<uint32_t>(std::clamp<int64_t>(blocks, 1, kMaxGrid));
}

/// Threads for a reduction of `count` elements by one block: a power of two
/// from 32 to 256.
uint32_t reductionBlock(int64_t count) {
  uint32_t block = 32;
  while (block < kBlock && block < count)
    block *= 2;
  return block;
}

/// A launch of `kernel`, which the library defines, in its family's module.
Launch makeLaunch(std::string kernel, uint32_t grid, uint32_t block,
                  std::vector<KernelArg> args) {
  Launch launch;
  launch.module = KernelLibrary::familyOf(kernel);
  launch.kernel = std::move(kernel);
  launch.grid = {grid, 1, 1};
  launch.block = {block, 1, 1};
  launch.args = std::move(args);
  return launch;
}

//===----------------------------------------------------------------------===//
// Dtypes
//===----------------------------------------------------------------------===//

const char *suffix(DType dtype) {
  switch (dtype) {
  case DType::F32: return "f32";
  case DType::F16: return "f16";
  case DType::F64: return "f64";
  case DType::I8: return "i8";
  case DType::U8: return "u8";
  case DType::I32: return "i32";
  case DType::I64: return "i64";
  case DType::Bool: return "b8";
  default: return nullptr; // no kernel computes on it
  }
}

/// A step operand: its engine tensor, dtype and static shape.
struct Operand {
  int32_t tensor = -1;
  DType dtype = DType::F32;
  Dims shape;
  int64_t count() const { return product(shape); }
  size_t elementBytes() const { return cpu::dtypeSize(dtype); }
  KernelArg address() const { return KernelArg::tensorAddress(tensor); }
};

/// The largest word (16, 8, 4, 2 or 1 bytes) dividing every byte count.
int wordBytes(std::initializer_list<int64_t> byteCounts) {
  for (int w : {16, 8, 4, 2})
    if (std::all_of(byteCounts.begin(), byteCounts.end(),
                    [&](int64_t b) { return b % w == 0; }))
      return w;
  return 1;
}

//===----------------------------------------------------------------------===//
// The planner of one step
//===----------------------------------------------------------------------===//

using Launches = std::optional<std::vector<Launch>>;

class StepPlanner {
public:
  StepPlanner(const StepView &step, cpu::Attrs attrs) : step(step), attrs(std::move(attrs)) {}

  /// The operands, or false when one is absent or of a type the engine
  /// cannot hold.
  bool readOperands() {
    for (int32_t t : step.inputs) {
      std::optional<Operand> o = operand(t);
      if (!o)
        return false;
      in.push_back(*o);
    }
    for (int32_t t : step.outputs) {
      std::optional<Operand> o = operand(t);
      if (!o)
        return false;
      out.push_back(*o);
    }
    return !out.empty();
  }

  Launches plan();

private:
  std::optional<Operand> operand(int32_t tensor) const {
    if (tensor < 0 || static_cast<size_t>(tensor) >= step.tensorTypes.size())
      return std::nullopt;
    mlir::RankedTensorType type = step.type(tensor);
    if (!type || !type.hasStaticShape())
      return std::nullopt;
    std::optional<int8_t> dtype = engineDType(type.getElementType());
    if (!dtype)
      return std::nullopt;
    Operand o;
    o.tensor = tensor;
    o.dtype = static_cast<DType>(*dtype);
    o.shape.assign(type.getShape().begin(), type.getShape().end());
    return o;
  }

  /// One launch of `kernel` if the library has it.
  Launches single(const std::string &kernel, uint32_t grid, uint32_t block,
                  std::vector<KernelArg> args) const {
    if (KernelLibrary::familyOf(kernel) < 0)
      return std::nullopt;
    return std::vector<Launch>{makeLaunch(kernel, grid, block, std::move(args))};
  }

  std::string typed(llvm::StringRef op, DType dtype) const {
    const char *s = suffix(dtype);
    return s ? "tsl_" + op.str() + "_" + s : std::string();
  }

  Launches copy();
  Launches cast();
  Launches unary();
  Launches clip();
  Launches broadcastOp();
  Launches where();
  Launches affine(int64_t base, Dims shape, Dims strides, int64_t count);
  Launches transpose();
  Launches slice();
  Launches expand();
  Launches tile();
  Launches pad();
  Launches im2row();
  Launches concat();
  Launches gather();
  Launches reduce();
  Launches softmax();
  Launches argReduce();
  Launches cumsum();
  Launches pool();
  Launches rowNorm(llvm::StringRef op, const kernels::NormParams &p, std::vector<KernelArg> args);
  Launches layerNorm();
  Launches instanceNorm();
  Launches batchNorm();
  Launches lrn();
  Launches gatherElements();
  Launches gatherND();
  Launches trilu();
  Launches attention();

public:
  /// The launches of a Tensor Core variant, which a family planner sets
  /// beside the simt launches it returns where it has one (attention):
  /// KernelLibrary::plan offers it as the tc-sm70 variant.
  Launches tensorCore;

private:
  const StepView &step;
  cpu::Attrs attrs;
  std::vector<Operand> in, out;
};

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

Launches StepPlanner::copy() {
  if (in.size() != 1 || in[0].dtype != out[0].dtype || in[0].count() != out[0].count())
    return std::nullopt;
  const uint64_t bytes = static_cast<uint64_t>(out[0].count()) * out[0].elementBytes();
  // A thread per 16 bytes, and at least one per byte of the tail.
  const int64_t threads = std::max<int64_t>(static_cast<int64_t>(bytes / 16), 16);
  return single("tsl_copy", gridFor(threads, kBlock), kBlock,
                {in[0].address(), out[0].address(), KernelArg::value(kernels::CopyParams{bytes})});
}

Launches StepPlanner::cast() {
  if (in.size() != 1 || in[0].shape != out[0].shape)
    return std::nullopt;
  const char *from = suffix(in[0].dtype), *to = suffix(out[0].dtype);
  if (!from || !to)
    return std::nullopt;
  kernels::UnaryParams p{};
  p.n = out[0].count();
  return single(std::string("tsl_cast_") + from + "_" + to, gridFor(p.n, kBlock), kBlock,
                {in[0].address(), out[0].address(), KernelArg::value(p)});
}

Launches StepPlanner::unary() {
  if (in.size() != 1 || in[0].dtype != out[0].dtype || in[0].count() != out[0].count())
    return std::nullopt;
  // The CPU kernel's parameters and defaults (elementwise.cpp: unaryKernel).
  kernels::UnaryParams p{};
  p.n = out[0].count();
  llvm::StringRef op = step.name;
  if (op == "leaky_relu") {
    p.alpha = attrs.getFloat("alpha", 0.01);
  } else if (op == "elu" || op == "celu" || op == "thresholded_relu") {
    p.alpha = attrs.getFloat("alpha", 1.0);
  } else if (op == "selu") {
    p.alpha = attrs.getFloat("alpha", 1.67326319217681884765625);
    p.gamma = attrs.getFloat("gamma", 1.05070102214813232421875);
  } else if (op == "hard_sigmoid") {
    p.alpha = attrs.getFloat("alpha", 0.2);
    p.beta = attrs.getFloat("beta", 0.5);
  } else if (op == "shrink") {
    p.alpha = attrs.getFloat("bias", 0.0);
    p.beta = attrs.getFloat("lambd", 0.5);
  }
  return single(typed(op, in[0].dtype), gridFor(p.n, kBlock), kBlock,
                {in[0].address(), out[0].address(), KernelArg::value(p)});
}

Launches StepPlanner::clip() {
  if (in.size() != 1 || in[0].dtype != out[0].dtype || in[0].count() != out[0].count())
    return std::nullopt;
  const double lo = attrs.getFloat("min", -std::numeric_limits<double>::infinity());
  const double hi = attrs.getFloat("max", std::numeric_limits<double>::infinity());
  kernels::ClipParams p{};
  p.n = out[0].count();
  // The bounds in the tensor's dtype, converted as the CPU kernel converts
  // them (integers saturate, f16 rounds).
  cpu::Bound low, high;
  if (!cpu::convertBound(in[0].dtype, lo, low) || !cpu::convertBound(in[0].dtype, hi, high))
    return std::nullopt;
  p.lo = low.real;
  p.hi = high.real;
  p.ilo = low.integer;
  p.ihi = high.integer;
  return single(typed("clip", in[0].dtype), gridFor(p.n, kBlock), kBlock,
                {in[0].address(), out[0].address(), KernelArg::value(p)});
}

/// Numpy broadcasting of `operands` to `result`, coalesced; nullopt when an
/// operand does not broadcast or the result keeps more than kMaxRank dims.
std::optional<kernels::BroadcastParams> broadcastParams(const Dims &result,
                                                        const std::vector<const Dims *> &operands) {
  const size_t rank = result.size();
  std::vector<Dims> strides(operands.size(), Dims(rank, 0));
  for (size_t k = 0; k < operands.size(); ++k) {
    const Dims &shape = *operands[k];
    if (shape.size() > rank)
      return std::nullopt;
    int64_t stride = 1;
    for (size_t j = 0; j < shape.size(); ++j) {
      const size_t i = shape.size() - 1 - j, d = rank - 1 - j;
      if (shape[i] == result[d])
        strides[k][d] = shape[i] == 1 ? 0 : stride;
      else if (shape[i] != 1)
        return std::nullopt;
      stride *= shape[i];
    }
  }
  Dims shape = result;
  coalesce(shape, strides);
  if (shape.size() > static_cast<size_t>(kMaxRank))
    return std::nullopt;
  kernels::BroadcastParams p{};
  p.n = product(result);
  p.rank = static_cast<int32_t>(shape.size());
  copyDims(shape, p.shape);
  for (size_t k = 0; k < strides.size(); ++k)
    copyDims(strides[k], p.stride[k]);
  return p;
}

Launches StepPlanner::broadcastOp() {
  if (in.size() != 2)
    return std::nullopt;
  const Operand &a = in[0], &b = in[1], &y = out[0];
  llvm::StringRef op = step.name;
  // Bool results: comparisons, and the logical ops on bools.
  const bool logical = op == "and" || op == "or" || op == "xor";
  std::string kernel;
  if (logical || isComparison(step.op)) {
    if (y.dtype != DType::Bool || a.dtype != b.dtype)
      return std::nullopt;
    kernel = typed(op, a.dtype);
  } else if (a.dtype == b.dtype) {
    if (y.dtype != a.dtype)
      return std::nullopt;
    // ONNX Mod's two signs are two entries (the CPU kernel's default: fmod=0,
    // which the library defines for integers only).
    if (op == "mod" && attrs.getInt("fmod", 0))
      op = "fmod";
    kernel = typed(op, a.dtype);
  } else {
    // Only pow takes mixed operand dtypes (the result has the base's).
    const char *exponent = suffix(b.dtype);
    if (op != "pow" || y.dtype != a.dtype || !exponent)
      return std::nullopt;
    kernel = typed(op, a.dtype) + "_" + exponent;
  }
  std::optional<kernels::BroadcastParams> p = broadcastParams(y.shape, {&a.shape, &b.shape});
  if (!p || kernel.empty())
    return std::nullopt;
  return single(kernel, gridFor(p->n, kBlock), kBlock,
                {a.address(), b.address(), y.address(), KernelArg::value(*p)});
}

Launches StepPlanner::where() {
  if (in.size() != 3)
    return std::nullopt;
  const Operand &c = in[0], &a = in[1], &b = in[2], &y = out[0];
  if (c.dtype != DType::Bool || a.dtype != b.dtype || a.dtype != y.dtype)
    return std::nullopt;
  std::optional<kernels::BroadcastParams> p =
      broadcastParams(y.shape, {&c.shape, &a.shape, &b.shape});
  if (!p)
    return std::nullopt;
  return single("tsl_where_w" + std::to_string(y.elementBytes()), gridFor(p->n, kBlock), kBlock,
                {c.address(), a.address(), b.address(), y.address(), KernelArg::value(*p)});
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

/// out[i...] = in[base + sum_d i_d * strides[d]] over the dense `shape`.
/// Where the innermost dim is contiguous in the input too (a transpose or a
/// slice that keeps rows whole: the heads of a transformer, NHWC channels),
/// each thread moves a word of up to 16 bytes of it: the innermost run, the
/// base and every stride whole words.
Launches StepPlanner::affine(int64_t base, Dims shape, Dims strides, int64_t count) {
  std::vector<Dims> strideSets{std::move(strides)};
  coalesce(shape, strideSets);
  if (shape.size() > static_cast<size_t>(kMaxRank))
    return std::nullopt;
  Dims &stride = strideSets[0];
  int64_t word = static_cast<int64_t>(out[0].elementBytes());
  if (!shape.empty() && stride.back() == 1) {
    const int64_t element = word;
    for (int64_t w : {16, 8, 4}) {
      if (w <= element)
        break;
      const int64_t per = w / element;
      bool whole = shape.back() % per == 0 && base % per == 0;
      for (size_t d = 0; d + 1 < stride.size(); ++d)
        whole = whole && stride[d] % per == 0;
      if (!whole)
        continue;
      shape.back() /= per;
      for (size_t d = 0; d + 1 < stride.size(); ++d)
        stride[d] /= per;
      base /= per;
      count /= per;
      word = w;
      break;
    }
  }
  kernels::AffineParams p{};
  p.n = count;
  p.base = base;
  p.rank = static_cast<int32_t>(shape.size());
  copyDims(shape, p.shape);
  copyDims(stride, p.stride);
  return single("tsl_affine_w" + std::to_string(word), gridFor(p.n, kBlock), kBlock,
                {in[0].address(), out[0].address(), KernelArg::value(p)});
}

Launches StepPlanner::transpose() {
  if (in.size() != 1 || in[0].dtype != out[0].dtype)
    return std::nullopt;
  const std::vector<int64_t> &perm = attrs.getInts("perm");
  const size_t rank = in[0].shape.size();
  if (perm.size() != rank || out[0].shape.size() != rank)
    return std::nullopt;
  const Dims inStrides = rowMajorStrides(in[0].shape);
  Dims strides(rank);
  std::vector<bool> seen(rank, false);
  for (size_t d = 0; d < rank; ++d) {
    if (perm[d] < 0 || perm[d] >= static_cast<int64_t>(rank) || seen[perm[d]] ||
        out[0].shape[d] != in[0].shape[perm[d]])
      return std::nullopt;
    seen[perm[d]] = true;
    strides[d] = inStrides[perm[d]];
  }
  return affine(0, out[0].shape, strides, out[0].count());
}

Launches StepPlanner::slice() {
  if (in.size() != 1 || in[0].dtype != out[0].dtype)
    return std::nullopt;
  const std::vector<int64_t> &starts = attrs.getInts("starts");
  const std::vector<int64_t> &steps = attrs.getInts("steps");
  const size_t rank = in[0].shape.size();
  if (starts.size() != rank || steps.size() != rank || out[0].shape.size() != rank)
    return std::nullopt;
  const Dims inStrides = rowMajorStrides(in[0].shape);
  Dims strides(rank);
  int64_t base = 0;
  if (out[0].count() != 0) {
    // As the CPU kernel: every index read lies inside the input.
    for (size_t d = 0; d < rank; ++d) {
      const int64_t extent = out[0].shape[d], start = starts[d], step = steps[d];
      int64_t last;
      bool inRange = step != 0 && start >= 0 && start < in[0].shape[d] &&
                     !__builtin_mul_overflow(extent - 1, step, &last) &&
                     !__builtin_add_overflow(start, last, &last) && last >= 0 &&
                     last < in[0].shape[d];
      if (!inRange)
        return std::nullopt;
      base += start * inStrides[d];
      strides[d] = extent == 1 ? 0 : step * inStrides[d];
    }
  }
  return affine(base, out[0].shape, strides, out[0].count());
}

Launches StepPlanner::expand() {
  if (in.size() != 1 || in[0].dtype != out[0].dtype)
    return std::nullopt;
  const Dims &shape = out[0].shape, &inShape = in[0].shape;
  if (inShape.size() > shape.size())
    return std::nullopt;
  const size_t lead = shape.size() - inShape.size();
  const Dims inStrides = rowMajorStrides(inShape);
  Dims strides(shape.size(), 0);
  for (size_t d = 0; d < inShape.size(); ++d) {
    if (inShape[d] != shape[lead + d] && inShape[d] != 1)
      return std::nullopt;
    strides[lead + d] = inShape[d] == 1 ? 0 : inStrides[d];
  }
  return affine(0, shape, strides, out[0].count());
}

Launches StepPlanner::tile() {
  if (in.size() != 1 || in[0].dtype != out[0].dtype)
    return std::nullopt;
  const Dims &shape = out[0].shape, &inShape = in[0].shape;
  if (inShape.size() != shape.size())
    return std::nullopt;
  const Dims inStrides = rowMajorStrides(inShape);
  Dims keptShape, keptIn, keptStrides;
  for (size_t d = 0; d < shape.size(); ++d) {
    const bool repeats = inShape[d] == 0 ? shape[d] == 0 : shape[d] % inShape[d] == 0;
    if (!repeats)
      return std::nullopt;
    if (shape[d] == 1)
      continue;
    keptShape.push_back(shape[d]);
    keptIn.push_back(inShape[d]);
    keptStrides.push_back(inStrides[d]);
  }
  kernels::TileParams p{};
  p.n = out[0].count();
  if (p.n != 0) {
    if (keptShape.size() > static_cast<size_t>(kMaxRank))
      return std::nullopt;
    p.rank = static_cast<int32_t>(keptShape.size());
    copyDims(keptShape, p.shape);
    copyDims(keptIn, p.inShape);
    copyDims(keptStrides, p.inStride);
  }
  return single("tsl_tile_w" + std::to_string(out[0].elementBytes()), gridFor(p.n, kBlock), kBlock,
                {in[0].address(), out[0].address(), KernelArg::value(p)});
}

Launches StepPlanner::pad() {
  if (in.size() != 1 || in[0].dtype != out[0].dtype)
    return std::nullopt;
  const std::string &modeName = attrs.getString("mode");
  int mode;
  if (modeName.empty() || modeName == "constant")
    mode = 0;
  else if (modeName == "reflect")
    mode = 1;
  else if (modeName == "edge")
    mode = 2;
  else
    return std::nullopt;
  const std::vector<int64_t> &pads = attrs.getInts("pads");
  const Dims &inShape = in[0].shape, &shape = out[0].shape;
  const size_t rank = inShape.size();
  if (pads.size() != 2 * rank || shape.size() != rank || rank > static_cast<size_t>(kMaxRank))
    return std::nullopt;
  for (size_t d = 0; d < rank; ++d) {
    if (inShape[d] + pads[d] + pads[rank + d] != shape[d])
      return std::nullopt;
    if (mode != 0 && inShape[d] == 0 && shape[d] != 0)
      return std::nullopt;
  }
  // The fill value's bits, converted by the CPU tier's own cast (f64 -> the
  // dtype), as its pad kernel converts it.
  const size_t width = out[0].elementBytes();
  if (width != 1 && width != 2 && width != 4 && width != 8)
    return std::nullopt;
  double value = attrs.getFloat("value");
  uint64_t fill = 0;
  cpu::TensorView from{DType::F64, {}, &value}, to{out[0].dtype, {}, &fill};
  if (!cpu::findKernel("cast")(cpu::Attrs{}, {&from}, {&to}).ok())
    return std::nullopt;
  // A scalar is a row of one element: the kernel runs along a last dim.
  const Dims rowShape = rank ? shape : Dims{1}, rowInShape = rank ? inShape : Dims{1};
  Dims begin(pads.begin(), pads.begin() + rank);
  if (!rank)
    begin = {0};
  kernels::PadParams p{};
  p.n = out[0].count();
  p.rank = static_cast<int32_t>(rowShape.size());
  p.mode = mode;
  p.fill = fill;
  copyDims(rowShape, p.shape);
  copyDims(rowInShape, p.inShape);
  copyDims(rowMajorStrides(rowInShape), p.inStride);
  copyDims(begin, p.begin);
  // A thread per run of 16 bytes along the last dim (Movement.cuh).
  const int64_t row = rowShape.back(), run = 16 / static_cast<int64_t>(width);
  const int64_t threads = row ? p.n / row * ((row + run - 1) / run) : 0;
  return single("tsl_pad_w" + std::to_string(width), gridFor(threads, kBlock), kBlock,
                {in[0].address(), out[0].address(), KernelArg::value(p)});
}

Launches StepPlanner::im2row() {
  if (in.size() != 1 || in[0].dtype != out[0].dtype)
    return std::nullopt;
  const Dims &x = in[0].shape, &y = out[0].shape;
  const int64_t kernel = attrs.getInt("kernel"), stride = attrs.getInt("stride"),
                dilation = attrs.getInt("dilation"), pad = attrs.getInt("pad");
  if (x.size() != 4 || y.size() != 4 || x[0] != y[0] || x[1] != y[1] || x[3] < 1 ||
      y[3] < kernel * x[3] || kernel < 1 || stride < 1 || dilation < 1 || pad < 0)
    return std::nullopt;
  const size_t width = out[0].elementBytes();
  if (width != 1 && width != 2 && width != 4 && width != 8)
    return std::nullopt;
  kernels::Im2RowParams p{x[0] * x[1], x[2], x[3], y[2], y[3], kernel, stride, dilation, pad};
  // A thread per run of 16 bytes of a position's channels (Movement.cuh).
  const int64_t run = 16 / static_cast<int64_t>(width);
  const int64_t threads = p.rows * p.outWidth * ((p.depth + run - 1) / run);
  return single("tsl_im2row_w" + std::to_string(width), gridFor(threads, kBlock), kBlock,
                {in[0].address(), out[0].address(), KernelArg::value(p)});
}

Launches StepPlanner::concat() {
  if (in.empty())
    return std::nullopt;
  const Operand &y = out[0];
  const int64_t rank = static_cast<int64_t>(y.shape.size());
  int64_t axis = attrs.getInt("axis");
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank)
    return std::nullopt;
  int64_t total = 0;
  for (const Operand &x : in) {
    if (x.dtype != y.dtype || static_cast<int64_t>(x.shape.size()) != rank)
      return std::nullopt;
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis && x.shape[d] != y.shape[d])
        return std::nullopt;
    total += x.shape[axis];
  }
  if (total != y.shape[axis])
    return std::nullopt;
  // Each operand is `outer` rows of its axis extent times `inner` elements,
  // placed at its running offset within the result's rows.
  const int64_t outer = product(y.shape, 0, axis), inner = product(y.shape, axis + 1);
  const int64_t es = static_cast<int64_t>(y.elementBytes());
  const int64_t dstRowBytes = y.shape[axis] * inner * es;
  std::vector<Launch> launches;
  int64_t offsetBytes = 0;
  for (const Operand &x : in) {
    const int64_t chunkBytes = x.shape[axis] * inner * es;
    if (chunkBytes != 0 && outer != 0) {
      const int w = wordBytes({chunkBytes, dstRowBytes, offsetBytes});
      kernels::ConcatParams p{outer, chunkBytes / w, dstRowBytes / w, offsetBytes / w};
      std::string kernel = "tsl_concat_w" + std::to_string(w);
      if (KernelLibrary::familyOf(kernel) < 0)
        return std::nullopt;
      launches.push_back(makeLaunch(kernel, gridFor(p.rows * p.chunk, kBlock), kBlock,
                                    {x.address(), y.address(), KernelArg::value(p)}));
    }
    offsetBytes += chunkBytes;
  }
  if (launches.empty()) // nothing to move: one launch that does nothing
    return single("tsl_concat_w1", 1, kBlock,
                  {in[0].address(), y.address(), KernelArg::value(kernels::ConcatParams{})});
  return launches;
}

Launches StepPlanner::gather() {
  if (in.size() != 2)
    return std::nullopt;
  const Operand &data = in[0], &indices = in[1], &y = out[0];
  if (data.dtype != y.dtype || (indices.dtype != DType::I32 && indices.dtype != DType::I64))
    return std::nullopt;
  const int64_t rank = static_cast<int64_t>(data.shape.size());
  int64_t axis = attrs.getInt("axis");
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank)
    return std::nullopt;
  Dims expected(data.shape.begin(), data.shape.begin() + axis);
  expected.insert(expected.end(), indices.shape.begin(), indices.shape.end());
  expected.insert(expected.end(), data.shape.begin() + axis + 1, data.shape.end());
  if (expected != y.shape)
    return std::nullopt;
  const int64_t innerBytes =
      product(data.shape, axis + 1) * static_cast<int64_t>(data.elementBytes());
  const int w = wordBytes({innerBytes});
  kernels::GatherParams p{product(data.shape, 0, axis), data.shape[axis], indices.count(),
                          innerBytes / w};
  return single("tsl_gather_w" + std::to_string(w) + "_" + suffix(indices.dtype),
                gridFor(p.outer * p.count * p.inner, kBlock), kBlock,
                {data.address(), indices.address(), y.address(), KernelArg::value(p)});
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

Launches StepPlanner::reduce() {
  if (in.size() != 1 || in[0].dtype != out[0].dtype)
    return std::nullopt;
  const Dims &shape = in[0].shape;
  const size_t rank = shape.size();
  std::vector<bool> reduced(rank, false);
  const std::vector<int64_t> &axes = attrs.getInts("axes");
  if (axes.empty())
    std::fill(reduced.begin(), reduced.end(), true);
  for (int64_t a : axes) {
    const int64_t axis = a < 0 ? a + static_cast<int64_t>(rank) : a;
    if (axis < 0 || axis >= static_cast<int64_t>(rank))
      return std::nullopt;
    reduced[axis] = true;
  }
  // Runs of adjacent dims of one kind merge (the input is dense); extent-1
  // dims go. The result is the kept dims in order.
  const Dims strides = rowMajorStrides(shape);
  Dims kept, keptStrides, red, redStrides;
  int lastKind = -1; // 0 kept, 1 reduced
  for (size_t d = 0; d < rank; ++d) {
    if (shape[d] == 1)
      continue;
    const int kind = reduced[d] ? 1 : 0;
    Dims &dims = kind ? red : kept, &dimStrides = kind ? redStrides : keptStrides;
    if (kind == lastKind) {
      dims.back() *= shape[d];
      dimStrides.back() = strides[d];
    } else {
      dims.push_back(shape[d]);
      dimStrides.push_back(strides[d]);
    }
    lastKind = kind;
  }
  const bool innermostReduced = lastKind == 1;
  if (red.empty()) {
    red.push_back(1);
    redStrides.push_back(0);
  }
  if (kept.size() > static_cast<size_t>(kMaxRank) || red.size() > static_cast<size_t>(kMaxRank))
    return std::nullopt;
  kernels::ReduceParams p{};
  p.numOut = product(kept);
  p.count = product(red);
  if (p.numOut != out[0].count())
    return std::nullopt;
  p.keptRank = static_cast<int32_t>(kept.size());
  p.reducedRank = static_cast<int32_t>(red.size());
  copyDims(kept, p.keptShape);
  copyDims(keptStrides, p.keptStride);
  copyDims(red, p.reducedShape);
  copyDims(redStrides, p.reducedStride);
  // A thread per result walks its elements in the CPU's order; it reads
  // coalesced across threads when the innermost dim is kept, and needs many
  // results to fill the GPU. Otherwise a block per result.
  const bool perThread = !innermostReduced && p.numOut >= 2048;
  const std::string kernel = typed(step.name, in[0].dtype) + (perThread ? "_thread" : "_block");
  std::vector<KernelArg> args{in[0].address(), out[0].address(), KernelArg::value(p)};
  if (perThread)
    return single(kernel, gridFor(p.numOut, kBlock), kBlock, std::move(args));
  return single(kernel, gridFor(p.numOut, 1), reductionBlock(p.count), std::move(args));
}

/// [outer, length, inner] around `axis`, or false if it is out of range.
bool splitAxis(const Dims &shape, int64_t axis, kernels::AxisParams &p) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (axis < 0)
    axis += rank;
  if (rank == 0 || axis < 0 || axis >= rank)
    return false;
  p.outer = product(shape, 0, axis);
  p.length = shape[axis];
  p.inner = product(shape, axis + 1);
  return true;
}

Launches StepPlanner::softmax() {
  if (in.size() != 1 || in[0].dtype != out[0].dtype || in[0].shape != out[0].shape)
    return std::nullopt;
  kernels::AxisParams p{};
  if (!splitAxis(in[0].shape, attrs.getInt("axis", -1), p))
    return std::nullopt;
  std::vector<KernelArg> args{in[0].address(), out[0].address(), KernelArg::value(p)};
  // A block per row when the axis is innermost (contiguous rows); else a
  // thread per row, reading coalesced across threads.
  if (p.inner == 1)
    return single(typed(step.name, in[0].dtype) + "_block", gridFor(p.outer, 1),
                  reductionBlock(p.length), std::move(args));
  return single(typed(step.name, in[0].dtype) + "_thread", gridFor(p.outer * p.inner, kBlock),
                kBlock, std::move(args));
}

Launches StepPlanner::argReduce() {
  if (in.size() != 1 || out[0].dtype != DType::I64)
    return std::nullopt;
  kernels::AxisParams p{};
  if (!splitAxis(in[0].shape, attrs.getInt("axis", 0), p))
    return std::nullopt;
  if (out[0].count() != p.outer * p.inner || (p.length == 0 && p.outer * p.inner != 0))
    return std::nullopt;
  p.last = attrs.getInt("select_last_index", 0) != 0;
  return single(typed(step.name, in[0].dtype), gridFor(p.outer * p.inner, kBlock), kBlock,
                {in[0].address(), out[0].address(), KernelArg::value(p)});
}

Launches StepPlanner::cumsum() {
  if (in.size() != 1 || in[0].dtype != out[0].dtype || in[0].shape != out[0].shape)
    return std::nullopt;
  kernels::AxisParams axis{};
  if (!splitAxis(in[0].shape, attrs.getInt("axis", 0), axis))
    return std::nullopt;
  kernels::ScanParams p{axis.outer, axis.length, axis.inner};
  p.exclusive = attrs.getInt("exclusive", 0) != 0;
  p.reverse = attrs.getInt("reverse", 0) != 0;
  // A thread per line along the axis, in the CPU's order.
  return single(typed("cumsum", in[0].dtype), gridFor(p.outer * p.inner, kBlock), kBlock,
                {in[0].address(), out[0].address(), KernelArg::value(p)});
}

//===----------------------------------------------------------------------===//
// Normalizations
//===----------------------------------------------------------------------===//

bool isF32OrF16(DType dtype) { return dtype == DType::F32 || dtype == DType::F16; }

/// Whether `param` broadcasts (numpy, right-aligned) to `shape`.
bool broadcastsTo(const Dims &param, const Dims &shape) {
  if (param.size() > shape.size())
    return false;
  const size_t lead = shape.size() - param.size();
  for (size_t d = 0; d < param.size(); ++d)
    if (param[d] != 1 && param[d] != shape[lead + d])
      return false;
  return true;
}

/// The launch of layer_norm's or instance_norm's row kernel for rows of
/// p.length elements (Normalization.cuh): a warp per row for rows a warp
/// holds in registers, a block per row for rows a block of at most
/// kNormMaxBlock threads holds, else a block per row that reads the row in
/// each pass; 16-byte loads (_vec) when every row starts at a multiple of 16
/// bytes.
Launches StepPlanner::rowNorm(llvm::StringRef op, const kernels::NormParams &p,
                              std::vector<KernelArg> args) {
  const int64_t bytes = static_cast<int64_t>(in[0].elementBytes());
  const int64_t lanes = (p.length * bytes) % 16 == 0 ? 16 / bytes : 1;
  const int64_t held =
      lanes == 1 ? kernels::kNormHeldElements : kernels::kNormHeldFloats / lanes;
  const int64_t vectors = p.length / lanes;
  std::string kernel = typed(op, in[0].dtype);
  uint32_t grid, block;
  if (vectors <= 32 * held) {
    kernel += "_warp";
    block = kBlock;
    grid = gridFor(p.rows, kBlock / 32);
  } else if (vectors <= kernels::kNormMaxBlock * held) {
    kernel += "_block";
    block = static_cast<uint32_t>((vectors + 32 * held - 1) / (32 * held) * 32);
    grid = gridFor(p.rows, 1);
  } else {
    kernel += "_stream";
    block = kernels::kNormMaxBlock;
    grid = gridFor(p.rows, 1);
  }
  if (lanes > 1)
    kernel += "_vec";
  args.push_back(KernelArg::value(p));
  return single(kernel, grid, block, std::move(args));
}

Launches StepPlanner::layerNorm() {
  if (in.size() != 2 && in.size() != 3)
    return std::nullopt;
  const Operand &x = in[0], &scale = in[1], &y = out[0];
  const Operand *bias = in.size() == 3 ? &in[2] : nullptr;
  if (!isF32OrF16(x.dtype) || y.dtype != x.dtype || y.shape != x.shape ||
      scale.dtype != x.dtype || (bias && bias->dtype != x.dtype))
    return std::nullopt;
  // The CPU kernel's axis: the normalized dims are [axis, rank).
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t axis = attrs.getInt("axis", -1);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis > rank)
    return std::nullopt;
  const Dims normalized(x.shape.begin() + axis, x.shape.end());
  kernels::NormParams p{};
  p.rows = product(x.shape, 0, static_cast<size_t>(axis));
  p.length = product(normalized);
  p.epsilon = static_cast<float>(attrs.getFloat("epsilon", 1e-5));
  // Scale and bias as the kernel reads them: the normalized shape (step 1)
  // or one element (step 0). Other broadcasts run on the CPU tier, and what
  // does not broadcast is the CPU kernel's error.
  auto stepOf = [&](const Operand &param) -> std::optional<int32_t> {
    if (!broadcastsTo(param.shape, normalized))
      return std::nullopt;
    if (param.count() == p.length)
      return 1;
    if (param.count() == 1)
      return 0;
    return std::nullopt;
  };
  std::optional<int32_t> scaleStep = stepOf(scale), biasStep = bias ? stepOf(*bias) : 0;
  if (!scaleStep || !biasStep)
    return std::nullopt;
  p.scaleStep = *scaleStep;
  p.biasStep = *biasStep;
  return rowNorm("layer_norm", p,
                 {x.address(), scale.address(), bias ? bias->address() : KernelArg::null(),
                  y.address()});
}

Launches StepPlanner::instanceNorm() {
  if (in.size() != 3)
    return std::nullopt;
  const Operand &x = in[0], &scale = in[1], &bias = in[2], &y = out[0];
  if (!isF32OrF16(x.dtype) || y.dtype != x.dtype || y.shape != x.shape || x.shape.size() < 2)
    return std::nullopt;
  const int64_t channels = x.shape[1];
  for (const Operand *param : {&scale, &bias})
    if (param->dtype != x.dtype || param->count() != channels)
      return std::nullopt;
  kernels::NormParams p{};
  p.rows = x.shape[0] * channels;
  p.length = product(x.shape, 2);
  p.channels = channels;
  p.epsilon = static_cast<float>(attrs.getFloat("epsilon", 1e-5));
  return rowNorm("instance_norm", p,
                 {x.address(), scale.address(), bias.address(), y.address()});
}

Launches StepPlanner::batchNorm() {
  if (in.size() != 5)
    return std::nullopt;
  const Operand &x = in[0], &y = out[0];
  if (!isF32OrF16(x.dtype) || y.dtype != x.dtype || y.shape != x.shape || x.shape.size() < 2)
    return std::nullopt;
  const int64_t channels = x.shape[1];
  for (size_t i = 1; i < 5; ++i)
    if (in[i].dtype != x.dtype || in[i].count() != channels)
      return std::nullopt;
  kernels::BatchNormParams p{};
  p.n = x.count();
  p.channels = channels;
  p.inner = product(x.shape, 2);
  p.epsilon = attrs.getFloat("epsilon", 1e-5);
  // Two launches: the channels' factors into the workspace, then a thread
  // per element, or per 16 bytes of one channel's elements (_vec).
  const KernelArg factors =
      KernelArg::workspace(std::max<uint64_t>(16, static_cast<uint64_t>(channels) * 4));
  const int64_t lanes = 16 / static_cast<int64_t>(x.elementBytes());
  const bool vec = p.inner % lanes == 0;
  const std::string factor = typed("batch_norm_factor", x.dtype);
  const std::string apply = typed("batch_norm", x.dtype) + (vec ? "_vec" : "");
  if (KernelLibrary::familyOf(factor) < 0 || KernelLibrary::familyOf(apply) < 0)
    return std::nullopt;
  const Operand &scale = in[1], &bias = in[2], &mean = in[3], &variance = in[4];
  return std::vector<Launch>{
      makeLaunch(factor, gridFor(channels, kBlock), kBlock,
                 {scale.address(), variance.address(), factors, KernelArg::value(p)}),
      makeLaunch(apply, gridFor(vec ? p.n / lanes : p.n, kBlock), kBlock,
                 {x.address(), bias.address(), mean.address(), factors, y.address(),
                  KernelArg::value(p)})};
}

Launches StepPlanner::lrn() {
  if (in.size() != 1 || !isF32OrF16(in[0].dtype) || out[0].dtype != in[0].dtype ||
      out[0].shape != in[0].shape || in[0].shape.size() < 2)
    return std::nullopt;
  const int64_t size = attrs.getInt("size", 1);
  if (size < 1)
    return std::nullopt;
  const Dims &shape = in[0].shape;
  kernels::LrnParams p{};
  p.n = in[0].count();
  p.channels = shape[1];
  p.inner = product(shape, 2);
  p.before = (size - 1) / 2;
  p.after = size - 1 - p.before;
  // alpha / size in double, as the CPU kernel computes it, then in f32.
  p.coeff = static_cast<float>(attrs.getFloat("alpha", 1e-4) / static_cast<double>(size));
  p.beta = static_cast<float>(attrs.getFloat("beta", 0.75));
  p.bias = static_cast<float>(attrs.getFloat("bias", 1.0));
  return single(typed("lrn", in[0].dtype), gridFor(p.n, kBlock), kBlock,
                {in[0].address(), out[0].address(), KernelArg::value(p)});
}

//===----------------------------------------------------------------------===//
// Selections by index or position
//===----------------------------------------------------------------------===//

Launches StepPlanner::gatherElements() {
  if (in.size() != 2)
    return std::nullopt;
  const Operand &data = in[0], &indices = in[1], &y = out[0];
  if (data.dtype != y.dtype || (indices.dtype != DType::I32 && indices.dtype != DType::I64))
    return std::nullopt;
  // The CPU kernel's checks: one rank, the result of the indices' shape,
  // which extends no dim but the axis past the data's.
  const int64_t rank = static_cast<int64_t>(data.shape.size());
  int64_t axis = attrs.getInt("axis");
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank || rank > kMaxRank ||
      indices.shape.size() != data.shape.size() || y.shape != indices.shape)
    return std::nullopt;
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && indices.shape[d] > data.shape[d])
      return std::nullopt;
  const int width = static_cast<int>(data.elementBytes());
  if (width != 1 && width != 2 && width != 4 && width != 8)
    return std::nullopt;
  Dims strides = rowMajorStrides(data.shape);
  kernels::GatherElementsParams p{};
  p.n = y.count();
  p.extent = data.shape[axis];
  p.axisStride = strides[axis];
  strides[axis] = 0;
  p.rank = static_cast<int32_t>(rank);
  copyDims(indices.shape, p.shape);
  copyDims(strides, p.stride);
  return single("tsl_gather_elements_w" + std::to_string(width) + "_" + suffix(indices.dtype),
                gridFor(p.n, kBlock), kBlock,
                {data.address(), indices.address(), y.address(), KernelArg::value(p)});
}

Launches StepPlanner::gatherND() {
  if (in.size() != 2)
    return std::nullopt;
  const Operand &data = in[0], &indices = in[1], &y = out[0];
  if (data.dtype != y.dtype || indices.dtype != DType::I64)
    return std::nullopt;
  // The CPU kernel's checks (gather.cpp, gatherNDKernel).
  const int64_t r = static_cast<int64_t>(data.shape.size());
  const int64_t q = static_cast<int64_t>(indices.shape.size());
  const int64_t b = attrs.getInt("batch_dims");
  const int64_t k = q ? indices.shape.back() : 0;
  if (r < 1 || q < 1 || b < 0 || b >= std::min(r, q) || k < 1 || k > r - b || k > kMaxRank)
    return std::nullopt;
  for (int64_t d = 0; d < b; ++d)
    if (data.shape[d] != indices.shape[d])
      return std::nullopt;
  Dims expected(indices.shape.begin(), indices.shape.end() - 1);
  expected.insert(expected.end(), data.shape.begin() + b + k, data.shape.end());
  if (y.shape != expected)
    return std::nullopt;
  kernels::GatherNDParams p{};
  p.k = static_cast<int32_t>(k);
  p.tuplesPerBatch = product(indices.shape, b, q - 1);
  // Strides in slices of the data's dims b .. b + k, and one batch's slices.
  int64_t batchSlices = 1;
  for (int64_t j = k; j-- > 0;) {
    p.extent[j] = data.shape[b + j];
    p.stride[j] = batchSlices;
    batchSlices *= data.shape[b + j];
  }
  p.batchSlices = batchSlices;
  const int64_t sliceBytes =
      product(data.shape, b + k) * static_cast<int64_t>(data.elementBytes());
  const int w = wordBytes({sliceBytes});
  p.sliceWords = sliceBytes / w;
  p.n = product(indices.shape, 0, q - 1) * p.sliceWords;
  return single("tsl_gather_nd_w" + std::to_string(w) + "_i64", gridFor(p.n, kBlock), kBlock,
                {data.address(), indices.address(), y.address(), KernelArg::value(p)});
}

Launches StepPlanner::trilu() {
  if (in.size() != 1 || in[0].dtype != out[0].dtype || in[0].shape != out[0].shape ||
      in[0].shape.size() < 2)
    return std::nullopt;
  const int width = static_cast<int>(in[0].elementBytes());
  if (width != 1 && width != 2 && width != 4 && width != 8)
    return std::nullopt;
  const Dims &shape = in[0].shape;
  kernels::TriluParams p{};
  p.n = in[0].count();
  p.rows = shape[shape.size() - 2];
  p.cols = shape.back();
  p.k = attrs.getInt("k");
  p.upper = attrs.getInt("upper", 1) != 0;
  return single("tsl_trilu_w" + std::to_string(width), gridFor(p.n, kBlock), kBlock,
                {in[0].address(), out[0].address(), KernelArg::value(p)});
}

//===----------------------------------------------------------------------===//
// Pools
//===----------------------------------------------------------------------===//

Launches StepPlanner::pool() {
  if (in.size() != 1 || in[0].dtype != out[0].dtype)
    return std::nullopt;
  // The CPU kernel's own reading of the layout and window (tessel/window.h):
  // where the CPU kernel would fail, there is no GPU kernel either.
  cpu::PoolGeometry g;
  std::string error;
  if (!cpu::readPoolGeometry(attrs, in[0].shape, out[0].shape, g, error))
    return std::nullopt;
  const size_t ns = g.inSpatial.size();
  if (ns > kernels::kMaxPoolDims)
    return std::nullopt;
  kernels::PoolParams p{};
  p.batch = g.batch;
  p.channels = g.channels;
  p.spatialRank = static_cast<int32_t>(ns);
  p.includePad = attrs.getInt("count_include_pad", 0) != 0;
  // Spatial dims right-aligned; unused leading slots are 1-wide windows.
  const size_t lead = kernels::kMaxPoolDims - ns;
  for (size_t s = 0; s < static_cast<size_t>(kernels::kMaxPoolDims); ++s) {
    p.inSpatial[s] = p.outSpatial[s] = p.kernel[s] = p.stride[s] = p.dilation[s] = 1;
    p.padBegin[s] = p.padEnd[s] = 0;
    if (s < lead)
      continue;
    const size_t d = s - lead;
    p.inSpatial[s] = g.inSpatial[d];
    p.outSpatial[s] = g.outSpatial[d];
    p.kernel[s] = g.kernel[d];
    p.stride[s] = g.window.strides[d];
    p.dilation[s] = g.window.dilations[d];
    p.padBegin[s] = g.window.padBegin[d];
    p.padEnd[s] = g.window.padEnd[d];
  }
  p.inBatch = g.inBatch;
  p.outBatch = g.outBatch;
  p.inC = g.inC;
  p.inS = g.inS;
  p.outC = g.outC;
  p.outS = g.outS;
  p.n = p.batch * p.channels * g.outSpatial.product();
  std::string name = typed(step.name, in[0].dtype);
  // NHWC float channels in 16-byte groups: a thread per group (Pool.cuh,
  // Lanes), which poolWindow sees as one channel at stride `lanes`.
  const int64_t lanes = 16 / static_cast<int64_t>(in[0].elementBytes());
  const bool floats = in[0].dtype == DType::F16 || in[0].dtype == DType::F32;
  if (g.nhwc && floats && p.channels % lanes == 0) {
    name += "_vec";
    p.channels /= lanes;
    p.inC = lanes;
    p.n /= lanes;
  }
  return single(name, gridFor(p.n, kBlock), kBlock,
                {in[0].address(), out[0].address(), KernelArg::value(p)});
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

/// attention (Attention.cuh): the simt kernel for f32 and f16 with head dims
/// up to 128, and on f16 with head dims that are multiples of 8 (16-byte
/// rows) the Tensor Core kernel of the smallest padded head dim that holds
/// them, as `tensorCore` (its split-keys form where the grid is small).
Launches StepPlanner::attention() {
  if (in.size() != 3 && in.size() != 4)
    return std::nullopt;
  const Operand &q = in[0], &k = in[1], &v = in[2], &y = out[0];
  const Operand *mask = in.size() == 4 ? &in[3] : nullptr;
  if (!isF32OrF16(q.dtype) || k.dtype != q.dtype || v.dtype != q.dtype || y.dtype != q.dtype)
    return std::nullopt;
  // The CPU kernel's own reading of the problem and the views
  // (tessel/attention.h): where it would fail, no GPU kernel.
  cpu::AttentionGeometry g;
  if (!cpu::readAttention(attrs.getInts("dims"), attrs.getInts("views"), q.shape, k.shape,
                          v.shape, y.shape, mask ? &mask->shape : nullptr, g)
           .empty())
    return std::nullopt;
  kernels::AttentionParams p{};
  p.batches = g.batch * g.heads;
  p.heads = g.heads;
  p.sq = g.sq;
  p.sk = g.sk;
  p.d = static_cast<int32_t>(g.d);
  p.dv = static_cast<int32_t>(g.dv);
  p.scale = static_cast<float>(attrs.getFloat("scale", 1.0));
  p.causal = attrs.getInt("causal", 0) != 0;
  auto view = [](const cpu::AttentionView &w) {
    return kernels::AttentionView{w.offset, w.batch, w.head, w.row};
  };
  p.q = view(g.q);
  p.k = view(g.k);
  p.v = view(g.v);
  p.out = view(g.out);
  if (p.d > kernels::kAttentionSimtMaxDim || p.dv > kernels::kAttentionSimtMaxDim ||
      p.batches > std::numeric_limits<int32_t>::max() || p.sq == 0 || p.sk == 0)
    return std::nullopt;
  p.maskB = g.maskB;
  p.maskH = g.maskH;
  p.maskI = g.maskI;
  p.maskJ = g.maskJ;
  if (mask) {
    switch (mask->dtype) {
    case DType::F32: p.maskKind = 1; break;
    case DType::F16: p.maskKind = 2; break;
    case DType::Bool: p.maskKind = 3; break;
    default: return std::nullopt;
    }
  }
  const std::vector<KernelArg> args = {q.address(), k.address(), v.address(),
                                       mask ? mask->address() : KernelArg::null(), y.address(),
                                       KernelArg::value(p)};
  auto launch = [&](const std::string &kernel, int64_t rows, uint32_t sharedBytes) -> Launches {
    const int64_t tiles = (p.sq + rows - 1) / rows;
    if (KernelLibrary::familyOf(kernel) < 0 || tiles > kMaxGrid)
      return std::nullopt;
    Launch l = makeLaunch(kernel, static_cast<uint32_t>(p.batches), kernels::kAttentionThreads,
                          args);
    l.grid[1] = static_cast<uint32_t>(tiles);
    l.sharedBytes = sharedBytes;
    return std::vector<Launch>{std::move(l)};
  };
  // The Tensor Core kernel moves 16-byte runs of rows and stores pairs:
  // every view's offset and strides whole runs of 8 halves.
  if (q.dtype == DType::F16 && p.d % 8 == 0 && p.dv % 8 == 0 && g.q.wholeRuns() &&
      g.k.wholeRuns() && g.v.wholeRuns() && g.out.wholeRuns())
    for (int headDim : kernels::kAttentionTcHeadDims)
      if (std::max(p.d, p.dv) <= headDim) {
        // Too few blocks of 64 query rows for the SMs (batch 1): the
        // split-keys kernel, 16 rows a block, its warps sharing the keys.
        const int64_t blocks =
            p.batches * ((p.sq + kernels::kAttentionTcRows - 1) / kernels::kAttentionTcRows);
        const std::string hd = std::to_string(headDim);
        tensorCore =
            blocks < kernels::kAttentionSplitBelowBlocks
                ? launch("tsl_attention_f16_tcsplit_d" + hd, kernels::kAttentionSplitRows,
                         static_cast<uint32_t>(kernels::attentionSplitSharedBytes(headDim)))
                : launch("tsl_attention_f16_tc_d" + hd, kernels::kAttentionTcRows,
                         static_cast<uint32_t>(kernels::attentionTcSharedBytes(headDim)));
        break;
      }
  return launch(typed("attention", q.dtype) + "_simt", kernels::kAttentionSimtRows, 0);
}

Launches StepPlanner::plan() {
  // The writer's output copies are steps of no op.
  KernelFamily family = step.op ? kernelFamily(step.op->getName()) : KernelFamily::Copy;
  switch (family) {
  case KernelFamily::Copy: return copy();
  case KernelFamily::Cast: return cast();
  case KernelFamily::Unary: return unary();
  case KernelFamily::Clip: return clip();
  case KernelFamily::Binary: return broadcastOp();
  case KernelFamily::Where: return where();
  case KernelFamily::Transpose: return transpose();
  case KernelFamily::Slice: return slice();
  case KernelFamily::Expand: return expand();
  case KernelFamily::Tile: return tile();
  case KernelFamily::Pad: return pad();
  case KernelFamily::Im2Row: return im2row();
  case KernelFamily::Concat: return concat();
  case KernelFamily::Gather: return gather();
  case KernelFamily::Reduce: return reduce();
  case KernelFamily::Softmax: return softmax();
  case KernelFamily::ArgReduce: return argReduce();
  case KernelFamily::Pool: return pool();
  case KernelFamily::LayerNorm: return layerNorm();
  case KernelFamily::InstanceNorm: return instanceNorm();
  case KernelFamily::BatchNorm: return batchNorm();
  case KernelFamily::Lrn: return lrn();
  case KernelFamily::CumSum: return cumsum();
  case KernelFamily::GatherElements: return gatherElements();
  case KernelFamily::GatherND: return gatherND();
  case KernelFamily::Trilu: return trilu();
  case KernelFamily::Attention: return attention();
  case KernelFamily::Gemm: // the implicit-GEMM codegen's (ImplicitGemm.h)
  case KernelFamily::None: return std::nullopt;
  }
  return std::nullopt;
}

} // namespace

mlir::FailureOr<std::vector<KernelVariant>> KernelLibrary::plan(const StepView &step) {
  cpu::Attrs attrs;
  if (step.op) {
    mlir::FailureOr<EngineAttrs> engine = engineAttrs(step.op);
    if (mlir::failed(engine))
      return mlir::failure();
    for (auto &[name, value] : *engine)
      attrs.set(name, value);
  }
  StepPlanner planner(step, std::move(attrs));
  std::vector<KernelVariant> variants;
  if (!planner.readOperands())
    return variants;
  Launches simt = planner.plan();
  used.resize(families().size(), false);
  // Best tier first: a family's Tensor Core kernel, then its simt kernel.
  for (auto [tier, launches] : {std::pair(engine::Tier::tc_sm70, &planner.tensorCore),
                                std::pair(engine::Tier::simt, &simt)}) {
    if (!*launches)
      continue;
    KernelVariant variant;
    variant.tier = tier;
    variant.kernel = (*launches)->front().kernel;
    // CUDA 13 compiles for compute_75 at the oldest (which has mma.sync
    // m16n8k8 and ldmatrix too); the copy, concat and gather kernels move
    // 16-byte words.
    variant.minComputeCapability = 75;
    variant.alignment = 16;
    variant.launches = std::move(**launches);
    for (const Launch &launch : variant.launches)
      used.at(static_cast<size_t>(launch.module)) = true;
    variants.push_back(std::move(variant));
  }
  return variants;
}

std::vector<KernelModule> KernelLibrary::modules(const Targets &targets,
                                                 std::vector<int32_t> &remap) const {
  std::vector<KernelModule> result;
  remap.assign(families().size(), -1);
  for (size_t family = 0; family < used.size(); ++family) {
    if (!used[family])
      continue;
    remap[family] = static_cast<int32_t>(result.size());
    result.push_back(module(static_cast<int32_t>(family), targets));
  }
  return result;
}

KernelModule KernelLibrary::module(int32_t index, const Targets &targets) {
  const Family &family = families().at(static_cast<size_t>(index));
  KernelModule module{"tessel_library_" + family.name, {}};
  llvm::StringRef ptx = family.ptxText();
  module.images.push_back(KernelImage{false, 75, std::vector<uint8_t>(ptx.begin(), ptx.end())});
  // A cubin serves the GPUs of its major and of minors not below its own
  // (the runtime's rule), so sm_80's serves a target of sm_86 too.
  for (const Image &image : family.cubins) {
    bool wanted = llvm::any_of(targets.cubinArchs, [&](int target) {
      return target / 10 == image.arch / 10 && target >= image.arch;
    });
    if (wanted)
      module.images.push_back(
          KernelImage{true, image.arch, std::vector<uint8_t>(image.begin, image.end)});
  }
  return module;
}

const std::vector<std::string> &KernelLibrary::familyNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> list;
    for (const Family &family : families())
      list.push_back(family.name);
    return list;
  }();
  return names;
}

const std::vector<std::string> &KernelLibrary::entryNames(int32_t family) {
  return families().at(static_cast<size_t>(family)).entries;
}

const std::vector<std::string> &KernelLibrary::entryNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> list;
    for (const auto &[name, family] : entryFamilies())
      list.push_back(name);
    return list;
  }();
  return names;
}

int32_t KernelLibrary::familyOf(llvm::StringRef entry) {
  const auto &table = entryFamilies();
  auto it = std::lower_bound(table.begin(), table.end(), entry,
                             [](const std::pair<std::string, int32_t> &e, llvm::StringRef name) {
                               return llvm::StringRef(e.first) < name;
                             });
  return it != table.end() && it->first == entry ? it->second : -1;
}

std::vector<int> KernelLibrary::cubinArchs() {
  std::vector<int> archs;
#define TESSEL_ENTRY(arch) archs.push_back(arch);
  TESSEL_KERNEL_LIBRARY_CUBIN_ARCHS
#undef TESSEL_ENTRY
  return archs;
}

} // namespace tessel::codegen
