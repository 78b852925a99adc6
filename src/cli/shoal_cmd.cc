// `shoal`: the umbrella command.
//
//   shoal start --nodes N [--dir D] [--cpus C] [--memory MB] [--conf 'Key=Value']... [-- CMD...]
//   shoal stop [--dir D]
//   shoal keygen PATH
//   shoal version
//
// `start` brings up a whole cluster on loopback inside one directory: it writes D/etc/slurm.conf,
// D/etc/slurmdbd.conf and D/etc/slurm.key, starts shoaldbd (accounting on SQLite in D/db unless
// --no-accounting), shoalctld, one shoald per node (n1..nN) and shoalrestd (the REST API, on a
// free loopback port and D/run/restd.sock) as detached daemons
// whose pids it records in D/run/<name>.pid, and returns once the controller answers and every
// node has registered. With `-- CMD...` it runs CMD against that cluster, stops the cluster and
// exits with CMD's status. `stop` ends the daemons recorded in D/run and every job supervisor
// (shoal-stepd) of the cluster together with the processes of its job, so nothing outlives it.
//
// Layout of D:
//   etc/slurm.conf, etc/slurm.key (0600)   configuration and cluster key
//   etc/slurmdbd.conf (0600)               accounting daemon configuration
//   db/slurm_acct_db.sqlite                accounting database (SQLite, the default storage)
//   run/<name>.pid, run/auth.sock          daemon pids and the auth agent socket
//   log/<name>.log, log/<name>.out         daemon logs and their stdout/stderr
//   state/                                 StateSaveLocation (controller journal)
//   spool/<node>/                          SlurmdSpoolDir of each node
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "cli/client.h"
#include "cli/commands.h"
#include "common/auth.h"
#include "common/files.h"
#include "common/hostlist.h"
#include "common/name_service.h"
#include "common/slurm_conf.h"

#ifndef SHOAL_VERSION
#define SHOAL_VERSION "0.1.0"
#endif

