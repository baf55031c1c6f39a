//===- EngineWriter.cpp - graph dialect to a .tsl engine ------------------===//
//
// Turns the compiled `main` function into the engine file: one tensor per
// SSA value, constants packed 256-byte aligned, intermediates placed in one
// arena by liveness, one step per op with its kernel variants per tier.
//
//===----------------------------------------------------------------------===//
#include "EngineWriter.h"

#include "KernelEmitter.h"
#include "TensorData.h"
#include "TesselDialect.h"

#include "engine_format.h"
#include "engine_generated.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <set>

using namespace mlir;
namespace fb = tessel::engine;

namespace tessel {
namespace {

std::string locationName(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  if (auto fused = dyn_cast<FusedLoc>(loc)) {
    std::string joined;
    for (Location inner : fused.getLocations())
      joined += (joined.empty() ? "" : "+") + locationName(inner);
    return joined;
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  loc.print(os);
  return text;
}

struct TensorRecord {
  std::string name;
  RankedTensorType type;
  fb::Storage storage = fb::Storage::Arena;
  uint64_t offset = 0;
  uint64_t size = 0;
  // Liveness in step indices, for arena tensors.
  int64_t firstStep = 0, lastStep = 0;
};

struct StepRecord {
  Operation *op;
  std::string name; // the kernel / op name
  std::vector<int32_t> inputs, outputs;
};

/// Greedy-by-size placement: the largest tensors first, each at the lowest
/// offset that overlaps no already-placed tensor whose lifetime intersects
/// its own. Deterministic: ties broken by tensor index.
uint64_t planArena(std::vector<TensorRecord> &tensors) {
  std::vector<size_t> order;
  for (size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].storage == fb::Storage::Arena)
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
  return format::alignUp(arenaSize, format::kConstantAlignment);
}

std::vector<flatbuffers::Offset<fb::Launch>>
serializeLaunchList(flatbuffers::FlatBufferBuilder &builder,
                    const codegen::KernelVariant &variant) {
  std::vector<flatbuffers::Offset<fb::Launch>> launches;
  for (const codegen::Launch &launch : variant.launches) {
    std::vector<flatbuffers::Offset<fb::KernelArg>> args;
    for (const codegen::KernelArg &arg : launch.args)
      args.push_back(fb::CreateKernelArgDirect(builder, arg.tensor,
                                               arg.bytes.empty() ? nullptr : &arg.bytes));
    std::vector<uint32_t> grid(launch.grid.begin(), launch.grid.end());
    std::vector<uint32_t> block(launch.block.begin(), launch.block.end());
    launches.push_back(fb::CreateLaunchDirect(builder, launch.module, launch.kernel.c_str(),
                                              &grid, &block, launch.sharedBytes, &args));
  }
  return launches;
}

class Writer {
public:
  Writer(func::FuncOp func, const CompileOptions &options)
      : func(func), options(options) {}

  FailureOr<std::vector<uint8_t>> write();

private:
  int32_t addTensor(Value value, std::string name, fb::Storage storage);
  int32_t tensorOf(Value value);
  LogicalResult stepInputs(Operation &op, std::vector<int32_t> &indices);
  LogicalResult collect();
  FailureOr<codegen::KernelPlan> planStepKernels();

  func::FuncOp func;
  const CompileOptions &options;
  std::vector<TensorRecord> tensors;
  llvm::DenseMap<Value, int32_t> valueTensor;
  std::vector<std::vector<uint8_t>> constantBytes; // per tensor, if constant
  std::vector<StepRecord> steps;
  std::vector<int32_t> inputs, outputs;
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
    auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "tessel.name");
    int32_t index = addTensor(arg, name ? name.str() : "input" + std::to_string(arg.getArgNumber()),
                              fb::Storage::Input);
    valueTensor[arg] = index;
    inputs.push_back(index);
  }

  auto returnOp = cast<func::ReturnOp>(body.getTerminator());
  // Results produced by a step write straight into the caller's buffer; a
  // result that is an input, a constant or returned twice gets a copy step.
  llvm::DenseMap<Value, unsigned> directOutput;
  for (auto [i, value] : llvm::enumerate(returnOp.getOperands()))
    if (value.getDefiningOp() && !value.getDefiningOp<ConstantOp>() &&
        !directOutput.count(value))
      directOutput[value] = i;

