//===- FuseElementwise.cpp - --tessel-fuse-elementwise --------------------===//
//
// What the epilogue, prologue and squeeze fusions left standalone: a
// connected group of two or more elementwise ops (unary, binary with numpy
// broadcasting, clip, where, casts between f16 and f32) whose intermediates
// nothing outside the group reads becomes one `elementwise_group` step, its
// expression a program (tessel/elementwise_program.h) from which the GPU
// kernel is generated when the engine is compiled (codegen/custom/
// ElementwiseGroups.cpp) and which the CPU tier interprets.
//
// A group grows from its root (an op no later group took) through the
// operands whose every user is already in it, so that an intermediate read
// elsewhere stays a step of its own and the group's value is computed once.
// Splat constants become literals; other constants are inputs. An op stays
// out where its types are not f16 or f32 (f64, integers, a bool result: a
// precision boundary the group would blur) or it has no place in a program
// (mod with the divisor's sign, comparisons, logic); a widening cast (f16 to
// f32) is no instruction (the value is the same), a narrowing one rounds
// (cast_f16). Runs last, after the other fusions have taken what they take.
//
//===----------------------------------------------------------------------===//
#include "Passes.h"
#include "StepEncoding.h"
#include "tessel/elementwise_program.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace tessel {
#define GEN_PASS_DEF_FUSEELEMENTWISE
#include "Passes.h.inc"
} // namespace tessel

using namespace mlir;

namespace tessel {
namespace {

namespace ew = elementwise;

bool isNumber(Type t) { return t.isF16() || t.isF32(); }

/// What one op is in a program: an instruction, or (a widening cast) its
/// operand's value passed on.
struct Form {
  enum class Kind { None, Instruction, PassOn };
  Kind kind = Kind::None;
  ew::Instruction instruction; ///< operands filled in when the program is built
};

/// A clip bound as the clip's kernel holds it in the op's element type
/// (cpu::convertBound: f16 rounds to nearest).
double boundIn(Type element, double bound) {
  cpu::Bound converted;
  cpu::convertBound(static_cast<cpu::DType>(*engineDType(element)), bound, converted);
  return converted.real;
}

/// `op` in a program, or Kind::None where it has no place in one.
Form formOf(Operation *op) {
  Form form;
  if (op->getNumResults() != 1 || op->getNumRegions() != 0)
    return form;
  auto resultType = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!resultType || !isNumber(resultType.getElementType()))
    return form;
  const llvm::StringRef name = op->getName().stripDialect();
  ew::Instruction &in = form.instruction;

  if (auto cast = dyn_cast<CastOp>(op)) {
    Type from = elementOf(cast.getInput()), to = resultType.getElementType();
    if (!isNumber(from))
      return form;
    if (to.isF16() && from.isF32()) {
      in.kind = ew::Instruction::Kind::CastF16;
      in.numOperands = 1;
      form.kind = Form::Kind::Instruction;
    } else {
      form.kind = Form::Kind::PassOn; // widening, or to its own type
    }
    return form;
  }
  // Every operand a number, but where's condition (an i1 input).
  for (auto [i, operand] : llvm::enumerate(op->getOperands()))
    if (!(isa<WhereOp>(op) && i == 0) && !isNumber(elementOf(operand)))
      return form;
  if (isa<WhereOp>(op)) {
    in.kind = ew::Instruction::Kind::Where;
    in.numOperands = 3;
  } else if (auto clip = dyn_cast<ClipOp>(op)) {
    in.kind = ew::Instruction::Kind::Clip;
    in.numOperands = 1;
    in.params.alpha = boundIn(resultType.getElementType(), clip.getMin().convertToDouble());
    in.params.beta = boundIn(resultType.getElementType(), clip.getMax().convertToDouble());
  } else if (isElementwiseUnary(op)) {
    const int unary = ew::unaryNamed(name.str());
    if (unary < 0)
      return form;
    in.kind = ew::Instruction::Kind::Unary;
    in.unary = static_cast<ew::Unary>(unary);
    in.numOperands = 1;
    // The constants as the CPU kernel reads them from the step.
    in.params = ew::unaryParams(in.unary, [&](const char *attr, double fallback) {
      std::optional<cpu::AttrValue> value = engineAttr(op, attr);
      const double *real = value ? std::get_if<double>(&*value) : nullptr;
      return real ? *real : fallback;
    });
  } else if (isElementwiseBinary(op) && !isComparison(op)) {
    std::string binaryName = name.str();
    if (auto mod = dyn_cast<ModOp>(op)) {
      if (!mod.getFmod())
        return form; // the divisor's sign: integers only
      binaryName = "fmod";
    }
    const int binary = ew::binaryNamed(binaryName);
    if (binary < 0)
      return form;
    in.kind = ew::Instruction::Kind::Binary;
    in.binary = static_cast<ew::Binary>(binary);
    in.numOperands = 2;
  } else {
    return form;
  }
  form.kind = Form::Kind::Instruction;
  return form;
}

/// The value of a splat constant of a float type, which a program holds as
/// a literal.
std::optional<double> splatValue(Value value) {
  auto constant = value.getDefiningOp<ConstantOp>();
  if (!constant)
    return std::nullopt;
  auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
  if (!dense || !dense.isSplat() || !isa<FloatType>(dense.getElementType()))
    return std::nullopt;
  return dense.getSplatValue<APFloat>().convertToDouble();
}

struct FuseElementwisePass : impl::FuseElementwiseBase<FuseElementwisePass> {
  void runOnOperation() override {
    llvm::SmallPtrSet<Operation *, 32> taken;
    for (Block &block : getOperation().getBody()) {
      // Roots from the last op up: a group takes its members before an
      // earlier op could be tried as a root of its own. Members are erased
      // as they are fused, and marked taken first.
      llvm::SmallVector<Operation *> ops;
      for (Operation &op : llvm::reverse(block))
        ops.push_back(&op);
      for (Operation *root : ops)
        if (!taken.contains(root) && formOf(root).kind != Form::Kind::None)
          fuse(root, taken);
    }
  }

