//===- tessel-inspect.cpp - what an engine file holds ---------------------===//
//
// Prints an engine's header, producer and options, IO signature, memory plan,
// tiers, GPU targets and kernel modules, and step list (with each step's ONNX
// node and kernel variants and their launches). --device prints instead what
// this machine offers (the CUDA driver and its devices, or why there are
// none) and, for an engine, the image each module would load here and the
// variant each step would run under TESSEL_TIER_AUTO, with the reason.
// --dump-modules DIR writes every module image to DIR (for cuobjdump).
// Exit status: 0 printed; 2 usage; 3 the file is not a valid engine, or DIR
// cannot be written.
//
// The engine is opened (and verified) by the runtime's C API; what it holds
// is read through the engine format library (tessel_engine_file), and what
// this machine would run through a context (tessel_context_step_info).
//
//===----------------------------------------------------------------------===//
#include "ToolMain.h"
#include "Json.h"
#include "tessel/engine_format.h"
#include "tessel_runtime.h"

#include <CLI/CLI.hpp>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>

namespace {

using namespace tessel;

/// A FlatBuffers string as a C string; "" for an absent optional field.
const char *str(const flatbuffers::String *s) { return s ? s->c_str() : ""; }

const char *dtypeName(engine::DType dtype) {
  return tessel_dtype_name(static_cast<tessel_dtype_t>(dtype));
}

/// An engine the runtime opened and verified, and its FlatBuffer.
struct Loaded {
  tessel_engine_t *handle = nullptr;
  const engine::Engine *fb = nullptr;
  format::Header header{};
  size_t fileSize = 0;

  Loaded() = default;
  Loaded(const Loaded &) = delete;
  Loaded &operator=(const Loaded &) = delete;
  ~Loaded() { tessel_engine_release(handle); }

  /// Opens `path`; false with the runtime's message on failure.
  bool open(const std::string &path, std::string &error) {
    tessel_status_t status = tessel_engine_open_file(path.c_str(), &handle);
    const void *data = nullptr;
    if (!status)
      status = tessel_engine_file(handle, &data, &fileSize);
    if (status) {
      error = tessel_status_message(status);
      tessel_status_free(status);
      return false;
    }
    const auto *file = static_cast<const uint8_t *>(data);
    std::memcpy(&header, file, sizeof(header));
    fb = format::payload(file);
    return true;
  }
};

std::string tensorText(const engine::Tensor *t) {
  std::string text = dtypeName(t->dtype());
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
  case engine::AttrKind::String: return "\"" + std::string(str(a->s())) + "\"";
  }
  return "?";
}

std::string mib(uint64_t bytes) {
  char text[64];
  std::snprintf(text, sizeof(text), "%llu bytes (%.2f MiB)", (unsigned long long)bytes,
                bytes / 1048576.0);
  return text;
}

using tools::jsonString;

template <typename Vector> std::string jsonList(const Vector *values) {
  std::string text = "[";
  if (values)
    for (size_t i = 0; i < values->size(); ++i)
      text += (i ? "," : "") + std::to_string(values->Get(i));
  return text + "]";
}

/// Steps whose output takes the arena buffer of one of its inputs (in place;
/// a reshape that aliases its input is no step). The engine says so by equal offsets: the
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

const char *imageFormat(const engine::KernelImage *image) {
  return image->format() == engine::ImageFormat::Cubin ? "cubin" : "ptx";
}

/// An image's bytes without the NUL that ends a PTX.
size_t imageBytes(const engine::KernelImage *image) {
  size_t size = image->compression() == engine::Compression::Zstd
                    ? static_cast<size_t>(image->size())
                    : (image->data() ? image->data()->size() : 0);
  return image->format() == engine::ImageFormat::PTX && size ? size - 1 : size;
}

