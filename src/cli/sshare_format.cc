#include "cli/sshare_format.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

#include "cli/format_fields.h"
#include "common/units.h"

namespace shoal::cli {
namespace {

// ShareRecord.raw_shares of root (sched::kNoRawShares): printed blank.
constexpr uint32_t kNoRawShares = 0xfffffffe;

enum class Field {
  kAccount,
  kCluster,
  kEffectvUsage,
  kFairShare,
  kGrpTresMins,
  kGrpTresRaw,
  kId,
  kLevelFs,
  kNormShares,
  kNormUsage,
  kPartition,
  kRawShares,
  kRawUsage,
  kTresRunMins,
  kUser,
};

struct FieldDef {
  const char* name;
  int width;  // negative: left-justified
  Field field;
};

// Alphabetical, as sshare matches -o prefixes in this order.
constexpr FieldDef kFields[] = {
    {"Account", -20, Field::kAccount},
    {"Cluster", 10, Field::kCluster},
    {"EffectvUsage", 13, Field::kEffectvUsage},
    {"FairShare", 10, Field::kFairShare},
    {"GrpTRESMins", 30, Field::kGrpTresMins},
    {"GrpTRESRaw", 30, Field::kGrpTresRaw},
    {"ID", 6, Field::kId},
    {"LevelFS", 10, Field::kLevelFs},
    {"NormShares", 11, Field::kNormShares},
    {"NormUsage", 11, Field::kNormUsage},
    {"Partition", 12, Field::kPartition},
    {"RawShares", 10, Field::kRawShares},
    {"RawUsage", 11, Field::kRawUsage},
    {"TRESRunMins", 30, Field::kTresRunMins},
    {"User", 10, Field::kUser},
};

struct Column {
  const FieldDef* def;
  int width;
};

std::string Printf(const char* fmt, int a, int b, double v) {
  char buf[512];
  std::snprintf(buf, sizeof buf, fmt, a, b, v);
  return buf;
}

// One cell: value already a string (nullopt = unset), how it is printed in columns.
enum class Kind { kString, kNumber, kDouble };
struct Cell {
  Kind kind = Kind::kString;
  std::optional<std::string> text;  // strings and integers
  double value = NAN;               // doubles (NaN = unset)
};

// Appends `s` in a column of `width` (right- or left-justified) and the separating space.
void Pad(std::string& out, const std::string& s, int width, bool right) {
  std::string padding(s.size() < size_t(width) ? size_t(width) - s.size() : 0, ' ');
  out += right ? padding + s : s + padding;
  out += ' ';
}

class Printer {
 public:
  Printer(const SshareFormatOptions& o, std::string& out) : o_(o), out_(out) {}

  void Put(const Column& c, const Cell& cell, bool last) {
    int abs = std::abs(c.width);
    bool right = c.width >= 0;
    if (o_.parsable) {
      if (cell.kind == Kind::kDouble) {
        if (!std::isnan(cell.value)) out_ += Printf("%*.*f", 0, 6, cell.value);
      } else if (cell.text) {
        out_ += *cell.text;
      }
      if (!(o_.parsable == 2 && last)) out_ += '|';
      return;
    }
    if (cell.kind != Kind::kString && !cell.text && std::isnan(cell.value)) {
      out_ += std::string(size_t(abs), ' ') + ' ';  // unset number
      return;
    }
    if (cell.kind == Kind::kDouble) {
      // "%*f", else the exponent form, narrowed by what it overflows (negative widths
      // left-justify and negative precisions mean the default, as printf has it).
      std::string fixed = Printf("%*.*f", abs, 6, cell.value);
      int width = abs;
      if (int(fixed.size()) > width) {
        std::string sci = Printf("%*.*e", width, width, cell.value);
        if (int(sci.size()) > width) width -= int(sci.size()) - width;
        out_ += Printf(right ? "%*.*e" : "%-*.*e", width, width, cell.value);
      } else {
        out_ += Printf(right ? "%*.*f" : "%-*.*f", width, 6, cell.value);
      }
      out_ += ' ';
      return;
    }
    if (cell.kind == Kind::kNumber) {
      Pad(out_, *cell.text, abs, right);  // never cut
      return;
    }
    std::string s = cell.text ? *cell.text : std::string(" ");
    if (int(s.size()) > abs && abs > 0) {
      s.resize(size_t(abs));
      s.back() = '+';
    }
    Pad(out_, s, abs, right);
  }

  void Header(const std::vector<Column>& cols) {
    for (size_t i = 0; i < cols.size(); ++i) {
      bool last = i + 1 == cols.size();
      std::string name = cols[i].def->name;
      if (o_.parsable) {
        out_ += name;
        if (!(o_.parsable == 2 && last)) out_ += '|';
        continue;
      }
      int abs = std::abs(cols[i].width);
      if (int(name.size()) > abs) name.resize(size_t(abs));
      Pad(out_, name, abs, cols[i].width >= 0);
    }
    out_ += '\n';
    if (o_.parsable) return;
    for (const Column& c : cols) out_ += std::string(size_t(std::abs(c.width)), '-') + ' ';
    out_ += '\n';
  }

