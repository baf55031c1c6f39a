//===- detection.cpp - non_max_suppression on the CPU ---------------------===//
//
// ONNX NonMaxSuppression (tessel/nms.h says what it decides). Its result has
// a data-dependent row count: the kernel writes the selected rows (batch,
// class, box) first, zeros after them up to the static bound (so that a
// gather by the padding rows stays in range), and the count of selected
// rows into its second output, from which the engine takes the output's
// extent.
//
//===----------------------------------------------------------------------===//
#include "dispatch.h"
#include "registry.h"
#include "tessel/nms.h"

#include <algorithm>
#include <numeric>
#include <vector>

namespace tessel::cpu {
namespace {

KernelStatus nmsKernel(const Attrs &attrs, const std::vector<const TensorView *> &inputs,
                       const std::vector<TensorView *> &outputs) {
  if (inputs.size() != 2 || !inputs[0] || !inputs[1] || outputs.size() != 2 || !outputs[0] ||
      !outputs[1])
    return fail("non_max_suppression: expected boxes and scores, selected and count");
  const TensorView &boxes = *inputs[0], &scores = *inputs[1];
  TensorView &selected = *outputs[0], &count = *outputs[1];
  if (boxes.shape.size() != 3 || boxes.shape[2] != 4 || scores.shape.size() != 3 ||
      scores.shape[0] != boxes.shape[0] || scores.shape[2] != boxes.shape[1])
    return fail("non_max_suppression: boxes must be [batch, boxes, 4] and scores "
                "[batch, classes, boxes]");
  const int64_t batches = boxes.shape[0], classes = scores.shape[1], n = boxes.shape[1];
  const int64_t maxOut = std::min(attrs.getInt("max_output_boxes_per_class", 0), n);
  if (boxes.dtype != scores.dtype || selected.dtype != DType::I64 ||
      count.dtype != DType::I64 || count.numElements() != 1 || selected.shape.size() != 2 ||
      selected.shape[1] != 3 || selected.shape[0] != batches * classes * std::max<int64_t>(maxOut, 0))
    return fail("non_max_suppression: selected must be i64 [batches * classes * min(max "
                "output, boxes), 3] and count one i64");
  const bool centerPoint = attrs.getInt("center_point_box", 0) != 0;
  const float iouThreshold = static_cast<float>(attrs.getFloat("iou_threshold", 0));
  const bool hasScoreThreshold = attrs.has("score_threshold");
  const float scoreThreshold = static_cast<float>(attrs.getFloat("score_threshold", 0));

  int64_t *rows = static_cast<int64_t *>(selected.data);
  int64_t written = 0;
  bool handled = dispatchOnly<kFloat>(boxes.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T *b = static_cast<const T *>(boxes.data);
    const T *s = static_cast<const T *>(scores.data);
    std::vector<nms::Box> decoded(n);
    std::vector<float> score(n);
    std::vector<int64_t> order, kept;
    for (int64_t batch = 0; batch < batches; ++batch) {
      for (int64_t i = 0; i < n; ++i) {
        float corners[4];
        for (int k = 0; k < 4; ++k)
          corners[k] = static_cast<float>(loadElem(b[(batch * n + i) * 4 + k]));
        decoded[i] = nms::decode(corners, centerPoint);
      }
      for (int64_t c = 0; c < classes && maxOut > 0; ++c) {
        order.clear();
        kept.clear();
        for (int64_t i = 0; i < n; ++i) {
          score[i] = static_cast<float>(loadElem(s[(batch * classes + c) * n + i]));
          if (nms::candidate(score[i], hasScoreThreshold, scoreThreshold))
            order.push_back(i);
        }
        std::sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
          return nms::before(score[x], x, score[y], y);
        });
        for (int64_t i : order) {
          if (static_cast<int64_t>(kept.size()) == maxOut)
            break;
          bool suppressed = false;
          for (int64_t k : kept)
            if ((suppressed = nms::suppresses(decoded[k], decoded[i], iouThreshold)))
              break;
          if (suppressed)
            continue;
          kept.push_back(i);
          rows[written * 3] = batch;
          rows[written * 3 + 1] = c;
          rows[written * 3 + 2] = i;
          ++written;
        }
      }
    }
  });
  if (!handled)
    return unsupported("non_max_suppression", boxes.dtype);
  std::fill(rows + written * 3, rows + selected.numElements(), int64_t(0));
  *static_cast<int64_t *>(count.data) = written;
  return {};
}

} // namespace

void addDetectionKernels(KernelTable &table) { table["non_max_suppression"] = &nmsKernel; }

} // namespace tessel::cpu
