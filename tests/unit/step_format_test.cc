// squeue -s and scontrol show step output, checked against Slurm 22.05's
// (docs/notes/slurm-steps-observed.md, section 4).
#include "cli/step_format.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>

#include "common/units.h"

namespace shoal::cli {
namespace {

class StepFormatTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("TZ", "UTC", 1);
    tzset();
  }
};

// 2026-11-22T09:46:11 UTC.
constexpr int64_t kStart = 1795340771;

pb::JobRecord Job(uint32_t id) {
  pb::JobRecord j;
  j.set_job_id(id);
  j.set_partition("debug");
  j.set_array_task_id(kNoArrayTask);
  j.mutable_spec()->set_uid(0);
  j.mutable_spec()->set_user_name("root");
  j.add_nodes("n1");
  j.add_nodes("n2");
  return j;
}

pb::StepRecord Step(uint32_t job, uint32_t step, const std::string& name) {
  pb::StepRecord s;
  s.set_job_id(job);
  s.set_step_id(step);
  s.set_name(name);
  s.set_uid(0);
  s.set_start_time(kStart);
  s.set_state(pb::JOB_RUNNING);
  s.set_time_limit(kTimeInfinite);
  s.set_partition("debug");
  if (step == kBatchStepId) {
    s.add_nodes("n1");
    s.add_tasks_per_node(1);
    s.add_cpus_per_node(1);
    s.set_num_tasks(1);
    s.set_tres("cpu=1,node=1");
  } else {
    s.add_nodes("n1");
    s.add_nodes("n2");
    s.add_tasks_per_node(1);
    s.add_tasks_per_node(1);
    s.add_cpus_per_node(1);
    s.add_cpus_per_node(1);
    s.set_num_tasks(2);
    s.set_cpus_per_task(1);
    s.set_tres("cpu=2,node=2");
    s.set_srun_host("vm");
    s.set_srun_pid(step == 0 ? 23228 : 23229);
  }
  return s;
}

// The job of section 4: 44.0 "overlapper" (--overlap), 44.1 "sleep", 44.batch.
struct Fixture {
  pb::StepQueryResponse resp;
  Fixture() {
    *resp.add_jobs() = Job(44);
    *resp.add_steps() = Step(44, kBatchStepId, "batch");
    *resp.add_steps() = Step(44, 1, "sleep");
    pb::StepRecord s0 = Step(44, 0, "overlapper");
    s0.set_overlap(true);
    s0.clear_cpus_per_node();  // an --overlap step holds no CPUs; its TRES still counts 2
    *resp.add_steps() = s0;
    resp.set_server_time(kStart + 2);
  }
};

TEST_F(StepFormatTest, StepIds) {
  pb::JobRecord job = Job(44);
  EXPECT_EQ(StepIdString(Step(44, 0, "a"), &job), "44.0");
  EXPECT_EQ(StepIdString(Step(44, kBatchStepId, "batch"), &job), "44.batch");
  EXPECT_EQ(StepIdString(Step(44, kExternStepId, "extern"), nullptr), "44.extern");
  EXPECT_EQ(StepIdString(Step(44, kInteractiveStepId, "interactive"), nullptr), "44.interactive");
  // Array task 70_1 has its own job id 72.
  pb::JobRecord task = Job(72);
  task.set_array_job_id(70);
  task.set_array_task_id(1);
  EXPECT_EQ(StepIdString(Step(72, 0, "sleep"), &task), "70_1.0");
  EXPECT_EQ(StepIdString(Step(72, kBatchStepId, "batch"), &task), "70_1.batch");
}

TEST_F(StepFormatTest, SqueueDefault) {
  Fixture f;
  auto listing = FormatSqueueSteps(CollectSteps(f.resp), {}, f.resp.server_time());
  EXPECT_TRUE(listing.errors.empty());
  EXPECT_EQ(listing.text,
            "         STEPID     NAME PARTITION     USER      TIME NODELIST\n"
            "           44.0 overlapp     debug     root      0:02 n[1-2]\n"
            "           44.1    sleep     debug     root      0:02 n[1-2]\n"
            "       44.batch    batch     debug     root      0:02 n1\n");
  SqueueStepOptions o;
  o.no_header = true;
  listing = FormatSqueueSteps(CollectSteps(f.resp), o, f.resp.server_time());
  EXPECT_EQ(listing.text.substr(0, listing.text.find('\n')),
            "           44.0 overlapp     debug     root      0:02 n[1-2]");
}

