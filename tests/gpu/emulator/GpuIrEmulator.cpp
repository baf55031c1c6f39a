//===- GpuIrEmulator.cpp - runs a generated GPU kernel's IR on the CPU ----===//
//
// The emulator's interpreter: blocks one after another, structured control
// flow with a mask of active threads, MMA ops per warp, memory accesses
// checked for bounds, alignment and shared-memory races.
//
//===----------------------------------------------------------------------===//
#include "GpuIrEmulator.h"

#include "CudaCheck.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

using namespace mlir;
using tessel::gpucheck::fromHalf;
using tessel::gpucheck::toHalf;

namespace tessel::gpuemu {

namespace {
constexpr int kWarp = 32;
constexpr int kWarpgroup = 128;
} // namespace

bool Emulator::run() {
  for (uint32_t z = 0; z < grid[2]; ++z)
    for (uint32_t y = 0; y < grid[1]; ++y)
      for (uint32_t x = 0; x < grid[0]; ++x) {
        block = {x, y, z};
        if (!runBlock())
          return false;
      }
  return true;
}

bool Emulator::fail(Operation *op, const std::string &what) {
  if (error.empty()) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << what << " in block (" << block[0] << "," << block[1] << "," << block[2] << ") at ";
    op->print(os, OpPrintingFlags().skipRegions());
    error = text;
  }
  return false;
}

bool Emulator::runBlock() {
  values.clear();
  matrices.clear();
  mems.clear();
  sharedBuffers.clear();
  sharedAccess.clear();
  epoch = 0;
  openCopies.assign(threads, {});
  copyGroups.assign(threads, {});
  dynamicShared = nullptr;
  wgmma.assign((threads + kWarpgroup - 1) / kWarpgroup, {});
  wgmmaGroupIds = 0;
  mbarriers.clear();
  for (WgmmaState &w : wgmma)
    w.open = wgmmaGroupIds++;
  for (auto [i, arg] : llvm::enumerate(func.getArguments())) {
    if (isa<LLVM::LLVMPointerType>(arg.getType())) {
      // A pointer argument (a TMA kernel's tensor map): (index + 1) << 40.
      auto &out = val(arg);
      for (int t = 0; t < threads; ++t)
        out[t].i = int64_t(i + 1) << kArgAddressShift;
      continue;
    }
    Mem m;
    m.buffer = &args[i];
    m.type = cast<MemRefType>(arg.getType());
    mems[arg.getAsOpaquePointer()] = m;
  }
  if (outWrites.empty())
    outWrites.assign(args.back().size(), 0);
  pendingStores.clear();
  std::vector<bool> all(threads, true);
  if (!runBlock(func.getBody().front(), all))
    return false;
  if (!pendingStores.empty())
    return fail(func, "a TMA store not waited for before the block ended");
  return true;
}

bool Emulator::runBlock(Block &body, const std::vector<bool> &mask) {
  for (Operation &op : body)
    if (!step(&op, mask))
      return false;
  return true;
}

std::vector<Emulator::Elt> &Emulator::val(Value v) {
  auto &slot = values[v.getAsOpaquePointer()];
  if (slot.empty())
    slot.resize(threads);
  return slot;
}

float Emulator::round(Type type, float x) {
  return type.isF16() ? fromHalf(toHalf(x)) : x;
}

bool Emulator::address(Operation *op, const Mem &m, ArrayRef<int64_t> indices,
                       int64_t &offset) {
  ArrayRef<int64_t> shape = m.type.getShape();
  int64_t linear = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (indices[d] < 0 || indices[d] >= shape[d])
      return fail(op, "index " + std::to_string(indices[d]) + " out of bounds " +
                          std::to_string(shape[d]) + " (dim " + std::to_string(d) + ")");
    linear = linear * shape[d] + indices[d];
  }
  offset = m.byteOffset + linear * elementBytes(m.type.getElementType());
  if (offset < 0 || offset + elementBytes(m.type.getElementType()) > int64_t(m.buffer->size()))
    return fail(op, "access past the buffer");
  return true;
}

int64_t Emulator::elementBytes(Type type) {
  if (auto vec = dyn_cast<VectorType>(type))
    return vec.getNumElements() * elementBytes(vec.getElementType());
  return type.getIntOrFloatBitWidth() / 8;
}

bool Emulator::touchShared(Operation *op, const Mem &m, int64_t offset, int64_t bytes,
                           int actor, bool write) {
  if (!m.shared)
    return true;
  std::vector<Access> &acc = sharedAccess[m.buffer];
  if (acc.empty())
    acc.resize(m.buffer->size());
  for (int64_t b = offset; b < offset + bytes; ++b) {
    Access &a = acc[b];
    bool writtenNow = a.writeEpoch == epoch && a.writer != actor;
    if (write) {
      if (writtenNow)
        return fail(op, "shared write after another thread's write, no barrier between");
      if (a.readEpoch == epoch && (a.manyReaders || a.reader != actor))
        return fail(op, "shared write after another thread's read, no barrier between");
      a.writeEpoch = epoch;
      a.writer = actor;
    } else {
      if (a.writeEpoch < 0)
        return fail(op, "shared read of a byte never written");
      if (writtenNow)
        return fail(op, "shared read of another thread's write, no barrier between");
      if (a.readEpoch == epoch && a.reader != actor)
        a.manyReaders = true;
      else if (a.readEpoch != epoch) {
        a.manyReaders = false;
        a.reader = actor;
      }
      a.readEpoch = epoch;
    }
  }
  return true;
}

float Emulator::loadScalar(Type type, const uint8_t *p) {
  if (type.isF16()) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return fromHalf(h);
  }
  float f;
  std::memcpy(&f, p, 4);
  return f;
}

void Emulator::storeScalar(Type type, uint8_t *p, float x) {
  if (type.isF16()) {
    uint16_t h = toHalf(x);
    std::memcpy(p, &h, 2);
  } else {
    std::memcpy(p, &x, 4);
  }
}

bool Emulator::stepFor(scf::ForOp loop, const std::vector<bool> &mask) {
  Block &body = *loop.getBody();
  std::vector<Elt> lb = val(loop.getLowerBound()), ub = val(loop.getUpperBound()),
                   st = val(loop.getStep());
  size_t n = loop.getNumResults();
  // Iteration state per thread (or per warp for MMA values).
  for (size_t r = 0; r < n; ++r) {
    Value init = loop.getInitArgs()[r], arg = loop.getRegionIterArgs()[r];
    if (isa<gpu::MMAMatrixType>(init.getType()))
      matrices[arg.getAsOpaquePointer()] = matrices[init.getAsOpaquePointer()];
    else
      val(arg) = val(init);
  }
  std::vector<int64_t> iv(threads);
  for (int t = 0; t < threads; ++t)
    iv[t] = lb[t].i;
  while (true) {
    std::vector<bool> active(threads, false);
    bool any = false;
    for (int t = 0; t < threads; ++t) {
      active[t] = mask[t] && iv[t] < ub[t].i;
      any = any || active[t];
    }
    if (!any)
      break;
    for (int t = 0; t < threads; ++t)
      val(loop.getInductionVar())[t].i = iv[t];
    if (!runBlock(body, active))
      return false;
    auto yield = cast<scf::YieldOp>(body.getTerminator());
    for (size_t r = 0; r < n; ++r) {
      Value next = yield.getOperand(r), arg = loop.getRegionIterArgs()[r];
      if (isa<gpu::MMAMatrixType>(next.getType())) {
        matrices[arg.getAsOpaquePointer()] = matrices[next.getAsOpaquePointer()];
        continue;
      }
      std::vector<Elt> nv = val(next);
      std::vector<Elt> &av = val(arg);
      for (int t = 0; t < threads; ++t)
        if (active[t])
          av[t] = nv[t];
    }
    for (int t = 0; t < threads; ++t)
      if (active[t])
        iv[t] += st[t].i;
  }
  for (size_t r = 0; r < n; ++r) {
    Value arg = loop.getRegionIterArgs()[r];
    if (isa<gpu::MMAMatrixType>(arg.getType()))
      matrices[loop.getResult(r).getAsOpaquePointer()] = matrices[arg.getAsOpaquePointer()];
    else
      val(loop.getResult(r)) = val(arg);
  }
  return true;
}

