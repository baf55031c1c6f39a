//===- tessel-compile.cpp - ONNX model in, engine file out ----------------===//
//
// Exit status: 0 compiled; 1 invalid model or internal error; 2 usage;
// 3 the model uses something Tessel does not support (every such node named).
//
//===----------------------------------------------------------------------===//
#include "CustomOp.h"
#include "EngineWriter.h"
#include "Importer.h"
#include "LowerPrecision.h"
#include "Pipeline.h"
#include "TesselDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OperationSupport.h"
#include "llvm/Support/raw_ostream.h"

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <fstream>
#include <map>
#include <vector>

namespace {

enum Exit { kOk = 0, kInvalid = 1, kUsage = 2, kUnsupported = 3 };

std::string locationText(mlir::Location loc) {
  if (auto name = mlir::dyn_cast<mlir::NameLoc>(loc))
    return name.getName().str();
  std::string text;
  llvm::raw_string_ostream os(text);
  loc.print(os);
  return text;
}

} // namespace

/// "sm_75,sm_80" -> {75, 80}; "none" -> {}; sorted, without duplicates.
std::optional<std::vector<int>> parseTargets(const std::string &text) {
  std::vector<int> archs;
  if (text == "none")
    return archs;
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find(',', begin);
    std::string item = text.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
    if (item.size() < 5 || item.compare(0, 3, "sm_") != 0 ||
        item.find_first_not_of("0123456789", 3) != std::string::npos || item.size() > 6)
      return std::nullopt;
    int arch = std::stoi(item.substr(3));
    if (arch < 75)
      return std::nullopt;
    archs.push_back(arch);
    if (end == std::string::npos)
      break;
    begin = end + 1;
  }
  std::sort(archs.begin(), archs.end());
  archs.erase(std::unique(archs.begin(), archs.end()), archs.end());
  return archs;
}

/// "1x3x224x224" (sep 'x') or "1,8,32" (sep ','): positive extents, at most
/// 2^31 - 1 each; nullopt when malformed.
std::optional<std::vector<int64_t>> parseExtents(const std::string &text, char sep) {
  std::vector<int64_t> extents;
  size_t begin = 0;
  while (true) {
    size_t end = text.find(sep, begin);
    std::string item = text.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
    if (item.empty() || item.size() > 10 || item.find_first_not_of("0123456789") != std::string::npos)
      return std::nullopt;
    int64_t extent = std::stoll(item);
    if (extent <= 0 || extent > INT32_MAX)
      return std::nullopt;
    extents.push_back(extent);
    if (end == std::string::npos)
      return extents;
    begin = end + 1;
  }
}

