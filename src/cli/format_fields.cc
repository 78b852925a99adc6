#include "cli/format_fields.h"

#include <cctype>
#include <ctime>

namespace shoal::cli::fmt {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

std::vector<FieldSpec> ParsePercentFormat(std::string_view format) {
  std::vector<FieldSpec> out;
  size_t i = 0;
  auto append_literal = [&out](char c) {
    if (out.empty()) out.emplace_back();  // literal-only entry
    out.back().suffix.push_back(c);
  };
  while (i < format.size()) {
    char c = format[i];
    if (c != '%') {
      append_literal(c);
      ++i;
      continue;
    }
    if (i + 1 >= format.size()) {  // trailing '%'
      append_literal('%');
      ++i;
      continue;
    }
    if (format[i + 1] == '%') {
      append_literal('%');
      i += 2;
      continue;
    }
    FieldSpec f;
    size_t j = i + 1;
    if (j < format.size() && format[j] == '.') {
      f.right = true;
      ++j;
    }
    if (j < format.size() && format[j] == '#') {
      f.auto_width = true;
      ++j;
    }
    int width = 0;
    while (j < format.size() && IsDigit(format[j])) {
      if (width < 100000) width = width * 10 + (format[j] - '0');
      ++j;
    }
    if (j >= format.size()) {  // "%.10" with no type: keep it as text
      for (size_t k = i; k < format.size(); ++k) append_literal(format[k]);
      break;
    }
    f.width = width;
    f.code = format[j];
    out.push_back(std::move(f));
    i = j + 1;
  }
  return out;
}

std::vector<FieldSpec> ParseLongFormat(std::string_view format) {
  std::vector<FieldSpec> out;
  for (const std::string& item : SplitList(format, ',')) {
    FieldSpec f;
    f.width = 20;
    size_t colon = item.find(':');
    f.name = item.substr(0, colon);
    if (colon != std::string::npos) {
      size_t j = colon + 1;
      if (j < item.size() && item[j] == '.') {
        f.right = true;
        ++j;
      }
      if (j < item.size() && IsDigit(item[j])) {
        int width = 0;
        while (j < item.size() && IsDigit(item[j])) {
          if (width < 100000) width = width * 10 + (item[j] - '0');
          ++j;
        }
        f.width = width;
      }
      f.suffix = item.substr(j);
    }
    out.push_back(std::move(f));
  }
  return out;
}

void AppendField(std::string& out, std::string_view value, int width, bool right) {
  if (width <= 0) {
    out.append(value);
    return;
  }
  size_t w = static_cast<size_t>(width);
  if (value.size() >= w) {
    out.append(value.substr(0, w));
    return;
  }
  if (right) out.append(w - value.size(), ' ');
  out.append(value);
  if (!right) out.append(w - value.size(), ' ');
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::vector<std::string> SplitList(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(sep, start);
    if (end == std::string_view::npos) end = s.size();
    if (end > start) out.emplace_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::string DateLine(int64_t now) {
  std::time_t t = static_cast<std::time_t>(now);
  std::tm tm{};
  if (!localtime_r(&t, &tm)) return "";
  char buf[64];
  size_t n = std::strftime(buf, sizeof buf, "%a %b %e %H:%M:%S %Y", &tm);
  return std::string(buf, n);
}

namespace {

// Length of the well-formed UTF-8 sequence at s[i] (RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF), or 0 when the bytes there are not one.
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  auto continuation = [&](size_t k) { return k < s.size() && (byte(k) & 0xC0) == 0x80; };
  unsigned char lead = byte(i);
  if (lead >= 0xC2 && lead <= 0xDF) return continuation(i + 1) ? 2 : 0;
  if (lead >= 0xE0 && lead <= 0xEF) {
    if (!continuation(i + 1) || !continuation(i + 2)) return 0;
    unsigned char second = byte(i + 1);
    if (lead == 0xE0 && second < 0xA0) return 0;  // overlong
    if (lead == 0xED && second > 0x9F) return 0;  // UTF-16 surrogate
    return 3;
  }
  if (lead >= 0xF0 && lead <= 0xF4) {
    if (!continuation(i + 1) || !continuation(i + 2) || !continuation(i + 3)) return 0;
    unsigned char second = byte(i + 1);
    if (lead == 0xF0 && second < 0x90) return 0;  // overlong
    if (lead == 0xF4 && second > 0x8F) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

}  // namespace

std::string JsonString(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back('"');
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20) {
          static const char kHex[] = "0123456789abcdef";
          out += "\\u00";
          out.push_back(kHex[c >> 4]);
          out.push_back(kHex[c & 15]);
        } else if (c < 0x80) {
          out.push_back(static_cast<char>(c));
        } else if (size_t n = Utf8SequenceLength(s, i)) {
          out.append(s.substr(i, n));
          i += n - 1;
        } else {
          // Job names, comments and environments are bytes (Slurm takes any); JSON text must
          // be UTF-8, so a byte that starts no valid sequence becomes U+FFFD, as shoalrestd does.
          out += "\xEF\xBF\xBD";
        }
    }
  }
  out.push_back('"');
  return out;
}

bool NaturalLess(std::string_view a, std::string_view b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (IsDigit(a[i]) && IsDigit(b[j])) {
      size_t ie = i, je = j;
      while (ie < a.size() && IsDigit(a[ie])) ++ie;
      while (je < b.size() && IsDigit(b[je])) ++je;
      size_t iz = i, jz = j;
      while (iz + 1 < ie && a[iz] == '0') ++iz;
      while (jz + 1 < je && b[jz] == '0') ++jz;
      std::string_view na = a.substr(iz, ie - iz), nb = b.substr(jz, je - jz);
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      if (ie - i != je - j) return ie - i < je - j;  // fewer leading zeros first
      i = ie;
      j = je;
      continue;
    }
    if (a[i] != b[j]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]);
    ++i;
    ++j;
  }
  return a.size() - i < b.size() - j;
}

}  // namespace shoal::cli::fmt
