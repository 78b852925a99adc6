#include "sched/constraint.h"

#include <algorithm>
#include <charconv>
#include <memory>

namespace shoal::sched {
namespace {

Status Invalid() { return InvalidArgument(kInvalidFeatureMessage); }

bool IsOperator(char c) {
  return c == '&' || c == '|' || c == '!' || c == '(' || c == ')' || c == '[' || c == ']' ||
         c == '*' || c == ',';
}

bool IsNameChar(char c) {
  return !IsOperator(c) && !std::isspace(static_cast<unsigned char>(c)) &&
         std::isprint(static_cast<unsigned char>(c));
}

// Syntax tree of a constraint; lowered into a Constraint once parsed.
struct Ast {
  enum class Kind { kName, kAnd, kOr, kNot, kBracket } kind = Kind::kName;
  std::string name;
  std::vector<Ast> kids;
  uint32_t count = 0;  // "x*N" on this node, 0 = none

  // Whether brackets or counts appear anywhere below (they only make sense at the top).
  bool Special() const {
    if (count || kind == Kind::kBracket) return true;
    return std::any_of(kids.begin(), kids.end(), [](const Ast& k) { return k.Special(); });
  }
};

// Recursive descent over: or := and ('|' and)* ; and := unary ('&' unary)* ;
// unary := '!' unary | primary ['*' N] ; primary := NAME | '(' or ')' | '[' or ']'.
class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  bool Parse(Ast* out) {
    if (!Or(out, 0)) return false;
    return pos_ == s_.size();
  }

 private:
  // Nesting is bounded so that a hostile string cannot exhaust the stack.
  static constexpr int kMaxNesting = 32;

