// Running one job step from srun: create it at the controller, launch its tasks on every step
// node at once, then serve the step's I/O stream until every node is done.
//
// Each node's supervisor (shoal-stepd) connects back to the listener opened here and introduces
// itself with the io_key sent in the launch; after that the stream carries task output (printed
// here, labelled with -l), stdin for the tasks that take it, signals to the tasks, task exits,
// PMI fences (gathered from every node and answered to all) and the nodes' resource use, which
// is reported to the controller with the step's end.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cli/client.h"
#include "cli/srun_options.h"
#include "shoal.pb.h"

namespace shoal::cli {

struct StepLaunchOptions {
  pb::StepCreateRequest create;          // job id, layout, name, argv, mpi, cpu_bind, ...
  std::vector<std::string> environment;  // the tasks' base environment (srun's, filtered)
  std::string work_dir;
  bool label = false;           // -l: "N: " before every output line
  bool unbuffered = false;      // -u
  bool pty = false;             // --pty
  SrunIo input, output, error;  // -i, -o, -e (man srun, "IO Redirection")
  bool open_mode_append = false;
  bool kill_on_bad_exit = false;  // -K (else KillOnBadExit)
  bool kill_on_bad_exit_given = false;
  uint32_t wait_s = 0;  // -W: end the step this long after the first task exits
  bool wait_given = false;
  std::string multi_prog;     // --multi-prog configuration text
  bool quiet = false;         // -Q
  int verbose = 0;            // -v
  std::string prog = "srun";  // prefix of messages
};

// Runs the step; returns srun's exit code: the highest task exit code, 128+signal for a task
// killed by a signal, 1 when the step could not be created or launched (after printing why).
// With `end`, the step's completion is left there for the caller to send (srun outside a job
// sends it with the allocation's release: one controller write instead of two).
int RunStep(const ClientContext& ctx, const StepLaunchOptions& options,
            pb::StepCompleteRequest* end = nullptr);

// The local address the nodes can reach us on: the source address of a route to the
// controller ("127.0.0.1" on a one-host cluster).
std::string LocalAddressToward(const std::string& host);

}  // namespace shoal::cli
