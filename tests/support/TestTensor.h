//===- TestTensor.h - a tensor the kernel tests own, and its values -*- C++ -*-===//
//
// The one tensor of the CPU kernels' tests: it owns its bytes and views them
// as a cpu::TensorView, so that a kernel runs on it directly, and reads and
// writes elements of every dtype as double (floats) or exactly (integers, in
// 128 bits). Its f16 and bf16 conversions are the tests' own references,
// computed in double arithmetic straight from the IEEE definitions and never
// through the kernels' code (tessel/half.h's halfToFloat and floatToHalf are
// what the tests check, so they cannot also make the expected values).
//
// Part of tessel_test_support (tests/support), with Reference.h.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TESTS_SUPPORT_TESTTENSOR_H
#define TESSEL_TESTS_SUPPORT_TESTTENSOR_H

#include "tessel/cpu_kernels.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace tessel::test {

using Shape = std::vector<int64_t>;
using i128 = __int128;

//===----------------------------------------------------------------------===//
// Shapes and dtypes
//===----------------------------------------------------------------------===//

int64_t numel(const Shape &shape);
// Row-major multi-index <-> linear offset.
Shape unravel(int64_t linear, const Shape &shape);
int64_t ravel(const Shape &index, const Shape &shape);
// "[2,3,4]".
std::string shapeStr(const Shape &shape);

bool isIntType(cpu::DType dtype); // i8 ... u64 (not bool)
bool isSignedType(cpu::DType dtype);
int bitsOf(cpu::DType dtype);

//===----------------------------------------------------------------------===//
// Reference conversions of the 16-bit floats (double arithmetic)
//===----------------------------------------------------------------------===//

double refHalfToDouble(uint16_t bits);
// Round to nearest even, by finding the quantum and rounding the quotient
// with nearbyint (ties to even); NaN keeps its sign, magnitudes from 65520
// become infinity.
uint16_t refDoubleToHalf(double value);
double refBf16ToDouble(uint16_t bits);
// Round to nearest even, as refDoubleToHalf; magnitudes from 2^128 (after
// rounding: from the tie below it) become infinity.
uint16_t refDoubleToBf16(double value);

//===----------------------------------------------------------------------===//
// The tensor
//===----------------------------------------------------------------------===//

class Tensor {
public:
  Tensor() = default;
  // Zero-filled. One spare byte keeps data() non-null when empty.
  Tensor(cpu::DType dtype, Shape shape);
  Tensor(const Tensor &other);
  Tensor(Tensor &&other) noexcept;
  Tensor &operator=(const Tensor &other);
  Tensor &operator=(Tensor &&other) noexcept;

  cpu::DType dtype() const { return view_.dtype; }
  const Shape &shape() const { return view_.shape; }
  int64_t size() const { return numel(view_.shape); }
  const cpu::TensorView &view() const { return view_; }
  cpu::TensorView &view() { return view_; }
  const std::vector<uint8_t> &bytes() const { return bytes_; }

  template <typename T> T *as() { return reinterpret_cast<T *>(bytes_.data()); }
  template <typename T> const T *as() const { return reinterpret_cast<const T *>(bytes_.data()); }
  // The elements as T (T of the dtype's size).
  template <typename T> std::vector<T> values() const {
    std::vector<T> v(static_cast<size_t>(size()));
    std::memcpy(v.data(), bytes_.data(), v.size() * sizeof(T));
    return v;
  }

  // Element i as a double: floats exactly (f16, bf16 by the references),
  // integers rounded to double, bool as its byte.
  double get(int64_t i) const;
  // Every element as get(i) reads it.
  std::vector<double> doubles() const;
  // Stores v rounded to the dtype: floats to nearest (f16, bf16 by the
  // references), integers truncated toward zero then wrapped (setI), bool as
  // v != 0.
  void set(int64_t i, double v);
  // Element i exactly (floats truncated toward zero).
  i128 getI(int64_t i) const;
  // Stores v modulo 2^bits (two's complement wrap), written out explicitly;
  // floats as set(i, v).
  void setI(int64_t i, i128 v);

private:
  std::vector<uint8_t> bytes_;
  cpu::TensorView view_{cpu::DType::F32, {}, nullptr};
};

// A tensor holding `values` (their bytes, as T).
template <typename T>
Tensor makeTensor(cpu::DType dtype, Shape shape, const std::vector<T> &values) {
  Tensor t(dtype, std::move(shape));
  EXPECT_EQ(values.size() * sizeof(T), t.view().sizeBytes());
  std::memcpy(t.as<uint8_t>(), values.data(), values.size() * sizeof(T));
  return t;
}

// Uniform random values in [lo, hi), stored (rounded) in the tensor's dtype:
// floats by set, integers floored, bool 1 in the upper half of the range.
Tensor randomTensor(cpu::DType dtype, const Shape &shape, std::mt19937 &rng, double lo = -1,
                    double hi = 1);

//===----------------------------------------------------------------------===//
// Running kernels
//===----------------------------------------------------------------------===//

cpu::Attrs makeAttrs(std::initializer_list<std::pair<std::string, cpu::AttrValue>> values);

// Runs the kernel of `op` (an error status if there is none); a nullptr
// input is an absent operand.
cpu::KernelStatus run(const std::string &op, const cpu::Attrs &attrs,
                      const std::vector<const Tensor *> &inputs, Tensor &output);
/// A kernel of two results (top_k).
cpu::KernelStatus run(const std::string &op, const cpu::Attrs &attrs,
                      const std::vector<const Tensor *> &inputs, Tensor &first, Tensor &second);

} // namespace tessel::test

// Runs a kernel (as run) and fails the test, with the kernel's message,
// unless it succeeds.
#define RUN_OK(...)                                                                    \
  do {                                                                                 \
    ::tessel::cpu::KernelStatus status_ = ::tessel::test::run(__VA_ARGS__);            \
    ASSERT_TRUE(status_.ok()) << status_.error;                                        \
  } while (0)

#endif // TESSEL_TESTS_SUPPORT_TESTTENSOR_H