struct Emulator::Sides {
  std::mutex mutex;
  std::condition_variable turn;
  int running = 0;
  struct State {
    bool ended = false, waiting = false;
    int64_t progressAtWait = 0;
    int join = -1; ///< the side this one waits to end (its if's else side)
  };
  std::vector<State> states;
  /// Whether side k can run: not ended, not joining a side still running,
  /// not waiting on what has not changed since.
  bool canRun(int k, int64_t progress) const {
    const State &s = states[k];
    return !s.ended && !(s.join >= 0 && !states[s.join].ended) &&
           !(s.waiting && s.progressAtWait == progress);
  }
  /// The side after `me` (cyclically) that can run, or -1.
  int next(int me, int64_t progress) const {
    const int n = int(states.size());
    for (int k = 1; k < n; ++k)
      if (canRun((me + k) % n, progress))
        return (me + k) % n;
    return -1;
  }
  /// Where nothing can run: a side that waits on an mbarrier (not one that
  /// joins a side still running), to wake and fail; -1 if none.
  int waiter() const {
    for (size_t k = 0; k < states.size(); ++k)
      if (!states[k].ended && (states[k].join < 0 || states[states[k].join].ended))
        return int(k);
    return -1;
  }
};

bool Emulator::stepRoles(scf::IfOp ifOp, const std::vector<bool> &thenMask,
                         const std::vector<bool> &elseMask) {
  std::unique_ptr<Sides> owned;
  if (!sides) {
    owned = std::make_unique<Sides>();
    sides = owned.get();
    sides->states.emplace_back();
    side = 0;
  }
  Sides &s = *sides;
  const int me = side;
  int other;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    other = int(s.states.size());
    s.states.emplace_back();
  }
  bool otherOk = false;
  std::thread thread([&] {
    {
      std::unique_lock<std::mutex> lock(s.mutex);
      s.turn.wait(lock, [&] { return s.running == other; });
    }
    side = other;
    otherOk = runBlock(ifOp.getElseRegion().front(), elseMask);
    endSide();
  });
  bool ok = runBlock(ifOp.getThenRegion().front(), thenMask);
  // The if completes once the else side has ended too: this side runs again
  // only then.
  {
    std::unique_lock<std::mutex> lock(s.mutex);
    s.states[me].join = other;
    if (!s.states[other].ended) {
      int to = s.next(me, progress);
      if (to < 0) {
        // Nothing can run: a side that waits fails there, and the others
        // after it, until the else side has ended.
        ok = fail(ifOp, "a side of a warp-specialized kernel never ends (a deadlock)");
        to = s.waiter();
      }
      s.running = to;
      s.turn.notify_all();
      s.turn.wait(lock, [&] { return s.running == me; });
    }
    s.states[me].join = -1;
  }
  thread.join();
  side = me;
  if (owned) {
    sides = nullptr;
    side = -1;
  }
  return ok && otherOk;
}

bool Emulator::handOver() {
  if (!sides)
    return false;
  Sides &s = *sides;
  const int me = side;
  std::unique_lock<std::mutex> lock(s.mutex);
  const int to = s.next(me, progress);
  if (to < 0)
    return false;
  s.states[me].waiting = true;
  s.states[me].progressAtWait = progress;
  s.running = to;
  s.turn.notify_all();
  s.turn.wait(lock, [&] { return s.running == me; });
  s.states[me].waiting = false;
  side = me;
  return true;
}

void Emulator::endSide() {
  Sides &s = *sides;
  std::lock_guard<std::mutex> lock(s.mutex);
  ++progress;
  s.states[side].ended = true;
  int to = s.next(side, progress);
  // Every other side waits on what cannot change: one of them wakes to
  // fail.
  if (to < 0)
    to = s.waiter();
  if (to >= 0)
    s.running = to;
  s.turn.notify_all();
}

bool Emulator::stepIf(scf::IfOp ifOp, const std::vector<bool> &mask) {
  std::vector<Elt> cond = val(ifOp.getCondition());
  std::vector<bool> thenMask(threads), elseMask(threads);
  for (int t = 0; t < threads; ++t) {
    thenMask[t] = mask[t] && cond[t].i;
    elseMask[t] = mask[t] && !cond[t].i;
  }
  if (ifOp->hasAttr("tessel.roles") && llvm::is_contained(thenMask, true) &&
      llvm::is_contained(elseMask, true))
    return stepRoles(ifOp, thenMask, elseMask);
  if (!runBlock(ifOp.getThenRegion().front(), thenMask))
    return false;
  if (!ifOp.getElseRegion().empty() && !runBlock(ifOp.getElseRegion().front(), elseMask))
    return false;
  for (size_t r = 0; r < ifOp.getNumResults(); ++r) {
    std::vector<Elt> a = val(ifOp.thenYield().getOperand(r)),
                     b = val(ifOp.elseYield().getOperand(r));
    std::vector<Elt> &out = val(ifOp.getResult(r));
    for (int t = 0; t < threads; ++t)
      if (mask[t])
        out[t] = cond[t].i ? a[t] : b[t];
  }
  return true;
}

/// The gpu.subgroup_mma_* ops, once per warp with any active thread (they
/// are only ever reached by whole warps).
bool Emulator::forEachWarp(Operation *op, const std::vector<bool> &mask,
                           llvm::function_ref<bool(int warp)> fn) {
  for (int w = 0; w < threads / kWarp; ++w) {
    bool any = false, all = true;
    for (int l = 0; l < kWarp; ++l) {
      any = any || mask[w * kWarp + l];
      all = all && mask[w * kWarp + l];
    }
    if (!any)
      continue;
    if (!all)
      return fail(op, "warp-wide op reached by part of a warp");
    if (!fn(w))
      return false;
  }
  return true;
}

