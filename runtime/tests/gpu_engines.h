//===- gpu_engines.h - test engines with GPU kernel variants ---*- C++ -*-===//
//
// Small engines whose steps carry a "simt" variant that launches hand-written
// PTX (ISA 7.0, target sm_60: the driver compiles it for any GPU from Pascal
// on) beside their cpu variant, for the variant choice tests (no GPU needed)
// and the GPU execution tests. The kernels are exact (f32 add, copies), so a
// GPU run must match the cpu tier bit for bit.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TESTS_RUNTIME_GPU_ENGINES_H
#define TESSEL_TESTS_RUNTIME_GPU_ENGINES_H

#include "engine_builder.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tessel::test {

// tessel_test_add(a, b, out, n): out[i] = a[i] + b[i] for i < n.
// tessel_test_copy_shared(in, out, n, shared_bytes): out[i] = in[i], staged
// through the last 4 * blockDim.x bytes of `shared_bytes` of dynamic shared
// memory, so it needs every byte it is launched with.
inline const char kTestKernelsPtx[] = R"(.version 7.0
.target sm_60
.address_size 64

.visible .entry tessel_test_add(
  .param .u64 a,
  .param .u64 b,
  .param .u64 out,
  .param .u32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .f32 %f<4>;
  .reg .b64 %rd<11>;
  ld.param.u64 %rd1, [a];
  ld.param.u64 %rd2, [b];
  ld.param.u64 %rd3, [out];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.u32 %p1, %r5, %r1;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd4, %rd1;
  cvta.to.global.u64 %rd5, %rd2;
  cvta.to.global.u64 %rd6, %rd3;
  mul.wide.u32 %rd7, %r5, 4;
  add.s64 %rd8, %rd4, %rd7;
  add.s64 %rd9, %rd5, %rd7;
  add.s64 %rd10, %rd6, %rd7;
  ld.global.f32 %f1, [%rd8];
  ld.global.f32 %f2, [%rd9];
  add.f32 %f3, %f1, %f2;
  st.global.f32 [%rd10], %f3;
DONE:
  ret;
}

.extern .shared .align 4 .b8 tessel_test_smem[];

// out[i] = in[i], through dynamic shared memory at the block's far end: a
// launch with less shared memory than asked faults or fails to launch.
.visible .entry tessel_test_copy_shared(
  .param .u64 in,
  .param .u64 out,
  .param .u32 n,
  .param .u32 shared_bytes)
{
  .reg .pred %p<2>;
  .reg .b32 %r<10>;
  .reg .f32 %f<2>;
  .reg .b64 %rd<9>;
  ld.param.u64 %rd1, [in];
  ld.param.u64 %rd2, [out];
  ld.param.u32 %r1, [n];
  ld.param.u32 %r6, [shared_bytes];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.u32 %p1, %r5, %r1;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd3, %rd1;
  cvta.to.global.u64 %rd4, %rd2;
  mul.wide.u32 %rd5, %r5, 4;
  add.s64 %rd6, %rd3, %rd5;
  add.s64 %rd7, %rd4, %rd5;
  ld.global.f32 %f1, [%rd6];
  // slot = shared_bytes - 4 * (ntid - tid)
  sub.u32 %r7, %r3, %r4;
  shl.b32 %r8, %r7, 2;
  sub.u32 %r9, %r6, %r8;
  mov.u32 %r0, tessel_test_smem;
  add.u32 %r9, %r9, %r0;
  st.shared.f32 [%r9], %f1;
  bar.sync 0;
  ld.shared.f32 %f1, [%r9];
  st.global.f32 [%rd7], %f1;
DONE:
  ret;
}
)";

constexpr uint32_t kTestBlock = 128;

/// The module every engine below uses: the PTX above for sm_60.
inline ModuleSpec testModule() {
  return ModuleSpec{"test_kernels", {ptxImage(60, kTestKernelsPtx)}};
}

