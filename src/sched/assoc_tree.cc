#include "sched/assoc_tree.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <functional>

#include "common/units.h"

namespace shoal::sched {
namespace {

constexpr char kRoot[] = "root";
constexpr char kNormal[] = "normal";

// Multiplier for a count suffix (gres/gpu=2K is unusual but Slurm accepts it).
std::optional<uint64_t> ParseCount(std::string_view s) {
  uint64_t mult = 1;
  if (!s.empty()) {
    switch (std::toupper(static_cast<unsigned char>(s.back()))) {
      case 'K':
        mult = 1024ull;
        break;
      case 'M':
        mult = 1024ull * 1024;
        break;
      case 'G':
        mult = 1024ull * 1024 * 1024;
        break;
      case 'T':
        mult = 1024ull * 1024 * 1024 * 1024;
        break;
      default:
        break;
    }
    if (mult != 1) s.remove_suffix(1);
  }
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v * mult;
}

int TresRank(const std::string& name) {
  static const char* kOrder[] = {"cpu", "mem", "energy", "node", "billing"};
  for (int i = 0; i < 5; ++i)
    if (name == kOrder[i]) return i;
  return 5;
}

// Per-TRES inheritance: keys already set win over the ancestor's.
void MergeMissing(TresMap& into, std::string_view text) {
  if (text.empty()) return;
  auto parsed = ParseTres(text);
  if (!parsed.ok()) return;  // shoaldbd validates limits; a bad one is ignored, not fatal
  for (auto& [k, v] : *parsed) into.emplace(k, v);
}

}  // namespace

std::string LowerAscii(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

Result<TresMap> ParseTres(std::string_view text) {
  TresMap out;
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view entry = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    if (entry.empty()) continue;
    size_t eq = entry.find('=');
    auto bad = [&] { return InvalidArgument("Invalid TRES specification: " + std::string(entry)); };
    if (eq == std::string_view::npos || eq == 0) return bad();
    std::string name = LowerAscii(entry.substr(0, eq));
    std::string_view value = entry.substr(eq + 1);
    if (value == "-1") {
      out.erase(name);
      continue;
    }
    if (name == "mem") {
      auto mb = ParseMemoryMB(value);
      if (!mb.ok()) return bad();
      out[name] = *mb;
    } else {
      auto v = ParseCount(value);
      if (!v) return bad();
      out[name] = *v;
    }
  }
  return out;
}

std::string FormatTres(const TresMap& tres) {
  std::vector<std::pair<std::string, uint64_t>> items(tres.begin(), tres.end());
  std::stable_sort(items.begin(), items.end(), [](const auto& a, const auto& b) {
    return TresRank(a.first) < TresRank(b.first);
  });
  std::string out;
  for (const auto& [k, v] : items) {
    if (!out.empty()) out += ',';
    out += k + "=" + (k == "mem" ? FormatMemoryCompact(v) : std::to_string(v));
  }
  return out;
}

AssocTree AssocTree::Build(const pb::AssocSnapshot& snapshot, std::string_view cluster) {
  AssocTree t;
  t.version_ = snapshot.version();
  for (const pb::AcctUser& u : snapshot.users())
    if (!u.deleted()) t.user_recs_[u.name()] = u;
  for (const pb::AcctQos& q : snapshot.qos()) {
    if (q.deleted()) continue;
    t.qos_by_name_[LowerAscii(q.name())] = t.qos_.size();
    t.qos_.push_back(q);
  }

  // Root first (index 0), then accounts, then users, so parents resolve by name.
  std::vector<const pb::AcctAssoc*> accounts, users;
  const pb::AcctAssoc* root = nullptr;
  for (const pb::AcctAssoc& a : snapshot.assocs()) {
    if (a.deleted() || (!cluster.empty() && !a.cluster().empty() && a.cluster() != cluster))
      continue;
    if (!a.user().empty()) {
      users.push_back(&a);
    } else if (LowerAscii(a.account()) == kRoot) {
      if (!root) root = &a;
    } else {
      accounts.push_back(&a);
    }
  }
  if (accounts.empty() && users.empty() && !root) return t;

  auto add = [&t](const pb::AcctAssoc& a, bool is_user) {
    Node n;
    n.assoc = a;
    n.account = LowerAscii(a.account());
    n.is_user = is_user;
    t.by_id_[a.id()] = static_cast<int>(t.nodes_.size());
    t.nodes_.push_back(std::move(n));
    return static_cast<int>(t.nodes_.size() - 1);
  };
  if (root) {
    add(*root, false);
  } else {
    pb::AcctAssoc synthetic;
    synthetic.set_account(kRoot);
    synthetic.set_shares(1);
    synthetic.set_priority(-1);
    add(synthetic, false);
  }
  t.accounts_[kRoot] = 0;
  for (const pb::AcctAssoc* a : accounts) t.accounts_[LowerAscii(a->account())] = add(*a, false);
  // Parents of accounts: by name; unknown parents (or cycles) hang under root.
  for (size_t i = 1; i < t.nodes_.size(); ++i) {
    auto it = t.accounts_.find(LowerAscii(t.nodes_[i].assoc.parent_account()));
    int parent = it == t.accounts_.end() ? 0 : it->second;
    for (int p = parent; p != kNone && p != 0; p = t.nodes_[static_cast<size_t>(p)].parent)
      if (p == static_cast<int>(i)) parent = 0;  // a cycle: cut it at root
    t.nodes_[i].parent = parent;
  }
  for (const pb::AcctAssoc* a : users) {
    auto it = t.accounts_.find(LowerAscii(a->account()));
    if (it == t.accounts_.end()) continue;  // a user of an unknown account cannot be used
    int idx = add(*a, true);
    t.nodes_[static_cast<size_t>(idx)].parent = it->second;
    t.users_[{a->user(), LowerAscii(a->account()), a->partition()}] = idx;
  }
  for (size_t i = 1; i < t.nodes_.size(); ++i)
    t.nodes_[static_cast<size_t>(t.nodes_[i].parent)].children.push_back(static_cast<int>(i));
  // Children: users first (by user, partition), then accounts by name, as sshare lists them.
  for (Node& n : t.nodes_) {
    std::sort(n.children.begin(), n.children.end(), [&t](int a, int b) {
      const Node& x = t.nodes_[static_cast<size_t>(a)];
      const Node& y = t.nodes_[static_cast<size_t>(b)];
      if (x.is_user != y.is_user) return x.is_user;
      if (x.is_user) {
        if (x.assoc.user() != y.assoc.user()) return x.assoc.user() < y.assoc.user();
        return x.assoc.partition() < y.assoc.partition();
      }
      return x.account < y.account;
    });
  }
  // Depths, top-down (parents always precede in PreOrder).
  for (int idx : t.PreOrder()) {
    Node& n = t.nodes_[static_cast<size_t>(idx)];
    n.depth = n.parent == kNone ? 0 : t.nodes_[static_cast<size_t>(n.parent)].depth + 1;
  }
  return t;
}

int AssocTree::IndexOfId(uint32_t assoc_id) const {
  auto it = by_id_.find(assoc_id);
  return it == by_id_.end() ? kNone : it->second;
}

int AssocTree::AccountIndex(std::string_view account) const {
  auto it = accounts_.find(LowerAscii(account));
  return it == accounts_.end() ? kNone : it->second;
}

const pb::AcctUser* AssocTree::User(std::string_view name) const {
  auto it = user_recs_.find(name);
  return it == user_recs_.end() ? nullptr : &it->second;
}

const pb::AcctQos* AssocTree::Qos(std::string_view name) const {
  auto it = qos_by_name_.find(LowerAscii(name));
  return it == qos_by_name_.end() ? nullptr : &qos_[it->second];
}

std::string AssocTree::ResolveAccount(std::string_view user, std::string_view account) const {
  if (!account.empty()) return LowerAscii(account);
  if (const pb::AcctUser* u = User(user); u && !u->default_account().empty())
    return LowerAscii(u->default_account());
  for (const Node& n : nodes_)
    if (n.is_user && n.assoc.user() == user && n.assoc.is_default()) return n.account;
  return "";
}

int AssocTree::Find(std::string_view user, std::string_view account,
                    std::string_view partition) const {
  std::string acct = ResolveAccount(user, account);
  if (acct.empty()) return kNone;
  std::string u(user);
  if (!partition.empty()) {
    auto it = users_.find(std::make_tuple(u, acct, std::string(partition)));
    if (it != users_.end()) return it->second;
  }
  auto it = users_.find(std::make_tuple(u, acct, std::string()));
  return it == users_.end() ? kNone : it->second;
}

std::vector<int> AssocTree::Chain(int index) const {
  std::vector<int> out;
  for (int i = index; i != kNone && out.size() <= nodes_.size(); i = node(i).parent)
    out.push_back(i);
  return out;
}

EffectiveLimits AssocTree::Limits(int index) const {
  EffectiveLimits e;
  for (int i : Chain(index)) {
    const pb::AcctLimits& l = node(i).assoc.limits();
    if (!e.max_jobs && l.has_max_jobs()) e.max_jobs = l.max_jobs();
    if (!e.max_submit_jobs && l.has_max_submit_jobs()) e.max_submit_jobs = l.max_submit_jobs();
    if (!e.max_wall_minutes && l.has_max_wall_minutes()) e.max_wall_minutes = l.max_wall_minutes();
    MergeMissing(e.max_tres_per_job, l.max_tres_per_job());
    MergeMissing(e.max_tres_per_node, l.max_tres_per_node());
    MergeMissing(e.max_tres_mins_per_job, l.max_tres_mins_per_job());
  }
  // A negative count is sacctmgr's "no limit" that reached us unconverted.
  if (e.max_jobs && *e.max_jobs < 0) e.max_jobs.reset();
  if (e.max_submit_jobs && *e.max_submit_jobs < 0) e.max_submit_jobs.reset();
  return e;
}

std::vector<std::string> AssocTree::AllowedQos(int index) const {
  for (int i : Chain(index)) {
    const auto& list = node(i).assoc.qos();
    if (list.empty()) continue;
    std::vector<std::string> out;
    for (const std::string& q : list) out.push_back(LowerAscii(q));
    return out;
  }
  return {kNormal};
}

std::string AssocTree::DefaultQos(int index) const {
  for (int i : Chain(index))
    if (!node(i).assoc.default_qos().empty()) return LowerAscii(node(i).assoc.default_qos());
  std::vector<std::string> allowed = AllowedQos(index);
  if (allowed.size() == 1) return allowed.front();
  return kNormal;
}

bool AssocTree::QosAllowed(int index, std::string_view qos) const {
  std::string q = LowerAscii(qos);
  std::vector<std::string> allowed = AllowedQos(index);
  return std::find(allowed.begin(), allowed.end(), q) != allowed.end();
}

std::vector<int> AssocTree::PreOrder() const {
  std::vector<int> out;
  if (nodes_.empty()) return out;
  out.reserve(nodes_.size());
  std::vector<int> stack{0};
  while (!stack.empty()) {
    int i = stack.back();
    stack.pop_back();
    out.push_back(i);
    const auto& ch = node(i).children;
    for (auto it = ch.rbegin(); it != ch.rend(); ++it) stack.push_back(*it);
  }
  return out;
}

}  // namespace shoal::sched