namespace shoal::cli {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr char kUsage[] =
    "Usage: shoal COMMAND [OPTIONS]\n"
    "\n"
    "Commands:\n"
    "  start   start a cluster on this machine (controller and N node daemons on loopback)\n"
    "  stop    stop a cluster started with `shoal start`\n"
    "  keygen  write a new cluster key (32 random bytes, mode 0600)\n"
    "  version print the version\n"
    "  sbatch, squeue, sinfo, scancel, scontrol\n"
    "          the Slurm commands (`shoal squeue` is `squeue`)\n"
    "\n"
    "shoal start [--nodes N] [--dir D] [--cpus C] [--memory MB] [--conf 'Key=Value ...']...\n"
    "            [--dbd-conf 'Key=Value ...']... [--no-accounting] [--timeout S]\n"
    "            [-- COMMAND [ARGS...]]\n"
    "  --nodes N      number of node daemons, named n1..nN (default 1)\n"
    "  --dir D        cluster directory (default $SHOAL_DIR, else /tmp/shoal-<uid>)\n"
    "  --cpus C       CPUs of each node (default 4)\n"
    "  --memory MB    RealMemory of each node in megabytes (default 4096)\n"
    "  --conf LINE    a slurm.conf line: Key=Value pairs replace the generated keys or are\n"
    "                 added; a NodeName= line naming a generated node adds to or replaces its\n"
    "                 keys; other NodeName=/PartitionName=/NodeSet= lines replace the line of\n"
    "                 the same name or are appended (repeatable)\n"
    "  --dbd-conf LINE a slurmdbd.conf line for the accounting daemon, e.g.\n"
    "                 'StorageType=accounting_storage/mysql StorageHost=/run/mysqld/mysqld.sock\n"
    "                 StorageUser=slurm StoragePass=secret' (default: SQLite in D/db)\n"
    "  --no-accounting run without shoaldbd (no sacct, sacctmgr, sreport)\n"
    "  --timeout S    how long to wait for the controller and every node (default 20)\n"
    "  -- COMMAND     run COMMAND with SLURM_CONF and PATH set for the cluster, then stop the\n"
    "                 cluster and exit with COMMAND's status\n"
    "\n"
    "shoal stop [--dir D]\n"
    "shoal keygen PATH\n";

constexpr int kDefaultNodes = 1;
constexpr int kDefaultCpus = 4;
constexpr uint64_t kDefaultMemoryMb = 4096;
constexpr int kDefaultTimeoutS = 20;
constexpr auto kPollInterval = std::chrono::milliseconds(50);
constexpr auto kTermGrace = std::chrono::seconds(5);
constexpr auto kStepdGrace = std::chrono::seconds(3);

int UsageError(const std::string& message) {
  std::fprintf(stderr, "shoal: error: %s\nTry \"shoal --help\" for more information\n",
               message.c_str());
  return 1;
}

int Fail(const std::string& message) {
  std::fprintf(stderr, "shoal: error: %s\n", message.c_str());
  return 1;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::optional<long> ParseNumber(std::string_view text, long min, long max) {
  if (text.empty() || text.size() > 18) return std::nullopt;
  long value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  if (value < min || value > max) return std::nullopt;
  return value;
}

std::string ReadSmallFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string DefaultClusterDir() {
  if (const char* dir = std::getenv("SHOAL_DIR"); dir != nullptr && *dir != '\0') return dir;
  return "/tmp/shoal-" + std::to_string(::getuid());
}

std::string AbsolutePath(const std::string& path) {
  std::error_code ec;
  fs::path abs = fs::absolute(path, ec);
  if (ec) return path;
  std::string out = abs.lexically_normal().string();
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

// The directory holding this binary (build/bin, or PREFIX/bin when installed).
std::string SelfBinDir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return ".";
  return exe.parent_path().string();
}

// Daemons live in ../sbin beside bin; $SHOAL_SBINDIR overrides.
std::string SbinDir() {
  if (const char* dir = std::getenv("SHOAL_SBINDIR"); dir != nullptr && *dir != '\0') return dir;
  return (fs::path(SelfBinDir()).parent_path() / "sbin").string();
}

std::string ShellQuote(const std::string& s) {
  bool plain = !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("/._-+=:,@%", c) != nullptr;
  });
  if (plain) return s;
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

// ---------------------------------------------------------------------------------------------
// Processes (through /proc; every helper treats a zombie as gone)
// ---------------------------------------------------------------------------------------------

struct ProcStat {
  char state = '?';
  pid_t ppid = 0, pgid = 0, sid = 0;
};

std::optional<ProcStat> ReadProcStat(pid_t pid) {
  std::string text = ReadSmallFile("/proc/" + std::to_string(pid) + "/stat");
  // "pid (comm) S ppid pgrp session ..."; comm may contain spaces and parentheses.
  size_t close = text.rfind(')');
  if (close == std::string::npos || close + 2 >= text.size()) return std::nullopt;
  std::istringstream rest(text.substr(close + 2));
  ProcStat st;
  rest >> st.state >> st.ppid >> st.pgid >> st.sid;
  if (!rest) return std::nullopt;
  return st;
}

std::string ProcComm(pid_t pid) {
  std::string comm = ReadSmallFile("/proc/" + std::to_string(pid) + "/comm");
  while (!comm.empty() && comm.back() == '\n') comm.pop_back();
  return comm;
}

// Arguments joined by spaces.
std::string ProcCmdline(pid_t pid) {
  std::string cmd = ReadSmallFile("/proc/" + std::to_string(pid) + "/cmdline");
  std::replace(cmd.begin(), cmd.end(), '\0', ' ');
  return cmd;
}

// Reaps `pid` when it is our child, then says whether it still runs.
bool IsAlive(pid_t pid) {
  if (pid <= 0) return false;
  int status = 0;
  ::waitpid(pid, &status, WNOHANG);  // fails harmlessly (ECHILD) for processes not ours
  if (::kill(pid, 0) != 0 && errno == ESRCH) return false;
  auto st = ReadProcStat(pid);
  return st && st->state != 'Z' && st->state != 'X';
}

std::vector<pid_t> AllPids() {
  std::vector<pid_t> pids;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (auto n = ParseNumber(name, 1, 1L << 30)) pids.push_back(static_cast<pid_t>(*n));
  }
  return pids;
}

