//===- custom_op_test.cpp - custom ops on the cpu tier --------------------===//
//
// A custom step (op "custom", its domain and op type as attributes) runs the
// implementation the application registered, with its operands' shapes,
// layouts and data and its attributes; without one a context fails at
// creation naming the op. Engines from engine_builder.h, not the compiler.
//
//===----------------------------------------------------------------------===//
#include "engine_builder.h"
#include "tessel_runtime.h"
#include "tessel_runtime.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace tessel::test {
namespace {

std::string take(tessel_status_t status) {
  std::string message = status ? tessel_status_message(status) : "";
  tessel_status_free(status);
  return message;
}

/// x f32[2,3] -> custom test.rt.<opType>(x; scale, offsets, tag) -> y f32[2,3].
EngineSpec customSpec(const std::string &opType) {
  EngineSpec spec;
  spec.tensors = {
      {"x", fb::DType::f32, {2, 3}, fb::Storage::Input, 0, TensorSpec::kAutoSize, ""},
      {"y", fb::DType::f32, {2, 3}, fb::Storage::Output, 0, TensorSpec::kAutoSize, ""},
  };
  spec.inputs = {0};
  spec.outputs = {1};
  AttrSpec offsets;
  offsets.name = "offsets";
  offsets.kind = fb::AttrKind::Floats;
  offsets.floats = {0.5, -1.0};
  spec.steps = {{"custom", "c(" + opType + ")", {0}, {1},
                 {stringAttr("domain", "test.rt"), stringAttr("op_type", opType),
                  floatAttr("scale", 3.0), intAttr("count", 7), offsets,
                  stringAttr("tag", "hello")}}};
  return spec;
}

// What the implementation saw, for the test to check.
struct Seen {
  int calls = 0;
  std::string location, tag;
  size_t rank = 0;
  int64_t count = 0;
  std::vector<double> offsets;
  bool missingIsZero = false;
};

// y = scale * x + offsets[0]
int scaleOffset(const tessel_custom_call_t *call, void *user, char *error, size_t errorSize) {
  Seen &seen = *static_cast<Seen *>(user);
  ++seen.calls;
  seen.location = call->location;
  if (call->input_count != 1 || call->output_count != 1) {
    std::snprintf(error, errorSize, "wrong operand counts");
    return 1;
  }
  seen.rank = call->inputs[0].rank;
  double scale = 0;
  const double *offsets = nullptr;
  size_t offsetCount = 0;
  const char *tag = nullptr;
  if (!tessel_custom_attr_float(call, "scale", &scale) ||
      !tessel_custom_attr_int(call, "count", &seen.count) ||
      !tessel_custom_attr_floats(call, "offsets", &offsets, &offsetCount) ||
      !tessel_custom_attr_string(call, "tag", &tag)) {
    std::snprintf(error, errorSize, "an attribute is missing");
    return 2;
  }
  int64_t unused = 0;
  seen.missingIsZero = tessel_custom_attr_int(call, "nope", &unused) == 0 &&
                       tessel_custom_attr_int(call, "scale", &unused) == 0; // a float, not an int
  seen.offsets.assign(offsets, offsets + offsetCount);
  seen.tag = tag;
  const float *x = static_cast<const float *>(call->inputs[0].data);
  float *y = static_cast<float *>(call->outputs[0].data);
  for (int64_t i = 0; i < call->inputs[0].shape[0] * call->inputs[0].shape[1]; ++i)
    y[i] = static_cast<float>(scale * x[i] + offsets[0]);
  return 0;
}

int failing(const tessel_custom_call_t *, void *, char *error, size_t errorSize) {
  std::snprintf(error, errorSize, "out of patience");
  return 42;
}

} // namespace