TEST_F(StepFormatTest, SqueueFormatLetters) {
  Fixture f;
  SqueueStepOptions o;
  o.format = "%i %j";
  EXPECT_EQ(FormatSqueueSteps(CollectSteps(f.resp), o, f.resp.server_time()).text,
            "STEPID NAME\n44.0 overlapper\n44.1 sleep\n44.batch batch\n");

  o.format = "%i|%j|%P|%u|%M|%N|%l|%S|%b|%A|%a|%U|%T";
  auto listing = FormatSqueueSteps(CollectSteps(f.resp), o, kStart + 7);
  EXPECT_EQ(listing.errors, (std::vector<std::string>{"Invalid job step format specification: a",
                                                      "Invalid job step format specification: T"}));
  EXPECT_EQ(
      listing.text,
      "STEPID|NAME|PARTITION|USER|TIME|NODELIST|TIME_LIMIT|START_TIME|TRES_PER_JOB|TASKS|%a|"
      "UID|%T\n"
      "44.0|overlapper|debug|root|0:07|n[1-2]|UNLIMITED|2026-11-22T09:46:11|(null)|2|%a|0|%T\n"
      "44.1|sleep|debug|root|0:07|n[1-2]|UNLIMITED|2026-11-22T09:46:11|(null)|2|%a|0|%T\n"
      "44.batch|batch|debug|root|0:07|n1|UNLIMITED|2026-11-22T09:46:11|(null)|1|%a|0|%T\n");

  // Widths: '.' right-justifies and cuts, except the node list.
  o.format = "%.4i %.2u %.3N";
  EXPECT_EQ(FormatSqueueSteps(CollectSteps(f.resp), o, kStart).text,
            "STEP US NODELIST\n44.0 ro n[1-2]\n44.1 ro n[1-2]\n44.b ro  n1\n");
  o.format = "%.10i %.5j";
  o.no_header = true;
  EXPECT_EQ(FormatSqueueSteps(CollectSteps(f.resp), o, kStart).text,
            "      44.0 overl\n      44.1 sleep\n  44.batch batch\n");
}

TEST_F(StepFormatTest, SqueueAll) {
  Fixture f;
  SqueueStepOptions o;
  o.format = "%all";
  auto text = FormatSqueueSteps(CollectSteps(f.resp), o, kStart + 4).text;
  EXPECT_EQ(
      text.substr(0, text.find('\n')),
      "TRES_PER_JOB|STEPID|NAME|TIME_LIMIT|USER|TASKS|TIME|NODELIST|PARTITION|START_TIME|UID|");
  EXPECT_NE(text.find("(null)|44.0|overlapper|UNLIMITED|root|2|0:04|n[1-2]|debug|"
                      "2026-11-22T09:46:11|0|\n"),
            std::string::npos);
}

TEST_F(StepFormatTest, SqueueLongFormat) {
  Fixture f;
  SqueueStepOptions o;
  o.long_format = "StepId,StepName,StepState,NumTasks,NumCPUs";
  EXPECT_EQ(FormatSqueueSteps(CollectSteps(f.resp), o, kStart).text,
            "STEPID              NAME                STATE               TASKS               "
            "NUM_CPUS            \n"
            "44.0                overlapper          RUNNING             2                   "
            "2                   \n"
            "44.1                sleep               RUNNING             2                   "
            "2                   \n"
            "44.batch            batch               RUNNING             1                   "
            "0                   \n");
  o.long_format = "StepId,Bogus";
  auto listing = FormatSqueueSteps(CollectSteps(f.resp), o, kStart);
  EXPECT_EQ(listing.errors,
            (std::vector<std::string>{"Invalid job step format specification: Bogus"}));
}

TEST_F(StepFormatTest, SqueueOrderAcrossJobs) {
  // Numeric job id order (array task 70_1 is job 72), then numeric steps, batch, extern.
  pb::StepQueryResponse r;
  pb::JobRecord a2 = Job(70), b = Job(71), a1 = Job(72);
  a2.set_array_job_id(70);
  a2.set_array_task_id(2);
  a1.set_array_job_id(70);
  a1.set_array_task_id(1);
  *r.add_jobs() = a1;
  *r.add_jobs() = b;
  *r.add_jobs() = a2;
  *r.add_steps() = Step(72, kExternStepId, "extern");
  *r.add_steps() = Step(72, 0, "sleep");
  *r.add_steps() = Step(71, kBatchStepId, "batch");
  *r.add_steps() = Step(71, kExternStepId, "extern");
  *r.add_steps() = Step(71, 1, "overlapper");
  *r.add_steps() = Step(71, 0, "sleep");
  *r.add_steps() = Step(70, 0, "sleep");
  SqueueStepOptions o;
  o.format = "%i";
  o.no_header = true;
  EXPECT_EQ(FormatSqueueSteps(CollectSteps(r), o, kStart).text,
            "70_2.0\n71.0\n71.1\n71.batch\n71.extern\n70_1.0\n70_1.extern\n");
}

