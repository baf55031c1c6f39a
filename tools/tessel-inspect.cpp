//===- tessel-inspect.cpp - what an engine file holds ---------------------===//
//
// Prints an engine's header, producer and options, IO signature, memory plan,
// tiers and step list (with each step's ONNX node and kernel variants).
// --device prints instead what this machine offers (the CUDA driver and its
// devices, or why there are none) and, for an engine, the tier each step
// would run on here under TESSEL_TIER_AUTO, with the reason.
// Exit status: 0 printed; 2 usage; 3 the file is not a valid engine.
//
//===----------------------------------------------------------------------===//
#include "engine.h"
#include "gpu/driver.h"
#include "gpu/tiers.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace {

using namespace tessel;

std::string tensorText(const engine::Tensor *t) {
  std::string text = cpu::dtypeName(static_cast<cpu::DType>(t->dtype()));
  text += "[";
  if (t->shape())
    for (size_t i = 0; i < t->shape()->size(); ++i)
      text += (i ? "," : "") + std::to_string(t->shape()->Get(i));
  return text + "]";
}

std::string attrText(const engine::Attr *a) {
  auto list = [](const auto *values) {
    std::string text = "[";
    if (values)
      for (size_t i = 0; i < values->size(); ++i)
        text += (i ? "," : "") + std::to_string(values->Get(i));
    return text + "]";
  };
  switch (a->kind()) {
  case engine::AttrKind::Int: return std::to_string(a->i());
  case engine::AttrKind::Float: return std::to_string(a->f());
  case engine::AttrKind::Ints: return list(a->ints());
  case engine::AttrKind::Floats: return list(a->floats());
  case engine::AttrKind::String: return "\"" + std::string(rt::fbString(a->s())) + "\"";
  }
  return "?";
}

std::string mib(uint64_t bytes) {
  char text[64];
  std::snprintf(text, sizeof(text), "%llu bytes (%.2f MiB)", (unsigned long long)bytes,
                bytes / 1048576.0);
  return text;
}

std::string jsonString(const std::string &text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\', out += c;
    else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
      out += escaped;
    } else
      out += c;
  }
  return out + "\"";
}

template <typename Vector> std::string jsonList(const Vector *values) {
  std::string text = "[";
  if (values)
    for (size_t i = 0; i < values->size(); ++i)
      text += (i ? "," : "") + std::to_string(values->Get(i));
  return text + "]";
}

/// Steps whose output takes the arena buffer of one of its inputs (in place,
/// or a reshape as a pure alias). The engine says so by equal offsets: the
/// planner never gives two tensors alive at the same step one offset
/// otherwise.
size_t inPlaceCount(const engine::Engine *fb) {
  size_t count = 0;
  auto arenaOffset = [&](int32_t index) -> int64_t {
    if (index < 0)
      return -1;
    const engine::Tensor *t = fb->tensors()->Get(index);
    return t->storage() == engine::Storage::Arena ? int64_t(t->offset()) : -1;
  };
  if (fb->steps())
    for (const engine::Step *step : *fb->steps())
      if (step->inputs() && step->outputs())
        for (int32_t out : *step->outputs()) {
          int64_t offset = arenaOffset(out);
          count += offset >= 0 &&
                   std::any_of(step->inputs()->begin(), step->inputs()->end(),
                               [&](int32_t in) { return arenaOffset(in) == offset; });
        }
  return count;
}

