// Pins scontrol's output byte for byte. The expected texts were checked against Slurm 22.05's own
// record printers (slurm_sprint_job_info / _node_table / _partition_info) fed equivalent records.
#include "cli/scontrol_format.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>

#include "common/units.h"

namespace shoal::cli {
namespace {

constexpr int64_t kBase = 1700000000;  // 2023-11-14T22:13:20 UTC

class ScontrolFormatTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("TZ", "UTC", 1);
    tzset();
  }
  NameLookup names_{[](uint32_t uid) { return uid == 0 ? std::string("root") : std::string(); },
                    [](uint32_t gid) { return gid == 0 ? std::string("root") : std::string(); }};
};

pb::JobRecord RunningJob() {
  pb::JobRecord j;
  j.set_job_id(42);
  auto* s = j.mutable_spec();
  s->set_name("myjob");
  s->set_uid(0);
  s->set_gid(0);
  s->set_user_name("root");
  s->set_work_dir("/home/u");
  s->set_command("/home/u/job.sh");
  s->set_submit_host("login1");
  s->set_mem_per_node_mb(1000);
  s->set_partition("debug");
  j.set_state(pb::JOB_RUNNING);
  j.set_reason("None");
  j.set_priority(4294901759u);
  j.set_requeue(true);
  j.set_submit_time(kBase);
  j.set_eligible_time(kBase);
  j.set_accrue_time(kBase);
  j.set_start_time(kBase + 1);
  j.set_end_time(kBase + 3601);
  j.set_last_sched_eval(kBase + 1);
  j.set_time_limit(60);
  j.set_partition("debug");
  j.add_nodes("n1");
  j.add_nodes("n2");
  j.add_cpus_per_node(4);
  j.add_cpus_per_node(4);
  j.set_mem_per_node_mb(1000);
  j.set_batch_host("n1");
  j.set_num_nodes(2);
  j.set_num_cpus(8);
  j.set_num_tasks(2);
  j.set_array_task_id(kNoArrayTask);
  return j;
}

const char* const kRunningJob =
    "JobId=42 JobName=myjob\n"
    "   UserId=root(0) GroupId=root(0) MCS_label=N/A\n"
    "   Priority=4294901759 Nice=0 Account=(null) QOS=(null)\n"
    "   JobState=RUNNING Reason=None Dependency=(null)\n"
    "   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0\n"
    "   RunTime=01:00:00 TimeLimit=01:00:00 TimeMin=N/A\n"
    "   SubmitTime=2023-11-14T22:13:20 EligibleTime=2023-11-14T22:13:20\n"
    "   AccrueTime=2023-11-14T22:13:20\n"
    "   StartTime=2023-11-14T22:13:21 EndTime=2023-11-14T23:13:21 Deadline=N/A\n"
    "   SuspendTime=None SecsPreSuspend=0 LastSchedEval=2023-11-14T22:13:21 Scheduler=Main\n"
    "   Partition=debug AllocNode:Sid=login1:0\n"
    "   ReqNodeList=(null) ExcNodeList=(null)\n"
    "   NodeList=n[1-2]\n"
    "   BatchHost=n1\n"
    "   NumNodes=2 NumCPUs=8 NumTasks=2 CPUs/Task=1 ReqB:S:C:T=0:0:*:*\n"
    "   TRES=cpu=8,mem=2000M,node=2,billing=8\n"
    "   Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=*\n"
    "   MinCPUsNode=1 MinMemoryNode=1000M MinTmpDiskNode=0\n"
    "   Features=(null) DelayBoot=00:00:00\n"
    "   OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null)\n"
    "   Command=/home/u/job.sh\n"
    "   WorkDir=/home/u\n"
    "   StdErr=/home/u/slurm-42.out\n"
    "   StdIn=/dev/null\n"
    "   StdOut=/home/u/slurm-42.out\n"
    "   Power=\n"
    "   \n"
    "\n";

TEST_F(ScontrolFormatTest, RunningJobMultiLine) {
  EXPECT_EQ(FormatJob(RunningJob(), kBase + 3601, {}, names_), kRunningJob);
}

