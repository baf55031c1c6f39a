//===- ModelLoader.cpp - an ONNX model read, completed and checked --------===//
#include "ModelLoader.h"

#include "OpTable.h"
#include "TensorProto.h"
#include "Tensors.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include "onnx/checker.h"
#include "onnx/version_converter/convert.h"
#include "onnx/defs/schema.h"
#include "onnx/shape_inference/implementation.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <optional>
#include <set>

using namespace mlir;

namespace tessel::importer {
namespace {

//===----------------------------------------------------------------------===//
// Loading: protobuf, external data
//===----------------------------------------------------------------------===//

/// Replaces the external data of `tensor` by raw_data read from `baseDir`.
LogicalResult loadExternalData(onnx::TensorProto &tensor, StringRef baseDir,
                               std::string &error) {
  std::string location;
  std::optional<uint64_t> offset, length;
  for (const auto &entry : tensor.external_data()) {
    try {
      if (entry.key() == "location")
        location = entry.value();
      else if (entry.key() == "offset")
        offset = std::stoull(entry.value());
      else if (entry.key() == "length")
        length = std::stoull(entry.value());
    } catch (const std::exception &) {
      error = "external data entry '" + entry.key() + "' is not a number: '" +
              entry.value() + "'";
      return failure();
    }
  }
  if (location.empty()) {
    error = "external data has no location";
    return failure();
  }
  // The data must lie beside the model: no absolute paths, no '..'.
  if (llvm::sys::path::is_absolute(location) ||
      llvm::any_of(llvm::make_range(llvm::sys::path::begin(location),
                                    llvm::sys::path::end(location)),
                   [](StringRef c) { return c == ".."; })) {
    error = "external data location '" + location +
            "' must be a relative path inside the model's directory";
    return failure();
  }
  SmallString<256> path(baseDir);
  llvm::sys::path::append(path, location);
  uint64_t fileSize = 0;
  if (llvm::sys::fs::file_size(path, fileSize)) {
    error = "cannot read external data file '" + std::string(path) + "'";
    return failure();
  }
  uint64_t start = offset.value_or(0);
  if (start > fileSize) {
    error = "external data offset " + std::to_string(start) +
            " is past the end of '" + std::string(path) + "' (" +
            std::to_string(fileSize) + " bytes)";
    return failure();
  }
  uint64_t size = length.value_or(fileSize - start);
  if (size > fileSize - start) {
    error = "external data [" + std::to_string(start) + ", " +
            std::to_string(start + size) + ") is outside '" +
            std::string(path) + "' (" + std::to_string(fileSize) + " bytes)";
    return failure();
  }
  auto buffer = llvm::MemoryBuffer::getFileSlice(path, size, start,
                                                 /*IsVolatile=*/false);
  if (!buffer) {
    error = "cannot read external data file '" + std::string(path) + "'";
    return failure();
  }
  tensor.set_raw_data((*buffer)->getBufferStart(), (*buffer)->getBufferSize());
  tensor.clear_external_data();
  tensor.set_data_location(onnx::TensorProto::DEFAULT);
  return success();
}

/// Every tensor of the main graph: initializers and node attribute tensors.
template <typename Fn> void forEachTensor(onnx::GraphProto &graph, Fn fn) {
  for (auto &tensor : *graph.mutable_initializer())
    fn(tensor);
  for (auto &node : *graph.mutable_node())
    for (auto &attr : *node.mutable_attribute()) {
      if (attr.has_t())
        fn(*attr.mutable_t());
      for (auto &tensor : *attr.mutable_tensors())
        fn(tensor);
    }
}

/// Where `model` first uses a data type newer than the ONNX library here
/// (TensorProto.h, kFirstNewerDataType) in its main graph: a value's type,
/// a tensor, or a node's target type attribute ("to", "dtype",
/// "output_dtype"); "" if nowhere.
std::string newerDataTypeUse(const onnx::ModelProto &model) {
  auto newer = [](int64_t type) { return type >= kFirstNewerDataType; };
  auto name = [](int64_t type) { return std::string(onnxTypeName(static_cast<int32_t>(type))); };
  const onnx::GraphProto &graph = model.graph();
  for (const auto *values : {&graph.input(), &graph.output(), &graph.value_info()})
    for (const auto &value : *values)
      if (value.type().has_tensor_type() && newer(value.type().tensor_type().elem_type()))
        return "element type " + name(value.type().tensor_type().elem_type()) + " of '" +
               value.name() + "'";
  for (const auto &tensor : graph.initializer())
    if (newer(tensor.data_type()))
      return "element type " + name(tensor.data_type()) + " of initializer '" + tensor.name() +
             "'";
  for (const auto &node : graph.node())
    for (const auto &attr : node.attribute()) {
      const bool typeAttr = attr.name() == "to" || attr.name() == "dtype" ||
                            attr.name() == "output_dtype";
      if ((typeAttr && attr.type() == onnx::AttributeProto::INT && newer(attr.i())) ||
          (attr.has_t() && newer(attr.t().data_type())))
        return "element type " + name(typeAttr ? attr.i() : attr.t().data_type()) +
               " in attribute '" + attr.name() + "' of node '" + node.name() + "' (" +
               node.op_type() + ")";
    }
  return "";
}

bool parseProtoFile(const std::string &path, google::protobuf::Message &proto) {
  std::ifstream file(path, std::ios::binary);
  return file && proto.ParseFromIstream(&file);
}

//===----------------------------------------------------------------------===//
// ONNX checker and shape inference, in a child process
//===----------------------------------------------------------------------===//

/// The private domain of the nodes set aside in a library view.
constexpr const char *kSetAsideDomain = "ai.tessel.newer";

/// Turns a copy of a model of an opset newer than the ONNX library here
/// (Debian's 1.12: default-domain opsets to kLibraryOpset) into what the
/// library can check and infer: the default-domain opset lowered to the
/// library's, and every node that the library's
/// schema at that opset rejects (an op revised since, with new inputs or
/// attributes, or one it does not know) moved to a private domain, which
/// the checker and shape inference pass over. Such a node's outputs get no
/// inferred type; the op table's handler for the model's own opset computes
/// and checks them (OpTable.h). The other nodes are checked and inferred as
/// before: ops that ONNX revised since only by new element types have the
/// same semantics at the library's opset.
void libraryView(onnx::ModelProto &view) {
  std::unordered_map<std::string, int> opsets;
  for (auto &entry : *view.mutable_opset_import()) {
    if (isDefaultDomain(entry.domain()) && entry.version() > kLibraryOpset)
      entry.set_version(kLibraryOpset);
    opsets[entry.domain()] = static_cast<int>(entry.version());
  }
  onnx::checker::CheckerContext ctx;
  ctx.set_ir_version(static_cast<int>(view.ir_version()));
  ctx.set_opset_imports(opsets);
  onnx::checker::LexicalScopeContext scope;
  onnx::GraphProto &graph = *view.mutable_graph();
  for (const auto &input : graph.input())
    scope.add(input.name());
  for (const auto &init : graph.initializer())
    scope.add(init.name());
  bool setAside = false;
  for (auto &node : *graph.mutable_node()) {
    if (isDefaultDomain(node.domain())) {
      try {
        onnx::checker::check_node(node, ctx, scope);
      } catch (const std::exception &) {
        node.set_domain(kSetAsideDomain);
        setAside = true;
      }
    }
    for (const std::string &output : node.output())
      scope.add(output);
  }
  if (setAside) {
    auto *entry = view.add_opset_import();
    entry->set_domain(kSetAsideDomain);
    entry->set_version(1);
  }
}

/// Whether `model`'s default-domain opset is newer than the ONNX library
/// here knows.
bool newerThanLibrary(const onnx::ModelProto &model) {
  return llvm::any_of(model.opset_import(), [](const auto &entry) {
    return isDefaultDomain(entry.domain()) && entry.version() > kLibraryOpset;
  });
}

/// Runs the ONNX checker, then shape inference with data propagation (which
/// fills in `model`'s value_info and output types, and `propagated`); for a
/// model newer than the library, on its library view. Returns the error, or
/// "" when the model is valid.
std::string checkAndInfer(onnx::ModelProto &model, PropagatedData &propagated) {
  // Newer ONNX writes newer IR versions (10 for ONNX 1.16) also for old
  // opsets; what IR 9 and 10 added (float8 and 4-bit types) the loader has
  // refused already, so the library checks such a model as IR 8.
  if (model.ir_version() > onnx::IR_VERSION)
    model.set_ir_version(onnx::IR_VERSION);
  std::optional<onnx::ModelProto> view;
  if (newerThanLibrary(model)) {
    view.emplace(model);
    libraryView(*view);
    // What the model declares stays the model's: the view's outputs and
    // value_info keep their ranks but no dims, so that inference cannot
    // contradict them with the library's older rules (1.12's ceil_mode
    // windows); what it infers fills in the rest.
    auto unknownDims = [](onnx::ValueInfoProto &value) {
      if (value.type().has_tensor_type() && value.type().tensor_type().has_shape())
        for (auto &dim : *value.mutable_type()->mutable_tensor_type()->mutable_shape()
                              ->mutable_dim())
          dim.clear_dim_value();
    };
    onnx::GraphProto &graph = *view->mutable_graph();
    for (auto &value : *graph.mutable_output())
      unknownDims(value);
    graph.clear_value_info();
  }
  onnx::ModelProto &checked = view ? *view : model;
  try {
    onnx::checker::check_model(checked);
  } catch (const std::exception &e) {
    return std::string("ONNX checker: ") + e.what();
  }
  try {
    // Strict on what the library knows; on a view, what inference cannot
    // type (an op revised since with new element types: IsInf-20 on f16,
    // Range-27; the pools' ceil_mode fixed after 1.12) is left to the
    // handlers, which compute and check every result type.
    // Data propagation only on what the library knows: through a node set
    // aside, 1.12's propagation reads types that are not there and crashes.
    onnx::ShapeInferenceOptions options(/*check_type=*/!view, /*error_mode=*/view ? 0 : 1,
                                        /*enable_data_propagation=*/!view);
    onnx::shape_inference::InferShapes(
        checked, onnx::OpSchemaRegistry::Instance(), options, &propagated);
  } catch (const std::exception &e) {
    return std::string("ONNX shape inference: ") + e.what();
  }
  if (view) {
    onnx::GraphProto &graph = *model.mutable_graph();
    std::set<std::string> declared;
    for (const auto *values : {&graph.input(), &graph.output(), &graph.value_info()})
      for (const auto &value : *values)
        declared.insert(value.name());
    for (const auto &value : view->graph().value_info())
      if (!declared.count(value.name()))
        *graph.add_value_info() = value;
  }
  return "";
}

bool writeAll(int fd, const std::string &bytes) {
  for (size_t done = 0; done < bytes.size();) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    done += n;
  }
  return true;
}

/// The graph inputs that are not initializers (IR 3 lists both).
std::vector<onnx::ValueInfoProto *> runtimeInputs(onnx::GraphProto &graph) {
  std::set<std::string> initializers;
  for (const auto &tensor : graph.initializer())
    initializers.insert(tensor.name());
  std::vector<onnx::ValueInfoProto *> inputs;
  for (auto &input : *graph.mutable_input())
    if (!initializers.count(input.name()))
      inputs.push_back(&input);
  return inputs;
}

/// "x [N,3,224,224], mask [1,128]": the inputs and their declared shapes.
std::string inputList(const std::vector<onnx::ValueInfoProto *> &inputs) {
  std::string names;
  for (const onnx::ValueInfoProto *in : inputs) {
    names += (names.empty() ? "" : ", ") + in->name();
    if (in->type().tensor_type().has_shape())
      names += " " + shapeText(in->type().tensor_type().shape());
  }
  return names;
}

/// Applies --input-shape and --batch to the graph's declared input types,
/// before the checker and shape inference, which then propagate them (a
/// symbolic dim the model declares downstream takes the inferred extent).
LogicalResult fixInputShapes(Location fileLoc, const ImportOptions &options,
                             onnx::GraphProto &graph) {
  std::vector<onnx::ValueInfoProto *> inputs = runtimeInputs(graph);
  for (const auto &[name, dims] : options.inputShapes) {
    auto input = llvm::find_if(inputs, [&, &name = name](const onnx::ValueInfoProto *in) {
      return in->name() == name;
    });
    if (input == inputs.end())
      return emitError(fileLoc) << "--input-shape " << name
                                << ": not a graph input (inputs: " << inputList(inputs) << ")";
    if (!(*input)->type().has_tensor_type())
      return emitError(fileLoc) << "--input-shape " << name << ": the input is not a tensor";
    auto &type = *(*input)->mutable_type()->mutable_tensor_type();
    if (type.has_shape() && type.shape().dim_size() != static_cast<int>(dims.size()))
      return emitError(fileLoc) << "--input-shape " << name << "=" << shapeText(dims)
                                << ": the input has rank " << type.shape().dim_size() << " "
                                << shapeText(type.shape());
    for (size_t d = 0; type.has_shape() && d < dims.size(); ++d)
      if (type.shape().dim(d).has_dim_value() && type.shape().dim(d).dim_value() != dims[d])
        return emitError(fileLoc) << "--input-shape " << name << "=" << shapeText(dims)
                                  << ": dim " << d << " of the input is static, "
                                  << type.shape().dim(d).dim_value() << " "
                                  << shapeText(type.shape());
    type.mutable_shape()->clear_dim();
    for (int64_t extent : dims)
      type.mutable_shape()->add_dim()->set_dim_value(extent);
  }
  if (options.batch <= 0)
    return success();
  bool fixed = false;
  for (onnx::ValueInfoProto *input : inputs) {
    if (!input->type().has_tensor_type() || !input->type().tensor_type().has_shape() ||
        input->type().tensor_type().shape().dim_size() == 0 ||
        input->type().tensor_type().shape().dim(0).has_dim_value())
      continue;
    auto *dim = input->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0);
    dim->clear_dim_param();
    dim->set_dim_value(options.batch);
    fixed = true;
  }
  if (!fixed)
    return emitError(fileLoc) << "--batch: no graph input has a dynamic first dim (inputs: "
                              << inputList(inputs) << ")";
  return success();
}

