//===- status.h - the runtime's internal error value -----------*- C++ -*-===//
//
// The C++ side of tessel_status_t: a code from the C API's enum and a message.
// The engine, the executor and the C API pass it by value; the C API turns it
// into a heap status at the boundary. No exceptions are used for errors the
// runtime expects (a bad file, a bad binding); only allocation failure throws,
// and the C API catches that.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_STATUS_H
#define TESSEL_RUNTIME_STATUS_H

#include "tessel_runtime.h"

#include <string>
#include <utility>

namespace tessel::rt {

class [[nodiscard]] Status {
public:
  // Success.
  Status() = default;
  Status(tessel_status_code_t code, std::string message)
      : statusCode(code), text(std::move(message)) {}

  bool ok() const { return statusCode == TESSEL_OK; }
  tessel_status_code_t code() const { return statusCode; }
  const std::string &message() const { return text; }

private:
  tessel_status_code_t statusCode = TESSEL_OK;
  std::string text;
};

inline Status invalidEngine(std::string message) {
  return Status(TESSEL_INVALID_ENGINE, std::move(message));
}
inline Status invalidArgument(std::string message) {
  return Status(TESSEL_INVALID_ARGUMENT, std::move(message));
}

} // namespace tessel::rt

#endif // TESSEL_RUNTIME_STATUS_H
