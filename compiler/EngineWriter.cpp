//===- EngineWriter.cpp - graph dialect to a .tsl engine ------------------===//
//
// Turns the compiled `main` function into the engine file: one tensor per
// SSA value, constants packed 256-byte aligned, intermediates placed in one
// arena by liveness, one step per op with its kernel variants per tier.
//
//===----------------------------------------------------------------------===//
#include "EngineWriter.h"

#include "GraphRewrite.h"
#include "CustomOp.h"
#include "KernelEmitter.h"
#include "StepEncoding.h"
#include "TesselDialect.h"

#include "tessel/engine_format.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/Support/raw_ostream.h"

#include <zstd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <set>

using namespace mlir;
namespace fb = tessel::engine;

namespace tessel {
namespace {


struct TensorRecord {
  std::string name;
  RankedTensorType type;
  std::string layout; // "NCHW", "NHWC" or "" (not an activation, or unknown)
  fb::Storage storage = fb::Storage::Arena;
  uint64_t offset = 0;
  uint64_t size = 0;
  // Liveness in step indices, for arena tensors. A tensor that shares its
  // buffer with others (in place) is a member of its root's group, and the
  // root's lifetime is the group's.
  int64_t firstStep = 0, lastStep = 0;
  int32_t root = -1; // the tensor whose offset this one takes, or -1
  // An output whose extent along extentAxis is data dependent: the i64
  // tensor that holds it at run time (--tessel-data-dependent-extents).
  int32_t extentAxis = -1, extentTensor = -1;
};

struct StepRecord {
  Operation *op;
  std::string name; // the kernel / op name
  std::vector<int32_t> inputs, outputs;
};

/// The operands a step's output may take the buffer of (engine operand
/// positions), and whether the step is a pure alias: reshape and identity
/// compute nothing, the output is the same bytes under another shape; where
/// the output takes the input's buffer the step is dropped (collect()).
///
/// Any other op listed here overwrites the operand in place, which is legal
/// only for a kernel that reads element i of that operand before it writes
/// element i of the output and reads no element of it after writing: the CPU
/// tier's elementwise loops (`y[i] = f(x[i])`: unary math and activations,
/// clip, not, cast between types of one width) and its numpy-broadcasting
/// binary ops for an operand with the output's element count (its broadcast
/// index is then the output's own), and a GPU kernel that maps one thread to
/// one element. Not transpose, softmax, pools, convs or reductions, which read
/// other elements after writing, nor where (its element copy is a memcpy,
/// undefined on identical pointers).
struct InPlace {
  SmallVector<unsigned, 2> operands;
  bool alias = false;
};

InPlace inPlaceOperands(Operation *op) {
  if (!op || op->getNumResults() != 1)
    return {};
  if (isa<ReshapeOp, IdentityOp>(op))
    return {{0}, true};
  auto result = cast<RankedTensorType>(op->getResult(0).getType());
  // Element i of the operand is element i of the output: the same count of
  // elements of the same width (a cast from f32 to f16 halves the bytes).
  auto elementwiseWith = [&](Value operand) {
    auto type = cast<RankedTensorType>(operand.getType());
    return type.getNumElements() == result.getNumElements() &&
           elementBytes(type.getElementType()) == elementBytes(result.getElementType());
  };
  InPlace inPlace;
  if (isElementwiseUnary(op) || isElementwiseBinary(op))
    for (auto [i, operand] : llvm::enumerate(op->getOperands()))
      if (elementwiseWith(operand))
        inPlace.operands.push_back(i);
  return inPlace;
}

/// Lets step outputs take over an operand's arena buffer where inPlaceOperands
/// allows it: the output joins the operand's group (chains of aliases and
/// in-place steps form one group, one buffer). A pure alias may join a group
/// that is still read later, as it writes nothing; an in-place write only
/// joins a group whose every member is last read by this very step. Both need
/// an arena operand (inputs, outputs and constants are not the planner's) of
/// the output's byte size.
void shareInPlace(std::vector<TensorRecord> &tensors,
                      const std::vector<StepRecord> &steps) {
  auto rootOf = [&](int32_t t) { return tensors[t].root < 0 ? t : tensors[t].root; };
  for (auto [s, step] : llvm::enumerate(steps)) {
    InPlace inPlace = inPlaceOperands(step.op);
    if (inPlace.operands.empty())
      continue;
    int32_t out = step.outputs[0];
    TensorRecord &output = tensors[out];
    if (output.storage != fb::Storage::Arena)
      continue;
    for (unsigned position : inPlace.operands) {
      int32_t in = step.inputs[position];
      if (in < 0 || tensors[in].storage != fb::Storage::Arena ||
          tensors[in].size != output.size)
        continue;
      TensorRecord &group = tensors[rootOf(in)];
      if (!inPlace.alias && group.lastStep != static_cast<int64_t>(s))
        continue;
      output.root = rootOf(in);
      group.lastStep = std::max(group.lastStep, output.lastStep);
      break;
    }
  }
}

/// Greedy-by-size placement of the groups (a tensor that shares no buffer is
/// a group of one): the largest first, each at the lowest offset that
/// overlaps no already-placed group whose lifetime intersects its own; every
/// member takes its root's offset. Deterministic: ties broken by tensor index.
uint64_t planArena(std::vector<TensorRecord> &tensors) {
  std::vector<size_t> order;
  for (size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].storage == fb::Storage::Arena && tensors[i].root < 0)
      order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return tensors[a].size > tensors[b].size;
  });
  std::vector<size_t> placed;
  uint64_t arenaSize = 0;
  for (size_t index : order) {
    TensorRecord &t = tensors[index];
    std::vector<std::pair<uint64_t, uint64_t>> busy; // [begin, end)
    for (size_t other : placed) {
      const TensorRecord &o = tensors[other];
      if (o.firstStep <= t.lastStep && t.firstStep <= o.lastStep)
        busy.emplace_back(o.offset, o.offset + o.size);
    }
    std::sort(busy.begin(), busy.end());
    uint64_t candidate = 0;
    for (auto [begin, end] : busy) {
      if (candidate + t.size <= begin)
        break;
      candidate = std::max<uint64_t>(candidate,
                                     format::alignUp(end, format::kConstantAlignment));
    }
    t.offset = candidate;
    arenaSize = std::max<uint64_t>(arenaSize, candidate + t.size);
    placed.push_back(index);
  }
  for (TensorRecord &t : tensors)
    if (t.root >= 0)
      t.offset = tensors[t.root].offset;
  return format::alignUp(arenaSize, format::kConstantAlignment);
}

