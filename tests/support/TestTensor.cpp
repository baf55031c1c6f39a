//===- TestTensor.cpp - a tensor the kernel tests own, and its values -----===//
#include "TestTensor.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tessel::test {

using cpu::DType;

int64_t numel(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

Shape unravel(int64_t linear, const Shape &shape) {
  Shape index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = linear % shape[d];
    linear /= shape[d];
  }
  return index;
}

int64_t ravel(const Shape &index, const Shape &shape) {
  int64_t linear = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    linear = linear * shape[d] + index[d];
  return linear;
}

std::string shapeStr(const Shape &shape) {
  std::string r = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    r += (i ? "," : "") + std::to_string(shape[i]);
  return r + "]";
}

bool isIntType(DType dtype) {
  switch (dtype) {
  case DType::I8: case DType::I16: case DType::I32: case DType::I64:
  case DType::U8: case DType::U16: case DType::U32: case DType::U64: return true;
  default: return false;
  }
}

bool isSignedType(DType dtype) {
  return dtype == DType::I8 || dtype == DType::I16 || dtype == DType::I32 || dtype == DType::I64;
}

int bitsOf(DType dtype) { return static_cast<int>(cpu::dtypeSize(dtype)) * 8; }

//===----------------------------------------------------------------------===//
// Reference conversions
//===----------------------------------------------------------------------===//

double refHalfToDouble(uint16_t h) {
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  if (exponent == 0)
    return sign * std::ldexp(static_cast<double>(mantissa), -24);
  if (exponent == 31)
    return mantissa ? std::numeric_limits<double>::quiet_NaN()
                    : sign * std::numeric_limits<double>::infinity();
  return sign * std::ldexp(static_cast<double>(1024 + mantissa), exponent - 25);
}

uint16_t refDoubleToHalf(double v) {
  if (std::isnan(v))
    return std::signbit(v) ? 0xfe00 : 0x7e00;
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  const double a = std::fabs(v);
  if (a >= 65520.0)
    return sign | 0x7c00;
  if (a == 0)
    return sign;
  int e;
  std::frexp(a, &e); // a in [2^(e-1), 2^e)
  int exponent = std::max(e - 1, -14);
  const double quantum = std::ldexp(1.0, exponent - 10);
  const double m = std::nearbyint(a / quantum) * quantum; // a / quantum is exact
  if (m == 0)
    return sign;
  std::frexp(m, &e);
  exponent = e - 1;
  if (exponent < -14)
    return sign | static_cast<uint16_t>(m / std::ldexp(1.0, -24));
  const int mantissa = static_cast<int>(m / std::ldexp(1.0, exponent - 10)) - 1024;
  return sign | static_cast<uint16_t>(((exponent + 15) << 10) | mantissa);
}

double refBf16ToDouble(uint16_t bits) {
  // bf16 is the upper half of a binary32.
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &wide, sizeof f);
  return f;
}

// Scales by the ulp of the value's binade (exact: a power of two), rounds
// with nearbyint and assembles the bits; a carry out of the mantissa lands on
// the next exponent (or infinity) by construction.
uint16_t refDoubleToBf16(double x) {
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  if (std::isnan(x))
    return sign | 0x7fc0;
  const double a = std::fabs(x);
  if (a >= std::ldexp(1.0, 128))
    return sign | 0x7f80;
  int e = -126;
  if (a != 0) {
    int ex;
    std::frexp(a, &ex);
    e = std::max(ex - 1, -126);
  }
  const double q = std::nearbyint(a / std::ldexp(1.0, e - 7)); // ties to even
  return sign | static_cast<uint16_t>(((e + 126) << 7) + static_cast<int>(q));
}

//===----------------------------------------------------------------------===//
// Tensor
//===----------------------------------------------------------------------===//

Tensor::Tensor(DType dtype, Shape shape)
    : bytes_(static_cast<size_t>(numel(shape)) * cpu::dtypeSize(dtype) + 1) {
  view_.dtype = dtype;
  view_.shape = std::move(shape);
  view_.data = bytes_.data();
}

Tensor::Tensor(const Tensor &other) : bytes_(other.bytes_), view_(other.view_) {
  view_.data = bytes_.data();
}

Tensor::Tensor(Tensor &&other) noexcept
    : bytes_(std::move(other.bytes_)), view_(std::move(other.view_)) {
  view_.data = bytes_.data();
}

Tensor &Tensor::operator=(const Tensor &other) {
  bytes_ = other.bytes_;
  view_ = other.view_;
  view_.data = bytes_.data();
  return *this;
}

Tensor &Tensor::operator=(Tensor &&other) noexcept {
  bytes_ = std::move(other.bytes_);
  view_ = std::move(other.view_);
  view_.data = bytes_.data();
  return *this;
}

