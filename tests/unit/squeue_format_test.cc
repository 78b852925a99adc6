#include "cli/squeue_format.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>

#include "cli/format_fields.h"
#include "common/units.h"

namespace shoal::cli {
namespace {

// Timestamps in the expected strings are UTC.
const bool kUtc = [] {
  setenv("TZ", "UTC", 1);
  tzset();
  return true;
}();

constexpr int64_t kNow = 1700000000;  // 2023-11-14T22:13:20Z

pb::JobRecord Job(uint32_t id, pb::JobState state, const std::string& part, const std::string& name,
                  const std::string& user) {
  pb::JobRecord j;
  j.set_job_id(id);
  j.set_state(state);
  j.set_partition(part);
  j.mutable_spec()->set_name(name);
  j.mutable_spec()->set_user_name(user);
  j.mutable_spec()->set_uid(1000);
  j.mutable_spec()->set_gid(1000);
  j.set_array_task_id(kNoArrayTask);
  j.set_time_limit(60);
  j.set_num_nodes(1);
  j.set_num_cpus(1);
  j.set_submit_time(kNow - 1000);
  return j;
}

pb::JobRecord Running(uint32_t id, const std::string& part, const std::string& name,
                      const std::string& user, int64_t elapsed, std::vector<std::string> nodes) {
  pb::JobRecord j = Job(id, pb::JOB_RUNNING, part, name, user);
  j.set_start_time(kNow - elapsed);
  for (const auto& n : nodes) {
    j.add_nodes(n);
    j.add_cpus_per_node(1);
  }
  j.set_num_nodes(static_cast<uint32_t>(nodes.size()));
  j.set_batch_host(nodes.empty() ? "" : nodes[0]);
  return j;
}

pb::JobRecord Pending(uint32_t id, const std::string& part, const std::string& name,
                      const std::string& user, const std::string& reason, uint32_t prio) {
  pb::JobRecord j = Job(id, pb::JOB_PENDING, part, name, user);
  j.set_reason(reason);
  j.set_priority(prio);
  return j;
}

std::vector<const pb::JobRecord*> Ptrs(const std::vector<pb::JobRecord>& jobs) {
  std::vector<const pb::JobRecord*> out;
  for (const auto& j : jobs) out.push_back(&j);
  return out;
}

std::string Format(const std::vector<pb::JobRecord>& jobs, const SqueueFormatOptions& o) {
  auto r = FormatSqueue(Ptrs(jobs), o, kNow);
  EXPECT_TRUE(r.ok()) << r.error();
  return r.ok() ? *r : std::string();
}

TEST(SqueueFormat, DefaultLayoutAndSort) {
  std::vector<pb::JobRecord> jobs = {
      Running(100, "debug", "job1", "alice", 65, {"n1", "n2"}),
      Pending(101, "debug", "verylongname", "bob", "Resources", 20),
      Pending(102, "debug", "job3", "carol", "Priority", 5),
      Running(50, "batch", "x", "alice", 3700, {"n3"}),
  };
  jobs[1].set_num_nodes(2);
  EXPECT_EQ(Format(jobs, {}),
            "             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)\n"
            "                50     batch        x    alice  R    1:01:40      1 n3\n"
            "               101     debug verylong      bob PD       0:00      2 (Resources)\n"
            "               102     debug     job3    carol PD       0:00      1 (Priority)\n"
            "               100     debug     job1    alice  R       1:05      2 n[1-2]\n");
}

// squeue writes the sorted rows straight to its output; the text is FinishInto's.
TEST(SqueueFormat, FinishToWritesWhatFinishIntoAppends) {
  std::vector<pb::JobRecord> jobs = {
      Running(100, "debug", "job1", "alice", 65, {"n1", "n2"}),
      Pending(101, "debug", "verylongname", "bob", "Resources", 20),
      Running(50, "batch", "x", "alice", 3700, {"n3"}),
  };
  for (bool no_header : {false, true}) {
    SqueueFormatOptions o;
    o.no_header = no_header;
    auto into = SqueueFormatter::Make(o, kNow);
    auto to = SqueueFormatter::Make(o, kNow);
    ASSERT_TRUE(into.ok() && to.ok());
    for (const auto& j : jobs) {
      into->Add(j);
      to->Add(j);
    }
    std::string expected;
    into->FinishInto(expected);
    char* buf = nullptr;
    size_t len = 0;
    FILE* f = open_memstream(&buf, &len);
    ASSERT_NE(f, nullptr);
    to->FinishTo(f);
    std::fclose(f);
    EXPECT_EQ(std::string(buf, len), expected);
    EXPECT_EQ(expected, Format(jobs, o));
    std::free(buf);
  }
}

TEST(SqueueFormat, NoHeader) {
  SqueueFormatOptions o;
  o.no_header = true;
  std::vector<pb::JobRecord> jobs = {Pending(7, "p", "a", "u", "", 1)};
  EXPECT_EQ(Format(jobs, o),
            "                 7         p        a        u PD       0:00      1 (None)\n");
  EXPECT_EQ(Format({}, o), "");
}

TEST(SqueueFormat, LongLayout) {
  SqueueFormatOptions o;
  o.long_output = true;
  std::vector<pb::JobRecord> jobs = {
      Running(5, "debug", "sleep", "alice", 59, {"n1"}),
      Pending(6, "debug", "sleep", "alice", "JobHeldUser", 0),
  };
  jobs[0].set_time_limit(kTimeInfinite);
  jobs[1].set_time_limit(12 * 60);
  jobs[0].set_completing(true);
  EXPECT_EQ(
      Format(jobs, o),
      "             JOBID PARTITION     NAME     USER    STATE       TIME TIME_LIMI  NODES "
      "NODELIST(REASON)\n"
      "                 6     debug    sleep    alice  PENDING       0:00  12:00:00      1 "
      "(JobHeldUser)\n"
      "                 5     debug    sleep    alice COMPLETI       0:59 UNLIMITED      1 n1\n");
}

TEST(SqueueFormat, PercentCodesWidthsAndJustification) {
  SqueueFormatOptions o;
  o.format = "id=%5i|%3j|%.6u %%%t,%T %U:%G %D/%C %P";
  std::vector<pb::JobRecord> jobs = {Running(1234567, "gpu", "abcdefgh", "alice", 10, {"n1"})};
  jobs[0].mutable_spec()->set_uid(1001);
  jobs[0].mutable_spec()->set_gid(100);
  EXPECT_EQ(Format(jobs, o),
            "id=JOBID|NAM|  USER %ST,STATE UID:GROUP NODES/CPUS PARTITION\n"
            "id=12345|abc| alice %R,RUNNING 1001:100 1/1 gpu\n");
}

TEST(SqueueFormat, MoreCodes) {
  SqueueFormatOptions o;
  o.format = "%A %F %K %a %q %k %Q %p %y %Z %E %m %l %L %S %V %e %B %N %r %h";
  o.no_header = true;
  pb::JobRecord j = Running(42, "p", "n", "u", 600, {"c1", "c2", "c3"});
  j.mutable_spec()->set_account("acct");
  j.mutable_spec()->set_work_dir("/home/u");
  j.mutable_spec()->set_mem_per_node_mb(2048);
  j.set_priority(4294967295u / 2);
  j.set_time_limit(30);
  EXPECT_EQ(Format({j}, o),
            "42 42 N/A acct (null) (null) 2147483647 0.50000000 0 /home/u (null) 2G 30:00 20:00 "
            "2023-11-14T22:03:20 2023-11-14T21:56:40 2023-11-14T22:33:20 c1 c[1-3] None OK\n");
  o.noconvert = true;
  o.format = "%m|%c|%C|%U|%g";
  o.group_name = [](uint32_t gid) { return gid == 1000 ? std::string("staff") : std::string(); };
  EXPECT_EQ(Format({j}, o), "2048M|1|1|1000|staff\n");
}

TEST(SqueueFormat, UnknownPercentCodeIsBlank) {
  SqueueFormatOptions o;
  o.format = "%.5i%3!|";
  std::vector<pb::JobRecord> jobs = {Pending(9, "p", "a", "u", "", 1)};
  EXPECT_EQ(Format(jobs, o), "JOBID   |\n    9   |\n");
}

TEST(SqueueFormat, LongFormatFields) {
  SqueueFormatOptions o;
  o.long_format = "JobID,Partition:.10,Name:5,State,StateCompact:3,TimeUsed:.8,ReasonList";
  std::vector<pb::JobRecord> jobs = {
      Running(3, "debug", "myjobname", "alice", 125, {"n1"}),
      Pending(4, "debug", "x", "alice", "Dependency", 1),
  };
  EXPECT_EQ(Format(jobs, o),
            "JOBID                PARTITIONNAME STATE               ST     TIME"
            "NODELIST(REASON)    \n"
            "4                        debugx    PENDING             PD     0:00(Dependency)"
            "        \n"
            "3                        debugmyjobRUNNING             R      2:05n1                "
            "  \n");
}

TEST(SqueueFormat, LongFormatUnknownField) {
  SqueueFormatOptions o;
  o.long_format = "JobID,Bogus";
  auto r = FormatSqueue({}, o, kNow);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "Invalid job format specification: Bogus");
}

TEST(SqueueFormat, LongFormatNames) {
  SqueueFormatOptions o;
  o.long_format =
      "username:6,userid:5,numnodes:6,numcpus:5,timelimit:11,arrayjobid:13,arraytaskid:14,"
      "account:8,qos:6,comment:8,priority:11,workdir:8,command:8,submittime:20,starttime:20,"
      "endtime:20";
  pb::JobRecord j = Pending(8, "p", "n", "bob", "Priority", 3);
  j.mutable_spec()->set_work_dir("/w");
  EXPECT_EQ(Format({j}, o),
            "USER  UID  NODES CPUS TIME_LIMIT ARRAY_JOB_ID ARRAY_TASK_ID ACCOUNT QOS   COMMENT "
            "PRIORITY   WORK_DIRCOMMAND SUBMIT_TIME         START_TIME          END_TIME        "
            "    \n"
            "bob   1000 1     1    1:00:00    8            N/A           (null)  (null)(null)  "
            "0.00000000 /w      (null)  2023-11-14T21:56:40 N/A                 N/A              "
            "   \n");
}

TEST(SqueueFormat, PendingReasons) {
  SqueueFormatOptions o;
  o.format = "%i %R|%r";
  o.no_header = true;
  pb::JobRecord a = Pending(1, "p", "a", "u", "Resources", 1);
  pb::JobRecord b = Pending(2, "p", "a", "u", "", 1);
  pb::JobRecord c = Pending(3, "p", "a", "u", "ReqNodeNotAvail", 1);
  c.set_state_desc("ReqNodeNotAvail, UnavailableNodes:n5");
  pb::JobRecord d = Job(4, pb::JOB_FAILED, "p", "a", "u");
  d.set_reason("NonZeroExitCode");
  d.add_nodes("n1");
  pb::JobRecord e = Job(5, pb::JOB_COMPLETED, "p", "a", "u");
  e.add_nodes("n2");
  EXPECT_EQ(Format({a, b, c, d, e}, o),
            "1 (Resources)|Resources\n"
            "2 (None)|None\n"
            "3 (ReqNodeNotAvail, UnavailableNodes:n5)|ReqNodeNotAvail, UnavailableNodes:n5\n"
            "5 n2|None\n"
            "4 (NonZeroExitCode)|NonZeroExitCode\n");
}

pb::JobRecord Task(uint32_t id, uint32_t base, uint32_t task, pb::JobState st) {
  pb::JobRecord j = Job(id, st, "p", "arr", "u");
  j.set_array_job_id(base);
  j.set_array_task_id(task);
  j.set_reason(st == pb::JOB_PENDING ? "Resources" : "None");
  j.mutable_spec()->set_array("1-10%2");
  if (st == pb::JOB_RUNNING) {
    j.set_start_time(kNow - 5);
    j.add_nodes("n1");
  }
  return j;
}

TEST(SqueueFormat, ArrayIds) {
  std::vector<pb::JobRecord> jobs = {
      Task(200, 200, 1, pb::JOB_RUNNING), Task(201, 200, 2, pb::JOB_RUNNING),
      Task(202, 200, 3, pb::JOB_PENDING), Task(203, 200, 4, pb::JOB_PENDING),
      Task(204, 200, 5, pb::JOB_PENDING), Task(206, 200, 7, pb::JOB_PENDING),
  };
  SqueueFormatOptions o;
  o.format = "%.18i %A %F %K %t";
  o.no_header = true;
  EXPECT_EQ(Format(jobs, o),
            "     200_[3-5,7%2] 202 200 3-5,7%2 PD\n"
            "             200_1 200 200 1 R\n"
            "             200_2 201 200 2 R\n");
  o.array_one_per_line = true;
  EXPECT_EQ(Format(jobs, o),
            "             200_3 202 200 3 PD\n"
            "             200_4 203 200 4 PD\n"
            "             200_5 204 200 5 PD\n"
            "             200_7 206 200 7 PD\n"
            "             200_1 200 200 1 R\n"
            "             200_2 201 200 2 R\n");
}

TEST(SqueueFormat, SingleAndHeldArrayTasksStayApart) {
  std::vector<pb::JobRecord> jobs = {Task(300, 300, 0, pb::JOB_PENDING),
                                     Task(301, 300, 1, pb::JOB_PENDING)};
  jobs[1].set_reason("JobHeldUser");
  SqueueFormatOptions o;
  o.format = "%i %r";
  o.no_header = true;
  EXPECT_EQ(Format(jobs, o), "300_0 Resources\n300_1 JobHeldUser\n");
}

TEST(SqueueFormat, CustomSort) {
  std::vector<pb::JobRecord> jobs = {
      Running(3, "a", "x", "zed", 5, {"n1"}),
      Running(1, "b", "y", "amy", 50, {"n2"}),
      Running(2, "a", "z", "bob", 500, {"n3"}),
  };
  SqueueFormatOptions o;
  o.format = "%i";
  o.no_header = true;
  o.sort = "u";
  EXPECT_EQ(Format(jobs, o), "1\n2\n3\n");
  o.sort = "-M";
  EXPECT_EQ(Format(jobs, o), "2\n1\n3\n");
  o.sort = "+i";
  EXPECT_EQ(Format(jobs, o), "1\n2\n3\n");
  o.sort = "P,-i";
  EXPECT_EQ(Format(jobs, o), "3\n2\n1\n");
}

// Keys that are the same on every row order nothing; the rest still decide, ties by job id.
TEST(SqueueFormat, SortSkipsKeysEqualOnEveryRow) {
  std::vector<pb::JobRecord> jobs = {
      Pending(5, "debug", "b", "u", "Priority", 1), Pending(3, "debug", "a", "u", "Priority", 1),
      Pending(4, "debug", "b", "u", "Priority", 1), Pending(1, "debug", "a", "u", "Priority", 1),
      Pending(2, "debug", "b", "u", "Priority", 1),
  };
  SqueueFormatOptions o;
  o.format = "%i";
  o.no_header = true;
  EXPECT_EQ(Format(jobs, o), "1\n2\n3\n4\n5\n");
  o.sort = "j";
  EXPECT_EQ(Format(jobs, o), "1\n3\n2\n4\n5\n");
  o.sort = "-j";
  EXPECT_EQ(Format(jobs, o), "2\n4\n5\n1\n3\n");
  std::sort(jobs.begin(), jobs.end(),
            [](const pb::JobRecord& a, const pb::JobRecord& b) { return a.job_id() < b.job_id(); });
  o.sort = "P,-p";
  EXPECT_EQ(Format(jobs, o), "1\n2\n3\n4\n5\n");
  o.sort = "-i";
  EXPECT_EQ(Format(jobs, o), "5\n4\n3\n2\n1\n");
}

TEST(SqueueFilter, DefaultStates) {
  SqueueFilter f;
  pb::JobRecord done = Job(1, pb::JOB_COMPLETED, "p", "a", "u");
  EXPECT_FALSE(JobMatches(done, f));
  done.set_completing(true);
  EXPECT_TRUE(JobMatches(done, f));
  EXPECT_TRUE(JobMatches(Job(2, pb::JOB_SUSPENDED, "p", "a", "u"), f));
  // -j shows every state.
  f.jobs = {{1, std::nullopt}};
  done.set_completing(false);
  EXPECT_TRUE(JobMatches(done, f));
}

TEST(SqueueFilter, StatesUsersPartitionsNodes) {
  auto st = ParseSqueueStates("pd,CG");
  ASSERT_TRUE(st.ok());
  SqueueFilter f;
  f.states = *st;
  pb::JobRecord p = Pending(1, "a", "x", "u", "", 1);
  pb::JobRecord r = Running(2, "b", "y", "u", 1, {"n1", "n2"});
  pb::JobRecord cg = Job(3, pb::JOB_CANCELLED, "b", "y", "u");
  cg.set_completing(true);
  EXPECT_TRUE(JobMatches(p, f));
  EXPECT_FALSE(JobMatches(r, f));
  EXPECT_TRUE(JobMatches(cg, f));

  SqueueFilter g;
  g.partitions = {"b"};
  g.nodes = {"n2"};
  EXPECT_FALSE(JobMatches(p, g));
  EXPECT_TRUE(JobMatches(r, g));
  g.uids = {5};
  EXPECT_FALSE(JobMatches(r, g));

  SqueueFilter h;
  h.accounts = {"Phys"};
  r.mutable_spec()->set_account("phys");
  EXPECT_TRUE(JobMatches(r, h));
  h.names = {"nope"};
  EXPECT_FALSE(JobMatches(r, h));
}

TEST(SqueueFilter, ArrayJobIds) {
  auto ids = ParseSqueueJobIds("200,300_4");
  ASSERT_TRUE(ids.ok());
  SqueueFilter f;
  f.jobs = *ids;
  EXPECT_TRUE(JobMatches(Task(205, 200, 9, pb::JOB_PENDING), f));
  EXPECT_TRUE(JobMatches(Task(304, 300, 4, pb::JOB_PENDING), f));
  EXPECT_FALSE(JobMatches(Task(305, 300, 5, pb::JOB_PENDING), f));
  EXPECT_EQ(ParseSqueueJobIds("12,x").error(), "Invalid job id: x");
  EXPECT_EQ(ParseSqueueJobIds("abc").error(), "Invalid job id: abc");
  EXPECT_FALSE(ParseSqueueJobIds("5_").ok());
}

TEST(SqueueFilter, StateParsing) {
  auto all = ParseSqueueStates("ALL");
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(all->all);
  auto bad = ParseSqueueStates("running,xx");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(),
            "Invalid job state specified: xx\n"
            "squeue: error: Valid job states include: PENDING,RUNNING,SUSPENDED,COMPLETED,"
            "CANCELLED,FAILED,TIMEOUT,NODE_FAIL,PREEMPTED,BOOT_FAIL,DEADLINE,OUT_OF_MEMORY,"
            "COMPLETING,CONFIGURING,RESIZING,RESV_DEL_HOLD,REQUEUED,REQUEUE_FED,REQUEUE_HOLD,"
            "REVOKED,SIGNALING,SPECIAL_EXIT,STAGE_OUT,STOPPED");
  EXPECT_FALSE(ParseSqueueStates("all,pd").ok());
  auto cf = ParseSqueueStates("CF,configuring,r");
  ASSERT_TRUE(cf.ok());
  ASSERT_EQ(cf->states.size(), 1u);
  EXPECT_EQ(cf->states[0], pb::JOB_RUNNING);
}