/// The image as the driver loads it (PTX without its NUL), zstd-decoded
/// where the engine stores it compressed; false when it does not decode to
/// its declared size.
bool decodedImage(const engine::KernelImage *image, std::vector<uint8_t> &bytes) {
  const uint8_t *data = image->data()->data();
  size_t stored = image->data()->size();
  if (image->compression() == engine::Compression::Zstd) {
    bytes.resize(static_cast<size_t>(image->size()));
    size_t written = ZSTD_decompress(bytes.data(), bytes.size(), data, stored);
    if (ZSTD_isError(written) || written != bytes.size())
      return false;
  } else {
    bytes.assign(data, data + stored);
  }
  if (image->format() == engine::ImageFormat::PTX && !bytes.empty())
    bytes.pop_back();
  return true;
}

/// "ptx sm_70 (12345 bytes), cubin sm_80 (...), cubin sm_90 (..., waits
/// for prior grids)".
std::string imagesText(const engine::KernelModule *module) {
  std::string text;
  if (module->images())
    for (const engine::KernelImage *image : *module->images())
      text += (text.empty() ? "" : ", ") + std::string(imageFormat(image)) + " sm_" +
              std::to_string(image->arch()) + " (" + std::to_string(imageBytes(image)) +
              " bytes" +
              (image->compression() == engine::Compression::Zstd
                   ? ", " + std::to_string(image->data()->size()) + " stored"
                   : std::string()) +
              (image->waits_for_prior_grids() ? ", waits for prior grids" : "") + ")";
  return text.empty() ? "no images" : text;
}

std::string listText(const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>> *list) {
  std::string text;
  if (list)
    for (const flatbuffers::String *item : *list)
      text += (text.empty() ? "" : ", ") + item->str();
  return text;
}

std::string tierList(const flatbuffers::Vector<engine::Tier> *list) {
  std::string text;
  if (list)
    for (engine::Tier tier : *list)
      text += (text.empty() ? "" : ", ") + std::string(format::tierName(tier));
  return text;
}

/// "AxBxC" (a grid or block's three sizes, a tensor map's dims or box).
template <typename T> std::string dimsText(const flatbuffers::Vector<T> *dims) {
  std::string text;
  for (size_t i = 0; dims && i < dims->size(); ++i)
    text += (i ? "x" : "") + std::to_string(dims->Get(i));
  return text;
}

/// Writes DIR/<module>.sm_<arch>.{ptx,cubin} for every image, creating DIR;
/// false (and a message on stderr) when it or a file cannot be written.
bool dumpModules(const engine::Engine *fb, const std::string &dir) {
  // DIR is created where it is missing (its parents too).
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error || !std::filesystem::is_directory(dir)) {
    std::fprintf(stderr, "error: cannot create the directory '%s': %s\n", dir.c_str(),
                 error ? error.message().c_str() : "a file of that name exists");
    return false;
  }
  if (!fb->modules())
    return true;
  for (const engine::KernelModule *module : *fb->modules()) {
    if (!module->images())
      continue;
    for (const engine::KernelImage *image : *module->images()) {
      std::string path = dir + "/" + str(module->name()) + ".sm_" +
                         std::to_string(image->arch()) + "." + imageFormat(image);
      std::vector<uint8_t> bytes;
      if (!decodedImage(image, bytes)) {
        std::fprintf(stderr, "error: %s does not decode\n", path.c_str());
        return false;
      }
      FILE *file = std::fopen(path.c_str(), "wb");
      size_t size = bytes.size();
      bool written = file && std::fwrite(bytes.data(), 1, size, file) == size;
      if (file && std::fclose(file) != 0)
        written = false;
      if (!written) {
        std::fprintf(stderr, "error: cannot write '%s': %s\n", path.c_str(),
                     std::strerror(errno));
        return false;
      }
      std::printf("wrote %s (%zu bytes)\n", path.c_str(), size);
    }
  }
  return true;
}