/// A simt variant of an f32 add of `n` elements: tensors a + b -> out.
inline VariantSpec simtAdd(int32_t a, int32_t b, int32_t out, uint32_t n) {
  LaunchSpec launch;
  launch.kernel = "tessel_test_add";
  launch.grid = {(n + kTestBlock - 1) / kTestBlock, 1, 1};
  launch.block = {kTestBlock, 1, 1};
  launch.args = {tensorArg(a), tensorArg(b), tensorArg(out), valueArg<uint32_t>(n)};
  return VariantSpec{"simt", "tessel_test_add", 60, 16, {launch}};
}

/// x f32[n] (input) + c f32[n] (constant, c[i] = 0.25 * i - 3) -> y (output),
/// one step with cpu and simt variants.
inline EngineSpec gpuAddSpec(uint32_t n) {
  EngineSpec spec;
  std::vector<float> c(n);
  for (uint32_t i = 0; i < n; ++i)
    c[i] = 0.25f * float(i) - 3.0f;
  uint64_t cOffset = addConstant(spec.constants, c);
  int64_t extent = n;
  spec.tensors = {
      {"x", fb::DType::f32, {extent}, fb::Storage::Input, 0, TensorSpec::kAutoSize, ""},
      {"c", fb::DType::f32, {extent}, fb::Storage::Constant, cOffset, TensorSpec::kAutoSize, ""},
      {"y", fb::DType::f32, {extent}, fb::Storage::Output, 0, TensorSpec::kAutoSize, ""},
  };
  spec.inputs = {0};
  spec.outputs = {2};
  StepSpec add{"add", "y(Add)", {0, 1}, {2}, {}};
  add.variants = {simtAdd(0, 1, 2, n)};
  spec.steps = {add};
  spec.tiers = {"simt", "cpu"};
  spec.modules = {testModule()};
  spec.targets = {"sm_60"};
  return spec;
}

/// Step 0 (simt): t = x + c; step 1 (cpu only): u = neg(t), in place (u has
/// t's arena offset); step 2 (simt): y = u + x. So y = -(x + c) + x.
inline EngineSpec gpuMixedSpec(uint32_t n) {
  EngineSpec spec = gpuAddSpec(n);
  int64_t extent = n;
  spec.tensors.push_back({"t", fb::DType::f32, {extent}, fb::Storage::Arena, 0,
                          TensorSpec::kAutoSize, ""}); // 3
  spec.tensors.push_back({"u", fb::DType::f32, {extent}, fb::Storage::Arena, 0,
                          TensorSpec::kAutoSize, ""}); // 4
  StepSpec first{"add", "t(Add)", {0, 1}, {3}, {}};
  first.variants = {simtAdd(0, 1, 3, n)};
  StepSpec second{"neg", "u(Neg)", {3}, {4}, {}};
  StepSpec third{"add", "y(Add)", {4, 0}, {2}, {}};
  third.variants = {simtAdd(4, 0, 2, n)};
  spec.steps = {first, second, third};
  spec.arenaSize = format::alignUp(n * sizeof(float), format::kConstantAlignment);
  return spec;
}

/// Every step on the GPU: t = x + c; u = t + t (at another offset); y = u + x.
/// So y = 2 * (x + c) + x.
inline EngineSpec gpuChainSpec(uint32_t n) {
  EngineSpec spec = gpuMixedSpec(n);
  spec.tensors[4].offset = spec.arenaSize; // u beside t
  spec.arenaSize *= 2;
  spec.steps[1] = StepSpec{"add", "u(Add)", {3, 3}, {4}, {}};
  spec.steps[1].variants = {simtAdd(3, 3, 4, n)};
  return spec;
}