/// Rejects a graph input whose static dims are beyond what tessel takes,
/// before ONNX's shape inference sees them: its inference builds types from
/// them (ConstantOfShape of a shape operand declared 2^40 long: a rank-2^40
/// type) and would not return.
LogicalResult checkInputExtents(Location fileLoc, onnx::GraphProto &graph) {
  for (const onnx::ValueInfoProto *input : runtimeInputs(graph)) {
    if (!input->type().tensor_type().has_shape())
      continue;
    SmallVector<int64_t> known;
    for (const auto &dim : input->type().tensor_type().shape().dim())
      if (dim.has_dim_value())
        known.push_back(dim.dim_value());
    if (!isSupportedShape(known))
      return emitError(fileLoc) << "graph input '" << input->name() << "' has shape "
                                << shapeText(input->type().tensor_type().shape())
                                << ", beyond " << kMaxExtent << " per dim or "
                                << kMaxElements << " elements";
  }
  return success();
}

} // namespace

bool isDefaultDomain(const std::string &domain) {
  return domain.empty() || domain == "ai.onnx";
}

LogicalResult loadModel(MLIRContext *ctx, const std::string &path,
                        const ImportOptions &options, onnx::ModelProto &model,
                        bool &unsupported) {
  Location fileLoc = NameLoc::get(StringAttr::get(ctx, path));
  if (!llvm::sys::fs::exists(path))
    return emitError(fileLoc) << "cannot open ONNX model " << path;
  if (!parseProtoFile(path, model))
    return emitError(fileLoc) << "cannot parse ONNX model " << path;
  if (!model.has_graph())
    return emitError(fileLoc) << "ONNX model " << path << " has no graph";

  // Opsets first: a newer model gets 'unsupported', not a checker error.
  // (Opsets the ONNX library here does not know are checked on a library
  // view, checkAndInfer.)
  for (const auto &entry : model.opset_import()) {
    if (!isDefaultDomain(entry.domain()) ||
        (entry.version() >= 1 && entry.version() <= kMaxOpset))
      continue;
    unsupported = true;
    return emitError(fileLoc)
           << "unsupported: ONNX model " << path << " uses opset "
           << entry.version() << " of the default domain (re-export it with "
           << "opset " << kMinOpset << " to " << kMaxOpset << ")";
  }

  // Element types newer than the ONNX library: unsupported, before its
  // checker would call them invalid.
  if (std::string use = newerDataTypeUse(model); !use.empty()) {
    unsupported = true;
    return emitError(fileLoc) << "unsupported: ONNX model " << path << " uses " << use
                              << " (tessel has no float8, 4-bit or 2-bit element types)";
  }

  SmallString<256> modelDir(path);
  llvm::sys::path::remove_filename(modelDir);
  onnx::GraphProto &graph = *model.mutable_graph();
  std::string error;
  bool ok = true;
  forEachTensor(graph, [&](onnx::TensorProto &tensor) {
    if (ok && tensor.data_location() == onnx::TensorProto::EXTERNAL &&
        failed(loadExternalData(tensor, modelDir, error))) {
      emitError(fileLoc) << "tensor '" << tensor.name() << "': " << error;
      ok = false;
    }
  });
  if (!ok)
    return failure();

  for (const auto &[name, file] : options.frozenInputs) {
    auto input =
        llvm::find_if(graph.input(), [&, &name = name](const auto &in) {
          return in.name() == name;
        });
    if (input == graph.input().end()) {
      std::string names;
      for (const auto &in : graph.input())
        names += (names.empty() ? "" : ", ") + in.name();
      return emitError(fileLoc)
             << "cannot freeze '" << name
             << "': it is not a graph input (inputs: " << names << ")";
    }
    onnx::TensorProto tensor;
    if (!parseProtoFile(file, tensor))
      return emitError(fileLoc) << "cannot parse TensorProto file " << file
                                << " for frozen input '" << name << "'";
    SmallString<256> tensorDir(file);
    llvm::sys::path::remove_filename(tensorDir);
    if (tensor.data_location() == onnx::TensorProto::EXTERNAL &&
        failed(loadExternalData(tensor, tensorDir, error)))
      return emitError(fileLoc) << "frozen input '" << name << "': " << error;
    tensor.set_name(name);
    const auto &declared = input->type().tensor_type();
    if (declared.elem_type() != tensor.data_type())
      return emitError(fileLoc)
             << "frozen input '" << name << "' is "
             << onnxTypeName(tensor.data_type()) << ", the graph declares "
             << onnxTypeName(declared.elem_type());
    if (declared.has_shape()) {
      bool matches = declared.shape().dim_size() == tensor.dims_size();
      for (int d = 0; matches && d < tensor.dims_size(); ++d)
        matches = !declared.shape().dim(d).has_dim_value() ||
                  declared.shape().dim(d).dim_value() == tensor.dims(d);
      if (!matches)
        return emitError(fileLoc)
               << "frozen input '" << name << "' has shape "
               << shapeText(SmallVector<int64_t>(tensor.dims().begin(),
                                                 tensor.dims().end()))
               << ", the graph declares " << shapeText(declared.shape());
    }
    auto existing = llvm::find_if(
        *graph.mutable_initializer(),
        [&, &name = name](const auto &t) { return t.name() == name; });
    if (existing != graph.mutable_initializer()->end())
      *existing = tensor;
    else
      *graph.add_initializer() = tensor;
    // IR version 3 and older list every initializer among the inputs.
    if (model.ir_version() >= 4)
      graph.mutable_input()->erase(input);
  }
  if (failed(fixInputShapes(fileLoc, options, graph)))
    return failure();
  return checkInputExtents(fileLoc, graph);
}