TEST_F(ScontrolFormatTest, RunningJobOneLiner) {
  ShowOptions o;
  o.one_liner = true;
  std::string text = FormatJob(RunningJob(), kBase + 3601, o, names_);
  // Same fields, separated by single spaces, ending with "Power= \n".
  std::string expected = kRunningJob;
  expected = expected.substr(0, expected.size() - std::string("\n   \n\n").size());
  std::string flat;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (expected.compare(i, 4, "\n   ") == 0) {
      flat += ' ';
      i += 3;
    } else {
      flat += expected[i];
    }
  }
  EXPECT_EQ(text, flat + " \n");
  EXPECT_EQ(text.rfind("Power= \n"), text.size() - 8);
}

TEST_F(ScontrolFormatTest, PendingJob) {
  pb::JobRecord j = RunningJob();
  j.set_state(pb::JOB_PENDING);
  j.set_reason("Priority");
  j.clear_nodes();
  j.clear_cpus_per_node();
  j.clear_batch_host();
  j.set_start_time(0);
  j.set_end_time(0);
  j.mutable_spec()->set_max_nodes(2);
  std::string text = FormatJob(j, kBase + 100, {}, names_);
  EXPECT_NE(text.find("   JobState=PENDING Reason=Priority Dependency=(null)\n"),
            std::string::npos);
  EXPECT_NE(text.find("   RunTime=00:00:00 TimeLimit=01:00:00 TimeMin=N/A\n"), std::string::npos);
  EXPECT_NE(text.find("   StartTime=Unknown EndTime=Unknown Deadline=N/A\n"), std::string::npos);
  EXPECT_NE(text.find("   NodeList=\n   NumNodes=2-2 NumCPUs=8"), std::string::npos);
  EXPECT_EQ(text.find("BatchHost="), std::string::npos);
}

TEST_F(ScontrolFormatTest, HeldJobShowsPriorityZero) {
  pb::JobRecord j = RunningJob();
  j.set_state(pb::JOB_PENDING);
  j.set_held(true);
  j.set_reason("JobHeldUser");
  std::string text = FormatJob(j, kBase, {}, names_);
  EXPECT_NE(text.find("   Priority=0 Nice=0"), std::string::npos);
  EXPECT_NE(text.find("JobState=PENDING Reason=JobHeldUser"), std::string::npos);
}

TEST_F(ScontrolFormatTest, FailedJobWithDetails) {
  pb::JobRecord j = RunningJob();
  j.set_state(pb::JOB_FAILED);
  j.set_exit_status(256);  // exit(1)
  j.set_derived_exit_status(256);
  ShowOptions o;
  o.details = true;
  std::string text = FormatJob(j, kBase + 99999, o, names_);
  EXPECT_NE(text.find("   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=1:0\n"
                      "   DerivedExitCode=1:0\n"
                      "   RunTime=01:00:00 TimeLimit=01:00:00 TimeMin=N/A\n"),
            std::string::npos);
  EXPECT_EQ(FormatJob(j, kBase, {}, names_).find("DerivedExitCode"), std::string::npos);
}

TEST_F(ScontrolFormatTest, InteractiveJobHasNoBatchFlag) {
  // salloc/srun allocations run no batch script: Slurm shows BatchFlag=0.
  pb::JobRecord j = RunningJob();
  j.mutable_spec()->set_interactive(true);
  j.set_state(pb::JOB_OUT_OF_MEMORY);
  j.set_exit_status(125);
  std::string text = FormatJob(j, kBase, {}, names_);
  EXPECT_NE(text.find(" BatchFlag=0 Reboot=0 ExitCode=0:125\n"), std::string::npos) << text;
}

