// shoald: the node daemon (slurmd's role).
//
// Opens and keeps a stream to the controller (register, heartbeat, completions), executes the
// controller's LaunchBatch/SignalJob/TerminateJob commands, starts one detached shoal-stepd per
// batch job, and forwards each job's done.pb until the controller acknowledges it. All state is
// owned by one asio thread; the spool directory is the durable truth, so shoald can be killed
// (even with -9) and restarted while jobs keep running.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace shoal::noded {

#ifdef SHOAL_VERSION
inline constexpr const char* kShoalVersion = SHOAL_VERSION;
#else
inline constexpr const char* kShoalVersion = "0.1.0";
#endif

struct ShoaldOptions {
  bool foreground = false;   // -D
  std::string conf_path;     // -f (default DefaultSlurmConfPath())
  std::string node_name;     // -N (default short hostname)
  bool dynamic = false;      // -Z
  std::string dyn_conf;      // --conf "CPUs=4 RealMemory=2000 ..."
  std::string conf_server;   // --conf-server host[:port][,host2[:port]] (configless)
  std::string conf_cache;    // --conf-cache DIR (Shoal): configless cache, default /run/shoal/conf
  std::string key_file;      // --key PATH (Shoal): cluster key when configless
  std::string agent_socket;  // --agent-socket PATH (Shoal): serve the auth agent there
  std::string log_file;      // -L (default SlurmdLogFile, else stderr / nothing)
  int verbose = 0;           // -v, repeatable
  bool version = false;      // -V
  bool help = false;         // -h, --help
};

// slurmd-style flags; short flags may be bundled ("-Dvv") and take values attached or separate
// ("-Nn1", "-N n1"); --conf takes "--conf X" or "--conf=X".
Result<ShoaldOptions> ParseShoaldArgs(const std::vector<std::string>& args);

int ShoaldMain(int argc, char** argv);

}  // namespace shoal::noded
