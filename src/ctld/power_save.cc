// Power saving (slurm.conf SuspendTime, SuspendProgram, ResumeProgram, SuspendTimeout,
// ResumeTimeout, SuspendRate, ResumeRate, SuspendExcNodes/Parts/States, State=CLOUD).
//
// A node idle for SuspendTime gets `SuspendProgram <hostlist>` and is POWERING_DOWN ("%") for
// SuspendTimeout, then POWERED_DOWN ("~"). Powered-down nodes stay schedulable: a job placed on
// one starts `ResumeProgram <hostlist>`, the node is POWERING_UP ("#") and the job waits until
// every node of it has registered; a node not back within ResumeTimeout goes DOWN ("ResumeTimeout
// reached") and the waiting jobs are requeued. Programs run detached, as the controller's user;
// their exit status is not awaited (the node registering is what counts).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "common/hostlist.h"
#include "common/log.h"
#include "ctld/controller.h"

namespace shoal::ctld {
namespace {

std::string Upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), ::toupper);
  return s;
}

std::vector<std::string> SplitComma(const std::string& v) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= v.size()) {
    size_t comma = v.find(',', pos);
    std::string item = v.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (!item.empty()) out.push_back(item);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

// In JobRecord.prolog_pending_nodes while a job waits for its nodes to power up.
constexpr const char* kPowerUpMark = "(PowerUp)";

// "n[1,3]:2,n5" -> {"n[1,3]:2", "n5"}: commas inside brackets belong to the hostlist.
std::vector<std::string> SplitOutsideBrackets(const std::string& v) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  for (char ch : v) {
    if (ch == '[') ++depth;
    if (ch == ']' && depth > 0) --depth;
    if (ch == ',' && depth == 0) {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
      continue;
    }
    cur += ch;
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

// Actions started within the last minute, after dropping older ones.
size_t RecentCount(std::vector<int64_t>& starts, int64_t now) {
  starts.erase(
      std::remove_if(starts.begin(), starts.end(), [now](int64_t t) { return now - t >= 60; }),
      starts.end());
  return starts.size();
}

}  // namespace

void Controller::LoadPowerConfig() {
  PowerConfig& p = power_;
  p.suspend_program = conf_.Get("SuspendProgram");
  p.resume_program = conf_.Get("ResumeProgram");
  std::string st = Upper(conf_.Get("SuspendTime", "NONE"));
  if (st != "NONE" && st != "INFINITE" && !st.empty()) {
    auto v = conf_.GetInt("SuspendTime", -1);
    p.suspend_time = v.ok() && *v >= 0 ? *v : -1;
  }
  auto get = [&](const char* key, int64_t def) {
    auto v = conf_.GetInt(key, def);
    return v.ok() && *v >= 0 ? *v : def;
  };
  p.suspend_timeout = std::max<int64_t>(get("SuspendTimeout", 30), 1);
  p.resume_timeout = ResumeTimeoutSeconds();
  p.suspend_rate = get("SuspendRate", 60);
  p.resume_rate = get("ResumeRate", 300);
  // "n[1-4]" (never powered down) or "n[1-4]:2" (keep 2 usable nodes of the set up).
  p.exc_nodes.clear();
  p.exc_node_counts.clear();
  for (const std::string& item : SplitOutsideBrackets(conf_.Get("SuspendExcNodes"))) {
    std::string part = item;
    int64_t keep = -1;
    if (auto colon = part.rfind(':'); colon != std::string::npos) {
      char* end = nullptr;
      long long v = std::strtoll(part.c_str() + colon + 1, &end, 10);
      if (end && *end == '\0' && v >= 0) keep = v;
      part.resize(colon);
    }
    auto names = ExpandHostlist(part);
    if (!names.ok()) continue;
    if (keep < 0) {
      for (auto& n : *names) p.exc_nodes.insert(n);
      continue;
    }
    std::set<int> group;
    for (auto& n : *names)
      if (int idx = FindNode(n); idx >= 0) group.insert(idx);
    p.exc_node_counts.emplace_back(std::move(group), keep);
  }
  for (auto& part : SplitComma(conf_.Get("SuspendExcParts"))) p.exc_parts.insert(part);
  for (auto& s : SplitComma(conf_.Get("SuspendExcStates"))) p.exc_states.insert(Upper(s));
  for (auto& n : nodes_) {
    // State=CLOUD: powered down until a job needs it (unless the journal said otherwise).
    if (n.rec.cloud() && !n.registered && !n.rec.powering_up() && !n.rec.powering_down())
      n.rec.set_powered_down(true);
  }
}

bool Controller::PowerSaveExcluded(int idx) const {
  const auto& r = nodes_[idx].rec;
  if (power_.exc_nodes.count(r.name())) return true;
  for (const auto& p : partitions_)
    if (power_.exc_parts.count(p.rec.name()) &&
        std::find(p.node_index.begin(), p.node_index.end(), idx) != p.node_index.end())
      return true;
  const auto& ex = power_.exc_states;
  if (ex.empty()) return false;
  if (ex.count("DRAIN") && r.drain()) return true;
  if (ex.count("DOWN") && r.base_state() == pb::NODE_DOWN) return true;
  if (ex.count("DYNAMIC_NORM") && r.dynamic()) return true;
  if (ex.count("MAINT") && NodeInMaint(idx)) return true;
  if (ex.count("RESERVED") && NodeReserved(idx)) return true;
  if (ex.count("CLOUD") && r.cloud()) return true;
  return false;
}

// SuspendExcNodes=set:N: powering `idx` down must leave N usable nodes of each of its sets
// (idle, responding, not draining, not powered or powering down, not being suspended now).
bool Controller::KeptUpByCount(int idx, const std::vector<int>& suspending) const {
  for (const auto& [group, keep] : power_.exc_node_counts) {
    if (!group.count(idx)) continue;
    int64_t usable = 0;
    for (int g : group) {
      const Node& n = nodes_[g];
      const auto& r = n.rec;
      if (std::find(suspending.begin(), suspending.end(), g) != suspending.end()) continue;
      if (!n.registered || !n.stream || n.stream->closed() || r.base_state() == pb::NODE_DOWN ||
          r.drain() || r.powered_down() || r.powering_down() || r.powering_up() || !NodeIdle(g))
        continue;
      ++usable;
    }
    if (usable - 1 < keep) return true;  // `idx` itself is one of the usable ones
  }
  return false;
}

void Controller::RunPowerProgram(const std::string& program, const std::vector<int>& idxs) {
  std::vector<std::string> names;
  for (int i : idxs) names.push_back(nodes_[i].rec.name());
  std::string hosts = CompressHostlist(names);
  LogInfo("power save: %s %s", program.c_str(), hosts.c_str());
  // argv built before fork: the child only calls async-signal-safe functions.
  std::vector<char*> argv = {const_cast<char*>(program.c_str()), const_cast<char*>(hosts.c_str()),
                             nullptr};
  pid_t pid = ::fork();
  if (pid < 0) {
    LogError("power save: fork failed");
    return;
  }
  if (pid == 0) {
    ::setsid();
    if (::fork() != 0) ::_exit(0);
    for (int fd = 3; fd < 1024; ++fd) ::close(fd);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::waitpid(pid, nullptr, 0);  // the middle child exits at once
}

void Controller::StartSuspend(const std::vector<int>& idxs, int64_t now) {
  if (idxs.empty()) return;
  if (power_.suspend_program.empty()) {
    LogError("power save: SuspendProgram is not set");
    return;
  }
  for (int i : idxs) {
    auto& r = nodes_[i].rec;
    r.set_power_down_requested(false);
    r.set_powering_down(true);
    r.set_powered_down(false);
    r.set_power_change_time(now);
    suspend_starts_.push_back(now);
    PersistNode(nodes_[i]);
  }
  RunPowerProgram(power_.suspend_program, idxs);
}

void Controller::StartResume(const std::vector<int>& idxs, int64_t now) {
  if (idxs.empty()) return;
  for (int i : idxs) {
    auto& r = nodes_[i].rec;
    r.set_powered_down(false);
    r.set_powering_up(true);
    r.set_power_change_time(now);
    resume_starts_.push_back(now);
    resume_queue_.erase(i);
    PersistNode(nodes_[i]);
  }
  if (power_.resume_program.empty()) {
    LogError("power save: ResumeProgram is not set");
    return;
  }
  RunPowerProgram(power_.resume_program, idxs);
}

void Controller::RecoverPowerWaits() {
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].rec.power_down_requested()) power_down_queue_.insert(static_cast<int>(i));
  for (auto& [id, job] : jobs_) {
    if (job.state() != pb::JOB_RUNNING || job.completing()) continue;
    const auto& marks = job.prolog_pending_nodes();
    if (std::find(marks.begin(), marks.end(), kPowerUpMark) != marks.end())
      power_wait_jobs_.insert(id);
  }
}

