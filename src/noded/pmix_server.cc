// PMIx server of one job step on one node. See pmix_server.h for the thread model.
//
// Written from the OpenPMIx server API (pmix_server.h) and the PMIx standard's attribute
// definitions. What Open MPI 4.1 needs at direct launch (its ess/pmi component): PMIX_LOCAL_RANK,
// PMIX_NODE_RANK (per rank), PMIX_MAX_PROCS, PMIX_JOB_SIZE, PMIX_LOCAL_SIZE, PMIX_LOCAL_PEERS;
// PMIX_UNIV_SIZE, PMIX_APPNUM and the node/proc maps are read when present. Node names (not the
// host's name) identify nodes everywhere, so several "nodes" on one host stay distinct.
#include "noded/pmix_server.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <string_view>

#include "common/log.h"
#include "common/strings.h"

#if SHOAL_HAVE_PMIX
#include <pmix.h>
#include <pmix_server.h>

#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>

#include "noded/pmix_dl.h"
#endif

namespace shoal::noded {

std::string PmixNamespace(uint32_t job_id, uint32_t step_id) {
  return "shoal." + std::to_string(job_id) + "." + std::to_string(step_id);
}

Status ValidatePmixStepInfo(const PmixStepInfo& info) {
  if (info.nodes.empty()) return InvalidArgument("pmix: the step has no nodes");
  if (info.nodes.size() != info.ranks_by_node.size()) {
    return InvalidArgument("pmix: " + std::to_string(info.nodes.size()) + " nodes but " +
                           std::to_string(info.ranks_by_node.size()) + " rank lists");
  }
  if (info.node_id >= info.nodes.size()) {
    return InvalidArgument("pmix: node index " + std::to_string(info.node_id) + " out of range");
  }
  size_t total = 0;
  for (size_t i = 0; i < info.nodes.size(); ++i) {
    const std::string& n = info.nodes[i];
    if (n.empty() || n.find_first_of(",;/ \t\n") != std::string::npos) {
      return InvalidArgument("pmix: bad node name '" + n + "'");
    }
    total += info.ranks_by_node[i].size();
  }
  if (total == 0) return InvalidArgument("pmix: the step has no tasks");
  std::vector<bool> seen(total, false);
  for (const auto& ranks : info.ranks_by_node) {
    for (uint32_t r : ranks) {
      if (r >= total || seen[r]) {
        return InvalidArgument("pmix: ranks must be 0.." + std::to_string(total - 1) +
                               ", each once (bad rank " + std::to_string(r) + ")");
      }
      seen[r] = true;
    }
  }
  return Status::Ok();
}

std::string PmixNodeListString(const PmixStepInfo& info) {
  std::string out;
  for (const auto& n : info.nodes) {
    if (!out.empty()) out += ',';
    out += n;
  }
  return out;
}

std::string PmixProcMapString(const PmixStepInfo& info) {
  std::string out;
  for (size_t i = 0; i < info.ranks_by_node.size(); ++i) {
    if (i) out += ';';
    for (size_t k = 0; k < info.ranks_by_node[i].size(); ++k) {
      if (k) out += ',';
      out += std::to_string(info.ranks_by_node[i][k]);
    }
  }
  return out;
}

int PmixLocalRank(const PmixStepInfo& info, uint32_t node_index, uint32_t rank) {
  if (node_index >= info.ranks_by_node.size()) return -1;
  const auto& r = info.ranks_by_node[node_index];
  auto it = std::find(r.begin(), r.end(), rank);
  return it == r.end() ? -1 : static_cast<int>(it - r.begin());
}

int PmixNodeOfRank(const PmixStepInfo& info, uint32_t rank) {
  for (size_t i = 0; i < info.ranks_by_node.size(); ++i) {
    if (PmixLocalRank(info, static_cast<uint32_t>(i), rank) >= 0) return static_cast<int>(i);
  }
  return -1;
}

#if SHOAL_HAVE_PMIX

bool PmixSupported() { return true; }

namespace {

std::string PmixError(const std::string& what, pmix_status_t rc) {
  return std::string("pmix: ") + what + " failed: " + PMIx_Error_string(rc) + " (" +
         std::to_string(rc) + ")";
}

// Waits for a pmix_op_cbfunc_t, which libpmix calls from its progress thread.
struct OpWaiter {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  pmix_status_t status = PMIX_SUCCESS;