/// The same facts as the text form, for scripts and tests.
void printJson(const Loaded &loaded) {
  const engine::Engine *fb = loaded.fb;
  static const char *storage[] = {"arena", "constant", "input", "output"};
  // The plan is profile 0's; "profile_count" says how many the engine has.
  std::printf("{\"format_version\": %u, \"profile_count\": %u, \"arena_size\": %llu, "
              "\"arena_unplanned_size\": %llu, "
              "\"arena_in_place\": %zu, \"constants_size\": %llu,\n \"inputs\": %s, "
              "\"outputs\": %s,\n \"tensors\": [",
              loaded.header.format_version, 1 + (fb->profiles() ? fb->profiles()->size() : 0),
              (unsigned long long)fb->arena_size(),
              (unsigned long long)fb->arena_unplanned_size(), inPlaceCount(fb),
              (unsigned long long)loaded.header.constants_size, jsonList(fb->inputs()).c_str(),
              jsonList(fb->outputs()).c_str());
  for (size_t i = 0; i < fb->tensors()->size(); ++i) {
    const engine::Tensor *t = fb->tensors()->Get(i);
    std::printf("%s\n  {\"name\": %s, \"dtype\": \"%s\", \"shape\": %s, \"layout\": %s, "
                "\"storage\": \"%s\", \"offset\": %llu, \"size\": %llu}",
                i ? "," : "", jsonString(str(t->name())).c_str(),
                dtypeName(t->dtype()), jsonList(t->shape()).c_str(),
                jsonString(str(t->layout())).c_str(), storage[int(t->storage())],
                (unsigned long long)t->offset(), (unsigned long long)t->size());
  }
  std::printf("],\n \"steps\": [");
  size_t stepCount = fb->steps() ? fb->steps()->size() : 0;
  for (size_t i = 0; i < stepCount; ++i) {
    const engine::Step *step = fb->steps()->Get(i);
    std::printf("%s\n  {\"op\": %s, \"location\": %s, \"inputs\": %s, \"outputs\": %s, \"attrs\": {",
                i ? "," : "", jsonString(str(step->op())).c_str(),
                jsonString(str(step->location())).c_str(),
                jsonList(step->inputs()).c_str(), jsonList(step->outputs()).c_str());
    if (step->attrs())
      for (size_t a = 0; a < step->attrs()->size(); ++a) {
        const engine::Attr *attr = step->attrs()->Get(a);
        std::string value = attrText(attr);
        // JSON has no inf/nan literals (clip bounds can be infinite).
        if (attr->kind() == engine::AttrKind::String ||
            value.find_first_of("in") != std::string::npos)
          value = attr->kind() == engine::AttrKind::String
                      ? jsonString(str(attr->s()))
                      : jsonString(value);
        std::printf("%s%s: %s", a ? ", " : "", jsonString(str(attr->name())).c_str(),
                    value.c_str());
      }
    std::printf("}, \"variants\": [");
    if (step->variants())
      for (size_t v = 0; v < step->variants()->size(); ++v)
        std::printf("%s%s", v ? ", " : "",
                    jsonString(format::tierName(step->variants()->Get(v)->tier())).c_str());
    std::printf("], \"kernels\": [");
    if (step->variants())
      for (size_t v = 0; v < step->variants()->size(); ++v) {
        const engine::KernelVariant *variant = step->variants()->Get(v);
        std::printf("%s{\"tier\": %s, \"kernel\": %s, \"min_compute_capability\": %d, "
                    "\"alignment\": %d, \"launches\": [",
                    v ? ", " : "", jsonString(format::tierName(variant->tier())).c_str(),
                    jsonString(str(variant->kernel())).c_str(),
                    variant->min_compute_capability(), variant->alignment());
        if (variant->launches())
          for (size_t l = 0; l < variant->launches()->size(); ++l) {
            const engine::Launch *launch = variant->launches()->Get(l);
            std::printf("%s{\"module\": %d, \"kernel\": %s, \"grid\": %s, \"block\": %s, "
                        "\"shared_bytes\": %u, \"args\": %u}",
                        l ? ", " : "", launch->module_(),
                        jsonString(str(launch->kernel())).c_str(),
                        jsonList(launch->grid()).c_str(), jsonList(launch->block()).c_str(),
                        launch->shared_bytes(), launch->args() ? launch->args()->size() : 0u);
          }
        std::printf("]}");
      }
    std::printf("]}");
  }
  std::printf("],\n \"targets\": [");
  if (fb->targets())
    for (size_t i = 0; i < fb->targets()->size(); ++i)
      std::printf("%s%s", i ? ", " : "", jsonString(fb->targets()->Get(i)->str()).c_str());
  std::printf("],\n \"modules\": [");
  if (fb->modules())
    for (size_t m = 0; m < fb->modules()->size(); ++m) {
      const engine::KernelModule *module = fb->modules()->Get(m);
      std::printf("%s\n  {\"name\": %s, \"images\": [", m ? "," : "",
                  jsonString(str(module->name())).c_str());
      if (module->images())
        for (size_t i = 0; i < module->images()->size(); ++i) {
          const engine::KernelImage *image = module->images()->Get(i);
          std::printf("%s{\"format\": \"%s\", \"arch\": %d, \"bytes\": %zu}", i ? ", " : "",
                      imageFormat(image), image->arch(), imageBytes(image));
        }
      std::printf("]}");
    }
  std::printf("]}\n");
}

