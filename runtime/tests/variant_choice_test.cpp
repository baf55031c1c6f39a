//===- variant_choice_test.cpp - which variant each step runs, no GPU needed ===//
//
// gpu/tiers.h is a pure function of the engine, a device description and the
// request: these tests give it devices as plain structs (and drivers as
// Driver::fake) and check the image each module loads, the variant each step
// takes, the reasons, the tier summaries and the refusals of forced tiers.
// The last tests run GPU engines through contexts on the cpu tier, which
// works on every machine.
//
//===----------------------------------------------------------------------===//
#include "engine_builder.h"
#include "executor.h"
#include "gpu/driver.h"
#include "gpu/tiers.h"
#include "gpu_engines.h"
#include "tessel_runtime.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace tessel::test {
namespace {

using rt::Context;
using rt::Engine;
using rt::Status;
using tessel::format::chooseImage;
using rt::gpu::chooseVariants;
using rt::gpu::DeviceInfo;
using rt::gpu::Driver;
using rt::gpu::Selection;
using rt::gpu::TierPlan;

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

std::shared_ptr<const Engine> openSpec(const EngineSpec &spec) {
  std::vector<uint8_t> file = buildEngine(spec);
  std::shared_ptr<const Engine> engine;
  Status status = Engine::openMemory(file.data(), file.size(), engine);
  EXPECT_TRUE(status.ok()) << status.message();
  return engine;
}

DeviceInfo device(int major, int minor, const char *name, int sharedOptin = 0) {
  DeviceInfo info;
  info.name = name;
  info.ccMajor = major;
  info.ccMinor = minor;
  info.smCount = 80;
  info.memoryBytes = uint64_t(16) << 30;
  info.maxSharedBytesOptin = sharedOptin;
  return info;
}

const DeviceInfo kH100 = device(9, 0, "NVIDIA H100", 232448);
const DeviceInfo kA100 = device(8, 0, "NVIDIA A100", 166912);
const DeviceInfo kV100 = device(7, 0, "Tesla V100", 98304);
const DeviceInfo kGtx1080 = device(6, 1, "GTX 1080", 49152);
const DeviceInfo kMaxwell = device(5, 2, "GTX 980");
const DeviceInfo kB200 = device(10, 0, "NVIDIA B200", 232448);

/// A variant of `tier` launching the test add kernel from `module`.
VariantSpec variant(const std::string &tier, int minCapability, int module = 0) {
  VariantSpec v = simtAdd(0, 1, 2, 8);
  v.tier = tier;
  v.kernel = tier + "_add";
  v.minComputeCapability = minCapability;
  v.launches[0].module = module;
  return v;
}

/// gpuAddSpec(8) whose one step has `variants` (plus its cpu variant).
EngineSpec withVariants(std::vector<VariantSpec> variants) {
  EngineSpec spec = gpuAddSpec(8);
  spec.steps[0].variants = std::move(variants);
  return spec;
}

/// The one step's choice.
rt::gpu::StepChoice choose(const EngineSpec &spec, const DeviceInfo *on,
                           tessel_tier_t request = TESSEL_TIER_AUTO,
                           const std::vector<bool> &failed = {}) {
  auto engine = openSpec(spec);
  Selection selection = chooseVariants(*engine, on, request, failed);
  EXPECT_EQ(selection.steps.size(), 1u);
  return selection.steps.at(0);
}

//===----------------------------------------------------------------------===//
// Images
//===----------------------------------------------------------------------===//

TEST(VariantChoice, LoadsTheCubinOfTheDeviceMajorElseThePtx) {
  EngineSpec spec = gpuAddSpec(8);
  // 0: PTX sm_60, 1: PTX sm_70, 2: cubin sm_75, 3: cubin sm_80, 4: cubin sm_86,
  // 5: cubin sm_90.
  spec.modules[0].images = {ptxImage(60, "ptx60"), ptxImage(70, "ptx70"), cubinImage(75),
                            cubinImage(80), cubinImage(86), cubinImage(90)};
  auto engine = openSpec(spec);
  const tessel::engine::KernelModule *module = engine->modules()->Get(0);
  struct Case {
    int major, minor, image;
  } cases[] = {
      {9, 0, 5},  // its own cubin
      {8, 0, 3},  {8, 6, 4},
      {8, 9, 4},  // sm_86's cubin runs on 8.9: a later minor of one major
      {7, 5, 2},
      {7, 0, 1},  // no 7.x cubin at or below 7.0: the highest PTX not above
      {7, 2, 1},
      {6, 1, 0},
      {10, 0, 1}, // a newer major: PTX, the driver compiles it
      {5, 2, -1}, // nothing runs on Maxwell
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(std::to_string(c.major) + "." + std::to_string(c.minor));
    EXPECT_EQ(chooseImage(module, device(c.major, c.minor, "gpu").computeCapability()), c.image);
  }
}

TEST(VariantChoice, AModuleWithoutImagesLoadsNowhere) {
  EngineSpec spec = gpuAddSpec(8);
  spec.modules[0].images.clear();
  auto engine = openSpec(spec);
  EXPECT_EQ(chooseImage(engine->modules()->Get(0), kH100.computeCapability()), -1);
  rt::gpu::StepChoice choice = chooseVariants(*engine, &kH100, TESSEL_TIER_AUTO).steps[0];
  EXPECT_EQ(choice.tier, "cpu");
  EXPECT_EQ(choice.reason, "simt: module 'test_kernels' has no image for sm_90");
}

//===----------------------------------------------------------------------===//
// Variants
//===----------------------------------------------------------------------===//

TEST(VariantChoice, TakesTheBestTierTheDeviceRuns) {
  // Listed worst first on purpose: the order in the file does not matter.
  EngineSpec spec = withVariants({variant("simt", 60), variant("tc-sm70", 70),
                                  variant("tc-sm80", 80), variant("tc-sm90", 90)});
  struct Case {
    const DeviceInfo *device;
    const char *tier;
    const char *reason;
  } cases[] = {
      {&kH100, "tc-sm90", ""},
      // tc-sm90's sm_90a code runs on sm_90 alone.
      {&kB200, "tc-sm80", "tc-sm90: needs sm_90 (sm_90a code)"},
      {&kA100, "tc-sm80", "tc-sm90: needs sm_90"},
      {&kV100, "tc-sm70", "tc-sm90: needs sm_90; tc-sm80: needs sm_80"},
      {&kGtx1080, "simt", "tc-sm90: needs sm_90; tc-sm80: needs sm_80; tc-sm70: needs sm_70"},
      {&kMaxwell, "cpu",
       "tc-sm90: needs sm_90; tc-sm80: needs sm_80; tc-sm70: needs sm_70; simt: needs sm_60"},
      {nullptr, "cpu", "no usable GPU"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.device ? c.device->name : "no GPU");
    rt::gpu::StepChoice choice = choose(spec, c.device);
    EXPECT_EQ(choice.tier, c.tier);
    EXPECT_EQ(choice.reason, c.reason);
    EXPECT_EQ(choice.kernel, std::string(c.tier) == "cpu" ? "add" : std::string(c.tier) + "_add");
  }
}

TEST(VariantChoice, TheTierNameBoundsTheCapability) {
  // A tc-sm80 variant that claims to need only 7.0 still needs sm_80.
  rt::gpu::StepChoice choice = choose(withVariants({variant("tc-sm80", 70)}), &kV100);
  EXPECT_EQ(choice.tier, "cpu");
  EXPECT_EQ(choice.reason, "tc-sm80: needs sm_80");
  // And min_compute_capability above the tier's counts too.
  choice = choose(withVariants({variant("simt", 75)}), &kV100);
  EXPECT_EQ(choice.reason, "simt: needs sm_75");
}

TEST(VariantChoice, TheRequestBoundsTheTiers) {
  EngineSpec spec = withVariants({variant("tc-sm90", 90), variant("simt", 60)});
  EXPECT_EQ(choose(spec, &kH100, TESSEL_TIER_AUTO).tier, "tc-sm90");
  EXPECT_EQ(choose(spec, &kH100, TESSEL_TIER_TC).tier, "tc-sm90");
  rt::gpu::StepChoice simt = choose(spec, &kH100, TESSEL_TIER_SIMT);
  EXPECT_EQ(simt.tier, "simt");
  EXPECT_EQ(simt.reason, "tc-sm90: tier 'simt' requested");
  rt::gpu::StepChoice cpu = choose(spec, &kH100, TESSEL_TIER_CPU);
  EXPECT_EQ(cpu.tier, "cpu");
  EXPECT_EQ(cpu.kernel, "add");
  EXPECT_EQ(cpu.reason, "tier 'cpu' requested");
  // TC_SM80 and TC_SM70 cap the Tensor Core tier, one step at a time.
  EngineSpec three = withVariants({variant("tc-sm90", 90), variant("tc-sm80", 80),
                                   variant("tc-sm70", 70), variant("simt", 60)});
  EXPECT_EQ(choose(three, &kH100, TESSEL_TIER_TC).tier, "tc-sm90");
  rt::gpu::StepChoice sm80 = choose(three, &kH100, TESSEL_TIER_TC_SM80);
  EXPECT_EQ(sm80.tier, "tc-sm80");
  EXPECT_EQ(sm80.reason, "tc-sm90: tier 'tc-sm80' requested");
  EXPECT_EQ(choose(three, &kH100, TESSEL_TIER_TC_SM70).tier, "tc-sm70");
  EXPECT_EQ(choose(withVariants({variant("tc-sm80", 80), variant("simt", 60)}), &kH100,
                   TESSEL_TIER_TC_SM70)
                .tier,
            "simt");
  // A forced TC falls back per step to simt where a step has no tc variant.
  EXPECT_EQ(choose(withVariants({variant("simt", 60)}), &kH100, TESSEL_TIER_TC).tier, "simt");
  // A step with only its cpu variant says so, whatever the request.
  EXPECT_EQ(choose(withVariants({}), &kH100, TESSEL_TIER_AUTO).reason,
            "the step has only a cpu kernel");
}

TEST(VariantChoice, SkipsModulesThatFailedToLoad) {
  EngineSpec spec = withVariants({variant("tc-sm90", 90, 1), variant("simt", 60, 0)});
  spec.modules.push_back(ModuleSpec{"tc_kernels", {ptxImage(90, "tc")}});
  EXPECT_EQ(choose(spec, &kH100).tier, "tc-sm90");
  rt::gpu::StepChoice choice = choose(spec, &kH100, TESSEL_TIER_AUTO, {false, true});
  EXPECT_EQ(choice.tier, "simt");
  EXPECT_EQ(choice.reason, "tc-sm90: module 'tc_kernels' failed to load");
  choice = choose(spec, &kH100, TESSEL_TIER_AUTO, {true, true});
  EXPECT_EQ(choice.tier, "cpu");
  EXPECT_EQ(choice.reason, "tc-sm90: module 'tc_kernels' failed to load; simt: module "
                           "'test_kernels' failed to load");
}

TEST(VariantChoice, HoldsTheVariantsAlignment) {
  // The mixed engine's arena tensors sit at offset 0; move t to 64.
  EngineSpec spec = gpuMixedSpec(8);
  spec.tensors[3].offset = 64;
  spec.tensors[4].offset = 64;
  spec.arenaSize = 512;
  spec.steps[0].variants[0].alignment = 64;
  auto engine = openSpec(spec);
  EXPECT_EQ(chooseVariants(*engine, &kH100, TESSEL_TIER_AUTO).steps[0].tier, "simt");
  spec.steps[0].variants[0].alignment = 128;
  engine = openSpec(spec);
  rt::gpu::StepChoice choice = chooseVariants(*engine, &kH100, TESSEL_TIER_AUTO).steps[0];
  EXPECT_EQ(choice.tier, "cpu");
  EXPECT_EQ(choice.reason, "simt: tensor 't' at offset 64 is not 128-byte aligned");
}

TEST(VariantChoice, HoldsTheDevicesSharedMemoryLimit) {
  EngineSpec spec = gpuSharedCopySpec(8, 160 * 1024);
  EXPECT_EQ(choose(spec, &kH100).tier, "simt");
  EXPECT_EQ(choose(spec, &kA100).tier, "simt");
  rt::gpu::StepChoice choice = choose(spec, &kV100);
  EXPECT_EQ(choice.tier, "cpu");
  EXPECT_EQ(choice.reason, "simt: kernel 'tessel_test_copy_shared' needs 163840 bytes of "
                           "shared memory, sm_70 allows 98304");
  // A device whose limit was not probed (0) is not held to one.
  DeviceInfo unprobed = device(7, 0, "unprobed");
  EXPECT_EQ(choose(spec, &unprobed).tier, "simt");
}

TEST(VariantChoice, SummarizesTheTiers) {
  auto mixed = openSpec(gpuMixedSpec(8));
  Selection selection = chooseVariants(*mixed, &kH100, TESSEL_TIER_AUTO);
  ASSERT_EQ(selection.steps.size(), 3u);
  EXPECT_EQ(selection.steps[0].tier, "simt");
  EXPECT_EQ(selection.steps[1].tier, "cpu");
  EXPECT_EQ(selection.steps[1].reason, "the step has only a cpu kernel");
  EXPECT_EQ(selection.steps[2].tier, "simt");
  EXPECT_TRUE(selection.usesGpu());
  EXPECT_EQ(selection.tier(), "mixed");
  EXPECT_EQ(selection.summary(), "mixed: 2 simt, 1 cpu");

  selection = chooseVariants(*mixed, &kH100, TESSEL_TIER_CPU);
  EXPECT_FALSE(selection.usesGpu());
  EXPECT_EQ(selection.tier(), "cpu");
  EXPECT_EQ(selection.summary(), "cpu");

  auto chain = openSpec(gpuChainSpec(8));
  selection = chooseVariants(*chain, &kH100, TESSEL_TIER_AUTO);
  EXPECT_EQ(selection.summary(), "simt");

  EngineSpec tc = gpuChainSpec(8);
  tc.steps[1].variants.push_back(variant("tc-sm80", 80));
  tc.steps[2].variants.push_back(variant("tc-sm90", 90));
  selection = chooseVariants(*openSpec(tc), &kH100, TESSEL_TIER_AUTO);
  EXPECT_EQ(selection.summary(), "mixed: 1 tc-sm90, 1 tc-sm80, 1 simt");
  EXPECT_EQ(Selection{}.tier(), "cpu");
}

//===----------------------------------------------------------------------===//
// Plans against a driver's state
//===----------------------------------------------------------------------===//

TEST(TierPlan, AutoWithoutADriverRunsEverythingOnCpuAndSaysWhy) {
  auto engine = openSpec(gpuMixedSpec(8));
  std::unique_ptr<Driver> none = Driver::load("/nonexistent/libcuda.so.1");
  TierPlan plan;
  ASSERT_TRUE(rt::gpu::planTiers(*engine, *none, TESSEL_TIER_AUTO, plan).ok());
  EXPECT_EQ(plan.device, nullptr);
  EXPECT_EQ(plan.selection.summary(), "cpu");
  EXPECT_EQ(plan.notice.rfind("no CUDA driver: /nonexistent/libcuda.so.1 not found", 0), 0u)
      << plan.notice;
  EXPECT_TRUE(contains(plan.notice, "; using the cpu tier")) << plan.notice;
  EXPECT_EQ(plan.selection.steps[0].reason, "no usable GPU");
  EXPECT_EQ(plan.selection.steps[1].reason, "the step has only a cpu kernel");
}

TEST(TierPlan, AutoWithAGpuTakesItsVariants) {
  auto engine = openSpec(gpuMixedSpec(8));
  auto h100 = Driver::fake({kH100}, 12040);
  TierPlan plan;
  ASSERT_TRUE(rt::gpu::planTiers(*engine, *h100, TESSEL_TIER_AUTO, plan).ok());
  ASSERT_NE(plan.device, nullptr);
  EXPECT_EQ(plan.device->name, "NVIDIA H100");
  EXPECT_EQ(plan.selection.summary(), "mixed: 2 simt, 1 cpu");
  EXPECT_EQ(plan.notice, "");
}

TEST(TierPlan, AutoSaysWhyNoStepGotAGpuTier) {
  auto h100 = Driver::fake({kH100}, 12040);
  TierPlan plan;
  ASSERT_TRUE(rt::gpu::planTiers(*openSpec(sampleSpec()), *h100, TESSEL_TIER_AUTO, plan).ok());
  EXPECT_EQ(plan.device, nullptr);
  EXPECT_EQ(plan.notice, "GPU sm_90 (NVIDIA H100) found, but this engine has no GPU kernels; "
                         "using the cpu tier");

  auto a100 = Driver::fake({kA100}, 12040);
  EngineSpec tc90 = withVariants({variant("tc-sm90", 90)});
  tc90.tiers = {"tc-sm90", "cpu"};
  ASSERT_TRUE(rt::gpu::planTiers(*openSpec(tc90), *a100, TESSEL_TIER_AUTO, plan).ok());
  EXPECT_EQ(plan.device, nullptr);
  EXPECT_EQ(plan.notice, "GPU sm_80 (NVIDIA A100) found, but none of this engine's GPU kernels "
                         "runs on sm_80 (the engine has tiers: tc-sm90, cpu; step 0 'add' at "
                         "y(Add): tc-sm90: needs sm_90); using the cpu tier");
}

TEST(TierPlan, ForcedGpuTiersNameTheReason) {
  auto sample = openSpec(sampleSpec());
  std::unique_ptr<Driver> none = Driver::load("/nonexistent/libcuda.so.1");
  TierPlan plan;
  Status s = rt::gpu::planTiers(*sample, *none, TESSEL_TIER_TC, plan);
  EXPECT_EQ(s.code(), TESSEL_UNSUPPORTED);
  EXPECT_EQ(s.message().rfind("tier 'tc' requested, but this machine has no GPU tier: no CUDA "
                              "driver: /nonexistent/libcuda.so.1 not found (dlopen: ",
                              0),
            0u)
      << s.message();
  EXPECT_TRUE(contains(s.message(), "(the engine has tiers: cpu); use TESSEL_TIER_AUTO or "
                                    "TESSEL_TIER_CPU"))
      << s.message();

  auto pascal = Driver::fake({kGtx1080}, 12040);
  s = rt::gpu::planTiers(*sample, *pascal, TESSEL_TIER_TC, plan);
  EXPECT_EQ(s.code(), TESSEL_UNSUPPORTED);
  EXPECT_EQ(s.message(), "tier 'tc' requested, but GPU sm_61 (GTX 1080) has no Tensor Cores "
                         "(they need compute capability 7.0 or newer) (the engine has tiers: "
                         "cpu); use TESSEL_TIER_AUTO or TESSEL_TIER_CPU");
}

// A forced tier is an upper bound per step, not a demand on every step: the
// steps (or whole engines) without such a kernel run on the next tier down.
TEST(TierPlan, ForcedGpuTiersFallBackPerStep) {
  auto sample = openSpec(sampleSpec());
  auto h100 = Driver::fake({kH100}, 12040);
  TierPlan plan;
  Status s = rt::gpu::planTiers(*sample, *h100, TESSEL_TIER_SIMT, plan);
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(plan.selection.summary(), "cpu");
  EXPECT_EQ(plan.device, nullptr);
  EXPECT_EQ(plan.notice, ""); // asked for, so nothing to explain

  EngineSpec tc90 = withVariants({variant("tc-sm90", 90)});
  tc90.tiers = {"tc-sm90", "cpu"};
  auto engine = openSpec(tc90);
  auto a100 = Driver::fake({kA100}, 12040);
  s = rt::gpu::planTiers(*engine, *a100, TESSEL_TIER_TC, plan);
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(plan.selection.summary(), "cpu");
  EXPECT_EQ(plan.selection.steps[0].reason, "tc-sm90: needs sm_90");
  s = rt::gpu::planTiers(*engine, *h100, TESSEL_TIER_TC, plan);
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(plan.selection.summary(), "tc-sm90");
  EXPECT_EQ(plan.device, &h100->devices()[0]);
  s = rt::gpu::planTiers(*openSpec(gpuMixedSpec(8)), *h100, TESSEL_TIER_TC, plan);
  EXPECT_EQ(plan.selection.summary(), "mixed: 2 simt, 1 cpu");

  auto pascal = Driver::fake({kGtx1080}, 12040);
  // simt steps with the rest on cpu satisfy a forced simt.
  s = rt::gpu::planTiers(*openSpec(gpuMixedSpec(8)), *pascal, TESSEL_TIER_SIMT, plan);
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(plan.selection.summary(), "mixed: 2 simt, 1 cpu");

  s = rt::gpu::planTiers(*sample, *h100, static_cast<tessel_tier_t>(17), plan);
  EXPECT_EQ(s.code(), TESSEL_INVALID_ARGUMENT);
  EXPECT_EQ(s.message(), "invalid tier value 17");
}

TEST(TierPlan, CpuNeedsNoDriver) {
  std::unique_ptr<Driver> none = Driver::load("/nonexistent/libcuda.so.1");
  TierPlan plan;
  ASSERT_TRUE(rt::gpu::planTiers(*openSpec(gpuChainSpec(8)), *none, TESSEL_TIER_CPU, plan).ok());
  EXPECT_EQ(plan.selection.summary(), "cpu");
  EXPECT_EQ(plan.notice, "");
  EXPECT_EQ(plan.selection.steps[0].reason, "tier 'cpu' requested");
}

//===----------------------------------------------------------------------===//
// GPU engines on the cpu tier (every machine)
//===----------------------------------------------------------------------===//

TEST(VariantChoice, GpuEnginesRunOnTheCpuTier) {
  for (uint32_t n : {1u, 128u, 1000u}) {
    SCOPED_TRACE(n);
    struct Case {
      EngineSpec spec;
      std::vector<float> (*expected)(const std::vector<float> &);
    } cases[] = {{gpuAddSpec(n), gpuAddExpected},
                 {gpuMixedSpec(n), gpuMixedExpected},
                 {gpuChainSpec(n), gpuChainExpected}};
    for (const Case &c : cases) {
      std::unique_ptr<Context> context;
      ASSERT_TRUE(Context::create(openSpec(c.spec), TESSEL_TIER_CPU, context).ok());
      EXPECT_STREQ(context->tier(), "cpu");
      std::vector<float> x = testInput(n, 3), y(n);
      ASSERT_TRUE(context->bindInput(0, x.data(), n * 4).ok());
      ASSERT_TRUE(context->bindOutput(0, y.data(), n * 4).ok());
      Status status = context->run();
      ASSERT_TRUE(status.ok()) << status.message();
      EXPECT_EQ(y, c.expected(x));
    }
  }
}

TEST(VariantChoice, TheCApiNamesEachStepsTier) {
  std::vector<uint8_t> file = buildEngine(gpuMixedSpec(8));
  tessel_engine_t *engine = nullptr;
  ASSERT_EQ(tessel_engine_open_memory(file.data(), file.size(), &engine), nullptr);
  tessel_context_options_t options{TESSEL_TIER_CPU};
  tessel_context_t *context = nullptr;
  ASSERT_EQ(tessel_context_create(engine, &options, &context), nullptr);
  EXPECT_STREQ(tessel_context_tier(context), "cpu");
  EXPECT_STREQ(tessel_context_tier_summary(context), "cpu");
  ASSERT_EQ(tessel_context_step_count(context), 3u);
  tessel_step_info_t info{};
  ASSERT_EQ(tessel_context_step_info(context, 1, &info), nullptr);
  EXPECT_STREQ(info.op, "neg");
  EXPECT_STREQ(info.location, "u(Neg)");
  EXPECT_STREQ(info.tier, "cpu");
  EXPECT_STREQ(info.kernel, "neg");
  EXPECT_STREQ(info.reason, "the step has only a cpu kernel");
  ASSERT_EQ(tessel_context_step_info(context, 0, &info), nullptr);
  EXPECT_STREQ(info.reason, "tier 'cpu' requested");

  tessel_status_t status = tessel_context_step_info(context, 3, &info);
  EXPECT_EQ(tessel_status_code(status), TESSEL_INVALID_ARGUMENT);
  EXPECT_STREQ(tessel_status_message(status), "step index 3 is out of range: the engine has 3 "
                                              "steps");
  tessel_status_free(status);
  status = tessel_context_step_info(nullptr, 0, &info);
  EXPECT_EQ(tessel_status_code(status), TESSEL_INVALID_ARGUMENT);
  tessel_status_free(status);
  status = tessel_context_step_info(context, 0, nullptr);
  EXPECT_EQ(tessel_status_code(status), TESSEL_INVALID_ARGUMENT);
  tessel_status_free(status);
  EXPECT_EQ(tessel_context_step_count(nullptr), 0u);
  EXPECT_STREQ(tessel_context_tier_summary(nullptr), "");
  tessel_context_release(context);
  tessel_engine_release(engine);
}

} // namespace
} // namespace tessel::test
