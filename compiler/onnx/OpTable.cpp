//===- OpTable.cpp - ONNX op types, opset ranges and their handlers -------===//
#include "OpTable.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/ErrorHandling.h"

#include <algorithm>

namespace tessel::importer {

const OpTable &OpTable::get() {
  static const OpTable table = [] {
    OpTable t;
    registerElementwiseOps(t);
    registerConvGemmOps(t);
    registerNormalizationOps(t);
    registerPoolReduceOps(t);
    registerDataMovementOps(t);
    registerCompileTimeOps(t);
    return t;
  }();
  return table;
}

void OpTable::add(llvm::ArrayRef<OpVersion> versions) {
  for (const OpVersion &version : versions) {
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