TEST(SqueueFilter, ServerQuery) {
  SqueueFilter f;
  f.uids = {7};
  f.partitions = {"a"};
  pb::JobQueryRequest q = BuildJobQuery(f);
  EXPECT_TRUE(q.omit_script());
  EXPECT_FALSE(q.include_finished());
  EXPECT_EQ(q.uids_size(), 1);
  EXPECT_EQ(q.partitions(0), "a");
  EXPECT_EQ(q.states_size(), 0);
  f.states = *ParseSqueueStates("CD,R");
  q = BuildJobQuery(f);
  EXPECT_TRUE(q.include_finished());
  EXPECT_EQ(q.states_size(), 2);
  f.states = *ParseSqueueStates("CG");
  q = BuildJobQuery(f);
  EXPECT_TRUE(q.include_finished());
  EXPECT_EQ(q.states_size(), 0);
}

TEST(SqueueFormat, Json) {
  std::vector<pb::JobRecord> jobs = {Running(5, "debug", "a\"b", "alice", 10, {"n1", "n2"})};
  SqueueFormatOptions o;
  std::string json = FormatSqueueJson(Ptrs(jobs), o, kNow, "c1");
  EXPECT_NE(json.find("{\"jobs\":[{\"account\":\"\""), std::string::npos);
  EXPECT_NE(json.find("\"job_id\":5,\"job_state\":[\"RUNNING\"]"), std::string::npos);
  EXPECT_NE(json.find("\"name\":\"a\\\"b\""), std::string::npos);
  EXPECT_NE(json.find("\"nodes\":\"n[1-2]\""), std::string::npos);
  EXPECT_NE(json.find("\"time_limit\":{\"set\":true,\"infinite\":false,\"number\":60}"),
            std::string::npos);
  EXPECT_NE(json.find("\"last_update\":{\"set\":true,\"infinite\":false,\"number\":1700000000}"),
            std::string::npos);
  EXPECT_EQ(json.back(), '\n');
}