// Sends SIGTERM, waits up to `grace` for every process to end, then SIGKILLs the rest.
void TerminateAll(const std::vector<pid_t>& pids, std::chrono::milliseconds grace) {
  for (pid_t pid : pids) ::kill(pid, SIGTERM);
  auto deadline = Clock::now() + grace;
  while (Clock::now() < deadline) {
    if (std::none_of(pids.begin(), pids.end(), IsAlive)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (pid_t pid : pids) {
    if (IsAlive(pid)) ::kill(pid, SIGKILL);
  }
  deadline = Clock::now() + std::chrono::seconds(2);
  while (Clock::now() < deadline && std::any_of(pids.begin(), pids.end(), IsAlive)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// Starts a detached daemon (own session, stdin /dev/null, stdout+stderr appended to `log`).
// Reports exec failures through a close-on-exec pipe, so a missing binary is an error here.
Result<pid_t> SpawnDaemon(const std::vector<std::string>& args, const std::string& log) {
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0)
    return Error(ErrorCode::kInternal, std::string("pipe: ") + std::strerror(errno));
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) {
    int err = errno;
    ::close(pipefd[0]);
    ::close(pipefd[1]);
    return Error(ErrorCode::kInternal, std::string("fork: ") + std::strerror(err));
  }
  if (pid == 0) {
    ::setsid();
    int in = ::open("/dev/null", O_RDONLY);
    int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (in >= 0) ::dup2(in, 0);
    if (out >= 0) {
      ::dup2(out, 1);
      ::dup2(out, 2);
    }
    for (int fd = 3; fd < 1024; ++fd) {
      if (fd != pipefd[1]) ::close(fd);
    }
    ::signal(SIGPIPE, SIG_DFL);
    ::execv(argv[0], argv.data());
    int err = errno;
    ssize_t ignored = ::write(pipefd[1], &err, sizeof(err));
    (void)ignored;
    ::_exit(127);
  }
  ::close(pipefd[1]);
  int err = 0;
  ssize_t n;
  do {
    n = ::read(pipefd[0], &err, sizeof(err));
  } while (n < 0 && errno == EINTR);
  ::close(pipefd[0]);
  if (n == static_cast<ssize_t>(sizeof(err))) {
    ::waitpid(pid, nullptr, 0);
    return Error(ErrorCode::kInternal, "cannot run " + args[0] + ": " + std::strerror(err));
  }
  return pid;
}

std::string LastLines(const std::string& path, int count) {
  std::string text = ReadSmallFile(path);
  size_t pos = text.size();
  if (pos > 0 && text[pos - 1] == '\n') --pos;
  for (int i = 0; i < count && pos != std::string::npos && pos > 0; ++i) {
    pos = text.rfind('\n', pos - 1);
  }
  return pos == std::string::npos || pos == 0 ? text : text.substr(pos + 1);
}

// ---------------------------------------------------------------------------------------------
// The cluster directory
// ---------------------------------------------------------------------------------------------

struct ClusterPaths {
  explicit ClusterPaths(std::string d)
      : dir(std::move(d)),
        etc(dir + "/etc"),
        run(dir + "/run"),
        log(dir + "/log"),
        state(dir + "/state"),
        spool(dir + "/spool"),
        db(dir + "/db"),
        conf(etc + "/slurm.conf"),
        dbd_conf(etc + "/slurmdbd.conf"),
        key(etc + "/slurm.key") {}
  std::string dir, etc, run, log, state, spool, db, conf, dbd_conf, key;
  std::string PidFile(const std::string& name) const { return run + "/" + name + ".pid"; }
};

// A pid recorded in D/run that still belongs to this cluster (its command line names D, so a
// recycled pid is never signalled).
std::optional<pid_t> RecordedPid(const ClusterPaths& paths, const std::string& pid_file) {
  std::string text = ReadSmallFile(pid_file);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  auto pid = ParseNumber(text, 1, 1L << 30);
  if (!pid || !IsAlive(static_cast<pid_t>(*pid))) return std::nullopt;
  if (ProcCmdline(static_cast<pid_t>(*pid)).find(paths.dir + "/") == std::string::npos)
    return std::nullopt;
  return static_cast<pid_t>(*pid);
}

// Job supervisors of this cluster and every process of their jobs. A shoal-stepd leads its own
// session, and the job runs inside it, so the session id finds the job's processes even after the
// stepd itself died. A session counts only when one of its members names D on its command line
// (the stepd's --spool, the job script under D/spool), so a recycled pid never matches.
std::vector<pid_t> ClusterJobProcesses(const ClusterPaths& paths) {
  std::set<pid_t> sessions;
  std::error_code ec;
  for (const auto& node : fs::directory_iterator(paths.spool, ec)) {
    std::error_code ec2;
    for (const auto& job : fs::directory_iterator(node.path(), ec2)) {
      std::string text = ReadSmallFile((job.path() / "stepd.pid").string());
      while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
        text.pop_back();
      if (auto pid = ParseNumber(text, 1, 1L << 30)) sessions.insert(static_cast<pid_t>(*pid));
    }
  }
  std::map<pid_t, ProcStat> stats;
  for (pid_t pid : AllPids()) {
    if (auto st = ReadProcStat(pid); st && st->state != 'Z') stats[pid] = *st;
  }
  for (const auto& [pid, st] : stats) {
    if (ProcComm(pid) == "shoal-stepd" &&
        ProcCmdline(pid).find(paths.dir + "/") != std::string::npos)
      sessions.insert(pid);
  }
  std::set<pid_t> confirmed;
  for (const auto& [pid, st] : stats) {
    if (sessions.count(st.sid) != 0 && confirmed.count(st.sid) == 0 &&
        ProcCmdline(pid).find(paths.dir + "/") != std::string::npos)
      confirmed.insert(st.sid);
  }
  std::set<pid_t> targets;
  for (const auto& [pid, st] : stats) {
    if (confirmed.count(st.sid) != 0) targets.insert(pid);
  }
  // Descendants too (to a fixed point), in case a job started a session of its own.
  for (bool grew = !targets.empty(); grew;) {
    grew = false;
    for (const auto& [pid, st] : stats) {
      if (targets.count(pid) == 0 && targets.count(st.ppid) != 0) {
        targets.insert(pid);
        grew = true;
      }
    }
  }
  targets.erase(::getpid());
  return {targets.begin(), targets.end()};
}

// Stops the daemons recorded in D/run, then the job supervisors and their jobs. Returns whether
// anything was running.
bool StopCluster(const ClusterPaths& paths) {
  std::vector<pid_t> daemons;
  std::vector<std::string> pid_files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(paths.run, ec)) {
    if (entry.path().extension() != ".pid") continue;
    pid_files.push_back(entry.path().string());
    if (auto pid = RecordedPid(paths, entry.path().string())) daemons.push_back(*pid);
  }
  // The controller first, so it does not mark nodes down while they stop.
  std::string ctld_pid_file = paths.PidFile("shoalctld");
  std::optional<pid_t> ctld = RecordedPid(paths, ctld_pid_file);
  bool ctld_running = ctld.has_value();
  if (ctld) {
    pid_t pid = *ctld;
    TerminateAll({pid}, kTermGrace);
    daemons.erase(std::remove(daemons.begin(), daemons.end(), pid), daemons.end());
  }
  TerminateAll(daemons, kTermGrace);
  std::vector<pid_t> jobs = ClusterJobProcesses(paths);
  TerminateAll(jobs, kStepdGrace);
  for (const auto& file : pid_files) ::unlink(file.c_str());
  return ctld_running || !daemons.empty() || !jobs.empty();
}

// ---------------------------------------------------------------------------------------------
// slurm.conf generation
// ---------------------------------------------------------------------------------------------

// The Key=Value pairs of one --conf line (slurm.conf's own splitting; quotes removed).
Result<std::vector<std::pair<std::string, std::string>>> SplitPairs(const std::string& line) {
  auto pairs = SplitConfLine(line);
  if (!pairs) return InvalidArgument("--conf '" + line + "': " + pairs.error());
  if (pairs->empty()) return InvalidArgument("--conf expects Key=Value pairs, got nothing");
  return pairs;
}

// Key=Value as slurm.conf reads it back: a value with blanks goes in double quotes.
std::string ConfPair(const std::string& key, const std::string& value) {
  bool blank = std::any_of(value.begin(), value.end(),
                           [](char c) { return std::isspace(static_cast<unsigned char>(c)); });
  return key + "=" + (blank ? "\"" + value + "\"" : value);
}

bool IsEntityKey(std::string_view key) {
  return EqualsIgnoreCase(key, "NodeName") || EqualsIgnoreCase(key, "PartitionName") ||
         EqualsIgnoreCase(key, "NodeSet");
}

// The first Key=Value pair of a generated line (comments have none).
std::optional<std::pair<std::string, std::string>> FirstPair(const std::string& line) {
  if (line.empty() || line[0] == '#') return std::nullopt;
  auto pairs = SplitPairs(line);
  if (!pairs) return std::nullopt;
  return pairs->front();
}

// Applies one --conf line to the generated lines (see kUsage).
Status ApplyOverride(std::vector<std::string>& lines, const std::string& override_line) {
  auto pairs = SplitPairs(override_line);
  if (!pairs) return pairs.status();
  const auto& [entity_key, entity_name] = pairs->front();
  if (IsEntityKey(entity_key)) {
    auto same = std::find_if(lines.begin(), lines.end(), [&](const std::string& line) {
      auto first = FirstPair(line);
      return first && EqualsIgnoreCase(first->first, entity_key) && first->second == entity_name;
    });
    if (same == lines.end()) {
      lines.push_back(override_line);
    } else if (EqualsIgnoreCase(entity_key, "NodeName")) {
      // A generated node keeps its address and port; the line's other keys replace or add.
      auto current = SplitPairs(*same);
      if (!current) return current.status();
      for (const auto& [key, value] : *pairs) {
        auto hit = std::find_if(current->begin(), current->end(),
                                [&](const auto& kv) { return EqualsIgnoreCase(kv.first, key); });
        if (hit != current->end())
          hit->second = value;
        else
          current->emplace_back(key, value);
      }
      std::string merged;
      for (const auto& [key, value] : *current)
        merged += (merged.empty() ? "" : " ") + ConfPair(key, value);
      *same = merged;
    } else {
      *same = override_line;
    }
    return Status::Ok();
  }
  for (const auto& [key, value] : *pairs) {
    if (IsEntityKey(key))
      return InvalidArgument("--conf: " + key + "= must start its own --conf line");
    // Global keys are generated one per line.
    auto same = std::find_if(lines.begin(), lines.end(), [&](const std::string& line) {
      auto first = FirstPair(line);
      return first && !IsEntityKey(first->first) && EqualsIgnoreCase(first->first, key);
    });
    if (same != lines.end())
      *same = ConfPair(key, value);
    else
      lines.push_back(ConfPair(key, value));
  }
  return Status::Ok();
}

// Free TCP ports on 127.0.0.1, distinct from each other: all sockets stay bound until every
// port is chosen.
Result<std::vector<uint16_t>> FreePorts(size_t count) {
  std::vector<int> fds;
  std::vector<uint16_t> ports;
  Status status;
  for (size_t i = 0; i < count; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      status = Error(ErrorCode::kIoError, std::string("socket: ") + std::strerror(errno));
      break;
    }
    fds.push_back(fd);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof(addr);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      status = Error(ErrorCode::kIoError,
                     std::string("cannot find a free port: ") + std::strerror(errno));
      break;
    }
    ports.push_back(ntohs(addr.sin_port));
  }
  for (int fd : fds) ::close(fd);
  if (!status.ok()) return status;
  return ports;
}

