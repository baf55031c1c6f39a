//===- PtxWait.cpp - tessel-ptx-wait: a build step of the kernel library --===//
//
// tessel-ptx-wait IN.ptx OUT.ptx: writes IN with each entry point waiting
// for the grids before it (codegen/GridDependency.h), for the kernel
// library's cubins of sm_90 and later.
//
//===----------------------------------------------------------------------===//
#include "GridDependency.h"

#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: tessel-ptx-wait IN.ptx OUT.ptx\n");
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "tessel-ptx-wait: cannot read %s\n", argv[1]);
    return 1;
  }
  std::string ptx((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::optional<std::string> waiting = tessel::codegen::waitingForPriorGrids(ptx);
  if (!waiting) {
    std::fprintf(stderr, "tessel-ptx-wait: %s: no .version or .target directive, or an entry "
                         "without a body\n",
                 argv[1]);
    return 1;
  }
  std::ofstream out(argv[2], std::ios::binary);
  out << *waiting;
  if (!out.flush()) {
    std::fprintf(stderr, "tessel-ptx-wait: cannot write %s\n", argv[2]);
    return 1;
  }
  return 0;
}