/// A simt variant of out = a + b through the context's workspace, as split-K
/// uses it: the add writes the workspace, a second launch copies it to out;
/// the variant asks for `workspaceBytes` (at least 4 * n).
inline VariantSpec simtAddViaWorkspace(int32_t a, int32_t b, int32_t out, uint32_t n,
                                       uint64_t workspaceBytes) {
  VariantSpec variant = simtAdd(a, b, out, n);
  variant.launches[0].args[2] = workspaceArg(workspaceBytes);
  LaunchSpec copy;
  copy.kernel = "tessel_test_copy_shared";
  copy.grid = variant.launches[0].grid;
  copy.block = {kTestBlock, 1, 1};
  copy.sharedBytes = 4 * kTestBlock;
  copy.args = {workspaceArg(workspaceBytes), tensorArg(out), valueArg<uint32_t>(n),
               valueArg<uint32_t>(4 * kTestBlock)};
  variant.launches.push_back(copy);
  return variant;
}

/// gpuChainSpec with every step through the workspace, the middle one asking
/// for more than the others (the context's workspace is the largest ask).
inline EngineSpec gpuWorkspaceSpec(uint32_t n) {
  EngineSpec spec = gpuChainSpec(n);
  spec.steps[0].variants = {simtAddViaWorkspace(0, 1, 3, n, 4 * uint64_t(n))};
  spec.steps[1].variants = {simtAddViaWorkspace(3, 3, 4, n, 4 * uint64_t(n) + 4096)};
  spec.steps[2].variants = {simtAddViaWorkspace(4, 0, 2, n, 4 * uint64_t(n))};
  return spec;
}

/// x f32[n] -> y = x through `sharedBytes` of dynamic shared memory per
/// block (tessel_test_copy_shared; needs sm_70 for more than 48 KiB).
inline EngineSpec gpuSharedCopySpec(uint32_t n, uint32_t sharedBytes) {
  EngineSpec spec = gpuAddSpec(n);
  spec.constants.clear();
  spec.tensors.erase(spec.tensors.begin() + 1); // c
  spec.outputs = {1};
  LaunchSpec launch;
  launch.kernel = "tessel_test_copy_shared";
  launch.grid = {(n + kTestBlock - 1) / kTestBlock, 1, 1};
  launch.block = {kTestBlock, 1, 1};
  launch.sharedBytes = sharedBytes;
  launch.args = {tensorArg(0), tensorArg(1), valueArg<uint32_t>(n),
                 valueArg<uint32_t>(sharedBytes)};
  StepSpec copy{"identity", "y(Identity)", {0}, {1}, {}};
  copy.variants = {VariantSpec{"simt", "tessel_test_copy_shared", 70, 16, {launch}}};
  spec.steps = {copy};
  return spec;
}

/// What gpuAddSpec, gpuMixedSpec and gpuChainSpec compute, on the host.
inline std::vector<float> gpuAddExpected(const std::vector<float> &x) {
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    y[i] = x[i] + (0.25f * float(i) - 3.0f);
  return y;
}
inline std::vector<float> gpuMixedExpected(const std::vector<float> &x) {
  std::vector<float> y = gpuAddExpected(x);
  for (size_t i = 0; i < x.size(); ++i)
    y[i] = -y[i] + x[i];
  return y;
}
inline std::vector<float> gpuChainExpected(const std::vector<float> &x) {
  std::vector<float> y = gpuAddExpected(x);
  for (size_t i = 0; i < x.size(); ++i)
    y[i] = (y[i] + y[i]) + x[i];
  return y;
}

/// n values in [-1, 1), varying with `seed`.
inline std::vector<float> testInput(uint32_t n, uint32_t seed) {
  std::vector<float> x(n);
  uint32_t state = seed * 2654435761u + 1;
  for (float &v : x) {
    state = state * 1664525u + 1013904223u;
    v = float(state >> 8) / float(1u << 23) - 1.0f;
  }
  return x;
}

} // namespace tessel::test

#endif // TESSEL_TESTS_RUNTIME_GPU_ENGINES_H