double Tensor::get(int64_t i) const {
  switch (dtype()) {
  case DType::F32: return as<float>()[i];
  case DType::F64: return as<double>()[i];
  case DType::F16: return refHalfToDouble(as<uint16_t>()[i]);
  case DType::BF16: return refBf16ToDouble(as<uint16_t>()[i]);
  case DType::Bool: return as<uint8_t>()[i];
  default: return static_cast<double>(getI(i));
  }
}

std::vector<double> Tensor::doubles() const {
  std::vector<double> result(static_cast<size_t>(size()));
  for (int64_t i = 0; i < size(); ++i)
    result[static_cast<size_t>(i)] = get(i);
  return result;
}

void Tensor::set(int64_t i, double v) {
  switch (dtype()) {
  case DType::F32: as<float>()[i] = static_cast<float>(v); break;
  case DType::F64: as<double>()[i] = v; break;
  case DType::F16: as<uint16_t>()[i] = refDoubleToHalf(v); break;
  case DType::BF16: as<uint16_t>()[i] = refDoubleToBf16(v); break;
  case DType::Bool: as<uint8_t>()[i] = v != 0; break;
  default: setI(i, static_cast<i128>(v)); break;
  }
}

i128 Tensor::getI(int64_t i) const {
  switch (dtype()) {
  case DType::I8: return as<int8_t>()[i];
  case DType::I16: return as<int16_t>()[i];
  case DType::I32: return as<int32_t>()[i];
  case DType::I64: return as<int64_t>()[i];
  case DType::U8: return as<uint8_t>()[i];
  case DType::U16: return as<uint16_t>()[i];
  case DType::U32: return as<uint32_t>()[i];
  case DType::U64: return as<uint64_t>()[i];
  case DType::Bool: return as<uint8_t>()[i];
  default: return static_cast<i128>(get(i));
  }
}

void Tensor::setI(int64_t i, i128 v) {
  const int bits = bitsOf(dtype());
  const i128 modulus = i128(1) << bits;
  i128 r = v % modulus;
  if (r < 0)
    r += modulus;
  if (isSignedType(dtype()) && r >= modulus / 2)
    r -= modulus;
  switch (dtype()) {
  case DType::I8: as<int8_t>()[i] = static_cast<int8_t>(r); break;
  case DType::I16: as<int16_t>()[i] = static_cast<int16_t>(r); break;
  case DType::I32: as<int32_t>()[i] = static_cast<int32_t>(r); break;
  case DType::I64: as<int64_t>()[i] = static_cast<int64_t>(r); break;
  case DType::U8: as<uint8_t>()[i] = static_cast<uint8_t>(r); break;
  case DType::U16: as<uint16_t>()[i] = static_cast<uint16_t>(r); break;
  case DType::U32: as<uint32_t>()[i] = static_cast<uint32_t>(r); break;
  case DType::U64: as<uint64_t>()[i] = static_cast<uint64_t>(r); break;
  default: set(i, static_cast<double>(v)); break;
  }
}

Tensor randomTensor(DType dtype, const Shape &shape, std::mt19937 &rng, double lo, double hi) {
  Tensor t(dtype, shape);
  std::uniform_real_distribution<double> dist(lo, hi);
  for (int64_t i = 0; i < t.size(); ++i) {
    if (dtype == DType::Bool)
      t.set(i, dist(rng) >= (lo + hi) / 2 ? 1 : 0);
    else if (isIntType(dtype))
      t.setI(i, static_cast<i128>(std::floor(dist(rng))));
    else
      t.set(i, dist(rng));
  }
  return t;
}

//===----------------------------------------------------------------------===//
// Running kernels
//===----------------------------------------------------------------------===//

cpu::Attrs makeAttrs(std::initializer_list<std::pair<std::string, cpu::AttrValue>> values) {
  cpu::Attrs attrs;
  for (const auto &[name, value] : values)
    attrs.set(name, value);
  return attrs;
}

namespace {
cpu::KernelStatus runOn(const std::string &op, const cpu::Attrs &attrs,
                        const std::vector<const Tensor *> &inputs,
                        const std::vector<cpu::TensorView *> &outputs) {
  cpu::Kernel kernel = cpu::findKernel(op);
  if (!kernel)
    return cpu::KernelStatus{"no kernel " + op};
  std::vector<const cpu::TensorView *> views;
  for (const Tensor *t : inputs)
    views.push_back(t ? &t->view() : nullptr);
  return kernel(attrs, views, outputs);
}
} // namespace

cpu::KernelStatus run(const std::string &op, const cpu::Attrs &attrs,
                      const std::vector<const Tensor *> &inputs, Tensor &output) {
  return runOn(op, attrs, inputs, {&output.view()});
}

cpu::KernelStatus run(const std::string &op, const cpu::Attrs &attrs,
                      const std::vector<const Tensor *> &inputs, Tensor &first, Tensor &second) {
  return runOn(op, attrs, inputs, {&first.view(), &second.view()});
}

} // namespace tessel::test