TEST(FormatFields, PercentParsing) {
  auto f = fmt::ParsePercentFormat(">%.10i %#P|%5t%%x%");
  ASSERT_EQ(f.size(), 4u);
  EXPECT_EQ(f[0].code, 0);
  EXPECT_EQ(f[0].suffix, ">");
  EXPECT_EQ(f[1].code, 'i');
  EXPECT_TRUE(f[1].right);
  EXPECT_EQ(f[1].width, 10);
  EXPECT_EQ(f[1].suffix, " ");
  EXPECT_TRUE(f[2].auto_width);
  EXPECT_EQ(f[2].suffix, "|");
  EXPECT_EQ(f[3].width, 5);
  EXPECT_FALSE(f[3].right);
  EXPECT_EQ(f[3].suffix, "%x%");
  std::string out;
  fmt::AppendField(out, "abcdef", 3, true);
  fmt::AppendField(out, "ab", 4, true);
  fmt::AppendField(out, "ab", 4, false);
  fmt::AppendField(out, "whole", 0, false);
  EXPECT_EQ(out, "abc  abab  whole");
  EXPECT_TRUE(fmt::NaturalLess("n2", "n10"));
  EXPECT_FALSE(fmt::NaturalLess("n10", "n2"));
  EXPECT_TRUE(fmt::NaturalLess("a", "b"));
  EXPECT_EQ(fmt::DateLine(kNow), "Tue Nov 14 22:13:20 2023");
}

