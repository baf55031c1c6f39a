//===- GpuIrEmulator.h - runs a generated GPU kernel's IR on the CPU -*- C++ -*-===//
//
// A small emulator of the gpu/scf/arith/memref/vector/llvm IR the GEMM
// codegen emits (before NVVM lowering), for tests on machines without a GPU:
// every block of the grid in turn, the block's threads in lockstep (a mask
// per region), the gpu.subgroup_mma_* ops once per warp, f16 and f32
// arithmetic as the GPU does it (f32 FMA with one rounding, f16 stores
// rounded to nearest even). The nvgpu ops of the tc-sm80 kernels too:
// ldmatrix and mma.sync once per warp, with the PTX ISA's lane maps, and
// cp.async copies that land in shared memory only when a wait for their
// group completes them (so a missing wait reads stale or unwritten bytes).
// The tc-sm90 kernels' inline PTX: mbarriers and TMA tensor copies (their
// bytes landing when a wait completes the barrier's phase, from tensor maps
// in the emulator's own format, EmulatedTensorMap); wgmma.mma_async once per warpgroup, its
// operands read through their shared memory descriptors (the 128-byte
// swizzle applied to the address as the hardware does), its commit and
// wait groups; a cp.async or store into bytes that a wgmma not yet waited
// for read fails, from the copy's issue on (it may land any time after).
//
// Besides the values, it checks what the GPU would not report: every access
// lies inside its buffer, vector and WMMA accesses are aligned, no thread
// reads shared memory another thread wrote (or writes what another read or
// wrote) since the last barrier, no shared byte is read before it is
// written; and it counts the writes to each byte of the last argument (the
// output), so that a test can ask for every byte written exactly once.
//
// What it cannot check is the lowering below the gpu dialect (NVVM, PTX,
// SASS): tests/gpu/implicit_gemm_check.cpp runs the kernels on a GPU.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TESTS_GPU_EMULATOR_GPUIREMULATOR_H
#define TESSEL_TESTS_GPU_EMULATOR_GPUIREMULATOR_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace tessel::gpuemu {

/// What a TMA kernel's tensor-map argument holds in emulation (a
/// CUtensorMap is the driver's opaque encoding), as the engine describes
/// it (engine.fbs TensorMap): an f16 tensor of `rank` dimensions (`dims`
/// innermost first, `strides` the bytes of dimensions 1..), copied
/// 128-byte swizzled, zero past the edges. Tiled (rank 2): boxes of box[1]
/// rows of box[0] elements. Im2col (rank 4, NHWC as {C, W, H, N}): box[1]
/// pixels of box[0] channels, walking the positions from `lower` to the
/// dimension's end plus `upper` (W, H) in `elementStrides`, each read at
/// the copy's offsets from its position.
struct EmulatedTensorMap {
  static constexpr uint32_t kMagic = 0x50414d54; // "TMAP"
  uint32_t magic = kMagic;
  uint32_t tensorArg = 0; ///< the kernel argument holding the tensor
  uint32_t rank = 0;
  uint32_t im2col = 0;
  uint64_t dims[4] = {0, 0, 0, 0};
  uint64_t strides[3] = {0, 0, 0};
  uint32_t box[2] = {0, 0};
  int32_t lower[2] = {0, 0}, upper[2] = {0, 0};
  uint32_t elementStrides[4] = {1, 1, 1, 1};
};

class Emulator {
public:
  /// `func` run over `grid` blocks of `threads` threads, its arguments the
  /// byte buffers `args` (in order; the last is the output).
  Emulator(mlir::gpu::GPUFuncOp func, std::vector<std::vector<uint8_t>> &args,
           std::array<uint32_t, 3> grid, int threads)
      : func(func), args(args), grid(grid), threads(threads) {}

  /// Runs every block; false with `error` set on the first violation.
  bool run();

