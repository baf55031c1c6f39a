//===- gather_test.cpp - gather.cpp's indexing kernels --------------------===//
//
// gather.cpp's kernels (gather, gather_elements, gather_nd, scatter_nd)
// against plain index loops: negative indices, i32 and i64 indices, and
// out-of-range indices rejected before anything is written.
//
//===----------------------------------------------------------------------===//
#include "TestTensor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace tessel::test {
namespace {

using cpu::DType;
using cpu::KernelStatus;

//===----------------------------------------------------------------------===//
// gather
//===----------------------------------------------------------------------===//

template <typename I> void checkGather(DType indexType) {
  const std::vector<int64_t> shape = {3, 4, 5}, indexShape = {2, 3};
  std::vector<float> values(numel(shape));
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<float>(i);
  std::vector<I> indices = {0, 3, -1, -4, 2, 1};
  Tensor data = makeTensor(DType::F32, shape, values);
  Tensor idx = makeTensor(indexType, indexShape, indices);
  for (int64_t axis : {1, -2}) {
    Tensor out(DType::F32, {3, 2, 3, 5});
    KernelStatus s = run("gather", makeAttrs({{"axis", axis}}), {&data, &idx}, out);
    ASSERT_TRUE(s.ok()) << s.error;
    std::vector<float> result = out.values<float>();
    for (int64_t o = 0; o < 3 * 2 * 3 * 5; ++o) {
      std::vector<int64_t> index = unravel(o, {3, 2, 3, 5});
      int64_t k = static_cast<int64_t>(indices[index[1] * 3 + index[2]]);
      if (k < 0)
        k += 4;
      ASSERT_EQ(result[o], values[ravel({index[0], k, index[3]}, shape)]) << o;
    }
  }
}

TEST(RuntimeMovement, GathersWithI32AndI64Indices) {
  checkGather<int32_t>(DType::I32);
  checkGather<int64_t>(DType::I64);
}

TEST(RuntimeMovement, GatherRejectsOutOfRangeIndicesWithoutWriting) {
  Tensor data = makeTensor(DType::F32, {4}, std::vector<float>{1, 2, 3, 4});
  Tensor idx = makeTensor(DType::I32, {3}, std::vector<int32_t>{0, 1, -5});
  Tensor out = makeTensor(DType::F32, {3}, std::vector<float>{-1, -1, -1});
  EXPECT_EQ(run("gather", makeAttrs({{"axis", int64_t(0)}}), {&data, &idx}, out).error,
            "gather: index -5 is out of range for axis 0 of extent 4");
  EXPECT_EQ(out.values<float>(), (std::vector<float>{-1, -1, -1}));

  Tensor floatIdx(DType::F32, {3});
  EXPECT_EQ(run("gather", makeAttrs({{"axis", int64_t(0)}}), {&data, &floatIdx}, out).error,
            "gather: indices must be i32 or i64, not f32");
  Tensor wrongShape(DType::F32, {2});
  EXPECT_FALSE(run("gather", makeAttrs({{"axis", int64_t(0)}}), {&data, &idx}, wrongShape).ok());
}


//===----------------------------------------------------------------------===//
// gather_elements
//===----------------------------------------------------------------------===//

TEST(RuntimeMovement, GatherElementsPicksAlongTheAxis) {
  // data [3, 4, 2]; indices [2, 5, 2] along axis 1 (longer than the data
  // there, shorter along dim 0), negative ones counting from the end.
  const std::vector<int64_t> shape = {3, 4, 2}, indexShape = {2, 5, 2};
  std::vector<float> values(numel(shape));
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<float>(i) * 0.5f;
  std::vector<int64_t> indices(numel(indexShape));
  for (size_t i = 0; i < indices.size(); ++i)
    indices[i] = static_cast<int64_t>(i * 7 % 8) - 4; // -4 .. 3
  Tensor data = makeTensor(DType::F32, shape, values);
  Tensor idx = makeTensor(DType::I64, indexShape, indices);
  Tensor out(DType::F32, indexShape);
  ASSERT_TRUE(run("gather_elements", makeAttrs({{"axis", int64_t(-2)}}), {&data, &idx}, out).ok());
  std::vector<float> result = out.values<float>();
  for (int64_t i = 0; i < indexShape[0]; ++i)
    for (int64_t j = 0; j < indexShape[1]; ++j)
      for (int64_t k = 0; k < indexShape[2]; ++k) {
        int64_t v = indices[(i * indexShape[1] + j) * indexShape[2] + k];
        if (v < 0)
          v += shape[1];
        ASSERT_EQ(result[(i * indexShape[1] + j) * indexShape[2] + k],
                  values[(i * shape[1] + v) * shape[2] + k])
            << i << "," << j << "," << k;
      }

  // An index out of range, or indices that do not fit the data, are errors.
  indices[3] = 4;
  Tensor bad = makeTensor(DType::I64, indexShape, indices);
  EXPECT_EQ(run("gather_elements", makeAttrs({{"axis", int64_t(1)}}), {&data, &bad}, out).error,
            "gather_elements: index 4 is out of range for axis 1 of extent 4");
  Tensor wide = makeTensor(DType::I64, {4, 1, 1}, std::vector<int64_t>{0, 0, 0, 0});
  Tensor wideOut(DType::F32, {4, 1, 1});
  EXPECT_EQ(
      run("gather_elements", makeAttrs({{"axis", int64_t(1)}}), {&data, &wide}, wideOut).error,
      "gather_elements: indices of shape [4, 1, 1] and output of shape [4, 1, 1] do not "
      "fit data of shape [3, 4, 2] along axis 1");
}


//===----------------------------------------------------------------------===//
// gather_nd
//===----------------------------------------------------------------------===//

/// ONNX's GatherND example: the index tuples address whole elements (k = 2
/// of rank 2) or rows (k = 1).
TEST(RuntimeMovement, GatherNDTakesTheSlicesTheTuplesAddress) {
  Tensor data = makeTensor(DType::I32, {2, 2}, std::vector<int32_t>{0, 1, 2, 3});
  Tensor pairs = makeTensor(DType::I64, {2, 2}, std::vector<int64_t>{0, 0, 1, 1});
  Tensor elements(DType::I32, {2});
  ASSERT_TRUE(run("gather_nd", makeAttrs({{"batch_dims", int64_t(0)}}), {&data, &pairs},
                  elements).ok());
  EXPECT_EQ(elements.values<int32_t>(), (std::vector<int32_t>{0, 3}));
  Tensor rows = makeTensor(DType::I64, {2, 1}, std::vector<int64_t>{1, -2});
  Tensor sliced(DType::I32, {2, 2});
  ASSERT_TRUE(run("gather_nd", makeAttrs({{"batch_dims", int64_t(0)}}), {&data, &rows},
                  sliced).ok());
  EXPECT_EQ(sliced.values<int32_t>(), (std::vector<int32_t>{2, 3, 0, 1}));
}

/// batch_dims 1 on data [3, 4, 5, 2] with indices [3, 2, 2] (k = 2): each
/// batch's two tuples address a [2]-slice of the batch's [4, 5, 2] block,
/// checked against the definition element by element, negative indices
/// included.
TEST(RuntimeMovement, GatherNDWithBatchDimsMatchesTheDefinition) {
  const std::vector<int64_t> shape = {3, 4, 5, 2}, indexShape = {3, 2, 2};
  std::vector<float> values(numel(shape));
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<float>(i) * 0.5f - 7.0f;
  const std::vector<int64_t> indices = {0, 4, -1, -5, 2, 2, 3, 0, -4, 1, 1, -1};
  Tensor data = makeTensor(DType::F32, shape, values);
  Tensor idx = makeTensor(DType::I64, indexShape, indices);
  // indices.shape[:-1] + data.shape[1 + 2:]
  const std::vector<int64_t> outShape = {3, 2, 2};
  Tensor out(DType::F32, outShape);
  KernelStatus s = run("gather_nd", makeAttrs({{"batch_dims", int64_t(1)}}), {&data, &idx}, out);
  ASSERT_TRUE(s.ok()) << s.error;
  std::vector<float> result = out.values<float>();
  for (int64_t batch = 0; batch < 3; ++batch)
    for (int64_t t = 0; t < 2; ++t)
      for (int64_t j = 0; j < 2; ++j) {
        int64_t a = indices[(batch * 2 + t) * 2], c = indices[(batch * 2 + t) * 2 + 1];
        a = a < 0 ? a + 4 : a;
        c = c < 0 ? c + 5 : c;
        ASSERT_EQ(result[ravel({batch, t, j}, outShape)], values[ravel({batch, a, c, j}, shape)])
            << batch << "," << t << "," << j;
      }
}

TEST(RuntimeMovement, GatherNDRejectsBadIndicesWithoutWriting) {
  Tensor data = makeTensor(DType::F32, {2, 3}, std::vector<float>{1, 2, 3, 4, 5, 6});
  Tensor idx = makeTensor(DType::I64, {2, 2}, std::vector<int64_t>{0, 1, 1, 3});
  Tensor out = makeTensor(DType::F32, {2}, std::vector<float>{-1, -1});
  EXPECT_EQ(run("gather_nd", makeAttrs({{"batch_dims", int64_t(0)}}), {&data, &idx}, out).error,
            "gather_nd: index 3 is out of range for dim 1 of extent 3");
  EXPECT_EQ(out.values<float>(), (std::vector<float>{-1, -1}));
  // A tuple longer than the data's rank, or an output of another shape.
  Tensor triple = makeTensor(DType::I64, {1, 3}, std::vector<int64_t>{0, 0, 0});
  Tensor one(DType::F32, {1});
  EXPECT_EQ(run("gather_nd", makeAttrs({{"batch_dims", int64_t(0)}}), {&data, &triple}, one).error,
            "gather_nd: data of shape [2, 3], indices of shape [1, 3], batch_dims 0 and output "
            "of shape [1] do not fit");
  Tensor i32 = makeTensor(DType::I32, {2, 2}, std::vector<int32_t>{0, 1, 1, 2});
  EXPECT_EQ(run("gather_nd", makeAttrs({{"batch_dims", int64_t(0)}}), {&data, &i32}, out).error,
            "gather_nd: indices must be i64, not i32");
}

//===----------------------------------------------------------------------===//
// scatter_nd
//===----------------------------------------------------------------------===//

/// ONNX's ScatterND examples: single elements of a vector (k = 1 of rank 1),
/// and whole matrices of a [4, 4, 4] tensor (k = 1 of rank 3).
TEST(RuntimeMovement, ScatterNDWritesTheSlicesTheTuplesAddress) {
  Tensor data = makeTensor(DType::F32, {8}, std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8});
  Tensor idx = makeTensor(DType::I64, {4, 1}, std::vector<int64_t>{4, 3, 1, 7});
  Tensor updates = makeTensor(DType::F32, {4}, std::vector<float>{9, 10, 11, 12});
  Tensor out(DType::F32, {8});
  ASSERT_TRUE(run("scatter_nd", makeAttrs({{"reduction", std::string("none")}}),
                  {&data, &idx, &updates}, out).ok());
  EXPECT_EQ(out.values<float>(), (std::vector<float>{1, 11, 3, 10, 9, 6, 7, 12}));