TEST_F(ScontrolFormatTest, OptionalJobLines) {
  pb::JobRecord j = RunningJob();
  j.set_array_job_id(40);
  j.set_array_task_id(2);
  j.set_state(pb::JOB_SUSPENDED);
  j.set_suspend_time(kBase + 101);
  auto* s = j.mutable_spec();
  s->set_account("acct");
  s->set_qos("normal");
  s->set_dependency("afterok:41(unfulfilled)");
  s->set_reservation("r1");
  s->set_exclusive(true);
  s->set_ntasks_per_node(2);
  s->set_gres("gpu:2");
  s->set_mail_user("u@x");
  s->set_mail_type("END");
  s->set_comment("hello world");
  s->set_nice(-5);
  s->set_nodelist("n1");
  s->set_exclude("n[3-4]");
  s->set_constraint("a&b");
  s->set_licenses("lic:2");
  s->set_deadline(kBase + 9999);
  std::string text = FormatJob(j, kBase + 500, {}, names_);
  EXPECT_EQ(text.rfind("JobId=42 ArrayJobId=40 ArrayTaskId=2 JobName=myjob\n", 0), 0u);
  EXPECT_NE(text.find("   Priority=4294901759 Nice=-5 Account=acct QOS=normal\n"),
            std::string::npos);
  EXPECT_NE(text.find("   JobState=SUSPENDED Reason=None Dependency=afterok:41(unfulfilled)\n"),
            std::string::npos);
  EXPECT_NE(text.find("   RunTime=00:01:40 TimeLimit"), std::string::npos);
  EXPECT_NE(text.find(" EndTime=2023-11-14T23:13:21 Deadline=2023-11-15T00:59:59\n"),
            std::string::npos);
  EXPECT_NE(text.find("   SuspendTime=2023-11-14T22:15:01 SecsPreSuspend=100 "), std::string::npos);
  EXPECT_NE(text.find("   ReqNodeList=n1 ExcNodeList=n[3-4]\n"), std::string::npos);
  EXPECT_NE(text.find("   Socks/Node=* NtasksPerN:B:S:C=2:0:*:* CoreSpec=*\n"
                      "   MinCPUsNode=2 MinMemoryNode=1000M MinTmpDiskNode=0\n"
                      "   Features=a&b DelayBoot=00:00:00\n"
                      "   Reservation=r1\n"
                      "   OverSubscribe=NO Contiguous=0 Licenses=lic:2 Network=(null)\n"),
            std::string::npos);
  EXPECT_NE(text.find("   WorkDir=/home/u\n   Comment=hello world \n   StdErr="),
            std::string::npos);
  EXPECT_NE(text.find("   StdErr=/home/u/slurm-40_2.out\n"), std::string::npos);
  EXPECT_NE(
      text.find("   Power=\n   TresPerNode=gres:gpu:2\n   MailUser=u@x MailType=END\n   \n\n"),
      std::string::npos);
}

TEST_F(ScontrolFormatTest, StateDescReplacesReasonAndCompleting) {
  pb::JobRecord j = RunningJob();
  j.set_state_desc("some thing");
  j.set_completing(true);
  std::string text = FormatJob(j, kBase, {}, names_);
  EXPECT_NE(text.find("JobState=COMPLETING Reason=some_thing "), std::string::npos);
}

TEST_F(ScontrolFormatTest, TimeLimitSentinels) {
  EXPECT_EQ(FormatLimitMinutes(kTimeInfinite, "Partition_Limit"), "UNLIMITED");
  EXPECT_EQ(FormatLimitMinutes(kTimeNoVal, "Partition_Limit"), "Partition_Limit");
  EXPECT_EQ(FormatLimitMinutes(0, "NONE"), "00:00:00");
  EXPECT_EQ(FormatLimitMinutes(60, "NONE"), "01:00:00");
  EXPECT_EQ(FormatLimitMinutes(2 * 1440 + 61, "NONE"), "2-01:01:00");
}

TEST_F(ScontrolFormatTest, TimeMinAndExclusiveUser) {
  pb::JobRecord j = RunningJob();
  j.mutable_spec()->set_time_min(30);
  j.mutable_spec()->set_exclusive(true);
  j.mutable_spec()->set_exclusive_mode("user");
  std::string text = FormatJob(j, kBase + 3601, {}, names_);
  EXPECT_NE(text.find("TimeLimit=01:00:00 TimeMin=00:30:00\n"), std::string::npos);
  EXPECT_NE(text.find("   OverSubscribe=USER Contiguous=0"), std::string::npos);
  j.mutable_spec()->set_time_min(kTimeNoVal);
  EXPECT_NE(FormatJob(j, kBase, {}, names_).find("TimeMin=N/A\n"), std::string::npos);
}

TEST_F(ScontrolFormatTest, UnlimitedRunningJobHasUnknownEnd) {
  pb::JobRecord j = RunningJob();
  j.set_time_limit(kTimeInfinite);
  j.set_end_time(kBase + 365 * 86400);
  std::string text = FormatJob(j, kBase + 10, {}, names_);
  EXPECT_NE(text.find("TimeLimit=UNLIMITED TimeMin=N/A"), std::string::npos);
  EXPECT_NE(text.find(" EndTime=Unknown Deadline=N/A"), std::string::npos);
}