/// The same facts as the text form, for scripts and tests.
void printJson(const rt::Engine &loaded) {
  const engine::Engine *fb = loaded.fb();
  static const char *storage[] = {"arena", "constant", "input", "output"};
  std::printf("{\"format_version\": %u, \"arena_size\": %llu, \"arena_unplanned_size\": %llu, "
              "\"arena_in_place\": %zu, \"constants_size\": %llu,\n \"inputs\": %s, "
              "\"outputs\": %s,\n \"tensors\": [",
              loaded.header().format_version, (unsigned long long)fb->arena_size(),
              (unsigned long long)fb->arena_unplanned_size(), inPlaceCount(fb),
              (unsigned long long)loaded.constantsSize(), jsonList(fb->inputs()).c_str(),
              jsonList(fb->outputs()).c_str());
  for (size_t i = 0; i < fb->tensors()->size(); ++i) {
    const engine::Tensor *t = fb->tensors()->Get(i);
    std::printf("%s\n  {\"name\": %s, \"dtype\": \"%s\", \"shape\": %s, \"layout\": %s, "
                "\"storage\": \"%s\", \"offset\": %llu, \"size\": %llu}",
                i ? "," : "", jsonString(rt::fbString(t->name())).c_str(),
                cpu::dtypeName(static_cast<cpu::DType>(t->dtype())), jsonList(t->shape()).c_str(),
                jsonString(rt::fbString(t->layout())).c_str(), storage[int(t->storage())],
                (unsigned long long)t->offset(), (unsigned long long)t->size());
  }
  std::printf("],\n \"steps\": [");
  size_t stepCount = fb->steps() ? fb->steps()->size() : 0;
  for (size_t i = 0; i < stepCount; ++i) {
    const engine::Step *step = fb->steps()->Get(i);
    std::printf("%s\n  {\"op\": %s, \"location\": %s, \"inputs\": %s, \"outputs\": %s, \"attrs\": {",
                i ? "," : "", jsonString(rt::fbString(step->op())).c_str(),
                jsonString(rt::fbString(step->location())).c_str(),
                jsonList(step->inputs()).c_str(), jsonList(step->outputs()).c_str());
    if (step->attrs())
      for (size_t a = 0; a < step->attrs()->size(); ++a) {
        const engine::Attr *attr = step->attrs()->Get(a);
        std::string value = attrText(attr);
        // JSON has no inf/nan literals (clip bounds can be infinite).
        if (attr->kind() == engine::AttrKind::String ||
            value.find_first_of("in") != std::string::npos)
          value = attr->kind() == engine::AttrKind::String
                      ? jsonString(rt::fbString(attr->s()))
                      : jsonString(value);
        std::printf("%s%s: %s", a ? ", " : "", jsonString(rt::fbString(attr->name())).c_str(),
                    value.c_str());
      }
    std::printf("}, \"variants\": [");
    if (step->variants())
      for (size_t v = 0; v < step->variants()->size(); ++v)
        std::printf("%s%s", v ? ", " : "",
                    jsonString(rt::fbString(step->variants()->Get(v)->tier())).c_str());
    std::printf("]}");
  }
  std::printf("]}\n");
}