/// Runs `work` in a child process and returns the bytes it returns, or
/// nothing when the child dies or runs past `seconds` (`crash` then says
/// which: "crashed (Segmentation fault)", "ran past its limit of 300 s";
/// left as the caller set it where the child exited with an error). ONNX
/// 1.12's inference functions and version adapters crash on some malformed
/// nodes (SIGSEGV in LayerNormalization's inference for an
/// out-of-range axis, SIGFPE in DepthToSpace's when blocksize^2 overflows)
/// and loop on others; isolated, either becomes a diagnostic instead of
/// taking the compiler down or hanging it. Where the process cannot fork,
/// `work` runs in this one.
std::optional<std::string> runIsolated(llvm::function_ref<std::string()> work,
                                       unsigned seconds, std::string &crash) {
  int fds[2];
  if (::pipe(fds) != 0)
    return work();
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return work();
  }
  if (pid == 0) {
    ::close(fds[0]);
    // A crash must end the child, not run the parent's crash handlers.
    for (int sig : {SIGSEGV, SIGFPE, SIGBUS, SIGILL, SIGABRT, SIGALRM})
      std::signal(sig, SIG_DFL);
    ::alarm(seconds);
    bool sent = writeAll(fds[1], work());
    ::_exit(sent ? 0 : 1);
  }
  ::close(fds[1]);
  std::string bytes;
  char buffer[1 << 16];
  for (;;) {
    ssize_t n = ::read(fds[0], buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    bytes.append(buffer, n);
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
      crash = "ran past its limit of " + std::to_string(seconds) + " s";
    else if (WIFSIGNALED(status))
      crash = std::string("crashed (") + ::strsignal(WTERMSIG(status)) + ")";
    return std::nullopt;
  }
  return bytes;
}