struct StartOptions {
  int nodes = kDefaultNodes;
  std::string dir;
  int cpus = kDefaultCpus;
  uint64_t memory_mb = kDefaultMemoryMb;
  int timeout_s = kDefaultTimeoutS;
  std::vector<std::string> conf;
  std::vector<std::string> dbd_conf;
  bool accounting = true;
  std::vector<std::string> command;
};

std::string NodeName(int i) { return "n" + std::to_string(i); }

std::string SlurmUserName() {
  if (::getuid() == 0) return "root";
  if (auto user = UserById(::getuid())) return user->name;
  return std::to_string(::getuid());
}

Result<std::string> BuildSlurmConf(const StartOptions& opt, const ClusterPaths& paths) {
  // Controller, slurmd default, one per node, and the accounting daemon last.
  auto ports = FreePorts(3 + static_cast<size_t>(opt.nodes));
  if (!ports) return ports.status();
  std::vector<std::string> lines = {
      "# Written by `shoal start`; rewritten on every start (use --conf to change it).",
      "ClusterName=shoal",
      "SlurmctldHost=localhost(127.0.0.1)",
      "SlurmctldPort=" + std::to_string((*ports)[0]),
      "SlurmdPort=" + std::to_string((*ports)[1]),
      "SlurmUser=" + SlurmUserName(),
      "AuthInfo=socket=" + paths.run + "/auth.sock",
      "StateSaveLocation=" + paths.state,
      "SlurmdSpoolDir=" + paths.spool + "/%n",
      "SlurmctldLogFile=" + paths.log + "/shoalctld.log",
      "SlurmdLogFile=" + paths.log + "/%n.log",
      "SlurmdTimeout=30",
      "KillWait=5",
      "MinJobAge=300",
      "ReturnToService=2",
  };
  for (int i = 1; i <= opt.nodes; ++i) {
    lines.push_back("NodeName=" + NodeName(i) + " NodeAddr=127.0.0.1 CPUs=" +
                    std::to_string(opt.cpus) + " RealMemory=" + std::to_string(opt.memory_mb) +
                    " Port=" + std::to_string((*ports)[1 + static_cast<size_t>(i)]));
  }
  lines.push_back("PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP");
  if (opt.accounting) {
    lines.push_back("AccountingStorageType=accounting_storage/slurmdbd");
    lines.push_back("AccountingStorageHost=127.0.0.1");
    lines.push_back("AccountingStoragePort=" +
                    std::to_string((*ports)[2 + static_cast<size_t>(opt.nodes)]));
    lines.push_back("JobAcctGatherType=jobacct_gather/linux");
  }
  for (const auto& line : opt.conf) {
    if (Status s = ApplyOverride(lines, line); !s.ok()) return s;
  }
  std::string text;
  for (const auto& line : lines) text += line + "\n";
  return text;
}