/// The device probe and, for an engine, each step's tier on this machine.
void printDevice(const rt::Engine *loaded, const std::string &path) {
  const rt::gpu::Driver &driver = rt::gpu::Driver::get();
  std::printf("device probe:\n");
  if (driver.version())
    std::printf("  driver: CUDA %s (%s)\n", driver.versionText().c_str(),
                driver.library().c_str());
  if (!driver.available())
    std::printf("  %s (%s)\n", driver.version() ? "no usable GPU" : "driver: none",
                driver.status().message().c_str());
  for (const rt::gpu::DeviceInfo &d : driver.devices())
    std::printf("  device %d: %s, compute capability %d.%d (%s), %d SMs, %.1f GiB, Tensor Cores: "
                "%s\n",
                d.ordinal, d.name.c_str(), d.ccMajor, d.ccMinor, d.arch().c_str(), d.smCount,
                d.memoryBytes / 1073741824.0, d.tensorCores() ? "yes" : "no");
  if (!loaded)
    return;
  rt::gpu::AutoChoice choice = rt::gpu::chooseAuto(*loaded, driver);
  std::printf("engine: %s (tiers: %s)\n", path.c_str(), rt::gpu::engineTiers(*loaded).c_str());
  std::printf("  tier auto on this machine: %s%s%s\n",
              choice.tier == TESSEL_TIER_CPU ? "cpu" : "gpu",
              choice.notice.empty() ? "" : ": ", choice.notice.c_str());
  const engine::Engine *fb = loaded->fb();
  for (size_t i = 0; i < choice.steps.size(); ++i) {
    const engine::Step *step = fb->steps()->Get(i);
    std::printf("  [%zu] %s at %s: %s (%s)\n", i, rt::fbString(step->op()),
                rt::fbString(step->location()), choice.steps[i].tier.c_str(),
                choice.steps[i].reason.c_str());
  }
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"tessel-inspect: print what a Tessel engine holds"};
  std::string path;
  bool showSteps = true;
  app.add_option("engine", path, "engine file (.tsl); optional with --device");
  bool json = false, device = false;
  app.add_flag("!--no-steps", showSteps, "omit the step list");
  app.add_flag("--json", json, "print everything as JSON");
  app.add_flag("--device", device,
               "print the CUDA driver and devices this machine has and, for the engine, the "
               "tier each step would run on here");
  try {
    app.parse(argc, argv);
    if (path.empty() && !device)
      throw CLI::RequiredError("engine");
    if (json && device)
      throw CLI::ExcludesError("--json", "--device");
  } catch (const CLI::ParseError &e) {
    return app.exit(e) == 0 ? 0 : 2;
  }

  std::shared_ptr<const rt::Engine> loaded;
  if (!path.empty()) {
    rt::Status status = rt::Engine::openFile(path, loaded);
    if (!status.ok()) {
      std::fprintf(stderr, "error: %s\n", status.message().c_str());
      return 3;
    }
  }
  if (device) {
    printDevice(loaded.get(), path);
    return 0;
  }
  if (json) {
    printJson(*loaded);
    return 0;
  }
  const engine::Engine *fb = loaded->fb();
  const format::Header &header = loaded->header();

  std::printf("engine: %s\n", path.c_str());
  std::printf("  format version %u, %s file, checksum %016llx (verified)\n",
              header.format_version, mib(loaded->fileSize()).c_str(),
              (unsigned long long)header.checksum);
  std::printf("  producer: %s\n", rt::fbString(fb->producer()));
  if (fb->options())
    for (const engine::Option *option : *fb->options())
      std::printf("  option %s = %s\n", rt::fbString(option->key()), rt::fbString(option->value()));
  std::string tiers;
  if (fb->tiers())
    for (const flatbuffers::String *tier : *fb->tiers())
      tiers += (tiers.empty() ? "" : ", ") + tier->str();
  std::printf("  tiers: %s\n", tiers.c_str());

  auto printIo = [&](const char *kind, const std::vector<rt::TensorInfo> &infos) {
    for (size_t i = 0; i < infos.size(); ++i)
      std::printf("  %s %zu '%s': %s %s\n", kind, i, infos[i].name.c_str(),
                  tensorText(fb->tensors()->Get(infos[i].tensor)).c_str(),
                  infos[i].layout.c_str());
  };
  printIo("input", loaded->inputs());
  printIo("output", loaded->outputs());

  size_t constantCount = 0, arenaCount = 0;
  for (const engine::Tensor *t : *fb->tensors()) {
    constantCount += t->storage() == engine::Storage::Constant;
    arenaCount += t->storage() == engine::Storage::Arena;
  }
  std::printf("  constants: %zu tensors, %s\n", constantCount, mib(loaded->constantsSize()).c_str());
  std::printf("  arena: %s planned for %zu intermediates totalling %s; %zu in place\n",
              mib(fb->arena_size()).c_str(), arenaCount, mib(fb->arena_unplanned_size()).c_str(),
              inPlaceCount(fb));

  size_t stepCount = fb->steps() ? fb->steps()->size() : 0;
  std::map<std::string, int> opCounts;
  for (size_t i = 0; i < stepCount; ++i)
    ++opCounts[rt::fbString(fb->steps()->Get(i)->op())];
  std::printf("  steps: %zu (", stepCount);
  bool first = true;
  for (const auto &[op, count] : opCounts) {
    std::printf("%s%s x%d", first ? "" : ", ", op.c_str(), count);
    first = false;
  }
  std::printf(")\n");
  if (!showSteps)
    return 0;
  for (size_t i = 0; i < stepCount; ++i) {
    const engine::Step *step = fb->steps()->Get(i);
    std::printf("  [%zu] %s at %s\n", i, rt::fbString(step->op()), rt::fbString(step->location()));
    auto operands = [&](const char *label, const flatbuffers::Vector<int32_t> *indices) {
      if (!indices)
        return;
      for (int32_t index : *indices) {
        if (index < 0) {
          std::printf("        %s (absent)\n", label);
          continue;
        }
        const engine::Tensor *t = fb->tensors()->Get(index);
        static const char *storage[] = {"arena", "constant", "input", "output"};
        std::printf("        %s %s %s @%s+%llu\n", label, rt::fbString(t->name()),
                    tensorText(t).c_str(), storage[int(t->storage())],
                    (unsigned long long)t->offset());
      }
    };
    operands("in ", step->inputs());
    operands("out", step->outputs());
    if (step->attrs())
      for (const engine::Attr *a : *step->attrs())
        std::printf("        %s = %s\n", rt::fbString(a->name()), attrText(a).c_str());
    if (step->variants())
      for (const engine::KernelVariant *v : *step->variants())
        std::printf("        variant %s: %s (sm >= %d, align %d)\n", rt::fbString(v->tier()),
                    rt::fbString(v->kernel()), v->min_compute_capability(), v->alignment());
  }
  return 0;
}