std::vector<flatbuffers::Offset<fb::Launch>>
serializeLaunchList(flatbuffers::FlatBufferBuilder &builder,
                    const codegen::KernelVariant &variant) {
  std::vector<flatbuffers::Offset<fb::Launch>> launches;
  for (const codegen::Launch &launch : variant.launches) {
    std::vector<flatbuffers::Offset<fb::KernelArg>> args;
    for (const codegen::KernelArg &arg : launch.args) {
      flatbuffers::Offset<fb::TensorMap> map;
      if (const codegen::KernelArg::TensorMap &m = arg.tensorMap; !m.dims.empty())
        map = fb::CreateTensorMapDirect(builder, &m.dims, &m.strides, &m.box,
                                        m.im2col() ? &m.lowerCorner : nullptr,
                                        m.im2col() ? &m.upperCorner : nullptr,
                                        m.im2col() ? &m.elementStrides : nullptr);
      args.push_back(fb::CreateKernelArgDirect(builder, arg.tensor,
                                               arg.bytes.empty() ? nullptr : &arg.bytes,
                                               arg.workspaceBytes, arg.counterBytes, map));
    }
    std::vector<uint32_t> grid(launch.grid.begin(), launch.grid.end());
    std::vector<uint32_t> block(launch.block.begin(), launch.block.end());
    launches.push_back(fb::CreateLaunchDirect(builder, launch.module, launch.kernel.c_str(),
                                              &grid, &block, launch.sharedBytes, &args));
  }
  return launches;
}