  std::vector<int32_t> cube(64);
  for (int i = 0; i < 64; ++i)
    cube[i] = i;
  Tensor data3 = makeTensor(DType::I32, {4, 4, 4}, cube);
  Tensor idx3 = makeTensor(DType::I64, {2, 1}, std::vector<int64_t>{0, -2});
  std::vector<int32_t> planes(32);
  for (int i = 0; i < 32; ++i)
    planes[i] = 100 + i;
  Tensor updates3 = makeTensor(DType::I32, {2, 4, 4}, planes);
  Tensor out3(DType::I32, {4, 4, 4});
  ASSERT_TRUE(run("scatter_nd", makeAttrs({{"reduction", std::string("none")}}),
                  {&data3, &idx3, &updates3}, out3).ok());
  std::vector<int32_t> want = cube;
  for (int i = 0; i < 16; ++i) {
    want[i] = 100 + i;      // plane 0
    want[32 + i] = 116 + i; // plane -2 = 2
  }
  EXPECT_EQ(out3.values<int32_t>(), want);
}

/// Every reduction on f32 with repeated tuples (k = 2 of rank 3: rows of
/// a [3, 4, 5] tensor), against a float64 loop over the tuples in order;
/// each f32 result is one rounding of an exact small-integer-step value.
TEST(RuntimeMovement, ScatterNDReductionsCombineRepeatedTuplesInOrder) {
  const std::vector<int64_t> shape = {3, 4, 5};
  std::vector<float> values(numel(shape));
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<float>(i % 7) - 3.0f;
  const std::vector<int64_t> tuples = {0, 1, 2, -1, 0, 1, 1, 2, 0, -3};
  std::vector<float> updates(5 * 5);
  for (size_t i = 0; i < updates.size(); ++i)
    updates[i] = static_cast<float>((i * 3) % 11) * 0.5f - 2.0f;
  Tensor data = makeTensor(DType::F32, shape, values);
  Tensor idx = makeTensor(DType::I64, {5, 2}, tuples);
  Tensor upd = makeTensor(DType::F32, {5, 5}, updates);
  for (const char *reduction : {"add", "mul", "max", "min"}) {
    std::vector<double> want(values.begin(), values.end());
    for (int t = 0; t < 5; ++t) {
      int64_t a = tuples[t * 2], b = tuples[t * 2 + 1];
      a = a < 0 ? a + 3 : a;
      b = b < 0 ? b + 4 : b;
      for (int j = 0; j < 5; ++j) {
        double &e = want[static_cast<size_t>(ravel({a, b, j}, shape))];
        const double u = updates[static_cast<size_t>(t * 5 + j)];
        const std::string r = reduction;
        e = r == "add" ? e + u : r == "mul" ? e * u : r == "max" ? std::max(e, u) : std::min(e, u);
      }
    }
    Tensor out(DType::F32, shape);
    KernelStatus s = run("scatter_nd", makeAttrs({{"reduction", std::string(reduction)}}),
                         {&data, &idx, &upd}, out);
    ASSERT_TRUE(s.ok()) << reduction << ": " << s.error;
    std::vector<float> got = out.values<float>();
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_EQ(got[i], static_cast<float>(want[i])) << reduction << " element " << i;
  }
}

