//===- op_table_test.cpp - the importer's op table against ONNX's schemas -===//
//
// Every op type's opset ranges (compiler/onnx/OpTable.h) checked against the
// ONNX schema registry of the library here (1.12, opsets to kLibraryOpset):
// they must accept a node exactly where the importer always has (every opset
// from kMinOpset on where ONNX defines the op, older ones where the op is
// unchanged since kMinOpset), and split only where ONNX changed the op.
// Beyond the library's opsets, against OpTable's own list of ONNX's later
// revisions: each op the library knows is imported at every opset to
// kMaxOpset, in ranges split exactly at its semantic revisions; an op newer
// than the library from its first opset on.
//
//===----------------------------------------------------------------------===//
#ifndef ONNX_ML
#define ONNX_ML 1
#endif
#ifndef ONNX_NAMESPACE
#define ONNX_NAMESPACE onnx
#endif
#include "onnx/defs/schema.h"

#include "onnx/OpTable.h"

#include <gtest/gtest.h>

namespace {

using tessel::importer::kLibraryOpset;
using tessel::importer::kMaxOpset;
using tessel::importer::kMinOpset;
using tessel::importer::semanticRevision;
using tessel::importer::OpTable;
using tessel::importer::OpVersion;

TEST(ImporterOpTable, RangesAcceptWhatTheOnnxSchemasAllow) {
  const OpTable &table = OpTable::get();
  for (const std::string &op : table.opTypes()) {
    const onnx::OpSchema *base =
        onnx::OpSchemaRegistry::Schema(op, kMinOpset, "");
    for (int64_t opset = 1; opset <= kLibraryOpset; ++opset) {
      const onnx::OpSchema *schema = onnx::OpSchemaRegistry::Schema(op, opset, "");
      // Where ONNX has no schema the checker rejects the model before import.
      bool accepted =
          schema && (opset >= kMinOpset ||
                     (base && schema->SinceVersion() == base->SinceVersion()));
      EXPECT_EQ(table.find(op, opset) != nullptr, accepted)
          << op << " at opset " << opset;
    }
  }
}

TEST(ImporterOpTable, RangesBeyondTheLibrarySplitAtTheSemanticRevisions) {
  const OpTable &table = OpTable::get();
  for (const std::string &op : table.opTypes()) {
    const bool known = onnx::OpSchemaRegistry::Schema(op, kLibraryOpset, "") != nullptr;
    llvm::ArrayRef<OpVersion> versions = table.versions(op);
    // An op the library does not know starts where ONNX introduced it, and
    // has no other entry (Gelu, opset 20).
    if (!known) {
      ASSERT_EQ(versions.size(), 1u) << op;
      EXPECT_GT(versions.front().opsets.first, kLibraryOpset) << op;
    }
    for (int64_t opset = kLibraryOpset + 1; opset <= kMaxOpset; ++opset)
      EXPECT_EQ(table.find(op, opset) != nullptr,
                known || opset >= versions.front().opsets.first)
          << op << " at opset " << opset;
    for (const OpVersion &version : versions) {
      if (version.opsets.last >= kLibraryOpset && version.opsets.last < kMaxOpset)
        EXPECT_EQ(version.opsets.last + 1, semanticRevision(op, version.opsets.first))
            << op << ": a range ends where ONNX did not change the op";
      if (known && version.opsets.first > kLibraryOpset)
        EXPECT_EQ(version.opsets.first, semanticRevision(op, version.opsets.first - 1))
            << op << ": a range starts where ONNX did not change the op";
    }
  }
  // What opset 18 changed, imported with the new meaning.
  for (const char *op : {"ReduceMean", "ReduceMax", "Pad", "Split"}) {
    ASSERT_NE(table.find(op, 17), nullptr) << op;
    ASSERT_NE(table.find(op, 18), nullptr) << op;
    EXPECT_NE(table.find(op, 17)->handler, table.find(op, 18)->handler) << op;
  }
}

TEST(ImporterOpTable, RangesAreContiguousAndSplitWhereOnnxChangedTheOp) {
  const OpTable &table = OpTable::get();
  for (const std::string &op : table.opTypes()) {
    llvm::ArrayRef<OpVersion> versions = table.versions(op);
    ASSERT_FALSE(versions.empty()) << op;
    EXPECT_EQ(versions.back().opsets.last, kMaxOpset) << op;
    for (size_t i = 0; i < versions.size(); ++i) {
      const OpVersion &version = versions[i];
      EXPECT_LE(version.opsets.first, version.opsets.last) << op;
      // Each range the library can judge starts at a version of the op's
      // schema (the later ones: RangesBeyondTheLibrary...).
      if (version.opsets.first <= kLibraryOpset) {
        const onnx::OpSchema *schema =
            onnx::OpSchemaRegistry::Schema(op, version.opsets.first, "");
        ASSERT_NE(schema, nullptr) << op << " at opset " << version.opsets.first;
        EXPECT_EQ(schema->SinceVersion(), version.opsets.first) << op;
      }
      if (i > 0)
        EXPECT_EQ(version.opsets.first, versions[i - 1].opsets.last + 1) << op;
    }
  }
}

TEST(ImporterOpTable, FindPicksTheEntryForTheOpset) {
  const OpTable &table = OpTable::get();
  const OpVersion *before = table.find("Slice", 9), *after = table.find("Slice", 10);
  ASSERT_NE(before, nullptr);
  ASSERT_NE(after, nullptr);
  EXPECT_NE(before->handler, after->handler);
  EXPECT_EQ(after, table.find("Slice", kMaxOpset));
  EXPECT_EQ(table.find("Slice", kMaxOpset + 1), nullptr);
  EXPECT_EQ(table.find("Dropout", 6), nullptr); // changed at opset 7
  EXPECT_NE(table.find("Relu", 6), nullptr);    // unchanged from 6 to 7
  EXPECT_EQ(table.find("Relu", 5), nullptr);
  EXPECT_FALSE(table.contains("LSTM"));
}

} // namespace
