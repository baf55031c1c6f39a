//===- cubin_assembler_test.cpp - PTX to cubins through nvJitLink --------===//
//
// CubinAssembler: errors reported with their PTX line, ptxas's verbose log
// read back (spills, registers), .minnctapersm dropped per kernel, and the
// Tensor Core kernels' occupancy request kept where it does not spill.
//
//===----------------------------------------------------------------------===//
#include "CubinAssembler.h"
#include "GemmEmulation.h"
#include "ImplicitGemm.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

using namespace mlir;
using namespace tessel::codegen;
using namespace tessel::gpuemu;

namespace {

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