/// Replaces `data` by one zstd frame of it where that is smaller (PTX shrinks
/// about 8x, cubins 4x); the runtime decodes it when a GPU loads the
/// module. Level 9: within 12% of level 19's size at a tenth of its time.
/// Deterministic: one thread, no dictionary, the frame's content size set.
bool compressImage(std::vector<uint8_t> &data) {
  std::vector<uint8_t> frame(ZSTD_compressBound(data.size()));
  size_t written = ZSTD_compress(frame.data(), frame.size(), data.data(), data.size(), 9);
  if (ZSTD_isError(written) || written >= data.size())
    return false;
  frame.resize(written);
  data = std::move(frame);
  return true;
}

/// What the plans of one engine share, each stored once: the constants blob
/// (identical bytes get one offset) and the kernel modules (identical
/// modules one index), in the order the plans first use them, so that the
/// bytes stay deterministic.
class SharedBlobs {
public:
  /// The offset of `bytes` in the constants blob, appended unless present.
  uint64_t constant(const std::vector<uint8_t> &bytes) {
    std::vector<uint64_t> &candidates = constantsByHash[llvm::hash_value(ArrayRef(bytes))];
    for (uint64_t offset : candidates)
      if (std::equal(bytes.begin(), bytes.end(), constants.begin() + offset))
        return offset;
    constants.resize(format::alignUp(constants.size(), format::kConstantAlignment));
    uint64_t offset = constants.size();
    constants.insert(constants.end(), bytes.begin(), bytes.end());
    candidates.push_back(offset);
    return offset;
  }

  /// The engine-wide index of `module`, appended unless an identical one is.
  int32_t module(const codegen::KernelModule &module) {
    for (auto [index, known] : llvm::enumerate(modules))
      if (known->name == module.name && sameImages(*known, module))
        return static_cast<int32_t>(index);
    modules.push_back(&module);
    return static_cast<int32_t>(modules.size() - 1);
  }

  std::vector<uint8_t> constants;
  std::vector<const codegen::KernelModule *> modules;

private:
  static bool sameImages(const codegen::KernelModule &a, const codegen::KernelModule &b) {
    return a.images.size() == b.images.size() &&
           std::equal(a.images.begin(), a.images.end(), b.images.begin(),
                      [](const codegen::KernelImage &x, const codegen::KernelImage &y) {
                        return x.cubin == y.cubin && x.arch == y.arch && x.data == y.data &&
                               x.waitsForPriorGrids == y.waitsForPriorGrids;
                      });
  }

  std::map<llvm::hash_code, std::vector<uint64_t>> constantsByHash;
};

/// One plan's fields of the Engine table, serialized.
struct PlanOffsets {
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::Tensor>>> tensors;
  flatbuffers::Offset<flatbuffers::Vector<int32_t>> inputs, outputs;
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::Step>>> steps;
  uint64_t arenaSize = 0, unplanned = 0;
  flatbuffers::Offset<flatbuffers::Vector<fb::Tier>> tiers;
};

class Writer {
public:
  Writer(func::FuncOp func, const CompileOptions &options, EngineSummary *summary)
      : func(func), options(options), summary(summary) {}

  /// Collects the steps and tensors, plans the arena and the kernels.
  LogicalResult plan();
  /// Writes the plan's fields into `builder`, its constants and modules into
  /// `shared`.
  FailureOr<PlanOffsets> serialize(flatbuffers::FlatBufferBuilder &builder,
                                   SharedBlobs &shared);

private:
  int32_t addTensor(Value value, std::string name, fb::Storage storage);
  int32_t tensorOf(Value value);
  LogicalResult stepInputs(Operation &op, std::vector<int32_t> &indices);
  LogicalResult collect();
  FailureOr<codegen::KernelPlan> planStepKernels();