TEST(CustomOps, RunTheRegisteredImplementation) {
  Seen seen;
  ASSERT_EQ(take(tessel_register_custom_op("test.rt", "ScaleOffset", scaleOffset, &seen)), "");
  std::vector<uint8_t> file = buildEngine(customSpec("ScaleOffset"));
  tessel::Engine engine = tessel::Engine::openMemory(file.data(), file.size());
  tessel::Context context(engine, TESSEL_TIER_CPU);
  std::vector<float> x = {1, 2, 3, -4, 5, 0.25f}, y(6);
  context.bindInput(0, x.data(), 24);
  context.bindOutput(0, y.data(), 24);
  context.run();
  EXPECT_EQ(y, (std::vector<float>{3.5f, 6.5f, 9.5f, -11.5f, 15.5f, 1.25f}));
  // A second run with a new input binding sees the new data.
  std::vector<float> x2(6, 1.0f);
  context.bindInput(0, x2.data(), 24);
  context.run();
  EXPECT_EQ(y, std::vector<float>(6, 3.5f));
  EXPECT_EQ(seen.calls, 2);
  EXPECT_EQ(seen.location, "c(ScaleOffset)");
  EXPECT_EQ(seen.rank, 2u);
  EXPECT_EQ(seen.count, 7);
  EXPECT_EQ(seen.offsets, (std::vector<double>{0.5, -1.0}));
  EXPECT_EQ(seen.tag, "hello");
  EXPECT_TRUE(seen.missingIsZero);
}

TEST(CustomOps, RegisteringTwiceOrNothingIsRefused) {
  Seen seen;
  ASSERT_EQ(take(tessel_register_custom_op("test.rt", "Twice", scaleOffset, &seen)), "");
  tessel_status_t again = tessel_register_custom_op("test.rt", "Twice", scaleOffset, &seen);
  EXPECT_EQ(tessel_status_code(again), TESSEL_INVALID_ARGUMENT);
  EXPECT_EQ(take(again),
            "custom op test.rt.Twice has a CPU implementation registered already");
  tessel_status_t none = tessel_register_custom_op("test.rt", "Null", nullptr, nullptr);
  EXPECT_EQ(tessel_status_code(none), TESSEL_INVALID_ARGUMENT);
  take(none);
  none = tessel_register_custom_op(nullptr, "Null", scaleOffset, nullptr);
  EXPECT_EQ(tessel_status_code(none), TESSEL_INVALID_ARGUMENT);
  take(none);
  EXPECT_THROW(tessel::registerCustomOp("test.rt", "Twice", scaleOffset), tessel::Error);
}

TEST(CustomOps, AContextWithoutTheImplementationFailsNamingTheOp) {
  std::vector<uint8_t> file = buildEngine(customSpec("Unregistered"));
  tessel::Engine engine = tessel::Engine::openMemory(file.data(), file.size());
  for (tessel_tier_t tier : {TESSEL_TIER_CPU, TESSEL_TIER_AUTO}) {
    try {
      tessel::Context context(engine, tier);
      // AUTO on a machine with a GPU would still need the cpu tier here:
      // the step has no GPU variant.
      FAIL() << "created a context without the custom op's implementation";
    } catch (const tessel::Error &e) {
      EXPECT_EQ(e.code(), TESSEL_UNSUPPORTED);
      EXPECT_EQ(std::string(e.what()),
                "step 0 'custom' at c(Unregistered): custom op test.rt.Unregistered has no CPU "
                "implementation in this process (register one with tessel_register_custom_op, "
                "or give tessel-run --custom-op-lib)");
    }
  }
}

TEST(CustomOps, AFailingImplementationFailsTheRunNamingTheStep) {
  ASSERT_EQ(take(tessel_register_custom_op("test.rt", "Failing", failing, nullptr)), "");
  std::vector<uint8_t> file = buildEngine(customSpec("Failing"));
  tessel::Engine engine = tessel::Engine::openMemory(file.data(), file.size());
  tessel::Context context(engine, TESSEL_TIER_CPU);
  std::vector<float> x(6), y(6);
  context.bindInput(0, x.data(), 24);
  context.bindOutput(0, y.data(), 24);
  try {
    context.run();
    FAIL() << "the run succeeded";
  } catch (const tessel::Error &e) {
    EXPECT_EQ(e.code(), TESSEL_INTERNAL);
    EXPECT_EQ(std::string(e.what()),
              "step 0 'custom' at c(Failing): custom op test.rt.Failing failed (42): out of patience");
  }
}

} // namespace tessel::test