/// checkAndInfer in a child process. The child sends back what inference
/// found: the graph's value_info and output types, and the propagated data
/// (as inputs of a graph whose shapes hold it).
std::string checkAndInferIsolated(onnx::ModelProto &model,
                                  PropagatedData &propagated, unsigned seconds) {
  std::string crash = "crashed"; // runIsolated says how the child ended
  std::optional<std::string> bytes = runIsolated(
      [&] {
        onnx::ModelProto envelope;
        envelope.set_doc_string(checkAndInfer(model, propagated));
        onnx::GraphProto &found = *envelope.mutable_graph();
        *found.mutable_value_info() = model.graph().value_info();
        *found.mutable_output() = model.graph().output();
        for (const auto &[name, data] : propagated) {
          auto *value = found.add_input();
          value->set_name(name);
          *value->mutable_type()->mutable_tensor_type()->mutable_shape() = data;
        }
        return envelope.SerializeAsString();
      },
      seconds, crash);
  onnx::ModelProto envelope;
  if (!bytes || !envelope.ParseFromString(*bytes))
    return "ONNX checker or shape inference " + crash + " on this model: it is malformed";
  if (!envelope.doc_string().empty())
    return envelope.doc_string();
  onnx::GraphProto &graph = *model.mutable_graph();
  const onnx::GraphProto &found = envelope.graph();
  *graph.mutable_value_info() = found.value_info();
  for (int i = 0; i < graph.output_size() && i < found.output_size(); ++i)
    *graph.mutable_output(i)->mutable_type() = found.output(i).type();
  for (const auto &value : found.input())
    propagated[value.name()] = value.type().tensor_type().shape();
  return "";
}

