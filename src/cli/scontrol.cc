// scontrol (man scontrol): show job|node|partition|step|config|hostnames|hostlist|hostlistsorted,
// ping, update NodeName=/JobId=, hold|uhold|release|requeue|requeuehold|suspend|resume|top,
// version, and an interactive mode reading commands from stdin. Output text comes from
// scontrol_format.cc; this file does the I/O.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli/client.h"
#include "cli/commands.h"
#include "cli/identity.h"
#include "cli/scontrol_format.h"
#include "cli/step_format.h"
#include "common/errors.h"
#include "common/hostlist.h"
#include "common/states.h"
#include "common/units.h"
#include "sched/reservation.h"
#include "sched/reservation_record.h"

#ifndef SHOAL_VERSION_STRING
#define SHOAL_VERSION_STRING "0.1.0"
#endif

namespace shoal::cli {
namespace {

void Out(const std::string& text) { std::fwrite(text.data(), 1, text.size(), stdout); }
void OutLine(const std::string& text) { Out(text + "\n"); }
void Err(const std::string& text) {
  std::string line = text + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}
void ErrPrefixed(const std::string& text) { Err("scontrol: error: " + text); }

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// `word` is `keyword` or an abbreviation of it at least `min_len` long (case-insensitive).
bool Abbrev(std::string_view word, std::string_view keyword, size_t min_len) {
  std::string w = Lower(word);
  if (w.size() < min_len || w.size() > keyword.size()) return false;
  return keyword.substr(0, w.size()) == w;
}

NameLookup SystemNames() { return NameLookup{UserNameOf, GroupNameOf}; }

struct Session {
  ShowOptions show;
  bool all = false;
  bool json = false;
  bool quiet = false;
  int verbose = 0;
  std::optional<ClientContext> client;
  std::string client_error;