bool Emulator::stepMma(Operation *op, const std::vector<bool> &mask) {
  const int warps = threads / kWarp;
  return forEachWarp(op, mask, [&](int w) {
    int lane0 = w * kWarp, actor = 1000000 + w;
    auto matrix = [&](Value v) -> std::vector<float> & {
      auto &m = matrices[v.getAsOpaquePointer()];
      if (m.empty())
        m.resize(warps);
      return m[w];
    };
    auto indicesOf = [&](OperandRange range) {
      SmallVector<int64_t> idx;
      for (Value v : range)
        idx.push_back(val(v)[lane0].i);
      return idx;
    };
    if (auto c = dyn_cast<gpu::SubgroupMmaConstantMatrixOp>(op)) {
      auto type = cast<gpu::MMAMatrixType>(c.getType());
      matrix(c.getResult()).assign(type.getShape()[0] * type.getShape()[1],
                                   val(c.getValue())[lane0].f);
    } else if (auto load = dyn_cast<gpu::SubgroupMmaLoadMatrixOp>(op)) {
      auto type = cast<gpu::MMAMatrixType>(load.getRes().getType());
      int64_t rows = type.getShape()[0], cols = type.getShape()[1];
      int64_t ld = load.getLeadDimension().getSExtValue();
      bool transpose = load.getTranspose().value_or(false);
      const Mem &m = mems[load.getSrcMemref().getAsOpaquePointer()];
      Type elem = m.type.getElementType();
      int64_t base;
      if (!address(op, m, indicesOf(load.getIndices()), base))
        return false;
      if (base % 32 || ld % (16 / elementBytes(elem)))
        return fail(op, "WMMA load not 256-bit aligned or ldm not a multiple of 16 bytes");
      std::vector<float> &out = matrix(load.getRes());
      out.resize(rows * cols);
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
          int64_t at = base + (transpose ? j * ld + i : i * ld + j) * elementBytes(elem);
          if (at + elementBytes(elem) > int64_t(m.buffer->size()))
            return fail(op, "WMMA load past the buffer");
          if (!touchShared(op, m, at, elementBytes(elem), actor, false))
            return false;
          out[i * cols + j] = loadScalar(elem, m.buffer->data() + at);
        }
    } else if (auto mma = dyn_cast<gpu::SubgroupMmaComputeOp>(op)) {
      auto aType = cast<gpu::MMAMatrixType>(mma.getOpA().getType());
      auto bType = cast<gpu::MMAMatrixType>(mma.getOpB().getType());
      int64_t M = aType.getShape()[0], K = aType.getShape()[1], N = bType.getShape()[1];
      std::vector<float> a = matrix(mma.getOpA()), b = matrix(mma.getOpB()),
                         c = matrix(mma.getOpC());
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          float sum = c[i * N + j];
          for (int64_t q = 0; q < K; ++q)
            sum += a[i * K + q] * b[q * N + j];
          c[i * N + j] = sum;
        }
      matrix(mma.getRes()) = c;
    } else if (auto store = dyn_cast<gpu::SubgroupMmaStoreMatrixOp>(op)) {
      auto type = cast<gpu::MMAMatrixType>(store.getSrc().getType());
      int64_t rows = type.getShape()[0], cols = type.getShape()[1];
      int64_t ld = store.getLeadDimension().getSExtValue();
      bool transpose = store.getTranspose().value_or(false);
      const Mem &m = mems[store.getDstMemref().getAsOpaquePointer()];
      Type elem = m.type.getElementType();
      int64_t base;
      if (!address(op, m, indicesOf(store.getIndices()), base))
        return false;
      if (base % 32 || ld % (16 / elementBytes(elem)))
        return fail(op, "WMMA store not 256-bit aligned or ldm not a multiple of 16 bytes");
      const std::vector<float> &src = matrix(store.getSrc());
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
          int64_t at = base + (transpose ? j * ld + i : i * ld + j) * elementBytes(elem);
          if (at + elementBytes(elem) > int64_t(m.buffer->size()))
            return fail(op, "WMMA store past the buffer");
          if (!touchShared(op, m, at, elementBytes(elem), actor, true))
            return false;
          storeScalar(elem, m.buffer->data() + at, src[i * cols + j]);
        }
    }
    return true;
  });
}

bool Emulator::completeCopies(Operation *op, int t, size_t pending) {
  auto &groups = copyGroups[t];
  while (groups.size() > pending) {
    for (PendingCopy &copy : groups.front()) {
      if (!touchShared(op, copy.dst, copy.offset, int64_t(copy.bytes.size()), t, true) ||
          !checkWgmmaReads(op, copy.dst, copy.offset, int64_t(copy.bytes.size())))
        return false;
      std::memcpy(copy.dst.buffer->data() + copy.offset, copy.bytes.data(), copy.bytes.size());
    }
    groups.erase(groups.begin());
  }
  return true;
}

bool Emulator::checkWgmmaReads(Operation *op, const Mem &m, int64_t offset, int64_t bytes) {
  if (m.buffer != dynamicShared)
    return true;
  for (const WgmmaState &w : wgmma)
    for (int64_t b = offset; b < offset + bytes && b < int64_t(w.lastRead.size()); ++b)
      if (w.lastRead[b] > w.retired)
        return fail(op, "shared memory written while a wgmma that read it is in flight");
  return true;
}

bool Emulator::readTensorMap(Operation *op, int64_t map, EmulatedTensorMap &tm) {
  const int64_t argIndex = (map >> kArgAddressShift) - 1;
  if (argIndex < 0 || argIndex >= int64_t(args.size()) ||
      args[argIndex].size() < sizeof(EmulatedTensorMap) ||
      (map & ((int64_t(1) << kArgAddressShift) - 1)) != 0)
    return fail(op, "TMA tensor map is not a whole tensor-map argument");
  std::memcpy(&tm, args[argIndex].data(), sizeof tm);
  if (tm.magic != EmulatedTensorMap::kMagic || tm.tensorArg >= args.size())
    return fail(op, "TMA tensor map unreadable");
  return true;
}

bool Emulator::stepTmaStore(LLVM::InlineAsmOp op, const std::vector<bool> &mask) {
  llvm::StringRef text = op.getAsmString();
  if (text.starts_with("cp.async.bulk.commit_group"))
    return true;
  if (text.starts_with("cp.async.bulk.wait_group")) {
    // wait_group(.read) 0: the thread's stores have read their boxes.
    if (!text.contains(" 0;"))
      return fail(op, "cp.async.bulk.wait_group of other than 0 groups");
    for (int t = 0; t < threads; ++t) {
      if (!mask[t])
        continue;
      for (auto it = pendingStores.begin(); it != pendingStores.end();) {
        if (it->thread != t) {
          ++it;
          continue;
        }
        if (std::memcmp(dynamicShared->data() + it->offset, it->bytes.data(), it->bytes.size()))
          return fail(op, "shared memory written while a TMA store could still read it");
        it = pendingStores.erase(it);
      }
    }
    return true;
  }
  // [map, {column, row}], [box]
  std::vector<std::vector<Elt> *> in;
  for (Value v : op.getOperands())
    in.push_back(&val(v));
  for (int t = 0; t < threads; ++t) {
    if (!mask[t])
      continue;
    const int64_t col0 = (*in[1])[t].i, row0 = (*in[2])[t].i;
    EmulatedTensorMap tm;
    if (!readTensorMap(op, (*in[0])[t].i, tm))
      return false;
    if (tm.tensorArg != args.size() - 1 || tm.rank != 2 || tm.im2col || tm.box[0] * 2 != 128)
      return fail(op, "TMA store map not a tiled map of the output with 128-byte box rows");
    const int64_t address = (*in[3])[t].i, bytes = int64_t(tm.box[0]) * tm.box[1] * 2;
    const int64_t offset = address - kDynamicSharedBase;
    if (!dynamicShared || offset < 0 || offset + bytes > int64_t(dynamicShared->size()))
      return fail(op, "TMA store source outside the dynamic shared memory");
    if (address % 1024)
      return fail(op, "TMA store source of the 128-byte swizzle not 1024-byte aligned");
    std::vector<uint8_t> &out = args.back();
    for (int64_t r = 0; r < tm.box[1]; ++r)
      for (int64_t k = 0; k < tm.box[0]; ++k) {
        const int64_t gr = row0 + r, gk = col0 + k;
        if (gr < 0 || gk < 0 || gr >= int64_t(tm.dims[1]) || gk >= int64_t(tm.dims[0]))
          continue; // clipped
        const int64_t physical = swizzled128(address + r * 128 + k * 2);
        const int64_t to = gr * int64_t(tm.strides[0]) + gk * 2;
        if (to + 2 > int64_t(out.size()))
          return fail(op, "TMA store past its tensor");
        std::memcpy(&out[to], dynamicShared->data() + (physical - kDynamicSharedBase), 2);
        ++outWrites[to];
        ++outWrites[to + 1];
      }
    PendingStore store;
    store.thread = t;
    store.offset = offset;
    store.bytes.assign(dynamicShared->begin() + offset, dynamicShared->begin() + offset + bytes);
    pendingStores.push_back(std::move(store));
  }
  return true;
}