TEST_F(ScontrolFormatTest, UnknownUserAndGroupPrintNumbers) {
  pb::JobRecord j = RunningJob();
  j.mutable_spec()->set_uid(1234);
  j.mutable_spec()->set_gid(99);
  j.mutable_spec()->clear_user_name();
  std::string text = FormatJob(j, kBase, {}, names_);
  EXPECT_NE(text.find("   UserId=1234(1234) GroupId=99(99) MCS_label=N/A\n"), std::string::npos);
}

TEST_F(ScontrolFormatTest, ExpandStdPaths) {
  pb::JobRecord j = RunningJob();
  auto* s = j.mutable_spec();
  s->set_std_out("o-%j-%x-%u-%A-%a-%N-%n-%t-%s-%%.txt");
  s->set_std_err("e-%j");
  s->set_std_in("in");
  EXPECT_EQ(ExpandStdPath(j, StdStream::kOut, "root"),
            "/home/u/o-42-myjob-root-42-4294967294-%N-%n-%t-%s-%%.txt");
  EXPECT_EQ(ExpandStdPath(j, StdStream::kErr, "root"), "/home/u/e-42");
  EXPECT_EQ(ExpandStdPath(j, StdStream::kIn, "root"), "/home/u/in");
  s->set_std_out("/abs/o-%A_%a.txt");
  s->clear_std_err();
  s->clear_std_in();
  j.set_array_job_id(40);
  j.set_array_task_id(2);
  EXPECT_EQ(ExpandStdPath(j, StdStream::kOut, "root"), "/abs/o-40_2.txt");
  EXPECT_EQ(ExpandStdPath(j, StdStream::kErr, "root"), "/abs/o-40_2.txt");  // err follows out
  EXPECT_EQ(ExpandStdPath(j, StdStream::kIn, "root"), "/dev/null");
}

TEST_F(ScontrolFormatTest, ExitCodes) {
  EXPECT_EQ(FormatExitCode(0), "0:0");
  EXPECT_EQ(FormatExitCode(2 << 8), "2:0");
  EXPECT_EQ(FormatExitCode(9), "0:9");  // killed by SIGKILL
}

TEST_F(ScontrolFormatTest, MemoryUnits) {
  EXPECT_EQ(FormatMemoryScontrol(0), "0M");
  EXPECT_EQ(FormatMemoryScontrol(1), "1M");
  EXPECT_EQ(FormatMemoryScontrol(768), "768M");
  EXPECT_EQ(FormatMemoryScontrol(1000), "1000M");
  EXPECT_EQ(FormatMemoryScontrol(1024), "1G");
  EXPECT_EQ(FormatMemoryScontrol(1280), "1280M");
  EXPECT_EQ(FormatMemoryScontrol(1536), "1.50G");
  EXPECT_EQ(FormatMemoryScontrol(2560), "2.50G");
  EXPECT_EQ(FormatMemoryScontrol(3000), "3000M");
  EXPECT_EQ(FormatMemoryScontrol(786432), "768G");
  EXPECT_EQ(FormatMemoryScontrol(1048576), "1T");
  EXPECT_EQ(FormatMemoryScontrol(1572864), "1.50T");
  EXPECT_EQ(FormatTresMemory(2000), "2000M");
  EXPECT_EQ(FormatTresMemory(4096), "4G");
  EXPECT_EQ(FormatTresMemory(1536), "1536M");
}

// ---- nodes ------------------------------------------------------------------------------------

pb::NodeRecord Node() {
  pb::NodeRecord n;
  n.set_name("n1");
  n.set_arch("x86_64");
  n.set_addr("10.0.0.1");
  n.set_hostname("n1host");
  n.set_cpus(4);
  n.set_boards(1);
  n.set_sockets(2);
  n.set_cores_per_socket(2);
  n.set_threads_per_core(1);
  n.set_real_memory_mb(1000);
  n.set_base_state(pb::NODE_IDLE);
  n.set_responding(true);
  n.set_cpu_load(13);
  n.set_free_memory_mb(900);
  n.set_weight(1);
  n.set_version("22.05.8");
  n.set_os("Linux 6.1.0 #1 SMP");
  n.set_boot_time(kBase);
  n.set_slurmd_start_time(kBase + 50);
  n.set_last_busy(kBase + 100);
  n.add_partitions("debug");
  n.add_partitions("batch");
  return n;
}

