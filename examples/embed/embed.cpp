// embed.cpp - a Tessel engine run from C++ through the installed runtime's
// header-only wrapper (tessel_runtime.hpp): as embed.c, with RAII handles and
// exceptions.
//
//   embed_cpp ENGINE INPUT.bin...
#include <tessel_runtime.hpp>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <vector>

int main(int argc, char **argv) try {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s ENGINE INPUT.bin...\n", argv[0]);
    return 2;
  }
  tessel::Engine engine = tessel::Engine::openFile(argv[1]);
  if (static_cast<size_t>(argc) - 2 != engine.inputCount()) {
    std::fprintf(stderr, "the engine has %zu inputs, %d files given\n", engine.inputCount(),
                 argc - 2);
    return 2;
  }
  tessel::Context context(engine);
  std::vector<std::vector<char>> inputs, outputs;
  for (size_t i = 0; i < engine.inputCount(); ++i) {
    std::ifstream file(argv[2 + i], std::ios::binary);
    inputs.emplace_back(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
    if (inputs.back().size() != engine.input(i).sizeBytes) {
      std::fprintf(stderr, "%s: expected exactly %zu bytes\n", argv[2 + i],
                   engine.input(i).sizeBytes);
      return 1;
    }
    context.bindInput(i, inputs.back());
  }
  for (size_t i = 0; i < engine.outputCount(); ++i) {
    outputs.emplace_back(engine.output(i).sizeBytes);
    context.bindOutput(i, outputs.back());
  }
  context.run();
  std::printf("tier %s\n", context.tier().c_str());
  for (size_t i = 0; i < engine.outputCount(); ++i) {
    tessel::TensorInfo info = engine.output(i);
    std::printf("output %s %s", info.name.c_str(), tessel_dtype_name(info.dtype));
    for (size_t d = 0; d < info.shape.size(); ++d)
      std::printf("%s%lld", d ? "x" : " ", static_cast<long long>(info.shape[d]));
    std::printf("\n");
    if (info.dtype == TESSEL_DTYPE_F32)
      for (int64_t e = 0; e < info.numElements(); ++e)
        std::printf("%.9g\n", reinterpret_cast<const float *>(outputs[i].data())[e]);
  }
  return 0;
} catch (const tessel::Error &e) {
  std::fprintf(stderr, "tessel: %s\n", e.what());
  return 1;
}
