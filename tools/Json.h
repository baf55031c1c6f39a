//===- Json.h - JSON text for the tools' --json outputs ---------*- C++ -*-===//
//
// The tools write their JSON by hand (no JSON library in the runtime's
// dependencies); this is the one string quoting they share.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TOOLS_JSON_H
#define TESSEL_TOOLS_JSON_H

#include <cstdio>
#include <string>

namespace tessel::tools {

/// `text` as a JSON string literal: quotes and backslashes escaped, control
/// characters as \u00XX.
inline std::string jsonString(const std::string &text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\', out += c;
    else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
      out += escaped;
    } else
      out += c;
  }
  return out + "\"";
}

} // namespace tessel::tools

#endif // TESSEL_TOOLS_JSON_H
