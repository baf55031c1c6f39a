//===- scratch.h - per-thread scratch buffers for the CPU kernels -*- C++ -*-===//
//
// The executor promises that a run allocates nothing. Kernels that need
// scratch (im2col chunks, packed weights, accumulators, converted operands,
// per-result accumulators of reductions) take it from these per-thread
// buffers, one per slot and element type, which grow to the largest request
// and are then kept until the thread ends: after an engine's first run the
// kernels that use them allocate nothing. A kernel uses each slot for one
// purpose at a time; kernels never call each other, so slots are not shared
// across a call.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_CPU_SCRATCH_H
#define TESSEL_RUNTIME_CPU_SCRATCH_H

#include <cstddef>
#include <vector>

namespace tessel::cpu {

enum ScratchSlot : int {
  kSlotCol,    // im2col chunk
  kSlotPacked, // packed weights / B panels
  kSlotAcc,    // accumulators
  kSlotRow,    // one epilogue row, one softmax row, per-result peaks
  kSlotIndex,  // tap tables, window offsets, batch strides
  kSlotA,      // a converted A operand
  kSlotIn0,    // converted inputs (conv_transpose, lrn)
  kSlotIn1,
  kSlotOut,    // a float result before rounding (conv_transpose)
  kSlotCount
};

template <typename T> T *scratch(ScratchSlot slot, size_t n) {
  thread_local std::vector<T> buffers[kSlotCount];
  std::vector<T> &b = buffers[slot];
  if (b.size() < n)
    b.resize(n);
  return b.data();
}

} // namespace tessel::cpu

#endif // TESSEL_RUNTIME_CPU_SCRATCH_H