TEST_F(ScontrolFormatTest, NodeMultiLine) {
  EXPECT_EQ(FormatNode(Node(), kBase, {}, names_),
            "NodeName=n1 Arch=x86_64 CoresPerSocket=2 \n"
            "   CPUAlloc=0 CPUEfctv=4 CPUTot=4 CPULoad=0.13\n"
            "   AvailableFeatures=(null)\n"
            "   ActiveFeatures=(null)\n"
            "   Gres=(null)\n"
            "   NodeAddr=10.0.0.1 NodeHostName=n1host Version=22.05.8\n"
            "   OS=Linux 6.1.0 #1 SMP \n"
            "   RealMemory=1000 AllocMem=0 FreeMem=900 Sockets=2 Boards=1\n"
            "   State=IDLE ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A\n"
            "   Partitions=debug,batch \n"
            "   BootTime=2023-11-14T22:13:20 SlurmdStartTime=2023-11-14T22:14:10\n"
            "   LastBusyTime=2023-11-14T22:15:00\n"
            "   CfgTRES=cpu=4,mem=1000M,billing=4\n"
            "   AllocTRES=\n"
            "   CapWatts=n/a\n"
            "   CurrentWatts=0 AveWatts=0\n"
            "   ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s\n"
            "\n");
}

TEST_F(ScontrolFormatTest, DrainedNodeOneLinerWithReason) {
  pb::NodeRecord n = Node();
  n.set_drain(true);
  n.set_responding(false);
  n.add_features("a");
  n.add_features("b");
  n.set_gres("gpu:a100:2");
  n.set_reason("disk bad");
  n.set_reason_uid(0);
  n.set_reason_time(kBase + 200);
  n.set_alloc_cpus(2);
  n.set_alloc_memory_mb(2048);
  n.set_base_state(pb::NODE_MIXED);
  ShowOptions o;
  o.one_liner = true;
  EXPECT_EQ(FormatNode(n, kBase, o, names_),
            "NodeName=n1 Arch=x86_64 CoresPerSocket=2  CPUAlloc=2 CPUEfctv=4 CPUTot=4 "
            "CPULoad=0.13 AvailableFeatures=a,b ActiveFeatures=a,b Gres=gpu:a100:2 "
            "NodeAddr=10.0.0.1 NodeHostName=n1host Version=22.05.8 OS=Linux 6.1.0 #1 SMP  "
            "RealMemory=1000 AllocMem=2048 FreeMem=900 Sockets=2 Boards=1 "
            "State=MIXED+DRAIN+NOT_RESPONDING ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A "
            "MCS_label=N/A Partitions=debug,batch  BootTime=2023-11-14T22:13:20 "
            "SlurmdStartTime=2023-11-14T22:14:10 LastBusyTime=2023-11-14T22:15:00 "
            "CfgTRES=cpu=4,mem=1000M,billing=4 AllocTRES=cpu=2,mem=2G CapWatts=n/a "
            "CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 "
            "ExtSensorsTemp=n/s Reason=disk bad [root@2023-11-14T22:16:40]\n");
}

TEST_F(ScontrolFormatTest, UnregisteredNode) {
  pb::NodeRecord n = Node();
  n.clear_arch();
  n.clear_os();
  n.clear_version();
  n.set_boot_time(0);
  n.set_slurmd_start_time(0);
  n.set_last_busy(0);
  n.set_base_state(pb::NODE_UNKNOWN);
  n.set_responding(false);
  n.set_dynamic(true);
  std::string text = FormatNode(n, kBase, {}, names_);
  EXPECT_EQ(text.rfind("NodeName=n1 CoresPerSocket=2 \n   CPUAlloc=0 CPUEfctv=4 CPUTot=4 "
                       "CPULoad=N/A\n",
                       0),
            0u);
  EXPECT_NE(text.find("   NodeAddr=10.0.0.1 NodeHostName=n1host \n"
                      "   RealMemory=1000 AllocMem=0 FreeMem=N/A Sockets=2 Boards=1\n"
                      "   State=UNKNOWN+DYNAMIC_NORM+NOT_RESPONDING ThreadsPerCore=1"),
            std::string::npos);
  EXPECT_NE(text.find("   BootTime=None SlurmdStartTime=None\n   LastBusyTime=Unknown\n"),
            std::string::npos);
}