  std::string error;
  /// Writes per output byte (the last argument), over all blocks.
  std::vector<int> outWrites;
  /// The launch's dynamic shared memory (gpu.dynamic_shared_memory).
  uint32_t dynamicSharedBytes = 0;

private:
  /// One thread's value of an SSA value: an integer, a float, or a vector of
  /// up to 8 floats.
  struct Elt {
    int64_t i = 0;
    float f = 0;
    std::array<float, 8> v{};
    /// An LLVM struct of f32 (tc-sm90's wgmma accumulators).
    std::vector<float> s;
  };

  /// A memref: a window of a byte buffer.
  struct Mem {
    std::vector<uint8_t> *buffer = nullptr;
    int64_t byteOffset = 0;
    mlir::MemRefType type;
    bool shared = false;
  };

  /// Per shared byte: who wrote and read it since the last barrier.
  struct Access {
    int64_t writeEpoch = -1, readEpoch = -1;
    int writer = -1, reader = -1;
    bool manyReaders = false;
  };

  bool fail(mlir::Operation *op, const std::string &what);
  bool runBlock();
  bool runBlock(mlir::Block &body, const std::vector<bool> &mask);
  std::vector<Elt> &val(mlir::Value v);
  static float round(mlir::Type type, float x);
  /// Byte offset of `indices` in `m`, checked against its shape.
  bool address(mlir::Operation *op, const Mem &m, llvm::ArrayRef<int64_t> indices,
               int64_t &offset);
  static int64_t elementBytes(mlir::Type type);
  /// Race bookkeeping for `bytes` shared bytes at `offset` by `actor`.
  bool touchShared(mlir::Operation *op, const Mem &m, int64_t offset, int64_t bytes, int actor,
                   bool write);
  float loadScalar(mlir::Type type, const uint8_t *p);
  void storeScalar(mlir::Type type, uint8_t *p, float x);

  bool step(mlir::Operation *op, const std::vector<bool> &mask);
  bool stepFor(mlir::scf::ForOp loop, const std::vector<bool> &mask);
  bool stepIf(mlir::scf::IfOp ifOp, const std::vector<bool> &mask);
  /// A warp-specialized kernel's split into warpgroups of different roles
  /// (an scf.if marked tessel.roles; the math warpgroups of a ping-pong
  /// kernel split again): each side runs on a thread of its own, one at a
  /// time, as coroutines would: the running side hands over where an
  /// mbarrier wait cannot complete (handOver), and the if completes once
  /// both its sides have ended.
  bool stepRoles(mlir::scf::IfOp ifOp, const std::vector<bool> &thenMask,
                 const std::vector<bool> &elseMask);
  /// The running side hands over to another that may make progress; false
  /// where none can (every other side has ended, or waits and nothing
  /// changed since: a deadlock).
  bool handOver();
  /// The running side has ended: the next that can run takes over.
  void endSide();
  struct Sides;
  Sides *sides = nullptr; ///< while a stepRoles runs
  int side = -1;          ///< the side running now
  /// mbarrier state changes so far: a side that waits hands over only
  /// while the other still changes something.
  int64_t progress = 0;
  /// Set by stepTma where a wait cannot complete yet (not an error while
  /// the other side of stepRoles may complete it).
  bool blocked = false;
  /// `fn` once per warp with an active thread; fails where only part of a
  /// warp reaches the op (the warp-wide ops: WMMA, ldmatrix, mma.sync).
  bool forEachWarp(mlir::Operation *op, const std::vector<bool> &mask,
                   llvm::function_ref<bool(int warp)> fn);
  bool stepMma(mlir::Operation *op, const std::vector<bool> &mask);
  bool stepNvgpu(mlir::Operation *op, const std::vector<bool> &mask);
  /// Completes thread t's oldest groups of copies until `pending` remain.
  bool completeCopies(mlir::Operation *op, int t, size_t pending);
  /// tc-sm90's inline PTX: wgmma.mma_async once per warpgroup (its shared
  /// operands read through their descriptors, as issued), its fence,
  /// commit and wait, and fence.proxy.async.
  bool stepWgmma(mlir::LLVM::InlineAsmOp op, const std::vector<bool> &mask);
  /// mbarrier.init / arrive / arrive.expect_tx / try_wait.parity and TMA's
  /// cp.async.bulk.tensor.2d: a copy reads its box when issued and lands in
  /// shared memory when a wait completes its barrier's phase (all arrivals
  /// made, every byte expected copied; a plain arrive completes it too); a
  /// wait that cannot complete fails, or within stepRoles sets `blocked`.
  bool stepTma(mlir::LLVM::InlineAsmOp op, const std::vector<bool> &mask);
  /// TMA's tensor stores (TileConfig::tmaStore): cp.async.bulk.tensor.2d
  /// global <- shared (a 128-byte swizzled box, clipped at the tensor's
  /// edges) written to the output when issued, its shared bytes kept; the
  /// issuing thread's cp.async.bulk.wait_group(.read) then fails if they
  /// changed meanwhile (written while the store could still read them); a
  /// block that ends with stores not waited for fails.
  bool stepTmaStore(mlir::LLVM::InlineAsmOp op, const std::vector<bool> &mask);
  /// The tensor map at kernel argument address `map` (a whole map argument
  /// in the emulator's format, of an argument that exists).
  bool readTensorMap(mlir::Operation *op, int64_t map, EmulatedTensorMap &tm);
  /// Where the 128-byte swizzle puts the byte at shared address `logical`
  /// (address bits 4-6 XOR bits 7-9, on a 1024-byte aligned box).
  static int64_t swizzled128(int64_t logical) { return logical ^ (((logical >> 7) & 7) << 4); }
  struct PendingStore {
    int thread = 0;
    int64_t offset = 0; ///< in the dynamic shared memory
    std::vector<uint8_t> bytes;
  };
  std::vector<PendingStore> pendingStores;
  /// Fails where `bytes` shared bytes at `offset` of `m` are written while
  /// a wgmma that read them is not yet waited for.
  bool checkWgmmaReads(mlir::Operation *op, const Mem &m, int64_t offset, int64_t bytes);

