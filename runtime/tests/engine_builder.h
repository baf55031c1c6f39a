//===- engine_builder.h - test-only .tsl files from a description -*- C++ -*-===//
//
// Builds small engine files for the runtime's tests without the compiler: a
// plain description (tensors, steps with their kernel variants and launches,
// kernel modules, IO, arena size, constants) goes through
// flatbuffers::FlatBufferBuilder, and assembleFile() lays out header, payload,
// padding and constants exactly as engine_format.h describes. The compiler
// has its own writer; this one exists so that runtime tests stay independent
// of it and can also build files the compiler never would (bad indices,
// out-of-bounds constants) to exercise the verifier.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TESTS_RUNTIME_ENGINE_BUILDER_H
#define TESSEL_TESTS_RUNTIME_ENGINE_BUILDER_H

#include "tessel/engine_format.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace tessel::test {

namespace fb = tessel::engine;

/// A tier by the name the runtime prints ("cpu", "simt", "tc-sm70", ...); a
/// name of no tier gives a value outside the enum, for damaged engines.
inline fb::Tier tierNamed(const std::string &name) {
  for (int t = static_cast<int>(fb::Tier::MIN); t <= static_cast<int>(fb::Tier::MAX); ++t)
    if (name == format::tierName(static_cast<fb::Tier>(t)))
      return static_cast<fb::Tier>(t);
  return static_cast<fb::Tier>(100);
}

inline size_t elementSize(fb::DType dtype) {
  switch (dtype) {
  case fb::DType::f64: case fb::DType::i64: case fb::DType::u64: return 8;
  case fb::DType::f32: case fb::DType::i32: case fb::DType::u32: return 4;
  case fb::DType::f16: case fb::DType::bf16: case fb::DType::i16: case fb::DType::u16: return 2;
  default: return 1;
  }
}

struct TensorSpec {
  std::string name;
  fb::DType dtype = fb::DType::f32;
  std::vector<int64_t> shape;
  fb::Storage storage = fb::Storage::Arena;
  uint64_t offset = 0;
  // Bytes; kAutoSize computes product(shape) * element size.
  static constexpr uint64_t kAutoSize = ~uint64_t(0);
  uint64_t size = kAutoSize;
  std::string layout;
};

struct AttrSpec {
  std::string name;
  fb::AttrKind kind = fb::AttrKind::Int;
  int64_t i = 0;
  double f = 0;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::string s;
};

inline AttrSpec intAttr(std::string name, int64_t value) {
  AttrSpec a;
  a.name = std::move(name);
  a.kind = fb::AttrKind::Int;
  a.i = value;
  return a;
}
inline AttrSpec floatAttr(std::string name, double value) {
  AttrSpec a;
  a.name = std::move(name);
  a.kind = fb::AttrKind::Float;
  a.f = value;
  return a;
}
inline AttrSpec intsAttr(std::string name, std::vector<int64_t> values) {
  AttrSpec a;
  a.name = std::move(name);
  a.kind = fb::AttrKind::Ints;
  a.ints = std::move(values);
  return a;
}
inline AttrSpec stringAttr(std::string name, std::string value) {
  AttrSpec a;
  a.name = std::move(name);
  a.kind = fb::AttrKind::String;
  a.s = std::move(value);
  return a;
}

/// A kernel parameter: a tensor's device address, a null pointer, bytes, or
/// the workspace, or the arrival counters.
struct KernelArgSpec {
  int32_t tensor = -1;
  std::vector<uint8_t> bytes;
  uint64_t workspaceBytes = 0;
  uint64_t counterBytes = 0;
  // A TMA tensor map of `tensor` where mapDims is not empty; im2col where
  // it has corners or element strides.
  std::vector<uint64_t> mapDims, mapStrides;
  std::vector<uint32_t> mapBox;
  std::vector<int32_t> mapLower, mapUpper;
  std::vector<uint32_t> mapElementStrides;
};
inline KernelArgSpec tensorArg(int32_t tensor) { return KernelArgSpec{tensor, {}, 0}; }
inline KernelArgSpec nullArg() { return KernelArgSpec{-1, {}, 0}; }
inline KernelArgSpec workspaceArg(uint64_t bytes) { return KernelArgSpec{-1, {}, bytes}; }
inline KernelArgSpec counterArg(uint64_t bytes) { return KernelArgSpec{-1, {}, 0, bytes}; }
inline KernelArgSpec tensorMapArg(int32_t tensor, std::vector<uint64_t> dims,
                                  std::vector<uint64_t> strides, std::vector<uint32_t> box) {
  return KernelArgSpec{tensor, {}, 0, 0, std::move(dims), std::move(strides), std::move(box)};
}
/// An im2col tensor map of `tensor`: {C, W, H, N}, their strides, a box of
/// {channels, pixels}, corners (W, H), element strides.
inline KernelArgSpec im2colMapArg(int32_t tensor, std::vector<uint64_t> dims,
                                  std::vector<uint64_t> strides, std::vector<uint32_t> box,
                                  std::vector<int32_t> lower, std::vector<int32_t> upper,
                                  std::vector<uint32_t> elementStrides) {
  KernelArgSpec arg = tensorMapArg(tensor, std::move(dims), std::move(strides), std::move(box));
  arg.mapLower = std::move(lower);
  arg.mapUpper = std::move(upper);
  arg.mapElementStrides = std::move(elementStrides);
  return arg;
}
template <typename T> KernelArgSpec valueArg(const T &value) {
  KernelArgSpec arg;
  arg.bytes.resize(sizeof(T));
  std::memcpy(arg.bytes.data(), &value, sizeof(T));
  return arg;
}

