//===- implicit_gemm_test.cpp - the implicit-GEMM codegen, without a GPU ===//
//
// The tiling heuristic's choices, the step planner (variants, shared
// kernels, modules, cubins), and the kernels themselves: every CI machine
// lacks a GPU, so this test runs the generated kernels on the CPU: a small emulator executes the kernel's gpu/scf/arith/memref/vector
// IR (before NVVM lowering) for every block of the grid, the block's threads
// in lockstep, warps for the gpu.subgroup_mma_* ops, f16 and f32 arithmetic
// as the GPU does it, and compares the result with a float64 reference of the
// op (ONNX Conv on NHWC/OHWI, Gemm, MatMul, then the CPU tier's epilogue).
//
// Besides the values, it checks what the GPU would not report: every access
// lies inside its buffer, vector and WMMA accesses are aligned, no thread
// reads shared memory another thread wrote (or writes what another read or
// wrote) since the last barrier, no shared byte is read before it is
// written, and every output element is written exactly once.
//
// What the emulator cannot check is the lowering below the gpu dialect
// (NVVM, PTX, SASS): tests/gpu/implicit_gemm_check.cpp runs the same kernels
// on a GPU.
//
//===----------------------------------------------------------------------===//
#include "CudaCheck.h"
#include "CubinAssembler.h"
#include "GemmKernel.h"
#include "ImplicitGemm.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>
#include <tuple>
#include <unordered_map>
#include <deque>

using namespace mlir;
using namespace tessel::codegen;
using tessel::gpucheck::fromHalf;
using tessel::gpucheck::toHalf;

namespace {

constexpr int kWarp = 32;

/// One thread's value of an SSA value: an integer, a float, or a vector of
/// up to 8 floats.
struct Elt {
  int64_t i = 0;
  float f = 0;
  std::array<float, 8> v{};
};

/// A memref: a window of a byte buffer.
struct Mem {
  std::vector<uint8_t> *buffer = nullptr;
  int64_t byteOffset = 0;
  MemRefType type;
  bool shared = false;
};

/// Per shared byte: who wrote and read it since the last barrier.
struct Access {
  int64_t writeEpoch = -1, readEpoch = -1;
  int writer = -1, reader = -1;
  bool manyReaders = false;
};

class Emulator {
public:
  Emulator(gpu::GPUFuncOp func, std::vector<std::vector<uint8_t>> &args,
           std::array<uint32_t, 3> grid, int threads)
      : func(func), args(args), grid(grid), threads(threads) {}

  /// Runs every block; false with `error` set on the first violation.
  bool run() {
    for (uint32_t z = 0; z < grid[2]; ++z)
      for (uint32_t y = 0; y < grid[1]; ++y)
        for (uint32_t x = 0; x < grid[0]; ++x) {
          block = {x, y, z};
          if (!runBlock())
            return false;
        }
    return true;
  }

  std::string error;
  /// Writes per output byte (the last argument), over all blocks.
  std::vector<int> outWrites;

private:
  bool fail(Operation *op, const std::string &what) {
    if (error.empty()) {
      std::string text;
      llvm::raw_string_ostream os(text);
      os << what << " in block (" << block[0] << "," << block[1] << "," << block[2] << ") at ";
      op->print(os, OpPrintingFlags().skipRegions());
      error = text;
    }
    return false;
  }

  bool runBlock() {
    values.clear();
    matrices.clear();
    mems.clear();
    sharedBuffers.clear();
    sharedAccess.clear();
    epoch = 0;
    for (auto [i, arg] : llvm::enumerate(func.getArguments())) {
      Mem m;
      m.buffer = &args[i];
      m.type = cast<MemRefType>(arg.getType());
      mems[arg.getAsOpaquePointer()] = m;
    }
    if (outWrites.empty())
      outWrites.assign(args.back().size(), 0);
    std::vector<bool> all(threads, true);
    return runBlock(func.getBody().front(), all);
  }

  std::vector<Elt> &val(Value v) {
    auto &slot = values[v.getAsOpaquePointer()];
    if (slot.empty())
      slot.resize(threads);
    return slot;
  }

  static float round(Type type, float x) {
    return type.isF16() ? fromHalf(toHalf(x)) : x;
  }