  bool Eat(char c) {
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  bool Or(Ast* out, int depth) {
    Ast first;
    if (!And(&first, depth)) return false;
    if (pos_ >= s_.size() || s_[pos_] != '|') {
      *out = std::move(first);
      return true;
    }
    out->kind = Ast::Kind::kOr;
    out->kids.push_back(std::move(first));
    while (Eat('|')) {
      Ast next;
      if (!And(&next, depth)) return false;
      out->kids.push_back(std::move(next));
    }
    return true;
  }

  bool And(Ast* out, int depth) {
    Ast first;
    if (!Unary(&first, depth)) return false;
    if (pos_ >= s_.size() || s_[pos_] != '&') {
      *out = std::move(first);
      return true;
    }
    out->kind = Ast::Kind::kAnd;
    out->kids.push_back(std::move(first));
    while (Eat('&')) {
      Ast next;
      if (!Unary(&next, depth)) return false;
      out->kids.push_back(std::move(next));
    }
    return true;
  }

  bool Unary(Ast* out, int depth) {
    if (depth > kMaxNesting) return false;
    if (Eat('!')) {
      out->kind = Ast::Kind::kNot;
      out->kids.emplace_back();
      return Unary(&out->kids.back(), depth + 1);
    }
    if (!Primary(out, depth)) return false;
    if (Eat('*')) {
      size_t start = pos_;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      uint32_t n = 0;
      auto [p, ec] = std::from_chars(s_.data() + start, s_.data() + pos_, n);
      if (ec != std::errc() || p != s_.data() + pos_ || n == 0) return false;
      if (out->count) return false;
      out->count = n;
    }
    return true;
  }

  bool Primary(Ast* out, int depth) {
    if (Eat('(')) {
      if (!Or(out, depth + 1)) return false;
      // Parentheses only group; a count inside "(a*2)" is rejected below by the lowering.
      return Eat(')');
    }
    if (Eat('[')) {
      out->kind = Ast::Kind::kBracket;
      out->kids.emplace_back();
      if (!Or(&out->kids.back(), depth + 1)) return false;
      return Eat(']');
    }
    size_t start = pos_;
    while (pos_ < s_.size() && IsNameChar(s_[pos_])) ++pos_;
    if (pos_ == start) return false;
    out->kind = Ast::Kind::kName;
    out->name = std::string(s_.substr(start, pos_ - start));
    return true;
  }

  std::string_view s_;
  size_t pos_ = 0;
};

// Emits a bracket- and count-free tree as postfix.
void Emit(const Ast& a, FeatureExpr* e) {
  switch (a.kind) {
    case Ast::Kind::kName:
      e->PushFeature(a.name);
      return;
    case Ast::Kind::kNot:
      Emit(a.kids[0], e);
      e->PushOp(FeatureExpr::Op::kNot);
      return;
    case Ast::Kind::kAnd:
    case Ast::Kind::kOr:
      Emit(a.kids[0], e);
      for (size_t i = 1; i < a.kids.size(); ++i) {
        Emit(a.kids[i], e);
        e->PushOp(a.kind == Ast::Kind::kAnd ? FeatureExpr::Op::kAnd : FeatureExpr::Op::kOr);
      }
      return;
    case Ast::Kind::kBracket:
      return;  // never reached: the caller checks Special() first
  }
}

// a & b, where either may be empty (= true).
void AndInto(FeatureExpr* into, const Ast& a) {
  bool had = !into->empty();
  FeatureExpr part;
  Emit(a, &part);
  into->Append(part);
  if (had) into->PushOp(FeatureExpr::Op::kAnd);
}

// "x*N" with a plain x, as a count term.
bool AddCount(const Ast& a, Constraint* c) {
  Ast inner = a;
  inner.count = 0;
  if (inner.Special()) return false;
  FeatureCount fc;
  Emit(inner, &fc.expr);
  fc.count = a.count;
  c->counts.push_back(std::move(fc));
  return true;
}

// The contents of "[...]": matching OR alternatives, or an AND of counted terms.
bool LowerBracket(const Ast& inner, Constraint* c) {
  if (inner.kind == Ast::Kind::kOr && !inner.Special()) {
    for (const auto& alt : inner.kids) {
      c->one_of.emplace_back();
      Emit(alt, &c->one_of.back());
    }
    return true;
  }
  if (!inner.Special()) {  // "[a]" or "[a&b]" without counts: Slurm wants counts for AND
    if (inner.kind != Ast::Kind::kName) return false;
    AndInto(&c->all, inner);
    return true;
  }
  if (inner.count) return AddCount(inner, c);
  if (inner.kind != Ast::Kind::kAnd) return false;
  for (const auto& k : inner.kids)
    if (!k.count || !AddCount(k, c)) return false;
  return true;
}

Status Lower(const Ast& top, Constraint* c) {
  std::vector<const Ast*> factors;
  if (top.kind == Ast::Kind::kAnd && top.count == 0) {
    for (const auto& k : top.kids) factors.push_back(&k);
  } else {
    factors.push_back(&top);
  }
  bool bracket_seen = false;
  for (const Ast* f : factors) {
    if (!f->Special()) {
      AndInto(&c->all, *f);
    } else if (f->kind == Ast::Kind::kBracket && f->count == 0) {
      if (bracket_seen) return Invalid();  // one matching OR / count group per job
      bracket_seen = true;
      if (!LowerBracket(f->kids[0], c)) return Invalid();
    } else if (f->count) {
      if (!AddCount(*f, c)) return Invalid();
    } else {
      return Invalid();  // a bracket or count under '|', '!' or parentheses
    }
  }
  // A program deeper than the evaluator's 64-entry bit stack is refused, not mis-evaluated.
  if (c->all.depth_needed() > 64) return Invalid();
  for (const auto& e : c->one_of)
    if (e.depth_needed() > 64) return Invalid();
  for (const auto& fc : c->counts)
    if (fc.expr.depth_needed() > 64) return Invalid();
  return Status::Ok();
}

}  // namespace

void FeatureSet::Set(int bit) {
  if (bit < 0) return;
  if (bit < 64) {
    low_ |= 1ull << bit;
    return;
  }
  size_t w = static_cast<size_t>(bit - 64) / 64;
  if (high_.size() <= w) high_.resize(w + 1, 0);
  high_[w] |= 1ull << ((bit - 64) % 64);
}

bool FeatureSet::empty() const {
  return low_ == 0 && std::all_of(high_.begin(), high_.end(), [](uint64_t w) { return w == 0; });
}

void FeatureSet::Merge(const FeatureSet& other) {
  low_ |= other.low_;
  if (high_.size() < other.high_.size()) high_.resize(other.high_.size(), 0);
  for (size_t i = 0; i < other.high_.size(); ++i) high_[i] |= other.high_[i];
}

int FeatureIndex::Intern(std::string_view name) {
  auto it = bits_.find(std::string(name));
  if (it != bits_.end()) return it->second;
  int bit = static_cast<int>(names_.size());
  names_.emplace_back(name);
  bits_.emplace(std::string(name), bit);
  return bit;
}

int FeatureIndex::Find(std::string_view name) const {
  auto it = bits_.find(std::string(name));
  return it == bits_.end() ? -1 : it->second;
}

Result<FeatureSet> ParseFeatures(std::string_view text, FeatureIndex& index) {
  FeatureSet set;
  if (text.empty() || text == "(null)") return set;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = std::min(text.find(',', pos), text.size());
    std::string_view name = text.substr(pos, end - pos);
    if (!name.empty()) {
      if (!std::all_of(name.begin(), name.end(), IsNameChar)) return Invalid();
      set.Set(index.Intern(name));
    }
    pos = end + 1;
  }
  return set;
}

