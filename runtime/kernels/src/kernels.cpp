//===- kernels.cpp - the kernel table and the attribute store -------------===//
#include "tessel/cpu_kernels.h"
#include "registry.h"

#include <algorithm>

namespace tessel::cpu {

size_t dtypeSize(DType dtype) {
  switch (dtype) {
  case DType::F64: case DType::I64: case DType::U64: return 8;
  case DType::F32: case DType::I32: case DType::U32: return 4;
  case DType::F16: case DType::BF16: case DType::I16: case DType::U16: return 2;
  case DType::I8: case DType::U8: case DType::Bool: return 1;
  }
  return 0;
}

const char *dtypeName(DType dtype) {
  static const char *names[] = {"f32", "f16", "f64", "bf16", "i8",  "i16", "i32",
                                "i64", "u8",  "u16", "u32",  "u64", "bool"};
  auto index = static_cast<size_t>(dtype);
  return index < sizeof(names) / sizeof(names[0]) ? names[index] : "invalid";
}

int64_t TensorView::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

size_t TensorView::sizeBytes() const {
  return static_cast<size_t>(numElements()) * dtypeSize(dtype);
}

void Attrs::set(std::string name, AttrValue value) {
  values[std::move(name)] = std::move(value);
}

bool Attrs::has(const std::string &name) const { return values.count(name) != 0; }

template <typename T> static const T *lookup(const std::map<std::string, AttrValue> &values,
                                             const std::string &name) {
  auto it = values.find(name);
  return it == values.end() ? nullptr : std::get_if<T>(&it->second);
}

int64_t Attrs::getInt(const std::string &name, int64_t fallback) const {
  const int64_t *v = lookup<int64_t>(values, name);
  return v ? *v : fallback;
}

double Attrs::getFloat(const std::string &name, double fallback) const {
  const double *v = lookup<double>(values, name);
  return v ? *v : fallback;
}

const std::vector<int64_t> &Attrs::getInts(const std::string &name) const {
  static const std::vector<int64_t> empty;
  const auto *v = lookup<std::vector<int64_t>>(values, name);
  return v ? *v : empty;
}

const std::vector<double> &Attrs::getFloats(const std::string &name) const {
  static const std::vector<double> empty;
  const auto *v = lookup<std::vector<double>>(values, name);
  return v ? *v : empty;
}

const std::string &Attrs::getString(const std::string &name) const {
  static const std::string empty;
  const auto *v = lookup<std::string>(values, name);
  return v ? *v : empty;
}

static const KernelTable &table() {
  static const KernelTable kernels = [] {
    KernelTable t;
    addElementwiseKernels(t);
    addConvKernels(t);
    addGemmKernels(t);
    addNormalizationKernels(t);
    addPoolKernels(t);
    addReductionKernels(t);
    addMovementKernels(t);
    addGatherKernels(t);
    addAttentionKernels(t);
    addResizeKernels(t);
    addDetectionKernels(t);
    return t;
  }();
  return kernels;
}

Kernel findKernel(const std::string &op) {
  auto it = table().find(op);
  return it == table().end() ? nullptr : it->second;
}

std::vector<std::string> kernelNames() {
  std::vector<std::string> names;
  for (const auto &entry : table())
    names.push_back(entry.first);
  return names;
}

} // namespace tessel::cpu