struct LaunchSpec {
  int32_t module = 0;
  std::string kernel;
  std::vector<uint32_t> grid = {1, 1, 1}, block = {1, 1, 1};
  uint32_t sharedBytes = 0;
  std::vector<KernelArgSpec> args;
};

/// A kernel variant with everything the schema holds (StepSpec::tiers makes
/// the plain ones: no launches, min_compute_capability 0, alignment 64).
struct VariantSpec {
  std::string tier;
  std::string kernel;
  int minComputeCapability = 0;
  int alignment = 16;
  std::vector<LaunchSpec> launches;
};

struct ImageSpec {
  fb::ImageFormat format = fb::ImageFormat::PTX;
  int arch = 0;
  std::vector<uint8_t> data;
};
/// A PTX image of `text`, NUL-terminated as the schema wants.
inline ImageSpec ptxImage(int arch, const std::string &text) {
  ImageSpec image{fb::ImageFormat::PTX, arch, std::vector<uint8_t>(text.begin(), text.end())};
  image.data.push_back(0);
  return image;
}
inline ImageSpec cubinImage(int arch, std::vector<uint8_t> data = {0x7f, 'E', 'L', 'F'}) {
  return ImageSpec{fb::ImageFormat::Cubin, arch, std::move(data)};
}

struct ModuleSpec {
  std::string name;
  std::vector<ImageSpec> images;
};

struct StepSpec {
  std::string op;
  std::string location;
  std::vector<int32_t> inputs, outputs;
  std::vector<AttrSpec> attrs;
  std::vector<std::string> tiers = {"cpu"};
  std::vector<VariantSpec> variants = {}; // after the plain `tiers` ones
};

struct EngineSpec {
  uint32_t formatVersion = format::kFormatVersion;
  std::string producer = "engine_builder (test)";
  std::vector<std::pair<std::string, std::string>> options = {{"precision", "f32"}};
  std::vector<TensorSpec> tensors;
  std::vector<int32_t> inputs, outputs;
  std::vector<StepSpec> steps;
  uint64_t arenaSize = 0;
  std::vector<uint8_t> constants;
  // Normally the constants blob size; a test may make them disagree.
  static constexpr uint64_t kAutoSize = ~uint64_t(0);
  uint64_t constantsSize = kAutoSize;
  std::vector<std::string> tiers = {"cpu"};
  std::vector<ModuleSpec> modules;
  std::vector<std::string> targets;
};

/// Recomputes the header checksum after a test edits the bytes on purpose.
inline void reseal(std::vector<uint8_t> &file) { format::sealChecksum(file); }

using format::assembleFile;