  static void Callback(pmix_status_t st, void* cbdata) {
    auto* w = static_cast<OpWaiter*>(cbdata);
    std::lock_guard<std::mutex> lock(w->mu);
    w->status = st;
    w->done = true;
    w->cv.notify_all();
  }
  // `rc` is what the non-blocking call returned: only PMIX_SUCCESS promises a callback.
  pmix_status_t Wait(pmix_status_t rc) {
    if (rc == PMIX_OPERATION_SUCCEEDED) return PMIX_SUCCESS;
    if (rc != PMIX_SUCCESS) return rc;
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [this] { return done; });
    return status;
  }
};

// A growing list of pmix_info_t, loaded by value (PMIx_Info_load copies the data).
class InfoList {
 public:
  InfoList() = default;
  InfoList(const InfoList&) = delete;
  InfoList& operator=(const InfoList&) = delete;
  ~InfoList() {
    for (auto& i : items_) PMIX_INFO_DESTRUCT(&i);
  }

  void Add(const char* key, const void* value, pmix_data_type_t type) {
    pmix_info_t i;
    PMIX_INFO_CONSTRUCT(&i);
    PMIx_Info_load(&i, key, value, type);
    items_.push_back(i);
  }
  void AddString(const char* key, const std::string& s) { Add(key, s.c_str(), PMIX_STRING); }
  void AddU32(const char* key, uint32_t v) { Add(key, &v, PMIX_UINT32); }
  void AddU16(const char* key, uint16_t v) { Add(key, &v, PMIX_UINT16); }
  void AddRank(const char* key, pmix_rank_t v) { Add(key, &v, PMIX_PROC_RANK); }
  void AddBool(const char* key, bool v) { Add(key, &v, PMIX_BOOL); }
  // Moves `sub` into a pmix_data_array_t of pmix_info_t owned by the new entry.
  void AddArray(const char* key, InfoList&& sub) {
    pmix_info_t i;
    PMIX_INFO_CONSTRUCT(&i);
    PMIX_LOAD_KEY(i.key, key);
    i.value.type = PMIX_DATA_ARRAY;
    i.value.data.darray = sub.ReleaseAsDataArray();
    items_.push_back(i);
  }

  pmix_info_t* data() { return items_.empty() ? nullptr : items_.data(); }
  size_t size() const { return items_.size(); }

 private:
  pmix_data_array_t* ReleaseAsDataArray() {
    pmix_data_array_t* da;
    PMIX_DATA_ARRAY_CREATE(da, items_.size(), PMIX_INFO);
    auto* arr = static_cast<pmix_info_t*>(da->array);
    for (size_t n = 0; n < items_.size(); ++n) {
      // Shallow transfer: key, flags and value move into the array (which owns them now).
      std::memcpy(arr[n].key, items_[n].key, sizeof(arr[n].key));
      arr[n].value = items_[n].value;
    }
    items_.clear();
    return da;
  }

  std::vector<pmix_info_t> items_;
};

}  // namespace

struct PmixServer::Impl {
  PmixStepInfo info;
  PmixCallbacks cb;
  std::string ns;
  std::string rendezvous_dir;
  std::string shm_dir;  // Open MPI's shared-memory backing files; empty: use rendezvous_dir
  uint32_t job_size = 0;
  // State below is touched on the supervisor's thread only.
  uint32_t next_seq = 0;
  struct PendingFence {
    pmix_modex_cbfunc_t cbfunc;
    void* cbdata;
  };
  std::map<uint32_t, PendingFence> fences;
  std::set<uint32_t> registered;

  // True when `procs` names every process of our namespace (the only fences we support).
  bool CoversNamespace(const pmix_proc_t procs[], size_t nprocs) const {
    if (nprocs == 0) return true;
    std::set<uint32_t> ranks;
    for (size_t i = 0; i < nprocs; ++i) {
      if (!PMIX_CHECK_NSPACE(procs[i].nspace, ns.c_str())) return false;
      if (procs[i].rank == PMIX_RANK_WILDCARD) return true;
      if (procs[i].rank < job_size) ranks.insert(procs[i].rank);
    }
    return ranks.size() == job_size;
  }

  void OnFence(std::string data, pmix_modex_cbfunc_t cbfunc, void* cbdata) {
    uint32_t seq = next_seq++;
    fences[seq] = PendingFence{cbfunc, cbdata};
    LogDebug("pmix %s: fence %u started locally (%zu bytes)", ns.c_str(), seq, data.size());
    if (cb.fence) cb.fence(seq, std::move(data));
  }
};

