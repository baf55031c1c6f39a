//===- TensorFiles.cpp - ONNX TensorProto and .npy reading and writing ----===//
#include "TensorFiles.h"

#include "tessel/half.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

namespace tessel::tools {
namespace {

// ONNX TensorProto.DataType values and the runtime's dtypes.
const std::map<int, tessel_dtype_t> &onnxToDType() {
  static const std::map<int, tessel_dtype_t> map = {
      {1, TESSEL_DTYPE_F32},  {2, TESSEL_DTYPE_U8},   {3, TESSEL_DTYPE_I8},
      {4, TESSEL_DTYPE_U16},  {5, TESSEL_DTYPE_I16},  {6, TESSEL_DTYPE_I32},
      {7, TESSEL_DTYPE_I64},  {9, TESSEL_DTYPE_BOOL}, {10, TESSEL_DTYPE_F16},
      {11, TESSEL_DTYPE_F64}, {12, TESSEL_DTYPE_U32}, {13, TESSEL_DTYPE_U64},
      {16, TESSEL_DTYPE_BF16}};
  return map;
}

const std::map<std::string, tessel_dtype_t> &npyToDType() {
  static const std::map<std::string, tessel_dtype_t> map = {
      {"<f4", TESSEL_DTYPE_F32}, {"<f2", TESSEL_DTYPE_F16}, {"<f8", TESSEL_DTYPE_F64},
      {"|i1", TESSEL_DTYPE_I8},  {"<i2", TESSEL_DTYPE_I16}, {"<i4", TESSEL_DTYPE_I32},
      {"<i8", TESSEL_DTYPE_I64}, {"|u1", TESSEL_DTYPE_U8},  {"<u2", TESSEL_DTYPE_U16},
      {"<u4", TESSEL_DTYPE_U32}, {"<u8", TESSEL_DTYPE_U64}, {"|b1", TESSEL_DTYPE_BOOL}};
  return map;
}

bool readFile(const std::string &path, std::vector<uint8_t> &bytes, std::string &error) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    error = "cannot open '" + path + "'";
    return false;
  }
  bytes.assign(std::istreambuf_iterator<char>(file), {});
  return true;
}

// Protobuf wire format: just enough to read a TensorProto.
struct Wire {
  const uint8_t *p, *end;
  bool ok = true;

  uint64_t varint() {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p >= end) {
        ok = false;
        return 0;
      }
      uint8_t byte = *p++;
      value |= uint64_t(byte & 0x7f) << shift;
      if (!(byte & 0x80))
        return value;
    }
    ok = false;
    return 0;
  }
  bool bytes(const uint8_t *&data, size_t &size) {
    uint64_t length = varint();
    if (!ok || length > uint64_t(end - p))
      return ok = false;
    data = p;
    size = length;
    p += length;
    return true;
  }
  bool skip(int wireType) {
    const uint8_t *data;
    size_t size;
    switch (wireType) {
    case 0: varint(); return ok;
    case 1: if (end - p < 8) return ok = false; p += 8; return true;
    case 2: return bytes(data, size);
    case 5: if (end - p < 4) return ok = false; p += 4; return true;
    default: return ok = false;
    }
  }
};

template <typename T> void appendValue(std::vector<uint8_t> &out, T value) {
  const uint8_t *b = reinterpret_cast<const uint8_t *>(&value);
  out.insert(out.end(), b, b + sizeof(T));
}

// Converts the typed repeated fields (int32_data holds every narrow type,
// float16 as its bits) into the dtype's storage.
void appendNarrow(std::vector<uint8_t> &out, tessel_dtype_t dtype, uint64_t value) {
  switch (tessel_dtype_size(dtype)) {
  case 1: appendValue<uint8_t>(out, uint8_t(value)); break;
  case 2: appendValue<uint16_t>(out, uint16_t(value)); break;
  case 4: appendValue<uint32_t>(out, uint32_t(value)); break;
  default: appendValue<uint64_t>(out, value); break;
  }
}