/// Works around ONNX 1.12's adapter of the binary ops' broadcast from opset
/// 6 to 7 (BroadcastForwardCompatibility), which unsqueezes B to the rank
/// of A whatever its axis, so that a channel bias [C] added at axis 1 of
/// [N, C, H, W] becomes [C, 1, 1, 1] and is refused: such a B is
/// unsqueezed here, to [C, 1, 1], which leaves it aligned with A's last
/// dims as opset 7 broadcasts, and the adapter has nothing left to move.
/// `inferred` has the shapes of the node inputs (and needs inference again).
void alignOldBroadcasts(onnx::ModelProto &inferred) {
  std::unordered_map<std::string, int> ranks;
  onnx::GraphProto &graph = *inferred.mutable_graph();
  for (const auto *values : {&graph.input(), &graph.value_info()})
    for (const auto &value : *values)
      if (value.type().tensor_type().has_shape())
        ranks[value.name()] = value.type().tensor_type().shape().dim_size();
  for (const auto &tensor : graph.initializer())
    ranks[tensor.name()] = tensor.dims_size();
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (onnx::NodeProto &node : *graph.mutable_node()) {
    static const std::set<std::string> kBroadcasting = {"Add", "Sub", "Mul", "Div",
                                                        "Pow", "And", "Or", "Xor",
                                                        "Equal", "Greater", "Less"};
    onnx::AttributeProto *axis = nullptr;
    bool broadcast = false;
    for (auto &attr : *node.mutable_attribute()) {
      if (attr.name() == "axis")
        axis = &attr;
      broadcast |= attr.name() == "broadcast" && attr.i() == 1;
    }
    auto a = ranks.find(node.input_size() == 2 ? node.input(0) : "");
    auto b = ranks.find(node.input_size() == 2 ? node.input(1) : "");
    if (isDefaultDomain(node.domain()) && kBroadcasting.count(node.op_type()) && broadcast &&
        axis && a != ranks.end() && b != ranks.end() && axis->i() >= 0 &&
        axis->i() + b->second < a->second) {
      onnx::NodeProto &unsqueeze = *nodes.Add();
      unsqueeze.set_op_type("Unsqueeze");
      unsqueeze.set_name(node.name() + "/tessel_broadcast_axis");
      unsqueeze.add_input(node.input(1));
      unsqueeze.add_output(unsqueeze.name());
      onnx::AttributeProto &axes = *unsqueeze.add_attribute();
      axes.set_name("axes");
      axes.set_type(onnx::AttributeProto::INTS);
      for (int64_t d = b->second; d < a->second - axis->i(); ++d)
        axes.add_ints(d);
      node.set_input(1, unsqueeze.output(0)); // the axis now aligns B's last dim
    }
    *nodes.Add() = std::move(node);
  }
  graph.mutable_node()->Swap(&nodes);
}

