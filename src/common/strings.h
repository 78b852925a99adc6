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

}  // namespace shoal
