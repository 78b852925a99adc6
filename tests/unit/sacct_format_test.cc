// Layouts checked against Slurm 22.05.8's sacct on the observation cluster (jobs 7 and 10 there).
#include "cli/sacct_format.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>

#include "common/units.h"

namespace shoal::cli {
namespace {

const bool kUtc = [] {
  setenv("TZ", "UTC", 1);
  tzset();
  return true;
}();

constexpr int64_t kT0 = 1795352349;  // 2026-11-22T12:59:09Z
constexpr int64_t kNow = kT0 + 3600;

pb::AcctStep Step(uint32_t id, const std::string& name, pb::JobState st, uint32_t cpus,
                  const std::string& nodes, int64_t start, int64_t end) {
  pb::AcctStep s;
  s.set_step_id(id);
  s.set_name(name);
  s.set_state(st);
  s.set_ncpus(cpus);
  s.set_nodelist(nodes);
  s.set_nnodes(nodes.find('[') == std::string::npos ? 1 : 2);
  s.set_ntasks(cpus);
  s.set_start_time(start);
  s.set_end_time(end);
  s.set_requid(kNoUid);
  return s;
}

pb::AcctJob Job(uint32_t id, const std::string& name, pb::JobState st, uint32_t cpus) {
  pb::AcctJob j;
  j.set_cluster("obs");
  j.set_job_id(id);
  j.set_array_task_id(kNoArrayTask);
  j.set_name(name);
  j.set_uid(1003);
  j.set_user("acctuser1");
  j.set_gid(1003);
  j.set_group("acctuser1");
  j.set_account("chem");
  j.set_partition("debug");
  j.set_qos("normal");
  j.set_state(st);
  j.set_alloc_cpus(cpus);
  j.set_req_cpus(cpus);
  j.set_time_limit(kTimeInfinite);
  j.set_priority(1);
  j.set_work_dir("/tmp/slurm-acct/jobs");
  j.set_requid(kNoUid);
  return j;
}

// Job 7: cancelled by root while running; its batch step killed by SIGTERM.
pb::AcctJob Job7() {
  pb::AcctJob j = Job(7, "runcan", pb::JOB_CANCELLED, 1);
  j.set_submit_time(kT0);
  j.set_eligible_time(kT0);
  j.set_start_time(kT0 + 1);
  j.set_end_time(kT0 + 10);
  j.set_requid(0);
  j.set_alloc_nodes(1);
  j.set_req_nodes(1);
  j.set_req_mem_mb(256);
  j.set_nodelist("n4");
  j.set_tres_req("billing=1,cpu=1,mem=256M,node=1");
  j.set_tres_alloc("billing=1,cpu=1,mem=256M,node=1");
  j.set_submit_line("sbatch -o /tmp/slurm-acct/jobs/%j.out -J runcan --wrap sleep 300");
  pb::AcctStep b = Step(kBatchStepId, "batch", pb::JOB_CANCELLED, 1, "n4", kT0 + 1, kT0 + 10);
  b.set_exit_status(15);  // killed by SIGTERM
  b.set_max_rss_kb(3168);
  b.set_ave_rss_kb(3168);
  b.set_max_rss_node("n4");
  b.set_user_cpu_usec(500);
  b.set_sys_cpu_usec(3000);
  pb::AcctStep e = Step(kExternStepId, "extern", pb::JOB_COMPLETED, 1, "n4", kT0 + 1, kT0 + 10);
  e.set_max_rss_kb(1576);
  e.set_ave_rss_kb(1576);
  e.set_max_rss_node("n4");
  e.set_user_cpu_usec(2600);
  *j.add_steps() = e;  // out of order on purpose: batch sorts first
  *j.add_steps() = b;
  return j;
}

// Job 10: a batch script with two srun steps on two nodes.
pb::AcctJob Job10() {
  pb::AcctJob j = Job(10, "steps", pb::JOB_COMPLETED, 2);
  j.set_submit_time(kT0 + 1);
  j.set_start_time(kT0 + 7);
  j.set_end_time(kT0 + 11);
  j.set_nodelist("n[2-3]");
  *j.add_steps() = Step(0, "hostname", pb::JOB_COMPLETED, 2, "n[2-3]", kT0 + 7, kT0 + 7);
  *j.add_steps() = Step(1, "sleep", pb::JOB_COMPLETED, 1, "n2", kT0 + 7, kT0 + 10);
  *j.add_steps() = Step(kBatchStepId, "batch", pb::JOB_COMPLETED, 1, "n2", kT0 + 7, kT0 + 11);
  *j.add_steps() = Step(kExternStepId, "extern", pb::JOB_COMPLETED, 2, "n[2-3]", kT0 + 7, kT0 + 11);
  return j;
}

SacctFormatOptions Opts(const std::string& fields) {
  SacctFormatOptions o;
  auto cols = ParseSacctFields(fields);
  EXPECT_TRUE(cols.ok()) << cols.error();
  if (cols.ok()) o.columns = *cols;
  return o;
}

TEST(SacctFormat, DefaultLayoutMatchesSlurm) {
  std::string out = FormatSacct({Job10(), Job7()}, Opts(kSacctDefaultFields), kNow);
  EXPECT_EQ(out,
            "JobID           JobName  Partition    Account  AllocCPUS      State ExitCode \n"
            "------------ ---------- ---------- ---------- ---------- ---------- -------- \n"
            "7                runcan      debug       chem          1 CANCELLED+      0:0 \n"
            "7.batch           batch                  chem          1  CANCELLED     0:15 \n"
            "7.extern         extern                  chem          1  COMPLETED      0:0 \n"
            "10                steps      debug       chem          2  COMPLETED      0:0 \n"
            "10.batch          batch                  chem          1  COMPLETED      0:0 \n"
            "10.extern        extern                  chem          2  COMPLETED      0:0 \n"
            "10.0           hostname                  chem          2  COMPLETED      0:0 \n"
            "10.1              sleep                  chem          1  COMPLETED      0:0 \n");
}

TEST(SacctFormat, ParsableLongListMatchesSlurm) {
  SacctFormatOptions o = Opts(
      "jobid,jobidraw,user,uid,group,gid,partition,reason,timelimit,submit,eligible,"
      "derivedexitcode,maxrss,maxrssnode,maxrsstask,averss,totalcpu,usercpu,systemcpu,cputime,"
      "cputimeraw,nnodes,ntasks,ncpus,reqcpus,reqmem,reqnodes,allocnodes,priority,qos,wckey,"
      "workdir,cluster,submitline,suspended,elapsedraw,timelimitraw,nodelist,reqtres");
  o.parsable = 2;
  o.selectors = {{7, std::nullopt, std::nullopt}};
  std::string out = FormatSacct({Job7()}, o, kNow);
  EXPECT_EQ(out,
            "JobID|JobIDRaw|User|UID|Group|GID|Partition|Reason|Timelimit|Submit|Eligible|"
            "DerivedExitCode|MaxRSS|MaxRSSNode|MaxRSSTask|AveRSS|TotalCPU|UserCPU|SystemCPU|"
            "CPUTime|CPUTimeRAW|NNodes|NTasks|NCPUS|ReqCPUS|ReqMem|ReqNodes|AllocNodes|Priority|"
            "QOS|WCKey|WorkDir|Cluster|SubmitLine|Suspended|ElapsedRaw|TimelimitRaw|NodeList|"
            "ReqTRES\n"
            "7|7|acctuser1|1003|acctuser1|1003|debug|None|UNLIMITED|2026-11-22T12:59:09|"
            "2026-11-22T12:59:09|0:0|||||00:00.006|00:00.003|00:00.003|00:00:09|9|1||1|1|256M|1|"
            "1|1|normal||/tmp/slurm-acct/jobs|obs|sbatch -o /tmp/slurm-acct/jobs/%j.out -J runcan "
            "--wrap sleep 300|00:00:00|9|UNLIMITED|n4|billing=1,cpu=1,mem=256M,node=1\n"
            "7.batch|7.batch||||||||2026-11-22T12:59:10|2026-11-22T12:59:10||3168K|n4|0|3168K|"
            "00:00.003|00:00:00|00:00.003|00:00:09|9|1|1|1|1||1|1|||||obs||00:00:00|9||n4|\n"
            "7.extern|7.extern||||||||2026-11-22T12:59:10|2026-11-22T12:59:10||1576K|n4|0|"
            "1576K|00:00.002|00:00.002|00:00:00|00:00:09|9|1|1|1|1||1|1|||||obs||00:00:00|9||n4|"
            "\n");
}

TEST(SacctFormat, ParsableWithTrailingDelimiterAndNoHeader) {
  SacctFormatOptions o = Opts("jobid,state");
  o.parsable = 1;
  o.no_header = true;
  o.allocations = true;
  EXPECT_EQ(FormatSacct({Job7()}, o, kNow), "7|CANCELLED by 0|\n");
}

TEST(SacctFormat, StepSelectorShowsOnlyThatStep) {
  SacctFormatOptions o = Opts("jobid,jobname,state");
  o.selectors = {{10, std::nullopt, kBatchStepId}};
  EXPECT_EQ(FormatSacct({Job10()}, o, kNow),
            "JobID           JobName      State \n"
            "------------ ---------- ---------- \n"
            "10.batch          batch  COMPLETED \n");
}

TEST(SacctFormat, WidthsTruncationAndAlignment) {
  // %N right-aligns, %-N left-aligns; values wider than the column end in '+'.
  SacctFormatOptions o = Opts("jobid%-5,state%20,submitline%12,elapsed");
  o.allocations = true;
  EXPECT_EQ(FormatSacct({Job7()}, o, kNow),
            "JobID                State   SubmitLine    Elapsed \n"
            "----- -------------------- ------------ ---------- \n"
            "7           CANCELLED by 0 sbatch -o /+   00:00:09 \n");
}

TEST(SacctFormat, ArrayIdsAndPendingJob) {
  pb::AcctJob task = Job(124, "arr", pb::JOB_COMPLETED, 1);
  task.set_array_job_id(123);
  task.set_array_task_id(4);
  task.set_submit_time(kT0);
  task.set_nodelist("n1");
  pb::AcctJob meta = Job(123, "arr", pb::JOB_PENDING, 0);
  meta.set_array_job_id(123);
  meta.set_array_task_str("5-9");
  meta.set_array_max_tasks(2);
  meta.set_submit_time(kT0);
  meta.set_time_limit(90);
  SacctFormatOptions o = Opts("jobid,jobidraw,state,nodelist,start,timelimit,reqmem");
  EXPECT_EQ(FormatSacct({task, meta}, o, kNow),
            "JobID        JobIDRaw          State        NodeList               Start  Timelimit "
            "    ReqMem \n"
            "------------ ------------ ---------- --------------- ------------------- ---------- "
            "---------- \n"
            "123_[5-9%2]  123             PENDING   None assigned             Unknown   01:30:00 "
            "           \n"
            "123_4        124           COMPLETED              n1             Unknown  UNLIMITED "
            "           \n");
}

TEST(SacctFormat, ParseFieldsPrefixesAllAndErrors) {
  auto f = ParseSacctFields("JOBID,jobn,ncpu%4");
  ASSERT_TRUE(f.ok());
  ASSERT_EQ(f->size(), 3u);
  EXPECT_EQ((*f)[0].width, -12);
  EXPECT_EQ((*f)[2].width, 4);
  auto all = ParseSacctFields("all");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 109u);
  auto bad = ParseSacctFields("jobid,bogus");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(), "sacct: error: Invalid field requested: \"bogus\"");
}