  /// The shared address of the dynamic shared memory's first byte: aligned
  /// to the 128 bytes the kernels assume (kSharedAlignment) and 128 past a
  /// multiple of 1024, so that rounding it up for wgmma's swizzle atoms
  /// takes all of SharedPlan::alignSlack.
  static constexpr int64_t kDynamicSharedBase = 0x480;
  /// The block's dynamic shared memory (gpu.dynamic_shared_memory), once
  /// the kernel has asked for it.
  std::vector<uint8_t> *dynamicShared = nullptr;
  /// Per warpgroup: its wgmma groups (ids increasing over the block) in
  /// flight, committed ones oldest first, the open one's id, the newest
  /// retired one's; and per dynamic shared byte the newest group that read it.
  struct WgmmaState {
    std::vector<int64_t> committed;
    int64_t open = 0, retired = -1;
    std::vector<int64_t> lastRead;
  };
  std::vector<WgmmaState> wgmma;
  int64_t wgmmaGroupIds = 0;

  /// A cp.async in flight: its destination and the bytes it will write.
  struct PendingCopy {
    Mem dst;
    int64_t offset = 0;
    std::vector<uint8_t> bytes;
  };
  /// Per thread: the copies not yet in a group, and the groups in flight.
  std::vector<std::vector<PendingCopy>> openCopies;
  std::vector<std::vector<std::vector<PendingCopy>>> copyGroups;

  /// An mbarrier (by shared address): arrivals expected and made in the
  /// current phase, bytes still expected, phases completed, and the TMA
  /// copies that land when the phase completes.
  struct Mbarrier {
    int64_t expected = 0, arrivals = 0, tx = 0, completed = 0;
    std::vector<PendingCopy> copies;
  };
  std::map<int64_t, Mbarrier> mbarriers;
  /// A pointer argument's value (a tensor map's address): (index + 1) << 40.
  static constexpr int kArgAddressShift = 40;

  /// The values an scf.yield passes on.
  std::vector<mlir::Value> yielded;

  mlir::gpu::GPUFuncOp func;
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

} // namespace tessel::gpuemu

#endif // TESSEL_TESTS_GPU_EMULATOR_GPUIREMULATOR_H