  func::FuncOp func;
  const CompileOptions &options;
  EngineSummary *summary;
  std::vector<TensorRecord> tensors;
  llvm::DenseMap<Value, int32_t> valueTensor;
  std::vector<std::vector<uint8_t>> constantBytes; // per tensor, if constant
  std::vector<StepRecord> steps;
  std::vector<int32_t> inputs, outputs;
  uint64_t arenaSize = 0, unplanned = 0;
  codegen::KernelPlan kernels;
};

int32_t Writer::addTensor(Value value, std::string name, fb::Storage storage) {
  auto type = cast<RankedTensorType>(value.getType());
  TensorRecord record;
  record.name = std::move(name);
  record.type = type;
  record.storage = storage;
  record.size = type.getNumElements() * elementBytes(type.getElementType());
  tensors.push_back(record);
  constantBytes.emplace_back();
  return static_cast<int32_t>(tensors.size() - 1);
}

LogicalResult Writer::stepInputs(Operation &op, std::vector<int32_t> &indices) {
  for (Value operand : engineOperands(&op)) {
    int32_t index = operand ? tensorOf(operand) : -1;
    if (operand && index < 0)
      return op.emitOpError("uses a value the engine does not know");
    indices.push_back(index);
  }
  return success();
}

int32_t Writer::tensorOf(Value value) {
  auto it = valueTensor.find(value);
  return it == valueTensor.end() ? -1 : it->second;
}

