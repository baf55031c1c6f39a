//===- OpTable.h - ONNX op types, opset ranges, handlers --------*- C++ -*-===//
//
// The one table the importer dispatches on and `supportedOnnxOps()` lists.
// An entry is (op type, opset range, handler): the handler implements the op's
// semantics for models whose default-domain opset lies in the range, as
// onnx-mlir's op version map (src/Builder/OpBuildTable.inc) keys its builders
// by version. Where ONNX changed an op in a way the importer must follow
// (Clip's bounds from attributes to inputs at opset 11, Slice's at 10, the
// 2-D coercion of Softmax dropped at 13, ...), the op has one entry per
// semantics, and no handler tests the opset itself.
//
// An op's first entry starts at the since-version of its ONNX schema in force
// at opset kMinOpset (or where ONNX introduced the op, if later), and its last
// ends at kMaxOpset, or where ONNX next changed the op's semantics
// (semanticRevision: an entry registered open-ended stops there by itself,
// so a revision the importer does not implement yet is reported at the node,
// never imported with the old meaning). Revisions that only add element
// types, or inputs and attributes the handler already reads, keep the entry. So a model older than opset 7 is imported node by node
// where the node's op has not changed since the model's opset, and a node
// whose op has entries, none for the model's opset, is reported as
// unsupported at the node.
//
// The handler families register their entries, each from its own file
// (ElementwiseOps.cpp, ConvGemmOps.cpp, ...), into the table that get()
// builds once.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_COMPILER_ONNX_OPTABLE_H
#define TESSEL_COMPILER_ONNX_OPTABLE_H

#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tessel::importer {

class Node;

// The default-domain opsets the table covers: models of opset kMinOpset to
// kMaxOpset, and older ones where their ops are unchanged since (see above).
// 27 is the newest opset of the ONNX 1.22 node tests.
constexpr int64_t kMinOpset = 7;
constexpr int64_t kMaxOpset = 27;
// The newest default-domain opset the ONNX library here (Debian's 1.12)
// knows: its checker and shape inference see newer models through a view
// (ModelLoader.cpp).
constexpr int64_t kLibraryOpset = 17;

/// Default-domain opsets [first, last].
struct OpsetRange {
  int64_t first;
  int64_t last = kMaxOpset;
  bool contains(int64_t opset) const { return first <= opset && opset <= last; }
};

/// The first opset in (after, kMaxOpset] at which ONNX changed `opType`'s
/// semantics beyond new element types (for the ops the table imports; from
/// onnx/defs/operator_sets.h and the Changelog), or kMaxOpset + 1.
int64_t semanticRevision(llvm::StringRef opType, int64_t after);

/// Imports one node: builds its tessel ops and binds its outputs, or reports
/// at the node why it cannot.
using Handler = mlir::LogicalResult (*)(Node &);

/// One handler of an op type, for a range of opsets.
struct OpVersion {
  const char *opType;
  OpsetRange opsets;
  Handler handler;
};

class OpTable {
public:
  /// The table, every family registered (built on first use).
  static const OpTable &get();

  /// Adds entries; an op type's ranges must not overlap.
  void add(llvm::ArrayRef<OpVersion> versions);

  /// Whether `opType` has any entry.
  bool contains(llvm::StringRef opType) const { return entries.count(opType); }
  /// The entries of `opType`, in ascending opsets.
  llvm::ArrayRef<OpVersion> versions(llvm::StringRef opType) const;
  /// The entry of `opType` whose range holds `opset`; null if none.
  const OpVersion *find(llvm::StringRef opType, int64_t opset) const;
  /// Every op type with an entry, sorted.
  std::vector<std::string> opTypes() const;

private:
  llvm::StringMap<llvm::SmallVector<OpVersion, 1>> entries;
};

// The handler families, one file each.
void registerElementwiseOps(OpTable &table);
void registerConvGemmOps(OpTable &table);
void registerNormalizationOps(OpTable &table);
void registerPoolReduceOps(OpTable &table);
void registerDataMovementOps(OpTable &table);
void registerCompileTimeOps(OpTable &table);
void registerLossOps(OpTable &table);

} // namespace tessel::importer

#endif // TESSEL_COMPILER_ONNX_OPTABLE_H
