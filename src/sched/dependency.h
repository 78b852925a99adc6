// Job dependencies (sbatch -d/--dependency): "afterok:12:13,afterany:14", "after:5+10",
// "afterok:7?afternotok:8", "singleton". Pure parsing and evaluation, no I/O: the controller
// supplies what it knows about the jobs named.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace shoal::sched {

enum class DepType {
  kAfter,
  kAfterAny,
  kAfterOk,
  kAfterNotOk,
  kAfterCorr,
  kAfterBurstBuffer,
  kSingleton
};

struct DepTerm {
  DepType type = DepType::kAfterAny;
  uint32_t job_id = 0;           // 0 for singleton
  std::optional<uint32_t> task;  // "123_4"
  uint32_t delay_minutes = 0;    // "+time" on after/afterok/afternotok/afterany
};

struct Dependency {
  std::vector<DepTerm> terms;
  bool any = false;  // '?' separated: one satisfied term is enough
};

// Errors read "Job dependency problem" (Slurm's message) with the reason appended.
Result<Dependency> ParseDependency(std::string_view text);

// What the controller knows about one job (or every task of an array) named by a term.
struct DepTarget {
  bool exists = false;
  bool started = false;   // has run (or is running)
  bool finished = false;  // ended (any state)
  bool ok = false;        // ended COMPLETED with exit 0 (all tasks for arrays)
  int64_t start_time = 0;
  int64_t end_time = 0;
};

enum class DepState { kSatisfied, kPending, kNeverSatisfied };

// `lookup(job_id, task)` describes the target; for aftercorr the controller passes the task
// index of the dependent job. `singleton_blocked` says whether an earlier job with the same
// name and user is still pending or running.
DepState EvaluateDependency(const Dependency& dep, int64_t now,
                            const std::function<DepTarget(const DepTerm&)>& lookup,
                            bool singleton_blocked);

}  // namespace shoal::sched
