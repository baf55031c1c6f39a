//===- TensorFiles.h - tensors in ONNX TensorProto and .npy files -*- C++ -*-===//
//
// Reads and writes the two formats users bring test data in, with no protobuf
// dependency: a TensorProto is a handful of wire-format fields, and an .npy file
// is a text header plus raw data.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TOOLS_TENSORFILES_H
#define TESSEL_TOOLS_TENSORFILES_H

#include "tessel_runtime.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace tessel::tools {

struct HostTensor {
  std::string name;
  tessel_dtype_t dtype = TESSEL_DTYPE_F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data; // dense, row-major, little-endian

  int64_t numElements() const;
  std::string describe() const; // "f32[1,3,224,224]"
};

/// Reads a .pb (ONNX TensorProto) or .npy file, chosen by extension. Returns
/// false with `error` set on any problem.
bool readTensorFile(const std::string &path, HostTensor &tensor, std::string &error);
bool writeTensorFile(const std::string &path, const HostTensor &tensor, std::string &error);

/// Element i as double, for comparison and printing.
double elementAsDouble(const HostTensor &tensor, int64_t i);

std::string shapeText(tessel_dtype_t dtype, const std::vector<int64_t> &shape);

/// Random values in the tensor's dtype: uniform in [-1, 1) for floats, small
/// integers (0..9; 0 or 1 for bool) otherwise, so that random runs exercise
/// every code path without overflowing.
void fillRandom(HostTensor &tensor, std::mt19937_64 &rng);

} // namespace tessel::tools

#endif // TESSEL_TOOLS_TENSORFILES_H