bool Emulator::stepTma(LLVM::InlineAsmOp op, const std::vector<bool> &mask) {
  llvm::StringRef text = op.getAsmString();
  std::vector<std::vector<Elt> *> in;
  for (Value v : op.getOperands())
    in.push_back(&val(v));
  auto sharedOffset = [&](int64_t address, int64_t bytes, int64_t &offset) {
    offset = address - kDynamicSharedBase;
    if (!dynamicShared || offset < 0 || offset + bytes > int64_t(dynamicShared->size()))
      return fail(op, "mbarrier or TMA address outside the dynamic shared memory");
    return true;
  };
  if (text.starts_with("fence.mbarrier_init"))
    return true;
  for (int t = 0; t < threads; ++t) {
    if (!mask[t])
      continue;
    const bool im2col = text.contains(".im2col.");
    const int64_t bar =
        (*in[text.contains("cp.async.bulk.tensor") ? (im2col ? 6 : 4) : 0])[t].i;
    int64_t barOffset;
    if (!sharedOffset(bar, 8, barOffset))
      return false;
    if (barOffset % 8)
      return fail(op, "mbarrier not 8-byte aligned");
    if (!text.contains("try_wait"))
      ++progress;
    if (text.starts_with("mbarrier.init.shared::cta.b64")) {
      int64_t count = 0;
      if (text.split("], ").second.rtrim(';').getAsInteger(10, count) || count < 1)
        return fail(op, "mbarrier.init without a constant count of arrivals");
      mbarriers[bar] = Mbarrier{count, 0, 0, 0, {}};
      continue;
    }
    auto found = mbarriers.find(bar);
    if (found == mbarriers.end())
      return fail(op, "mbarrier used before its init");
    Mbarrier &m = found->second;
    // The phase completes: its copies land, published to every waiter.
    auto complete = [&] {
      for (PendingCopy &copy : m.copies) {
        if (!checkWgmmaReads(op, copy.dst, copy.offset, int64_t(copy.bytes.size())))
          return false;
        std::memcpy(copy.dst.buffer->data() + copy.offset, copy.bytes.data(), copy.bytes.size());
        std::vector<Access> &acc = sharedAccess[copy.dst.buffer];
        if (acc.empty())
          acc.resize(copy.dst.buffer->size());
        for (size_t b = 0; b < copy.bytes.size(); ++b) {
          acc[copy.offset + b].writeEpoch = epoch - 1;
          acc[copy.offset + b].writer = -1;
        }
      }
      m.copies.clear();
      m.arrivals = 0;
      ++m.completed;
      return true;
    };
    if (text.contains("mbarrier.arrive.expect_tx")) {
      ++m.arrivals;
      m.tx += (*in[1])[t].i;
      continue;
    }
    if (text.contains("mbarrier.arrive.shared::cta.b64")) {
      if (++m.arrivals > m.expected)
        return fail(op, "more arrivals on an mbarrier than its phase expects");
      if (m.arrivals == m.expected && m.tx == 0 && !complete())
        return false;
      continue;
    }
    if (text.contains("cp.async.bulk.tensor")) {
      // Tiled: [dst], [map, {k, row}], [bar]. Im2col: [dst], [map, {c, w,
      // h, n}], [bar], {offset w, offset h}.
      EmulatedTensorMap tm;
      if (!readTensorMap(op, (*in[1])[t].i, tm))
        return false;
      if (tm.box[0] * 2 != 128 || tm.rank != (im2col ? 4 : 2) || bool(tm.im2col) != im2col ||
          !text.contains(im2col ? ".4d." : ".2d."))
        return fail(op, "TMA tensor map unreadable, not of the copy's mode and rank (or its "
                        "box rows not 128 bytes)");
      const std::vector<uint8_t> &tensor = args[tm.tensorArg];
      int64_t dst;
      const int64_t bytes = int64_t(tm.box[0]) * tm.box[1] * 2;
      if (!sharedOffset((*in[0])[t].i, bytes, dst))
        return false;
      if (((*in[0])[t].i) % 1024)
        return fail(op, "TMA destination of the 128-byte swizzle not 1024-byte aligned");
      Mem shared;
      shared.buffer = dynamicShared;
      shared.shared = true;
      // It lands any time from now: nothing a wgmma in flight reads.
      if (!checkWgmmaReads(op, shared, dst, bytes))
        return false;
      PendingCopy copy;
      copy.dst = shared;
      copy.offset = dst;
      copy.bytes.assign(bytes, 0);
      // Box row r's source: its coordinates, innermost first (negative or
      // past a dimension: zero fill).
      int64_t coords[4] = {(*in[2])[t].i, (*in[3])[t].i, 0, 0};
      int64_t walked[2] = {0, 0}, positions[2] = {0, 0};
      if (im2col) {
        coords[2] = (*in[4])[t].i;
        coords[3] = (*in[5])[t].i;
        // The box's positions along W and H, and where the copy starts
        // among them (a position of the walk, or the copy is not one).
        for (int d = 0; d < 2; ++d) {
          const int64_t stride = tm.elementStrides[d + 1], from = coords[d + 1] - tm.lower[d];
          positions[d] = (int64_t(tm.dims[d + 1]) - 1 + tm.upper[d] - tm.lower[d]) / stride + 1;
          if (from < 0 || from % stride || from / stride >= positions[d])
            return fail(op, "TMA im2col copy at a position its box does not walk");
          walked[d] = from / stride;
        }
      }
      const int64_t offsets[2] = {im2col ? int64_t(int16_t((*in[7])[t].i)) : 0,
                                  im2col ? int64_t(int16_t((*in[8])[t].i)) : 0};
      for (int64_t r = 0; r < tm.box[1]; ++r) {
        int64_t at[4] = {coords[0], coords[1] + r, 0, 0};
        if (im2col) {
          // Position walked + r: W fastest, then H, then N.
          const int64_t w = walked[0] + r, h = walked[1] + w / positions[0];
          at[1] = tm.lower[0] + (w % positions[0]) * tm.elementStrides[1] + offsets[0];
          at[2] = tm.lower[1] + (h % positions[1]) * tm.elementStrides[2] + offsets[1];
          at[3] = coords[3] + h / positions[1];
        }
        bool inside = true;
        int64_t from = 0;
        for (uint32_t d = 1; d < tm.rank; ++d) {
          inside &= at[d] >= 0 && at[d] < int64_t(tm.dims[d]);
          from += at[d] * int64_t(tm.strides[d - 1]);
        }
        for (int64_t k = 0; inside && k < tm.box[0]; ++k) {
          const int64_t gk = at[0] + k;
          if (gk < 0 || gk >= int64_t(tm.dims[0]))
            continue; // zero fill
          if (from + gk * 2 + 2 > int64_t(tensor.size()))
            return fail(op, "TMA read past its tensor");
          const int64_t physical = swizzled128((*in[0])[t].i + r * 128 + k * 2);
          std::memcpy(&copy.bytes[physical - (*in[0])[t].i], &tensor[from + gk * 2], 2);
        }
      }
      m.tx -= bytes;
      m.copies.push_back(std::move(copy));
      continue;
    }
    if (text.contains("mbarrier.try_wait.parity")) {
      const int64_t parity = (*in[1])[t].i;
      if (m.arrivals == m.expected && m.tx == 0 && !complete())
        return false;
      // Phase `parity` is complete once the current phase has the other.
      if (m.completed == 0 || (m.completed - 1) % 2 != parity) {
        if (sides) { // the other side may yet complete it
          blocked = true;
          return false;
        }
        return fail(op, "mbarrier wait for a phase that never completes");
      }
      continue;
    }
    return fail(op, "unknown mbarrier or TMA PTX");
  }
  return true;
}

