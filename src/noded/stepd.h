// shoal-stepd: the supervisor of one batch job (slurmstepd's role).
//
//   shoal-stepd --spool DIR --job ID [--node NAME] [--conf PATH] [--key PATH] [--cluster NAME]
//
// Reads <spool>/job<ID>/launch.pb, serves <job dir>/stepd.sock (SignalJob, TerminateJob), runs the
// script as the job's user in its own process group, waits for it, kills what is left, writes
// done.pb atomically and tells shoald through <spool>/shoald.sock. Everything runs on one asio
// thread; the job is started with fork+exec and reported through a close-on-exec pipe.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace shoal::noded {

struct StepdOptions {
  std::string spool;
  uint32_t job_id = 0;
  std::string node_name;  // default: the job's batch_host, else the short hostname
  std::string conf_path;  // exported as SLURM_CONF
  std::string key_file;   // cluster key: signs the completion notice, verifies commands
  std::string cluster_name;
  bool has_step = false;  // --step N: supervise a step of srun, not the batch script
  uint32_t step_id = 0;
  // --user NAME --home DIR --shell PATH --groups G,...: the job's user as shoald resolved it
  // (see user_groups.h); empty: resolved here.
  std::string user_name, home, shell;
  std::vector<gid_t> groups;
};

Result<StepdOptions> ParseStepdArgs(const std::vector<std::string>& args);

int StepdMain(int argc, char** argv);

}  // namespace shoal::noded
