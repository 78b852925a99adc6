// TaskProlog and TaskEpilog (slurm.conf): run as the job's user around each task, the batch
// script included. TaskProlog's standard output edits the task's environment ("export N=v",
// "unset N") or prints to the task's output ("print text"), as Slurm documents.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace shoal::noded {

struct TaskScripts {
  std::string prolog;  // TaskProlog
  std::string epilog;  // TaskEpilog
};
// The two keys of slurm.conf at `conf_path` (empty when unset or unreadable).
TaskScripts LoadTaskScripts(const std::string& conf_path);

// In a task's process, after it became the user and before it execs: runs `program` with the
// task's environment, waits for it, applies its output to `env` and writes its "print" lines
// to standard output. Nothing happens when `program` is empty.
void RunTaskProlog(const std::string& program, std::vector<std::string>* env);

// As root (shoal-stepd), after the task ended: runs `program` as uid/gid in `work_dir` with
// `env` and waits for it (at most `timeout_s`, then it is killed).
void RunTaskEpilog(const std::string& program, uint32_t uid, uint32_t gid,
                   const std::vector<std::string>& env, const std::string& work_dir, int timeout_s);

}  // namespace shoal::noded