/// tc-sm90's inline PTX. wgmma.mma_async m64nNk16 f32 += f16 x f16 runs
/// once per warpgroup when issued, its operands read from shared memory
/// through their descriptors (14 bits of address >> 4, the leading and
/// stride byte offsets >> 4, swizzle mode 1: 128 bytes): K-major, element
/// (row r, k) at start + (r / 8) stride + (r % 8) 128 + 2k; MN-major (the
/// transpose flag), (r, k) at start + (r / 64) leading + (k / 8) stride +
/// (k % 8) 128 + 2 (r % 64); then the swizzle, address bits 4-6 XOR bits
/// 7-9, as the hardware applies it to the shared address. The
/// accumulators: element 4j + 2h + c of a thread is row 16 (warp % 4) +
/// lane / 4 + 8h, column 8j + 2 (lane % 4) + c. The bytes a wgmma read
/// stay in its group until a wait_group retires the group; a write to them
/// before that fails (checkWgmmaReads): the K loop must not refill a
/// buffer an unretired wgmma reads.
bool Emulator::stepWgmma(LLVM::InlineAsmOp op, const std::vector<bool> &mask) {
  llvm::StringRef text = op.getAsmString().trim();
  const int groups = int(wgmma.size());
  auto active = [&](int g) {
    int n = 0;
    for (int t = g * kWarpgroup; t < std::min(threads, (g + 1) * kWarpgroup); ++t)
      n += mask[t];
    return n;
  };
  for (int g = 0; g < groups; ++g)
    if (int n = active(g); n != 0 && n != std::min(kWarpgroup, threads - g * kWarpgroup))
      return fail(op, "warpgroup-wide PTX reached by part of a warpgroup");
  if (op.getNumResults() == 0) {
    if (text.starts_with("fence.proxy.async") || text == "wgmma.fence.sync.aligned;" ||
        text.starts_with("setmaxnreg."))
      return true;
    if (text == "wgmma.commit_group.sync.aligned;") {
      for (int g = 0; g < groups; ++g)
        if (active(g)) {
          wgmma[g].committed.push_back(wgmma[g].open);
          wgmma[g].open = wgmmaGroupIds++;
        }
      return true;
    }
    return fail(op, "unknown inline PTX");
  }
  auto st = dyn_cast<LLVM::LLVMStructType>(op.getResult(0).getType());
  if (!st)
    return fail(op, "unknown inline PTX");
  const int64_t regs = int64_t(st.getBody().size());
  std::vector<std::vector<Elt> *> in;
  for (Value v : op.getOperands())
    in.push_back(&val(v));
  if (int64_t(in.size()) < regs)
    return fail(op, "tied PTX with fewer operands than its struct");
  auto &out = val(op.getResult(0));
  auto tied = [&](int t) {
    out[t].s.resize(regs);
    for (int64_t r = 0; r < regs; ++r)
      out[t].s[r] = (*in[r])[t].f;
  };
  if (text.empty() || text.starts_with("wgmma.wait_group.sync.aligned")) {
    if (!text.empty()) {
      unsigned pending = 0;
      if (text.drop_front(strlen("wgmma.wait_group.sync.aligned")).trim().rtrim(';').getAsInteger(
              10, pending))
        return fail(op, "wgmma.wait_group without a count");
      for (int g = 0; g < groups; ++g) {
        if (!active(g))
          continue;
        WgmmaState &w = wgmma[g];
        while (w.committed.size() > pending) {
          w.retired = w.committed.front();
          w.committed.erase(w.committed.begin());
        }
      }
    }
    for (int t = 0; t < threads; ++t)
      if (mask[t])
        tied(t);
    return true;
  }
  int64_t n = 0;
  unsigned aT = 0, bT = 0;
  {
    size_t at = text.find("wgmma.mma_async.sync.aligned.m64n");
    if (at == llvm::StringRef::npos ||
        text.substr(at + strlen("wgmma.mma_async.sync.aligned.m64n")).consumeInteger(10, n) ||
        !text.contains("k16.f32.f16.f16"))
      return fail(op, "unknown inline PTX");
    size_t flags = text.rfind("p, 1, 1, ");
    if (flags == llvm::StringRef::npos)
      return fail(op, "wgmma without its scale and transpose flags");
    llvm::StringRef rest = text.substr(flags + strlen("p, 1, 1, "));
    if (rest.consumeInteger(10, aT) || !rest.consume_front(", ") || rest.consumeInteger(10, bT))
      return fail(op, "wgmma transpose flags unreadable");
  }
  if (n / 2 != regs || int64_t(in.size()) != regs + 3)
    return fail(op, "wgmma operands do not match m64n" + std::to_string(n));
  if (!dynamicShared)
    return fail(op, "wgmma before the kernel asked for its dynamic shared memory");
  std::vector<uint8_t> &smem = *dynamicShared;
  Mem shared;
  shared.buffer = &smem;
  shared.shared = true;
  for (int g = 0; g < groups; ++g) {
    if (!active(g))
      continue;
    const int t0 = g * kWarpgroup;
    const int64_t descA = (*in[regs])[t0].i, descB = (*in[regs + 1])[t0].i;
    for (int t = t0; t < t0 + kWarpgroup; ++t)
      if ((*in[regs])[t].i != descA || (*in[regs + 1])[t].i != descB || (*in[regs + 2])[t].i != 1)
        return fail(op, "wgmma descriptors or scale differ within a warpgroup");
    // The byte of element (r, k) of an operand, as a buffer offset.
    auto element = [&](int64_t desc, bool mnMajor, int64_t r, int64_t k, int64_t &offset) {
      const uint64_t d = uint64_t(desc);
      const int64_t start = int64_t(d & 0x3FFF) << 4, leading = int64_t((d >> 16) & 0x3FFF) << 4,
                    stride = int64_t((d >> 32) & 0x3FFF) << 4;
      if ((d >> 62) != 1)
        return fail(op, "wgmma descriptor without the 128-byte swizzle");
      int64_t logical = mnMajor ? start + r / 64 * leading + k / 8 * stride + k % 8 * 128 + r % 64 * 2
                                : start + r / 8 * stride + r % 8 * 128 + k * 2;
      offset = swizzled128(logical) - kDynamicSharedBase;
      if (offset < 0 || offset + 2 > int64_t(smem.size()))
        return fail(op, "wgmma operand outside the dynamic shared memory");
      return true;
    };
    std::vector<float> A(64 * 16), B(16 * n);
    WgmmaState &w = wgmma[g];
    if (w.lastRead.size() < smem.size())
      w.lastRead.resize(smem.size(), -1);
    for (int64_t r = 0; r < 64 + n; ++r)
      for (int64_t k = 0; k < 16; ++k) {
        const bool isA = r < 64;
        int64_t offset;
        if (!element(isA ? descA : descB, isA ? aT : bT, isA ? r : r - 64, k, offset) ||
            !touchShared(op, shared, offset, 2, 2000000 + g, false))
          return false;
        float x = loadScalar(Float16Type::get(op.getContext()), smem.data() + offset);
        (isA ? A[r * 16 + k] : B[k * n + (r - 64)]) = x;
        w.lastRead[offset] = w.lastRead[offset + 1] = w.open;
      }
    for (int t = t0; t < t0 + kWarpgroup; ++t) {
      const int warp = (t - t0) / kWarp, lane = t % kWarp;
      out[t].s.resize(regs);
      for (int64_t e = 0; e < regs; ++e) {
        const int64_t j = e / 4, h = (e / 2) % 2, c = e % 2;
        const int64_t row = 16 * warp + lane / 4 + 8 * h, col = 8 * j + 2 * (lane % 4) + c;
        float sum = (*in[e])[t].f;
        for (int64_t k = 0; k < 16; ++k)
          sum = std::fmaf(A[row * 16 + k], B[k * n + col], sum);
        out[t].s[e] = sum;
      }
    }
  }
  return true;
}