// slurmdbd.conf for the cluster's accounting daemon: SQLite in D/db unless --dbd-conf says
// otherwise (each of its keys replaces the generated one of the same name or is added).
Result<std::string> BuildDbdConf(const StartOptions& opt, const ClusterPaths& paths,
                                 const std::string& port) {
  std::vector<std::pair<std::string, std::string>> keys = {
      {"DbdHost", "localhost"},
      {"DbdAddr", "127.0.0.1"},
      {"DbdPort", port},
      {"SlurmUser", SlurmUserName()},
      {"LogFile", paths.log + "/shoaldbd.log"},
      {"StorageType", "accounting_storage/sqlite"},
      {"StorageLoc", paths.db + "/slurm_acct_db.sqlite"},
  };
  for (const auto& line : opt.dbd_conf) {
    auto pairs = SplitConfLine(line);
    if (!pairs) return InvalidArgument("--dbd-conf '" + line + "': " + pairs.error());
    if (pairs->empty()) return InvalidArgument("--dbd-conf expects Key=Value pairs, got nothing");
    for (auto& [k, v] : *pairs) {
      auto same = std::find_if(keys.begin(), keys.end(),
                               [&](const auto& kv) { return EqualsIgnoreCase(kv.first, k); });
      // A database of another type has no use for the SQLite file name.
      if (EqualsIgnoreCase(k, "StorageType") && v != "accounting_storage/sqlite") {
        keys.erase(std::remove_if(keys.begin(), keys.end(),
                                  [](const auto& kv) { return kv.first == "StorageLoc"; }),
                   keys.end());
        same = std::find_if(keys.begin(), keys.end(),
                            [&](const auto& kv) { return EqualsIgnoreCase(kv.first, k); });
      }
      if (same != keys.end()) {
        same->second = v;
      } else {
        keys.emplace_back(k, v);
      }
    }
  }
  std::string text = "# Written by `shoal start`; rewritten on every start (use --dbd-conf).\n";
  for (const auto& [k, v] : keys) text += ConfPair(k, v) + "\n";
  return text;
}

// ---------------------------------------------------------------------------------------------
// shoal start
// ---------------------------------------------------------------------------------------------

bool ClusterRegistered(const ClientContext& ctx) {
  pb::DbdRequest req;
  req.mutable_show()->set_entity("cluster");
  auto resp = CallDbd(ctx, req);
  if (!resp) return false;
  for (const auto& c : resp->show().clusters()) {
    if (c.name() == ctx.conf.ClusterName()) return true;
  }
  return false;
}