namespace {

// libpmix's upcalls carry no pointer of ours, so the live server is found here.
std::mutex g_mu;
std::shared_ptr<PmixServer::Impl> g_impl;
// libpmix 4.2 cannot host a server again after PMIx_server_finalize in the same process (its
// clients then fail to connect), so a process gets one server in its lifetime.
bool g_used = false;

std::shared_ptr<PmixServer::Impl> Current() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_impl;
}

// Upcalls: on libpmix's thread. Copy the arguments, post, return at once.

pmix_status_t ClientConnected2(const pmix_proc_t*, void*, pmix_info_t[], size_t, pmix_op_cbfunc_t,
                               void*) {
  return PMIX_OPERATION_SUCCEEDED;  // nothing to check beyond libpmix's own uid/gid test
}

pmix_status_t ClientFinalized(const pmix_proc_t* proc, void*, pmix_op_cbfunc_t cbfunc,
                              void* cbdata) {
  auto impl = Current();
  if (!impl || cbfunc == nullptr || !impl->cb.post) return PMIX_OPERATION_SUCCEEDED;
  uint32_t rank = proc ? proc->rank : PMIX_RANK_UNDEF;
  std::weak_ptr<PmixServer::Impl> weak = impl;
  impl->cb.post([weak, rank, cbfunc, cbdata] {
    auto s = weak.lock();
    if (!s) return;  // finalized: libpmix is gone, never call into it
    LogDebug("pmix %s: rank %u finalized", s->ns.c_str(), rank);
    cbfunc(PMIX_SUCCESS, cbdata);
  });
  return PMIX_SUCCESS;
}

pmix_status_t Abort(const pmix_proc_t* proc, void*, int status, const char msg[], pmix_proc_t[],
                    size_t, pmix_op_cbfunc_t cbfunc, void* cbdata) {
  auto impl = Current();
  if (!impl || !impl->cb.post) return PMIX_ERR_NOT_SUPPORTED;
  uint32_t rank = proc ? proc->rank : PMIX_RANK_UNDEF;
  std::string message = msg ? msg : "";
  std::weak_ptr<PmixServer::Impl> weak = impl;
  impl->cb.post([weak, rank, status, message = std::move(message), cbfunc, cbdata] {
    auto s = weak.lock();
    if (!s) return;
    LogInfo("pmix %s: rank %u called abort (status %d): %s", s->ns.c_str(), rank, status,
            message.c_str());
    if (s->cb.abort) s->cb.abort(rank, status, message);
    if (cbfunc) cbfunc(PMIX_SUCCESS, cbdata);  // releases the rank, which then exits
  });
  return PMIX_SUCCESS;
}

pmix_status_t FenceNb(const pmix_proc_t procs[], size_t nprocs, const pmix_info_t[], size_t,
                      char* data, size_t ndata, pmix_modex_cbfunc_t cbfunc, void* cbdata) {
  auto impl = Current();
  if (!impl || !impl->cb.post) return PMIX_ERR_NOT_SUPPORTED;
  if (!impl->CoversNamespace(procs, nprocs)) {
    LogError("pmix %s: a fence over a subset of the step's processes is not supported",
             impl->ns.c_str());
    return PMIX_ERR_NOT_SUPPORTED;
  }
  std::string bytes = (data && ndata) ? std::string(data, ndata) : std::string();
  std::weak_ptr<PmixServer::Impl> weak = impl;
  impl->cb.post([weak, bytes = std::move(bytes), cbfunc, cbdata]() mutable {
    if (auto s = weak.lock()) s->OnFence(std::move(bytes), cbfunc, cbdata);
  });
  return PMIX_SUCCESS;
}

// A local client asked for a key of a remote rank that is not in the local store. Every fence we
// run collects all data (the allgather of Open MPI's and MPICH's modex), so after one the store
// already holds whatever the remote rank published: there is nothing more to fetch. Cross-node
// direct modex (PMIx_server_dmodex_request on the remote node) is not implemented.
pmix_status_t DirectModex(const pmix_proc_t*, const pmix_info_t[], size_t, pmix_modex_cbfunc_t,
                          void*) {
  return PMIX_ERR_NOT_SUPPORTED;
}

void ReleaseFenceBuffer(void* cbdata) { delete static_cast<std::string*>(cbdata); }

}  // namespace