void Controller::ClearPowerUpMark(pb::JobRecord& job) {
  auto* list = job.mutable_prolog_pending_nodes();
  for (int i = 0; i < list->size(); ++i) {
    if (list->Get(i) != kPowerUpMark) continue;
    list->DeleteSubrange(i, 1);
    return;
  }
}

bool Controller::LaunchWaitsForPower(pb::JobRecord& job) {
  bool wait = false;
  for (const auto& name : job.nodes()) {
    int idx = FindNode(name);
    if (idx < 0) continue;
    auto& r = nodes_[idx].rec;
    if (r.powered_down() || r.powering_down()) {
      resume_queue_.insert(idx);
      wait = true;
    } else if (r.powering_up()) {
      wait = true;
    }
  }
  if (wait) {
    power_wait_jobs_.insert(job.job_id());
    // Shown CONFIGURING (CF) meanwhile, like a job whose prologs have not reported.
    if (std::find(job.prolog_pending_nodes().begin(), job.prolog_pending_nodes().end(),
                  kPowerUpMark) == job.prolog_pending_nodes().end()) {
      job.add_prolog_pending_nodes(kPowerUpMark);
      PersistJob(job);
    }
    LogInfo("job %u waits for its nodes to power up", job.job_id());
  }
  return wait;
}