  /// Byte offset of `indices` in `m`, checked against its shape.
  bool address(Operation *op, const Mem &m, ArrayRef<int64_t> indices, int64_t &offset) {
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

  static int64_t elementBytes(Type type) {
    if (auto vec = dyn_cast<VectorType>(type))
      return vec.getNumElements() * elementBytes(vec.getElementType());
    return type.getIntOrFloatBitWidth() / 8;
  }

  /// Race bookkeeping for `bytes` shared bytes at `offset` by `actor`.
  bool touchShared(Operation *op, const Mem &m, int64_t offset, int64_t bytes, int actor,
                   bool write) {
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

  float loadScalar(Type type, const uint8_t *p) {
    if (type.isF16()) {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return fromHalf(h);
    }
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }

  void storeScalar(Type type, uint8_t *p, float x) {
    if (type.isF16()) {
      uint16_t h = toHalf(x);
      std::memcpy(p, &h, 2);
    } else {
      std::memcpy(p, &x, 4);
    }
  }

  bool runBlock(Block &body, const std::vector<bool> &mask) {
    for (Operation &op : body)
      if (!step(&op, mask))
        return false;
    return true;
  }

  /// The values an scf.yield passes on.
  std::vector<Value> yielded;

  bool step(Operation *op, const std::vector<bool> &mask);
  bool stepFor(scf::ForOp loop, const std::vector<bool> &mask);
  bool stepIf(scf::IfOp ifOp, const std::vector<bool> &mask);
  bool stepMma(Operation *op, const std::vector<bool> &mask);

  gpu::GPUFuncOp func;
  std::vector<std::vector<uint8_t>> &args;
  std::array<uint32_t, 3> grid;
  std::array<uint32_t, 3> block{};
  int threads;
  int64_t epoch = 0;
  // Node-based maps: references to entries stay valid as others are added.
  std::unordered_map<const void *, std::vector<Elt>> values;
  std::unordered_map<const void *, std::vector<std::vector<float>>> matrices; // per warp
  std::unordered_map<const void *, Mem> mems;
  std::map<std::string, std::vector<uint8_t>> sharedBuffers;
  std::map<std::vector<uint8_t> *, std::vector<Access>> sharedAccess;
};

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

bool Emulator::stepIf(scf::IfOp ifOp, const std::vector<bool> &mask) {
  std::vector<Elt> cond = val(ifOp.getCondition());
  std::vector<bool> thenMask(threads), elseMask(threads);
  for (int t = 0; t < threads; ++t) {
    thenMask[t] = mask[t] && cond[t].i;
    elseMask[t] = mask[t] && !cond[t].i;
  }
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
bool Emulator::stepMma(Operation *op, const std::vector<bool> &mask) {
  const int warps = threads / kWarp;
  for (int w = 0; w < warps; ++w) {
    bool any = false, all = true;
    for (int l = 0; l < kWarp; ++l) {
      any = any || mask[w * kWarp + l];
      all = all && mask[w * kWarp + l];
    }
    if (!any)
      continue;
    if (!all)
      return fail(op, "subgroup MMA op reached by part of a warp");
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
  }
  return true;
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
    buffer.assign(global.getType().getNumElements(), 0xff);
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
    int64_t lane = x.getStaticPosition()[0];
    auto &src = val(x.getVector());
    auto &out = val(x.getResult());
    each([&](int t) { out[t].f = src[t].v[lane]; });
    return true;
  }
  if (auto x = dyn_cast<vector::InsertOp>(op)) {
    int64_t lane = x.getStaticPosition()[0];
    auto &dest = val(x.getDest());
    auto &source = val(x.getSource());
    auto &out = val(x.getResult());
    each([&](int t) {
      out[t] = dest[t];
      out[t].v[lane] = source[t].f;
    });
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
    std::vector<std::vector<Elt> *> in;
    for (Value v : asmOp.getOperands())
      in.push_back(&val(v));
    auto &out = val(op->getResult(0));
    if (text.starts_with("ex2.approx.f32"))
      each([&](int t) { out[t].f = std::exp2(float((*in[0])[t].f)); });
    else
      return fail(op, "unknown inline PTX");
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
    } else if (isa<arith::AndIOp>(op)) each([&](int t) { out[t].i = I(0, t) & I(1, t); });
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

//===----------------------------------------------------------------------===//
// Problems, references, runs
//===----------------------------------------------------------------------===//

/// A tensor in its dtype's bytes, and its values as the kernel reads them.
struct Tensor {
  std::vector<double> values;
  std::vector<uint8_t> bytes;
};

Tensor randomTensor(int64_t count, ElemType type, std::mt19937 &rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  Tensor t;
  t.values.resize(count);
  t.bytes.resize(count * elemBytes(type));
  for (int64_t i = 0; i < count; ++i) {
    float x = dist(rng);
    if (type == ElemType::F16) {
      uint16_t h = toHalf(x);
      x = fromHalf(h);
      std::memcpy(&t.bytes[i * 2], &h, 2);
    } else {
      std::memcpy(&t.bytes[i * 4], &x, 4);
    }
    t.values[i] = x;
  }
  return t;
}

double activate(const GemmProblem &p, double v) {
  switch (p.act) {
  case Activation::None: return v;
  case Activation::Relu: return v < 0 ? 0 : v;
  case Activation::Clip: return std::min<double>(std::max<double>(v, p.actAlpha), p.actBeta);
  case Activation::LeakyRelu: return v < 0 ? p.actAlpha * v : v;
  case Activation::Sigmoid: return 1 / (1 + std::exp(-v));
  case Activation::Tanh: return std::tanh(v);
  case Activation::HardSwish: return v * std::min(1.0, std::max(0.0, v / 6 + 0.5));
  }
  return v;
}

struct Operands {
  Tensor a, b, addend, residual;
  int64_t outCount = 0;
  std::vector<double> ref;
};

Operands makeOperands(const GemmProblem &p) {
  std::mt19937 rng(7);
  Operands o;
  const int64_t M = p.m, N = p.n, K = p.k;
  if (p.op == GemmOpKind::Conv) {
    const ConvShape &c = p.conv;
    const int64_t CG = c.inC / c.group;
    o.a = randomTensor(c.batch * c.inH * c.inW * c.inC, p.a, rng);
    o.b = randomTensor(c.outC * c.kH * c.kW * CG, p.b, rng);
    if (p.addend)
      o.addend = randomTensor(c.outC, *p.addend, rng);
    o.outCount = c.batch * c.outH * c.outW * c.outC;
    if (p.residual)
      o.residual = randomTensor(o.outCount, *p.residual, rng);
    o.ref.resize(o.outCount);
    for (int64_t n = 0; n < c.batch; ++n)
      for (int64_t oh = 0; oh < c.outH; ++oh)
        for (int64_t ow = 0; ow < c.outW; ++ow)
          for (int64_t co = 0; co < c.outC; ++co) {
            int64_t g = co / N;
            double acc = 0;
            for (int64_t kh = 0; kh < c.kH; ++kh)
              for (int64_t kw = 0; kw < c.kW; ++kw) {
                int64_t ih = oh * c.strideH - c.padH + kh * c.dilH;
                int64_t iw = ow * c.strideW - c.padW + kw * c.dilW;
                if (ih < 0 || ih >= c.inH || iw < 0 || iw >= c.inW)
                  continue;
                for (int64_t ci = 0; ci < CG; ++ci)
                  acc += o.a.values[((n * c.inH + ih) * c.inW + iw) * c.inC + g * CG + ci] *
                         o.b.values[((co * c.kH + kh) * c.kW + kw) * CG + ci];
              }
            int64_t at = ((n * c.outH + oh) * c.outW + ow) * c.outC + co;
            if (p.addend)
              acc += o.addend.values[co];
            if (p.residual)
              acc += o.residual.values[at];
            o.ref[at] = activate(p, acc);
          }
    return o;
  }
  if (p.op == GemmOpKind::Gemm) {
    o.a = randomTensor(M * K, p.a, rng);
    o.b = randomTensor(K * N, p.b, rng);
    if (p.addend)
      o.addend = randomTensor((M - 1) * p.addendRowStride + (N - 1) * p.addendColStride + 1,
                              *p.addend, rng);
    o.outCount = M * N;
    o.ref.resize(o.outCount);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0;
        for (int64_t q = 0; q < K; ++q)
          acc += o.a.values[p.transA ? q * M + i : i * K + q] *
                 o.b.values[p.transB ? j * K + q : q * N + j];
        double v = p.alpha * acc;
        if (p.addend)
          v += p.beta * o.addend.values[i * p.addendRowStride + j * p.addendColStride];
        o.ref[i * N + j] = activate(p, v);
      }
    return o;
  }
  int64_t aMatrices = 1, bMatrices = 1;
  for (const BatchDim &d : p.batchDims) {
    aMatrices += (d.extent - 1) * d.aStride;
    bMatrices += (d.extent - 1) * d.bStride;
  }
  o.a = randomTensor(aMatrices * M * K, p.a, rng);
  o.b = randomTensor(bMatrices * K * N, p.b, rng);
  o.outCount = p.batch * M * N;
  o.ref.resize(o.outCount);
  for (int64_t z = 0; z < p.batch; ++z) {
    int64_t rest = z, aOff = 0, bOff = 0;
    for (size_t d = p.batchDims.size(); d-- > 0;) {
      int64_t index = rest % p.batchDims[d].extent;
      rest /= p.batchDims[d].extent;
      aOff += index * p.batchDims[d].aStride * M * K;
      bOff += index * p.batchDims[d].bStride * K * N;
    }
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0;
        for (int64_t q = 0; q < K; ++q)
          acc += o.a.values[aOff + i * K + q] * o.b.values[bOff + q * N + j];
        o.ref[(z * M + i) * N + j] = activate(p, acc);
      }
  }
  return o;
}

/// Builds the kernel, emulates it, compares; an empty string on success.
std::string emulate(const GemmKernel &kernel, double *relError = nullptr) {
  MLIRContext ctx;
  auto module = buildGemmModule(ctx, "emulated", {kernel});
  if (failed(module))
    return "the kernel does not build";
  gpu::GPUFuncOp func, reduceFunc;
  (*module)->walk([&](gpu::GPUFuncOp f) {
    if (f.getName() == kernel.name)
      func = f;
    else if (f.getName() == kernel.reduceName())
      reduceFunc = f;
  });
  if (!func || kernel.splitsK() != bool(reduceFunc))
    return "the module does not hold the kernel (and, with split-K, only then its reduction)";
  const GemmProblem &p = kernel.problem;
  Operands o = makeOperands(p);
  std::vector<std::vector<uint8_t>> args;
  // Split-K: the partial sums first, each workspace byte written once; the
  // reduction then takes the workspace where the kernel took A and B.
  if (kernel.splitsK()) {
    std::vector<std::vector<uint8_t>> partialArgs = {o.a.bytes, o.b.bytes};
    partialArgs.emplace_back(kernel.workspaceBytes(), 0xff);
    Emulator partials(func, partialArgs, kernel.grid(), int(kernel.block()[0]));
    if (!partials.run())
      return "partial sums: " + partials.error;
    for (size_t b = 0; b < partialArgs.back().size(); ++b)
      if (partials.outWrites[b] != 1)
        return "workspace byte " + std::to_string(b) + " written " +
               std::to_string(partials.outWrites[b]) + " times";
    args.push_back(std::move(partialArgs.back()));
  } else {
    args = {o.a.bytes, o.b.bytes};
  }
  if (p.addend)
    args.push_back(o.addend.bytes);
  if (p.residual)
    args.push_back(o.residual.bytes);
  args.emplace_back(o.outCount * elemBytes(p.out), 0xff);
  Emulator emulator(kernel.splitsK() ? reduceFunc : func, args,
                    kernel.splitsK() ? kernel.reduceGrid() : kernel.grid(),
                    int(kernel.splitsK() ? kernel.reduceBlock()[0] : kernel.block()[0]));
  if (!emulator.run())
    return emulator.error;
  const std::vector<uint8_t> &out = args.back();
  for (size_t b = 0; b < out.size(); ++b)
    if (emulator.outWrites[b] != 1)
      return "output byte " + std::to_string(b) + " written " +
             std::to_string(emulator.outWrites[b]) + " times";
  double maxErr = 0, maxRef = 0;
  for (int64_t i = 0; i < o.outCount; ++i) {
    double v;
    if (p.out == ElemType::F16) {
      uint16_t h;
      std::memcpy(&h, &out[i * 2], 2);
      v = fromHalf(h);
    } else {
      float f;
      std::memcpy(&f, &out[i * 4], 4);
      v = f;
    }
    if (!std::isfinite(v))
      return "output " + std::to_string(i) + " is not finite";
    maxErr = std::max(maxErr, std::fabs(v - o.ref[i]));
    maxRef = std::max(maxRef, std::fabs(o.ref[i]));
  }
  double rel = maxErr / std::max(maxRef, 1e-30);
  if (relError)
    *relError = rel;
  double tolerance = p.out == ElemType::F16 ? 1e-3 : 2e-5;
  if (!(rel <= tolerance))
    return "max error relative to max |ref| " + std::to_string(rel) + " above " +
           std::to_string(tolerance);
  return "";
}

GemmProblem conv(int64_t n, int64_t h, int64_t w, int64_t c, int64_t k, int64_t r, int64_t s,
                 int64_t stride, int64_t pad, ElemType type = ElemType::F16, int64_t group = 1,
                 int64_t dilation = 1) {
  ConvShape cs;
  cs.batch = n;
  cs.inH = h;
  cs.inW = w;
  cs.inC = c;
  cs.outC = k;
  cs.kH = r;
  cs.kW = s;
  cs.strideH = cs.strideW = stride;
  cs.padH = cs.padW = pad;
  cs.dilH = cs.dilW = dilation;
  cs.group = group;
  cs.outH = (h + 2 * pad - dilation * (r - 1) - 1) / stride + 1;
  cs.outW = (w + 2 * pad - dilation * (s - 1) - 1) / stride + 1;
  return GemmProblem::forConv(cs, type);
}

GemmProblem gemm(int64_t m, int64_t n, int64_t k, bool transA, bool transB,
                 ElemType type = ElemType::F16) {
  GemmProblem p;
  p.op = GemmOpKind::Gemm;
  p.a = p.b = p.out = type;
  p.m = m;
  p.n = n;
  p.k = k;
  p.transA = transA;
  p.transB = transB;
  return p;
}

GemmProblem matmul(int64_t m, int64_t n, int64_t k, SmallVector<BatchDim> dims,
                   ElemType type = ElemType::F16) {
  GemmProblem p;
  p.op = GemmOpKind::MatMul;
  p.a = p.b = p.out = type;
  p.m = m;
  p.n = n;
  p.k = k;
  p.batchDims = dims;
  for (const BatchDim &d : dims)
    p.batch *= d.extent;
  return p;
}

GemmProblem withEpilogue(GemmProblem p, bool addend, bool residual, Activation act,
                         float actAlpha = 0, float actBeta = 0) {
  if (addend)
    p.addend = p.out;
  if (residual)
    p.residual = p.out;
  p.act = act;
  p.actAlpha = actAlpha;
  p.actBeta = actBeta;
  return p;
}

struct Case {
  std::string name;
  GemmProblem problem;
};

std::vector<Case> cases() {
  using A = Activation;
  const ElemType f32 = ElemType::F32;
  std::vector<Case> list = {
      {"conv3x3_bias_relu", withEpilogue(conv(1, 6, 6, 16, 24, 3, 3, 1, 1), true, false, A::Relu)},
      {"conv3x3_s2_residual", withEpilogue(conv(2, 7, 7, 16, 16, 3, 3, 2, 1), true, true, A::Relu)},
      {"conv1x1_odd_m", withEpilogue(conv(1, 7, 7, 32, 40, 1, 1, 1, 0), true, true, A::None)},
      {"conv1x1_s2", conv(1, 9, 9, 16, 32, 1, 1, 2, 0)},
      {"conv7x7_s2_c8", withEpilogue(conv(1, 19, 19, 8, 16, 7, 7, 2, 3), true, false, A::Relu)},
      {"conv_c3_scalar", withEpilogue(conv(1, 8, 8, 3, 8, 3, 3, 1, 1), true, false, A::Clip, 0, 6)},
      // ResNet's stem after its im2row (--tessel-pad-channels): 7x1 over 24
      // channels (7 taps x 3, padded), stride 2 and pads 3 along H only.
      {"conv_stem_rows", [] {
         ConvShape cs;
         cs.batch = 2, cs.inH = 19, cs.inW = 10, cs.inC = 24, cs.outC = 16;
         cs.kH = 7, cs.kW = 1, cs.strideH = 2, cs.strideW = 1, cs.padH = 3, cs.padW = 0;
         cs.dilH = cs.dilW = 1, cs.group = 1;
         cs.outH = (19 + 6 - 7) / 2 + 1, cs.outW = 10;
         return withEpilogue(GemmProblem::forConv(cs, ElemType::F16), true, false, A::Relu);
       }()},
      {"conv_group2", withEpilogue(conv(1, 6, 6, 16, 16, 3, 3, 1, 1, ElemType::F16, 2), true, true,
                                   A::Relu)},
      {"conv_dilation2", withEpilogue(conv(1, 9, 9, 8, 8, 3, 3, 1, 2, ElemType::F16, 1, 2), false,
                                      false, A::Sigmoid)},
      {"conv_f32_tanh", withEpilogue(conv(1, 6, 6, 12, 20, 3, 3, 1, 1, f32), true, true, A::Tanh)},
      {"gemm_m1_bias", [] {
         GemmProblem p = withEpilogue(gemm(1, 40, 64, false, true), true, false, A::Relu);
         p.addendColStride = 1;
         p.addendRowStride = 0;
         return p;
       }()},
      {"gemm_n8", gemm(64, 8, 32, false, false)},
      {"gemm_transA_alpha_beta", [] {
         GemmProblem p = withEpilogue(gemm(20, 24, 40, true, false), true, false, A::Sigmoid);
         p.alpha = 0.5f;
         p.beta = -2.0f;
         p.addendRowStride = 24;
         p.addendColStride = 1;
         return p;
       }()},
      {"gemm_c_column_hardswish", [] {
         GemmProblem p = withEpilogue(gemm(33, 17, 20, false, true), true, false, A::HardSwish);
         p.addendRowStride = 1;
         p.addendColStride = 0;
         return p;
       }()},
      {"gemm_leaky_scalar_c", [] {
         GemmProblem p = withEpilogue(gemm(16, 16, 16, true, true), true, false, A::LeakyRelu, 0.1f);
         p.addendRowStride = 0;
         p.addendColStride = 0;
         return p;
       }()},
      {"gemm_f32", withEpilogue(gemm(30, 50, 70, false, true, f32), false, false, A::Tanh)},
      {"matmul_batch3", matmul(18, 24, 32, {BatchDim{3, 1, 1}})},
      {"matmul_shared_b", matmul(10, 16, 24, {BatchDim{2, 3, 0}, BatchDim{3, 1, 0}})},
      {"matmul_n1", matmul(40, 1, 16, {BatchDim{2, 1, 1}})},
      {"matmul_f32", matmul(9, 12, 20, {BatchDim{2, 1, 0}}, f32)},
  };
  return list;
}

void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

class Emulated : public ::testing::TestWithParam<std::tuple<Case, GemmTier>> {};

TEST_P(Emulated, MatchesReference) {
  const auto &[c, tier] = GetParam();
  std::optional<TileConfig> tiles = chooseTiles(c.problem, tier);
  if (!tiles) {
    ASSERT_TRUE(tier == GemmTier::TensorCore && c.problem.a != ElemType::F16)
        << "no tiling for " << c.name;
    GTEST_SKIP() << "Tensor Cores need f16 operands";
  }
  GemmKernel kernel{c.problem, *tiles, "k"};
  double rel = 0;
  EXPECT_EQ(emulate(kernel, &rel), "") << c.name << " tile " << tiles->blockM << "x"
                                       << tiles->blockN << "x" << tiles->blockK;
}

INSTANTIATE_TEST_SUITE_P(
    Codegen, Emulated,
    ::testing::Combine(::testing::ValuesIn(cases()),
                       ::testing::Values(GemmTier::TensorCore, GemmTier::Simt)),
    [](const ::testing::TestParamInfo<std::tuple<Case, GemmTier>> &info) {
      return std::get<0>(info.param).name +
             (std::get<1>(info.param) == GemmTier::TensorCore ? "_tc" : "_simt");
    });

/// Tilings the heuristic picks only for big problems, forced on small ones:
/// 8 warps with 4x2 fragments, the skinny fragments, and k-contiguous
/// staging of a row-contiguous operand (8-wide fragments).
TEST(EmulatedTiles, ForcedTensorCoreTilings) {
  struct Forced {
    GemmProblem problem;
    int64_t fragM, fragN, warpsM, warpsN, fragsM, fragsN;
  };
  using A = Activation;
  std::vector<Forced> forced = {
      {withEpilogue(conv(1, 10, 10, 16, 40, 3, 3, 1, 1), true, true, A::Relu), 16, 16, 2, 4, 4, 2},
      // 64x64 warp tiles, partial in M (162 = 128 + 34) and N (136 = 128 + 8).
      {withEpilogue(conv(2, 9, 9, 24, 136, 3, 3, 1, 1), true, true, A::Relu), 16, 16, 2, 2, 4, 4},
      {gemm(70, 20, 48, false, false), 32, 8, 4, 1, 1, 2},
      {gemm(9, 70, 48, true, true), 8, 32, 1, 4, 2, 1},
      {gemm(40, 40, 40, true, false), 8, 32, 2, 2, 1, 1},
      {matmul(40, 24, 32, {BatchDim{2, 1, 1}}), 32, 8, 2, 2, 1, 2},
  };
  for (const Forced &f : forced) {
    TileConfig t;
    t.tier = GemmTier::TensorCore;
    t.fragM = f.fragM;
    t.fragN = f.fragN;
    t.warpsM = f.warpsM;
    t.warpsN = f.warpsN;
    t.fragsM = f.fragsM;
    t.fragsN = f.fragsN;
    t.blockM = f.warpsM * f.fragsM * f.fragM;
    t.blockN = f.warpsN * f.fragsN * f.fragN;
    t.blockK = 32;
    EXPECT_EQ(emulate(GemmKernel{f.problem, t, "k"}), "")
        << "fragment " << f.fragM << "x" << f.fragN << " warps " << f.warpsM << "x" << f.warpsN
        << " frags " << f.fragsM << "x" << f.fragsN;
  }
}

TEST(EmulatedTiles, ForcedSimtTilings) {
  std::vector<std::array<int64_t, 4>> forced = {{16, 16, 4, 4}, {32, 8, 2, 8}, {8, 16, 1, 1}};
  GemmProblem p = withEpilogue(conv(1, 9, 9, 8, 20, 3, 3, 1, 1, ElemType::F32), true, true,
                               Activation::Relu);
  for (auto [tm, tn, mm, mn] : forced) {
    TileConfig t;
    t.tier = GemmTier::Simt;
    t.threadsM = tm;
    t.threadsN = tn;
    t.microM = mm;
    t.microN = mn;
    t.blockM = tm * mm;
    t.blockN = tn * mn;
    t.blockK = 16;
    EXPECT_EQ(emulate(GemmKernel{p, t, "k"}), "") << tm << "x" << tn << " threads";
  }
}

/// The software-pipelined K loop on both tiers and both blockKs each tier
/// may choose: K of one step (no prefetch), two steps (one prefetch),
/// several, and not a multiple of blockK (the last step's loads masked),
/// on gemms with either operand row-contiguous and on convs with padding and
/// stride (the prefetch carries the im2col masks).
/// A small forced tiling, many blocks on small problems: tc 2x2 warps of one
/// 16x16 fragment (32x32), simt 8x16 threads of 2x2 sums (16x32).
TileConfig smallTiles(GemmTier tier, int64_t blockK) {
  TileConfig t;
  t.tier = tier;
  if (tier == GemmTier::TensorCore) {
    t.warpsM = t.warpsN = 2;
    t.blockM = t.blockN = 32;
  } else {
    t.threadsM = 8;
    t.threadsN = 16;
    t.microM = t.microN = 2;
    t.blockM = 16;
    t.blockN = 32;
  }
  t.blockK = blockK;
  return t;
}

TEST(EmulatedTiles, PipelinedKSteps) {
  using A = Activation;
  for (GemmTier tier : {GemmTier::TensorCore, GemmTier::Simt}) {
    bool tc = tier == GemmTier::TensorCore;
    for (int64_t blockK : tc ? std::array<int64_t, 2>{32, 64} : std::array<int64_t, 2>{16, 32}) {
      ElemType type = tc ? ElemType::F16 : ElemType::F32;
      std::vector<GemmProblem> problems;
      for (int64_t k : {blockK, 2 * blockK, 2 * blockK - 8, 5 * blockK + 8}) {
        problems.push_back(gemm(24, 20, k, true, false, type));
        problems.push_back(withEpilogue(gemm(20, 24, k, false, true, type), false, false, A::Relu));
      }
      // K = 72 (3x3 x 8, stride 2, pad 1), 144 (3x3 x 16, pad 1), blockK
      // (1x1 stride 2, one step), 27 (Cin 3, element-wise gathers).
      problems.push_back(
          withEpilogue(conv(1, 9, 9, 8, 16, 3, 3, 2, 1, type), true, false, A::Relu));
      problems.push_back(
          withEpilogue(conv(2, 6, 6, 16, 24, 3, 3, 1, 1, type), true, true, A::Relu));
      problems.push_back(conv(1, 7, 7, blockK, 16, 1, 1, 2, 0, type));
      problems.push_back(withEpilogue(conv(1, 8, 8, 3, 8, 3, 3, 1, 1, type), true, false, A::None));
      for (const GemmProblem &p : problems) {
        TileConfig t = smallTiles(tier, blockK);
        EXPECT_EQ(emulate(GemmKernel{p, t, "k"}), "")
            << tierName(tier).str() << " blockK " << blockK << " " << p.key();
      }
    }
  }
}

/// Grouped convs with fewer than 8 filters per group (depthwise, channel
/// multipliers, small groups): no Tensor Core tiling, the direct kernel on
/// simt, against the float64 reference with every epilogue operand.
TEST(EmulatedTiles, DirectGroupedConvs) {
  using A = Activation;
  const ElemType f16 = ElemType::F16, f32 = ElemType::F32;
  std::vector<GemmProblem> problems = {
      // MobileNetV2's depthwise 3x3 (relu6), stride 1 with a residual, stride 2.
      withEpilogue(conv(1, 7, 7, 16, 16, 3, 3, 1, 1, f16, 16), true, true, A::Clip, 0, 6),
      withEpilogue(conv(2, 9, 9, 24, 24, 3, 3, 2, 1, f16, 24), true, false, A::Relu),
      // 5x5, dilation 2, f32.
      withEpilogue(conv(1, 11, 11, 8, 8, 5, 5, 1, 4, f32, 8, 2), false, false, A::Sigmoid),
      // Channel multiplier 2 (16 filters over 8 groups of 1 channel).
      withEpilogue(conv(1, 6, 6, 8, 16, 3, 3, 1, 0, f16, 8), true, false, A::None),
      // Groups of 3 channels, 4 filters each, 1x1 and 3x3.
      conv(1, 5, 5, 6, 8, 1, 1, 1, 0, f32, 2),
      withEpilogue(conv(1, 5, 5, 6, 8, 3, 3, 2, 1, f16, 2), true, true, A::LeakyRelu, 0.2f),
  };
  for (const GemmProblem &p : problems) {
    EXPECT_FALSE(chooseTiles(p, GemmTier::TensorCore)) << p.key();
    std::optional<TileConfig> tiles = chooseTiles(p, GemmTier::Simt);
    ASSERT_TRUE(tiles && tiles->direct) << p.key();
    GemmKernel kernel{p, *tiles, "k"};
    EXPECT_EQ(kernel.grid()[0], uint32_t((p.m * p.conv.outC + 255) / 256));
    EXPECT_EQ(emulate(kernel), "") << p.key();
  }
  // Eight filters per group or more stay implicit GEMMs.
  EXPECT_FALSE(chooseTiles(conv(1, 6, 6, 16, 16, 3, 3, 1, 1, f16, 2), GemmTier::Simt)->direct);
}

/// Split-K: the partial sums through the workspace and the reduction's
/// epilogue, with splits that divide the K steps evenly and not, a last
/// split with steps past K, and batches / groups beside the splits in grid z.
TEST(EmulatedTiles, SplitK) {
  using A = Activation;
  for (GemmTier tier : {GemmTier::TensorCore, GemmTier::Simt}) {
    bool tc = tier == GemmTier::TensorCore;
    ElemType type = tc ? ElemType::F16 : ElemType::F32;
    std::vector<GemmProblem> problems = {
        gemm(24, 20, 200, true, false, type),
        withEpilogue(gemm(20, 24, 136, false, true, type), false, false, A::Relu),
        withEpilogue(conv(1, 5, 5, 16, 24, 3, 3, 1, 1, type), true, true, A::Relu),
        withEpilogue(conv(2, 6, 6, 32, 32, 3, 3, 2, 1, type, /*group=*/2), true, false,
                     A::LeakyRelu),
    };
    for (const GemmProblem &p : problems)
      for (int64_t split : {2, 3, 4}) {
        TileConfig t = smallTiles(tier, tc ? 32 : 16);
        t.splitK = split;
        GemmKernel kernel{p, t, "k"};
        ASSERT_TRUE(kernel.splitsK());
        EXPECT_EQ(kernel.grid()[2], uint32_t(p.batch * split));
        EXPECT_EQ(kernel.workspaceBytes(), uint64_t(p.batch * split * p.m * p.n * 4));
        EXPECT_EQ(emulate(kernel), "")
            << tierName(tier).str() << " split " << split << " " << p.key();
      }
  }
}

/// The bundle's ResNet-50 shapes (scripts/gpu-gemm-bundle.sh) at full size,
/// on both tiers: minutes, so run by hand
/// (--gtest_also_run_disabled_tests --gtest_filter='*ResNet50*').
TEST(EmulatedTiles, DISABLED_ResNet50Shapes) {
  using A = Activation;
  std::vector<GemmProblem> problems = {
      withEpilogue(conv(1, 224, 224, 8, 64, 7, 7, 2, 3), true, false, A::Relu),
      withEpilogue(conv(1, 56, 56, 64, 256, 1, 1, 1, 0), true, true, A::Relu),
      withEpilogue(conv(1, 56, 56, 128, 128, 3, 3, 2, 1), true, false, A::Relu),
      withEpilogue(conv(1, 56, 56, 256, 512, 1, 1, 2, 0), true, false, A::None),
      withEpilogue(conv(1, 7, 7, 512, 512, 3, 3, 1, 1), true, false, A::Relu),
      withEpilogue(conv(1, 7, 7, 512, 2048, 1, 1, 1, 0), true, true, A::Relu),
      withEpilogue(conv(8, 28, 28, 128, 128, 3, 3, 1, 1), true, true, A::Relu),
      withEpilogue(conv(1, 224, 224, 3, 64, 7, 7, 2, 3, ElemType::F32), true, false, A::Relu),
  };
  for (const GemmProblem &p : problems)
    for (GemmTier tier : {GemmTier::TensorCore, GemmTier::Simt}) {
      std::optional<TileConfig> tiles = chooseTiles(p, tier);
      if (!tiles)
        continue;
      double rel = 0;
      EXPECT_EQ(emulate(GemmKernel{p, *tiles, "k"}, &rel), "")
          << p.key() << " " << tierName(tier).str();
      std::printf("%s %s: max rel err %.3g\n", p.key().c_str(), tierName(tier).data(), rel);
    }
}

/// The heuristic's choices on the shapes that matter (documented in
/// docs/architecture.md).
TEST(Tiling, HeuristicChoices) {
  auto tc = [](const GemmProblem &p) { return *chooseTiles(p, GemmTier::TensorCore); };
  // ResNet-50 at batch 256, N = 64: 256x64's two buffers (50 KiB) pass the
  // 48 KiB of static shared memory, so 128x64, 4 warps of 4x2 fragments.
  TileConfig big = tc(conv(256, 56, 56, 64, 64, 3, 3, 1, 1));
  EXPECT_EQ(big.blockM, 128);
  EXPECT_EQ(big.blockN, 64);
  EXPECT_EQ(big.blockK, 32);
  EXPECT_EQ(big.threads(), 128);
  // N = 256: 128x128 (two buffers of 20 KiB) as 8 warps of 64x32 (4x2
  // fragments); 64x64 warp tiles are no candidates (measured slower on
  // ResNet-50 b256, GemmKernel.cpp).
  TileConfig wide = tc(conv(256, 14, 14, 256, 256, 3, 3, 1, 1));
  EXPECT_EQ(wide.blockM, 128);
  EXPECT_EQ(wide.blockN, 128);
  EXPECT_EQ(wide.blockK, 32);
  EXPECT_EQ(wide.threads(), 256);
  EXPECT_EQ(wide.fragsM * wide.fragsN, 8);
  // ResNet-50 at batch 1, 7x7 outputs (M = 49, K = 4608): 8 tiles of 64x64
  // would leave 100 of 108 SMs idle; split-K makes the blocks from K (12
  // splits of 6 steps of blockK 64: 96 blocks), not from smaller tiles.
  TileConfig late = tc(conv(1, 7, 7, 512, 512, 3, 3, 1, 1));
  EXPECT_EQ(late.blockM, 64);
  EXPECT_EQ(late.blockN, 64);
  EXPECT_EQ(late.fragM, 16);
  EXPECT_EQ(late.blockK, 64);
  EXPECT_EQ(late.splitK, 12);
  // A batch-256 grid fills the SMs many times: no split.
  EXPECT_EQ(big.splitK, 1);
  EXPECT_EQ(wide.splitK, 1);
  // The language-model GEMM of DeepBench (M 1024, N 16, K 500000): a
  // handful of tiles, each with thousands of K steps, split the most.
  EXPECT_EQ(tc(gemm(1024, 16, 500000, false, false)).splitK, 64);
  // Every choice keeps both buffers (rows padded by 8 f16) within the 48 KiB
  // of static shared memory.
  for (const TileConfig &t : {big, wide, late})
    EXPECT_LE(2 * (t.blockM + t.blockN) * (t.blockK + 8) * 2, 48 * 1024);
  // A batch-1 classifier: 8x32 fragments, one warp row.
  TileConfig classifier = tc(gemm(1, 1000, 2048, false, true));
  EXPECT_EQ(classifier.fragM, 8);
  EXPECT_EQ(classifier.blockM, 8);
  // 8 output columns: 32x8 fragments, one warp column.
  TileConfig skinny = tc(gemm(4096, 8, 64, false, false));
  EXPECT_EQ(skinny.fragN, 8);
  EXPECT_EQ(skinny.blockN, 8);
  // f32 operands have no Tensor Core tiling.
  EXPECT_FALSE(chooseTiles(gemm(64, 64, 64, false, false, ElemType::F32), GemmTier::TensorCore));
}

//===----------------------------------------------------------------------===//
// The planner: steps to variants and modules
//===----------------------------------------------------------------------===//

/// Steps as the engine writer shows them, on ops with the graph dialect's
/// attributes (the planner reads attributes, not the dialect's C++ API).
class Steps {
public:
  Steps() { ctx.allowUnregisteredDialects(); }