TEST(RuntimeMovement, ScatterNDRejectsBadOperandsWithoutWriting) {
  Tensor data = makeTensor(DType::F32, {2, 3}, std::vector<float>{1, 2, 3, 4, 5, 6});
  Tensor idx = makeTensor(DType::I64, {2, 2}, std::vector<int64_t>{0, 1, 1, 3});
  Tensor upd = makeTensor(DType::F32, {2}, std::vector<float>{7, 8});
  Tensor out = makeTensor(DType::F32, {2, 3}, std::vector<float>{-1, -1, -1, -1, -1, -1});
  const cpu::Attrs none = makeAttrs({{"reduction", std::string("none")}});
  EXPECT_EQ(run("scatter_nd", none, {&data, &idx, &upd}, out).error,
            "scatter_nd: index 3 is out of range for dim 1 of extent 3");
  EXPECT_EQ(out.values<float>(), (std::vector<float>{-1, -1, -1, -1, -1, -1}));
  Tensor rows = makeTensor(DType::I64, {2, 1}, std::vector<int64_t>{0, 1});
  EXPECT_EQ(run("scatter_nd", none, {&data, &rows, &upd}, out).error,
            "scatter_nd: data of shape [2, 3], indices of shape [2, 1], updates of shape [2] "
            "and output of shape [2, 3] do not fit");
  EXPECT_EQ(run("scatter_nd", makeAttrs({{"reduction", std::string("sub")}}),
                {&data, &idx, &upd}, out).error,
            "scatter_nd: unknown reduction 'sub'");
  Tensor flags(DType::Bool, {2, 3}), flagUpd(DType::Bool, {2}), flagOut(DType::Bool, {2, 3});
  Tensor ok = makeTensor(DType::I64, {2, 2}, std::vector<int64_t>{0, 1, 1, 2});
  EXPECT_EQ(run("scatter_nd", makeAttrs({{"reduction", std::string("add")}}),
                {&flags, &ok, &flagUpd}, flagOut).error,
            "scatter_nd: reduction 'add' needs a numeric dtype, not bool");
}

} // namespace
} // namespace tessel::test
