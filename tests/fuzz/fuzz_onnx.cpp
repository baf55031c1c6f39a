//===- fuzz_onnx.cpp - libFuzzer harness: ONNX bytes in, no crash out -----===//
//
// Compiles the input as tessel-compile does with `--target none`: ONNX
// import (protobuf, checker, shape inference, the op table), the whole
// pipeline, then the engine writer. Every outcome is a diagnostic or an
// engine; what must never happen is a crash, a hang or a sanitizer report
// (built with ASan + UBSan). An engine the compiler writes must open in the
// runtime (its verifier): a compiler that writes an engine the runtime
// refuses is a bug, and the harness traps on it.
//
// The mutator (LLVMFuzzerCustomMutator) is structure-aware: an input that
// parses as a ModelProto gets one model-level edit (an attribute's value, a
// dim of a graph input or an initializer, an op type, a node's inputs or
// outputs, an element type, the opset, a node removed or duplicated, an
// initializer's bytes cut), as issue 17's hand-made baseline did; otherwise,
// and in a quarter of the cases, libFuzzer's byte mutations.
//
//===----------------------------------------------------------------------===//
#include "EngineWriter.h"
#include "Importer.h"
#include "Pipeline.h"
#include "TesselDialect.h"

#include "tessel_runtime.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include "onnx/onnx_pb.h"

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace {

/// Where the input is written for the importer (which reads files, with
/// external data next to them): a directory of this process's own.
const std::string &modelPath() {
  static const std::string path = [] {
    std::string dir = (std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") +
                      std::string("/tessel-fuzz-onnx-") + std::to_string(::getpid());
    std::string command = "mkdir -p '" + dir + "'";
    if (std::system(command.c_str()) != 0)
      std::abort();
    return dir + "/model.onnx";
  }();
  return path;
}

// Op types a node may be changed to: a spread over the importer's families.
const char *const kOpTypes[] = {
    "Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool", "Gemm", "MatMul",
    "Add", "Mul", "Div", "Relu", "Sigmoid", "Softmax", "LayerNormalization", "BatchNormalization",
    "Reshape", "Transpose", "Concat", "Slice", "Gather", "Split", "Squeeze", "Unsqueeze",
    "ReduceMean", "ReduceSum", "ArgMax", "TopK", "Resize", "Pad", "Expand", "Where", "Cast",
    "Shape", "ConstantOfShape", "Range", "NonMaxSuppression", "CumSum", "Einsum", "Identity",
    "Flatten", "Tile", "ScatterND", "GatherND", "DepthToSpace", "InstanceNormalization"};

// Values a mutated integer takes: edges of every check an import makes.
const int64_t kInts[] = {0, 1, -1, 2, 3, -2, 7, 16, 255, 65536, int64_t(1) << 31,
                         -(int64_t(1) << 31), int64_t(1) << 40, INT64_MAX, INT64_MIN};

template <typename T> T pick(std::mt19937 &rng, const T *values, size_t count) {
  return values[rng() % count];
}

// Wrapping (unsigned) arithmetic: the mutator itself must not overflow.
int64_t mutateInt(std::mt19937 &rng, int64_t value) {
  const uint64_t bits = static_cast<uint64_t>(value);
  switch (rng() % 3) {
  case 0: return pick(rng, kInts, std::size(kInts));
  case 1: return static_cast<int64_t>(bits + rng() % 5 - 2);
  default: return static_cast<int64_t>(0 - bits);
  }
}

/// One model-level edit; false when the model has nothing it could edit.
bool mutateModel(onnx::ModelProto &model, std::mt19937 &rng) {
  onnx::GraphProto &graph = *model.mutable_graph();
  const int nodes = graph.node_size();
  switch (rng() % 10) {
  case 0: { // an attribute's value
    if (nodes == 0)
      return false;
    onnx::NodeProto &node = *graph.mutable_node(rng() % nodes);
    if (node.attribute_size() == 0)
      return false;
    onnx::AttributeProto &attr = *node.mutable_attribute(rng() % node.attribute_size());
    if (attr.ints_size() > 0) {
      int i = rng() % attr.ints_size();
      if (rng() % 4 == 0)
        attr.mutable_ints()->RemoveLast();
      else
        attr.set_ints(i, mutateInt(rng, attr.ints(i)));
    } else if (attr.has_i()) {
      attr.set_i(mutateInt(rng, attr.i()));
    } else if (attr.has_f()) {
      const float floats[] = {0.0f, -1.0f, 1e30f, -1e-30f, NAN, INFINITY};
      attr.set_f(pick(rng, floats, std::size(floats)));
    } else if (attr.has_s()) {
      const char *strings[] = {"", "NOTSET", "SAME_UPPER", "VALID", "linear", "cubic", "xyz"};
      attr.set_s(pick(rng, strings, std::size(strings)));
    } else {
      attr.set_type(static_cast<onnx::AttributeProto::AttributeType>(rng() % 14));
    }
    return true;
  }
  case 1: { // a dim of a graph input
    if (graph.input_size() == 0)
      return false;
    auto *type = graph.mutable_input(rng() % graph.input_size())->mutable_type();
    auto *shape = type->mutable_tensor_type()->mutable_shape();
    if (shape->dim_size() == 0 || rng() % 5 == 0) {
      shape->add_dim()->set_dim_value(pick(rng, kInts, std::size(kInts)));
      return true;
    }
    auto *dim = shape->mutable_dim(rng() % shape->dim_size());
    if (rng() % 4 == 0)
      dim->set_dim_param("N");
    else
      dim->set_dim_value(mutateInt(rng, dim->dim_value()));
    return true;
  }
  case 2: { // an initializer's dims or bytes
    if (graph.initializer_size() == 0)
      return false;
    onnx::TensorProto &tensor = *graph.mutable_initializer(rng() % graph.initializer_size());
    if (tensor.dims_size() > 0 && rng() % 2) {
      int d = rng() % tensor.dims_size();
      tensor.set_dims(d, mutateInt(rng, tensor.dims(d)));
    } else if (!tensor.raw_data().empty()) {
      tensor.mutable_raw_data()->resize(rng() % tensor.raw_data().size());
    } else {
      tensor.set_data_type(static_cast<int32_t>(rng() % 17));
    }
    return true;
  }
  case 3: { // an op type
    if (nodes == 0)
      return false;
    graph.mutable_node(rng() % nodes)->set_op_type(pick(rng, kOpTypes, std::size(kOpTypes)));
    return true;
  }
  case 4: { // a node's input: another value, empty (absent), dropped or added
    if (nodes == 0)
      return false;
    onnx::NodeProto &node = *graph.mutable_node(rng() % nodes);
    std::vector<std::string> names;
    for (const auto &input : graph.input())
      names.push_back(input.name());
    for (const auto &n : graph.node())
      for (const auto &output : n.output())
        names.push_back(output);
    if (node.input_size() == 0 || rng() % 4 == 0) {
      node.add_input(names.empty() ? "" : names[rng() % names.size()]);
    } else if (rng() % 3 == 0) {
      node.mutable_input()->RemoveLast();
    } else {
      node.set_input(rng() % node.input_size(), names.empty() || rng() % 5 == 0
                                                    ? std::string()
                                                    : names[rng() % names.size()]);
    }
    return true;
  }
  case 5: { // a node's output renamed or added
    if (nodes == 0)
      return false;
    onnx::NodeProto &node = *graph.mutable_node(rng() % nodes);
    if (node.output_size() == 0 || rng() % 2)
      node.add_output("extra" + std::to_string(rng() % 4));
    else
      node.set_output(rng() % node.output_size(), graph.input_size() > 0
                                                      ? graph.input(0).name()
                                                      : std::string("x"));
    return true;
  }
  case 6: { // an element type of a graph input or output
    auto *values = rng() % 2 ? graph.mutable_input() : graph.mutable_output();
    if (values->empty())
      return false;
    values->Mutable(rng() % values->size())
        ->mutable_type()
        ->mutable_tensor_type()
        ->set_elem_type(static_cast<int32_t>(rng() % 17));
    return true;
  }
  case 7: { // the opset
    if (model.opset_import_size() == 0)
      return false;
    const int64_t versions[] = {1, 6, 7, 9, 10, 11, 12, 13, 17, 18, 19, 21, 23, 99};
    model.mutable_opset_import(rng() % model.opset_import_size())
        ->set_version(pick(rng, versions, std::size(versions)));
    return true;
  }
  case 8: { // a node removed or duplicated
    if (nodes == 0)
      return false;
    int i = rng() % nodes;
    if (rng() % 2) {
      *graph.add_node() = graph.node(i);
    } else {
      graph.mutable_node()->SwapElements(i, nodes - 1);
      graph.mutable_node()->RemoveLast();
    }
    return true;
  }
  default: { // a graph output dropped, or one more naming a node's value
    if (graph.output_size() > 1 && rng() % 2) {
      graph.mutable_output()->RemoveLast();
      return true;
    }
    if (nodes == 0)
      return false;
    const onnx::NodeProto &node = graph.node(rng() % nodes);
    if (node.output_size() == 0)
      return false;
    std::string name = node.output(0);
    graph.add_output()->set_name(name);
    return true;
  }
  }
}

} // namespace

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t maxSize);

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t maxSize,
                                          unsigned int seed) {
  std::mt19937 rng(seed);
  onnx::ModelProto model;
  if (rng() % 4 != 0 && model.ParseFromArray(data, static_cast<int>(size))) {
    for (int attempt = 0; attempt < 4; ++attempt) {
      if (!mutateModel(model, rng))
        continue;
      std::string bytes;
      if (model.SerializeToString(&bytes) && bytes.size() <= maxSize) {
        std::memcpy(data, bytes.data(), bytes.size());
        return bytes.size();
      }
      break;
    }
  }
  return LLVMFuzzerMutate(data, size, maxSize);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string &path = modelPath();
  if (FILE *file = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, file);
    std::fclose(file);
  } else {
    std::abort();
  }
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  context.loadDialect<tessel::TesselDialect, mlir::func::FuncDialect>();
  mlir::ScopedDiagnosticHandler quiet(&context, [](mlir::Diagnostic &) {
    return mlir::success();
  });
  // A loop in ONNX's inference ends as a diagnostic well inside libFuzzer's
  // -timeout; a hang anywhere else is still the fuzzer's to report.
  tessel::ImportOptions importOptions;
  importOptions.onnxLibrarySeconds = 5;
  tessel::ImportResult imported = tessel::importOnnxFile(context, path, importOptions);
  if (!imported.module)
    return 0;
  tessel::CompileOptions options;
  options.targets = {}; // --target none: a CPU engine, no GPU kernels compiled
  options.precision = size % 2 ? "fp16" : "fp32";
  if (mlir::failed(tessel::runPipeline(*imported.module, options)))
    return 0;
  mlir::ModuleOp plan = *imported.module;
  mlir::FailureOr<std::vector<uint8_t>> engine = tessel::writeEngine({plan}, options);
  if (mlir::failed(engine))
    return 0;
  tessel_engine_t *opened = nullptr;
  tessel_status_t status = tessel_engine_open_memory(engine->data(), engine->size(), &opened);
  if (status) {
    std::fprintf(stderr, "the runtime refuses an engine the compiler wrote: %s\n",
                 tessel_status_message(status));
    std::abort();
  }
  tessel_engine_release(opened);
  return 0;
}
