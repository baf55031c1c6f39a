//===- ToolMain.h - a tool's main body with its failures reported -*- C++ -*-===//
//
// The tools allocate what engines and files declare (an input of a declared
// shape, a tensor file's payload): a size beyond memory must end in a
// message and the tool's error exit, never in an uncaught std::bad_alloc
// (issue 17's fuzzing found tessel-run aborting on an input of 193 GB).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TOOLS_TOOLMAIN_H
#define TESSEL_TOOLS_TOOLMAIN_H

#include <cstdio>
#include <exception>
#include <new>
#include <stdexcept>

namespace tessel::tools {

/// body(), or `errorExit` with a message naming `tool` when it throws: out
/// of memory (std::bad_alloc, or a std::length_error from a container asked
/// for more than it can hold), or any other exception that escaped it.
template <typename Body> int guardedMain(const char *tool, int errorExit, Body &&body) {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    std::fprintf(stderr, "%s: error: out of memory\n", tool);
  } catch (const std::length_error &e) {
    std::fprintf(stderr, "%s: error: out of memory (%s)\n", tool, e.what());
  } catch (const std::exception &e) {
    std::fprintf(stderr, "%s: error: %s\n", tool, e.what());
  }
  return errorExit;
}

} // namespace tessel::tools

#endif // TESSEL_TOOLS_TOOLMAIN_H