TEST(SacctFormat, HelpFormatFirstLine) {
  std::string h = SacctHelpFormat();
  EXPECT_EQ(h.substr(0, h.find('\n')),
            "Account             AdminComment        AllocCPUS           AllocNodes         ");
  EXPECT_EQ(h.substr(h.rfind("WorkDir")), "WorkDir            \n");
}

TEST(SacctFormat, UnitsAndCpuTimes) {
  EXPECT_EQ(SacctConvertUnits(1024, 2, 0, false), "1G");
  EXPECT_EQ(SacctConvertUnits(1536, 2, 0, false), "1.50G");
  EXPECT_EQ(SacctConvertUnits(500, 2, 0, false), "500M");
  EXPECT_EQ(SacctConvertUnits(1024, 2, 0, true), "1024M");
  EXPECT_EQ(SacctConvertUnits(3168.0 * 1024, 0, 0, false), "3168K");
  EXPECT_EQ(SacctConvertUnits(2048, 2, 'K', false), "2097152K");
  EXPECT_EQ(SacctConvertUnits(0, 2, 0, false), "0");
  EXPECT_EQ(SacctCpuTime(6100), "00:00.006");
  EXPECT_EQ(SacctCpuTime(0), "00:00:00");
  EXPECT_EQ(SacctCpuTime(3723000000ull), "01:02:03");
  EXPECT_EQ(SacctCpuTime(90061000000ull), "1-01:01:01");
}

