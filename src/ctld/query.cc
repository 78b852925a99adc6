// Read-only answers: job, node/partition and configuration queries.
#include <algorithm>
#include <set>

#include "common/states.h"
#include "common/units.h"
#include "ctld/controller.h"
#include "ctld/job_projection.h"

namespace shoal::ctld {
namespace {
// Room reserved per job for a job query's answer: squeue's projection takes about 60 bytes a job,
// whole records (scontrol, the REST API) 200 to 400 and grow the buffer once or twice.
constexpr size_t kAnswerBytesPerJob = 128;
// A streamed answer's parts: about 500 squeue rows each, so the client starts on the first
// within a fraction of a millisecond.
constexpr size_t kStreamPartBytes = 32 * 1024;
}  // namespace

void Controller::QueryJobs(const pb::JobQueryRequest& req, const Responder& respond) {
  // Field numbers as in shoal.proto: Response.job_query = 11, JobQueryResponse.jobs = 1 and
  // server_time = 2.
  std::set<uint32_t> uids(req.uids().begin(), req.uids().end());
  std::set<int> states(req.states().begin(), req.states().end());
  std::set<std::string> parts(req.partitions().begin(), req.partitions().end());
  std::set<std::string> names(req.names().begin(), req.names().end());
  std::set<std::string> nodes(req.nodes().begin(), req.nodes().end());
  // squeue names the fields it prints; everyone else gets whole records.
  const JobProjection projection = JobProjection::From(req);
  // The answer is built in one buffer, sized up front: growing a listing of thousands of jobs by
  // doubling would copy it into fresh memory several times, a page fault per 4 KB each time.
  // Pages reserved but never written cost nothing.
  std::string answer;  // JobQueryResponse, behind room for the Response field's tag and length
  constexpr size_t kHead = 1 + 5;
  const bool stream = req.stream() && respond.can_stream();
  const size_t room = stream ? kStreamPartBytes + kStreamPartBytes / 2
                             : (req.job_ids_size() > 0 ? 0 : JobCount() * kAnswerBytesPerJob);
  answer.reserve(kHead + 16 + room);
  answer.resize(kHead);
  // Jobs looked at so far, of how many: a streamed answer's first part estimates the whole
  // answer's length from them, for the client to allocate once (a little over: growing past an
  // estimate costs a copy, reserving too much only address space and the pages it prefaults).
  size_t scanned = 0;
  const size_t candidates = req.job_ids_size() > 0 ? req.job_ids_size() : JobCount();
  size_t matched = 0;
  auto estimate = [&]() -> uint64_t {
    if (scanned == 0) return matched;
    uint64_t whole = matched * std::max(candidates, scanned) / scanned;
    return std::max<uint64_t>(matched, whole + whole / 8);
  };
  // Puts the Response field's head in front of a finished JobQueryResponse. A streamed answer's
  // first part carries the server time and the estimate.
  bool first_part = true;
  auto seal = [&](bool more) {
    if (!stream || first_part) AppendVarintField(answer, 2, static_cast<uint64_t>(Now()));
    if (stream && first_part) AppendVarintField(answer, 4, estimate());
    if (more) AppendVarintField(answer, 3, 1);
    first_part = false;
    std::string head;
    AppendVarint(head, (11u << 3) | 2);
    AppendVarint(head, answer.size() - kHead);
    answer.replace(0, kHead, head);  // in place: the head is never longer than the room
  };
  // After each job added: a streamed answer sends a part once it is long enough.
  auto added = [&] {
    ++matched;
    if (stream && answer.size() >= kStreamPartBytes) {
      seal(true);
      respond.Part(std::move(answer));
      answer.clear();  // a moved-from string: give it room again
      answer.reserve(kHead + 16 + room);
      answer.resize(kHead);
    }
  };
  auto add = [&](const pb::JobRecord& job) {
    if (!uids.empty() && !uids.count(job.spec().uid())) return;
    if (!states.empty() && !states.count(job.state())) return;
    if (!parts.empty()) {
      bool hit = false;
      for (const auto& p : parts) hit |= InPartitionList(job.partition(), p);
      if (!hit) return;
    }
    if (!names.empty() && !names.count(job.spec().name())) return;
    if (!nodes.empty()) {
      bool hit = false;
      for (const auto& n : job.nodes()) hit |= nodes.count(n) > 0;
      if (!hit) return;
    }
    JobShownValues shown;
    // A pending job's StartTime is the planner's expected start, as Slurm shows it.
    if (job.state() == pb::JOB_PENDING && job.expected_start() > 0)
      shown.start_time = job.expected_start();
    // Epilogs still running on its nodes: the job shows COMPLETING until they reported.
    shown.completing = job.epilog_pending_nodes_size() > 0 && job.state() != pb::JOB_PENDING;
    projection.Append(answer, 1, job,
                      req.omit_script() ? kNoPayload : payloads_.Bytes(job.job_id()), shown);
    added();
  };
  // A packed job (pending) from its bytes and overlay; filters its header cannot answer parse it.
  pb::JobRecord scratch;
  std::string overlay;
  auto add_packed = [&](uint32_t id, const PackedJob& packed) {
    if (!uids.empty() && !uids.count(packed.uid)) return;
    if (!states.empty() && !states.count(pb::JOB_PENDING)) return;
    if (!parts.empty() || !names.empty() || !nodes.empty()) {
      scratch.Clear();
      if (Unpack(packed, &scratch)) add(scratch);
      return;
    }
    JobShownValues shown;
    if (packed.expected_start > 0) shown.start_time = packed.expected_start;
    overlay.clear();
    AppendOverlay(packed, overlay);
    shown.overlay = overlay;
    projection.AppendSerialized(answer, 1, packed.record,
                                req.omit_script() ? kNoPayload : payloads_.Bytes(id), shown);
    added();
  };
  // A finished job kept packed, likewise (no overlay: nothing has changed it since).
  auto add_finished = [&](uint32_t id, const PackedFinishedJob& packed) {
    if (!uids.empty() && !uids.count(packed.uid)) return;
    if (!states.empty() && !states.count(packed.state)) return;
    if (!parts.empty() || !names.empty() || !nodes.empty()) {
      scratch.Clear();
      if (UnpackFinished(packed, &scratch)) add(scratch);
      return;
    }
    projection.AppendSerialized(answer, 1, packed.record,
                                req.omit_script() ? kNoPayload : payloads_.Bytes(id), {});
    added();
  };
  auto add_by_id = [&](uint32_t id) {
    if (auto it = jobs_.find(id); it != jobs_.end())
      add(it->second);
    else if (auto p = packed_.find(id); p != packed_.end())
      add_packed(id, p->second);
    else if (auto f = packed_finished_.find(id); f != packed_finished_.end())
      add_finished(id, f->second);
  };
  if (req.job_ids_size() > 0) {
    for (uint32_t id : req.job_ids()) {
      ++scanned;
      auto tasks = array_tasks_.find(id);
      if (tasks != array_tasks_.end()) {
        std::vector<uint32_t> ids = tasks->second;
        std::sort(ids.begin(), ids.end());
        for (uint32_t t : ids) add_by_id(t);
        continue;
      }
      add_by_id(id);
    }
    if (matched == 0 && uids.empty() && states.empty()) {
      pb::Response resp;
      resp.set_rc(static_cast<int32_t>(ErrorCode::kInvalidJobId));
      resp.set_error("Invalid job id specified");
      resp.mutable_job_query()->set_server_time(Now());
      respond(resp);
      return;
    }
  } else {
    // Ordered by job id so output is stable. The id sorts beside the pointer: comparing through
    // the pointers would miss the cache on two records per comparison.
    if (jobs_by_id_stale_) {
      jobs_by_id_.clear();
      jobs_by_id_.reserve(JobCount());
      // Only the ids are read here (a record's state lies on another cache line than its key):
      // finished jobs are skipped below, where the records are fetched ahead.
      for (const auto& [id, job] : jobs_) {
        JobRef ref{id, JobRef::Kind::kParsed, {}};
        ref.job = &job;
        jobs_by_id_.push_back(ref);
      }
      for (const auto& [id, packed] : packed_) {
        JobRef ref{id, JobRef::Kind::kPacked, {}};
        ref.packed = &packed;
        jobs_by_id_.push_back(ref);
      }
      for (const auto& [id, packed] : packed_finished_) {
        JobRef ref{id, JobRef::Kind::kFinished, {}};
        ref.finished = &packed;
        jobs_by_id_.push_back(ref);
      }
      std::sort(jobs_by_id_.begin(), jobs_by_id_.end(),
                [](const JobRef& a, const JobRef& b) { return a.id < b.id; });
      jobs_by_id_stale_ = false;
    }
    const auto& sorted = jobs_by_id_;
    // The records lie scattered in the heap, each over several cache lines: fetch a few jobs
    // ahead (the record, then its spec, whose address is in the record).
    auto fetch = [](const void* object, size_t bytes) {
      for (size_t at = 0; at < bytes; at += 64)
        __builtin_prefetch(static_cast<const char*>(object) + at);
    };
    // A packed job: its header, then its bytes. Finished packed jobs are skipped unless asked
    // for: their headers only.
    using Kind = JobRef::Kind;
    const bool finished_too = req.include_finished();
    constexpr size_t kAhead = 8;
    for (size_t i = 0; i < sorted.size(); ++i) {
      if (i + kAhead < sorted.size()) {
        const JobRef& ahead = sorted[i + kAhead];
        if (ahead.kind == Kind::kPacked)
          fetch(ahead.packed, sizeof(PackedJob));
        else if (ahead.kind == Kind::kParsed)
          fetch(ahead.job, sizeof(pb::JobRecord));
        else if (finished_too)
          fetch(ahead.finished, sizeof(PackedFinishedJob));
      }
      if (i + kAhead / 2 < sorted.size()) {
        const JobRef& next = sorted[i + kAhead / 2];
        if (next.kind == Kind::kPacked)
          fetch(next.packed->record.data(), next.packed->record.size());
        else if (next.kind == Kind::kParsed && next.job->has_spec())
          fetch(&next.job->spec(), sizeof(pb::JobSpec));
        else if (next.kind == Kind::kFinished && finished_too)
          fetch(next.finished->record.data(), next.finished->record.size());
      }
      scanned = i + 1;
      if (sorted[i].kind == Kind::kPacked) {
        add_packed(sorted[i].id, *sorted[i].packed);
        continue;
      }
      if (sorted[i].kind == Kind::kFinished) {
        if (finished_too) add_finished(sorted[i].id, *sorted[i].finished);
        continue;
      }
      const pb::JobRecord& job = *sorted[i].job;
      if (!finished_too && IsFinished(job.state()) && !job.completing()) continue;
      add(job);
    }
  }
  seal(false);
  respond.Raw(std::move(answer));
}

pb::Response Controller::QueryNodes(const pb::NodeQueryRequest& req) const {
  pb::Response resp;
  auto* out = resp.mutable_node_query();
  out->set_server_time(Now());
  std::set<std::string> names(req.names().begin(), req.names().end());
  for (const auto& n : nodes_) {
    if (n.deleted) continue;
    if (!names.empty() && !names.count(n.rec.name())) continue;
    pb::NodeRecord* r = out->add_nodes();
    *r = NodeView(n);
    int index = static_cast<int>(&n - nodes_.data());
    r->set_maint(NodeInMaint(index));
    r->set_reserved(NodeReserved(index));
    for (const auto& p : partitions_)
      if (std::find(p.rec.nodes().begin(), p.rec.nodes().end(), n.rec.name()) !=
          p.rec.nodes().end())
        r->add_partitions(p.rec.name());
  }
  for (const auto& p : partitions_) *out->add_partitions() = p.rec;
  if (!names.empty() && out->nodes_size() == 0) {
    resp.set_rc(static_cast<int32_t>(ErrorCode::kInvalidNodeName));
    resp.set_error("Invalid node name specified");
  }
  return resp;
}

pb::Response Controller::QueryConfig() const {
  pb::Response resp;
  auto* out = resp.mutable_config_query();
  out->set_server_time(Now());
  auto add = [&](const std::string& k, const std::string& v) {
    out->add_keys(k);
    out->add_values(v);
  };
  // Effective values first (defaults applied), then every other configured key as written.
  add("ClusterName", conf_.ClusterName());
  add("SlurmctldHost[0]", conf_.ControllerHost() + (conf_.ControllerAddr() != conf_.ControllerHost()
                                                        ? "(" + conf_.ControllerAddr() + ")"
                                                        : ""));
  add("SlurmctldPort", std::to_string(conf_.ControllerPort()));
  add("SlurmdPort", std::to_string(conf_.SlurmdPort()));
  add("SlurmdTimeout", std::to_string(conf_.SlurmdTimeout()) + " sec");
  add("SlurmdSpoolDir", conf_.SlurmdSpoolDir());
  add("SlurmUser", conf_.SlurmUser() + "(" + std::to_string(slurm_user_uid_) + ")");
  add("StateSaveLocation", conf_.StateSaveLocation());
  add("KillWait", std::to_string(conf_.KillWait()) + " sec");
  add("FirstJobId", std::to_string(conf_.FirstJobId()));
  add("MaxJobCount", std::to_string(conf_.MaxJobCount()));
  add("MinJobAge", std::to_string(conf_.MinJobAge()) + " sec");
  add("AuthType", conf_.Get("AuthType", "auth/shoal"));
  add("SchedulerType", conf_.Get("SchedulerType", "sched/backfill"));
  add("SelectType", conf_.Get("SelectType", "select/cons_tres"));
  add("PriorityType", conf_.Get("PriorityType", "priority/basic"));
  add("ReturnToService", conf_.Get("ReturnToService", "0"));
  add("NEXT_JOB_ID", std::to_string(next_job_id_));
  add("SLURM_CONF", options_.conf_path);
  add("SLURM_VERSION", "shoal-" SHOAL_VERSION);
  std::set<std::string, CaseInsensitiveLess> shown(out->keys().begin(), out->keys().end());
  for (const auto& [k, v] : conf_.options)
    if (!shown.count(k)) add(k, v);
  std::vector<std::pair<std::string, std::string>> kv;
  for (int i = 0; i < out->keys_size(); ++i) kv.emplace_back(out->keys(i), out->values(i));
  std::sort(kv.begin(), kv.end(),
            [](const auto& a, const auto& b) { return CaseInsensitiveLess()(a.first, b.first); });
  out->clear_keys();
  out->clear_values();
  for (auto& [k, v] : kv) add(k, v);
  return resp;
}

}  // namespace shoal::ctld