std::string FormatFeatures(const FeatureSet& set, const FeatureIndex& index) {
  std::string out;
  for (size_t b = 0; b < index.size(); ++b)
    if (set.Has(static_cast<int>(b))) {
      if (!out.empty()) out += ',';
      out += index.Name(static_cast<int>(b));
    }
  return out.empty() ? "(null)" : out;
}

bool FeatureExpr::Eval(const FeatureSet& node) const {
  if (steps_.empty()) return true;
  if (steps_.size() == 1) return node.Has(steps_[0].bit);  // the common "-C a"
  // A stack of booleans in the bits of one word (depth is checked at parse time).
  uint64_t stack = 0;
  for (const Step& s : steps_) {
    switch (s.op) {
      case Op::kFeature:
        stack = (stack << 1) | (node.Has(s.bit) ? 1 : 0);
        break;
      case Op::kNot:
        stack ^= 1;
        break;
      case Op::kAnd:
      case Op::kOr: {
        uint64_t a = stack & 1, b = (stack >> 1) & 1;
        uint64_t v = s.op == Op::kAnd ? (a & b) : (a | b);
        stack = ((stack >> 2) << 1) | v;
        break;
      }
    }
  }
  return stack & 1;
}

void FeatureExpr::PushFeature(std::string name) {
  auto it = std::find(names_.begin(), names_.end(), name);
  uint32_t id = static_cast<uint32_t>(it - names_.begin());
  if (it == names_.end()) names_.push_back(std::move(name));
  steps_.push_back({Op::kFeature, -1, id});
}

void FeatureExpr::Append(const FeatureExpr& other) {
  for (Step s : other.steps_) {
    if (s.op == Op::kFeature) {
      const std::string& n = other.names_[s.name];
      auto it = std::find(names_.begin(), names_.end(), n);
      s.name = static_cast<uint32_t>(it - names_.begin());
      if (it == names_.end()) names_.push_back(n);
    }
    steps_.push_back(s);
  }
}

void FeatureExpr::Bind(const FeatureIndex& index) {
  for (Step& s : steps_)
    if (s.op == Op::kFeature) s.bit = index.Find(names_[s.name]);
}

size_t FeatureExpr::depth_needed() const {
  size_t depth = 0, most = 0;
  for (const Step& s : steps_) {
    if (s.op == Op::kFeature) most = std::max(most, ++depth);
    if (s.op == Op::kAnd || s.op == Op::kOr) --depth;
  }
  return most;
}

uint32_t Constraint::counted_nodes() const {
  uint32_t n = 0;
  for (const auto& c : counts) n += c.count;
  return n;
}

Result<Constraint> ParseConstraint(std::string_view text) {
  Constraint c;
  c.text = std::string(text);
  if (text.empty()) return c;
  Ast top;
  if (!Parser(text).Parse(&top)) return Invalid();
  if (Status st = Lower(top, &c); !st.ok()) return st;
  return c;
}

Result<Constraint> ParseConstraint(std::string_view text, const FeatureIndex& index) {
  auto c = ParseConstraint(text);
  if (c) BindConstraint(*c, index);
  return c;
}

void BindConstraint(Constraint& c, const FeatureIndex& index) {
  c.all.Bind(index);
  for (auto& e : c.one_of) e.Bind(index);
  for (auto& fc : c.counts) fc.expr.Bind(index);
}

std::vector<std::string> UnknownFeatures(const Constraint& c, const FeatureIndex& index) {
  std::vector<std::string> out;
  auto scan = [&](const FeatureExpr& e) {
    for (const auto& n : e.names())
      if (index.Find(n) < 0 && std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  };
  scan(c.all);
  for (const auto& e : c.one_of) scan(e);
  for (const auto& fc : c.counts) scan(fc.expr);
  return out;
}

}  // namespace shoal::sched
