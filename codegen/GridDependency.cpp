//===- GridDependency.cpp - kernels that wait for the grids before them ---===//
#include "GridDependency.h"

#include <cstdlib>
#include <vector>

namespace tessel::codegen {

namespace {

std::string_view trimmed(std::string_view line) {
  size_t begin = line.find_first_not_of(" \t\r");
  if (begin == std::string_view::npos)
    return {};
  size_t end = line.find_last_not_of(" \t\r");
  return line.substr(begin, end - begin + 1);
}

bool startsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

/// Whether a line opens an entry point: `[.visible|.weak] .entry name(`.
bool opensEntry(std::string_view line) {
  for (std::string_view linkage : {".visible ", ".weak ", ".extern "})
    if (startsWith(line, linkage))
      line = trimmed(line.substr(linkage.size()));
  return startsWith(line, ".entry ") || startsWith(line, ".entry\t");
}

/// `.version M.m` raised to 7.8 where below; nullopt if unreadable.
std::optional<std::string> raisedVersion(std::string_view line) {
  std::string_view number = trimmed(line.substr(std::string_view(".version").size()));
  size_t dot = number.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 >= number.size())
    return std::nullopt;
  int major = std::atoi(std::string(number.substr(0, dot)).c_str());
  int minor = std::atoi(std::string(number.substr(dot + 1)).c_str());
  if (major * 10 + minor >= 78)
    return std::string(line);
  return std::string(".version 7.8");
}

/// `.target sm_NN[a][, ...]` raised to sm_90 where below; nullopt if
/// unreadable.
std::optional<std::string> raisedTarget(std::string_view line) {
  std::string_view rest = trimmed(line.substr(std::string_view(".target").size()));
  if (!startsWith(rest, "sm_"))
    return std::nullopt;
  size_t digits = 3;
  while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9')
    ++digits;
  if (digits == 3)
    return std::nullopt;
  int arch = std::atoi(std::string(rest.substr(3, digits - 3)).c_str());
  if (arch >= kGridDependencyArch)
    return std::string(line);
  return ".target sm_" + std::to_string(kGridDependencyArch) + std::string(rest.substr(digits));
}

} // namespace

std::optional<std::string> waitingForPriorGrids(std::string_view ptx) {
  std::vector<std::string_view> lines;
  for (size_t at = 0; at <= ptx.size();) {
    size_t end = ptx.find('\n', at);
    if (end == std::string_view::npos) {
      if (at < ptx.size())
        lines.push_back(ptx.substr(at));
      break;
    }
    lines.push_back(ptx.substr(at, end - at));
    at = end + 1;
  }
  std::string out;
  out.reserve(ptx.size() + 4096);
  bool version = false, target = false;
  // 0: outside an entry; 1: in its header, before the body's '{'; 2: in the
  // body's leading declarations.
  int state = 0;
  for (std::string_view line : lines) {
    std::string_view t = trimmed(line);
    if (startsWith(t, ".version") && !version) {
      std::optional<std::string> raised = raisedVersion(t);
      if (!raised)
        return std::nullopt;
      out += *raised + "\n";
      version = true;
      continue;
    }
    if (startsWith(t, ".target") && !target) {
      std::optional<std::string> raised = raisedTarget(t);
      if (!raised)
        return std::nullopt;
      out += *raised + "\n";
      target = true;
      continue;
    }
    if (state == 2 && !t.empty() && t[0] != '.' && !startsWith(t, "//")) {
      out += "\tgriddepcontrol.wait;\n";
      state = 0;
    }
    if (state == 0 && opensEntry(t))
      state = 1;
    else if (state == 1 && t == "{")
      state = 2;
    out.append(line.data(), line.size());
    out += '\n';
  }
  if (!version || !target || state != 0)
    return std::nullopt;
  return out;
}

} // namespace tessel::codegen
