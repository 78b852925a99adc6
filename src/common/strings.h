// Small string helpers shared by parsers across the tree (ASCII only: configuration keys,
// option values and state names are ASCII).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace shoal {

std::string AsciiLower(std::string_view s);
std::string AsciiUpper(std::string_view s);
// Every field between separators, empty ones included ("a,,b" -> "a", "", "b"; "" -> "").
std::vector<std::string_view> SplitFields(std::string_view s, char sep);

// Numbers joined by `sep` ("0,1,5"): CPU lists, PMIx peer lists, group lists.
template <typename Number>
std::string JoinNumbers(const std::vector<Number>& numbers, char sep = ',') {
  std::string out;
  for (const Number& n : numbers) {
    if (!out.empty()) out += sep;
    out += std::to_string(n);
  }
  return out;
}

}  // namespace shoal