TEST(SacctFormat, TruncateClipsToWindow) {
  SacctFormatOptions o = Opts("jobid,start,end,elapsed");
  o.allocations = true;
  o.truncate = true;
  o.window_start = kT0 + 5;
  o.window_end = kT0 + 8;
  EXPECT_EQ(FormatSacct({Job7()}, o, kNow),
            "JobID                      Start                 End    Elapsed \n"
            "------------ ------------------- ------------------- ---------- \n"
            "7            2026-11-22T12:59:14 2026-11-22T12:59:17   00:00:03 \n");
}

TEST(SacctFormat, JsonHasSlurmrestdShape) {
  SacctFormatOptions o;
  std::string js = FormatSacctJson({Job7()}, o, kNow);
  EXPECT_EQ(js.rfind("{\"jobs\":[{\"account\":\"chem\"", 0), 0u);
  EXPECT_NE(js.find("\"job_id\":7,"), std::string::npos);
  EXPECT_NE(js.find("\"state\":{\"current\":[\"CANCELLED\"],\"reason\":\"None\"}"),
            std::string::npos);
  EXPECT_NE(js.find("\"step\":{\"id\":\"7.batch\",\"name\":\"batch\"}"), std::string::npos);
  EXPECT_NE(js.find("\"exit_code\":{\"status\":[\"SIGNALED\"],\"return_code\":{\"set\":true,"
                    "\"infinite\":false,\"number\":0},\"signal\":{\"id\":{\"set\":true,"
                    "\"infinite\":false,\"number\":15},\"name\":\"TERM\"}}"),
            std::string::npos);
  EXPECT_NE(js.find("{\"type\":\"mem\",\"name\":\"\",\"id\":2,\"count\":256}"), std::string::npos);
}

}  // namespace
}  // namespace shoal::cli
