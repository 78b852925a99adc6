#include "common/hostlist.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shoal {
namespace {

// Upper bound on one expression's expansion, so "n[0-999999999]" fails instead of exhausting
// memory.
constexpr uint64_t kMaxHosts = 1'000'000;
// Numbers longer than this cannot be represented (and are not plausible host numbers).
constexpr size_t kMaxDigits = 18;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

Status Invalid(std::string_view expr, std::string_view why = {}) {
  std::string msg = "invalid hostlist: ";
  msg.append(expr);
  if (!why.empty()) {
    msg.append(" (");
    msg.append(why);
    msg.append(")");
  }
  return InvalidArgument(std::move(msg));
}

// One "lo-hi" piece of a bracket group. `width` is the zero-padded width (digits of lo).
struct Range {
  uint64_t lo = 0, hi = 0;
  int width = 0;
};

// A name piece: literal text followed by an optional bracket group (ranges non-empty).
struct Piece {
  std::string_view literal;
  std::vector<Range> ranges;
};

bool ParseNumber(std::string_view s, uint64_t* out) {
  if (s.empty() || s.size() > kMaxDigits) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (!IsDigit(c)) return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

void AppendPadded(std::string* out, uint64_t v, int width) {
  char buf[24];
  int n = 0;
  do {
    buf[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  for (int i = n; i < width; ++i) out->push_back('0');
  while (n > 0) out->push_back(buf[--n]);
}

// Parses "1-3,5,07-09" (the inside of a bracket group).
Status ParseRanges(std::string_view inside, std::string_view token, std::vector<Range>* out) {
  if (inside.empty()) return Invalid(token, "empty brackets");
  size_t pos = 0;
  while (pos <= inside.size()) {
    size_t comma = inside.find(',', pos);
    if (comma == std::string_view::npos) comma = inside.size();
    std::string_view part = inside.substr(pos, comma - pos);
    while (!part.empty() && IsSpace(part.front())) part.remove_prefix(1);
    while (!part.empty() && IsSpace(part.back())) part.remove_suffix(1);
    if (part.empty()) return Invalid(token, "empty range");
    Range r;
    size_t dash = part.find('-');
    std::string_view lo = part.substr(0, dash);
    std::string_view hi = dash == std::string_view::npos ? lo : part.substr(dash + 1);
    if (!ParseNumber(lo, &r.lo) || !ParseNumber(hi, &r.hi)) return Invalid(token, "bad range");
    if (r.hi < r.lo) return Invalid(token, "descending range");
    r.width = static_cast<int>(lo.size());
    out->push_back(r);
    pos = comma + 1;
  }
  return Status::Ok();
}

// Expands one whitespace/comma-free token ("r[1-2]n[01-02]-ib") and appends the names.
Status ExpandToken(std::string_view token, std::vector<std::string>* out) {
  std::vector<Piece> pieces;
  std::string_view trailing;
  size_t pos = 0;
  while (pos < token.size()) {
    size_t open = token.find_first_of("[]", pos);
    if (open == std::string_view::npos) {
      trailing = token.substr(pos);
      break;
    }
    if (token[open] == ']') return Invalid(token, "unbalanced brackets");
    size_t close = token.find_first_of("[]", open + 1);
    if (close == std::string_view::npos || token[close] == '[') {
      return Invalid(token, "unbalanced brackets");
    }
    Piece p;
    p.literal = token.substr(pos, open - pos);
    Status st = ParseRanges(token.substr(open + 1, close - open - 1), token, &p.ranges);
    if (!st.ok()) return st;
    pieces.push_back(std::move(p));
    pos = close + 1;
  }

  if (pieces.empty()) {
    out->emplace_back(token);
    return Status::Ok();
  }

  // Count the product first so absurd expressions fail without allocating.
  uint64_t total = 1;
  std::vector<uint64_t> counts(pieces.size());
  for (size_t i = 0; i < pieces.size(); ++i) {
    uint64_t n = 0;
    for (const Range& r : pieces[i].ranges) {
      n += r.hi - r.lo + 1;
      if (n > kMaxHosts) return Invalid(token, "too many hosts");
    }
    counts[i] = n;
    total *= n;
    if (total > kMaxHosts || out->size() + total > kMaxHosts) {
      return Invalid(token, "too many hosts");
    }
  }
  out->reserve(out->size() + total);

  // Odometer over the pieces; the first bracket group varies slowest.
  struct Cursor {
    size_t range = 0;
    uint64_t value = 0;
  };
  std::vector<Cursor> cur(pieces.size());
  for (size_t i = 0; i < pieces.size(); ++i) cur[i].value = pieces[i].ranges[0].lo;
  std::string name;
  for (uint64_t n = 0; n < total; ++n) {
    name.clear();
    for (size_t i = 0; i < pieces.size(); ++i) {
      name.append(pieces[i].literal);
      AppendPadded(&name, cur[i].value, pieces[i].ranges[cur[i].range].width);
    }
    name.append(trailing);
    out->push_back(name);
    for (size_t i = pieces.size(); i-- > 0;) {
      Cursor& c = cur[i];
      const std::vector<Range>& rs = pieces[i].ranges;
      if (c.value < rs[c.range].hi) {
        ++c.value;
        break;
      }
      if (c.range + 1 < rs.size()) {
        ++c.range;
        c.value = rs[c.range].lo;
        break;
      }
      c.range = 0;
      c.value = rs[0].lo;  // wrap, carry into the previous piece
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<std::string>> ExpandHostlist(std::string_view expr) {
  std::vector<std::string> out;
  size_t pos = 0;
  const size_t n = expr.size();
  while (pos < n) {
    while (pos < n && (IsSpace(expr[pos]) || expr[pos] == ',')) ++pos;
    if (pos >= n) break;
    size_t start = pos;
    int depth = 0;
    while (pos < n) {
      char c = expr[pos];
      if (c == '[') {
        if (++depth > 1) return Invalid(expr, "nested brackets");
      } else if (c == ']') {
        if (--depth < 0) return Invalid(expr, "unbalanced brackets");
      } else if (depth == 0 && (c == ',' || IsSpace(c))) {
        break;
      }
      ++pos;
    }
    if (depth != 0) return Invalid(expr, "unbalanced brackets");
    Status st = ExpandToken(expr.substr(start, pos - start), &out);
    if (!st.ok()) return st;
  }
  if (out.empty()) return InvalidArgument("invalid hostlist: empty");
  return out;
}

namespace {

// A host name split around its last run of digits: prefix, number, suffix.
struct HostKey {
  std::string_view prefix, suffix;
  uint64_t value = 0;
  int digits = 0;       // length of the numeric run; 0 = the name has no usable number
  bool padded = false;  // the run has a leading zero ("07")
  std::string_view name;
};

HostKey SplitHost(std::string_view name) {
  HostKey k;
  k.name = name;
  size_t end = name.size();
  while (end > 0 && !IsDigit(name[end - 1])) --end;
  size_t begin = end;
  while (begin > 0 && IsDigit(name[begin - 1])) --begin;
  // Names with brackets in them cannot be written as a range, nor can absurdly long numbers.
  if (begin == end || end - begin > kMaxDigits ||
      name.find_first_of("[],") != std::string_view::npos) {
    k.prefix = name;
    return k;
  }
  k.prefix = name.substr(0, begin);
  k.suffix = name.substr(end);
  std::string_view digits = name.substr(begin, end - begin);
  ParseNumber(digits, &k.value);
  k.digits = static_cast<int>(digits.size());
  k.padded = digits.size() > 1 && digits[0] == '0';
  return k;
}

}  // namespace

std::string CompressHostlist(const std::vector<std::string>& hosts) {
  std::vector<HostKey> keys;
  keys.reserve(hosts.size());
  for (const std::string& h : hosts) {
    if (!h.empty()) keys.push_back(SplitHost(h));
  }
  std::sort(keys.begin(), keys.end(), [](const HostKey& a, const HostKey& b) {
    if (a.prefix != b.prefix) return a.prefix < b.prefix;
    if (a.suffix != b.suffix) return a.suffix < b.suffix;
    if (a.digits == 0 || b.digits == 0) return a.digits < b.digits;
    if (a.value != b.value) return a.value < b.value;
    return a.name < b.name;
  });
  keys.erase(std::unique(keys.begin(), keys.end(),
                         [](const HostKey& a, const HostKey& b) { return a.name == b.name; }),
             keys.end());

  std::string out;
  out.reserve(hosts.size() * 4 + 16);
  size_t i = 0;
  while (i < keys.size()) {
    if (!out.empty()) out.push_back(',');
    const HostKey& first = keys[i];
    if (first.digits == 0) {
      out.append(first.name);
      ++i;
      continue;
    }
    // The group: same prefix and suffix, all numbered.
    size_t j = i + 1;
    while (j < keys.size() && keys[j].digits != 0 && keys[j].prefix == first.prefix &&
           keys[j].suffix == first.suffix) {
      ++j;
    }
    if (j == i + 1) {
      out.append(first.name);
      i = j;
      continue;
    }
    out.append(first.prefix);
    out.push_back('[');
    size_t k = i;
    bool first_range = true;
    while (k < j) {
      // Grow a range of consecutive numbers that all print the same way at one width: padded
      // numbers fix the width to their length; unpadded ones only need width <= their length.
      int fixed = keys[k].padded ? keys[k].digits : 0;
      int min_unpadded = keys[k].padded ? 1 << 30 : keys[k].digits;
      size_t e = k + 1;
      while (e < j && keys[e].value == keys[e - 1].value + 1) {
        const HostKey& h = keys[e];
        if (h.padded) {
          if (fixed ? h.digits != fixed : h.digits > min_unpadded) break;
          fixed = h.digits;
        } else {
          if (fixed && h.digits < fixed) break;
          min_unpadded = std::min(min_unpadded, h.digits);
        }
        ++e;
      }
      int width = fixed ? fixed : 0;
      if (!first_range) out.push_back(',');
      first_range = false;
      AppendPadded(&out, keys[k].value, width);
      if (e - k > 1) {
        out.push_back('-');
        AppendPadded(&out, keys[e - 1].value, width);
      }
      k = e;
    }
    out.push_back(']');
    out.append(first.suffix);
    i = j;
  }
  return out;
}

}  // namespace shoal