void Controller::PowerRegistered(int idx) {
  auto& r = nodes_[idx].rec;
  if (!r.powering_up() && !r.powered_down() && !r.powering_down()) return;
  r.set_powering_up(false);
  r.set_powered_down(false);
  r.set_powering_down(false);
  r.set_power_change_time(Now());
  resume_queue_.erase(idx);
  idle_since_.erase(idx);
  PersistNode(nodes_[idx]);
}

Status Controller::PowerUpdate(int idx, const std::string& state) {
  auto& r = nodes_[idx].rec;
  int64_t now = Now();
  if (state == "POWER_UP") {
    if (r.power_down_requested()) {  // not done yet: the request is withdrawn
      r.set_power_down_requested(false);
      power_down_queue_.erase(idx);
      PersistNode(nodes_[idx]);
    }
    if (r.powered_down() || r.powering_down()) StartResume({idx}, now);
    return Status::Ok();
  }
  if (state != "POWER_DOWN" && state != "POWER_DOWN_ASAP" && state != "POWER_DOWN_FORCE")
    return InvalidArgument("Invalid node state specified");
  if (r.powered_down() || r.powering_down()) return Status::Ok();
  if (state == "POWER_DOWN_ASAP") r.set_drain(true);
  if (state == "POWER_DOWN_FORCE") {
    // Slurm cancels the node's jobs; batch jobs that may be requeued are requeued.
    for (auto& [id, job] : jobs_) {
      if (!HoldsNodes(job) || job.completing() ||
          std::find(job.nodes().begin(), job.nodes().end(), r.name()) == job.nodes().end())
        continue;
      bool requeue = job.requeue() && !job.spec().interactive();
      if (power_wait_jobs_.count(id)) {  // never launched: nothing to kill
        power_wait_jobs_.erase(id);
        ReleaseResources(job);
        ClearPowerUpMark(job);
        if (requeue) {
          Requeue(job, false);
        } else {
          FinishJob(job, pb::JOB_NODE_FAIL, now);
          job.set_reason("NodeDown");
        }
      } else if (requeue) {
        LogInfo("job %u requeued: node %s forced to power down", id, r.name().c_str());
        job.set_state_desc("requeue");
        TerminateRunning(job, pb::JOB_RUNNING, "requeue");
      } else {
        TerminateRunning(job, pb::JOB_NODE_FAIL, "PowerDown");
      }
      PersistJob(job);
    }
    ScheduleSoon();
  }
  power_down_queue_.insert(idx);
  r.set_power_down_requested(true);  // "!" until its jobs ended and SuspendProgram ran
  PersistNode(nodes_[idx]);
  return Status::Ok();
}