/// The nvgpu ops: cp.async per thread (landing at the wait that completes
/// its group), ldmatrix and mma.sync once per warp (reached by whole warps
/// only), with the lane maps of the PTX ISA.
bool Emulator::stepNvgpu(Operation *op, const std::vector<bool> &mask) {
  auto indicesOf = [&](OperandRange range, int t) {
    SmallVector<int64_t> idx;
    for (Value v : range)
      idx.push_back(val(v)[t].i);
    return idx;
  };
  if (auto copy = dyn_cast<nvgpu::DeviceAsyncCopyOp>(op)) {
    const Mem &src = mems[copy.getSrc().getAsOpaquePointer()];
    const Mem &dst = mems[copy.getDst().getAsOpaquePointer()];
    const int64_t elems = copy.getDstElements().getSExtValue();
    const int64_t bytes = elems * elementBytes(src.type.getElementType());
    for (int t = 0; t < threads; ++t) {
      if (!mask[t])
        continue;
      int64_t count = copy.getSrcElements() ? val(copy.getSrcElements())[t].i : elems;
      if (count < 0 || count > elems)
        return fail(op, "cp.async source size outside [0, destination size]");
      int64_t from, to;
      if (!address(op, dst, indicesOf(copy.getDstIndices(), t), to) ||
          !address(op, src, indicesOf(copy.getSrcIndices(), t), from))
        return false;
      if (to % bytes || from % bytes)
        return fail(op, "cp.async address not aligned to its size");
      if (to + bytes > int64_t(dst.buffer->size()))
        return fail(op, "cp.async destination past the buffer");
      // It may land any time from now until its wait.
      if (!checkWgmmaReads(op, dst, to, bytes))
        return false;
      int64_t read = count * elementBytes(src.type.getElementType());
      if (from + read > int64_t(src.buffer->size()))
        return fail(op, "cp.async source past the buffer");
      PendingCopy pending{dst, to, std::vector<uint8_t>(bytes, 0)};
      std::memcpy(pending.bytes.data(), src.buffer->data() + from, read);
      openCopies[t].push_back(std::move(pending));
    }
    return true;
  }
  if (isa<nvgpu::DeviceAsyncCreateGroupOp>(op)) {
    for (int t = 0; t < threads; ++t)
      if (mask[t]) {
        copyGroups[t].push_back(std::move(openCopies[t]));
        openCopies[t].clear();
      }
    return true;
  }
  if (auto wait = dyn_cast<nvgpu::DeviceAsyncWaitOp>(op)) {
    size_t pending = wait.getNumGroups().value_or(0);
    for (int t = 0; t < threads; ++t)
      if (mask[t] && !completeCopies(op, t, pending))
        return false;
    return true;
  }
  if (!isa<nvgpu::LdMatrixOp, nvgpu::MmaSyncOp>(op))
    return fail(op, "unsupported nvgpu op");
  return forEachWarp(op, mask, [&](int w) {
    const int lane0 = w * kWarp;
    if (auto ld = dyn_cast<nvgpu::LdMatrixOp>(op)) {
      // Lanes 8i .. 8i + 7 give the rows of 8x8 matrix i, 16 bytes each;
      // lane l receives, of every matrix, elements (l / 4, 2 (l % 4) + e),
      // or with .trans (2 (l % 4) + e, l / 4).
      const Mem &m = mems[ld.getSrcMemref().getAsOpaquePointer()];
      if (!m.type.getElementType().isF16())
        return fail(op, "ldmatrix of a non-f16 tile");
      const int tiles = int(ld.getNumTiles());
      std::vector<int64_t> rowAt(tiles * 8);
      for (int r = 0; r < tiles * 8; ++r) {
        if (!address(op, m, indicesOf(ld.getIndices(), lane0 + r), rowAt[r]))
          return false;
        if (rowAt[r] % 16 || rowAt[r] + 16 > int64_t(m.buffer->size()))
          return fail(op, "ldmatrix row not 16-byte aligned or past the buffer");
        if (!touchShared(op, m, rowAt[r], 16, 1000000 + w, false))
          return false;
      }
      std::vector<Elt> &out = val(ld.getRes());
      for (int l = 0; l < kWarp; ++l)
        for (int i = 0; i < tiles; ++i)
          for (int e = 0; e < 2; ++e) {
            int64_t at = ld.getTranspose()
                             ? rowAt[i * 8 + 2 * (l % 4) + e] + (l / 4) * 2
                             : rowAt[i * 8 + l / 4] + (2 * (l % 4) + e) * 2;
            out[lane0 + l].v[i * 2 + e] = loadScalar(m.type.getElementType(), m.buffer->data() + at);
          }
      return true;
    }
    auto mma = cast<nvgpu::MmaSyncOp>(op);
    std::array<int64_t, 3> shape = mma.getMmaShapeAsArray();
    if (shape != std::array<int64_t, 3>{16, 8, 16} ||
        !cast<VectorType>(mma.getMatrixA().getType()).getElementType().isF16() ||
        !cast<VectorType>(mma.getMatrixC().getType()).getElementType().isF32())
      return fail(op, "mma.sync other than m16n8k16 f16 -> f32");
    float A[16][16], B[16][8], C[16][8];
    const std::vector<Elt> &a = val(mma.getMatrixA()), &bv = val(mma.getMatrixB()),
                           &cv = val(mma.getMatrixC());
    for (int l = 0; l < kWarp; ++l) {
      int g = l / 4, q = 2 * (l % 4);
      for (int e = 0; e < 2; ++e) {
        const auto &av = a[lane0 + l].v;
        A[g][q + e] = av[0 + e];
        A[g + 8][q + e] = av[2 + e];
        A[g][q + 8 + e] = av[4 + e];
        A[g + 8][q + 8 + e] = av[6 + e];
        B[q + e][g] = bv[lane0 + l].v[0 + e];
        B[q + 8 + e][g] = bv[lane0 + l].v[2 + e];
        C[g][q + e] = cv[lane0 + l].v[0 + e];
        C[g + 8][q + e] = cv[lane0 + l].v[2 + e];
      }
    }
    for (int i = 0; i < 16; ++i)
      for (int j = 0; j < 8; ++j)
        for (int k = 0; k < 16; ++k)
          C[i][j] += A[i][k] * B[k][j];
    std::vector<Elt> &out = val(mma.getRes());
    for (int l = 0; l < kWarp; ++l) {
      int g = l / 4, q = 2 * (l % 4);
      for (int e = 0; e < 2; ++e) {
        out[lane0 + l].v[0 + e] = C[g][q + e];
        out[lane0 + l].v[2 + e] = C[g + 8][q + e];
      }
    }
    return true;
  });
}

/// The element offset of `position` in a vector of `shape` (row-major).
static int64_t vectorOffset(ArrayRef<int64_t> shape, ArrayRef<int64_t> position) {
  int64_t offset = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    int64_t stride = 1;
    for (size_t e = d + 1; e < shape.size(); ++e)
      stride *= shape[e];
    offset += (d < position.size() ? position[d] : 0) * stride;
  }
  return offset;
}