LogicalResult Writer::collect() {
  Block &body = func.getBody().front();
  for (BlockArgument arg : body.getArguments()) {
    auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                  TesselDialect::NameAttrHelper::getNameStr());
    int32_t index = addTensor(arg, name ? name.str() : "input" + std::to_string(arg.getArgNumber()),
                              fb::Storage::Input);
    // The layout --tessel-io-format recorded for the caller's buffer.
    if (auto layout = func.getArgAttrOfType<LayoutAttr>(
            arg.getArgNumber(), TesselDialect::LayoutAttrHelper::getNameStr()))
      tensors[index].layout = stringifyLayout(layout.getValue()).str();
    valueTensor[arg] = index;
    inputs.push_back(index);
  }

  auto returnOp = cast<func::ReturnOp>(body.getTerminator());
  // Results produced by a step write straight into the caller's buffer; a
  // result that is an input, a constant or returned twice gets a copy step.
  // A result with tessel.extent_of is no output: it is the run-time extent
  // of one, an arena (or constant) tensor kept to the end of the run.
  auto extentOf = [&](unsigned i) {
    return func.getResultAttrOfType<DenseI64ArrayAttr>(
        i, TesselDialect::ExtentOfAttrHelper::getNameStr());
  };
  llvm::DenseMap<Value, unsigned> directOutput;
  for (auto [i, value] : llvm::enumerate(returnOp.getOperands()))
    if (value.getDefiningOp() && !value.getDefiningOp<ConstantOp>() &&
        !directOutput.count(value) && !extentOf(i))
      directOutput[value] = i;

  auto resultName = [&](unsigned i) {
    auto name = func.getResultAttrOfType<StringAttr>(i, TesselDialect::NameAttrHelper::getNameStr());
    return name ? name.str() : "output" + std::to_string(i);
  };
  // An output's layout is the one --tessel-io-format recorded; an
  // intermediate's is its producer's when the producer has one (NHWC convs
  // and pools), else unknown.
  auto resultLayout = [&](unsigned i) {
    auto layout =
        func.getResultAttrOfType<LayoutAttr>(i, TesselDialect::LayoutAttrHelper::getNameStr());
    return layout ? stringifyLayout(layout.getValue()).str() : std::string();
  };

  for (Operation &op : body.without_terminator()) {
    if (auto constant = dyn_cast<ConstantOp>(op)) {
      // Folded and deduplicated constants lose their node; number them.
      std::string name = isa<UnknownLoc>(op.getLoc())
                             ? "constant" + std::to_string(tensors.size())
                             : locationName(op.getLoc());
      int32_t index = addTensor(constant, name, fb::Storage::Constant);
      constantBytes[index] = elementsToBytes(constant.getValue());
      valueTensor[constant] = index;
      continue;
    }
    if (!isa<TesselDialect>(op.getDialect()))
      return op.emitOpError("is not a tessel graph op; the engine cannot hold it");
    if (op.getNumRegions() != 0)
      return op.emitOpError("has regions; the engine cannot hold it");
    StepRecord step{&op, op.getName().stripDialect().str(), {}, {}};
    if (failed(stepInputs(op, step.inputs)))
      return failure();
    for (auto [i, result] : llvm::enumerate(op.getResults())) {
      if (!engineDType(cast<RankedTensorType>(result.getType()).getElementType()))
        return op.emitOpError("result element type has no engine dtype");
      auto it = directOutput.find(result);
      bool isOutput = it != directOutput.end();
      std::string name = isOutput ? resultName(it->second)
                                  : locationName(op.getLoc()) + ":" + std::to_string(i);
      int32_t index = addTensor(result, name,
                                isOutput ? fb::Storage::Output : fb::Storage::Arena);
      auto layout = op.getAttrOfType<LayoutAttr>("layout");
      if (isOutput)
        tensors[index].layout = resultLayout(it->second);
      else if (layout && cast<RankedTensorType>(result.getType()).getRank() == 4)
        tensors[index].layout = stringifyLayout(layout.getValue()).str();
      valueTensor[result] = index;
      step.outputs.push_back(index);
    }
    steps.push_back(std::move(step));
  }

  std::vector<int32_t> extentTensors;
  for (auto [i, value] : llvm::enumerate(returnOp.getOperands())) {
    if (DenseI64ArrayAttr link = extentOf(i)) {
      // The attribute's verifier put the count results after the outputs.
      if (link[0] >= static_cast<int64_t>(outputs.size()))
        return returnOp.emitOpError("tessel.extent_of names no earlier output");
      TensorRecord &output = tensors[outputs[link[0]]];
      output.extentAxis = static_cast<int32_t>(link[1]);
      output.extentTensor = tensorOf(value);
      extentTensors.push_back(output.extentTensor);
      continue;
    }
    auto it = directOutput.find(value);
    if (it != directOutput.end() && it->second == i) {
      outputs.push_back(tensorOf(value));
      continue;
    }
    int32_t source = tensorOf(value);
    int32_t index = addTensor(value, resultName(i), fb::Storage::Output);
    tensors[index].layout = resultLayout(i);
    steps.push_back(StepRecord{nullptr, "copy", {source}, {index}});
    outputs.push_back(index);
  }

  // Liveness of arena tensors over the step list.
  for (size_t s = 0; s < steps.size(); ++s) {
    for (int32_t out : steps[s].outputs)
      tensors[out].firstStep = tensors[out].lastStep = s;
    for (int32_t in : steps[s].inputs)
      if (in >= 0)
        tensors[in].lastStep = std::max<int64_t>(tensors[in].lastStep, s);
  }
  // The runtime reads an output's extent after the last step.
  for (int32_t t : extentTensors)
    tensors[t].lastStep = static_cast<int64_t>(steps.size());
  shareInPlace(tensors, steps);
  // A pure alias whose output took its input's buffer is no step at all: the
  // bytes are already where its readers look, so its kernel (a copy skipped
  // on coinciding pointers) would only cost a launch. The lifetimes above
  // stay as computed; they order steps, not count them.
  llvm::erase_if(steps, [&](const StepRecord &step) {
    return inPlaceOperands(step.op).alias && tensors[step.outputs[0]].root >= 0;
  });
  return success();
}

FailureOr<codegen::KernelPlan> Writer::planStepKernels() {
  std::vector<RankedTensorType> types;
  for (const TensorRecord &t : tensors)
    types.push_back(t.type);
  std::vector<codegen::StepView> views;
  for (const StepRecord &step : steps)
    views.push_back(codegen::StepView{step.op, step.name, step.inputs, step.outputs, types});
  return planKernels(*func->getContext(), views, options);
}

