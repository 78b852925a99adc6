#include "sched/dependency.h"

#include <charconv>

namespace shoal::sched {
namespace {

Status Problem(const std::string& why) { return InvalidArgument("Job dependency problem: " + why); }

bool ParseU32(std::string_view s, uint32_t* out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

std::optional<DepType> TypeOf(std::string_view name) {
  if (name == "after") return DepType::kAfter;
  if (name == "afterany") return DepType::kAfterAny;
  if (name == "afterok") return DepType::kAfterOk;
  if (name == "afternotok") return DepType::kAfterNotOk;
  if (name == "aftercorr") return DepType::kAfterCorr;
  if (name == "afterburstbuffer") return DepType::kAfterBurstBuffer;
  return std::nullopt;
}

}  // namespace

Result<Dependency> ParseDependency(std::string_view text) {
  Dependency dep;
  if (text.empty()) return dep;
  bool has_comma = text.find(',') != std::string_view::npos;
  bool has_q = text.find('?') != std::string_view::npos;
  if (has_comma && has_q) return Problem("',' and '?' cannot be mixed");
  dep.any = has_q;
  char sep = has_q ? '?' : ',';
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find(sep, pos);
    std::string_view item =
        text.substr(pos, end == std::string_view::npos ? text.size() - pos : end - pos);
    if (item == "singleton") {
      DepTerm t;
      t.type = DepType::kSingleton;
      dep.terms.push_back(t);
    } else {
      size_t colon = item.find(':');
      if (colon == std::string_view::npos) return Problem(std::string(item));
      auto type = TypeOf(item.substr(0, colon));
      if (!type) return Problem("unknown type '" + std::string(item.substr(0, colon)) + "'");
      std::string_view rest = item.substr(colon + 1);
      if (rest.empty()) return Problem(std::string(item));
      size_t p = 0;
      while (p <= rest.size()) {
        size_t c = rest.find(':', p);
        std::string_view id = rest.substr(p, c == std::string_view::npos ? rest.size() - p : c - p);
        DepTerm t;
        t.type = *type;
        if (auto plus = id.find('+'); plus != std::string_view::npos) {
          if (!ParseU32(id.substr(plus + 1), &t.delay_minutes)) return Problem(std::string(id));
          id = id.substr(0, plus);
        }
        if (auto us = id.find('_'); us != std::string_view::npos) {
          uint32_t task = 0;
          if (!ParseU32(id.substr(us + 1), &task)) return Problem(std::string(id));
          t.task = task;
          id = id.substr(0, us);
        }
        if (!ParseU32(id, &t.job_id) || t.job_id == 0) return Problem(std::string(id));
        dep.terms.push_back(t);
        if (c == std::string_view::npos) break;
        p = c + 1;
      }
    }
    if (end == std::string_view::npos) break;
    pos = end + 1;
  }
  return dep;
}

DepState EvaluateDependency(const Dependency& dep, int64_t now,
                            const std::function<DepTarget(const DepTerm&)>& lookup,
                            bool singleton_blocked) {
  if (dep.terms.empty()) return DepState::kSatisfied;
  bool all_satisfied = true;
  bool any_satisfied = false;
  bool all_never = true;
  for (const auto& term : dep.terms) {
    DepState s;
    if (term.type == DepType::kSingleton) {
      s = singleton_blocked ? DepState::kPending : DepState::kSatisfied;
    } else {
      DepTarget t = lookup(term);
      int64_t delay = int64_t(term.delay_minutes) * 60;
      if (!t.exists) {
        s = DepState::kSatisfied;  // purged long ago: it finished
      } else {
        switch (term.type) {
          case DepType::kAfter:
            s = (t.started && now >= t.start_time + delay) ||
                        (t.finished && now >= t.end_time + delay)
                    ? DepState::kSatisfied
                    : DepState::kPending;
            break;
          case DepType::kAfterAny:
          case DepType::kAfterBurstBuffer:
            s = t.finished && now >= t.end_time + delay ? DepState::kSatisfied : DepState::kPending;
            break;
          case DepType::kAfterOk:
          case DepType::kAfterCorr:
            s = !t.finished                 ? DepState::kPending
                : !t.ok                     ? DepState::kNeverSatisfied
                : now >= t.end_time + delay ? DepState::kSatisfied
                                            : DepState::kPending;
            break;
          case DepType::kAfterNotOk:
            s = !t.finished                 ? DepState::kPending
                : t.ok                      ? DepState::kNeverSatisfied
                : now >= t.end_time + delay ? DepState::kSatisfied
                                            : DepState::kPending;
            break;
          default:
            s = DepState::kSatisfied;
        }
      }
    }
    all_satisfied &= s == DepState::kSatisfied;
    any_satisfied |= s == DepState::kSatisfied;
    all_never &= s == DepState::kNeverSatisfied;
    if (!dep.any && s == DepState::kNeverSatisfied) return DepState::kNeverSatisfied;
  }
  if (dep.any) {
    if (any_satisfied) return DepState::kSatisfied;
    return all_never ? DepState::kNeverSatisfied : DepState::kPending;
  }
  return all_satisfied ? DepState::kSatisfied : DepState::kPending;
}

}  // namespace shoal::sched