  int32_t tensor(ArrayRef<int64_t> shape, Type element) {
    types.push_back(RankedTensorType::get(shape, element));
    return int32_t(types.size() - 1);
  }
  Type f16() { return Float16Type::get(&ctx); }
  Type f32() { return Float32Type::get(&ctx); }

  /// A conv step: 3x3 stride 1 pad 1 unless told otherwise.
  StepView conv(std::vector<int32_t> inputs, int32_t output, int64_t group = 1,
                llvm::StringRef act = "relu", int64_t kernel = 3) {
    OpBuilder b(&ctx);
    OperationState state(UnknownLoc::get(&ctx), "tessel.conv");
    int64_t pad = kernel / 2;
    state.addAttribute("layout", b.getStringAttr("NHWC"));
    state.addAttribute("strides", b.getDenseI64ArrayAttr({1, 1}));
    state.addAttribute("pads", b.getDenseI64ArrayAttr({pad, pad, pad, pad}));
    state.addAttribute("dilations", b.getDenseI64ArrayAttr({1, 1}));
    state.addAttribute("group", b.getI64IntegerAttr(group));
    state.addAttribute("activation", b.getStringAttr(act));
    return view(state, "conv", std::move(inputs), output);
  }

  StepView gemm(std::vector<int32_t> inputs, int32_t output) {
    OpBuilder b(&ctx);
    OperationState state(UnknownLoc::get(&ctx), "tessel.gemm");
    state.addAttribute("alpha", b.getF32FloatAttr(1.0f));
    state.addAttribute("beta", b.getF32FloatAttr(1.0f));
    state.addAttribute("transA", b.getBoolAttr(false));
    state.addAttribute("transB", b.getBoolAttr(true));
    return view(state, "gemm", std::move(inputs), output);
  }