bool readTensorProto(const std::vector<uint8_t> &file, HostTensor &t, std::string &error) {
  Wire w{file.data(), file.data() + file.size()};
  int onnxType = 0;
  std::vector<uint8_t> raw, typed;
  bool haveRaw = false;
  std::vector<uint64_t> pendingInts; // int32/int64/uint64 data before the type is known
  std::vector<uint8_t> floats, doubles;
  while (w.ok && w.p < w.end) {
    uint64_t key = w.varint();
    int field = int(key >> 3), wireType = int(key & 7);
    const uint8_t *data;
    size_t size;
    if (field == 1 || field == 5 || field == 7 || field == 11) {
      // dims / int32_data / int64_data / uint64_data: packed or not.
      auto take = [&](uint64_t v) {
        if (field == 1)
          t.shape.push_back(int64_t(v));
        else
          pendingInts.push_back(v);
      };
      if (wireType == 2) {
        if (!w.bytes(data, size))
          break;
        Wire inner{data, data + size};
        while (inner.ok && inner.p < inner.end)
          take(inner.varint());
        if (!inner.ok)
          w.ok = false;
      } else if (wireType == 0) {
        take(w.varint());
      } else {
        w.ok = false;
      }
    } else if (field == 2 && wireType == 0) {
      onnxType = int(w.varint());
    } else if ((field == 4 || field == 10) && wireType == 2) {
      if (!w.bytes(data, size))
        break;
      (field == 4 ? floats : doubles).insert((field == 4 ? floats : doubles).end(), data, data + size);
    } else if (field == 4 && wireType == 5) {
      floats.insert(floats.end(), w.p, w.p + 4), w.p += 4;
    } else if (field == 10 && wireType == 1) {
      doubles.insert(doubles.end(), w.p, w.p + 8), w.p += 8;
    } else if (field == 8 && wireType == 2) {
      if (!w.bytes(data, size))
        break;
      t.name.assign(reinterpret_cast<const char *>(data), size);
    } else if (field == 9 && wireType == 2) {
      if (!w.bytes(data, size))
        break;
      raw.assign(data, data + size);
      haveRaw = true;
    } else if (field == 6 || field == 13 || field == 14) {
      error = "string and external-data tensors are not supported";
      return false;
    } else if (!w.skip(wireType)) {
      break;
    }
  }
  if (!w.ok) {
    error = "malformed TensorProto";
    return false;
  }
  auto it = onnxToDType().find(onnxType);
  if (it == onnxToDType().end()) {
    error = "unsupported TensorProto data_type " + std::to_string(onnxType);
    return false;
  }
  t.dtype = it->second;
  for (int64_t d : t.shape)
    if (d < 0) {
      error = "negative dimension";
      return false;
    }
  if (haveRaw) {
    t.data = std::move(raw);
  } else if (t.dtype == TESSEL_DTYPE_F32) {
    t.data = std::move(floats);
  } else if (t.dtype == TESSEL_DTYPE_F64) {
    t.data = std::move(doubles);
  } else {
    for (uint64_t v : pendingInts)
      appendNarrow(t.data, t.dtype, v);
  }
  size_t expected = size_t(t.numElements()) * tessel_dtype_size(t.dtype);
  if (t.data.size() != expected) {
    error = "TensorProto holds " + std::to_string(t.data.size()) + " bytes, its shape " +
            t.describe() + " needs " + std::to_string(expected);
    return false;
  }
  return true;
}

bool readNpy(const std::vector<uint8_t> &file, HostTensor &t, std::string &error) {
  if (file.size() < 10 || std::memcmp(file.data(), "\x93NUMPY", 6) != 0) {
    error = "not an .npy file";
    return false;
  }
  int major = file[6];
  size_t headerLength, start;
  if (major == 1) {
    headerLength = file[8] | (size_t(file[9]) << 8);
    start = 10;
  } else {
    if (file.size() < 12) {
      error = "truncated .npy header";
      return false;
    }
    headerLength = file[8] | (size_t(file[9]) << 8) | (size_t(file[10]) << 16) |
                   (size_t(file[11]) << 24);
    start = 12;
  }
  if (start + headerLength > file.size()) {
    error = "truncated .npy header";
    return false;
  }
  std::string header(reinterpret_cast<const char *>(file.data() + start), headerLength);
  auto field = [&](const std::string &key) -> std::string {
    size_t k = header.find("'" + key + "'");
    if (k == std::string::npos)
      return "";
    size_t colon = header.find(':', k);
    return colon == std::string::npos ? "" : header.substr(colon + 1);
  };
  std::string descr = field("descr");
  size_t q1 = descr.find('\''), q2 = descr.find('\'', q1 + 1);
  std::string type = q1 == std::string::npos ? "" : descr.substr(q1 + 1, q2 - q1 - 1);
  if (type == "<b1")
    type = "|b1";
  auto it = npyToDType().find(type == "<u1" ? "|u1" : type == "<i1" ? "|i1" : type);
  if (it == npyToDType().end()) {
    error = "unsupported .npy dtype '" + type + "'";
    return false;
  }
  if (field("fortran_order").find("True") < field("fortran_order").find(',')) {
    error = "Fortran-ordered .npy files are not supported";
    return false;
  }
  std::string shape = field("shape");
  size_t open = shape.find('('), close = shape.find(')');
  if (open == std::string::npos || close == std::string::npos) {
    error = "malformed .npy shape";
    return false;
  }
  std::stringstream dims(shape.substr(open + 1, close - open - 1));
  std::string dim;
  while (std::getline(dims, dim, ','))
    if (dim.find_first_of("0123456789") != std::string::npos)
      t.shape.push_back(std::stoll(dim));
  t.dtype = it->second;
  size_t bytes = size_t(t.numElements()) * tessel_dtype_size(t.dtype);
  if (start + headerLength + bytes != file.size()) {
    error = ".npy data size does not match its header";
    return false;
  }
  t.data.assign(file.begin() + start + headerLength, file.end());
  return true;
}

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

void putVarint(std::vector<uint8_t> &out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(uint8_t(v | 0x80));
    v >>= 7;
  }
  out.push_back(uint8_t(v));
}

} // namespace

int64_t HostTensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string shapeText(tessel_dtype_t dtype, const std::vector<int64_t> &shape) {
  std::string text = std::string(tessel_dtype_name(dtype)) + "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? "," : "") + std::to_string(shape[i]);
  return text + "]";
}