/// The device probe and, for an engine, each module's image and each step's
/// variant on this machine: what a context created with TESSEL_TIER_AUTO
/// takes here.
void printDevice(const Loaded *loaded, const std::string &path) {
  std::printf("device probe:\n");
  if (int version = tessel_driver_version())
    std::printf("  driver: CUDA %d.%d\n", version / 1000, version % 1000 / 10);
  if (tessel_status_t status = tessel_driver_status()) {
    std::printf("  %s (%s)\n", tessel_driver_version() ? "no usable GPU" : "driver: none",
                tessel_status_message(status));
    tessel_status_free(status);
  }
  int capability = -1;
  for (size_t d = 0; d < tessel_device_count(); ++d) {
    tessel_device_info_t info;
    if (tessel_status_t status = tessel_device_info(d, &info)) {
      tessel_status_free(status);
      continue;
    }
    if (d == 0)
      capability = info.compute_capability_major * 10 + info.compute_capability_minor;
    std::printf("  device %zu: %s, compute capability %d.%d (sm_%d%d), %d SMs, %.1f GiB, Tensor "
                "Cores: %s\n",
                d, info.name, info.compute_capability_major, info.compute_capability_minor,
                info.compute_capability_major, info.compute_capability_minor, info.sm_count,
                info.memory_bytes / 1073741824.0, info.tensor_cores ? "yes" : "no");
  }
  if (!loaded)
    return;
  const engine::Engine *fb = loaded->fb;
  std::printf("engine: %s (tiers: %s; targets: %s)\n", path.c_str(), tierList(fb->tiers()).c_str(),
              fb->targets() && fb->targets()->size() ? listText(fb->targets()).c_str() : "none");
  if (fb->modules())
    for (size_t m = 0; m < fb->modules()->size(); ++m) {
      const engine::KernelModule *module = fb->modules()->Get(m);
      std::string loads = "not loaded: no GPU";
      if (capability >= 0) {
        int image = format::chooseImage(module, capability);
        loads = image < 0 ? "no image for sm_" + std::to_string(capability)
                          : std::string("loads its ") + imageFormat(module->images()->Get(image)) +
                                " sm_" + std::to_string(module->images()->Get(image)->arch());
      }
      std::printf("  module %zu '%s': %s\n", m, str(module->name()), loads.c_str());
    }
  tessel_context_t *context = nullptr;
  tessel_context_options_t options{TESSEL_TIER_AUTO};
  if (tessel_status_t status = tessel_context_create(loaded->handle, &options, &context)) {
    std::printf("  tier auto on this machine: no context: %s\n", tessel_status_message(status));
    tessel_status_free(status);
    return;
  }
  std::printf("  tier auto on this machine: %s\n", tessel_context_tier_summary(context));
  for (size_t i = 0; i < tessel_context_step_count(context); ++i) {
    tessel_step_info_t step;
    if (tessel_status_t status = tessel_context_step_info(context, i, &step)) {
      tessel_status_free(status);
      continue;
    }
    std::printf("  [%zu] %s at %s: %s (%s)%s%s\n", i, step.op, step.location, step.tier,
                step.kernel, step.reason[0] ? ": " : "", step.reason);
  }
  tessel_context_release(context);
}

} // namespace

