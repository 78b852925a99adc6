#include "noded/pmi_server.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <map>
#include <random>
#include <sstream>

namespace shoal::noded {
namespace {

using Msg = std::map<std::string, std::string>;

// ---- client-side helpers: what an MPI library would send and parse ----

std::string Pmi2(std::string_view body) {
  std::string len = std::to_string(body.size());
  len.resize(6, ' ');
  return len + std::string(body);
}

// Feeds `bytes` in pieces of `chunk` bytes, as a socket may deliver them.
void Feed(PmiServer& s, uint32_t rank, std::string_view bytes, size_t chunk = 1) {
  for (size_t i = 0; i < bytes.size(); i += chunk) s.OnBytes(rank, bytes.substr(i, chunk));
}

std::vector<std::string> Lines(const std::string& replies) {
  std::vector<std::string> out;
  std::istringstream in(replies);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

Msg ParsePmi1(const std::string& line) {
  Msg m;
  std::istringstream in(line);
  for (std::string tok; in >> tok;) {
    auto eq = tok.find('=');
    m[tok.substr(0, eq)] = eq == std::string::npos ? "" : tok.substr(eq + 1);
  }
  return m;
}

// Parses every PMI-2 message in `replies`; fails the test on a framing error.
std::vector<Msg> ParsePmi2(const std::string& replies) {
  std::vector<Msg> out;
  size_t pos = 0;
  while (pos < replies.size()) {
    EXPECT_GE(replies.size() - pos, 6u) << replies;
    if (replies.size() - pos < 6) break;
    size_t len = std::stoul(replies.substr(pos, 6));
    EXPECT_LE(pos + 6 + len, replies.size()) << replies;
    std::string body = replies.substr(pos + 6, len);
    pos += 6 + len;
    EXPECT_EQ(body.back(), ';') << body;
    Msg m;
    size_t i = 0;
    while (i < body.size()) {
      size_t eq = body.find('=', i);
      EXPECT_NE(eq, std::string::npos) << body;
      if (eq == std::string::npos) break;
      std::string key = body.substr(i, eq - i), value;
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
      m[key] = value;
      i = j + 1;
    }
    out.push_back(m);
  }
  return out;
}

Msg OnePmi2Parse(const std::string& replies) {
  auto msgs = ParsePmi2(replies);
  EXPECT_EQ(msgs.size(), 1u);
  return msgs.empty() ? Msg{} : msgs.front();
}

Msg OnePmi2(PmiServer& s, uint32_t rank) {
  auto msgs = ParsePmi2(s.TakeReplies(rank));
  EXPECT_EQ(msgs.size(), 1u);
  return msgs.empty() ? Msg{} : msgs.front();
}

Msg OnePmi1(PmiServer& s, uint32_t rank) {
  auto lines = Lines(s.TakeReplies(rank));
  EXPECT_EQ(lines.size(), 1u);
  return lines.empty() ? Msg{} : ParsePmi1(lines.front());
}

PmiStepInfo OneNode(uint32_t ntasks) {
  PmiStepInfo info;
  info.job_id = 42;
  info.step_id = 0;
  info.size = ntasks;
  info.tasks_per_node = {ntasks};
  for (uint32_t r = 0; r < ntasks; ++r) info.local_ranks.push_back(r);
  return info;
}

// Runs a fence on every server as srun would: all contributions, in node order, to each.
void RunFence(std::vector<PmiServer*> nodes) {
  std::vector<std::string> contributions;
  for (PmiServer* s : nodes) {
    ASSERT_TRUE(s->FenceReady());
    contributions.push_back(s->TakeFenceContribution());
    EXPECT_FALSE(s->FenceReady());
  }
  for (PmiServer* s : nodes) s->CompleteFence(contributions);
}

// Expands a mapping string the way MPICH does (repeat the blocks until every rank has a node,
// restarting at the first block that starts at node 0).
std::vector<uint32_t> ExpandMapping(const std::string& mapping, size_t nranks) {
  std::vector<std::array<uint32_t, 3>> blocks;
  size_t pos = mapping.find('(', 1);
  while (pos != std::string::npos) {
    std::array<uint32_t, 3> b{};
    EXPECT_EQ(sscanf(mapping.c_str() + pos, "(%u,%u,%u)", &b[0], &b[1], &b[2]), 3) << mapping;
    blocks.push_back(b);
    pos = mapping.find('(', pos + 1);
  }
  std::vector<uint32_t> node_of;
  bool wrapped = false;
  while (node_of.size() < nranks && !blocks.empty()) {
    size_t first = 0;
    while (wrapped && first < blocks.size() && blocks[first][0] != 0) ++first;
    if (first == blocks.size()) break;
    for (size_t b = first; b < blocks.size() && node_of.size() < nranks; ++b) {
      if (blocks[b][0] == 0) wrapped = true;
      for (uint32_t n = 0; n < blocks[b][1]; ++n)
        for (uint32_t k = 0; k < blocks[b][2] && node_of.size() < nranks; ++k)
          node_of.push_back(blocks[b][0] + n);
    }
  }
  return node_of;
}

// ---- process mapping ----

TEST(PmiProcessMapping, BlockAndUneven) {
  PmiStepInfo info;
  info.size = 6;
  info.tasks_per_node = {3, 3};
  EXPECT_EQ(PmiServer::ProcessMapping(info), "(vector,(0,2,3))");
  info.size = 5;
  info.tasks_per_node = {3, 2};
  EXPECT_EQ(PmiServer::ProcessMapping(info), "(vector,(0,1,3),(1,1,2))");
  info.size = 4;
  info.tasks_per_node = {4};
  EXPECT_EQ(PmiServer::ProcessMapping(info), "(vector,(0,1,4))");
  info.size = 5;
  info.tasks_per_node = {2, 2, 1};
  EXPECT_EQ(PmiServer::ProcessMapping(info), "(vector,(0,2,2),(2,1,1))");
  info.size = 3;
  info.tasks_per_node = {};
  EXPECT_EQ(PmiServer::ProcessMapping(info), "(vector,(0,1,3))");
}

TEST(PmiProcessMapping, CyclicAndArbitraryPlacement) {
  PmiStepInfo info;
  info.size = 5;
  info.tasks_per_node = {3, 2};
  info.node_ranks = {{0, 2, 4}, {1, 3}};  // -m cyclic
  EXPECT_EQ(PmiServer::ProcessMapping(info), "(vector,(0,2,1))");
  info.size = 2;
  info.tasks_per_node = {1, 1};
  info.node_ranks = {{1}, {0}};  // rank 0 on node 1: the full list, never repeated
  EXPECT_EQ(PmiServer::ProcessMapping(info), "(vector,(1,1,1),(0,1,1))");
  info.node_ranks = {{0, 0}, {1}};  // inconsistent: falls back to tasks_per_node
  EXPECT_EQ(PmiServer::ProcessMapping(info), "(vector,(0,2,1))");
}

TEST(PmiProcessMapping, RandomPlacementsExpandBackExactly) {
  std::mt19937 rng(7);
  for (int iter = 0; iter < 500; ++iter) {
    uint32_t nodes = 1 + rng() % 6, ntasks = 1 + rng() % 40;
    PmiStepInfo info;
    info.size = ntasks;
    info.node_ranks.resize(nodes);
    std::vector<uint32_t> node_of(ntasks);
    int style = iter % 3;
    for (uint32_t r = 0; r < ntasks; ++r) {
      node_of[r] = style == 0 ? r % nodes : style == 1 ? r * nodes / ntasks : rng() % nodes;
      info.node_ranks[node_of[r]].push_back(r);
    }
    std::string mapping = PmiServer::ProcessMapping(info);
    EXPECT_EQ(ExpandMapping(mapping, ntasks), node_of) << mapping;
  }
}

// ---- environment ----

TEST(PmiServer, TaskEnvironment) {
  PmiServer s(OneNode(4));
  auto env = s.TaskEnvironment(2, 7);
  std::map<std::string, std::string> m;
  for (const auto& e : env) m[e.substr(0, e.find('='))] = e.substr(e.find('=') + 1);
  EXPECT_EQ(m["PMI_FD"], "7");
  EXPECT_EQ(m["PMI_RANK"], "2");
  EXPECT_EQ(m["PMI_SIZE"], "4");
  EXPECT_EQ(m["PMI_JOBID"], "42.0");
  EXPECT_EQ(s.KvsName(), "42.0");
}

// ---- PMI-1 ----

TEST(PmiServer, Pmi1SessionByteByByte) {
  PmiStepInfo info = OneNode(2);
  info.appnum = 3;
  info.universe_size = 8;
  PmiServer s(info);
  Feed(s, 0, "cmd=init pmi_version=1 pmi_subversion=1\n");
  Msg m = OnePmi1(s, 0);
  EXPECT_EQ(m["cmd"], "response_to_init");
  EXPECT_EQ(m["pmi_version"], "1");
  EXPECT_EQ(m["pmi_subversion"], "1");
  EXPECT_EQ(m["rc"], "0");

  Feed(s, 0, "cmd=get_maxes\n");
  m = OnePmi1(s, 0);
  EXPECT_EQ(m["cmd"], "maxes");
  EXPECT_EQ(m["kvsname_max"], "256");
  EXPECT_EQ(m["keylen_max"], "64");
  EXPECT_EQ(m["vallen_max"], "1024");

  Feed(s, 0, "cmd=get_appnum\ncmd=get_my_kvsname\ncmd=get_universe_size\n", 5);
  auto lines = Lines(s.TakeReplies(0));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(ParsePmi1(lines[0])["appnum"], "3");
  EXPECT_EQ(ParsePmi1(lines[1])["cmd"], "my_kvsname");
  EXPECT_EQ(ParsePmi1(lines[1])["kvsname"], "42.0");
  EXPECT_EQ(ParsePmi1(lines[2])["cmd"], "universe_size");
  EXPECT_EQ(ParsePmi1(lines[2])["size"], "8");

  Feed(s, 0, "cmd=put kvsname=42.0 key=bc-0 value=addr=0a0b;x\n", 3);
  m = OnePmi1(s, 0);
  EXPECT_EQ(m["cmd"], "put_result");
  EXPECT_EQ(m["rc"], "0");
  Feed(s, 0, "cmd=get kvsname=42.0 key=bc-0\n");  // own value, before the fence
  m = OnePmi1(s, 0);
  EXPECT_EQ(m["cmd"], "get_result");
  EXPECT_EQ(m["rc"], "0");
  EXPECT_EQ(m["value"], "addr=0a0b;x");
  Feed(s, 0, "cmd=get kvsname=42.0 key=nope\n");
  m = OnePmi1(s, 0);
  EXPECT_EQ(m["cmd"], "get_result");
  EXPECT_EQ(m["rc"], "-1");
  EXPECT_FALSE(m["msg"].empty());
  Feed(s, 0, "cmd=get kvsname=42.0 key=PMI_process_mapping\n");
  EXPECT_EQ(OnePmi1(s, 0)["value"], "(vector,(0,1,2))");

  Feed(s, 0, "cmd=barrier_in\n");
  EXPECT_EQ(s.TakeReplies(0), "");
  EXPECT_FALSE(s.FenceReady());  // rank 1 has not entered yet
  Feed(s, 1, "cmd=init pmi_version=1 pmi_subversion=1\ncmd=barrier_in\n", 7);
  EXPECT_EQ(OnePmi1(s, 1)["cmd"], "response_to_init");
  RunFence({&s});
  EXPECT_EQ(OnePmi1(s, 0)["cmd"], "barrier_out");
  EXPECT_EQ(OnePmi1(s, 1)["cmd"], "barrier_out");
  Feed(s, 1, "cmd=get kvsname=42.0 key=bc-0\n");
  EXPECT_EQ(OnePmi1(s, 1)["value"], "addr=0a0b;x");

  EXPECT_FALSE(s.Finalized(0));
  Feed(s, 0, "cmd=finalize\n");
  EXPECT_EQ(OnePmi1(s, 0)["cmd"], "finalize_ack");
  EXPECT_TRUE(s.Finalized(0));
  s.OnClosed(0);
  EXPECT_FALSE(s.TakeAbort());
}

TEST(PmiServer, Pmi1InitackAndOddCommands) {
  PmiServer s(OneNode(3));
  Feed(s, 1, "cmd=initack pmiid=1\n");
  auto lines = Lines(s.TakeReplies(1));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(ParsePmi1(lines[0])["cmd"], "initack");
  EXPECT_EQ(ParsePmi1(lines[1])["size"], "3");
  EXPECT_EQ(ParsePmi1(lines[2])["rank"], "1");
  EXPECT_EQ(ParsePmi1(lines[3])["debug"], "0");

  Feed(s, 1, "cmd=publish_name service=svc port=p\n");
  Msg m = OnePmi1(s, 1);
  EXPECT_EQ(m["cmd"], "publish_result");
  EXPECT_NE(m["rc"], "0");
  Feed(s, 1, "cmd=lookup_name service=svc\n");
  EXPECT_EQ(OnePmi1(s, 1)["cmd"], "lookup_result");
  Feed(s, 1, "cmd=unpublish_name service=svc\n");
  EXPECT_EQ(OnePmi1(s, 1)["cmd"], "unpublish_result");
  Feed(s, 1, "cmd=frobnicate\n\n   \ngarbage\n");
  lines = Lines(s.TakeReplies(1));
  ASSERT_EQ(lines.size(), 2u);  // blank lines are skipped, each command gets an answer
  EXPECT_EQ(ParsePmi1(lines[0])["rc"], "-1");
  EXPECT_EQ(ParsePmi1(lines[1])["rc"], "-1");
  Feed(s, 1, "cmd=init pmi_version=3 pmi_subversion=0\n");
  m = OnePmi1(s, 1);
  EXPECT_EQ(m["cmd"], "response_to_init");
  EXPECT_NE(m["rc"], "0");
  EXPECT_FALSE(s.Broken(1));
}

TEST(PmiServer, Pmi1SpawnAnswersOnceAfterTheLastBlock) {
  PmiServer s(OneNode(1));
  std::string block1 =
      "mcmd=spawn\nnprocs=1\nexecname=/bin/x\ntotspawns=2\nspawnssofar=1\nargcnt=0\nendcmd\n";
  std::string block2 =
      "mcmd=spawn\nnprocs=1\nexecname=/bin/y\ntotspawns=2\nspawnssofar=2\nargcnt=0\nendcmd\n";
  Feed(s, 0, block1, 4);
  EXPECT_EQ(s.TakeReplies(0), "");
  Feed(s, 0, block2, 4);
  Msg m = OnePmi1(s, 0);
  EXPECT_EQ(m["cmd"], "spawn_result");
  EXPECT_NE(m["rc"], "0");
  Feed(s, 0, "cmd=get_appnum\n");  // the connection is still in step
  EXPECT_EQ(OnePmi1(s, 0)["cmd"], "appnum");
}

TEST(PmiServer, Pmi1Abort) {
  PmiServer s(OneNode(2));
  Feed(s, 1, "cmd=abort exitcode=13 message=rank 1 gave up\n");
  EXPECT_EQ(s.TakeReplies(1), "");
  auto a = s.TakeAbort();
  ASSERT_TRUE(a);
  EXPECT_EQ(a->rank, 1u);
  EXPECT_EQ(a->exit_code, 13);
  EXPECT_EQ(a->message, "rank 1 gave up");
  EXPECT_FALSE(s.TakeAbort());
}

// ---- PMI-2 ----

TEST(PmiServer, Pmi2SessionByteByByteAfterPmi1Handshake) {
  PmiStepInfo info = OneNode(2);
  info.appnum = 1;
  PmiServer s(info);
  Feed(s, 1, "cmd=init pmi_version=2 pmi_subversion=0\n");
  Msg m = OnePmi1(s, 1);
  EXPECT_EQ(m["cmd"], "response_to_init");
  EXPECT_EQ(m["pmi_version"], "2");
  EXPECT_EQ(m["pmi_subversion"], "0");
  EXPECT_EQ(m["rc"], "0");

  Feed(s, 1, Pmi2("cmd=fullinit;pmijobid=42.0;pmirank=1;threaded=FALSE;"));
  m = OnePmi2(s, 1);
  EXPECT_EQ(m["cmd"], "fullinit-response");
  EXPECT_EQ(m["rc"], "0");
  EXPECT_EQ(m["pmi-version"], "2");
  EXPECT_EQ(m["pmi-subversion"], "0");
  EXPECT_EQ(m["rank"], "1");
  EXPECT_EQ(m["size"], "2");
  EXPECT_EQ(m["appnum"], "1");
  EXPECT_EQ(m["debugged"], "FALSE");
  EXPECT_EQ(m["pmiverbose"], "FALSE");
  EXPECT_EQ(m.count("spawner-jobid"), 0u);  // its presence means "spawned" to MPICH

  Feed(s, 1, Pmi2("cmd=job-getid;"));
  m = OnePmi2(s, 1);
  EXPECT_EQ(m["cmd"], "job-getid-response");
  EXPECT_EQ(m["jobid"], "42.0");
  Feed(s, 1, Pmi2("cmd=info-getjobattr;key=PMI_process_mapping;"));
  m = OnePmi2(s, 1);
  EXPECT_EQ(m["found"], "TRUE");
  EXPECT_EQ(m["value"], "(vector,(0,1,2))");
  Feed(s, 1, Pmi2("cmd=info-getjobattr;key=universeSize;"), 2);
  EXPECT_EQ(OnePmi2(s, 1)["value"], "2");
  Feed(s, 1, Pmi2("cmd=info-getjobattr;key=PMI_hwloc_xmlfile;"));
  m = OnePmi2(s, 1);
  EXPECT_EQ(m["found"], "FALSE");
  EXPECT_EQ(m["rc"], "0");

  Feed(s, 1, Pmi2("cmd=kvs-put;key=bc-1;value=a;;b=c;"));  // value "a;b=c"
  EXPECT_EQ(OnePmi2(s, 1)["rc"], "0");
  Feed(s, 1, Pmi2("cmd=kvs-get;jobid=42.0;srcid=-1;key=bc-1;"));
  m = OnePmi2(s, 1);
  EXPECT_EQ(m["cmd"], "kvs-get-response");
  EXPECT_EQ(m["found"], "TRUE");
  EXPECT_EQ(m["value"], "a;b=c");
  Feed(s, 1, Pmi2("cmd=kvs-get;jobid=42.0;srcid=-1;key=bc-0;"));
  m = OnePmi2(s, 1);
  EXPECT_EQ(m["found"], "FALSE");
  EXPECT_EQ(m["rc"], "0");

  Feed(s, 1, Pmi2("cmd=kvs-fence;"));
  Feed(s, 0, Pmi2("cmd=fullinit;pmirank=0;threaded=FALSE;"));  // PMI-2 framing from the start
  EXPECT_EQ(OnePmi2(s, 0)["rank"], "0");
  Feed(s, 0, Pmi2("cmd=kvs-put;key=bc-0;value=zero;") + Pmi2("cmd=kvs-fence;"), 3);
  EXPECT_EQ(OnePmi2(s, 0)["cmd"], "kvs-put-response");
  RunFence({&s});
  EXPECT_EQ(OnePmi2(s, 0)["cmd"], "kvs-fence-response");
  m = OnePmi2(s, 1);
  EXPECT_EQ(m["cmd"], "kvs-fence-response");
  EXPECT_EQ(m["rc"], "0");
  Feed(s, 1, Pmi2("cmd=kvs-get;key=bc-0;"));
  EXPECT_EQ(OnePmi2(s, 1)["value"], "zero");

  Feed(s, 1, Pmi2("cmd=finalize;"));
  m = OnePmi2(s, 1);
  EXPECT_EQ(m["cmd"], "finalize-response");
  EXPECT_EQ(m["rc"], "0");
  EXPECT_TRUE(s.Finalized(1));
}

TEST(PmiServer, Pmi2EchoesThreadIdsAndSpawnerJobid) {
  PmiStepInfo info = OneNode(1);
  info.spawner_jobid = "7.0";
  info.pmi_verbose = true;
  PmiServer s(info);
  Feed(s, 0, Pmi2("cmd=fullinit;pmirank=0;threaded=TRUE;"));
  Msg m = OnePmi2(s, 0);
  EXPECT_EQ(m["spawner-jobid"], "7.0");
  EXPECT_EQ(m["pmiverbose"], "TRUE");
  Feed(s, 0, Pmi2("cmd=kvs-put;thrid=0x55aa;key=k;value=v;"));
  m = OnePmi2(s, 0);
  EXPECT_EQ(m["thrid"], "0x55aa");
  EXPECT_EQ(m["rc"], "0");
  Feed(s, 0, Pmi2("cmd=kvs-fence;thrid=0x77;"));
  RunFence({&s});
  m = OnePmi2(s, 0);
  EXPECT_EQ(m["cmd"], "kvs-fence-response");
  EXPECT_EQ(m["thrid"], "0x77");
}

TEST(PmiServer, Pmi2NodeAttributesAndWait) {
  PmiServer s(OneNode(2));
  Feed(s, 0, Pmi2("cmd=info-getnodeattr;key=shm;wait=FALSE;"));
  Msg m = OnePmi2(s, 0);
  EXPECT_EQ(m["cmd"], "info-getnodeattr-response");
  EXPECT_EQ(m["found"], "FALSE");
  Feed(s, 0, Pmi2("cmd=info-getnodeattr;thrid=t1;key=shm;wait=TRUE;"));
  EXPECT_EQ(s.TakeReplies(0), "");  // held until someone puts it
  Feed(s, 1, Pmi2("cmd=info-putnodeattr;key=shm;value=/dev/shm/seg;"));
  EXPECT_EQ(OnePmi2(s, 1)["cmd"], "info-putnodeattr-response");
  m = OnePmi2(s, 0);
  EXPECT_EQ(m["found"], "TRUE");
  EXPECT_EQ(m["value"], "/dev/shm/seg");
  EXPECT_EQ(m["thrid"], "t1");
  Feed(s, 1, Pmi2("cmd=info-getnodeattr;key=shm;"));
  EXPECT_EQ(OnePmi2(s, 1)["value"], "/dev/shm/seg");
  // Node attributes never leave the node and are not in the job KVS.
  Feed(s, 1, Pmi2("cmd=kvs-get;key=shm;"));
  EXPECT_EQ(OnePmi2(s, 1)["found"], "FALSE");
}

TEST(PmiServer, Pmi2UnsupportedCommandsAnswerErrors) {
  PmiServer s(OneNode(1));
  for (std::string cmd : {"spawn", "job-connect", "job-disconnect", "name-publish", "name-lookup",
                          "name-unpublish", "ring", "what-is-this"}) {
    Feed(s, 0, Pmi2("cmd=" + cmd + ";ncmds=1;"));
    Msg m = OnePmi2(s, 0);
    EXPECT_EQ(m["cmd"], cmd + "-response");
    EXPECT_EQ(m["rc"], "-1");
    EXPECT_FALSE(m["errmsg"].empty());
  }
}

TEST(PmiServer, Pmi2Abort) {
  PmiServer s(OneNode(1));
  Feed(s, 0, Pmi2("cmd=abort;isworld=TRUE;msg=out of memory;; really;"));
  EXPECT_EQ(s.TakeReplies(0), "");
  auto a = s.TakeAbort();
  ASSERT_TRUE(a);
  EXPECT_EQ(a->rank, 0u);
  EXPECT_EQ(a->exit_code, 1);
  EXPECT_EQ(a->message, "out of memory; really");
}

// ---- fences across nodes ----

TEST(PmiServer, FenceAcrossTwoNodesWithBothProtocols) {
  PmiStepInfo a, b;
  a.job_id = b.job_id = 9;
  a.size = b.size = 5;
  a.tasks_per_node = b.tasks_per_node = {3, 2};
  a.node_id = 0;
  a.local_ranks = {0, 1, 2};
  b.node_id = 1;
  b.local_ranks = {3, 4};
  PmiServer na(a), nb(b);
  auto server = [&](uint32_t r) -> PmiServer& { return r < 3 ? na : nb; };
  auto pmi2 = [](uint32_t r) { return r % 2 == 1; };
  for (int round = 0; round < 3; ++round) {
    for (uint32_t r = 0; r < 5; ++r) {
      std::string key = "bc-" + std::to_string(r) + "-" + std::to_string(round);
      std::string value = "v" + std::to_string(r * 10 + round);
      if (pmi2(r)) {
        Feed(server(r), r, Pmi2("cmd=kvs-put;key=" + key + ";value=" + value + ";"), 4);
        Feed(server(r), r, Pmi2("cmd=kvs-fence;"), 4);
      } else {
        Feed(server(r), r, "cmd=put kvsname=9.0 key=" + key + " value=" + value + "\n", 4);
        Feed(server(r), r, "cmd=barrier_in\n", 4);
      }
      server(r).TakeReplies(r);  // the put answers
      bool last_on_node = r == 2 || r == 4;
      EXPECT_EQ(server(r).FenceReady(), last_on_node) << "rank " << r;
    }
    RunFence({&na, &nb});
    for (uint32_t r = 0; r < 5; ++r) {
      std::string replies = server(r).TakeReplies(r);
      if (pmi2(r)) {
        EXPECT_EQ(OnePmi2Parse(replies)["cmd"], "kvs-fence-response");
      } else {
        EXPECT_EQ(replies, "cmd=barrier_out rc=0\n");
      }
    }
    // Every rank sees every rank's value of this round.
    for (uint32_t r = 0; r < 5; ++r) {
      for (uint32_t from = 0; from < 5; ++from) {
        std::string key = "bc-" + std::to_string(from) + "-" + std::to_string(round);
        std::string want = "v" + std::to_string(from * 10 + round);
        if (pmi2(r)) {
          Feed(server(r), r, Pmi2("cmd=kvs-get;key=" + key + ";"));
          EXPECT_EQ(OnePmi2(server(r), r)["value"], want);
        } else {
          Feed(server(r), r, "cmd=get kvsname=9.0 key=" + key + "\n");
          EXPECT_EQ(OnePmi1(server(r), r)["value"], want);
        }
      }
    }
  }
}

TEST(PmiServer, ClosedAndFinalizedRanksDoNotHoldTheFence) {
  PmiServer s(OneNode(3));
  Feed(s, 0, "cmd=barrier_in\n");
  EXPECT_FALSE(s.FenceReady());
  s.OnClosed(1);  // died without finalize
  EXPECT_FALSE(s.FenceReady());
  Feed(s, 2, "cmd=finalize\n");
  EXPECT_EQ(OnePmi1(s, 2)["cmd"], "finalize_ack");
  EXPECT_TRUE(s.FenceReady());
  RunFence({&s});
  EXPECT_EQ(OnePmi1(s, 0)["cmd"], "barrier_out");
  EXPECT_EQ(s.TakeReplies(1), "");  // closed: nothing to write
  // A rank that closes while waiting in a fence stops counting as well.
  PmiServer t(OneNode(2));
  Feed(t, 0, "cmd=barrier_in\n");
  t.OnClosed(0);
  EXPECT_FALSE(t.FenceReady());  // nobody waits any more
  Feed(t, 1, "cmd=barrier_in\n");
  EXPECT_TRUE(t.FenceReady());
}

TEST(PmiServer, PipelinedFenceRequestsAreSeparateRounds) {
  PmiServer s(OneNode(2));
  Feed(s, 0, Pmi2("cmd=kvs-fence;thrid=a;") + Pmi2("cmd=kvs-fence;thrid=b;"));
  Feed(s, 1, "cmd=barrier_in\n");
  RunFence({&s});
  auto msgs = ParsePmi2(s.TakeReplies(0));
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_EQ(msgs[0]["thrid"], "a");
  EXPECT_EQ(s.TakeReplies(1), "cmd=barrier_out rc=0\n");
  EXPECT_FALSE(s.FenceReady());  // rank 1 has not entered round 2
  Feed(s, 1, "cmd=barrier_in\n");
  RunFence({&s});
  EXPECT_EQ(OnePmi2(s, 0)["thrid"], "b");
}

TEST(PmiServer, FenceApiMisuseIsHarmless) {
  PmiServer s(OneNode(2));
  EXPECT_FALSE(s.FenceReady());
  EXPECT_EQ(s.TakeFenceContribution(), "");
  s.CompleteFence({"F1:1:k1:v"});  // no fence in flight: ignored
  Feed(s, 0, "cmd=get kvsname=x key=k\n");
  EXPECT_EQ(OnePmi1(s, 0)["rc"], "-1");

  Feed(s, 0, "cmd=put kvsname=x key=mine value=1\ncmd=barrier_in\n");
  s.TakeReplies(0);
  Feed(s, 1, "cmd=barrier_in\n");
  ASSERT_TRUE(s.FenceReady());
  std::string own = s.TakeFenceContribution();
  // srun's answer: garbage, a truncated record, a good one; our own part is missing.
  s.CompleteFence({"", "nonsense", "F1:5:other", "F1:3:abc3:xyz", own.substr(0, own.size() - 1),
                   std::string("F1:1:q\0:", 8), "F1:99999999999:x"});
  EXPECT_EQ(OnePmi1(s, 0)["cmd"], "barrier_out");
  Feed(s, 0, "cmd=get kvsname=x key=abc\n");
  EXPECT_EQ(OnePmi1(s, 0)["value"], "xyz");
  Feed(s, 0, "cmd=get kvsname=x key=mine\n");  // kept from our own pairs
  EXPECT_EQ(OnePmi1(s, 0)["value"], "1");
  Feed(s, 0, "cmd=get kvsname=x key=other\n");
  EXPECT_EQ(OnePmi1(s, 0)["rc"], "-1");
}

// ---- hostile input ----

TEST(PmiServer, RefusesBadKeysAndValues) {
  PmiServer s(OneNode(2));
  Feed(s, 0, "cmd=put kvsname=x key= value=1\n");
  EXPECT_EQ(OnePmi1(s, 0)["rc"], "-1");
  Feed(s, 0, "cmd=put kvsname=x key=" + std::string(300, 'k') + " value=1\n");
  EXPECT_EQ(OnePmi1(s, 0)["rc"], "-1");
  Feed(s, 0,
       "cmd=put kvsname=x key=k value=" + std::string(PmiServer::kMaxValueBytes + 1, 'v') + "\n",
       4096);
  EXPECT_EQ(OnePmi1(s, 0)["rc"], "-1");
  // The protocol is fixed per connection: rank 1 speaks PMI-2.
  Feed(s, 1, Pmi2("cmd=kvs-put;key=a;;b;value=1;"));  // a ';' in the key
  Msg m = OnePmi2(s, 1);
  EXPECT_EQ(m["cmd"], "kvs-put-response");
  EXPECT_EQ(m["rc"], "-1");
  Feed(s, 1, Pmi2(std::string("cmd=kvs-put;key=z;value=a\nb;")));
  EXPECT_EQ(OnePmi2(s, 1)["rc"], "-1");
  Feed(s, 1,
       Pmi2("cmd=kvs-put;key=z;value=" + std::string(PmiServer::kMaxValueBytes + 1, 'v') + ";"));
  EXPECT_EQ(OnePmi2(s, 1)["rc"], "-1");
  EXPECT_FALSE(s.Broken(0));
  EXPECT_FALSE(s.Broken(1));
}

TEST(PmiServer, BrokenFramingStopsServingThatRankOnly) {
  PmiServer s(OneNode(3));
  Feed(s, 0, Pmi2("cmd=fullinit;pmirank=0;"));
  s.TakeReplies(0);
  Feed(s, 0, "12x456cmd=kvs-fence;");  // not a length
  EXPECT_TRUE(s.Broken(0));
  EXPECT_EQ(s.TakeReplies(0), "");
  Feed(s, 0, Pmi2("cmd=kvs-fence;"));  // ignored from now on
  EXPECT_EQ(s.TakeReplies(0), "");

  Feed(s, 1, "  -123");  // a negative length
  EXPECT_TRUE(s.Broken(1));
  Feed(s, 2, "000000");  // empty message
  EXPECT_TRUE(s.Broken(2));

  PmiServer t(OneNode(2));
  std::string endless(PmiServer::kMaxMessageBytes + 10, 'x');  // a PMI-1 line with no end
  Feed(t, 0, "cmd=put key=k value=" + endless, 65536);
  EXPECT_TRUE(t.Broken(0));
  Feed(t, 1, "cmd=barrier_in\n");
  EXPECT_TRUE(t.FenceReady());  // the broken rank does not hold the others
}

TEST(PmiServer, MalformedPmi2BodyGetsAnErrorReply) {
  PmiServer s(OneNode(1));
  Feed(s, 0, Pmi2("cmd=kvs-put;novalue;"));
  Msg m = OnePmi2(s, 0);
  EXPECT_EQ(m["cmd"], "kvs-put-response");
  EXPECT_EQ(m["rc"], "-1");
  Feed(s, 0, Pmi2("key=v;cmd=kvs-get;"));  // cmd must come first
  m = OnePmi2(s, 0);
  EXPECT_EQ(m["rc"], "-1");
  Feed(s, 0, Pmi2("cmd=kvs-get;key=x"));  // no final ';' is tolerated
  EXPECT_EQ(OnePmi2(s, 0)["found"], "FALSE");
  EXPECT_FALSE(s.Broken(0));
}

TEST(PmiServer, RepliesBackUpAndResumeThroughTakeReplies) {
  PmiServer s(OneNode(1));
  std::string big(60000, 'v');
  Feed(s, 0, "cmd=put kvsname=x key=big value=" + big + "\n", 8192);
  ASSERT_EQ(OnePmi1(s, 0)["rc"], "0");
  std::string gets;
  for (int i = 0; i < 100; ++i) gets += "cmd=get kvsname=x key=big\n";
  s.OnBytes(0, gets);  // 100 x 60 kB of answers for 2.6 kB of questions
  size_t answered = 0;
  for (int round = 0; round < 10 && answered < 100; ++round) {
    std::string r = s.TakeReplies(0);
    EXPECT_LE(r.size(), 2 * PmiServer::kMaxPendingReplyBytes + 2 * big.size());
    answered += Lines(r).size();
  }
  EXPECT_EQ(answered, 100u);
  EXPECT_FALSE(s.Broken(0));
}

TEST(PmiServer, RandomGarbageNeverCrashes) {
  std::mt19937 rng(1234);
  const std::string pieces[] = {"cmd=",         "init",     " pmi_version=2", "\n",     ";",
                                ";;",           "=",        "000012",         "     9", "kvs-fence",
                                "mcmd=spawn\n", "endcmd\n", "barrier_in",     "key=",   "value="};
  for (int iter = 0; iter < 300; ++iter) {
    PmiStepInfo info = OneNode(3);
    PmiServer s(info);
    for (int step = 0; step < 200; ++step) {
      uint32_t rank = rng() % 4;  // rank 3 is not local: ignored
      std::string bytes;
      if (rng() % 2) {
        bytes = pieces[rng() % std::size(pieces)];
      } else {
        for (int k = rng() % 20; k > 0; --k) bytes += static_cast<char>(rng() % 256);
      }
      s.OnBytes(rank, bytes);
      s.TakeReplies(rank);
      if (rng() % 50 == 0) s.OnClosed(rank);
      if (s.FenceReady()) {
        std::string mine = s.TakeFenceContribution();
        s.CompleteFence({mine, bytes});
      }
      while (s.TakeAbort()) {
      }
    }
  }
}

}  // namespace
}  // namespace shoal::noded