Result<std::unique_ptr<PmixServer>> PmixServer::Start(const PmixStepInfo& info, PmixCallbacks cb) {
  if (Status st = ValidatePmixStepInfo(info); !st.ok()) return st;
  if (std::string why; !pmixdl::Load(&why)) return Error(ErrorCode::kNotSupported, "pmix: " + why);
  if (!cb.post) return InvalidArgument("pmix: PmixCallbacks.post is required");
  if (info.tmpdir.empty() || info.tmpdir[0] != '/') {
    return InvalidArgument("pmix: tmpdir must be an absolute path");
  }
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_impl) return Error(ErrorCode::kInternal, "pmix: a PMIx server is already running");
    if (g_used) {
      return Error(ErrorCode::kInternal,
                   "pmix: libpmix cannot start a second server in one process; run each "
                   "--mpi=pmix step's server in its own process");
    }
  }
  auto impl = std::make_shared<Impl>();
  impl->info = info;
  impl->cb = std::move(cb);
  impl->ns = PmixNamespace(info.job_id, info.step_id);
  for (const auto& r : info.ranks_by_node) impl->job_size += static_cast<uint32_t>(r.size());

  // The server's directory, the step user's own: libpmix 4.2 keeps its shared-memory data store
  // (gds/ds21, ds12) there, which the clients, running as that user, map. (Clients connect over
  // loopback TCP, the URI in their environment: there is no unix socket to place.)
  struct stat st {};
  if (::stat(info.tmpdir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Error(ErrorCode::kIoError, "pmix: tmpdir " + info.tmpdir + " is not a directory");
  }
  bool other_user = info.uid != st.st_uid;
  bool can_search = (st.st_mode & S_IXOTH) || (info.gid == st.st_gid && (st.st_mode & S_IXGRP));
  if (other_user && !can_search && ::geteuid() == 0 && info.uid != 0) {
    // The user must reach the data store inside: search permission only, never listing.
    if (::chmod(info.tmpdir.c_str(), (st.st_mode & 07777) | S_IXOTH) != 0) {
      return Error(ErrorCode::kIoError, "pmix: chmod " + info.tmpdir + ": " + strerror(errno));
    }
  }
  if (::geteuid() == 0 && info.uid != 0) {
    // Every directory above must be searchable by the user, or its ranks cannot reach the
    // data store libpmix keeps there (they fail with errors from libpmix's gds components).
    for (std::string d = info.tmpdir; d.size() > 1;) {
      d = d.substr(0, std::max<size_t>(d.rfind('/'), 1));
      struct stat ds {};
      if (::stat(d.c_str(), &ds) != 0) break;
      mode_t need = ds.st_uid == info.uid ? S_IXUSR : ds.st_gid == info.gid ? S_IXGRP : S_IXOTH;
      if (!(ds.st_mode & need)) {
        LogError(
            "pmix: %s is not searchable by uid %u: its ranks may fail to reach the PMIx data store",
            d.c_str(), info.uid);
        break;
      }
    }
  }
  impl->rendezvous_dir = info.tmpdir + "/pmix";
  if (::mkdir(impl->rendezvous_dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return Error(ErrorCode::kIoError,
                 "pmix: mkdir " + impl->rendezvous_dir + ": " + strerror(errno));
  }
  if (::geteuid() == 0 && ::chown(impl->rendezvous_dir.c_str(), info.uid, info.gid) != 0) {
    return Error(ErrorCode::kIoError,
                 "pmix: chown " + impl->rendezvous_dir + ": " + strerror(errno));
  }
  ::chmod(impl->rendezvous_dir.c_str(), 0700);
  // Open MPI's shared-memory BTL names its segment after the host's name, the job and the local
  // rank: two "nodes" of one step on one host would share (and corrupt) each other's segments. A
  // private directory per node and step keeps them apart (and is removed with the server).
  impl->shm_dir = "/dev/shm/shoal-pmix." + std::to_string(info.job_id) + "." +
                  std::to_string(info.step_id) + "." + info.nodes[info.node_id];
  {
    std::error_code ec;
    std::filesystem::remove_all(impl->shm_dir, ec);  // a stale one from a crashed supervisor
    if (::mkdir(impl->shm_dir.c_str(), 0700) != 0 ||
        (::geteuid() == 0 && ::chown(impl->shm_dir.c_str(), info.uid, info.gid) != 0)) {
      ::rmdir(impl->shm_dir.c_str());
      impl->shm_dir.clear();  // no /dev/shm: the rendezvous directory will do
    }
  }

  static pmix_server_module_t module;
  std::memset(&module, 0, sizeof(module));
  module.client_finalized = ClientFinalized;
  module.abort = Abort;
  module.fence_nb = FenceNb;
  module.direct_modex = DirectModex;
  module.client_connected2 = ClientConnected2;

  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_impl = impl;  // upcalls may start as soon as PMIx_server_init returns
    g_used = true;
  }
  auto fail = [&](Status s) -> Result<std::unique_ptr<PmixServer>> {
    std::lock_guard<std::mutex> lock(g_mu);
    g_impl.reset();
    return s;
  };

  const std::string& node = info.nodes[info.node_id];
  std::string server_ns = "shoal-stepd." + std::to_string(info.job_id) + "." +
                          std::to_string(info.step_id) + "." + node;
  InfoList init;
  init.AddString(PMIX_SERVER_TMPDIR, impl->rendezvous_dir);
  init.AddString(PMIX_SYSTEM_TMPDIR, impl->rendezvous_dir);
  init.AddBool(PMIX_SERVER_SYSTEM_SUPPORT, false);
  init.AddBool(PMIX_SERVER_SESSION_SUPPORT, false);
  init.AddBool(PMIX_SERVER_TOOL_SUPPORT, false);
  init.AddBool(PMIX_SERVER_REMOTE_CONNECTIONS, false);
  init.AddU32(PMIX_USERID, info.uid);
  init.AddU32(PMIX_GRPID, info.gid);
  init.AddString(PMIX_SERVER_NSPACE, server_ns);
  init.AddRank(PMIX_SERVER_RANK, info.node_id);
  init.AddString(PMIX_HOSTNAME, node);  // the node's name, not the host's: "nodes" share hosts
  init.AddU32(PMIX_NODEID, info.node_id);
  pmix_status_t rc = PMIx_server_init(&module, init.data(), init.size());
  if (rc != PMIX_SUCCESS) return fail(Error(ErrorCode::kInternal, PmixError("server init", rc)));
  std::unique_ptr<PmixServer> server(new PmixServer(impl));  // finalizes on failure below

  // Node and proc maps, in libpmix's compact form.
  char* node_regex = nullptr;
  char* proc_regex = nullptr;
  rc = PMIx_generate_regex(PmixNodeListString(info).c_str(), &node_regex);
  if (rc != PMIX_SUCCESS) return Error(ErrorCode::kInternal, PmixError("generate_regex", rc));
  rc = PMIx_generate_ppn(PmixProcMapString(info).c_str(), &proc_regex);
  if (rc != PMIX_SUCCESS) {
    free(node_regex);
    return Error(ErrorCode::kInternal, PmixError("generate_ppn", rc));
  }

  const auto& local = info.ranks_by_node[info.node_id];
  uint32_t nodes = static_cast<uint32_t>(info.nodes.size());
  InfoList job;
  job.AddString(PMIX_JOBID, std::to_string(info.job_id) + "." + std::to_string(info.step_id));
  // The shared-memory data store (gds/ds12, ds21) makes its segments the job user's from these.
  job.AddU32(PMIX_USERID, info.uid);
  job.AddU32(PMIX_GRPID, info.gid);
  job.AddU32(PMIX_UNIV_SIZE, impl->job_size);
  job.AddU32(PMIX_JOB_SIZE, impl->job_size);
  job.AddU32(PMIX_MAX_PROCS, impl->job_size);
  job.AddU32(PMIX_JOB_NUM_APPS, 1);
  job.AddU32(PMIX_NUM_NODES, nodes);
  job.Add(PMIX_NODE_MAP, node_regex, PMIX_REGEX);
  job.Add(PMIX_PROC_MAP, proc_regex, PMIX_REGEX);
  free(node_regex);
  free(proc_regex);
  // This node (the "local" realm of the job).
  job.AddU32(PMIX_LOCAL_SIZE, static_cast<uint32_t>(local.size()));
  job.AddU32(PMIX_NODE_SIZE, static_cast<uint32_t>(local.size()));
  // PMIX_LOCAL_PEERS is a plain comma-separated list ("0,1,5").
  job.AddString(PMIX_LOCAL_PEERS, JoinNumbers(local));
  if (!local.empty()) {
    job.AddRank(PMIX_LOCALLDR, *std::min_element(local.begin(), local.end()));
  }
  // The one application.
  {
    InfoList app;
    app.AddU32(PMIX_APPNUM, 0);
    app.AddU32(PMIX_APP_SIZE, impl->job_size);
    app.AddRank(PMIX_APPLDR, 0);
    job.AddArray(PMIX_APP_INFO_ARRAY, std::move(app));
  }
  // Every node: id, name, its ranks.
  for (uint32_t n = 0; n < nodes; ++n) {
    const auto& ranks = info.ranks_by_node[n];
    InfoList nd;
    nd.AddU32(PMIX_NODEID, n);
    nd.AddString(PMIX_HOSTNAME, info.nodes[n]);
    nd.AddU32(PMIX_LOCAL_SIZE, static_cast<uint32_t>(ranks.size()));
    nd.AddU32(PMIX_NODE_SIZE, static_cast<uint32_t>(ranks.size()));
    nd.AddString(PMIX_LOCAL_PEERS, JoinNumbers(ranks));
    if (!ranks.empty()) nd.AddRank(PMIX_LOCALLDR, *std::min_element(ranks.begin(), ranks.end()));
    job.AddArray(PMIX_NODE_INFO_ARRAY, std::move(nd));
  }
  // Every rank: where it is and its place there.
  for (uint32_t n = 0; n < nodes; ++n) {
    const auto& ranks = info.ranks_by_node[n];
    for (size_t lr = 0; lr < ranks.size(); ++lr) {
      InfoList p;
      p.AddRank(PMIX_RANK, ranks[lr]);
      p.AddRank(PMIX_GLOBAL_RANK, ranks[lr]);
      p.AddRank(PMIX_APP_RANK, ranks[lr]);
      p.AddU32(PMIX_APPNUM, 0);
      p.AddU16(PMIX_LOCAL_RANK, static_cast<uint16_t>(lr));
      p.AddU16(PMIX_NODE_RANK, static_cast<uint16_t>(lr));
      p.AddU32(PMIX_NODEID, n);
      p.AddString(PMIX_HOSTNAME, info.nodes[n]);
      job.AddArray(PMIX_PROC_INFO_ARRAY, std::move(p));
    }
  }
  OpWaiter waiter;
  rc =
      waiter.Wait(PMIx_server_register_nspace(impl->ns.c_str(), static_cast<int>(local.size()),
                                              job.data(), job.size(), OpWaiter::Callback, &waiter));
  if (rc != PMIX_SUCCESS) {
    return Error(ErrorCode::kInternal, PmixError("register_nspace " + impl->ns, rc));
  }
  LogInfo("pmix %s: server for node %s (%u of %u), %zu local of %u ranks, rendezvous %s",
          impl->ns.c_str(), node.c_str(), info.node_id, nodes, local.size(), impl->job_size,
          impl->rendezvous_dir.c_str());
  return server;
}