TEST_F(StepFormatTest, ScontrolRecord) {
  Fixture f;
  auto steps = CollectSteps(f.resp);
  SortStepsForScontrol(steps);
  std::string all;
  for (const auto& r : steps) all += FormatStepRecord(*r.step, r.job, false);
  EXPECT_EQ(all,
            "StepId=44.batch UserId=0 StartTime=2026-11-22T09:46:11 TimeLimit=UNLIMITED\n"
            "   State=RUNNING Partition=debug NodeList=n1\n"
            "   Nodes=1 CPUs=0 Tasks=1 Name=batch Network=(null)\n"
            "   TRES=(null)\n"
            "   ResvPorts=(null)\n"
            "   CPUFreqReq=Default\n"
            "   SrunHost:Pid=(null):0\n"
            "\n"
            "StepId=44.0 UserId=0 StartTime=2026-11-22T09:46:11 TimeLimit=UNLIMITED\n"
            "   State=RUNNING Partition=debug NodeList=n[1-2]\n"
            "   Nodes=2 CPUs=2 Tasks=2 Name=overlapper Network=(null)\n"
            "   TRES=cpu=2,mem=0,node=2\n"
            "   ResvPorts=(null)\n"
            "   CPUFreqReq=Default Dist=Cyclic\n"
            "   SrunHost:Pid=vm:23228\n"
            "\n"
            "StepId=44.1 UserId=0 StartTime=2026-11-22T09:46:11 TimeLimit=UNLIMITED\n"
            "   State=RUNNING Partition=debug NodeList=n[1-2]\n"
            "   Nodes=2 CPUs=2 Tasks=2 Name=sleep Network=(null)\n"
            "   TRES=cpu=2,mem=0,node=2\n"
            "   ResvPorts=(null)\n"
            "   CPUFreqReq=Default Dist=Cyclic\n"
            "   SrunHost:Pid=vm:23229\n"
            "\n");
  EXPECT_EQ(FormatStepRecord(*steps[1].step, steps[1].job, true),
            "StepId=44.0 UserId=0 StartTime=2026-11-22T09:46:11 TimeLimit=UNLIMITED "
            "State=RUNNING Partition=debug NodeList=n[1-2] Nodes=2 CPUs=2 Tasks=2 Name=overlapper "
            "Network=(null) TRES=cpu=2,mem=0,node=2 ResvPorts=(null) CPUFreqReq=Default "
            "Dist=Cyclic SrunHost:Pid=vm:23228\n");
}

TEST_F(StepFormatTest, ScontrolExternTimeLimitAndDist) {
  pb::JobRecord job = Job(71);
  pb::StepRecord ext = Step(71, kExternStepId, "extern");
  ext.set_num_tasks(2);
  ext.clear_srun_host();
  ext.clear_srun_pid();
  ext.clear_tres();
  EXPECT_EQ(FormatStepRecord(ext, &job, true),
            "StepId=71.extern UserId=0 StartTime=2026-11-22T09:46:11 TimeLimit=UNLIMITED "
            "State=RUNNING Partition=debug NodeList=n[1-2] Nodes=2 CPUs=0 Tasks=2 Name=extern "
            "Network=(null) TRES=(null) ResvPorts=(null) CPUFreqReq=Default "
            "SrunHost:Pid=(null):0\n");
  // srun -t 1-2:03:04 -> 1564 minutes; three tasks on two nodes are laid out in blocks.
  pb::StepRecord s = Step(75, 0, "limited");
  s.set_time_limit(24 * 60 + 2 * 60 + 4);
  s.set_num_tasks(3);
  std::string rec = FormatStepRecord(s, nullptr, false);
  EXPECT_NE(rec.find(" TimeLimit=1-02:04:00\n"), std::string::npos) << rec;
  EXPECT_NE(rec.find("CPUFreqReq=Default Dist=Block\n"), std::string::npos) << rec;
  SqueueStepOptions o;
  o.format = "%l";
  o.no_header = true;
  pb::StepQueryResponse r;
  *r.add_steps() = s;
  EXPECT_EQ(FormatSqueueSteps(CollectSteps(r), o, kStart).text, "1-02:04:00\n");
  r.mutable_steps(0)->set_time_limit(5);
  EXPECT_EQ(FormatSqueueSteps(CollectSteps(r), o, kStart).text, "5:00\n");
  EXPECT_NE(FormatStepRecord(r.steps(0), nullptr, true).find("TimeLimit=00:05:00 "),
            std::string::npos);
}