std::string HostTensor::describe() const { return shapeText(dtype, shape); }

bool readTensorFile(const std::string &path, HostTensor &tensor, std::string &error) {
  std::vector<uint8_t> bytes;
  if (!readFile(path, bytes, error))
    return false;
  tensor = HostTensor{};
  bool ok = endsWith(path, ".npy") ? readNpy(bytes, tensor, error)
                                   : readTensorProto(bytes, tensor, error);
  if (!ok)
    error = path + ": " + error;
  return ok;
}

bool writeTensorFile(const std::string &path, const HostTensor &t, std::string &error) {
  std::vector<uint8_t> out;
  if (endsWith(path, ".npy")) {
    std::string descr;
    for (const auto &[name, dtype] : npyToDType())
      if (dtype == t.dtype)
        descr = name;
    if (descr.empty()) {
      error = std::string("no .npy dtype for ") + tessel_dtype_name(t.dtype);
      return false;
    }
    std::string shape = "(";
    for (int64_t d : t.shape)
      shape += std::to_string(d) + ",";
    if (t.shape.size() > 1)
      shape.pop_back();
    shape += ")";
    std::string header =
        "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
    while ((10 + header.size() + 1) % 64 != 0)
      header += ' ';
    header += '\n';
    out.insert(out.end(), {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0});
    out.push_back(uint8_t(header.size() & 0xff));
    out.push_back(uint8_t(header.size() >> 8));
    out.insert(out.end(), header.begin(), header.end());
  } else {
    int onnxType = 0;
    for (const auto &[type, dtype] : onnxToDType())
      if (dtype == t.dtype)
        onnxType = type;
    for (int64_t d : t.shape) {
      putVarint(out, (1 << 3) | 0);
      putVarint(out, uint64_t(d));
    }
    putVarint(out, (2 << 3) | 0);
    putVarint(out, uint64_t(onnxType));
    if (!t.name.empty()) {
      putVarint(out, (8 << 3) | 2);
      putVarint(out, t.name.size());
      out.insert(out.end(), t.name.begin(), t.name.end());
    }
    putVarint(out, (9 << 3) | 2);
    putVarint(out, t.data.size());
  }
  out.insert(out.end(), t.data.begin(), t.data.end());
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(reinterpret_cast<const char *>(out.data()), out.size());
  if (!file) {
    error = "cannot write '" + path + "'";
    return false;
  }
  return true;
}

double elementAsDouble(const HostTensor &t, int64_t i) {
  const uint8_t *p = t.data.data() + size_t(i) * tessel_dtype_size(t.dtype);
  auto load = [p](auto zero) {
    decltype(zero) v;
    std::memcpy(&v, p, sizeof(v));
    return double(v);
  };
  switch (t.dtype) {
  case TESSEL_DTYPE_F32: return load(float{});
  case TESSEL_DTYPE_F64: return load(double{});
  case TESSEL_DTYPE_F16: { uint16_t h; std::memcpy(&h, p, 2); return cpu::halfToFloat(h); }
  case TESSEL_DTYPE_BF16: { uint16_t h; std::memcpy(&h, p, 2); uint32_t b = uint32_t(h) << 16; float f; std::memcpy(&f, &b, 4); return f; }
  case TESSEL_DTYPE_I8: return load(int8_t{});
  case TESSEL_DTYPE_I16: return load(int16_t{});
  case TESSEL_DTYPE_I32: return load(int32_t{});
  case TESSEL_DTYPE_I64: return load(int64_t{});
  case TESSEL_DTYPE_U8: return load(uint8_t{});
  case TESSEL_DTYPE_U16: return load(uint16_t{});
  case TESSEL_DTYPE_U32: return load(uint32_t{});
  case TESSEL_DTYPE_U64: return load(uint64_t{});
  case TESSEL_DTYPE_BOOL: return load(uint8_t{}) ? 1.0 : 0.0;
  }
  return NAN;
}

void fillRandom(HostTensor &t, std::mt19937_64 &rng) {
  std::uniform_real_distribution<float> real(-1.0f, 1.0f);
  std::uniform_int_distribution<int> small(0, 9);
  size_t n = size_t(t.numElements()), width = tessel_dtype_size(t.dtype);
  for (size_t i = 0; i < n; ++i) {
    uint8_t *p = t.data.data() + i * width;
    switch (t.dtype) {
    case TESSEL_DTYPE_F32: { float v = real(rng); std::memcpy(p, &v, 4); break; }
    case TESSEL_DTYPE_F16: {
      uint16_t v = tessel::cpu::floatToHalf(real(rng));
      std::memcpy(p, &v, 2);
      break;
    }
    case TESSEL_DTYPE_F64: { double v = real(rng); std::memcpy(p, &v, 8); break; }
    case TESSEL_DTYPE_BOOL: *p = small(rng) & 1; break;
    default: {
      uint64_t v = uint64_t(small(rng));
      std::memcpy(p, &v, width); // little-endian: the low bytes
    }
    }
  }
}

} // namespace tessel::tools
