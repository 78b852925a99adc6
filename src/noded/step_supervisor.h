// The supervisor of one node's part of an srun step (slurmstepd's role for job steps).
//
//   shoal-stepd --spool DIR --job ID --step N [--node NAME] [--conf PATH] [--key PATH] ...
//
// Reads <spool>/step<ID>.<N>/launch.pb (written by shoald after it checked the controller's step
// credential), connects back to srun's I/O address and introduces itself (StepIoHello), starts
// the node's tasks as the step's user, each in its own process group, and then relays: task
// stdout/stderr to srun, srun's stdin to the tasks, srun's signals to the tasks, task exits and
// resource use to srun, and PMI fences between the local ranks and srun (PMI-1/PMI-2 through
// PmiServer, PMIx through PmixServer). When every task has exited it kills what they left behind,
// reports StepNodeDone, tells shoald, and exits. If srun goes away first the step is terminated
// (SIGTERM, KillWait, SIGKILL): a step never outlives its srun.
#pragma once

#include "noded/stepd.h"

namespace shoal::noded {

int RunStepSupervisor(const StepdOptions& opts);

}  // namespace shoal::noded