std::string upgradeOldOpset(onnx::ModelProto &model, unsigned seconds) {
  int64_t opset = 0;
  for (const auto &entry : model.opset_import())
    if (isDefaultDomain(entry.domain()))
      opset = entry.version();
  if (opset == 0 || opset >= kMinOpset)
    return "";
  // Only where the op table needs it: a model whose ops are all unchanged
  // since its opset imports as it is (OpTable.h).
  std::vector<std::string> changed;
  const OpTable &table = OpTable::get();
  for (const auto &node : model.graph().node())
    if (isDefaultDomain(node.domain()) && table.contains(node.op_type()) &&
        !table.find(node.op_type(), opset) && !llvm::is_contained(changed, node.op_type()))
      changed.push_back(node.op_type());
  if (changed.empty())
    return "";
  std::string needs = llvm::join(changed, ", ");
  std::string crash = "crashed"; // runIsolated says how the child ended
  // The reply: 'E' and the converter's error, or 'M' and the converted model.
  std::optional<std::string> bytes = runIsolated(
      [&]() -> std::string {
        try {
          // The adapters read the shapes of their nodes' inputs.
          onnx::ModelProto inferred = model;
          onnx::shape_inference::InferShapes(inferred);
          alignOldBroadcasts(inferred);
          onnx::shape_inference::InferShapes(inferred);
          return "M" + onnx::version_conversion::ConvertVersion(inferred, kMinOpset)
                           .SerializeAsString();
        } catch (const std::exception &e) {
          return std::string("E") + e.what();
        }
      },
      seconds, crash);
  std::string failure =
      "unsupported: cannot upgrade this opset-" + std::to_string(opset) + " model (its " + needs +
      " nodes have the semantics of opsets before " + std::to_string(kMinOpset) +
      ") with ONNX's version converter: ";
  if (!bytes || bytes->empty())
    return failure + "it " + crash;
  if ((*bytes)[0] == 'E')
    return failure + bytes->substr(1);
  onnx::ModelProto converted;
  if (!converted.ParseFromString(bytes->substr(1)))
    return failure + "its result does not parse";
  model = std::move(converted);
  return "";
}

} // namespace tessel::importer
