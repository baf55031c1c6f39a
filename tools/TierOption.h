//===- TierOption.h - the --tier option of tessel-run and tessel-bench -*- C++ -*-===//
//
// The execution tiers a user may ask for by name, in one place for the
// tools that take --tier: the names CLI11 accepts and the tessel_tier_t
// each means (tessel_runtime.h).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TOOLS_TIEROPTION_H
#define TESSEL_TOOLS_TIEROPTION_H

#include "tessel_runtime.h"

#include <string>
#include <utility>
#include <vector>

namespace tessel::tools {

inline const std::vector<std::pair<std::string, tessel_tier_t>> &tierOptions() {
  static const std::vector<std::pair<std::string, tessel_tier_t>> options = {
      {"auto", TESSEL_TIER_AUTO},       {"cpu", TESSEL_TIER_CPU},
      {"simt", TESSEL_TIER_SIMT},       {"tc", TESSEL_TIER_TC},
      {"tc-sm70", TESSEL_TIER_TC_SM70}, {"tc-sm80", TESSEL_TIER_TC_SM80}};
  return options;
}

/// The names --tier accepts.
inline std::vector<std::string> tierNames() {
  std::vector<std::string> names;
  for (const auto &option : tierOptions())
    names.push_back(option.first);
  return names;
}

/// The tier `name` means (a name tierNames() lists; AUTO otherwise).
inline tessel_tier_t parseTier(const std::string &name) {
  for (const auto &option : tierOptions())
    if (option.first == name)
      return option.second;
  return TESSEL_TIER_AUTO;
}

} // namespace tessel::tools

#endif // TESSEL_TOOLS_TIEROPTION_H
