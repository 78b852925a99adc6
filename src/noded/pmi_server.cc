// PMI-1 and PMI-2 server state machine; see pmi_server.h for the contract with shoal-stepd.
// Written from the protocol descriptions (MPICH's pmi-1.1/pmi-2.0 message tables and the PMI-2
// wire format), not from any server implementation.
#include "noded/pmi_server.h"

#include <algorithm>
#include <charconv>
#include <utility>

namespace shoal::noded {
namespace {

constexpr size_t kPmi2HeaderBytes = 6;          // decimal length of the rest of the message
constexpr size_t kPmi2MaxBody = 999999;         // what six digits can announce
constexpr uint64_t kMaxLengthField = 1u << 30;  // in fence contributions

// ---- small parsing helpers ----

std::optional<int64_t> ParseInt(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

const std::string* Get(const std::vector<std::pair<std::string, std::string>>& kv,
                       std::string_view key) {
  for (const auto& [k, v] : kv)
    if (k == key) return &v;
  return nullptr;
}

std::string GetOr(const std::vector<std::pair<std::string, std::string>>& kv, std::string_view key,
                  std::string_view fallback = {}) {
  const std::string* v = Get(kv, key);
  return v ? *v : std::string(fallback);
}

// PMI-1 line: space-separated key=value tokens. A token without '=' continues the previous value
// (so a message with spaces survives); a leading one becomes a key with an empty value.
std::vector<std::pair<std::string, std::string>> ParsePmi1Line(std::string_view line) {
  std::vector<std::pair<std::string, std::string>> kv;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (start == i) break;
    std::string_view tok = line.substr(start, i - start);
    size_t eq = tok.find('=');
    if (eq == std::string_view::npos) {
      if (kv.empty()) {
        kv.emplace_back(std::string(tok), "");
      } else {
        kv.back().second += ' ';
        kv.back().second += tok;
      }
    } else {
      kv.emplace_back(std::string(tok.substr(0, eq)), std::string(tok.substr(eq + 1)));
    }
  }
  return kv;
}

// PMI-2 body: `key=value;` pairs, `;;` inside a value stands for one `;`. A missing final `;` is
// tolerated. Returns false on a pair without '=' or with an empty key; `kv` keeps what parsed.
bool ParsePmi2Body(std::string_view body, std::vector<std::pair<std::string, std::string>>& kv) {
  size_t i = 0;
  while (i < body.size()) {
    size_t eq = body.find('=', i);
    if (eq == std::string_view::npos) return false;
    std::string_view key = body.substr(i, eq - i);
    if (key.empty() || key.find(';') != std::string_view::npos) return false;
    std::string value;
    size_t j = eq + 1;
    for (; j < body.size(); ++j) {
      if (body[j] == ';') {
        if (j + 1 < body.size() && body[j + 1] == ';') {
          value += ';';
          ++j;
          continue;
        }
        break;
      }
      value += body[j];
    }
    kv.emplace_back(std::string(key), std::move(value));
    i = j + 1;  // past the terminating ';' (or the end)
  }
  return true;
}

void AppendPmi2Pair(std::string& body, std::string_view key, std::string_view value) {
  body += key;
  body += '=';
  for (char ch : value) {
    if (ch == ';') body += ';';  // escape as ";;"
    body += ch;
  }
  body += ';';
}

// One PMI-2 message: the body length left-justified in six characters, then the body. Bodies that
// six digits cannot announce are replaced by an error reply for the same command.
std::string Pmi2Frame(std::string_view cmd, const std::string& thrid,
                      const std::vector<std::pair<std::string, std::string>>& pairs) {
  std::string body;
  AppendPmi2Pair(body, "cmd", cmd);
  if (!thrid.empty()) AppendPmi2Pair(body, "thrid", thrid);
  for (const auto& [k, v] : pairs) AppendPmi2Pair(body, k, v);
  if (body.size() > kPmi2MaxBody) {
    body.clear();
    AppendPmi2Pair(body, "cmd", cmd.substr(0, 256));
    if (!thrid.empty()) AppendPmi2Pair(body, "thrid", thrid.substr(0, 256));
    AppendPmi2Pair(body, "rc", "-1");
    AppendPmi2Pair(body, "errmsg", "reply too long");
  }
  std::string len = std::to_string(body.size());
  len.resize(kPmi2HeaderBytes, ' ');
  return len + body;
}

// ---- fence contributions: "F1:" then <klen>:<key><vlen>:<value> for each pair ----

constexpr std::string_view kFenceMagic = "F1:";

void AppendField(std::string& out, std::string_view s) {
  out += std::to_string(s.size());
  out += ':';
  out += s;
}

bool ReadField(std::string_view data, size_t& pos, std::string_view& field) {
  size_t colon = data.find(':', pos);
  if (colon == std::string_view::npos || colon == pos || colon - pos > 10) return false;
  uint64_t len = 0;
  auto [end, ec] = std::from_chars(data.data() + pos, data.data() + colon, len);
  if (ec != std::errc() || end != data.data() + colon || len > kMaxLengthField) return false;
  if (len > data.size() - colon - 1) return false;
  field = data.substr(colon + 1, len);
  pos = colon + 1 + len;
  return true;
}

std::optional<std::vector<std::pair<std::string, std::string>>> ParseContribution(
    std::string_view data) {
  std::vector<std::pair<std::string, std::string>> pairs;
  if (data.substr(0, kFenceMagic.size()) != kFenceMagic) return std::nullopt;
  size_t pos = kFenceMagic.size();
  while (pos < data.size()) {
    std::string_view k, v;
    if (!ReadField(data, pos, k) || !ReadField(data, pos, v) || k.empty()) return std::nullopt;
    pairs.emplace_back(std::string(k), std::string(v));
  }
  return pairs;
}

// ---- PMI_process_mapping ----

// Node of every rank: from node_ranks when it covers each rank exactly once, else block
// distribution by tasks_per_node (or one node holding `size` tasks when that is empty too).
std::vector<uint32_t> NodeOfRank(const PmiStepInfo& info) {
  constexpr uint32_t kUnset = UINT32_MAX;
  if (!info.node_ranks.empty()) {
    size_t n = 0;
    for (const auto& ranks : info.node_ranks) n += ranks.size();
    std::vector<uint32_t> node_of(n, kUnset);
    bool ok = true;
    for (uint32_t node = 0; node < info.node_ranks.size() && ok; ++node) {
      for (uint32_t r : info.node_ranks[node]) {
        if (r >= n || node_of[r] != kUnset) {
          ok = false;
          break;
        }
        node_of[r] = node;
      }
    }
    if (ok) return node_of;
  }
  std::vector<uint32_t> node_of;
  if (info.tasks_per_node.empty()) {
    node_of.assign(info.size, 0);
    return node_of;
  }
  for (uint32_t node = 0; node < info.tasks_per_node.size(); ++node)
    node_of.insert(node_of.end(), info.tasks_per_node[node], node);
  return node_of;
}

// Length of the shortest prefix that, repeated, yields `s` and ends where a run of equal nodes
// ends (so a one-node step reads (0,1,N), not (0,1,1) repeated). Periods come from the border
// chain of the prefix function, shortest first.
size_t SmallestPeriod(const std::vector<uint32_t>& s) {
  if (s.empty()) return 0;
  std::vector<size_t> fail(s.size(), 0);
  for (size_t i = 1; i < s.size(); ++i) {
    size_t k = fail[i - 1];
    while (k > 0 && s[i] != s[k]) k = fail[k - 1];
    if (s[i] == s[k]) ++k;
    fail[i] = k;
  }
  for (size_t border = fail.back(); border > 0; border = fail[border - 1]) {
    size_t period = s.size() - border;
    if (s[period - 1] != s[period]) return period;
  }
  return s.size();
}

// ---- values ----

std::string Pmi1Msg(std::string_view text) {  // PMI-1 values cannot hold spaces
  std::string s(text);
  std::replace(s.begin(), s.end(), ' ', '_');
  return s;
}

}  // namespace

std::string PmiServer::ProcessMapping(const PmiStepInfo& info) {
  std::vector<uint32_t> node_of = NodeOfRank(info);
  if (node_of.empty()) return "(vector)";
  // MPICH repeats the block list until every rank has a node, restarting at the first block that
  // starts at node 0; a periodic placement (cyclic) is sent as one period when rank 0 is on node
  // 0, and anything else as the full list, which covers every rank and so never repeats.
  size_t period = node_of.front() == 0 ? SmallestPeriod(node_of) : node_of.size();
  struct Block {
    uint32_t start, count, per_node;
  };
  std::vector<Block> blocks;
  for (size_t i = 0; i < period;) {
    size_t j = i;
    while (j < period && node_of[j] == node_of[i]) ++j;
    uint32_t node = node_of[i], run = static_cast<uint32_t>(j - i);
    if (!blocks.empty() && blocks.back().per_node == run &&
        blocks.back().start + blocks.back().count == node) {
      ++blocks.back().count;
    } else {
      blocks.push_back({node, 1, run});
    }
    i = j;
  }
  std::string out = "(vector";
  for (const Block& b : blocks) {
    out += ",(" + std::to_string(b.start) + "," + std::to_string(b.count) + "," +
           std::to_string(b.per_node) + ")";
  }
  out += ")";
  return out;
}

PmiServer::PmiServer(PmiStepInfo info) : info_(std::move(info)) {
  kvs_name_ = std::to_string(info_.job_id) + "." + std::to_string(info_.step_id);
  process_mapping_ = ProcessMapping(info_);
  for (uint32_t r : info_.local_ranks) conns_[r];
}

std::vector<std::string> PmiServer::TaskEnvironment(uint32_t rank, int fd) const {
  return {
      "PMI_FD=" + std::to_string(fd),
      "PMI_RANK=" + std::to_string(rank),
      "PMI_SIZE=" + std::to_string(info_.size),
      "PMI_JOBID=" + kvs_name_,
  };
}

PmiServer::Conn* PmiServer::Find(uint32_t rank) {
  auto it = conns_.find(rank);
  return it == conns_.end() ? nullptr : &it->second;
}

const PmiServer::Conn* PmiServer::Find(uint32_t rank) const {
  auto it = conns_.find(rank);
  return it == conns_.end() ? nullptr : &it->second;
}

void PmiServer::OnBytes(uint32_t rank, std::string_view bytes) {
  Conn* c = Find(rank);
  if (!c || c->closed || c->broken || bytes.empty()) return;
  // Unprocessed input is at most one partial message plus what is held while replies back up.
  if (c->in.size() - c->pos + bytes.size() > 2 * kMaxMessageBytes + kPmi2HeaderBytes) {
    Break(*c);
    return;
  }
  c->in.append(bytes);
  Process(rank, *c);
}

std::string PmiServer::TakeReplies(uint32_t rank) {
  Conn* c = Find(rank);
  if (!c) return {};
  std::string replies = std::move(c->out);
  c->out.clear();
  if (c->closed) return {};
  Process(rank, *c);  // commands held back while replies were pending
  replies += c->out;
  c->out.clear();
  return replies;
}

void PmiServer::OnClosed(uint32_t rank) {
  Conn* c = Find(rank);
  if (!c) return;
  c->closed = true;
  c->in.clear();
  c->pos = 0;
  c->out.clear();
  c->fences.clear();
  c->attr_waiters.clear();
}

bool PmiServer::Finalized(uint32_t rank) const {
  const Conn* c = Find(rank);
  return c && c->finalized;
}

bool PmiServer::Broken(uint32_t rank) const {
  const Conn* c = Find(rank);
  return c && c->broken;
}

std::optional<PmiAbort> PmiServer::TakeAbort() {
  if (aborts_.empty()) return std::nullopt;
  PmiAbort a = std::move(aborts_.front());
  aborts_.pop_front();
  return a;
}

void PmiServer::Break(Conn& c) {
  c.broken = true;
  c.in.clear();
  c.pos = 0;
  c.fences.clear();
  c.attr_waiters.clear();
}

void PmiServer::Process(uint32_t rank, Conn& c) {
  while (!c.broken && !c.closed && c.pos < c.in.size() && c.out.size() < kMaxPendingReplyBytes) {
    if (c.wire == Wire::kUnknown) {
      char first = c.in[c.pos];
      // A PMI-2 length field is digits padded with spaces; everything else is a PMI-1 line.
      c.wire = (first == ' ' || (first >= '0' && first <= '9')) ? Wire::kPmi2 : Wire::kPmi1;
    }
    bool progressed =
        c.wire == Wire::kPmi1 ? ProcessPmi1Line(rank, c) : ProcessPmi2Message(rank, c);
    if (!progressed) break;
  }
  if (c.pos > 0) {
    c.in.erase(0, c.pos);
    c.pos = 0;
  }
}

// ---------------------------------------------------------------- PMI-1

bool PmiServer::ProcessPmi1Line(uint32_t rank, Conn& c) {
  std::string_view rest = std::string_view(c.in).substr(c.pos);
  size_t nl = rest.find('\n');
  if (nl == std::string_view::npos) {
    if (rest.size() > kMaxMessageBytes) Break(c);
    return false;
  }
  if (nl > kMaxMessageBytes) {
    Break(c);
    return false;
  }
  std::string line(rest.substr(0, nl));
  c.pos += nl + 1;
  if (!line.empty() && line.back() == '\r') line.pop_back();

  if (c.in_spawn) {
    // Inside `mcmd=spawn`: key=value lines until `endcmd`. Spawning is not offered; the one
    // reply comes after the last block of the request (spawnssofar == totspawns).
    if (line == "endcmd") {
      c.in_spawn = false;
      if (c.spawn_total.empty() || c.spawn_sofar.empty() || c.spawn_total == c.spawn_sofar) {
        c.out += "cmd=spawn_result rc=-1 msg=spawn_is_not_supported\n";
      }
      return true;
    }
    size_t eq = line.find('=');
    if (eq != std::string::npos) {
      std::string_view key = std::string_view(line).substr(0, eq);
      if (key == "totspawns") c.spawn_total = line.substr(eq + 1, 32);
      if (key == "spawnssofar") c.spawn_sofar = line.substr(eq + 1, 32);
    }
    return true;
  }
  Pairs kv = ParsePmi1Line(line);
  if (kv.empty()) return true;  // blank line
  if (kv.front().first == "mcmd") {
    c.in_spawn = true;
    c.spawn_total.clear();
    c.spawn_sofar.clear();
    return true;
  }
  HandlePmi1(rank, c, kv);
  return true;
}

void PmiServer::HandlePmi1(uint32_t rank, Conn& c, const Pairs& kv) {
  const std::string cmd = kv.front().first == "cmd" ? kv.front().second : std::string();
  auto reply = [&c](const std::string& text) {
    c.out += text;
    c.out += '\n';
  };
  if (cmd == "init") {
    auto version = ParseInt(GetOr(kv, "pmi_version"));
    if (version == 1) {
      c.finalized = false;
      reply("cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0");
    } else if (version == 2) {
      // A PMI-2 client's opening handshake: everything after our reply is PMI-2 framed.
      c.finalized = false;
      c.wire = Wire::kPmi2;
      reply("cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0");
    } else {
      reply("cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=-1 msg=unsupported_version");
    }
  } else if (cmd == "initack") {
    // The PMI_ID handshake of clients that connected through PMI_PORT; we are the fd's owner so
    // the rank is the connection's, whatever pmiid says.
    c.finalized = false;
    reply("cmd=initack rc=0");
    reply("cmd=set size=" + std::to_string(info_.size));
    reply("cmd=set rank=" + std::to_string(rank));
    reply("cmd=set debug=0");
  } else if (cmd == "get_maxes") {
    reply("cmd=maxes kvsname_max=" + std::to_string(kPmi1KvsNameMax) + " keylen_max=" +
          std::to_string(kPmi1KeyMax) + " vallen_max=" + std::to_string(kPmi1ValueMax) + " rc=0");
  } else if (cmd == "get_appnum") {
    reply("cmd=appnum appnum=" + std::to_string(info_.appnum) + " rc=0");
  } else if (cmd == "get_my_kvsname") {
    reply("cmd=my_kvsname kvsname=" + kvs_name_ + " rc=0");
  } else if (cmd == "get_universe_size") {
    uint32_t universe = info_.universe_size ? info_.universe_size : info_.size;
    reply("cmd=universe_size size=" + std::to_string(universe) + " rc=0");
  } else if (cmd == "put") {
    std::string key = GetOr(kv, "key"), value = GetOr(kv, "value");
    std::string err = CheckKeyValue(key, value);
    if (err.empty()) {
      Put(key, value);
      reply("cmd=put_result rc=0");
    } else {
      reply("cmd=put_result rc=-1 msg=" + Pmi1Msg(err));
    }
  } else if (cmd == "get") {
    // The kvsname is not checked: a step has one KVS.
    std::string key = GetOr(kv, "key");
    const std::string* value = nullptr;
    if (key == "PMI_process_mapping") {
      value = &process_mapping_;
    } else {
      value = Lookup(key);
    }
    if (value) {
      reply("cmd=get_result rc=0 value=" + *value);
    } else {
      reply("cmd=get_result rc=-1 msg=key_not_found");
    }
  } else if (cmd == "barrier_in") {
    EnterFence(c, /*pmi2=*/false, {});
  } else if (cmd == "finalize") {
    c.finalized = true;
    reply("cmd=finalize_ack rc=0");
  } else if (cmd == "abort") {
    RecordAbort(rank, kv, "exitcode", "message");  // no reply: the client exits
  } else if (cmd == "publish_name") {
    reply(
        "cmd=publish_result rc=-1 info=name_service_not_supported msg=name_service_not_supported");
  } else if (cmd == "unpublish_name") {
    reply(
        "cmd=unpublish_result rc=-1 info=name_service_not_supported "
        "msg=name_service_not_supported");
  } else if (cmd == "lookup_name") {
    reply("cmd=lookup_result rc=-1 info=name_service_not_supported msg=name_service_not_supported");
  } else {
    // Any reply beats silence: the client fails with "expecting cmd=..." instead of hanging.
    reply("cmd=error rc=-1 msg=unknown_command");
  }
}

// ---------------------------------------------------------------- PMI-2

bool PmiServer::ProcessPmi2Message(uint32_t rank, Conn& c) {
  std::string_view rest = std::string_view(c.in).substr(c.pos);
  if (rest.size() < kPmi2HeaderBytes) return false;
  auto len = ParseInt(rest.substr(0, kPmi2HeaderBytes));
  if (!len || *len <= 0 || static_cast<uint64_t>(*len) > kMaxMessageBytes) {
    Break(c);  // the framing is lost: nothing after this can be trusted
    return false;
  }
  size_t total = kPmi2HeaderBytes + static_cast<size_t>(*len);
  if (rest.size() < total) return false;
  std::string body(rest.substr(kPmi2HeaderBytes, static_cast<size_t>(*len)));
  c.pos += total;

  Pairs kv;
  bool ok = ParsePmi2Body(body, kv);
  if (!ok || kv.empty() || kv.front().first != "cmd") {
    std::string cmd = !kv.empty() && kv.front().first == "cmd" ? kv.front().second : "error";
    std::string thrid = GetOr(kv, "thrid");
    c.out += Pmi2Frame(cmd == "error" ? cmd : cmd + "-response", thrid,
                       {{"rc", "-1"}, {"errmsg", "malformed command"}});
    return true;
  }
  HandlePmi2(rank, c, kv);
  return true;
}

void PmiServer::HandlePmi2(uint32_t rank, Conn& c, const Pairs& kv) {
  const std::string& cmd = kv.front().second;
  const std::string thrid = GetOr(kv, "thrid");
  auto reply = [&](std::string_view name, const Pairs& pairs) {
    c.out += Pmi2Frame(name, thrid, pairs);
  };
  auto error = [&](std::string_view name, std::string msg) {
    reply(name, {{"rc", "-1"}, {"errmsg", std::move(msg)}});
  };
  if (cmd == "fullinit") {
    // The rank is the connection's; pmirank/pmijobid from the client are informational.
    c.finalized = false;
    Pairs r = {{"pmi-version", "2"},
               {"pmi-subversion", "0"},
               {"rank", std::to_string(rank)},
               {"size", std::to_string(info_.size)},
               {"appnum", std::to_string(info_.appnum)}};
    if (!info_.spawner_jobid.empty()) r.emplace_back("spawner-jobid", info_.spawner_jobid);
    r.emplace_back("debugged", "FALSE");
    r.emplace_back("pmiverbose", info_.pmi_verbose ? "TRUE" : "FALSE");
    r.emplace_back("rc", "0");
    reply("fullinit-response", r);
  } else if (cmd == "job-getid") {
    reply("job-getid-response", {{"jobid", kvs_name_}, {"rc", "0"}});
  } else if (cmd == "info-getjobattr") {
    std::string key = GetOr(kv, "key");
    std::string value;
    bool found = true;
    if (key == "PMI_process_mapping") {
      value = process_mapping_;
    } else if (key == "universeSize") {
      value = std::to_string(info_.universe_size ? info_.universe_size : info_.size);
    } else {
      found = false;
    }
    if (found) {
      reply("info-getjobattr-response", {{"found", "TRUE"}, {"value", value}, {"rc", "0"}});
    } else {
      reply("info-getjobattr-response", {{"found", "FALSE"}, {"rc", "0"}});
    }
  } else if (cmd == "info-putnodeattr") {
    std::string key = GetOr(kv, "key"), value = GetOr(kv, "value");
    std::string err = CheckKeyValue(key, value);
    if (!err.empty()) return error("info-putnodeattr-response", err);
    auto old = node_attrs_.find(key);
    if (old != node_attrs_.end()) stored_bytes_ -= old->first.size() + old->second.size();
    stored_bytes_ += key.size() + value.size();
    node_attrs_[key] = value;
    reply("info-putnodeattr-response", {{"rc", "0"}});
    // Answer the ranks blocked in a wait=TRUE get of this key (this rank included).
    for (auto& [waiting_rank, other] : conns_) {
      auto& ws = other.attr_waiters;
      for (auto it = ws.begin(); it != ws.end();) {
        if (it->key != key) {
          ++it;
          continue;
        }
        other.out += Pmi2Frame("info-getnodeattr-response", it->thrid,
                               {{"found", "TRUE"}, {"value", value}, {"rc", "0"}});
        it = ws.erase(it);
      }
    }
  } else if (cmd == "info-getnodeattr") {
    std::string key = GetOr(kv, "key");
    auto it = node_attrs_.find(key);
    if (it != node_attrs_.end()) {
      reply("info-getnodeattr-response", {{"found", "TRUE"}, {"value", it->second}, {"rc", "0"}});
    } else if (GetOr(kv, "wait") == "TRUE" && c.attr_waiters.size() < 1024) {
      // Held until some local rank puts the key: that is what wait=TRUE asks for. A rank whose
      // peer never puts it waits as it would under any PMI-2 server.
      c.attr_waiters.push_back({key, thrid});
    } else {
      reply("info-getnodeattr-response", {{"found", "FALSE"}, {"rc", "0"}});
    }
  } else if (cmd == "kvs-put") {
    std::string key = GetOr(kv, "key"), value = GetOr(kv, "value");
    std::string err = CheckKeyValue(key, value);
    if (!err.empty()) return error("kvs-put-response", err);
    Put(key, value);
    reply("kvs-put-response", {{"rc", "0"}});
  } else if (cmd == "kvs-get") {
    // jobid and srcid are hints; a step has one KVS.
    const std::string* value = Lookup(GetOr(kv, "key"));
    if (value) {
      reply("kvs-get-response", {{"found", "TRUE"}, {"value", *value}, {"rc", "0"}});
    } else {
      reply("kvs-get-response", {{"found", "FALSE"}, {"rc", "0"}});
    }
  } else if (cmd == "kvs-fence") {
    EnterFence(c, /*pmi2=*/true, thrid);
  } else if (cmd == "finalize") {
    c.finalized = true;
    reply("finalize-response", {{"rc", "0"}});
  } else if (cmd == "abort") {
    RecordAbort(rank, kv, "exitcode", "msg");  // no reply: the client exits
  } else if (cmd == "spawn") {
    error("spawn-response", "spawn is not supported");
  } else if (cmd == "job-connect" || cmd == "job-disconnect") {
    error(cmd + "-response", "job connection is not supported");
  } else if (cmd == "name-publish" || cmd == "name-unpublish" || cmd == "name-lookup") {
    error(cmd + "-response", "name service is not supported");
  } else {
    error(cmd.substr(0, 256) + "-response", "unknown command");
  }
}

// ---------------------------------------------------------------- both

void PmiServer::RecordAbort(uint32_t rank, const Pairs& kv, std::string_view code_key,
                            std::string_view msg_key) {
  if (aborts_.size() >= 64) return;  // one is enough to act on; keep a few for the log
  PmiAbort a;
  a.rank = rank;
  auto code = ParseInt(GetOr(kv, code_key));
  a.exit_code = code && *code >= INT32_MIN && *code <= INT32_MAX ? static_cast<int>(*code) : 1;
  a.message = GetOr(kv, msg_key).substr(0, 4096);
  aborts_.push_back(std::move(a));
}

void PmiServer::EnterFence(Conn& c, bool pmi2, std::string thrid) {
  // Each request is its own fence round, in order: a second one before the first completed (a
  // threaded PMI-2 client, or a broken one) waits for the round after.
  uint64_t epoch = epoch_ + (fence_in_flight_ ? 1 : 0);
  if (!c.fences.empty()) epoch = std::max(epoch, c.fences.back().epoch + 1);
  if (c.fences.size() >= 64) return Break(c);
  c.fences.push_back({epoch, pmi2, std::move(thrid)});
}

bool PmiServer::FenceReady() const {
  if (fence_in_flight_) return false;
  bool anyone = false;
  for (const auto& [rank, c] : conns_) {
    if (!Participating(c)) continue;
    if (c.fences.empty() || c.fences.front().epoch != epoch_) return false;
    anyone = true;
  }
  return anyone;
}

std::string PmiServer::TakeFenceContribution() {
  if (!FenceReady()) return {};
  in_flight_ = std::move(pending_);
  pending_.clear();
  fence_in_flight_ = true;
  std::string out(kFenceMagic);
  for (const auto& [k, v] : in_flight_) {
    AppendField(out, k);
    AppendField(out, v);
  }
  return out;
}

void PmiServer::CompleteFence(const std::vector<std::string>& contributions) {
  if (!fence_in_flight_) return;
  auto store = [this](const std::string& k, const std::string& v) {
    auto [it, inserted] = committed_.try_emplace(k, v);
    if (!inserted) {
      stored_bytes_ -= it->second.size();
      stored_bytes_ += v.size();
      it->second = v;
    } else {
      stored_bytes_ += k.size() + v.size();
    }
  };
  // Our own pairs first, so they survive even if srun's answer lacks this node's part; they were
  // counted in stored_bytes_ when put and are counted again by store(), so uncount them here.
  for (const auto& [k, v] : in_flight_) {
    stored_bytes_ -= k.size() + v.size();
    store(k, v);
  }
  in_flight_.clear();
  for (const std::string& contribution : contributions) {
    auto pairs = ParseContribution(contribution);
    if (!pairs) continue;  // malformed: skipped whole
    for (const auto& [k, v] : *pairs) store(k, v);
  }
  uint64_t done = epoch_;
  ++epoch_;
  fence_in_flight_ = false;
  for (auto& [rank, c] : conns_) {
    while (!c.fences.empty() && c.fences.front().epoch <= done) {
      const FenceWaiter& w = c.fences.front();
      if (w.pmi2) {
        c.out += Pmi2Frame("kvs-fence-response", w.thrid, {{"rc", "0"}});
      } else {
        c.out += "cmd=barrier_out rc=0\n";
      }
      c.fences.pop_front();
    }
  }
}

std::string PmiServer::CheckKeyValue(std::string_view key, std::string_view value) const {
  if (key.empty()) return "missing key";
  if (key.size() > kMaxKeyBytes) return "key too long";
  if (value.size() > kMaxValueBytes) return "value too long";
  // Keys must survive both wire formats unchanged; values only need to stay one line.
  if (key.find_first_of(std::string_view(" \t\r\n=;\0", 7)) != std::string_view::npos)
    return "invalid key";
  if (value.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos)
    return "invalid value";
  if (stored_bytes_ + key.size() + value.size() > kMaxStoredBytes) return "kvs full";
  return {};
}

void PmiServer::Put(const std::string& key, const std::string& value) {
  auto [it, inserted] = pending_.try_emplace(key, value);
  if (!inserted) {
    stored_bytes_ -= it->second.size();
    it->second = value;
    stored_bytes_ += value.size();
  } else {
    stored_bytes_ += key.size() + value.size();
  }
}

const std::string* PmiServer::Lookup(const std::string& key) const {
  for (const auto* map : {&pending_, &in_flight_, &committed_}) {
    auto it = map->find(key);
    if (it != map->end()) return &it->second;
  }
  return nullptr;
}

}  // namespace shoal::noded