int main(int argc, char **argv) {
  CLI::App app{"tessel-compile: compile an ONNX model into a Tessel engine (.tsl)"};
  std::string input, output, emit = "engine";
  tessel::CompileOptions options;
  std::vector<std::string> freeze, inputShapes;
  bool listOps = false;
  int verbosity = 0;
  app.add_option("model", input, "ONNX model (.onnx)");
  app.add_option("-o,--output", output, "engine file to write (.tsl)");
  app.add_option("--precision", options.precision,
                 "fp32, or fp16: f16 storage and Tensor Core math with f32 accumulation, "
                 "numerically sensitive ops in f32 (docs/architecture.md, Precision policy)")
      ->check(CLI::IsMember({"fp16", "fp32"}))
      ->capture_default_str();
  app.add_option("--io-layout", options.ioLayout,
                 "layout of 4-D f32 inputs and outputs: model (as the ONNX model declares, "
                 "NCHW), or nhwc, so that the engine needs no transpose at its boundary")
      ->check(CLI::IsMember({"model", "nhwc"}))
      ->capture_default_str();
  app.add_option("--io-dtype", options.ioDtype,
                 "element type of f32 inputs and outputs: model (as the ONNX model declares), "
                 "or f16, so that an fp16 engine needs no cast at its boundary")
      ->check(CLI::IsMember({"model", "f16"}))
      ->capture_default_str();
  std::string targets = "sm_75,sm_80,sm_90";
  app.add_option("--target", targets,
                 "GPU targets to assemble cubins for, comma-separated (sm_75 and newer; "
                 "PTX for older and newer GPUs is carried too), or 'none' for a CPU-only engine")
      ->capture_default_str();
  app.add_flag("--require-gpu", options.requireGpu,
               "fail (exit 3) when a step of a GPU engine has no GPU kernel, instead of warning "
               "that it runs on the CPU tier");
  std::vector<std::string> fp32Nodes;
  app.add_option("--fp32-nodes", fp32Nodes,
                 "NAME[,NAME...] or @FILE (names one a line): ONNX nodes whose ops stay in f32 "
                 "at fp16, e.g. where tessel-run --check-overflow found f16 overflowing")
      ->delimiter(',')
      ->type_name("NAMES|@FILE");
  std::vector<std::string> customOpFiles;
  app.add_option("--custom-op", customOpFiles,
                 "a custom op's manifest (JSON: its ONNX domain and op type, operands, "
                 "attributes and CUDA C++ kernels, compiled with NVRTC); repeatable")
      ->type_name("FILE");
  app.add_option("--freeze", freeze,
                 "NAME=FILE.pb: replace graph input NAME by a constant TensorProto")
      ->type_name("NAME=FILE");
  app.add_option("--input-shape", inputShapes,
                 "NAME=DIMS (e.g. x=1x3x224x224): fix the dims of graph input NAME; its dynamic "
                 "dims take these extents, its static ones must equal them")
      ->type_name("NAME=DIMS");
  std::string batchList;
  app.add_option("--batch", batchList,
                 "B or B1,B2,...: the extent of every graph input's dynamic first dim; a list "
                 "builds one engine with a plan per batch size (profiles) over one copy of the "
                 "constants")
      ->type_name("B[,B...]");
  app.add_option("--emit", emit, "what to write: engine, import (IR as imported), mlir (IR after the pipeline)")
      ->check(CLI::IsMember({"engine", "import", "mlir"}));
  app.add_flag("--list-ops", listOps, "print the supported ONNX op types and exit");
  app.add_flag("-v,--verbose", verbosity, "more output (-v: pipeline summary, -vv: debug)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return app.exit(e) == 0 ? kOk : kUsage;
  }
  spdlog::set_pattern("%v");
  spdlog::set_level(verbosity >= 2 ? spdlog::level::debug : spdlog::level::info);

  if (listOps) {
    for (const std::string &op : tessel::supportedOnnxOps())
      std::printf("%s\n", op.c_str());
    return kOk;
  }
  if (input.empty() || (emit == "engine" && output.empty())) {
    std::fprintf(stderr, "error: a model and -o OUTPUT are required\n%s",
                 app.help().c_str());
    return kUsage;
  }

  for (const std::string &entry : fp32Nodes) {
    if (entry.empty() || entry[0] != '@') {
      if (!entry.empty())
        options.fp32Nodes.push_back(entry);
      continue;
    }
    std::ifstream file(entry.substr(1));
    if (!file) {
      std::fprintf(stderr, "error: --fp32-nodes: cannot read %s\n", entry.c_str() + 1);
      return kUsage;
    }
    for (std::string line; std::getline(file, line);)
      if (!line.empty())
        options.fp32Nodes.push_back(line);
  }

  if (std::optional<std::vector<int>> parsed = parseTargets(targets)) {
    options.targets = *parsed;
  } else {
    std::fprintf(stderr,
                 "error: --target expects a comma-separated list of sm_XY with XY >= 75 "
                 "(e.g. sm_75,sm_80,sm_90) or 'none', got '%s'\n",
                 targets.c_str());
    return kUsage;
  }

  tessel::custom::CustomOpRegistry customOps;
  for (const std::string &file : customOpFiles) {
    std::string error;
    if (!customOps.load(file, error)) {
      std::fprintf(stderr, "error: --custom-op %s\n", error.c_str());
      return kInvalid;
    }
  }
  options.customOps = &customOps;

  tessel::ImportOptions importOptions;
  importOptions.customOps = &customOps;
  for (const std::string &entry : freeze) {
    size_t eq = entry.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == entry.size()) {
      std::fprintf(stderr, "error: --freeze expects NAME=FILE.pb, got '%s'\n", entry.c_str());
      return kUsage;
    }
    importOptions.frozenInputs.emplace_back(entry.substr(0, eq), entry.substr(eq + 1));
  }

  for (const std::string &entry : inputShapes) {
    size_t eq = entry.find('=');
    std::optional<std::vector<int64_t>> dims;
    if (eq != std::string::npos && eq != 0)
      dims = parseExtents(entry.substr(eq + 1), 'x');
    if (!dims) {
      std::fprintf(stderr, "error: --input-shape expects NAME=DIMS with positive dims "
                           "separated by x (e.g. x=1x3x224x224), got '%s'\n", entry.c_str());
      return kUsage;
    }
    importOptions.inputShapes.emplace_back(entry.substr(0, eq), *dims);
  }
  std::vector<int64_t> batches;
  if (!batchList.empty()) {
    std::optional<std::vector<int64_t>> parsed = parseExtents(batchList, ',');
    std::vector<int64_t> sorted = parsed ? *parsed : std::vector<int64_t>{};
    std::sort(sorted.begin(), sorted.end());
    if (!parsed || std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
      std::fprintf(stderr, "error: --batch expects distinct positive batch sizes separated by "
                           "commas (e.g. 1,8,32), got '%s'\n", batchList.c_str());
      return kUsage;
    }
    batches = *parsed;
    if (batches.size() > 1 && emit != "engine") {
      std::fprintf(stderr, "error: --emit %s takes one batch size, got --batch %s\n",
                   emit.c_str(), batchList.c_str());
      return kUsage;
    }
  }

  mlir::MLIRContext context;
  context.loadDialect<tessel::TesselDialect, mlir::func::FuncDialect>();
  // Diagnostics name the ONNX node: the location of every op is the node.
  mlir::ScopedDiagnosticHandler handler(&context, [](mlir::Diagnostic &diag) {
    const char *severity = diag.getSeverity() == mlir::DiagnosticSeverity::Error ? "error"
                           : diag.getSeverity() == mlir::DiagnosticSeverity::Warning ? "warning"
                                                                                     : "note";
    std::fprintf(stderr, "%s: %s: %s\n", severity, locationText(diag.getLocation()).c_str(),
                 diag.str().c_str());
    return mlir::success();
  });

  auto start = std::chrono::steady_clock::now();
  mlir::OpPrintingFlags flags;
  flags.enableDebugInfo(true, /*prettyForm=*/false);
  // One module per batch profile (one without --batch), each imported with
  // its batch and run through the whole pipeline.
  std::vector<mlir::OwningOpRef<mlir::ModuleOp>> modules;
  size_t importedOps = 0; // the first plan's graph ops at import, for the fusion line
  for (int64_t batch : batches.empty() ? std::vector<int64_t>{0} : batches) {
    importOptions.batch = batch;
    tessel::ImportResult imported = tessel::importOnnxFile(context, input, importOptions);
    if (!imported.module) {
      bool unsupported = imported.failure == tessel::ImportFailure::Unsupported;
      std::fprintf(stderr, "tessel-compile: %s: %s\n", input.c_str(),
                   unsupported ? "the model uses unsupported features (listed above)"
                               : "cannot import the model (see above)");
      return unsupported ? kUnsupported : kInvalid;
    }
    mlir::ModuleOp module = *imported.module;
    if (emit == "import") {
      module.print(llvm::outs(), flags);
      return kOk;
    }
    if (modules.empty())
      module.walk([&](mlir::Operation *op) {
        importedOps += mlir::isa<tessel::TesselDialect>(op->getDialect()) &&
                       !mlir::isa<tessel::ConstantOp>(op);
      });
    if (mlir::failed(tessel::runPipeline(module, options))) {
      std::fprintf(stderr, "tessel-compile: the compile pipeline failed (see above)\n");
      return kInvalid;
    }
    if (emit == "mlir") {
      module.print(llvm::outs(), flags);
      return kOk;
    }
    modules.push_back(std::move(imported.module));
  }
  mlir::ModuleOp module = *modules.front();

  tessel::EngineSummary engineSummary;
  std::vector<mlir::ModuleOp> plans;
  for (const auto &owned : modules)
    plans.push_back(*owned);
  mlir::FailureOr<std::vector<uint8_t>> engine =
      tessel::writeEngine(plans, options, &engineSummary);
  if (mlir::failed(engine)) {
    if (options.requireGpu && !engineSummary.cpuOnlySteps.empty()) { // named above
      std::fprintf(stderr, "tessel-compile: %s: %zu step(s) without a GPU kernel (--require-gpu; "
                           "listed above)\n", input.c_str(), engineSummary.cpuOnlySteps.size());
      return kUnsupported;
    }
    std::fprintf(stderr, "tessel-compile: cannot write the engine (see above)\n");
    return kInvalid;
  }
  std::ofstream file(output, std::ios::binary | std::ios::trunc);
  file.write(reinterpret_cast<const char *>(engine->data()), engine->size());
  file.close();
  if (!file) {
    std::fprintf(stderr, "error: cannot write '%s'\n", output.c_str());
    return kInvalid;
  }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  // The report: steps per precision, per op type and precision (-v), per
  // ONNX node (-vv). tessel::describePrecision reads the policy the
  // lower-precision pass applied.
  std::map<std::pair<std::string, std::string>, int> opCounts;
  std::map<std::string, int> precisionCounts;
  std::vector<std::string> nodes;
  module.walk([&](mlir::Operation *op) {
    if (!mlir::isa<tessel::TesselDialect>(op->getDialect()) || mlir::isa<tessel::ConstantOp>(op))
      return;
    std::string name = op->getName().stripDialect().str();
    std::string precision = tessel::describePrecision(op);
    ++opCounts[{name, precision}];
    ++precisionCounts[mlir::isa<tessel::CastOp>(op) ? "cast" : precision];
    nodes.push_back(fmt::format("    {:<32} {:<20} {}", locationText(op->getLoc()), name, precision));
  });
  spdlog::info("tessel-compile {} -> {}", input, output);
  spdlog::info("  options: precision={} targets={}", options.precision, targets);
  if (batches.size() > 1) {
    std::string list;
    for (int64_t batch : batches)
      list += (list.empty() ? "" : ", ") + std::to_string(batch);
    spdlog::info("  profiles: {} (batch {}); the figures below are the first's", batches.size(),
                 list);
  }
  spdlog::info("  io: layout={} dtype={}", options.ioLayout, options.ioDtype);
  std::string byPrecision;
  for (const auto &[precision, count] : precisionCounts)
    byPrecision += (byPrecision.empty() ? "" : ", ") + std::to_string(count) + " " + precision;
  spdlog::info("  steps: {} ({})", nodes.size(), byPrecision);
  // What fusion did: the ONNX graph's ops as imported, the ops the passes
  // leave, and the engine's steps (a reshape that aliases its input is no
  // step).
  size_t engineSteps = 0;
  for (const auto &[tier, count] : engineSummary.stepsByBestTier)
    engineSteps += static_cast<size_t>(count);
  spdlog::info("  fusion: {} ops at import -> {} after the passes -> {} engine steps", importedOps,
               nodes.size(), engineSteps);
  if (verbosity >= 1) {
    spdlog::info("    {:<20} {:<22} {}", "op", "precision", "count");
    for (const auto &[key, count] : opCounts)
      spdlog::info("    {:<20} {:<22} {}", key.first, key.second, count);
  }
  for (const std::string &line : nodes)
    spdlog::debug("{}", line);
  // Kernels: the best tier each step has, and the steps a GPU run takes on
  // the CPU (no GPU kernel for them).
  std::string byTier;
  for (const char *tier : {"tc-sm90", "tc-sm80", "tc-sm70", "simt", "cpu"}) {
    auto it = engineSummary.stepsByBestTier.find(tier);
    if (it != engineSummary.stepsByBestTier.end())
      byTier += (byTier.empty() ? "" : ", ") + std::to_string(it->second) + " " + tier;
  }
  std::string registers;
  if (engineSummary.maxRegisters > 0)
    registers = fmt::format("; GEMM kernels: <= {} registers, {}", engineSummary.maxRegisters,
                            engineSummary.spillingKernels.empty()
                                ? std::string("no spills")
                                : std::to_string(engineSummary.spillingKernels.size()) +
                                      " spilling");
  spdlog::info("  kernels: {} ({} module(s), {:.2f} MiB, {:.2f} MiB stored, {:.2f} s{})", byTier,
               engineSummary.modules, engineSummary.moduleBytes / 1048576.0,
               engineSummary.moduleStoredBytes / 1048576.0, engineSummary.kernelSeconds,
               registers);
  for (const std::string &kernel : engineSummary.spillingKernels)
    spdlog::info("    spills to local memory: {}", kernel);
  if (!engineSummary.cpuOnlySteps.empty()) {
    spdlog::info("  GPU fallbacks to the CPU tier: {} step(s){}",
                 engineSummary.cpuOnlySteps.size(), verbosity >= 1 ? ":" : " (-v lists them)");
    if (verbosity >= 1)
      for (const std::string &step : engineSummary.cpuOnlySteps)
        spdlog::info("    {}", step);
  }
  spdlog::info("  engine: {} bytes, compiled in {:.3f} s", engine->size(), seconds);
  return kOk;
}