  auto resultName = [&](unsigned i) {
    auto name = func.getResultAttrOfType<StringAttr>(i, "tessel.name");
    return name ? name.str() : "output" + std::to_string(i);
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
      valueTensor[result] = index;
      step.outputs.push_back(index);
    }
    steps.push_back(std::move(step));
  }

  for (auto [i, value] : llvm::enumerate(returnOp.getOperands())) {
    auto it = directOutput.find(value);
    if (it != directOutput.end() && it->second == i) {
      outputs.push_back(tensorOf(value));
      continue;
    }
    int32_t source = tensorOf(value);
    int32_t index = addTensor(value, resultName(i), fb::Storage::Output);
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

FailureOr<std::vector<uint8_t>> Writer::write() {
  if (failed(collect()))
    return failure();

  uint64_t unplanned = 0;
  for (const TensorRecord &t : tensors)
    if (t.storage == fb::Storage::Arena)
      unplanned += t.size;
  uint64_t arenaSize = planArena(tensors);

  std::vector<uint8_t> constants;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].storage != fb::Storage::Constant)
      continue;
    constants.resize(format::alignUp(constants.size(), format::kConstantAlignment));
    tensors[i].offset = constants.size();
    constants.insert(constants.end(), constantBytes[i].begin(), constantBytes[i].end());
  }

  flatbuffers::FlatBufferBuilder builder(1 << 16);
  std::vector<flatbuffers::Offset<fb::Tensor>> tensorOffsets;
  for (const TensorRecord &t : tensors) {
    std::vector<int64_t> shape(t.type.getShape().begin(), t.type.getShape().end());
    tensorOffsets.push_back(fb::CreateTensorDirect(
        builder, t.name.c_str(),
        static_cast<fb::DType>(*engineDType(t.type.getElementType())), &shape,
        t.type.getRank() == 4 ? "NCHW" : "", t.storage, t.offset, t.size));
  }

  FailureOr<codegen::KernelPlan> kernels = planStepKernels();
  if (failed(kernels))
    return failure();

  std::set<std::string> tierSet;
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
    for (const codegen::KernelVariant &variant : kernels->steps[stepIndex]) {
      tierSet.insert(variant.tier);
      std::vector<flatbuffers::Offset<fb::Launch>> launchList =
          serializeLaunchList(builder, variant);
      variants.push_back(fb::CreateKernelVariantDirect(
          builder, variant.tier.c_str(), variant.kernel.c_str(),
          variant.minComputeCapability, variant.alignment, &launchList));
    }
    tierSet.insert("cpu");
    variants.push_back(fb::CreateKernelVariantDirect(builder, "cpu", step.name.c_str(),
                                                     /*min_compute_capability=*/0,
                                                     /*alignment=*/64));
    std::string location = step.op ? locationName(step.op->getLoc()) : "output copy";
    stepOffsets.push_back(fb::CreateStepDirect(builder, step.name.c_str(),
                                               location.c_str(), &step.inputs,
                                               &step.outputs, &attrs, &variants));
  }

  std::vector<std::string> targetNames;
  for (int arch : options.targets)
    targetNames.push_back("sm_" + std::to_string(arch));
  std::string targetList;
  for (const std::string &name : targetNames)
    targetList += (targetList.empty() ? "" : ",") + name;
  std::vector<flatbuffers::Offset<fb::Option>> optionOffsets = {
      fb::CreateOptionDirect(builder, "precision", options.precision.c_str()),
  };
  optionOffsets.push_back(fb::CreateOptionDirect(
      builder, "targets", targetList.empty() ? "none" : targetList.c_str()));

  // Tiers from the best to the CPU's, as the runtime prefers them.
  std::vector<flatbuffers::Offset<flatbuffers::String>> tierOffsets;
  for (const char *tier : {"tc-sm90", "tc-sm80", "tc-sm70", "simt", "cpu"})
    if (tierSet.count(tier))
      tierOffsets.push_back(builder.CreateString(tier));
  std::vector<flatbuffers::Offset<flatbuffers::String>> targetOffsets;
  for (const std::string &name : targetNames)
    targetOffsets.push_back(builder.CreateString(name));

  std::vector<flatbuffers::Offset<fb::KernelModule>> moduleOffsets;
  for (const codegen::KernelModule &module : kernels->modules) {
    std::vector<flatbuffers::Offset<fb::KernelImage>> images;
    for (const codegen::KernelImage &image : module.images) {
      std::vector<uint8_t> data = image.data;
      if (!image.cubin)
        data.push_back(0); // PTX is handed to the driver as a C string
      images.push_back(fb::CreateKernelImageDirect(
          builder, image.cubin ? fb::ImageFormat::Cubin : fb::ImageFormat::PTX, image.arch,
          &data));
    }
    moduleOffsets.push_back(fb::CreateKernelModuleDirect(builder, module.name.c_str(), &images));
  }

  auto engine = fb::CreateEngineDirect(
      builder, format::kFormatVersion, "tessel-compile 0.1.0", &optionOffsets,
      &tensorOffsets, &inputs, &outputs, &stepOffsets, arenaSize, unplanned,
      constants.size(), &tierOffsets, &moduleOffsets, &targetOffsets);
  fb::FinishEngineBuffer(builder, engine);

  return format::assembleFile(builder.GetBufferPointer(), builder.GetSize(), constants);
}

} // namespace

FailureOr<std::vector<uint8_t>> writeEngine(ModuleOp module,
                                            const CompileOptions &options) {
  auto main = module.lookupSymbol<func::FuncOp>("main");
  if (!main)
    return module.emitError("no func.func @main to write");
  return Writer(main, options).write();
}

} // namespace tessel