PmixServer::PmixServer(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

PmixServer::~PmixServer() {
  if (!impl_) return;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_impl.reset();  // upcalls from now on find no server
  }
  // Stops libpmix's thread (no upcall runs after this) and closes the clients' connections.
  // Pending fences are dropped with it: their ranks see the connection go away.
  pmix_status_t rc = PMIx_server_finalize();
  if (rc != PMIX_SUCCESS) LogError("%s", PmixError("server finalize", rc).c_str());
  std::error_code ec;
  std::filesystem::remove_all(impl_->rendezvous_dir, ec);
  if (!impl_->shm_dir.empty()) std::filesystem::remove_all(impl_->shm_dir, ec);
}

Result<std::vector<std::string>> PmixServer::TaskEnvironment(uint32_t rank, uint32_t uid,
                                                             uint32_t gid) {
  const PmixStepInfo& info = impl_->info;
  if (PmixLocalRank(info, info.node_id, rank) < 0) {
    return InvalidArgument("pmix: rank " + std::to_string(rank) + " does not run on node " +
                           info.nodes[info.node_id]);
  }
  pmix_proc_t proc;
  PMIX_PROC_LOAD(&proc, impl_->ns.c_str(), rank);
  if (!impl_->registered.count(rank)) {
    OpWaiter waiter;
    pmix_status_t rc = waiter.Wait(
        PMIx_server_register_client(&proc, uid, gid, nullptr, OpWaiter::Callback, &waiter));
    if (rc != PMIX_SUCCESS) {
      return Error(ErrorCode::kInternal,
                   PmixError("register_client rank " + std::to_string(rank), rc));
    }
    impl_->registered.insert(rank);
  }
  char** env = static_cast<char**>(calloc(1, sizeof(char*)));
  pmix_status_t rc = PMIx_server_setup_fork(&proc, &env);
  std::vector<std::string> out;
  for (char** e = env; e && *e; ++e) {
    out.emplace_back(*e);
    free(*e);
  }
  free(env);
  if (rc != PMIX_SUCCESS) return Error(ErrorCode::kInternal, PmixError("setup_fork", rc));
  const std::string& sm = impl_->shm_dir.empty() ? impl_->rendezvous_dir : impl_->shm_dir;
  out.push_back("OMPI_MCA_btl_vader_backing_directory=" + sm);  // Open MPI 4
  out.push_back("OMPI_MCA_btl_sm_backing_directory=" + sm);     // Open MPI 5
  return out;
}