static int toolMain(int argc, char **argv) {
  CLI::App app{"tessel-inspect: print what a Tessel engine holds"};
  std::string path;
  bool showSteps = true;
  app.add_option("engine", path, "engine file (.tsl); optional with --device");
  bool json = false, device = false;
  app.add_flag("!--no-steps", showSteps, "omit the step list");
  app.add_flag("--json", json, "print everything as JSON");
  app.add_flag("--device", device,
               "print the CUDA driver and devices this machine has and, for the engine, the "
               "image each module and the variant each step would run here");
  std::string dumpDir;
  size_t profile = 0;
  app.add_option("--profile", profile,
                 "the batch profile whose plan to print (tessel-compile --batch), 0 by default");
  app.add_option("--dump-modules", dumpDir,
                 "write every module image to DIR as <module>.sm_<arch>.{ptx,cubin}");
  try {
    app.parse(argc, argv);
    if (path.empty() && !device)
      throw CLI::RequiredError("engine");
    if (json && device)
      throw CLI::ExcludesError("--json", "--device");
  } catch (const CLI::ParseError &e) {
    return app.exit(e) == 0 ? 0 : 2;
  }

  // The probe below says why there is no GPU; the runtime need not repeat it.
  if (device)
    setenv("TESSEL_QUIET", "1", 0);
  Loaded loaded;
  if (!path.empty()) {
    std::string error;
    if (!loaded.open(path, error)) {
      std::fprintf(stderr, "error: %s\n", error.c_str());
      return 3;
    }
  }
  if (!dumpDir.empty() && !loaded.fb) {
    std::fprintf(stderr, "error: --dump-modules needs an engine\n");
    return 2;
  }
  if (!dumpDir.empty())
    return dumpModules(loaded.fb, dumpDir) ? 0 : 3;
  if (device) {
    printDevice(loaded.fb ? &loaded : nullptr, path);
    return 0;
  }
  if (json) {
    printJson(loaded);
    return 0;
  }
  const engine::Engine *fb = loaded.fb;
  const format::Header &header = loaded.header;

  std::printf("engine: %s\n", path.c_str());
  std::printf("  format version %u, %s file, checksum %016llx (verified)\n",
              header.format_version, mib(loaded.fileSize).c_str(),
              (unsigned long long)header.checksum);
  std::printf("  producer: %s\n", str(fb->producer()));
  if (fb->options())
    for (const engine::Option *option : *fb->options())
      std::printf("  option %s = %s\n", str(option->key()), str(option->value()));
  if (fb->targets() && fb->targets()->size())
    std::printf("  targets: %s\n", listText(fb->targets()).c_str());
  if (fb->modules())
    for (size_t m = 0; m < fb->modules()->size(); ++m)
      std::printf("  module %zu '%s': %s\n", m, str(fb->modules()->Get(m)->name()),
                  imagesText(fb->modules()->Get(m)).c_str());
  // Batch profiles share the above; what follows is one profile's plan.
  const size_t profileCount = 1 + (fb->profiles() ? fb->profiles()->size() : 0);
  if (profile >= profileCount) {
    std::fprintf(stderr, "error: --profile %zu: the engine has %zu profile(s)\n", profile,
                 profileCount);
    return 2;
  }
  if (profileCount > 1) {
    std::printf("  profiles: %zu\n", profileCount);
    for (size_t p = 0; p < profileCount; ++p) {
      const engine::Engine *plan = p == 0 ? fb : fb->profiles()->Get(p - 1);
      std::string shapes;
      for (int32_t input : *plan->inputs())
        shapes += (shapes.empty() ? "" : ", ") + tensorText(plan->tensors()->Get(input));
      std::printf("    profile %zu: inputs %s; %u steps, arena %s\n", p, shapes.c_str(),
                  plan->steps() ? plan->steps()->size() : 0, mib(plan->arena_size()).c_str());
    }
    std::printf("  the plan of profile %zu (--profile):\n", profile);
  }
  if (profile != 0)
    fb = fb->profiles()->Get(profile - 1);
  std::printf("  tiers: %s\n", tierList(fb->tiers()).c_str());

  auto printIo = [&](const char *kind, const flatbuffers::Vector<int32_t> *indices) {
    if (indices)
      for (size_t i = 0; i < indices->size(); ++i) {
        const engine::Tensor *t = fb->tensors()->Get(indices->Get(i));
        std::printf("  %s %zu '%s': %s %s\n", kind, i, str(t->name()), tensorText(t).c_str(),
                    str(t->layout()));
      }
  };
  printIo("input", fb->inputs());
  printIo("output", fb->outputs());

  size_t constantCount = 0, arenaCount = 0;
  for (const engine::Tensor *t : *fb->tensors()) {
    constantCount += t->storage() == engine::Storage::Constant;
    arenaCount += t->storage() == engine::Storage::Arena;
  }
  std::printf("  constants: %zu tensors, %s\n", constantCount, mib(header.constants_size).c_str());
  std::printf("  arena: %s planned for %zu intermediates totalling %s; %zu in place\n",
              mib(fb->arena_size()).c_str(), arenaCount, mib(fb->arena_unplanned_size()).c_str(),
              inPlaceCount(fb));

  size_t stepCount = fb->steps() ? fb->steps()->size() : 0;
  std::map<std::string, int> opCounts;
  for (size_t i = 0; i < stepCount; ++i)
    ++opCounts[str(fb->steps()->Get(i)->op())];
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
    std::printf("  [%zu] %s at %s\n", i, str(step->op()), str(step->location()));
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
        std::printf("        %s %s %s @%s+%llu\n", label, str(t->name()),
                    tensorText(t).c_str(), storage[int(t->storage())],
                    (unsigned long long)t->offset());
      }
    };
    operands("in ", step->inputs());
    operands("out", step->outputs());
    if (step->attrs())
      for (const engine::Attr *a : *step->attrs())
        std::printf("        %s = %s\n", str(a->name()), attrText(a).c_str());
    if (step->variants())
      for (const engine::KernelVariant *v : *step->variants()) {
        std::printf("        variant %s: %s (sm >= %d, align %d)\n", format::tierName(v->tier()),
                    str(v->kernel()), v->min_compute_capability(), v->alignment());
        if (v->launches())
          for (const engine::Launch *launch : *v->launches()) {
            std::printf("          launch %s in module %d: grid %s, block %s, %u bytes "
                        "shared, %u args\n",
                        str(launch->kernel()), launch->module_(),
                        dimsText(launch->grid()).c_str(), dimsText(launch->block()).c_str(),
                        launch->shared_bytes(), launch->args() ? launch->args()->size() : 0u);
            // TMA tensor maps: the tensor, its dims and the box (innermost
            // first); im2col's corners (W, H) and element strides.
            for (size_t a = 0; launch->args() && a < launch->args()->size(); ++a)
              if (const engine::TensorMap *map = launch->args()->Get(a)->tensor_map()) {
                std::printf("            arg %zu: tensor map of tensor %d, dims %s, box %s", a,
                            launch->args()->Get(a)->tensor(), dimsText(map->dims()).c_str(),
                            dimsText(map->box()).c_str());
                if (map->lower_corner())
                  std::printf(", im2col corners %s to %s, element strides %s",
                              dimsText(map->lower_corner()).c_str(),
                              dimsText(map->upper_corner()).c_str(),
                              dimsText(map->element_strides()).c_str());
                std::printf("\n");
              }
          }
      }
  }
  return 0;
}

int main(int argc, char **argv) {
  return tessel::tools::guardedMain("tessel-inspect", 3, [&] { return toolMain(argc, argv); });
}