  MLIRContext ctx;

private:
  StepView view(OperationState &state, llvm::StringRef name, std::vector<int32_t> inputs,
                int32_t output) {
    ops.push_back(Operation::create(state));
    indices.push_back(std::move(inputs));
    indices.push_back({output});
    StepView step;
    step.op = ops.back();
    step.name = name;
    step.inputs = indices[indices.size() - 2];
    step.outputs = indices.back();
    step.tensorTypes = types;
    return step;
  }

  std::vector<RankedTensorType> types;
  std::deque<std::vector<int32_t>> indices;
  std::vector<Operation *> ops;

public:
  ~Steps() {
    for (Operation *op : ops)
      op->destroy();
  }
};

TEST(Planner, VariantsModulesAndSharedKernels) {
  Steps s;
  Type h = s.f16();
  int32_t x = s.tensor({1, 14, 14, 64}, h), w = s.tensor({64, 3, 3, 64}, h),
          bias = s.tensor({64}, h), y1 = s.tensor({1, 14, 14, 64}, h),
          y2 = s.tensor({1, 14, 14, 64}, h), y3 = s.tensor({1, 14, 14, 64}, h),
          dw = s.tensor({64, 3, 3, 1}, h), xf = s.tensor({1, 14, 14, 64}, s.f32()),
          wf = s.tensor({64, 3, 3, 64}, s.f32()), yf = s.tensor({1, 14, 14, 64}, s.f32());
  GemmPlanner planner(s.ctx, Targets{{75, 80, 90}});

  auto first = planner.plan(s.conv({x, w, bias, -1}, y1));
  ASSERT_TRUE(succeeded(first));
  ASSERT_EQ(first->size(), 2u);
  const KernelVariant &tc = (*first)[0], &simt = (*first)[1];
  EXPECT_EQ(tc.tier, "tc-sm70");
  EXPECT_EQ(tc.minComputeCapability, 70);
  EXPECT_EQ(tc.alignment, 16);
  EXPECT_EQ(simt.tier, "simt");
  EXPECT_EQ(simt.minComputeCapability, 60);
  ASSERT_EQ(tc.launches.size(), 1u);
  const Launch &launch = tc.launches[0];
  EXPECT_EQ(launch.module, 0);
  EXPECT_EQ(simt.launches[0].module, 1);
  EXPECT_EQ(launch.kernel, tc.kernel);
  // Parameters bound to the step's tensors: input, weights, bias, result.
  ASSERT_EQ(launch.args.size(), 4u);
  EXPECT_EQ(launch.args[0].tensor, x);
  EXPECT_EQ(launch.args[1].tensor, w);
  EXPECT_EQ(launch.args[2].tensor, bias);
  EXPECT_EQ(launch.args[3].tensor, y1);
  for (const KernelArg &arg : launch.args)
    EXPECT_TRUE(arg.bytes.empty());
  EXPECT_EQ(launch.sharedBytes, 0u);
  EXPECT_EQ(launch.grid[2], 1u);

  // The same conv again shares the kernel; with a residual it does not.
  auto again = planner.plan(s.conv({y1, w, bias, -1}, y2));
  ASSERT_TRUE(succeeded(again));
  EXPECT_EQ((*again)[0].kernel, tc.kernel);
  EXPECT_EQ((*again)[1].kernel, simt.kernel);
  auto residual = planner.plan(s.conv({y2, w, bias, y1}, y3));
  ASSERT_TRUE(succeeded(residual));
  EXPECT_NE((*residual)[0].kernel, tc.kernel);
  EXPECT_EQ((*residual)[0].launches[0].args.size(), 5u);
  EXPECT_EQ((*residual)[0].launches[0].args[3].tensor, y1);

  // Depthwise: the direct kernel, simt only.
  auto depthwise = planner.plan(s.conv({x, dw, -1, -1}, y1, /*group=*/64));
  ASSERT_TRUE(succeeded(depthwise));
  ASSERT_EQ(depthwise->size(), 1u);
  EXPECT_EQ((*depthwise)[0].tier, "simt");
  ASSERT_EQ((*depthwise)[0].launches.size(), 1u);
  EXPECT_EQ((*depthwise)[0].launches[0].block[0], 256u);
  EXPECT_EQ((*depthwise)[0].launches[0].grid[0], (14u * 14u * 64u + 255u) / 256u);
  // f32 operands: SIMT only.
  auto fp32 = planner.plan(s.conv({xf, wf, -1, -1}, yf));
  ASSERT_TRUE(succeeded(fp32));
  ASSERT_EQ(fp32->size(), 1u);
  EXPECT_EQ((*fp32)[0].tier, "simt");

  auto modules = planner.finish();
  ASSERT_TRUE(succeeded(modules));
  ASSERT_EQ(modules->size(), 2u);
  EXPECT_EQ((*modules)[0].name, "tessel_gemm_tc");
  EXPECT_EQ((*modules)[1].name, "tessel_gemm_simt");
  for (const KernelModule &module : *modules) {
    ASSERT_FALSE(module.images.empty());
    const KernelImage &ptx = module.images[0];
    EXPECT_FALSE(ptx.cubin);
    std::string text(ptx.data.begin(), ptx.data.end());
    EXPECT_EQ(ptx.arch, &module == &(*modules)[0] ? 70 : 60);
    const std::string &kernel = &module == &(*modules)[0] ? tc.kernel : simt.kernel;
    EXPECT_NE(text.find(".entry " + kernel + "("), std::string::npos) << text.substr(0, 400);
    if (!canAssembleCubins())
      continue;
    ASSERT_EQ(module.images.size(), 4u);
    for (size_t i = 1; i < 4; ++i) {
      EXPECT_TRUE(module.images[i].cubin);
      EXPECT_EQ(module.images[i].arch, (std::array<int, 3>{75, 80, 90})[i - 1]);
      EXPECT_GT(module.images[i].data.size(), 1000u);
    }
  }
  // The tc module has 2 kernels (plain and residual conv), simt 4 (+ the
  // depthwise conv's direct kernel, + f32).
  std::string tcPtx((*modules)[0].images[0].data.begin(), (*modules)[0].images[0].data.end());
  std::string simtPtx((*modules)[1].images[0].data.begin(), (*modules)[1].images[0].data.end());
  auto entries = [](const std::string &text) {
    size_t count = 0;
    for (size_t at = text.find(".entry "); at != std::string::npos; at = text.find(".entry ", at + 1))
      ++count;
    return count;
  };
  EXPECT_EQ(entries(tcPtx), 2u);
  EXPECT_EQ(entries(simtPtx), 4u);
}

TEST(Planner, GemmBindsCAndNothingWithoutTargets) {
  Steps s;
  Type h = s.f16();
  int32_t a = s.tensor({1, 2048}, h), b = s.tensor({1000, 2048}, h), c = s.tensor({1000}, h),
          y = s.tensor({1, 1000}, h);
  {
    GemmPlanner planner(s.ctx, Targets{{80}});
    auto variants = planner.plan(s.gemm({a, b, c}, y));
    ASSERT_TRUE(succeeded(variants));
    ASSERT_EQ(variants->size(), 2u);
    // The batch-1 classifier (a few tiles, K = 2048) splits K on Tensor
    // Cores: the partial sums take A, B and the workspace, the reduction
    // the workspace, C and Y.
    const std::vector<Launch> &launches = (*variants)[0].launches;
    ASSERT_EQ(launches.size(), 2u);
    ASSERT_EQ(launches[0].args.size(), 3u);
    EXPECT_EQ(launches[0].args[0].tensor, a);
    EXPECT_EQ(launches[0].args[1].tensor, b);
    EXPECT_EQ(launches[0].args[2].tensor, -1);
    EXPECT_GT(launches[0].args[2].workspaceBytes, 0u);
    EXPECT_EQ(launches[1].kernel, launches[0].kernel + "_reduce");
    ASSERT_EQ(launches[1].args.size(), 3u);
    EXPECT_EQ(launches[1].args[0].workspaceBytes, launches[0].args[2].workspaceBytes);
    EXPECT_EQ(launches[1].args[1].tensor, c);
    EXPECT_EQ(launches[1].args[2].tensor, y);
  }
  GemmPlanner none(s.ctx, Targets{});
  auto variants = none.plan(s.gemm({a, b, c}, y));
  ASSERT_TRUE(succeeded(variants));
  EXPECT_TRUE(variants->empty());
  auto modules = none.finish();
  ASSERT_TRUE(succeeded(modules));
  EXPECT_TRUE(modules->empty());
}

TEST(CubinAssembler, ReportsBadPtx) {
  if (!canAssembleCubins())
    GTEST_SKIP() << "built without nvJitLink";
  CubinResult bad = assembleCubin(".version 6.3\n.target sm_70\n.address_size 64\nnot ptx\n", 80);
  EXPECT_FALSE(bad.ok);
  EXPECT_TRUE(bad.cubin.empty());
  EXPECT_NE(bad.log.find("line 4"), std::string::npos) << bad.log;
}

// A verbose log as ptxas 13.0 and nvJitLink write it (two kernels, the
// second spilling), including nvJitLink's own quoted summary lines.
TEST(CubinAssembler, FindsSpillingKernels) {
  const char *log =
      "ptxas info    : Compiling entry function 'k_fits' for 'sm_90'\n"
      "ptxas info    : Function properties for k_fits\n"
      "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 127 registers, used 1 barriers, 37888 bytes smem\n"
      "ptxas info    : Compiling entry function 'k_spills' for 'sm_90'\n"
      "ptxas info    : Function properties for k_spills\n"
      "ptxas         .     32 bytes stack frame, 32 bytes spill stores, 32 bytes spill loads\n"
      "ptxas info    : Used 128 registers, used 1 barriers, 37888 bytes smem\n"
      "info    : Function properties for 'k_fits':\n"
      "info    : used 127 registers, used 1 barriers, 0 stack, 38912 bytes smem, 0 bytes lmem\n";
  EXPECT_EQ(spillingKernels(log), std::vector<std::string>{"k_spills"});
  EXPECT_TRUE(spillingKernels("").empty());
  EXPECT_EQ(maxRegisters(log), 128);
  EXPECT_EQ(maxRegisters(""), 0);
}

TEST(CubinAssembler, DropsTheMinBlocksOfTheNamedKernelsOnly) {
  std::string ptx = ".visible .entry a(\n.param .u64 p\n)\n.maxntid 256, 1, 1\n"
                    ".minnctapersm 2\n{\nret;\n}\n"
                    ".visible .entry ab(\n.param .u64 p\n)\n.maxntid 128, 1, 1\n"
                    ".minnctapersm 4\n{\nret;\n}\n";
  std::string out = withoutMinBlocks(ptx, {"ab"});
  EXPECT_NE(out.find(".minnctapersm 2\n"), std::string::npos);
  EXPECT_EQ(out.find(".minnctapersm 4"), std::string::npos);
  EXPECT_NE(out.find(".maxntid 128, 1, 1\n{"), std::string::npos) << out;
  EXPECT_EQ(withoutMinBlocks(ptx, {"missing"}), ptx);
}

/// ptxas's "Used N registers" for `kernel` in a verbose log; -1 if absent.
int registersUsed(const std::string &info, const std::string &kernel) {
  size_t at = info.find("Function properties for " + kernel + "\n");
  if (at == std::string::npos)
    return -1;
  at = info.find("Used ", at);
  return at == std::string::npos ? -1 : std::atoi(info.c_str() + at + 5);
}

// Tensor Core kernels of up to 8 accumulator fragments ask for 16 warps per
// SM. 8 warps of 64x32 on the vectorized 128x128 tile of DeepBench's
// 2048x7000x2048 then fit 128 registers (two blocks of 256 threads;
// nvJitLink's relocatable compile gave them 153 without asking); the
// scalar-gather tile of 5124x9124x1760 (N not a multiple of 8) would spill
// under that cap and is assembled again without asking. 4 warps of 64x64
// (16 fragments; no heuristic candidate, forced here) do not ask.
TEST(CubinAssembler, TensorCoreKernelsAskForTwoBlocksPerSmWithoutSpilling) {
  if (!canAssembleCubins())
    GTEST_SKIP() << "built without nvJitLink";
  MLIRContext ctx;
  struct Case {
    int64_t m, n, k;
    int64_t forceFragsN; // 0: the heuristic's tiles; 2 or 4: 128x128x32 tiles of 4 x that
    int64_t threads;
    bool fits;
  };
  for (const Case &c : {Case{2048, 7000, 2048, 0, 256, true},
                        Case{2048, 7000, 2048, 4, 128, false},
                        Case{5124, 9124, 1760, 0, 256, false}}) {
    GemmProblem p = gemm(c.m, c.n, c.k, false, false);
    TileConfig tiles = *chooseTiles(p, GemmTier::TensorCore);
    if (c.forceFragsN) {
      tiles.fragsM = 4, tiles.fragsN = c.forceFragsN;
      tiles.warpsM = 2, tiles.warpsN = 8 / c.forceFragsN;
      tiles.blockM = tiles.blockN = 128;
      tiles.blockK = 32;
    }
    GemmKernel kernel{p, tiles, "tc_k"};
    ASSERT_EQ(kernel.tiles.threads(), c.threads);
    auto module = compileGemmModule(ctx, GemmTier::TensorCore, {kernel}, Targets{},
                                    [&](size_t) { return UnknownLoc::get(&ctx); });
    ASSERT_TRUE(succeeded(module));
    std::string ptx(module->images.front().data.begin(), module->images.front().data.end());
    bool asks = kernel.tiles.fragsM * kernel.tiles.fragsN <= 8;
    EXPECT_EQ(ptx.find(".minnctapersm " + std::to_string(512 / c.threads) + "\n") !=
                  std::string::npos,
              asks);
    for (int arch : {80, 90}) {
      CubinResult cubin = assembleCubin(ptx, arch);
      ASSERT_TRUE(cubin.ok) << cubin.log;
      SCOPED_TRACE(std::to_string(c.m) + "x" + std::to_string(c.n) + " " +
                   std::to_string(c.threads) + " threads sm_" + std::to_string(arch));
      EXPECT_TRUE(spillingKernels(cubin.info).empty()) << cubin.info;
      int registers = registersUsed(cubin.info, "tc_k");
      ASSERT_GT(registers, 0) << cubin.info;
      if (c.fits)
        EXPECT_LE(registers, 128) << cubin.info;
      else
        EXPECT_GT(registers, 128) << cubin.info; // assembled again, uncapped
    }
  }
}

} // namespace