// ---- partitions -------------------------------------------------------------------------------

std::vector<pb::NodeRecord> FourNodes() {
  std::vector<pb::NodeRecord> nodes;
  for (int i = 1; i <= 4; ++i) {
    pb::NodeRecord n;
    n.set_name("n" + std::to_string(i));
    n.set_cpus(4);
    n.set_real_memory_mb(1000);
    nodes.push_back(n);
  }
  return nodes;
}

pb::PartitionRecord Partition() {
  pb::PartitionRecord p;
  p.set_name("debug");
  for (int i = 1; i <= 4; ++i) p.add_nodes("n" + std::to_string(i));
  p.set_nodes_expr("n[1-4]");
  p.set_is_default(true);
  p.set_max_time(kTimeInfinite);
  p.set_default_time(kTimeNoVal);
  p.set_state("UP");
  p.set_max_nodes(0xffffffffu);
  p.set_priority_tier(1);
  p.set_priority_job_factor(1);
  p.set_allow_accounts("ALL");
  p.set_allow_groups("ALL");
  p.set_allow_qos("ALL");
  p.set_over_subscribe("NO");
  return p;
}

TEST_F(ScontrolFormatTest, PartitionMultiLine) {
  EXPECT_EQ(FormatPartition(Partition(), FourNodes(), {}),
            "PartitionName=debug\n"
            "   AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL\n"
            "   AllocNodes=ALL Default=YES QoS=N/A\n"
            "   DefaultTime=NONE DisableRootJobs=NO ExclusiveUser=NO GraceTime=0 Hidden=NO\n"
            "   MaxNodes=UNLIMITED MaxTime=UNLIMITED MinNodes=0 LLN=NO MaxCPUsPerNode=UNLIMITED\n"
            "   Nodes=n[1-4]\n"
            "   PriorityJobFactor=1 PriorityTier=1 RootOnly=NO ReqResv=NO OverSubscribe=NO\n"
            "   OverTimeLimit=NONE PreemptMode=OFF\n"
            "   State=UP TotalCPUs=16 TotalNodes=4 SelectTypeParameters=NONE\n"
            "   JobDefaults=(null)\n"
            "   DefMemPerNode=UNLIMITED MaxMemPerNode=UNLIMITED\n"
            "   TRES=cpu=16,mem=4000M,node=4,billing=16\n"
            "\n");
}

TEST_F(ScontrolFormatTest, PartitionLimitsOneLiner) {
  pb::PartitionRecord p = Partition();
  p.set_is_default(false);
  p.set_default_time(30);
  p.set_max_time(120);
  p.set_max_nodes(2);
  p.set_min_nodes(1);
  p.set_allow_accounts("");
  p.set_deny_accounts("c");
  p.set_allow_groups("g");
  p.set_state("DOWN");
  p.set_hidden(true);
  p.set_root_only(true);
  p.set_over_subscribe("force");
  p.set_def_mem_per_cpu_mb(100);
  p.set_priority_tier(5);
  ShowOptions o;
  o.one_liner = true;
  EXPECT_EQ(FormatPartition(p, FourNodes(), o),
            "PartitionName=debug AllowGroups=g DenyAccounts=c AllowQos=ALL AllocNodes=ALL "
            "Default=NO QoS=N/A DefaultTime=00:30:00 DisableRootJobs=NO ExclusiveUser=NO "
            "GraceTime=0 Hidden=YES MaxNodes=2 MaxTime=02:00:00 MinNodes=1 LLN=NO "
            "MaxCPUsPerNode=UNLIMITED Nodes=n[1-4] PriorityJobFactor=1 PriorityTier=5 "
            "RootOnly=YES ReqResv=NO OverSubscribe=FORCE:4 OverTimeLimit=NONE PreemptMode=OFF "
            "State=DOWN TotalCPUs=16 TotalNodes=4 SelectTypeParameters=NONE JobDefaults=(null) "
            "DefMemPerCPU=100 MaxMemPerNode=UNLIMITED TRES=cpu=16,mem=4000M,node=4,billing=16\n");
}

// ---- config -----------------------------------------------------------------------------------