 private:
  const SshareFormatOptions& o_;
  std::string& out_;
};

Cell Str(const std::string& s, bool unset_when_empty = true) {
  Cell c;
  if (!s.empty() || !unset_when_empty) c.text = s;
  return c;
}

Cell Num(std::optional<uint64_t> v) {
  Cell c;
  c.kind = Kind::kNumber;
  if (v) c.text = std::to_string(*v);
  return c;
}

Cell Dbl(double v) {
  Cell c;
  c.kind = Kind::kDouble;
  c.value = v;
  return c;
}

Cell CellOf(const pb::ShareRecord& r, Field f, const SshareFormatOptions& o) {
  switch (f) {
    case Field::kAccount: {
      size_t indent = o.users_only ? 0 : r.depth();
      return Str(std::string(indent, ' ') + r.account(), false);
    }
    case Field::kCluster:
      return Str(o.cluster_name);
    case Field::kEffectvUsage:
      return Dbl(r.effective_usage());
    case Field::kFairShare:
      return Dbl(r.fairshare());
    case Field::kGrpTresMins:
      return Str(r.grp_tres_mins(), false);
    case Field::kGrpTresRaw:
      return Str("", false);
    case Field::kId:
      return Num(std::nullopt);
    case Field::kLevelFs:
      return Dbl(r.raw_shares() == kSharesParent ? NAN : r.level_fs());
    case Field::kNormShares:
      return Dbl(r.norm_shares());
    case Field::kNormUsage:
      return Dbl(r.norm_usage());
    case Field::kPartition:
      return Str(r.partition());
    case Field::kRawShares:
      if (r.raw_shares() == kSharesParent) return Str("parent");
      return Num(r.raw_shares() == kNoRawShares ? std::nullopt
                                                : std::optional<uint64_t>(r.raw_shares()));
    case Field::kRawUsage:
      return Num(r.raw_usage());
    case Field::kTresRunMins:
      return Str(r.tres_run_mins(), false);
    case Field::kUser:
      return Str(r.user());
  }
  return Str("");
}

Result<std::vector<Column>> ParseColumns(const std::string& list) {
  std::vector<Column> cols;
  std::vector<std::string> items = fmt::SplitList(list);
  if (items.empty()) items.push_back("");  // an empty -o matches the first field, Account
  for (std::string item : items) {
    item = fmt::Lower(item);
    int width = 0;
    if (size_t pct = item.find('%'); pct != std::string::npos) {
      width = std::atoi(item.c_str() + pct + 1);
      item.resize(pct);
    }
    const FieldDef* def = nullptr;
    for (const FieldDef& f : kFields) {
      if (strncasecmp(f.name, item.c_str(), item.size()) == 0) {
        def = &f;
        break;
      }
    }
    if (!def) return InvalidArgument("Invalid field requested: \"" + item + "\"");
    cols.push_back({def, width ? width : def->width});
  }
  return cols;
}

}  // namespace

std::string SshareDefaultFormat(const SshareFormatOptions& o, bool fair_tree) {
  std::string f = o.partitions ? "Account,User,Partition," : "Account,User,";
  f += "RawShares,NormShares,RawUsage,";
  if (o.long_output) f += "NormUsage,";
  f += "EffectvUsage,FairShare";
  if (o.long_output)
    f += fair_tree ? ",LevelFS,GrpTRESMins,TRESRunMins" : ",GrpTRESMins,TRESRunMins";
  return f;
}

Result<std::string> FormatSshare(const pb::ShareQueryResponse& response,
                                 const SshareFormatOptions& o) {
  auto cols = ParseColumns(o.has_format ? o.format : SshareDefaultFormat(o, response.fair_tree()));
  if (!cols.ok()) return cols.status();
  std::string out;
  Printer p(o, out);
  if (!o.no_header) p.Header(*cols);
  for (const pb::ShareRecord& r : response.records()) {
    if (o.users_only && r.user().empty()) continue;
    for (size_t i = 0; i < cols->size(); ++i)
      p.Put((*cols)[i], CellOf(r, (*cols)[i].def->field, o), i + 1 == cols->size());
    out += '\n';
  }
  return out;
}

std::string SshareHelpFormat() {
  std::string out;
  int n = 0;
  for (const FieldDef& f : kFields) {
    std::string name = f.name;
    out += name + std::string(name.size() < 18 ? 18 - name.size() : 1, ' ');
    if (++n % 4 == 0) {
      out.pop_back();  // the line ends after the padding minus one
      out += "\n";
    }
  }
  if (n % 4) {
    out.pop_back();
    out += "\n";
  }
  return out;
}

}  // namespace shoal::cli