// Takes the value of "--name V" or "--name=V"; advances i past what it used.
std::optional<std::string> TakeValue(int argc, char** argv, int& i, std::string_view name) {
  std::string_view arg = argv[i];
  if (arg == name) {
    if (i + 1 >= argc) return std::nullopt;
    return std::string(argv[++i]);
  }
  return std::string(arg.substr(name.size() + 1));
}

bool Matches(std::string_view arg, std::string_view name) {
  return arg == name || (arg.size() > name.size() && arg.substr(0, name.size()) == name &&
                         arg[name.size()] == '=');
}

// Returns an exit code when parsing ends the command (help, error).
std::optional<int> ParseStart(int argc, char** argv, StartOptions& opt) {
  for (int i = 2; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--") {
      for (int j = i + 1; j < argc; ++j) opt.command.emplace_back(argv[j]);
      if (opt.command.empty()) return UsageError("no command after --");
      break;
    }
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (arg == "--no-accounting") {
      opt.accounting = false;
      continue;
    }
    std::string_view names[] = {"--nodes", "--dir",      "--cpus",   "--memory",
                                "--conf",  "--dbd-conf", "--timeout"};
    auto name = std::find_if(std::begin(names), std::end(names),
                             [&](std::string_view n) { return Matches(arg, n); });
    if (name == std::end(names))
      return UsageError("unrecognized option '" + std::string(arg) + "'");
    auto value = TakeValue(argc, argv, i, *name);
    if (!value) return UsageError("option '" + std::string(*name) + "' requires an argument");
    if (*name == "--nodes") {
      auto n = ParseNumber(*value, 1, 1024);
      if (!n) return UsageError("invalid --nodes '" + *value + "' (1 to 1024)");
      opt.nodes = static_cast<int>(*n);
    } else if (*name == "--dir") {
      if (value->empty()) return UsageError("--dir needs a directory");
      opt.dir = *value;
    } else if (*name == "--cpus") {
      auto n = ParseNumber(*value, 1, 65536);
      if (!n) return UsageError("invalid --cpus '" + *value + "'");
      opt.cpus = static_cast<int>(*n);
    } else if (*name == "--memory") {
      auto n = ParseNumber(*value, 1, 1L << 40);
      if (!n) return UsageError("invalid --memory '" + *value + "' (megabytes)");
      opt.memory_mb = static_cast<uint64_t>(*n);
    } else if (*name == "--conf") {
      opt.conf.push_back(*value);
    } else if (*name == "--dbd-conf") {
      opt.dbd_conf.push_back(*value);
    } else if (*name == "--timeout") {
      auto n = ParseNumber(*value, 1, 3600);
      if (!n) return UsageError("invalid --timeout '" + *value + "' (seconds)");
      opt.timeout_s = static_cast<int>(*n);
    }
  }
  return std::nullopt;
}

Status MakeDirs(const ClusterPaths& paths) {
  for (const auto& d :
       {paths.dir, paths.etc, paths.run, paths.log, paths.state, paths.spool, paths.db}) {
    std::error_code ec;
    fs::create_directories(d, ec);
    if (ec) return Error(ErrorCode::kIoError, d + ": " + ec.message());
  }
  // Users need to reach slurm.conf, the auth socket and the logs; the state stays private.
  for (const auto& d : {paths.dir, paths.etc, paths.run, paths.log, paths.spool}) {
    ::chmod(d.c_str(), 0755);
  }
  ::chmod(paths.state.c_str(), 0700);
  ::chmod(paths.db.c_str(), 0700);
  return Status::Ok();
}

struct Daemon {
  std::string name;  // "shoalctld" or the node name
  pid_t pid = 0;
};

struct ReadyState {
  bool controller = false;
  std::vector<std::string> missing;  // nodes not registered yet
};

ReadyState QueryReady(const ClientContext& ctx, int nodes) {
  ReadyState state;
  pb::Request request;
  request.mutable_node_query();
  auto response = CallController(ctx, request);
  std::set<std::string> registered;
  if (response) {
    state.controller = true;
    for (const auto& node : response->node_query().nodes()) {
      if (node.responding() && node.base_state() != pb::NODE_UNKNOWN &&
          node.base_state() != pb::NODE_DOWN)
        registered.insert(node.name());
    }
  }
  for (int i = 1; i <= nodes; ++i) {
    if (registered.count(NodeName(i)) == 0) state.missing.push_back(NodeName(i));
  }
  return state;
}

int StartFailed(const ClusterPaths& paths, const std::string& message) {
  std::fprintf(stderr, "shoal: error: %s\n", message.c_str());
  StopCluster(paths);
  return 1;
}