void Controller::PowerTick(int64_t now) {
  // Jobs waiting for powered-down nodes: launch once all their nodes are back.
  for (auto it = power_wait_jobs_.begin(); it != power_wait_jobs_.end();) {
    pb::JobRecord* job = FindJob(*it);
    if (job && job->completing() && !job->launch_acked()) {
      // Cancelled while its nodes were powering up: nothing was launched to report its end.
      ClearPowerUpMark(*job);
      ReleaseResources(*job);
      FinishJob(*job, job->state(), now);
      PersistJob(*job);
      ScheduleSoon();
    }
    if (!job || job->state() != pb::JOB_RUNNING || job->completing()) {
      it = power_wait_jobs_.erase(it);
      continue;
    }
    bool ready = true;
    for (const auto& name : job->nodes()) {
      int idx = FindNode(name);
      if (idx < 0) continue;
      const Node& n = nodes_[idx];
      if (n.rec.powering_up() || n.rec.powered_down() || !n.stream || n.stream->closed())
        ready = false;
    }
    if (!ready) {
      ++it;
      continue;
    }
    it = power_wait_jobs_.erase(it);
    LogInfo("job %u: nodes powered up, launching", job->job_id());
    ClearPowerUpMark(*job);
    // Slurm counts the run time (and time limit) from when the nodes are ready.
    job->set_start_time(now);
    PersistJob(*job);
    if (!job->launch_acked()) Launch(*job);
  }

  // Nodes to power up, at most ResumeRate a minute.
  if (!resume_queue_.empty()) {
    std::vector<int> batch;
    size_t recent = RecentCount(resume_starts_, now);
    for (int idx : resume_queue_) {
      if (power_.resume_rate > 0 && recent + batch.size() >= size_t(power_.resume_rate)) break;
      batch.push_back(idx);
    }
    StartResume(batch, now);
  }

  // Transitions that time out.
  for (size_t i = 0; i < nodes_.size(); ++i) {
    int idx = static_cast<int>(i);
    auto& r = nodes_[i].rec;
    if (r.powering_down() && now - r.power_change_time() >= power_.suspend_timeout) {
      r.set_powering_down(false);
      r.set_powered_down(true);
      PersistNode(nodes_[i]);
      ScheduleSoon();  // schedulable again (through ResumeProgram)
    } else if (r.powering_up() && now - r.power_change_time() > power_.resume_timeout) {
      r.set_powering_up(false);
      r.set_powered_down(true);
      // Jobs that were waiting for it never started: requeue them (Slurm: requeued).
      for (auto& [id, job] : jobs_) {
        if (!power_wait_jobs_.count(id) ||
            std::find(job.nodes().begin(), job.nodes().end(), r.name()) == job.nodes().end())
          continue;
        ReleaseResources(job);
        ClearPowerUpMark(job);
        Requeue(job, false);
        PersistJob(job);
        power_wait_jobs_.erase(id);
      }
      NodeFailed(idx, "ResumeTimeout reached");
    }
  }

  // Idle nodes to power down: SuspendTime, or an admin's POWER_DOWN once jobs have ended.
  std::vector<int> suspend;
  size_t recent = RecentCount(suspend_starts_, now);
  auto rate_left = [&] {
    return power_.suspend_rate == 0 || recent + suspend.size() < size_t(power_.suspend_rate);
  };
  for (size_t i = 0; i < nodes_.size(); ++i) {
    int idx = static_cast<int>(i);
    const Node& n = nodes_[i];
    const auto& r = n.rec;
    bool up = n.registered && n.stream && !n.stream->closed() && r.base_state() != pb::NODE_DOWN &&
              r.base_state() != pb::NODE_FUTURE && !NodeSilentByDesign(r) && !r.reboot_requested();
    bool idle = up && NodeIdle(idx);
    if (!idle) {
      idle_since_.erase(idx);
      continue;
    }
    auto [it, fresh] = idle_since_.emplace(idx, now);
    if (power_down_queue_.count(idx)) {
      power_down_queue_.erase(idx);
      suspend.push_back(idx);  // an admin's request: no rate, no exclusions
      continue;
    }
    if (power_.suspend_time < 0 || fresh || PowerSaveExcluded(idx) || !rate_left()) continue;
    if (now - it->second < power_.suspend_time) continue;
    if (KeptUpByCount(idx, suspend)) continue;
    suspend.push_back(idx);
  }
  for (int idx : suspend) idle_since_.erase(idx);
  StartSuspend(suspend, now);
}

}  // namespace shoal::ctld