TEST_F(StepFormatTest, TresKeepsMemoryAndGres) {
  pb::StepRecord s = Step(9, 0, "gpu");
  s.set_mem_per_node_mb(2048);
  s.set_tres("cpu=4,node=2,gres/gpu=2");
  EXPECT_NE(FormatStepRecord(s, nullptr, true).find(" TRES=cpu=4,mem=4G,node=2,gres/gpu=2 "),
            std::string::npos);
}

TEST_F(StepFormatTest, ParseStepIds) {
  auto s = ParseStepId("123.4");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->job_id, 123u);
  EXPECT_EQ(*s->step_id, 4u);
  EXPECT_FALSE(s->array_task);
  s = ParseStepId("123");
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s->step_id);
  s = ParseStepId("70_1.batch");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->job_id, 70u);
  EXPECT_EQ(*s->array_task, 1u);
  EXPECT_EQ(*s->step_id, kBatchStepId);
  EXPECT_EQ(*ParseStepId("5.extern")->step_id, kExternStepId);
  EXPECT_EQ(*ParseStepId("5.interactive")->step_id, kInteractiveStepId);
  EXPECT_FALSE(ParseStepId("abc").ok());
  EXPECT_FALSE(ParseStepId("0.1").ok());
  EXPECT_FALSE(ParseStepId("5.x").ok());
  EXPECT_FALSE(ParseStepId("5.4294967290").ok());
  EXPECT_EQ(ParseStepId("5.x").error(), "Invalid job step id: 5.x");

  auto list = ParseSqueueStepList("112.0,112.batch");
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->size(), 2u);
  EXPECT_EQ(ParseSqueueStepList("44").error(), "Invalid job_step id: 44.??");
  EXPECT_EQ(ParseSqueueStepList("44.q").error(), "Invalid job_step id: 44.q");
}

TEST_F(StepFormatTest, Filters) {
  pb::JobRecord job = Job(72);
  job.set_array_job_id(70);
  job.set_array_task_id(1);
  job.mutable_spec()->set_uid(1000);
  pb::StepRecord s = Step(72, 0, "sleep");
  StepFilter f;
  EXPECT_TRUE(StepMatches(s, &job, f));
  f.jobs = {{70, std::nullopt}};
  EXPECT_TRUE(StepMatches(s, &job, f));
  f.jobs = {{70, 2u}};
  EXPECT_FALSE(StepMatches(s, &job, f));
  f.jobs = {{72, std::nullopt}};
  EXPECT_TRUE(StepMatches(s, &job, f));
  f.jobs.clear();
  f.uids = {0};
  EXPECT_FALSE(StepMatches(s, &job, f));
  f.uids = {1000};
  f.partitions = {"gpu"};
  EXPECT_FALSE(StepMatches(s, &job, f));
  f.partitions = {"debug"};
  EXPECT_TRUE(StepMatches(s, &job, f));
  f.steps = {*ParseStepId("70_1.0")};
  EXPECT_TRUE(StepMatches(s, &job, f));
  f.steps = {*ParseStepId("72.batch")};
  EXPECT_FALSE(StepMatches(s, &job, f));
  f.steps = {*ParseStepId("72.0")};
  EXPECT_TRUE(StepMatches(s, &job, f));
}

TEST_F(StepFormatTest, NotFoundMessages) {
  EXPECT_EQ(StepNotFoundMessage(*ParseStepId("44.7")), "Job step 44.7 not found");
  EXPECT_EQ(StepNotFoundMessage(*ParseStepId("113")), "Job step 113. not found");
  EXPECT_EQ(StepNotFoundMessage(*ParseStepId("70_1.batch")), "Job step 70_1.batch not found");
}

}  // namespace
}  // namespace shoal::cli
