//===- tessel-codegen-gemm.cpp - write the PTX of one WMMA GEMM kernel ----===//
//
// The first line of the output is a PTX comment with the launch shape,
//   // tessel-launch kernel=NAME grid=X,Y,Z block=X,Y,Z shared=B m=M n=N k=K out=f32
// which tests/gpu/wmma_gemm_check.cpp reads to launch the kernel.
//
//===----------------------------------------------------------------------===//
#include "WmmaGemm.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>

int main(int argc, char **argv) {
  CLI::App app{"Writes the PTX of C[M,N] = A[M,K] * B[K,N] (f16 operands, "
               "f32 accumulation) tiled onto WMMA fragments"};
  tessel::codegen::GemmKernelSpec spec;
  std::string fragment = "16x16x16", output = "-";
  app.add_option("-m", spec.m, "rows of A and C")->required();
  app.add_option("-n", spec.n, "columns of B and C")->required();
  app.add_option("-k", spec.k, "columns of A, rows of B")->required();
  app.add_option("--chip", spec.chip, "sm_70, sm_75, sm_80 or sm_90")
      ->capture_default_str();
  app.add_flag("--out-f16", spec.outF16, "C in f16 instead of f32");
  app.add_option("--fragment", fragment, "16x16x16, 32x8x16 or 8x32x16")
      ->capture_default_str();
  app.add_option("--warps-m", spec.warpsM, "warps per block along M")
      ->capture_default_str();
  app.add_option("--warps-n", spec.warpsN, "warps per block along N")
      ->capture_default_str();
  app.add_option("--frags-m", spec.fragsM, "fragments per warp along M")
      ->capture_default_str();
  app.add_option("--frags-n", spec.fragsN, "fragments per warp along N")
      ->capture_default_str();
  app.add_option("-o,--output", output, "PTX file to write (- for stdout)")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  if (std::sscanf(fragment.c_str(), "%ldx%ldx%ld", &spec.fragment.m,
                  &spec.fragment.n, &spec.fragment.k) != 3) {
    std::cerr << "error: --fragment wants MxNxK, got '" << fragment << "'\n";
    return 2;
  }

  mlir::MLIRContext context;
  mlir::ScopedDiagnosticHandler handler(&context, [](mlir::Diagnostic &diag) {
    llvm::errs() << "error: " << diag.str() << "\n";
    return mlir::success();
  });
  auto launch = tessel::codegen::planWmmaGemm(mlir::UnknownLoc::get(&context),
                                              spec);
  if (mlir::failed(launch))
    return 1;
  mlir::FailureOr<std::string> ptx =
      tessel::codegen::emitWmmaGemmPtx(context, spec);
  if (mlir::failed(ptx))
    return 1;

  std::string text;
  llvm::raw_string_ostream os(text);
  os << "// tessel-launch kernel=" << spec.kernelName << " grid="
     << launch->grid[0] << "," << launch->grid[1] << "," << launch->grid[2]
     << " block=" << launch->block[0] << "," << launch->block[1] << ","
     << launch->block[2] << " shared=" << launch->sharedBytes
     << " m=" << spec.m << " n=" << spec.n << " k=" << spec.k
     << " out=" << (spec.outF16 ? "f16" : "f32") << "\n"
     << *ptx;
  if (output == "-") {
    std::cout << text;
    return 0;
  }
  std::ofstream file(output, std::ios::binary);
  file << text;
  if (!file) {
    std::cerr << "error: cannot write " << output << "\n";
    return 1;
  }
  return 0;
}
