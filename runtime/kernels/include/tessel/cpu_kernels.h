//===- cpu_kernels.h - the CPU tier's kernels, one per graph op -*- C++ -*-===//
//
// One kernel per graph op, looked up by the op's name (the step's `op`). The
// runtime's executor calls them on engine steps, and the compiler's constant
// folder calls the very same kernels on compile-time constants: one
// implementation of each op's semantics in the whole project. This is the
// public header of the library tessel_cpu_kernels (runtime/kernels/), which
// both link; nothing else of the runtime is visible to the compiler.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_CPU_KERNELS_H
#define TESSEL_CPU_KERNELS_H

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace tessel::cpu {

// Values match the schema's DType and tessel_dtype_t.
enum class DType : int8_t {
  F32 = 0, F16, F64, BF16, I8, I16, I32, I64, U8, U16, U32, U64, Bool
};
size_t dtypeSize(DType dtype);
const char *dtypeName(DType dtype);

struct TensorView {
  DType dtype;
  std::vector<int64_t> shape;
  void *data; // dense, row-major, dtype elements
  int64_t numElements() const;
  size_t sizeBytes() const;
};

// An attribute as the engine stores it: Int (also bools), Float, Ints, Floats,
// String.
using AttrValue = std::variant<int64_t, double, std::vector<int64_t>,
                               std::vector<double>, std::string>;

class Attrs {
public:
  void set(std::string name, AttrValue value);
  bool has(const std::string &name) const;
  // Getters never throw: a missing or mistyped attribute yields the fallback
  // (or an empty value); the engine verifier and the dialect's verifiers are
  // what guarantee presence.
  int64_t getInt(const std::string &name, int64_t fallback = 0) const;
  double getFloat(const std::string &name, double fallback = 0) const;
  const std::vector<int64_t> &getInts(const std::string &name) const;
  const std::vector<double> &getFloats(const std::string &name) const;
  const std::string &getString(const std::string &name) const;
  const std::map<std::string, AttrValue> &all() const { return values; }

private:
  std::map<std::string, AttrValue> values;
};

// A kernel's outcome: empty message on success.
struct KernelStatus {
  std::string error;
  bool ok() const { return error.empty(); }
};

// inputs[i] is nullptr for an absent optional operand (a step input of -1);
// trailing optional operands may also be left out of the list (conv takes
// [input, weight, bias?, residual?] as 2 to 4 entries). Outputs are
// preallocated with their final shape and dtype. Kernels take scratch from
// per-thread buffers that grow on first use (scratch.h): called again with
// shapes no larger, a kernel allocates nothing.
using Kernel = KernelStatus (*)(const Attrs &attrs,
                                const std::vector<const TensorView *> &inputs,
                                const std::vector<TensorView *> &outputs);

// A float attribute that bounds elements of `dtype` (clip's min and max), as
// the kernels apply it: converted to the dtype (floats round to nearest, f16
// included; integers truncate toward zero and saturate, NaN becomes 0) and
// read back exactly, in `real` for a float dtype and in `integer` for an
// integer one. False for bool and the dtypes no kernel computes on.
struct Bound {
  double real = 0;
  int64_t integer = 0;
};
bool convertBound(DType dtype, double value, Bound &bound);

// The kernel for a graph op name ("conv", "add", ...), or nullptr.
Kernel findKernel(const std::string &op);
// Every op name the CPU tier implements, sorted.
std::vector<std::string> kernelNames();

} // namespace tessel::cpu

#endif // TESSEL_CPU_KERNELS_H