TEST(FormatFields, JsonStringEscapesAndKeepsUtf8) {
  EXPECT_EQ(fmt::JsonString("a\"b\\c\n\x01"), "\"a\\\"b\\\\c\\n\\u0001\"");
  EXPECT_EQ(fmt::JsonString("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\x9f"),
            "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\x9f\"");
}

TEST(FormatFields, JsonStringReplacesBytesThatAreNotUtf8) {
  const std::string kReplacement = "\xef\xbf\xbd";
  // A Latin-1 job name: the lone 0xE9 becomes U+FFFD, the rest stays.
  EXPECT_EQ(fmt::JsonString("caf\xe9"), "\"caf" + kReplacement + "\"");
  EXPECT_EQ(fmt::JsonString("\xff\xfe"), "\"" + kReplacement + kReplacement + "\"");
  // Truncated sequence, overlong form, UTF-16 surrogate, beyond U+10FFFF.
  EXPECT_EQ(fmt::JsonString("\xe2\x82"), "\"" + kReplacement + kReplacement + "\"");
  EXPECT_EQ(fmt::JsonString("\xc0\xaf"), "\"" + kReplacement + kReplacement + "\"");
  EXPECT_EQ(fmt::JsonString("\xed\xa0\x80"),
            "\"" + kReplacement + kReplacement + kReplacement + "\"");
  EXPECT_EQ(fmt::JsonString("\xf4\x90\x80\x80x"),
            "\"" + kReplacement + kReplacement + kReplacement + kReplacement + "x\"");
}

}  // namespace
}  // namespace shoal::cli
