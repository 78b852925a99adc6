// Field specifications shared by squeue and sinfo output formats. Pure functions, no I/O.
//
//   -o/--format  "%[[.]size]type[suffix]": '.' right-justifies, size is the field width (values
//                are cut to it), text up to the next '%' is printed after the field. "%%" is a
//                literal '%'. sinfo also accepts "%#P"/"%#N" (width of the widest value).
//   -O/--Format  "type[:[.][size][suffix]]" comma separated; no size means 20.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shoal::cli::fmt {

struct FieldSpec {
  char code = 0;            // -o type letter; 0 for a literal-only entry (text before the first %)
  std::string name;         // -O field name as written (empty for -o)
  int width = 0;            // 0 = as wide as the value
  bool right = false;       // '.' given
  bool auto_width = false;  // '#' given: width of the widest value (and of the header)
  std::string suffix;       // literal text printed after the field
};

// Parses a -o string. Never fails: a lone '%' at the end is literal text; unknown type letters
// are left to the caller.
std::vector<FieldSpec> ParsePercentFormat(std::string_view format);

// Parses a -O string; unknown names are left to the caller.
std::vector<FieldSpec> ParseLongFormat(std::string_view format);

// Appends `value` in a field of `width` (0 = natural), cutting it to the width and padding with
// spaces on the left (right=true) or right.
void AppendField(std::string& out, std::string_view value, int width, bool right);

// Lower-cases ASCII.
std::string Lower(std::string_view s);
std::string Upper(std::string_view s);

// Splits "a,b,,c" into {"a","b","c"} (empty items dropped).
std::vector<std::string> SplitList(std::string_view s, char sep = ',');

// The date line squeue/sinfo print above the header for -i/-l: "Tue Jan 10 12:00:00 2023"
// (local time, no newline).
std::string DateLine(int64_t now);

// A JSON string literal (quotes included) with the required escapes; bytes that are not
// well-formed UTF-8 become U+FFFD, since JSON text must be UTF-8.
std::string JsonString(std::string_view s);

// Compares names with embedded numbers numerically ("n2" < "n10").
bool NaturalLess(std::string_view a, std::string_view b);

}  // namespace shoal::cli::fmt