  const ClientContext* Client() {
    if (client) return &*client;
    if (!client_error.empty()) return nullptr;
    auto ctx = LoadClientContext();
    if (!ctx) {
      client_error = ctx.error();
      return nullptr;
    }
    client = std::move(*ctx);
    return &*client;
  }
};

// Calls the controller; prints "<prefix>: <error>" (or "scontrol: error: <error>" when prefix is
// empty) on failure.
std::optional<pb::Response> Call(Session& s, const pb::Request& req, const std::string& prefix,
                                 bool raw = false) {
  const ClientContext* ctx = s.Client();
  if (!ctx) {
    ErrPrefixed(s.client_error);
    return std::nullopt;
  }
  auto resp = raw ? CallControllerRaw(*ctx, req) : CallController(*ctx, req);
  if (!resp) {
    if (prefix.empty()) {
      ErrPrefixed(resp.error());
    } else {
      Err(prefix + ": " + resp.error());
    }
    return std::nullopt;
  }
  return std::move(*resp);
}

// ---- show -------------------------------------------------------------------------------------

bool ParseUint32(std::string_view s, uint32_t* out) {
  if (s.empty() || s.size() > 10) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v == 0 || v > 0xffffffffull) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

std::optional<std::vector<pb::JobRecord>> QueryJobs(Session& s, pb::JobQueryRequest q,
                                                    int64_t* server_time) {
  q.set_include_finished(true);
  q.set_omit_script(true);
  pb::Request req;
  *req.mutable_job_query() = std::move(q);
  auto resp = Call(s, req, "slurm_load_jobs error");
  if (!resp) return std::nullopt;
  *server_time = resp->job_query().server_time();
  return std::vector<pb::JobRecord>(resp->job_query().jobs().begin(),
                                    resp->job_query().jobs().end());
}

int ShowJob(Session& s, const std::optional<std::string>& id_arg) {
  int64_t now = 0;
  std::vector<pb::JobRecord> jobs;
  if (!id_arg) {
    auto all = QueryJobs(s, {}, &now);
    if (!all) return 1;
    jobs = std::move(*all);
    if (jobs.empty()) {
      if (!s.json) OutLine("No jobs in the system");
      if (s.json) Out(FormatJobsJson({}, now, SystemNames()));
      return 0;
    }
  } else {
    // "123", or "123_4" for one array task.
    std::string id = *id_arg;
    std::optional<uint32_t> task;
    if (size_t us = id.find('_'); us != std::string::npos) {
      uint32_t t = 0;
      std::string rest = id.substr(us + 1);
      if (rest != "0" && !ParseUint32(rest, &t)) {
        Err("scontrol_print_job error: Invalid job id specified");
        return 1;
      }
      task = t;
      id = id.substr(0, us);
    }
    uint32_t job_id = 0;
    if (!ParseUint32(id, &job_id)) {
      Err("scontrol_print_job error: Invalid job id specified");
      return 1;
    }
    pb::JobQueryRequest q;
    q.add_job_ids(job_id);
    auto found = QueryJobs(s, q, &now);
    if (!found) return 1;
    bool array_involved = task.has_value() || found->empty() ||
                          std::any_of(found->begin(), found->end(), [&](const pb::JobRecord& j) {
                            return j.array_job_id() == job_id;
                          });
    if (array_involved) {
      // Array tasks are found by their array job id: look at the whole queue.
      auto all = QueryJobs(s, {}, &now);
      if (!all) return 1;
      for (auto& j : *all) {
        bool match = task ? (j.array_job_id() == job_id && j.array_task_id() == *task)
                          : (j.job_id() == job_id || j.array_job_id() == job_id);
        if (match) jobs.push_back(std::move(j));
      }
    } else {
      jobs = std::move(*found);
    }
    if (jobs.empty()) {
      Err("slurm_load_jobs error: Invalid job id specified");
      return 1;
    }
  }
  if (now == 0) now = std::time(nullptr);
  NameLookup names = SystemNames();
  if (s.json) {
    Out(FormatJobsJson(jobs, now, names));
    return 0;
  }
  for (const auto& j : jobs) Out(FormatJob(j, now, s.show, names));
  return 0;
}

// scontrol show step [job[.step]]: "123", "123.4", "123.batch", "70_1.0". Messages as Slurm's:
// "No job steps in the system" (exit 0), "Job step 123.4 not found" (stdout, exit 1),
// "slurm_get_job_steps error: Invalid job id specified" (stderr, exit 1) for a job it does not
// know.
int ShowStep(Session& s, const std::optional<std::string>& id_arg) {
  const char* kInvalidJob = "slurm_get_job_steps error: Invalid job id specified";
  std::optional<StepIdSpec> spec;
  if (id_arg) {
    auto parsed = ParseStepId(*id_arg);
    if (!parsed.ok()) {
      Err(kInvalidJob);
      return 1;
    }
    spec = *parsed;
  }
  pb::Request req;
  pb::StepQueryRequest* q = req.mutable_step_query();
  if (spec && !spec->array_task) {  // array tasks are found by their array job id: ask for all
    q->set_job_id(spec->job_id);
    if (spec->step_id) {
      q->set_step_id(*spec->step_id);
      q->set_has_step_id(true);
    }
  }
  auto resp = Call(s, req, "slurm_get_job_steps error");
  if (!resp) return 1;
  const pb::StepQueryResponse& sq = resp->step_query();
  std::vector<StepRef> steps;
  for (const StepRef& r : CollectSteps(sq))
    if (!spec || StepMatchesSpec(*r.step, r.job, *spec)) steps.push_back(r);
  if (steps.empty()) {
    if (!spec) {
      OutLine("No job steps in the system");
      return 0;
    }
    // The answer names only jobs with running steps: ask whether the job exists at all.
    pb::Request jreq;
    pb::JobQueryRequest* jq = jreq.mutable_job_query();
    jq->set_include_finished(true);
    jq->set_omit_script(true);
    if (!spec->array_task) jq->add_job_ids(spec->job_id);
    auto jresp = Call(s, jreq, "slurm_get_job_steps error");
    if (!jresp) return 1;
    const auto& jobs = jresp->job_query().jobs();
    bool job_known = std::any_of(jobs.begin(), jobs.end(), [&](const pb::JobRecord& j) {
      if (spec->array_task)
        return j.array_job_id() == spec->job_id && j.array_task_id() == *spec->array_task;
      return j.job_id() == spec->job_id;
    });
    if (!job_known) {
      Err(kInvalidJob);
      return 1;
    }
    OutLine(StepNotFoundMessage(*spec));
    return 1;
  }
  SortStepsForScontrol(steps);
  std::string out;
  for (const StepRef& r : steps) out += FormatStepRecord(*r.step, r.job, s.show.one_liner);
  Out(out);
  return 0;
}

std::optional<pb::NodeQueryResponse> QueryNodes(Session& s, const std::vector<std::string>& names,
                                                const std::string& error_prefix) {
  pb::Request req;
  for (const auto& n : names) req.mutable_node_query()->add_names(n);
  if (names.empty()) req.mutable_node_query();
  auto resp = Call(s, req, error_prefix);
  if (!resp) return std::nullopt;
  return resp->node_query();
}

int ShowNode(Session& s, const std::optional<std::string>& name) {
  std::vector<std::string> wanted;
  if (name) {
    auto expanded = ExpandHostlist(*name);
    if (!expanded.ok()) {
      Err("Node " + *name + " not found");
      return 1;
    }
    wanted = std::move(*expanded);
  }
  pb::Request req;
  auto* q = req.mutable_node_query();
  for (const auto& n : wanted) q->add_names(n);
  auto raw = Call(s, req, "slurm_load_node error", /*raw=*/true);
  if (!raw) return 1;
  if (raw->rc() != 0) {
    // Slurm words an unknown name as "Node <name> not found".
    if (name && raw->rc() == static_cast<int32_t>(ErrorCode::kInvalidNodeName)) {
      Err("Node " + *name + " not found");
    } else {
      Err("slurm_load_node error: " + raw->error());
    }
    return 1;
  }
  const pb::NodeQueryResponse* resp = &raw->node_query();
  std::vector<pb::NodeRecord> nodes;
  std::set<std::string> want(wanted.begin(), wanted.end());
  for (const auto& n : resp->nodes()) {
    if (want.empty() || want.count(n.name())) nodes.push_back(n);
  }
  if (nodes.empty()) {
    if (name) {
      Err("Node " + *name + " not found");
      return 1;
    }
    if (s.json) {
      Out(FormatNodesJson({}, SystemNames()));
    } else {
      OutLine("No nodes in the system");
    }
    return 0;
  }
  int64_t now = resp->server_time() ? resp->server_time() : std::time(nullptr);
  NameLookup names = SystemNames();
  if (s.json) {
    Out(FormatNodesJson(nodes, names));
    return 0;
  }
  for (const auto& n : nodes) Out(FormatNode(n, now, s.show, names));
  return 0;
}

int ShowPartition(Session& s, const std::optional<std::string>& name) {
  auto resp = QueryNodes(s, {}, "slurm_load_partitions error");
  if (!resp) return 1;
  std::vector<pb::NodeRecord> nodes(resp->nodes().begin(), resp->nodes().end());
  int shown = 0;
  for (const auto& p : resp->partitions()) {
    if (name) {
      if (p.name() != *name) continue;
    } else if (p.hidden() && !s.all) {
      continue;
    }
    Out(FormatPartition(p, nodes, s.show));
    ++shown;
  }
  if (shown == 0) {
    if (name) {
      Err("Partition " + *name + " not found");
      return 1;
    }
    OutLine("No partitions in the system");
  }
  return 0;
}

// scontrol show topology [name]: the controller's topology.conf, one line per switch (block).
// A switch (block) name shows that one; node names show the switches holding all of them.
// As in Slurm, "nothing to show" is an error message but exit code 0.
int ShowTopology(Session& s, const std::optional<std::string>& name) {
  pb::Request req;
  req.mutable_topology_query();
  auto resp = Call(s, req, "slurm_load_topo error");
  if (!resp) return 1;
  const auto& topo = resp->topology_query();
  if (topo.switches_size() == 0 && topo.blocks_size() == 0) {
    ErrPrefixed(name ? "Topology information contains no switch or node named " + *name
                     : std::string("No topology information available"));
    return 0;
  }
  std::vector<std::string> wanted;  // node names to match, when `name` is not a switch/block
  bool by_unit = false;
  if (name) {
    for (const auto& sw : topo.switches()) by_unit |= sw.name() == *name;
    for (const auto& b : topo.blocks()) by_unit |= b.name() == *name;
    if (!by_unit) {
      auto names = ExpandHostlist(*name);
      if (names) wanted = std::move(*names);
    }
  }
  auto selected = [&](const std::string& unit, const std::string& nodes) {
    if (!name) return true;
    if (by_unit) return unit == *name;
    if (wanted.empty()) return false;
    auto have = ExpandHostlist(nodes);
    if (!have) return false;
    std::set<std::string> set(have->begin(), have->end());
    return std::all_of(wanted.begin(), wanted.end(),
                       [&](const std::string& n) { return set.count(n) > 0; });
  };
  int shown = 0;
  for (const auto& sw : topo.switches()) {
    if (!selected(sw.name(), sw.nodes())) continue;
    std::string line = "SwitchName=" + sw.name() + " Level=" + std::to_string(sw.level()) +
                       " LinkSpeed=" + (sw.link_speed().empty() ? "1" : sw.link_speed());
    if (!sw.nodes().empty()) line += " Nodes=" + sw.nodes();
    if (!sw.switches().empty()) line += " Switches=" + sw.switches();
    OutLine(line);
    ++shown;
  }
  uint32_t base = topo.block_sizes_size() ? topo.block_sizes(0) : 0;
  for (int i = 0; i < topo.blocks_size(); ++i) {
    const auto& b = topo.blocks(i);
    if (!selected(b.name(), b.nodes())) continue;
    OutLine("BlockName=" + b.name() + " BlockIndex=" + std::to_string(i) + " Nodes=" + b.nodes() +
            " BlockSize=" + std::to_string(base));
    ++shown;
  }
  if (shown == 0 && name)
    ErrPrefixed("Topology information contains no switch or node named " + *name);
  return 0;
}

int ShowConfig(Session& s) {
  pb::Request req;
  req.mutable_config_query();
  auto resp = Call(s, req, "slurm_load_ctl_conf error");
  if (!resp) return 1;
  pb::ConfigQueryResponse conf = resp->config_query();
  if (conf.server_time() == 0) conf.set_server_time(std::time(nullptr));
  Out(FormatConfig(conf));
  const ClientContext* ctx = s.Client();
  Out("\nSlurmctld(primary) at " + (ctx ? ctx->conf.ControllerHost() : std::string()) + " is UP\n");
  return 0;
}

// A hostlist argument, or the names in a file when it starts with '/'.
std::optional<std::string> HostlistArg(const std::string& arg) {
  if (arg.empty() || arg[0] != '/') return arg;
  std::ifstream in(arg);
  if (!in) {
    ErrPrefixed("Can not open " + arg);
    return std::nullopt;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  std::string out;
  for (char c : text) {
    if (c == '\n' || c == '\r' || c == ' ' || c == '\t') c = ',';
    if (c == ',' && (out.empty() || out.back() == ',')) continue;
    out += c;
  }
  while (!out.empty() && out.back() == ',') out.pop_back();
  return out;
}

int ShowHostnames(const std::optional<std::string>& arg) {
  std::string expr;
  if (arg) {
    auto a = HostlistArg(*arg);
    if (!a) return 1;
    expr = *a;
  } else if (const char* env = std::getenv("SLURM_JOB_NODELIST")) {
    expr = env;
  } else if (const char* env2 = std::getenv("SLURM_NODELIST")) {
    expr = env2;
  }
  if (expr.empty()) {
    ErrPrefixed("host list is empty");
    return 1;
  }
  auto hosts = ExpandHostlist(expr);
  if (!hosts.ok()) {
    Err("Invalid hostlist: " + expr);
    return 1;
  }
  std::string out;
  for (const auto& h : *hosts) out += h + "\n";
  Out(out);
  return 0;
}

int ShowHostlist(const std::optional<std::string>& arg, bool sorted) {
  if (!arg) {
    Err("invalid encode argument");
    return 1;
  }
  auto a = HostlistArg(*arg);
  if (!a) return 1;
  auto hosts = ExpandHostlist(*a);
  if (!hosts.ok()) {
    Err("Invalid hostlist: " + *a);
    return 1;
  }
  OutLine(sorted ? HostlistSorted(*hosts) : HostlistInOrder(*hosts));
  return 0;
}

// ---- reservations ----------------------------------------------------------------------------

int ShowReservation(Session& s, const std::optional<std::string>& name) {
  pb::Request req;
  req.mutable_reservation_query()->set_name(name.value_or(""));
  auto resp = Call(s, req, "slurm_load_reservations error");
  if (!resp) return 1;
  const auto& data = resp->reservation_query();
  int64_t now = data.server_time() ? data.server_time() : std::time(nullptr);
  if (data.reservations_size() == 0) {
    // Slurm prints both of these on stdout.
    if (name) {
      if (!s.quiet) OutLine("Reservation " + *name + " not found");
      return 1;
    }
    if (!s.quiet) OutLine("No reservations in the system");
    return 0;
  }
  std::string out;
  for (const auto& rec : data.reservations()) {
    std::string block = sched::FormatReservation(sched::FromRecord(rec), now);
    if (s.show.one_liner) {
      // One record per line: the continuation lines joined with single spaces.
      std::string joined;
      for (size_t i = 0; i < block.size(); ++i) {
        if (block[i] == '\n' && i + 1 < block.size()) {
          joined += ' ';
          while (i + 1 < block.size() && block[i + 1] == ' ') ++i;
        } else {
          joined += block[i];
        }
      }
      block = joined;
    } else {
      block += "\n";  // a blank line after each multi-line record
    }
    out += block;
  }
  Out(out);
  return 0;
}

// Sends a create/update/delete; returns the response or prints "<prefix>: <error>".
std::optional<pb::Response> CallReservation(Session& s, pb::ReservationRequest::Action action,
                                            const std::vector<std::string>& args,
                                            const std::string& name, const std::string& prefix) {
  pb::Request req;
  auto* r = req.mutable_reservation();
  r->set_action(action);
  for (const auto& a : args) r->add_args(a);
  r->set_name(name);
  return Call(s, req, prefix);
}

// scontrol create reservation <SPECIFICATIONS>
int CreateReservation(Session& s, const std::vector<std::string>& args) {
  // Parsed here for scontrol's own messages; the controller parses the same words again.
  auto parsed = sched::ParseReservationArgs(args, /*update=*/false, std::time(nullptr));
  if (!parsed) {
    ErrPrefixed(parsed.error());
    return 1;
  }
  auto resp = CallReservation(s, pb::ReservationRequest::CREATE, args, "",
                              "Error creating the reservation");
  if (!resp) return 1;
  OutLine("Reservation created: " + resp->reservation().name());
  return 0;
}

// scontrol update ReservationName=<name> <SPECIFICATIONS>
int UpdateReservation(Session& s, const std::vector<std::string>& args) {
  auto parsed = sched::ParseReservationArgs(args, /*update=*/true, std::time(nullptr));
  if (!parsed) {
    ErrPrefixed(parsed.error());
    return 1;
  }
  auto resp = CallReservation(s, pb::ReservationRequest::UPDATE, args, "",
                              "Error updating the reservation");
  if (!resp) return 1;
  OutLine("Reservation updated.");
  return 0;
}

// scontrol create NodeName=... (a dynamic node; the controller parses the line as slurm.conf).
int CreateNode(Session& s, const std::vector<std::string>& args) {
  std::string spec;
  for (const auto& a : args) {
    if (a.find('=') == std::string::npos) continue;  // "create node NodeName=x": the entity word
    if (!spec.empty()) spec += ' ';
    // Values with blanks were one shell word: quote them again for the conf line parser.
    KeyValue kv = SplitKeyValue(a);
    if (kv.value.find(' ') != std::string::npos && kv.value.front() != '"')
      spec += kv.key + "=\"" + kv.value + "\"";
    else
      spec += a;
  }
  pb::Request req;
  req.mutable_create_node()->set_spec(spec);
  auto resp = Call(s, req, "Error creating node(s)");
  return resp ? 0 : 1;
}

// scontrol create <ENTITY> <SPECIFICATIONS>: reservations and dynamic nodes.
int Create(Session& s, const std::vector<std::string>& args) {
  if (args.empty()) {
    Err("too few arguments for keyword:create");
    return 1;
  }
  // As scontrol does: the first word naming an entity (with or without "=value") decides.
  for (const auto& a : args) {
    std::string key = Lower(SplitKeyValue(a).key);
    if (Abbrev(key, "nodename", 3)) return CreateNode(s, args);
    if (Abbrev(key, "partitionname", 3)) {
      ErrPrefixed("Create of " + SplitKeyValue(a).key + " is not supported");
      return 1;
    }
    if (Abbrev(key, "reservationname", 3)) {
      // "create reservation ..." names the entity with a bare word: not a specification.
      std::vector<std::string> spec;
      for (const auto& w : args)
        if (&w != &a || w.find('=') != std::string::npos) spec.push_back(w);
      return CreateReservation(s, spec);
    }
  }
  ErrPrefixed("Invalid creation entity: " + args[0]);
  return 1;
}

// scontrol delete ReservationName=<name> | delete reservation <name> | delete NodeName=<hostlist>
int Delete(Session& s, const std::vector<std::string>& args) {
  if (args.empty()) {
    Err("too few arguments for keyword:delete");
    return 1;
  }
  std::string tag, value;
  if (args.size() == 1 && args[0].find('=') != std::string::npos) {
    KeyValue kv = SplitKeyValue(args[0]);
    tag = kv.key;
    value = kv.value;
  } else if (args.size() == 2 && args[0].find('=') == std::string::npos) {
    tag = args[0];
    value = args[1];
  } else {
    ErrPrefixed("Proper format is 'delete <ENTITY>=<ID>' or 'delete <ENTITY> <ID>'");
    return 1;
  }
  if (Abbrev(tag, "nodename", 3)) {
    pb::Request req;
    req.mutable_delete_node()->set_node_names(value);
    auto resp = Call(s, req, "Error deleting node(s)");
    return resp ? 0 : 1;
  }
  if (!Abbrev(tag, "reservationname", 3)) {
    if (Abbrev(tag, "partitionname", 3)) {
      ErrPrefixed("Delete of " + tag + " is not supported");
    } else {
      Err("Invalid deletion entity: " + args[0]);
    }
    return 1;
  }
  auto resp = CallReservation(s, pb::ReservationRequest::DELETE, {}, value,
                              "delete_reservation " + args[0]);
  return resp ? 0 : 1;
}

int Show(Session& s, const std::vector<std::string>& args) {
  if (args.empty()) {
    Err("too few arguments for keyword:show");
    return 1;
  }
  if (args.size() > 2) {
    Err("too many arguments for keyword:show");
    return 1;
  }
  std::string entity = Lower(args[0]);
  std::optional<std::string> id;
  if (args.size() > 1) id = args[1];
  if (entity == "hostnames" || entity == "hostname") return ShowHostnames(id);
  if (entity == "hostlist") return ShowHostlist(id, false);
  if (entity == "hostlistsorted") return ShowHostlist(id, true);
  if (Abbrev(entity, "jobs", 1)) return ShowJob(s, id);
  if (Abbrev(entity, "nodes", 1)) return ShowNode(s, id);
  if (Abbrev(entity, "partitions", 1)) return ShowPartition(s, id);
  if (Abbrev(entity, "steps", 2)) return ShowStep(s, id);
  if (Abbrev(entity, "configuration", 1)) return ShowConfig(s);
  if (Abbrev(entity, "topology", 1)) return ShowTopology(s, id);
  if (Abbrev(entity, "reservations", 1) || Abbrev(entity, "reservationname", 1))
    return ShowReservation(s, id);
  if (KeyValue kv = SplitKeyValue(args[0]);
      kv.has_value && !id && Abbrev(kv.key, "reservationname", 1))
    return ShowReservation(s, kv.value);
  Err("invalid entity:" + args[0] + " for keyword:show ");
  return 1;
}

// ---- ping -------------------------------------------------------------------------------------

int Ping(Session& s) {
  const ClientContext* ctx = s.Client();
  if (!ctx) {
    ErrPrefixed(s.client_error);
    return 1;
  }
  pb::Request req;
  req.mutable_ping();
  auto resp = CallController(*ctx, req);
  std::string host = ctx->conf.ControllerHost();
  if (!resp) {
    OutLine("Slurmctld(primary) at " + host + " is DOWN");
    return 1;
  }
  OutLine("Slurmctld(primary) at " + host + " is UP");
  return 0;
}

// scontrol token [lifespan=<seconds>] [username=<name>]: a JWT signed by the controller.
int Token(Session& s, const std::vector<std::string>& args) {
  pb::Request req;
  auto* t = req.mutable_token();
  for (const auto& a : args) {
    std::string lower = Lower(a);
    if (lower.rfind("lifespan=", 0) == 0) {
      std::string v = a.substr(9);
      char* end = nullptr;
      long long n = std::strtoll(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || n <= 0) {
        Err("Invalid lifespan: `" + v + "`");
        return 1;
      }
      t->set_lifespan(n);
    } else if (lower.rfind("username=", 0) == 0) {
      t->set_username(a.substr(9));
    } else {
      Err("Invalid option: `" + a + "`");
      return 1;
    }
  }
  const ClientContext* ctx = s.Client();
  if (!ctx) {
    ErrPrefixed(s.client_error);
    return 1;
  }
  auto resp = CallController(*ctx, req);
  if (!resp) {
    // Slurm's two lines: the library's reason, then scontrol's own.
    bool unreachable = resp.status().code() == ErrorCode::kUnavailable;
    ErrPrefixed(std::string("slurm_fetch_token: ") +
                (unreachable ? "error receiving response: " : "error with request: ") +
                resp.error());
    Err("Error fetching token");
    return 1;
  }
  OutLine("SLURM_JWT=" + resp->token().token());
  return 0;
}

// scontrol reconfigure: the controller rereads slurm.conf and pushes it to the nodes.
int Reconfigure(Session& s) {
  const ClientContext* ctx = s.Client();
  if (!ctx) {
    ErrPrefixed(s.client_error);
    return 1;
  }
  pb::Request req;
  req.mutable_reconfigure();
  auto resp = CallController(*ctx, req);
  if (!resp) {
    Err("slurm_reconfigure error: " + resp.error());
    return 1;
  }
  return 0;
}

// ---- job control ------------------------------------------------------------------------------

// Prints per-job failures as "<message> for job <id>"; returns 1 when any failed.
int ReportJobResults(const google::protobuf::RepeatedPtrField<pb::JobResult>& results) {
  int rc = 0;
  for (const auto& r : results) {
    if (r.rc() == 0) continue;
    Err(r.error() + " for job " + r.job_id());
    rc = 1;
  }
  return rc;
}

int JobControl(Session& s, const std::string& keyword, pb::JobControlRequest::Action action,
               const std::vector<std::string>& args, const std::string& error_prefix) {
  if (args.empty()) {
    Err("too few arguments for keyword:" + keyword);
    return 1;
  }
  auto ids = ParseJobIdList(args);
  if (!ids.ok()) {
    Err(ids.error());
    return 1;
  }
  pb::Request req;
  auto* jc = req.mutable_job_control();
  jc->set_action(action);
  for (const auto& id : *ids) jc->add_job_ids(id);
  auto resp = Call(s, req, error_prefix, /*raw=*/true);
  if (!resp) return 1;
  int rc = ReportJobResults(resp->job_control().results());
  if (resp->rc() != 0 && rc == 0) {
    Err(error_prefix + ": " + resp->error());
    rc = 1;
  }
  return rc;
}

// ---- update -----------------------------------------------------------------------------------

int UpdateJob(Session& s, const std::vector<std::string>& args) {
  auto up = ParseJobUpdate(args);
  if (!up.ok()) {
    Err(up.error());
    return 1;
  }
  std::vector<std::string> ids = up->job_ids;
  if (up->by_name) {
    pb::JobQueryRequest q;
    q.add_names(*up->by_name);
    int64_t now = 0;
    auto jobs = QueryJobs(s, q, &now);
    if (!jobs) return 1;
    for (const auto& j : *jobs) {
      if (j.spec().name() == *up->by_name && !IsFinished(j.state()))
        ids.push_back(std::to_string(j.job_id()));
    }
    if (ids.empty()) {
      Err("slurm_update error: Invalid job id specified");
      return 1;
    }
  }
  pb::Request req;
  auto* u = req.mutable_update_job();
  for (const auto& id : ids) u->add_job_ids(id);
  for (const auto& [k, v] : up->fields) (*u->mutable_fields())[k] = v;
  auto resp = Call(s, req, "slurm_update error", /*raw=*/true);
  if (!resp) return 1;
  int rc = ReportJobResults(resp->job_control().results());
  if (resp->rc() != 0 && rc == 0) {
    Err("slurm_update error: " + resp->error());
    rc = 1;
  }
  return rc;
}

int UpdateNode(Session& s, const std::vector<std::string>& args) {
  auto up = ParseNodeUpdate(args);
  if (!up.ok()) {
    Err(up.error());
    return 1;
  }
  pb::Request req;
  auto* u = req.mutable_update_node();
  u->set_node_names(up->node_names);
  u->set_state(up->state);
  u->set_reason(up->reason);
  for (const auto& [k, v] : up->fields) (*u->mutable_fields())[k] = v;
  auto resp = Call(s, req, "slurm_update error");
  return resp ? 0 : 1;
}

int Update(Session& s, const std::vector<std::string>& args) {
  if (args.empty()) {
    Err("too few arguments for keyword:update");
    return 1;
  }
  for (const auto& w : args) {
    std::string key = Lower(SplitKeyValue(w).key);
    if (key == "nodename") return UpdateNode(s, args);
    if (key == "jobid" || key == "jobname") return UpdateJob(s, args);
    if (Abbrev(key, "reservationname", 3)) {
      // A job update may name a reservation too (JobId=5 Reservation=x): the job wins.
      bool job = std::any_of(args.begin(), args.end(), [](const std::string& a) {
        std::string k = Lower(SplitKeyValue(a).key);
        return k == "jobid" || k == "jobname";
      });
      if (!job) return UpdateReservation(s, args);
    }
    if (key == "partitionname" || key == "slurmctlddebug" || key == "stepid" ||
        key == "frontendname") {
      ErrPrefixed("Update of " + SplitKeyValue(w).key + " is not supported");
      return 1;
    }
  }
  Err("No valid entity in update command");
  Err("Input line must include \"NodeName\", \"PartitionName\", \"Reservation\", \"JobId\", or "
      "\"SlurmctldDebug\"");
  return 1;
}

// ---- reboot -----------------------------------------------------------------------------------

// scontrol reboot [ASAP] [nextstate=RESUME|DOWN] [reason=<reason>] {ALL|<NodeList>}
int Reboot(Session& s, const std::vector<std::string>& args) {
  pb::Request req;
  auto* r = req.mutable_reboot_nodes();
  std::string nodes;
  for (const auto& a : args) {
    auto kv = SplitKeyValue(a);
    std::string key = Lower(kv.key);
    if (Lower(a) == "asap") {
      r->set_asap(true);
    } else if (a.find('=') != std::string::npos && key == "nextstate") {
      std::string v = kv.value;
      std::transform(v.begin(), v.end(), v.begin(), ::toupper);
      if (v != "RESUME" && v != "DOWN") {
        Err("Invalid state: " + kv.value);
        Err("Valid states: DOWN, RESUME");
        return 1;
      }
      r->set_next_state(v);
    } else if (a.find('=') != std::string::npos && key == "reason") {
      if (kv.value.empty()) {
        Err("missing reason");
        return 1;
      }
      r->set_reason(kv.value);
    } else if (nodes.empty()) {
      nodes = a;
    } else {
      Err("too many arguments for keyword:reboot");
      return 1;
    }
  }
  if (nodes.empty()) {
    Err("Missing node list. Specify ALL|<NodeList>");
    return 1;
  }
  r->set_node_names(nodes);
  const ClientContext* ctx = s.Client();
  if (ctx && ctx->conf.Get("RebootProgram").empty()) {
    ErrPrefixed("RebootProgram isn't defined");
    Err("scontrol_reboot_nodes error: Unspecified error");
    return 1;
  }
  return Call(s, req, "scontrol_reboot_nodes error") ? 0 : 1;
}

// scontrol cancel_reboot <NodeList>
int CancelReboot(Session& s, const std::vector<std::string>& args) {
  if (args.empty()) {
    Err("missing argument for keyword:cancel_reboot");
    return 1;
  }
  if (args.size() > 1) {
    Err("too many arguments for keyword:cancel_reboot");
    return 1;
  }
  pb::Request req;
  req.mutable_reboot_nodes()->set_node_names(args[0]);
  req.mutable_reboot_nodes()->set_cancel(true);
  return Call(s, req, "slurm_update error") ? 0 : 1;
}

// ---- dispatch ---------------------------------------------------------------------------------

std::string Help() {
  return "scontrol [<OPTION>] [<COMMAND>]\n"
         "    Valid <OPTION> values are:\n"
         "     -a, --all      Equivalent to \"all\" command\n"
         "     -d, --details  Equivalent to \"details\" command\n"
         "     -h, --help     Equivalent to \"help\" command\n"
         "     --json         Produce JSON output (show job, show node)\n"
         "     -o, --oneliner Equivalent to \"oneliner\" command\n"
         "     -Q, --quiet    Equivalent to \"quiet\" command\n"
         "     -v, --verbose  Equivalent to \"verbose\" command\n"
         "     -V, --version  Equivalent to \"version\" command\n"
         "\n"
         "  <keyword> may be omitted from the execute line and scontrol will execute\n"
         "  in interactive mode. It will process commands as entered until explicitly\n"
         "  terminated.\n"
         "\n"
         "    Valid <COMMAND> values are:\n"
         "     all                      display information about all partitions,\n"
         "                              including hidden partitions.\n"
         "     create <SPECIFICATIONS>  create a new reservation.\n"
         "     delete <SPECIFICATIONS>  delete the specified reservation.\n"
         "     details                  evokes additional details from the \"show\"\n"
         "                              command\n"
         "     exit                     terminate scontrol\n"
         "     help                     print this description of use.\n"
         "     hold <job_list>          prevent specified job from starting.\n"
         "     oneliner                 report output one record per line.\n"
         "     ping                     print status of slurmctld daemons.\n"
         "     quiet                    print no messages other than error messages.\n"
         "     quit                     terminate this command.\n"
         "     reboot [ASAP] [nextstate=] [reason=] <NodeList>  reboot nodes when idle\n"
         "     reconfigure              re-read configuration files.\n"
         "     cancel_reboot <NodeList>  cancel pending reboots\n"
         "     release <job_list>       permit specified job to start (see hold)\n"
         "     requeue <job_id>         re-queue a batch job\n"
         "     requeuehold <job_id>     re-queue and hold a batch job\n"
         "     resume <jobid_list>      resume previously suspended job (see suspend)\n"
         "     show <ENTITY> [<ID>]     display state of identified entity, default\n"
         "                              is all records.\n"
         "     suspend <job_list>       suspend specified job (see resume)\n"
         "     token [lifespan=] [username=] fetch an auth token\n"
         "     top <job_list>           Put specified job first in queue for user\n"
         "     uhold <jobid_list>       place user hold on specified job (see hold)\n"
         "     update <SPECIFICATIONS>  update job, node or reservation\n"
         "     verbose                  enable detailed logging.\n"
         "     version                  display tool version number.\n"
         "\n"
         "  <ENTITY> may be \"config\", \"hostlist\", \"hostlistsorted\", \"hostnames\",\n"
         "       \"job\", \"node\", \"partition\", \"reservation\", \"step\" or \"topology\"\n";
}

int Dispatch(Session& s, const std::vector<std::string>& words, bool* quit) {
  if (words.empty()) return 0;
  std::string cmd = Lower(words[0]);
  std::vector<std::string> args(words.begin() + 1, words.end());
  auto no_args = [&](const char* kw) {
    if (!args.empty()) {
      Err(std::string("too many arguments for keyword:") + kw);
      return false;
    }
    return true;
  };
  using A = pb::JobControlRequest;
  if (cmd == "exit" || cmd == "quit") {
    *quit = true;
    return 0;
  }
  if (Abbrev(cmd, "show", 3)) return Show(s, args);
  if (cmd == "ping") return no_args("ping") ? Ping(s) : 1;
  if (Abbrev(cmd, "reconfigure", 3)) return no_args("reconfigure") ? Reconfigure(s) : 1;
  if (cmd == "token") return Token(s, args);
  if (Abbrev(cmd, "update", 3)) return Update(s, args);
  if (Abbrev(cmd, "reboot_nodes", 3)) return Reboot(s, args);
  if (Abbrev(cmd, "cancel_reboot", 3)) return CancelReboot(s, args);
  if (Abbrev(cmd, "create", 3)) return Create(s, args);
  if (Abbrev(cmd, "delete", 3)) return Delete(s, args);
  if (cmd == "hold") return JobControl(s, "hold", A::HOLD, args, "slurm_update error");
  if (cmd == "uhold" || cmd == "holdu") {
    return JobControl(s, cmd, A::UHOLD, args, "slurm_update error");
  }
  if (cmd == "release") return JobControl(s, "release", A::RELEASE, args, "slurm_update error");
  if (cmd == "requeue") return JobControl(s, "requeue", A::REQUEUE, args, "slurm_requeue error");
  if (cmd == "requeuehold") {
    return JobControl(s, "requeuehold", A::REQUEUE_HOLD, args, "slurm_requeue error");
  }
  if (cmd == "suspend") return JobControl(s, "suspend", A::SUSPEND, args, "slurm_suspend error");
  if (cmd == "resume") return JobControl(s, "resume", A::RESUME, args, "slurm_resume error");
  if (cmd == "top") return JobControl(s, "top", A::TOP, args, "slurm_top_job error");
  if (Abbrev(cmd, "version", 4)) {
    OutLine("shoal " SHOAL_VERSION_STRING);
    return 0;
  }
  if (Abbrev(cmd, "oneliner", 1)) {
    s.show.one_liner = true;
    return 0;
  }
  if (Abbrev(cmd, "details", 1)) {
    s.show.details = true;
    return 0;
  }
  if (cmd == "all") {
    s.all = true;
    return 0;
  }
  if (cmd == "hide") {
    s.all = false;
    return 0;
  }
  if (Abbrev(cmd, "quiet", 4)) {
    s.quiet = true;
    return 0;
  }
  if (Abbrev(cmd, "verbose", 4)) {
    ++s.verbose;
    return 0;
  }
  if (cmd == "help") {
    Out(Help());
    return 0;
  }
  Err("invalid keyword: " + words[0]);
  return 1;
}

int Interactive(Session& s) {
  bool tty = isatty(STDIN_FILENO);
  int rc = 0;
  std::string line, last;
  while (true) {
    if (tty) {
      Out("scontrol: ");
      std::fflush(stdout);
    }
    if (!std::getline(std::cin, line)) break;
    if (line == "!!") line = last;
    std::vector<std::string> words = SplitCommandLine(line);
    if (words.empty()) continue;
    last = line;
    bool quit = false;
    rc = Dispatch(s, words, &quit);
    std::fflush(stdout);
    if (quit) break;
  }
  return rc;
}

}  // namespace

int ScontrolMain(int argc, char** argv) {
  Session s;
  std::vector<std::string> words;
  bool only_words = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (only_words || a.size() < 2 || a[0] != '-') {
      words.push_back(a);
      continue;
    }
    if (a == "--") {
      only_words = true;
      continue;
    }
    if (a.rfind("--", 0) == 0) {
      std::string name = a.substr(2), value;
      if (size_t eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
      }
      if (name == "oneliner") {
        s.show.one_liner = true;
      } else if (name == "details") {
        s.show.details = true;
      } else if (name == "all") {
        s.all = true;
      } else if (name == "json") {
        s.json = true;
      } else if (name == "quiet") {
        s.quiet = true;
      } else if (name == "verbose") {
        ++s.verbose;
      } else if (name == "version") {
        OutLine("shoal " SHOAL_VERSION_STRING);
        return 0;
      } else if (name == "help" || name == "usage") {
        Out(Help());
        return 0;
      } else if (name == "hide" || name == "local" || name == "federation" || name == "sibling" ||
                 name == "future") {
        // Single cluster: accepted, nothing to do.
      } else if (name == "cluster" || name == "clusters" || name == "uid") {
        if (value.empty() && i + 1 < argc) ++i;
      } else {
        Err("scontrol: unrecognized option '" + a + "'");
        Err("Try \"scontrol --help\" for more information");
        return 1;
      }
      continue;
    }
    for (size_t k = 1; k < a.size(); ++k) {
      char c = a[k];
      switch (c) {
        case 'o':
          s.show.one_liner = true;
          break;
        case 'd':
          s.show.details = true;
          break;
        case 'a':
          s.all = true;
          break;
        case 'Q':
          s.quiet = true;
          break;
        case 'v':
          ++s.verbose;
          break;
        case 'F':
          break;
        case 'V':
          OutLine("shoal " SHOAL_VERSION_STRING);
          return 0;
        case 'h':
          Out(Help());
          return 0;
        case 'M':
        case 'u':
          // Takes a value: the rest of this word or the next one.
          if (k + 1 == a.size() && i + 1 < argc) ++i;
          k = a.size();
          break;
        default:
          Err(std::string("scontrol: invalid option -- '") + c + "'");
          Err("Try \"scontrol --help\" for more information");
          return 1;
      }
    }
  }
  if (words.empty()) return Interactive(s);
  bool quit = false;
  return Dispatch(s, words, &quit);
}

}  // namespace shoal::cli