// Runs `command` with the cluster's environment; returns its exit code (128+signal if killed).
int RunCommand(const std::vector<std::string>& command, const ClusterPaths& paths,
               const std::string& bin_dir) {
  std::vector<char*> argv;
  for (const auto& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  // Like system(3): Ctrl-C goes to the command, and we still stop the cluster afterwards.
  struct sigaction ignore {
  }, old_int{}, old_quit{};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGINT, &ignore, &old_int);
  ::sigaction(SIGQUIT, &ignore, &old_quit);
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::sigaction(SIGINT, &old_int, nullptr);
    ::sigaction(SIGQUIT, &old_quit, nullptr);
    ::setenv("SLURM_CONF", paths.conf.c_str(), 1);
    const char* path = std::getenv("PATH");
    std::string new_path =
        bin_dir + (path != nullptr && *path != '\0' ? ":" + std::string(path) : "");
    ::setenv("PATH", new_path.c_str(), 1);
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "shoal: error: cannot run %s: %s\n", argv[0], std::strerror(errno));
    ::_exit(127);
  }
  int status = 0;
  int rc = 1;
  if (pid < 0) {
    std::fprintf(stderr, "shoal: error: fork: %s\n", std::strerror(errno));
  } else {
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGQUIT, &old_quit, nullptr);
  return rc;
}

int Start(int argc, char** argv) {
  StartOptions opt;
  if (auto rc = ParseStart(argc, argv, opt)) return *rc;
  ClusterPaths paths(AbsolutePath(opt.dir.empty() ? DefaultClusterDir() : opt.dir));
  // Built first so a bad --conf fails before anything is touched.
  auto conf_text = BuildSlurmConf(opt, paths);
  if (!conf_text) return Fail(conf_text.error());
  if (RecordedPid(paths, paths.PidFile("shoalctld")))
    return Fail("a cluster is already running in " + paths.dir +
                " (stop it with: shoal stop --dir " + ShellQuote(paths.dir) + ")");

  const std::string sbin = SbinDir();
  const std::string ctld_bin = sbin + "/shoalctld";
  const std::string noded_bin = sbin + "/shoald";
  const std::string dbd_bin = sbin + "/shoaldbd";
  std::vector<std::string> bins = {ctld_bin, noded_bin};
  if (opt.accounting) bins.push_back(dbd_bin);
  for (const auto& bin : bins) {
    if (::access(bin.c_str(), X_OK) != 0)
      return Fail("cannot find " + bin + " (build it, or set SHOAL_SBINDIR)");
  }

  if (Status s = MakeDirs(paths); !s.ok()) return Fail(s.message());
  // Leftovers of an earlier run that was not stopped (pid files of dead daemons, stepds).
  StopCluster(paths);
  if (::access(paths.key.c_str(), F_OK) != 0) {
    if (Status s = ClusterKey::Generate(paths.key); !s.ok()) return Fail(s.message());
  }
  if (Status s = WriteFileAtomic(paths.conf, *conf_text, 0644, /*sync=*/false); !s.ok())
    return Fail(s.message());
  // Catch a bad --conf here, with its line, instead of in a daemon's log.
  auto conf = LoadSlurmConf(paths.conf);
  if (!conf) return Fail(conf.error());
  bool accounting =
      conf->Get("AccountingStorageType") == "accounting_storage/slurmdbd" && opt.accounting;
  std::string dbd_address = DbdAddress(*conf);
  if (accounting) {
    auto dbd_text = BuildDbdConf(opt, paths, conf->Get("AccountingStoragePort", "6819"));
    if (!dbd_text) return Fail(dbd_text.error());
    if (Status s = WriteFileAtomic(paths.dbd_conf, *dbd_text, 0600, /*sync=*/false); !s.ok())
      return Fail(s.message());
  }

  ::setenv("SLURM_CONF", paths.conf.c_str(), 1);
  std::vector<Daemon> daemons;
  auto spawn = [&](const std::string& name, std::vector<std::string> args) -> Status {
    auto pid = SpawnDaemon(args, paths.log + "/" + name + ".out");
    if (!pid) return pid.status();
    daemons.push_back({name, *pid});
    return WriteFileAtomic(paths.PidFile(name), std::to_string(*pid) + "\n", 0644, /*sync=*/false);
  };
  // The accounting daemon first, so the controller finds it at once.
  if (accounting) {
    if (Status s = spawn("shoaldbd", {dbd_bin, "-D", "-f", paths.dbd_conf}); !s.ok())
      return StartFailed(paths, s.message());
  }
  if (Status s = spawn("shoalctld", {ctld_bin, "-D", "-f", paths.conf}); !s.ok())
    return StartFailed(paths, s.message());
  for (int i = 1; i <= opt.nodes; ++i) {
    if (Status s = spawn(NodeName(i), {noded_bin, "-D", "-f", paths.conf, "-N", NodeName(i)});
        !s.ok())
      return StartFailed(paths, s.message());
  }

  auto ctx = LoadClientContext();
  if (!ctx) return StartFailed(paths, ctx.error());
  auto deadline = Clock::now() + std::chrono::seconds(opt.timeout_s);
  ReadyState ready;
  for (;;) {
    for (const auto& d : daemons) {
      if (!IsAlive(d.pid)) {
        std::string out = paths.log + "/" + d.name + ".out";
        return StartFailed(paths, d.name + " exited during start-up; the end of " + out + ":\n" +
                                      LastLines(out, 10));
      }
    }
    ready = QueryReady(*ctx, opt.nodes);
    // Accounting is ready once the controller has registered the cluster with shoaldbd.
    bool dbd_ready = !accounting || (ready.controller && ClusterRegistered(*ctx));
    if (ready.controller && ready.missing.empty() && dbd_ready) break;
    if (Clock::now() >= deadline) {
      std::string what = !ready.controller ? "the controller did not answer"
                         : !ready.missing.empty()
                             ? "nodes not registered: " + CompressHostlist(ready.missing)
                             : "the accounting daemon did not answer at " + dbd_address;
      return StartFailed(paths, "cluster not ready after " + std::to_string(opt.timeout_s) +
                                    " s: " + what + " (see " + paths.log + ")");
    }
    std::this_thread::sleep_for(kPollInterval);
  }

  // The REST API: TCP on a free loopback port and a unix socket in D/run. Optional: a build
  // without shoalrestd still starts the cluster.
  std::string restd_addresses;
  const std::string restd_bin = sbin + "/shoalrestd";
  if (::access(restd_bin.c_str(), X_OK) == 0) {
    std::string addr_file = paths.run + "/shoalrestd.addr";
    ::unlink(addr_file.c_str());
    std::vector<std::string> args = {
        restd_bin,        "-f",      paths.conf,   "-t", "4", "-L", paths.log + "/shoalrestd.log",
        "--address-file", addr_file, "127.0.0.1:0"};
    std::string sock = paths.run + "/restd.sock";
    if (sock.size() < 100) args.push_back("unix:" + sock);
    Status s = spawn("shoalrestd", args);
    while (s.ok() && ::access(addr_file.c_str(), F_OK) != 0 && IsAlive(daemons.back().pid) &&
           Clock::now() < deadline)
      std::this_thread::sleep_for(kPollInterval);
    std::ifstream in(addr_file);
    for (std::string line; std::getline(in, line);)
      restd_addresses += (restd_addresses.empty() ? "" : ", ") +
                         (line.rfind("unix:", 0) == 0 ? line : "http://" + line);
    if (restd_addresses.empty())
      std::fprintf(stderr, "shoal: warning: shoalrestd did not start (see %s/shoalrestd.log)\n",
                   paths.log.c_str());
  }

  const std::string bin_dir = SelfBinDir();
  if (!opt.command.empty()) {
    int rc = RunCommand(opt.command, paths, bin_dir);
    StopCluster(paths);
    return rc;
  }
  std::vector<std::string> names;
  for (int i = 1; i <= opt.nodes; ++i) names.push_back(NodeName(i));
  std::printf(
      "Shoal cluster is up in %s: controller 127.0.0.1:%u, %d node%s %s.\n"
      "Use it from this shell with:\n"
      "  export SLURM_CONF=%s PATH=%s:$PATH\n"
      "Logs are in %s; stop it with: shoal stop --dir %s\n",
      paths.dir.c_str(), conf->ControllerPort(), opt.nodes, opt.nodes == 1 ? "" : "s",
      CompressHostlist(names).c_str(), ShellQuote(paths.conf).c_str(), ShellQuote(bin_dir).c_str(),
      ShellQuote(paths.log).c_str(), ShellQuote(paths.dir).c_str());
  if (!restd_addresses.empty()) std::printf("REST API (shoalrestd): %s\n", restd_addresses.c_str());
  return 0;
}