inline std::vector<uint8_t> buildEngine(const EngineSpec &spec) {
  flatbuffers::FlatBufferBuilder builder(1024);
  std::vector<flatbuffers::Offset<fb::Tensor>> tensors;
  for (const TensorSpec &t : spec.tensors) {
    uint64_t size = t.size;
    if (size == TensorSpec::kAutoSize) {
      size = elementSize(t.dtype);
      for (int64_t d : t.shape)
        size *= static_cast<uint64_t>(d);
    }
    tensors.push_back(fb::CreateTensorDirect(builder, t.name.c_str(), t.dtype, &t.shape,
                                             t.layout.c_str(), t.storage, t.offset, size));
  }
  std::vector<flatbuffers::Offset<fb::Step>> steps;
  for (const StepSpec &s : spec.steps) {
    std::vector<flatbuffers::Offset<fb::Attr>> attrs;
    for (const AttrSpec &a : s.attrs)
      attrs.push_back(fb::CreateAttrDirect(builder, a.name.c_str(), a.kind, a.i, a.f, &a.ints,
                                           &a.floats, a.s.c_str()));
    auto sortedAttrs = builder.CreateVectorOfSortedTables(&attrs);
    std::vector<flatbuffers::Offset<fb::KernelVariant>> variants;
    for (const std::string &tier : s.tiers)
      variants.push_back(fb::CreateKernelVariantDirect(builder, tierNamed(tier), s.op.c_str(),
                                                       0, 64));
    for (const VariantSpec &v : s.variants) {
      std::vector<flatbuffers::Offset<fb::Launch>> launches;
      for (const LaunchSpec &l : v.launches) {
        std::vector<flatbuffers::Offset<fb::KernelArg>> args;
        for (const KernelArgSpec &a : l.args) {
          flatbuffers::Offset<fb::TensorMap> map;
          if (!a.mapDims.empty())
            map = fb::CreateTensorMapDirect(
                builder, &a.mapDims, &a.mapStrides, &a.mapBox,
                a.mapLower.empty() ? nullptr : &a.mapLower,
                a.mapUpper.empty() ? nullptr : &a.mapUpper,
                a.mapElementStrides.empty() ? nullptr : &a.mapElementStrides);
          args.push_back(fb::CreateKernelArgDirect(builder, a.tensor,
                                                   a.bytes.empty() ? nullptr : &a.bytes,
                                                   a.workspaceBytes, a.counterBytes, map));
        }
        launches.push_back(fb::CreateLaunchDirect(builder, l.module, l.kernel.c_str(), &l.grid,
                                                  &l.block, l.sharedBytes, &args));
      }
      variants.push_back(fb::CreateKernelVariantDirect(builder, tierNamed(v.tier),
                                                       v.kernel.c_str(),
                                                       v.minComputeCapability, v.alignment,
                                                       &launches));
    }
    steps.push_back(fb::CreateStep(builder, s.op.empty() ? 0 : builder.CreateString(s.op),
                                   builder.CreateString(s.location),
                                   builder.CreateVector(s.inputs),
                                   builder.CreateVector(s.outputs), sortedAttrs,
                                   builder.CreateVector(variants)));
  }
  std::vector<flatbuffers::Offset<fb::Option>> options;
  for (const auto &[key, value] : spec.options)
    options.push_back(fb::CreateOptionDirect(builder, key.c_str(), value.c_str()));
  std::vector<fb::Tier> tiers;
  for (const std::string &tier : spec.tiers)
    tiers.push_back(tierNamed(tier));
  std::vector<flatbuffers::Offset<fb::KernelModule>> modules;
  for (const ModuleSpec &m : spec.modules) {
    std::vector<flatbuffers::Offset<fb::KernelImage>> images;
    for (const ImageSpec &i : m.images)
      images.push_back(fb::CreateKernelImageDirect(builder, i.format, i.arch, &i.data));
    modules.push_back(fb::CreateKernelModuleDirect(builder, m.name.c_str(), &images));
  }
  std::vector<flatbuffers::Offset<flatbuffers::String>> targets;
  for (const std::string &target : spec.targets)
    targets.push_back(builder.CreateString(target));
  uint64_t constantsSize =
      spec.constantsSize == EngineSpec::kAutoSize ? spec.constants.size() : spec.constantsSize;
  auto engine = fb::CreateEngineDirect(builder, spec.formatVersion, spec.producer.c_str(),
                                       &options, &tensors, &spec.inputs, &spec.outputs, &steps,
                                       spec.arenaSize, spec.arenaSize, constantsSize, &tiers,
                                       &modules, &targets);
  fb::FinishEngineBuffer(builder, engine);
  return assembleFile(builder.GetBufferPointer(), builder.GetSize(), spec.constants);
}

/// Appends `values` to a constants blob at the next 256-byte boundary and
/// returns their offset, as the compiler packs constants.
template <typename T>
uint64_t addConstant(std::vector<uint8_t> &blob, const std::vector<T> &values) {
  blob.resize(format::alignUp(blob.size(), format::kConstantAlignment));
  uint64_t offset = blob.size();
  blob.resize(offset + values.size() * sizeof(T));
  std::memcpy(blob.data() + offset, values.data(), values.size() * sizeof(T));
  return offset;
}

/// The engine most tests use; only movement kernels, one constant:
///   x f32[2,3] -transpose-> t f32[3,2] -reshape-> r f32[6]
///   concat(r, c f32[4] constant) -> y f32[10]
inline EngineSpec sampleSpec() {
  EngineSpec spec;
  std::vector<float> c = {10, 20, 30, 40};
  uint64_t cOffset = addConstant(spec.constants, c);
  spec.tensors = {
      {"x", fb::DType::f32, {2, 3}, fb::Storage::Input, 0, TensorSpec::kAutoSize, ""},
      {"t", fb::DType::f32, {3, 2}, fb::Storage::Arena, 0, TensorSpec::kAutoSize, ""},
      {"r", fb::DType::f32, {6}, fb::Storage::Arena, 256, TensorSpec::kAutoSize, ""},
      {"c", fb::DType::f32, {4}, fb::Storage::Constant, cOffset, TensorSpec::kAutoSize, ""},
      {"y", fb::DType::f32, {10}, fb::Storage::Output, 0, TensorSpec::kAutoSize, ""},
  };
  spec.inputs = {0};
  spec.outputs = {4};
  spec.steps = {
      {"transpose", "t(Transpose)", {0}, {1}, {intsAttr("perm", {1, 0})}},
      {"reshape", "r(Reshape)", {1}, {2}, {}},
      {"concat", "y(Concat)", {2, 3}, {4}, {intAttr("axis", 0)}},
  };
  spec.arenaSize = 512;
  return spec;
}

/// What sampleSpec() computes.
inline std::vector<float> sampleExpected(const std::vector<float> &x) {
  return {x[0], x[3], x[1], x[4], x[2], x[5], 10, 20, 30, 40};
}

} // namespace tessel::test

#endif // TESSEL_TESTS_RUNTIME_ENGINE_BUILDER_H