TEST_F(ScontrolFormatTest, Config) {
  pb::ConfigQueryResponse c;
  c.set_server_time(kBase);
  c.add_keys("AccountingStorageBackupHost");
  c.add_values("(null)");
  c.add_keys("AccountingStorageHost");
  c.add_values("localhost");
  c.add_keys("ClusterName");
  c.add_values("test");
  c.add_keys("KillWait");
  c.add_values("30 sec");
  EXPECT_EQ(FormatConfig(c),
            "Configuration data as of 2023-11-14T22:13:20\n"
            "AccountingStorageBackupHost = (null)\n"
            "AccountingStorageHost   = localhost\n"
            "ClusterName             = test\n"
            "KillWait                = 30 sec\n");
  EXPECT_EQ(FormatConfigLine("BOOT_TIME", "Unknown"), "BOOT_TIME               = Unknown\n");
}

// ---- hostlists --------------------------------------------------------------------------------

TEST_F(ScontrolFormatTest, HostlistKeepsOrderAndDuplicates) {
  EXPECT_EQ(HostlistInOrder({"n3", "n1", "n2", "n1", "a5"}), "n[3,1-2,1],a5");
  EXPECT_EQ(HostlistInOrder({"tux2", "tux1", "tux2"}), "tux[2,1-2]");
  EXPECT_EQ(HostlistInOrder({"n9", "n10", "n11"}), "n[9-11]");
  EXPECT_EQ(HostlistInOrder({"n09", "n10"}), "n[09-10]");
  EXPECT_EQ(HostlistInOrder({"n1", "n01"}), "n[1,01]");
  EXPECT_EQ(HostlistInOrder({"n1-ib0", "n1-ib1", "n2-ib0", "n2-ib1"}), "n1-ib[0-1],n2-ib[0-1]");
  EXPECT_EQ(HostlistInOrder({"n1", "m2", "n2"}), "n1,m2,n2");
  EXPECT_EQ(HostlistInOrder({"login"}), "login");
  EXPECT_EQ(HostlistInOrder({}), "");
}

TEST_F(ScontrolFormatTest, HostlistSorted) {
  EXPECT_EQ(HostlistSorted({"n3", "n1", "n2", "n1", "a5"}), "a5,n[1,1-3]");
  EXPECT_EQ(HostlistSorted({"tux2", "tux1", "tux2"}), "tux[1-2,2]");
  EXPECT_EQ(HostlistSorted({"n10", "n9", "m1", "n2-x"}), "m1,n[9-10],n2-x");
}

// ---- argument parsing -------------------------------------------------------------------------

TEST_F(ScontrolFormatTest, SplitCommandLine) {
  EXPECT_EQ(SplitCommandLine("update NodeName=n1 Reason=\"bad disk\"  State=DRAIN"),
            (std::vector<std::string>{"update", "NodeName=n1", "Reason=bad disk", "State=DRAIN"}));
  EXPECT_EQ(SplitCommandLine("  show   job 5 "), (std::vector<std::string>{"show", "job", "5"}));
  EXPECT_EQ(SplitCommandLine("a 'b c' \"\""), (std::vector<std::string>{"a", "b c", ""}));
}

TEST_F(ScontrolFormatTest, JobUpdateNormalizesKeys) {
  auto up = ParseJobUpdate(
      {"jobid=12,13", "timelimit=30", "JobName=foo", "partition=p", "NICE=-5", "Comment=hi there"});
  ASSERT_TRUE(up.ok()) << up.error();
  EXPECT_EQ(up->job_ids, (std::vector<std::string>{"12", "13"}));
  EXPECT_FALSE(up->by_name);
  EXPECT_EQ(up->fields, (std::map<std::string, std::string>{{"TimeLimit", "30"},
                                                            {"Name", "foo"},
                                                            {"Partition", "p"},
                                                            {"Nice", "-5"},
                                                            {"Comment", "hi there"}}));
}

TEST_F(ScontrolFormatTest, JobUpdateByName) {
  auto up = ParseJobUpdate({"JobName=foo", "TimeLimit=+10"});
  ASSERT_TRUE(up.ok()) << up.error();
  EXPECT_TRUE(up->job_ids.empty());
  EXPECT_EQ(up->by_name.value_or(""), "foo");
  EXPECT_EQ(up->fields.at("TimeLimit"), "+10");
}