  void fuse(Operation *root, llvm::SmallPtrSet<Operation *, 32> &taken) {
    llvm::SetVector<Operation *> group;
    group.insert(root);
    for (size_t next = 0; next < group.size(); ++next) {
      Operation *member = group[next];
      for (Value operand : member->getOperands()) {
        Operation *producer = operand.getDefiningOp();
        if (!producer || producer->getBlock() != root->getBlock() || group.contains(producer) ||
            taken.contains(producer) || isa<ConstantOp>(producer) ||
            formOf(producer).kind == Form::Kind::None)
          continue;
        if (llvm::all_of(producer->getUsers(), [&](Operation *user) { return group.contains(user); }))
          group.insert(producer);
      }
    }
    if (group.size() < 2)
      return;

    // The program, members in block order (operands before their users).
    llvm::SmallVector<Operation *> members(group.begin(), group.end());
    llvm::sort(members, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
    ew::Program program;
    llvm::SmallVector<Value> inputs;
    llvm::DenseMap<Value, ew::Operand> encoded;
    auto operandOf = [&](Value value) {
      if (auto it = encoded.find(value); it != encoded.end())
        return it->second;
      ew::Operand operand;
      if (std::optional<double> literal = splatValue(value)) {
        operand.kind = ew::Operand::Kind::Literal;
        operand.literal = *literal;
      } else {
        operand.kind = ew::Operand::Kind::Input;
        operand.index = static_cast<int>(inputs.size());
        inputs.push_back(value);
      }
      encoded[value] = operand;
      return operand;
    };
    for (Operation *member : members) {
      const Form form = formOf(member);
      if (form.kind == Form::Kind::PassOn) {
        encoded[member->getResult(0)] = operandOf(member->getOperand(0));
        continue;
      }
      ew::Instruction instruction = form.instruction;
      for (int i = 0; i < instruction.numOperands; ++i) {
        instruction.operands[i] = operandOf(member->getOperand(static_cast<unsigned>(i)));
        // A where's condition is read as a bool input, never a literal.
        if (instruction.kind == ew::Instruction::Kind::Where && i == 0 &&
            instruction.operands[0].kind != ew::Operand::Kind::Input)
          return;
      }
      ew::Operand result;
      result.kind = ew::Operand::Kind::Value;
      result.index = static_cast<int>(program.code.size());
      program.code.push_back(instruction);
      encoded[member->getResult(0)] = result;
    }
    const ew::Operand &out = encoded[root->getResult(0)];
    if (program.code.empty() || out.kind != ew::Operand::Kind::Value ||
        out.index + 1 != static_cast<int>(program.code.size()) ||
        static_cast<int>(inputs.size()) > ew::kMaxGroupInputs ||
        static_cast<int>(program.code.size()) > ew::kMaxGroupInstructions)
      return; // stays as it was

    llvm::SmallVector<Location> locations;
    for (Operation *member : members)
      locations.push_back(member->getLoc());
    OpBuilder builder(root);
    auto fused = builder.create<ElementwiseGroupOp>(
        builder.getFusedLoc(locations), root->getResult(0).getType(), inputs,
        builder.getStringAttr(ew::formatProgram(program)));
    root->getResult(0).replaceAllUsesWith(fused.getResult());
    taken.insert(fused);
    llvm::SetVector<Operation *> constants; // the literals' constants
    for (Operation *member : llvm::reverse(members)) {
      for (Value operand : member->getOperands())
        if (auto constant = operand.getDefiningOp<ConstantOp>())
          constants.insert(constant);
      taken.insert(member);
      member->erase();
    }
    for (Operation *constant : constants)
      if (constant->use_empty()) {
        taken.insert(constant);
        constant->erase();
      }
  }
};

} // namespace
} // namespace tessel