void PmixServer::CompleteFence(uint32_t seq, const std::vector<std::string>& all_node_data) {
  auto it = impl_->fences.find(seq);
  if (it == impl_->fences.end()) {
    LogError("pmix %s: completion of unknown fence %u ignored", impl_->ns.c_str(), seq);
    return;
  }
  if (all_node_data.size() != impl_->info.nodes.size()) {
    LogError("pmix %s: fence %u completed with %zu contributions for %zu nodes", impl_->ns.c_str(),
             seq, all_node_data.size(), impl_->info.nodes.size());
    FailFence(seq);
    return;
  }
  Impl::PendingFence f = it->second;
  impl_->fences.erase(it);
  size_t total = 0;
  for (const auto& d : all_node_data) total += d.size();
  LogDebug("pmix %s: fence %u complete (%zu bytes)", impl_->ns.c_str(), seq, total);
  if (total == 0) {
    f.cbfunc(PMIX_SUCCESS, nullptr, 0, f.cbdata, nullptr, nullptr);
    return;
  }
  // libpmix reads the bytes later on its own thread and calls ReleaseFenceBuffer when done.
  auto* buf = new std::string();
  buf->reserve(total);
  for (const auto& d : all_node_data) buf->append(d);
  f.cbfunc(PMIX_SUCCESS, buf->data(), buf->size(), f.cbdata, ReleaseFenceBuffer, buf);
}