LogicalResult Writer::plan() {
  if (failed(collect()))
    return failure();
  for (const TensorRecord &t : tensors)
    if (t.storage == fb::Storage::Arena)
      unplanned += t.size;
  arenaSize = planArena(tensors);

  auto kernelStart = std::chrono::steady_clock::now();
  FailureOr<codegen::KernelPlan> planned = planStepKernels();
  if (failed(planned))
    return failure();
  kernels = std::move(*planned);
  // A step of a GPU engine without a GPU kernel costs a round trip to the
  // host at run time (and rules out tessel_context_enqueue): a warning at
  // its ONNX node, or an error under --require-gpu.
  std::vector<std::string> cpuOnlySteps;
  if (!options.targets.empty())
    for (auto [stepIndex, step] : llvm::enumerate(steps)) {
      if (!kernels.steps[stepIndex].empty())
        continue;
      cpuOnlySteps.push_back(step.name + " at " +
                             (step.op ? locationName(step.op->getLoc()) : "output copy"));
      if (!step.op)
        continue;
      InFlightDiagnostic diag = options.requireGpu ? step.op->emitError() : step.op->emitWarning();
      diag << "no GPU kernel for " << step.name << " (operands "
           << step.op->getOperandTypes() << ")"
           << (options.requireGpu ? "" : ": the step runs on the CPU tier");
    }
  if (summary)
    summary->cpuOnlySteps = cpuOnlySteps;
  if (options.requireGpu && !cpuOnlySteps.empty())
    return failure();
  if (summary) {
    summary->kernelSeconds = std::chrono::duration<double>(
                                 std::chrono::steady_clock::now() - kernelStart)
                                 .count();
    for (auto [stepIndex, step] : llvm::enumerate(steps)) {
      const std::vector<codegen::KernelVariant> &gpu = kernels.steps[stepIndex];
      ++summary->stepsByBestTier[format::tierName(gpu.empty() ? fb::Tier::cpu
                                                               : gpu.front().tier)];
    }
    for (const codegen::KernelModule &module : kernels.modules) {
      summary->maxRegisters = std::max(summary->maxRegisters, module.maxRegisters);
      for (const std::string &kernel : module.spillingKernels)
        summary->spillingKernels.push_back(module.name + ": " + kernel);
    }
  }
  return success();
}

