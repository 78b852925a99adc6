// Node features (slurm.conf `Features=`) and job constraints (sbatch -C/--constraint):
//   a            node has feature a
//   a&b  a|b     and / or, with the usual precedence (& binds tighter), and parentheses
//   !a           node lacks feature a
//   [a|b|c]      matching OR: every allocated node has the SAME one of the alternatives
//   a*2          node count: at least 2 of the allocated nodes have a (others unconstrained)
//   [a*2&b*1]    multiple counts: 2 nodes with a and 1 node with b ((a|b)*2 allowed inside)
// A bracket group may be and-ed with plain terms ("[a|b]&ib", every node must also have ib).
// Parsed once into a small stack program; evaluating it on a node is a few bit tests.
// Pure logic, no I/O.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/result.h"

namespace shoal::sched {

inline constexpr const char* kInvalidFeatureMessage = "Invalid feature specification";

// A set of feature bits. The first 64 features cost no allocation (the common case), so a
// NodeView per node stays cheap to copy.
class FeatureSet {
 public:
  void Set(int bit);
  bool Has(int bit) const {
    if (bit < 0) return false;
    if (bit < 64) return (low_ >> bit) & 1;
    size_t w = static_cast<size_t>(bit - 64) / 64;
    return w < high_.size() && ((high_[w] >> ((bit - 64) % 64)) & 1);
  }
  bool empty() const;
  void Merge(const FeatureSet& other);  // union
  bool operator==(const FeatureSet&) const = default;

 private:
  uint64_t low_ = 0;
  std::vector<uint64_t> high_;
};

// Feature name -> bit, one per cluster. Bits are only ever appended, so sets built earlier stay
// valid when a node brings a new feature.
class FeatureIndex {
 public:
  int Intern(std::string_view name);      // the bit of name, adding it if new
  int Find(std::string_view name) const;  // -1 when no node has ever had it
  size_t size() const { return names_.size(); }
  const std::string& Name(int bit) const { return names_[static_cast<size_t>(bit)]; }

 private:
  std::unordered_map<std::string, int> bits_;
  std::vector<std::string> names_;
};

// slurm.conf `Features=a,b,c` (also `AvailableFeatures`); "" and "(null)" give an empty set.
Result<FeatureSet> ParseFeatures(std::string_view text, FeatureIndex& index);
// "a,b" in index order of the set, for display.
std::string FormatFeatures(const FeatureSet& set, const FeatureIndex& index);

// A boolean expression over features, as a postfix program.
class FeatureExpr {
 public:
  enum class Op : uint8_t { kFeature, kAnd, kOr, kNot };
  struct Step {
    Op op = Op::kFeature;
    int bit = -1;       // kFeature: bound bit, -1 = unknown feature (never matches)
    uint32_t name = 0;  // kFeature: index into names()
  };

  bool empty() const { return steps_.empty(); }  // empty = always true
  bool Eval(const FeatureSet& node) const;
  const std::vector<std::string>& names() const { return names_; }

  // Builders used by the parser.
  void PushFeature(std::string name);
  void PushOp(Op op) { steps_.push_back({op, -1, 0}); }
  void Append(const FeatureExpr& other);  // other's program, as is
  void Bind(const FeatureIndex& index);
  size_t depth_needed() const;

 private:
  std::vector<Step> steps_;
  std::vector<std::string> names_;
};

struct FeatureCount {
  FeatureExpr expr;
  uint32_t count = 0;
};

// A parsed --constraint. Empty = none (old callers).
struct Constraint {
  std::string text;                  // as given, for display
  FeatureExpr all;                   // every allocated node matches this
  std::vector<FeatureExpr> one_of;   // matching OR: all nodes share one alternative
  std::vector<FeatureCount> counts;  // node counts: at least `count` nodes match each
  bool empty() const { return all.empty() && one_of.empty() && counts.empty(); }
  uint32_t counted_nodes() const;  // sum of counts
  // Whether one node may be used at all, with alternative `alt` of a matching OR (-1 = none).
  bool NodeMatches(const FeatureSet& node, int alt) const {
    return all.Eval(node) && (alt < 0 || one_of[static_cast<size_t>(alt)].Eval(node));
  }
};

// Parses the syntax only; features are looked up by BindConstraint (or use the second form).
Result<Constraint> ParseConstraint(std::string_view text);
Result<Constraint> ParseConstraint(std::string_view text, const FeatureIndex& index);
// Resolves feature names to bits (again after the index grew). Unknown names never match.
void BindConstraint(Constraint& c, const FeatureIndex& index);

// Feature names the constraint uses that no node has (the index knows every node's features):
// the controller rejects such a job at submission with "Invalid feature specification".
std::vector<std::string> UnknownFeatures(const Constraint& c, const FeatureIndex& index);

}  // namespace shoal::sched