bool Emulator::step(Operation *op, const std::vector<bool> &mask) {
  auto each = [&](auto fn) {
    for (int t = 0; t < threads; ++t)
      if (mask[t])
        fn(t);
  };
  if (auto loop = dyn_cast<scf::ForOp>(op))
    return stepFor(loop, mask);
  if (auto ifOp = dyn_cast<scf::IfOp>(op))
    return stepIf(ifOp, mask);
  if (isa<scf::YieldOp, gpu::ReturnOp>(op))
    return true;
  if (isa<gpu::SubgroupMmaConstantMatrixOp, gpu::SubgroupMmaLoadMatrixOp,
          gpu::SubgroupMmaComputeOp, gpu::SubgroupMmaStoreMatrixOp>(op))
    return stepMma(op, mask);
  if (op->getDialect() && op->getDialect()->getNamespace() == "nvgpu")
    return stepNvgpu(op, mask);
  if (auto dyn = dyn_cast<gpu::DynamicSharedMemoryOp>(op)) {
    std::vector<uint8_t> &buffer = sharedBuffers["__dynamic_shared"];
    buffer.assign(dynamicSharedBytes, 0xff); // poison, as the static buffers
    dynamicShared = &buffer;
    Mem m;
    m.buffer = &buffer;
    m.type = dyn.getType();
    m.shared = true;
    mems[dyn.getResult().getAsOpaquePointer()] = m;
    return true;
  }
  if (isa<gpu::BarrierOp>(op)) {
    for (int t = 0; t < threads; ++t)
      if (!mask[t])
        return fail(op, "barrier not reached by every thread");
    ++epoch;
    return true;
  }
  if (auto c = dyn_cast<arith::ConstantOp>(op)) {
    Attribute attr = c.getValue();
    Elt e;
    if (auto i = dyn_cast<IntegerAttr>(attr))
      e.i = i.getValue().getSExtValue();
    else if (auto f = dyn_cast<FloatAttr>(attr))
      e.f = float(f.getValueAsDouble());
    else if (auto d = dyn_cast<DenseElementsAttr>(attr); d && d.isSplat())
      e.v.fill(float(d.getSplatValue<APFloat>().convertToDouble()));
    else
      return fail(op, "unsupported constant");
    auto &out = val(c.getResult());
    each([&](int t) { out[t] = e; });
    return true;
  }
  if (auto id = dyn_cast<gpu::ThreadIdOp>(op)) {
    auto &out = val(id.getResult());
    each([&](int t) { out[t].i = id.getDimension() == gpu::Dimension::x ? t : 0; });
    return true;
  }
  if (auto id = dyn_cast<gpu::BlockIdOp>(op)) {
    auto &out = val(id.getResult());
    each([&](int t) { out[t].i = block[int(id.getDimension())]; });
    return true;
  }
  if (auto g = dyn_cast<memref::GetGlobalOp>(op)) {
    auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(op, g.getNameAttr());
    std::vector<uint8_t> &buffer = sharedBuffers[g.getName().str()];
    // Poison: all-ones bytes are NaN in f16 and f32.
    buffer.assign(global.getType().getNumElements() *
                      elementBytes(global.getType().getElementType()),
                  0xff);
    if (auto align = global.getAlignment(); !align || *align < 32)
      return fail(op, "shared buffer alignment below 32 bytes");
    Mem m;
    m.buffer = &buffer;
    m.type = g.getType();
    m.shared = true;
    mems[g.getResult().getAsOpaquePointer()] = m;
    return true;
  }
  if (auto v = dyn_cast<memref::ViewOp>(op)) {
    // A view is the block's: its shift is the same in every thread (the
    // pipelined K loop's buffer), and nothing to do where no thread runs.
    int first = std::find(mask.begin(), mask.end(), true) - mask.begin();
    if (first == threads)
      return true;
    const std::vector<Elt> &shift = val(v.getByteShift());
    for (int t = first; t < threads; ++t)
      if (mask[t] && shift[t].i != shift[first].i)
        return fail(op, "view shift differs between threads");
    Mem m = mems[v.getSource().getAsOpaquePointer()];
    m.byteOffset += shift[first].i;
    m.type = v.getType();
    if (m.byteOffset % elementBytes(m.type.getElementType()))
      return fail(op, "view misaligned for its element type");
    if (m.byteOffset + m.type.getNumElements() * elementBytes(m.type.getElementType()) >
        int64_t(m.buffer->size()))
      return fail(op, "view larger than its buffer");
    mems[v.getResult().getAsOpaquePointer()] = m;
    return true;
  }
  if (isa<memref::LoadOp, memref::StoreOp>(op)) {
    bool isLoad = isa<memref::LoadOp>(op);
    Value memref = isLoad ? cast<memref::LoadOp>(op).getMemRef() : cast<memref::StoreOp>(op).getMemRef();
    auto indices = isLoad ? cast<memref::LoadOp>(op).getIndices() : cast<memref::StoreOp>(op).getIndices();
    const Mem &m = mems[memref.getAsOpaquePointer()];
    Type elem = m.type.getElementType();
    auto vec = dyn_cast<VectorType>(elem);
    Type scalar = vec ? vec.getElementType() : elem;
    int64_t lanes = vec ? vec.getNumElements() : 1, bytes = elementBytes(elem);
    bool isOut = !m.shared && m.buffer == &args.back();
    std::vector<std::vector<Elt> *> idx;
    for (Value i : indices)
      idx.push_back(&val(i));
    std::vector<Elt> *data = isLoad ? &val(op->getResult(0)) : &val(cast<memref::StoreOp>(op).getValue());
    for (int t = 0; t < threads; ++t) {
      if (!mask[t])
        continue;
      SmallVector<int64_t> at;
      for (auto *i : idx)
        at.push_back((*i)[t].i);
      int64_t offset;
      if (!address(op, m, at, offset))
        return false;
      if (offset % bytes)
        return fail(op, "misaligned access");
      if (!touchShared(op, m, offset, bytes, t, !isLoad))
        return false;
      if (!isLoad && m.shared && !checkWgmmaReads(op, m, offset, bytes))
        return false;
      uint8_t *p = m.buffer->data() + offset;
      Elt &e = (*data)[t];
      if (isLoad) {
        if (vec)
          for (int64_t l = 0; l < lanes; ++l)
            e.v[l] = loadScalar(scalar, p + l * elementBytes(scalar));
        else
          e.f = loadScalar(scalar, p);
      } else {
        if (isOut)
          for (int64_t b = 0; b < bytes; ++b)
            ++outWrites[offset + b];
        if (vec)
          for (int64_t l = 0; l < lanes; ++l)
            storeScalar(scalar, p + l * elementBytes(scalar), e.v[l]);
        else
          storeScalar(scalar, p, e.f);
      }
    }
    return true;
  }
  if (auto x = dyn_cast<vector::ExtractOp>(op)) {
    auto type = cast<VectorType>(x.getVector().getType());
    int64_t at = vectorOffset(type.getShape(), x.getStaticPosition());
    auto result = dyn_cast<VectorType>(x.getResult().getType());
    auto &src = val(x.getVector());
    auto &out = val(x.getResult());
    each([&](int t) {
      if (!result)
        out[t].f = src[t].v[at];
      else
        for (int64_t e = 0; e < result.getNumElements(); ++e)
          out[t].v[e] = src[t].v[at + e];
    });
    return true;
  }
  if (auto x = dyn_cast<vector::InsertOp>(op)) {
    auto type = cast<VectorType>(x.getDest().getType());
    int64_t at = vectorOffset(type.getShape(), x.getStaticPosition());
    auto inserted = dyn_cast<VectorType>(x.getSource().getType());
    auto &dest = val(x.getDest());
    auto &source = val(x.getSource());
    auto &out = val(x.getResult());
    each([&](int t) {
      out[t] = dest[t];
      if (!inserted)
        out[t].v[at] = source[t].f;
      else
        for (int64_t e = 0; e < inserted.getNumElements(); ++e)
          out[t].v[at + e] = source[t].v[e];
    });
    return true;
  }
  if (auto zero = dyn_cast<LLVM::ZeroOp>(op)) {
    auto st = dyn_cast<LLVM::LLVMStructType>(zero.getType());
    if (!st)
      return fail(op, "llvm.mlir.zero of a type other than a struct");
    auto &out = val(zero.getResult());
    each([&](int t) { out[t].s.assign(st.getBody().size(), 0.0f); });
    return true;
  }
  if (auto x = dyn_cast<LLVM::ExtractValueOp>(op)) {
    if (x.getPosition().size() != 1)
      return fail(op, "llvm.extractvalue of a nested position");
    const int64_t at = x.getPosition()[0];
    auto &src = val(x.getContainer());
    auto &out = val(x.getResult());
    for (int t = 0; t < threads; ++t)
      if (mask[t] && (at < 0 || at >= int64_t(src[t].s.size())))
        return fail(op, "llvm.extractvalue past its struct");
    each([&](int t) { out[t].f = src[t].s[at]; });
    return true;
  }
  if (auto ptr = dyn_cast<memref::ExtractAlignedPointerAsIndexOp>(op)) {
    // Only the dynamic shared memory's address is asked for (tc-sm90's
    // descriptors); a global address would be the runtime's.
    const Mem &m = mems[ptr.getSource().getAsOpaquePointer()];
    if (!m.shared || !dynamicShared || m.buffer != dynamicShared)
      return fail(op, "address asked of a buffer other than the dynamic shared memory");
    auto &out = val(ptr.getResult());
    each([&](int t) { out[t].i = kDynamicSharedBase + m.byteOffset; });
    return true;
  }
  if (auto fma = dyn_cast<LLVM::FMAOp>(op)) {
    auto &a = val(fma.getA()), &b = val(fma.getB()), &c = val(fma.getC());
    auto &out = val(fma.getResult());
    each([&](int t) { out[t].f = std::fmaf(a[t].f, b[t].f, c[t].f); });
    return true;
  }
  if (auto asmOp = dyn_cast<LLVM::InlineAsmOp>(op)) {
    llvm::StringRef text = asmOp.getAsmString();
    if (text.starts_with("cp.async.bulk.tensor.2d.global.shared") ||
        text.starts_with("cp.async.bulk.commit_group") ||
        text.starts_with("cp.async.bulk.wait_group"))
      return stepTmaStore(asmOp, mask);
    if (text.contains("mbarrier") || text.contains("cp.async.bulk.tensor")) {
      while (true) {
        blocked = false;
        if (stepTma(asmOp, mask))
          return true;
        if (!blocked)
          return false;
        if (!handOver())
          return fail(op, "mbarrier wait for a phase that never completes (a deadlock)");
      }
    }
    if (text.starts_with("bar.sync ")) {
      // A named barrier (not 0, the block's) of the threads that reach it
      // (all of them, in lockstep): a warp-specialized kernel's math side.
      auto [id, count] = text.drop_front(strlen("bar.sync ")).rtrim(';').split(", ");
      int64_t barrier = 0, threadCount = 0;
      if (id.getAsInteger(10, barrier) || barrier < 1 || barrier > 15 ||
          count.getAsInteger(10, threadCount) || threadCount != llvm::count(mask, true) ||
          threadCount % kWarp != 0)
        return fail(op, "named barrier reached by other than its count of threads");
      ++epoch;
      return true;
    }
    if (!text.starts_with("ex2.approx.f32") && !text.starts_with("rcp.approx.ftz.f32"))
      return stepWgmma(asmOp, mask);
    std::vector<std::vector<Elt> *> in;
    for (Value v : asmOp.getOperands())
      in.push_back(&val(v));
    auto &out = val(op->getResult(0));
    if (text.starts_with("ex2.approx.f32"))
      each([&](int t) { out[t].f = std::exp2(float((*in[0])[t].f)); });
    else if (text.starts_with("rcp.approx.ftz.f32"))
      each([&](int t) { out[t].f = 1.0f / float((*in[0])[t].f); });
    else
      return fail(op, "unknown inline PTX");
    return true;
  }
  // Float arithmetic on vectors, lane by lane (the gather's input scale).
  if (auto vec = op->getNumResults() == 1 ? dyn_cast<VectorType>(op->getResult(0).getType())
                                          : VectorType();
      vec && isa<arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::DivFOp>(op)) {
    Type scalar = vec.getElementType();
    auto &a = val(op->getOperand(0)), &b = val(op->getOperand(1));
    auto &out = val(op->getResult(0));
    each([&](int t) {
      for (int64_t l = 0; l < vec.getNumElements(); ++l) {
        float x = a[t].v[l], y = b[t].v[l];
        float r = isa<arith::AddFOp>(op)   ? x + y
                  : isa<arith::SubFOp>(op) ? x - y
                  : isa<arith::MulFOp>(op) ? x * y
                                           : x / y;
        out[t].v[l] = round(scalar, r);
      }
    });
    return true;
  }
  // Elementwise arith.
  if (op->getNumResults() == 1 && op->getDialect()->getNamespace() == "arith") {
    Type type = op->getResult(0).getType();
    auto &out = val(op->getResult(0));
    std::vector<std::vector<Elt> *> in;
    for (Value v : op->getOperands())
      in.push_back(&val(v));
    auto I = [&](int k, int t) { return (*in[k])[t].i; };
    auto F = [&](int k, int t) { return (*in[k])[t].f; };
    if (isa<arith::AddIOp>(op)) each([&](int t) { out[t].i = I(0, t) + I(1, t); });
    else if (isa<arith::SubIOp>(op)) each([&](int t) { out[t].i = I(0, t) - I(1, t); });
    else if (isa<arith::MulIOp>(op)) each([&](int t) { out[t].i = I(0, t) * I(1, t); });
    else if (isa<arith::DivUIOp>(op)) {
      for (int t = 0; t < threads; ++t)
        if (mask[t] && I(0, t) < 0)
          return fail(op, "unsigned division of a negative index");
      each([&](int t) { out[t].i = I(0, t) / I(1, t); });
    } else if (isa<arith::RemUIOp>(op)) {
      for (int t = 0; t < threads; ++t)
        if (mask[t] && I(0, t) < 0)
          return fail(op, "unsigned remainder of a negative index");
      each([&](int t) { out[t].i = I(0, t) % I(1, t); });
    } else if (isa<arith::MinUIOp>(op)) {
      for (int t = 0; t < threads; ++t)
        if (mask[t] && (I(0, t) < 0 || I(1, t) < 0))
          return fail(op, "unsigned minimum of a negative index");
      each([&](int t) { out[t].i = std::min(I(0, t), I(1, t)); });
    } else if (isa<arith::AndIOp>(op)) each([&](int t) { out[t].i = I(0, t) & I(1, t); });
    else if (isa<arith::OrIOp>(op)) each([&](int t) { out[t].i = I(0, t) | I(1, t); });
    else if (isa<arith::XOrIOp>(op)) each([&](int t) { out[t].i = I(0, t) ^ I(1, t); });
    else if (isa<arith::ShRUIOp>(op)) {
      for (int t = 0; t < threads; ++t)
        if (mask[t] && (I(0, t) < 0 || I(1, t) < 0 || I(1, t) > 63))
          return fail(op, "unsigned shift of a negative value or past 63");
      each([&](int t) { out[t].i = int64_t(uint64_t(I(0, t)) >> I(1, t)); });
    } else if (isa<arith::IndexCastUIOp, arith::IndexCastOp>(op)) {
      for (int t = 0; t < threads; ++t)
        if (mask[t] && isa<arith::IndexCastUIOp>(op) && I(0, t) < 0)
          return fail(op, "unsigned cast of a negative index");
      each([&](int t) { out[t].i = I(0, t); });
    }
    else if (auto cmp = dyn_cast<arith::CmpIOp>(op)) {
      using P = arith::CmpIPredicate;
      P pred = cmp.getPredicate();
      for (int t = 0; t < threads; ++t)
        if (mask[t] && (pred == P::ult || pred == P::uge) && (I(0, t) < 0 || I(1, t) < 0))
          return fail(op, "unsigned comparison of a negative index");
      each([&](int t) {
        int64_t a = I(0, t), b = I(1, t);
        bool r = false;
        switch (pred) {
        case P::ult: case P::slt: r = a < b; break;
        case P::uge: case P::sge: r = a >= b; break;
        case P::ule: case P::sle: r = a <= b; break;
        case P::ugt: case P::sgt: r = a > b; break;
        case P::eq: r = a == b; break;
        case P::ne: r = a != b; break;
        }
        out[t].i = r;
      });
    } else if (isa<arith::SelectOp>(op)) each([&](int t) { out[t] = I(0, t) ? (*in[1])[t] : (*in[2])[t]; });
    else if (isa<arith::AddFOp>(op)) each([&](int t) { out[t].f = round(type, F(0, t) + F(1, t)); });
    else if (isa<arith::SubFOp>(op)) each([&](int t) { out[t].f = round(type, F(0, t) - F(1, t)); });
    else if (isa<arith::MulFOp>(op)) each([&](int t) { out[t].f = round(type, F(0, t) * F(1, t)); });
    else if (isa<arith::DivFOp>(op)) each([&](int t) { out[t].f = round(type, F(0, t) / F(1, t)); });
    else if (isa<arith::NegFOp>(op)) each([&](int t) { out[t].f = -F(0, t); });
    else if (isa<arith::ExtFOp>(op)) each([&](int t) { out[t].f = F(0, t); });
    else if (isa<arith::TruncFOp>(op)) each([&](int t) { out[t].f = round(type, F(0, t)); });
    else if (auto cmp = dyn_cast<arith::CmpFOp>(op)) {
      using P = arith::CmpFPredicate;
      P pred = cmp.getPredicate();
      each([&](int t) {
        float a = F(0, t), b = F(1, t);
        bool r = false;
        switch (pred) {
        case P::OLT: r = a < b; break;
        case P::OGT: r = a > b; break;
        case P::OGE: r = a >= b; break;
        case P::OLE: r = a <= b; break;
        default: break;
        }
        out[t].i = r;
      });
      if (pred != P::OLT && pred != P::OGT && pred != P::OGE && pred != P::OLE)
        return fail(op, "unsupported float comparison");
    } else {
      return fail(op, "unsupported arith op");
    }
    return true;
  }
  return fail(op, "unsupported op");
}

} // namespace tessel::gpuemu