void PmixServer::FailFence(uint32_t seq) {
  auto it = impl_->fences.find(seq);
  if (it == impl_->fences.end()) return;
  Impl::PendingFence f = it->second;
  impl_->fences.erase(it);
  LogError("pmix %s: fence %u failed", impl_->ns.c_str(), seq);
  f.cbfunc(PMIX_ERROR, nullptr, 0, f.cbdata, nullptr, nullptr);
}

void PmixServer::ClientExited(uint32_t rank) {
  if (!impl_->registered.erase(rank)) return;
  pmix_proc_t proc;
  PMIX_PROC_LOAD(&proc, impl_->ns.c_str(), rank);
  PMIx_server_deregister_client(&proc, nullptr, nullptr);
}

const std::string& PmixServer::ns() const { return impl_->ns; }

uint32_t PmixServer::pending_fences() const { return static_cast<uint32_t>(impl_->fences.size()); }

#else  // !SHOAL_HAVE_PMIX

bool PmixSupported() { return false; }

struct PmixServer::Impl {
  std::string ns;
};

Result<std::unique_ptr<PmixServer>> PmixServer::Start(const PmixStepInfo&, PmixCallbacks) {
  return Error(ErrorCode::kNotSupported, "this build has no PMIx support (libpmix-dev missing)");
}

PmixServer::PmixServer(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
PmixServer::~PmixServer() = default;

Result<std::vector<std::string>> PmixServer::TaskEnvironment(uint32_t, uint32_t, uint32_t) {
  return Error(ErrorCode::kNotSupported, "this build has no PMIx support (libpmix-dev missing)");
}
void PmixServer::CompleteFence(uint32_t, const std::vector<std::string>&) {}
void PmixServer::FailFence(uint32_t) {}
void PmixServer::ClientExited(uint32_t) {}
const std::string& PmixServer::ns() const { return impl_->ns; }
uint32_t PmixServer::pending_fences() const { return 0; }

#endif  // SHOAL_HAVE_PMIX

}  // namespace shoal::noded