// ---------------------------------------------------------------------------------------------
// shoal stop, keygen, version
// ---------------------------------------------------------------------------------------------

int Stop(int argc, char** argv) {
  std::string dir;
  for (int i = 2; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (!Matches(arg, "--dir")) return UsageError("unrecognized option '" + std::string(arg) + "'");
    auto value = TakeValue(argc, argv, i, "--dir");
    if (!value || value->empty()) return UsageError("option '--dir' requires an argument");
    dir = *value;
  }
  ClusterPaths paths(AbsolutePath(dir.empty() ? DefaultClusterDir() : dir));
  if (!fs::is_directory(paths.dir)) return Fail("no cluster directory " + paths.dir);
  if (!StopCluster(paths))
    std::fprintf(stderr, "shoal: no cluster was running in %s\n", paths.dir.c_str());
  return 0;
}

int Keygen(int argc, char** argv) {
  if (argc == 3 && (std::string_view(argv[2]) == "-h" || std::string_view(argv[2]) == "--help")) {
    std::fputs("Usage: shoal keygen PATH\n", stdout);
    return 0;
  }
  if (argc != 3) return UsageError("usage: shoal keygen PATH");
  if (Status s = ClusterKey::Generate(argv[2]); !s.ok()) return Fail(s.message());
  return 0;
}

}  // namespace

int ShoalMain(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 1;
  }
  std::string_view cmd = argv[1];
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (cmd == "version" || cmd == "--version" || cmd == "-V") {
    std::printf("shoal %s\n", SHOAL_VERSION);
    return 0;
  }
  if (cmd == "start") return Start(argc, argv);
  if (cmd == "stop") return Stop(argc, argv);
  if (cmd == "keygen") return Keygen(argc, argv);
  return UsageError("unknown command '" + std::string(cmd) + "'");
}

}  // namespace shoal::cli