FailureOr<PlanOffsets> Writer::serialize(flatbuffers::FlatBufferBuilder &builder,
                                         SharedBlobs &shared) {
  for (size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].storage == fb::Storage::Constant)
      tensors[i].offset = shared.constant(constantBytes[i]);

  std::vector<flatbuffers::Offset<fb::Tensor>> tensorOffsets;
  for (const TensorRecord &t : tensors) {
    std::vector<int64_t> shape(t.type.getShape().begin(), t.type.getShape().end());
    tensorOffsets.push_back(fb::CreateTensorDirect(
        builder, t.name.c_str(),
        static_cast<fb::DType>(*engineDType(t.type.getElementType())), &shape,
        t.layout.c_str(), t.storage, t.offset, t.size, t.extentAxis, t.extentTensor));
  }

  // The plan's module indices become the engine's.
  std::vector<int32_t> moduleIndex;
  for (const codegen::KernelModule &module : kernels.modules)
    moduleIndex.push_back(shared.module(module));
  for (std::vector<codegen::KernelVariant> &variants : kernels.steps)
    for (codegen::KernelVariant &variant : variants)
      for (codegen::Launch &launch : variant.launches)
        launch.module = moduleIndex[launch.module];

  std::set<fb::Tier> tierSet;
  std::vector<flatbuffers::Offset<fb::Step>> stepOffsets;
  for (auto [stepIndex, step] : llvm::enumerate(steps)) {
    std::vector<flatbuffers::Offset<fb::Attr>> attrs;
    if (step.op) {
      FailureOr<EngineAttrs> encoded = engineAttrs(step.op);
      if (failed(encoded))
        return failure();
      for (auto &[name, value] : *encoded) {
        fb::AttrKind kind = static_cast<fb::AttrKind>(value.index());
        int64_t i = kind == fb::AttrKind::Int ? std::get<int64_t>(value) : 0;
        double f = kind == fb::AttrKind::Float ? std::get<double>(value) : 0;
        const auto *ints = std::get_if<std::vector<int64_t>>(&value);
        const auto *floats = std::get_if<std::vector<double>>(&value);
        const auto *s = std::get_if<std::string>(&value);
        attrs.push_back(fb::CreateAttrDirect(builder, name.c_str(), kind, i, f, ints,
                                             floats, s ? s->c_str() : nullptr));
      }
    }
    // GPU variants, best tier first, then the CPU tier, which every step has.
    std::vector<flatbuffers::Offset<fb::KernelVariant>> variants;
    for (const codegen::KernelVariant &variant : kernels.steps[stepIndex]) {
      tierSet.insert(variant.tier);
      std::vector<flatbuffers::Offset<fb::Launch>> launchList =
          serializeLaunchList(builder, variant);
      variants.push_back(fb::CreateKernelVariantDirect(
          builder, variant.tier, variant.kernel.c_str(),
          variant.minComputeCapability, variant.alignment, &launchList));
    }
    tierSet.insert(fb::Tier::cpu);
    variants.push_back(fb::CreateKernelVariantDirect(builder, fb::Tier::cpu, step.name.c_str(),
                                                     /*min_compute_capability=*/0,
                                                     /*alignment=*/64));
    std::string location = step.op ? locationName(step.op->getLoc()) : "output copy";
    stepOffsets.push_back(fb::CreateStepDirect(builder, step.name.c_str(),
                                               location.c_str(), &step.inputs,
                                               &step.outputs, &attrs, &variants));
  }
  // Tiers from the best to the CPU's, as the runtime prefers them.
  std::vector<fb::Tier> tierList(tierSet.rbegin(), tierSet.rend());
  PlanOffsets plan;
  plan.tensors = builder.CreateVector(tensorOffsets);
  plan.inputs = builder.CreateVector(inputs);
  plan.outputs = builder.CreateVector(outputs);
  plan.steps = builder.CreateVector(stepOffsets);
  plan.arenaSize = arenaSize;
  plan.unplanned = unplanned;
  plan.tiers = builder.CreateVector(tierList);
  return plan;
}

} // namespace

