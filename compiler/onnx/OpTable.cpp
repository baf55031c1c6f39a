//===- OpTable.cpp - ONNX op types, opset ranges and their handlers -------===//
#include "OpTable.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/ErrorHandling.h"

#include <algorithm>

namespace tessel::importer {

/// Where ONNX changed the semantics of an op the table imports, after opset
/// kMinOpset's schemas: the opsets at which a model's node needs another
/// handler than the opset before. Only the changes of opsets 18 to
/// kMaxOpset are listed: the table's entries for older opsets give their
/// ranges themselves. Not listed, because the earlier handler serves them:
/// revisions that only add element types (opsets 19 to 25 for most ops, 22's
/// bfloat16 everywhere), AveragePool-19's dilations (the window reader
/// reads them), Cast-19's saturate (float8 only), Pad-19's wrap mode (the
/// handler refuses modes it lacks), ScatterND-18's max and min (its handler
/// reads the model's opset), ReduceMax/ReduceMin-20's bool (reduced as i32),
/// Range-27 (stash_type, f16 accumulation in float, as the import-time
/// evaluation does), Attention-24 and 25 (the handler refuses their
/// additions).
struct SemanticRevision {
  const char *opType;
  int64_t opset;
};
constexpr SemanticRevision kSemanticRevisions[] = {
    // Opset 18: the reductions' axes become an input, Pad gains axes, Split
    // num_outputs.
    {"Pad", 18},         {"Split", 18},          {"ReduceL1", 18},
    {"ReduceL2", 18},    {"ReduceLogSum", 18},   {"ReduceLogSumExp", 18},
    {"ReduceMax", 18},   {"ReduceMean", 18},     {"ReduceMin", 18},
    {"ReduceProd", 18},  {"ReduceSumSquare", 18},
};

int64_t semanticRevision(llvm::StringRef opType, int64_t after) {
  int64_t next = kMaxOpset + 1;
  for (const SemanticRevision &r : kSemanticRevisions)
    if (opType == r.opType && r.opset > after)
      next = std::min(next, r.opset);
  return next;
}

const OpTable &OpTable::get() {
  static const OpTable table = [] {
    OpTable t;
    registerElementwiseOps(t);
    registerConvGemmOps(t);
    registerNormalizationOps(t);
    registerPoolReduceOps(t);
    registerDataMovementOps(t);
    registerCompileTimeOps(t);
    registerLossOps(t);
    return t;
  }();
  return table;
}

void OpTable::add(llvm::ArrayRef<OpVersion> versions) {
  for (OpVersion version : versions) {
    // An open-ended entry stops where ONNX next changed the op.
    if (version.opsets.last == kMaxOpset)
      version.opsets.last = semanticRevision(version.opType, version.opsets.first) - 1;
    llvm::SmallVector<OpVersion, 1> &list = entries[version.opType];
    // A programming error in a family's table, found by any test that
    // imports: ranges must be well formed and disjoint.
    if (version.opsets.first > version.opsets.last ||
        llvm::any_of(list, [&](const OpVersion &other) {
          return other.opsets.first <= version.opsets.last &&
                 version.opsets.first <= other.opsets.last;
        }))
      llvm::report_fatal_error(llvm::Twine("tessel importer: overlapping or empty "
                                           "opset range for ") +
                               version.opType);
    list.insert(llvm::upper_bound(list, version,
                                  [](const OpVersion &a, const OpVersion &b) {
                                    return a.opsets.first < b.opsets.first;
                                  }),
                version);
  }
}

llvm::ArrayRef<OpVersion> OpTable::versions(llvm::StringRef opType) const {
  auto it = entries.find(opType);
  if (it == entries.end())
    return {};
  return it->second;
}

const OpVersion *OpTable::find(llvm::StringRef opType, int64_t opset) const {
  for (const OpVersion &version : versions(opType))
    if (version.opsets.contains(opset))
      return &version;
  return nullptr;
}

std::vector<std::string> OpTable::opTypes() const {
  std::vector<std::string> ops;
  for (const auto &entry : entries)
    ops.push_back(entry.getKey().str());
  std::sort(ops.begin(), ops.end());
  return ops;
}

} // namespace tessel::importer