TEST_F(ScontrolFormatTest, JobUpdateErrors) {
  EXPECT_EQ(ParseJobUpdate({"JobId=1", "Foo=1"}).error(),
            "Update of this parameter is not supported: Foo=1\nRequest aborted");
  EXPECT_EQ(ParseJobUpdate({"JobId=abc", "TimeLimit=5"}).error(),
            "Invalid job id specified for job abc");
  EXPECT_EQ(ParseJobUpdate({"JobId=1", "TimeLimit=xx"}).error(), "Invalid TimeLimit value");
  EXPECT_EQ(ParseJobUpdate({"JobId=1"}).error(), "No changes specified");
  EXPECT_EQ(ParseJobUpdate({"JobId=1", "Nice=abc"}).error(), "Invalid Nice value");
  EXPECT_NE(ParseJobUpdate({"TimeLimit=5"}).error().find("No valid entity in update command"),
            std::string::npos);
}

TEST_F(ScontrolFormatTest, NodeUpdate) {
  auto up = ParseNodeUpdate({"NodeName=n[1-2]", "State=drain", "Reason=bad disk"});
  ASSERT_TRUE(up.ok()) << up.error();
  EXPECT_EQ(up->node_names, "n[1-2]");
  EXPECT_EQ(up->state, "DRAIN");
  EXPECT_EQ(up->reason, "bad disk");

  auto resume = ParseNodeUpdate({"nodename=n1", "state=RESUME"});
  ASSERT_TRUE(resume.ok());
  EXPECT_EQ(resume->state, "RESUME");

  auto weight = ParseNodeUpdate({"NodeName=n1", "weight=5", "Features=a,b"});
  ASSERT_TRUE(weight.ok()) << weight.error();
  EXPECT_EQ(weight->fields,
            (std::map<std::string, std::string>{{"Weight", "5"}, {"AvailableFeatures", "a,b"}}));
}

TEST_F(ScontrolFormatTest, NodeUpdateErrors) {
  const std::string reason =
      "You must specify a reason when DOWNING or DRAINING a node. Request denied";
  EXPECT_EQ(ParseNodeUpdate({"NodeName=n1", "State=DRAIN"}).error(), reason);
  EXPECT_EQ(ParseNodeUpdate({"NodeName=n1", "State=down"}).error(), reason);
  EXPECT_EQ(ParseNodeUpdate({"NodeName=n1"}).error(), "No changes specified");
  EXPECT_EQ(ParseNodeUpdate({"NodeName=n1", "State=BOGUS"})
                .error()
                .rfind("Invalid input: State=BOGUS\nRequest aborted\nValid states are: ", 0),
            0u);
  EXPECT_EQ(ParseNodeUpdate({"NodeName=n1", "Foo=1"}).error(),
            "Update of this parameter is not supported: Foo=1\nRequest aborted");
}

TEST_F(ScontrolFormatTest, JobIdLists) {
  auto ids = ParseJobIdList({"12,13", "14_3", "15_[1-3,5]"});
  ASSERT_TRUE(ids.ok()) << ids.error();
  EXPECT_EQ(*ids, (std::vector<std::string>{"12", "13", "14_3", "15_[1-3,5]"}));
  EXPECT_EQ(ParseJobIdList({"abc"}).error(), "Invalid job id specified for job abc");
  EXPECT_FALSE(ParseJobIdList({"0"}).ok());
  EXPECT_FALSE(ParseJobIdList({"12_[3-1]"}).ok());
  EXPECT_FALSE(ParseJobIdList({"12.0"}).ok());
  EXPECT_TRUE(IsValidJobIdArg("12_*"));
}

TEST_F(ScontrolFormatTest, JsonIsMinimalButValid) {
  std::string json = FormatJobsJson({RunningJob()}, kBase + 3601, names_);
  EXPECT_EQ(json.rfind("{\n  \"jobs\": [\n    {\n      \"job_id\": 42,\n", 0), 0u);
  EXPECT_NE(json.find("\"job_state\": \"RUNNING\""), std::string::npos);
  EXPECT_NE(json.find("\"nodes\": \"n[1-2]\""), std::string::npos);
  EXPECT_EQ(FormatJobsJson({}, kBase, names_), "{\n  \"jobs\": []\n}\n");
  pb::NodeRecord n = Node();
  n.set_reason("a \"quoted\"\nreason");
  std::string nj = FormatNodesJson({n}, names_);
  EXPECT_NE(nj.find("\"reason\": \"a \\\"quoted\\\"\\nreason\""), std::string::npos);
}

}  // namespace
}  // namespace shoal::cli