FailureOr<std::vector<uint8_t>> writeEngine(ArrayRef<ModuleOp> profiles,
                                            const CompileOptions &options,
                                            EngineSummary *summary) {
  if (profiles.empty())
    return failure();
  // Each plan in full; the summary is the first plan's, its modules the
  // engine's.
  std::vector<std::unique_ptr<Writer>> writers;
  for (auto [index, constModule] : llvm::enumerate(profiles)) {
    ModuleOp module = constModule;
    auto main = module.lookupSymbol<func::FuncOp>("main");
    if (!main)
      return module.emitError("no func.func @main to write");
    EngineSummary ignored;
    writers.push_back(std::make_unique<Writer>(main, options, index == 0 ? summary : &ignored));
    if (failed(writers.back()->plan())) {
      if (summary && index != 0)
        summary->cpuOnlySteps = ignored.cpuOnlySteps;
      return failure();
    }
  }

  flatbuffers::FlatBufferBuilder builder(1 << 16);
  SharedBlobs shared;
  std::vector<PlanOffsets> plans;
  for (const std::unique_ptr<Writer> &writer : writers) {
    FailureOr<PlanOffsets> plan = writer->serialize(builder, shared);
    if (failed(plan))
      return failure();
    plans.push_back(*plan);
  }
  std::vector<flatbuffers::Offset<fb::Engine>> nested;
  for (const PlanOffsets &plan : llvm::drop_begin(plans)) {
    fb::EngineBuilder entry(builder);
    entry.add_tensors(plan.tensors);
    entry.add_inputs(plan.inputs);
    entry.add_outputs(plan.outputs);
    entry.add_steps(plan.steps);
    entry.add_arena_size(plan.arenaSize);
    entry.add_arena_unplanned_size(plan.unplanned);
    entry.add_tiers(plan.tiers);
    nested.push_back(entry.Finish());
  }

  std::vector<std::string> targetNames;
  for (int arch : options.targets)
    targetNames.push_back("sm_" + std::to_string(arch));
  std::string targetList;
  for (const std::string &name : targetNames)
    targetList += (targetList.empty() ? "" : ",") + name;
  std::vector<flatbuffers::Offset<fb::Option>> optionOffsets = {
      fb::CreateOptionDirect(builder, "io_dtype", options.ioDtype.c_str()),
      fb::CreateOptionDirect(builder, "io_layout", options.ioLayout.c_str()),
      fb::CreateOptionDirect(builder, "precision", options.precision.c_str()),
  };
  optionOffsets.push_back(fb::CreateOptionDirect(
      builder, "targets", targetList.empty() ? "none" : targetList.c_str()));
  if (options.customOps && !options.customOps->empty()) {
    // The ops by name, not the manifests' paths: the engine stays the same
    // bytes wherever the manifests are.
    std::string names;
    for (const custom::CustomOpDecl &decl : options.customOps->all())
      names += (names.empty() ? "" : ",") + decl.qualifiedName();
    optionOffsets.push_back(fb::CreateOptionDirect(builder, "custom_ops", names.c_str()));
  }
  if (!options.fp32Nodes.empty()) {
    std::string nodes;
    for (const std::string &node : options.fp32Nodes)
      nodes += (nodes.empty() ? "" : ",") + node;
    optionOffsets.push_back(fb::CreateOptionDirect(builder, "fp32_nodes", nodes.c_str()));
  }
  std::vector<flatbuffers::Offset<flatbuffers::String>> targetOffsets;
  for (const std::string &name : targetNames)
    targetOffsets.push_back(builder.CreateString(name));

  std::vector<flatbuffers::Offset<fb::KernelModule>> moduleOffsets;
  for (const codegen::KernelModule *module : shared.modules) {
    std::vector<flatbuffers::Offset<fb::KernelImage>> images;
    for (const codegen::KernelImage &image : module->images) {
      std::vector<uint8_t> data = image.data;
      if (!image.cubin)
        data.push_back(0); // PTX is handed to the driver as a C string
      uint64_t size = data.size();
      bool compressed = compressImage(data);
      if (summary) {
        summary->moduleBytes += size;
        summary->moduleStoredBytes += data.size();
      }
      images.push_back(fb::CreateKernelImageDirect(
          builder, image.cubin ? fb::ImageFormat::Cubin : fb::ImageFormat::PTX, image.arch,
          &data, compressed ? fb::Compression::Zstd : fb::Compression::None,
          compressed ? size : 0, image.waitsForPriorGrids));
    }
    moduleOffsets.push_back(fb::CreateKernelModuleDirect(builder, module->name.c_str(), &images));
  }
  if (summary)
    summary->modules = shared.modules.size();

  const PlanOffsets &first = plans.front();
  auto engine = fb::CreateEngine(
      builder, format::kFormatVersion, builder.CreateString("tessel-compile 0.1.0"),
      builder.CreateVectorOfSortedTables(&optionOffsets), first.tensors, first.inputs, first.outputs,
      first.steps, first.arenaSize, first.unplanned, shared.constants.size(), first.tiers,
      builder.CreateVector(moduleOffsets), builder.CreateVector(targetOffsets),
      nested.empty() ? 0 : builder.CreateVector(nested));
  fb::FinishEngineBuffer(builder, engine);
  return format::assembleFile(builder.GetBufferPointer(), builder.GetSize(), shared.constants);
}

} // namespace tessel
