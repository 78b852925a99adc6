#include "cli/sprio_format.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace shoal::cli {
namespace {

// The man page's -w example: age 1000, fairshare 100000, job size 1000, partition 10000, QOS 1.
pb::PriorityFactors ManWeights() {
  pb::PriorityFactors w;
  w.set_age(1000);
  w.set_fairshare(100000);
  w.set_jobsize(1000);
  w.set_partition_factor(10000);
  w.set_qos_factor(1);
  return w;
}

pb::PriorityFactors Job(uint32_t id, int64_t priority, int64_t fairshare, uint32_t uid = 1000,
                        const std::string& partition = "debug") {
  pb::PriorityFactors j;
  j.set_job_id(id);
  j.set_partition(partition);
  j.set_uid(uid);
  j.set_priority(priority);
  j.set_age(0);
  j.set_fairshare(fairshare);
  j.set_jobsize(1000);
  j.set_partition_factor(10000);
  j.set_qos_factor(0);
  return j;
}

std::vector<const pb::PriorityFactors*> Ptrs(const std::vector<pb::PriorityFactors>& jobs) {
  std::vector<const pb::PriorityFactors*> out;
  for (const auto& j : jobs) out.push_back(&j);
  return out;
}

SprioFormatOptions Opts() {
  SprioFormatOptions o;
  o.user_name = [](uint32_t uid) -> std::string {
    if (uid == 1000) return "fred";
    if (uid == 1001) return "sally";
    return "";
  };
  o.cluster_name = "shoal";
  return o;
}

std::string Format(const std::vector<pb::PriorityFactors>& jobs, const pb::PriorityFactors& w,
                   const SprioFormatOptions& o) {
  SprioOutput out = FormatSprio(Ptrs(jobs), w, o);
  EXPECT_TRUE(out.error.empty()) << out.error;
  EXPECT_TRUE(out.warnings.empty());
  return out.text;
}

TEST(SprioFormat, DefaultLayoutFromWeights) {
  SprioFormatOptions o = Opts();
  pb::PriorityFactors w = ManWeights();
  EXPECT_EQ(SprioDefaultFormat(o, w), "%.15i %9r %.10Y %.10S %.10A %.10F %.10J %.10P %.10Q");
  w.set_tres_detail("CPU=1000,Mem=2000");
  EXPECT_EQ(SprioDefaultFormat(o, w), "%.15i %9r %.10Y %.10S %.10A %.10F %.10J %.10P %.10Q %.20T");
  o.user_column = true;
  EXPECT_EQ(SprioDefaultFormat(o, w),
            "%.15i %9r %.8u %.10Y %.10S %.10A %.10F %.10J %.10P %.10Q %.20T");
  o.cluster_column = true;
  o.normalized = true;
  EXPECT_EQ(SprioDefaultFormat(o, w), "%.15i %9r %.8c %.8u %10y %10a %10f %10j %10p %10q %20t");
  // Zero weights drop their columns; SITE and PRIORITY stay.
  EXPECT_EQ(SprioDefaultFormat(Opts(), pb::PriorityFactors()), "%.15i %9r %.10Y %.10S");
  o.long_output = true;
  EXPECT_EQ(SprioDefaultFormat(o, pb::PriorityFactors()), kSprioNormLongFormat);
  o.normalized = false;
  EXPECT_EQ(SprioDefaultFormat(o, pb::PriorityFactors()), kSprioLongFormat);
}

TEST(SprioFormat, DefaultOutputSortedByJobId) {
  std::vector<pb::PriorityFactors> jobs = {Job(65541, 62662, 51662), Job(65539, 62664, 51664),
                                           Job(65540, 62663, 51663)};
  EXPECT_EQ(Format(jobs, ManWeights(), Opts()),
            "          JOBID PARTITION   PRIORITY       SITE        AGE  FAIRSHARE    JOBSIZE  "
            "PARTITION        QOS\n"
            "          65539 debug          62664          0          0      51664       1000  "
            "    10000          0\n"
            "          65540 debug          62663          0          0      51663       1000  "
            "    10000          0\n"
            "          65541 debug          62662          0          0      51662       1000  "
            "    10000          0\n");
}

TEST(SprioFormat, ZeroWeightColumnsDropped) {
  pb::PriorityFactors w;
  w.set_fairshare(100000);
  w.set_partition_factor(10000);
  std::vector<pb::PriorityFactors> jobs = {Job(7, 61664, 51664)};
  EXPECT_EQ(Format(jobs, w, Opts()),
            "          JOBID PARTITION   PRIORITY       SITE  FAIRSHARE  PARTITION\n"
            "              7 debug          61664          0      51664      10000\n");
}

TEST(SprioFormat, UserColumnAndNoHeader) {
  SprioFormatOptions o = Opts();
  o.user_column = true;
  o.no_header = true;
  pb::PriorityFactors w;
  w.set_fairshare(100000);
  std::vector<pb::PriorityFactors> jobs = {Job(65549, 62080, 51078, 1001),
                                           Job(65548, 62079, 51077, 1000), Job(65550, 1, 0, 4242)};
  EXPECT_EQ(Format(jobs, w, o),
            "          65548 debug         fred      62079          0      51077\n"
            "          65549 debug        sally      62080          0      51078\n"
            "          65550 debug       nobody          1          0          0\n");
}

TEST(SprioFormat, LongLayoutShowsEveryColumn) {
  SprioFormatOptions o = Opts();
  o.long_output = true;
  pb::PriorityFactors j = Job(12, 1500, 500);
  j.set_nice(-10);
  j.set_site(10);
  j.set_tres_detail("cpu=12,mem=3");
  // Weights are all zero: -l keeps every column anyway.
  EXPECT_EQ(Format({j}, pb::PriorityFactors(), o),
            "          JOBID PARTITION     USER   PRIORITY       SITE        AGE      ASSOC  "
            "FAIRSHARE    JOBSIZE  PARTITION        QOS        NICE                 TRES\n"
            "             12 debug         fred       1500         10          0          0  "
            "      500       1000      10000          0         -10         cpu=12,mem=3\n");
}

TEST(SprioFormat, Normalized) {
  SprioFormatOptions o = Opts();
  o.normalized = true;
  pb::PriorityFactors j = Job(65539, 62664, 51664);
  j.set_age(718);
  // Columns are left-justified; PRIORITY is priority / 2^32-1 cut to ten characters.
  EXPECT_EQ(Format({j}, ManWeights(), o),
            "          JOBID PARTITION PRIORITY   AGE        FAIRSHARE  JOBSIZE    PARTITION  "
            "QOS       \n"
            "          65539 debug     0.00001459 0.7180000  0.5166400  1.0000000  1.0000000  "
            "0.0000000 \n");
}

TEST(SprioFormat, NormalizedTres) {
  SprioFormatOptions o = Opts();
  o.has_format = true;
  o.format = "%i %t|%T";
  pb::PriorityFactors w;
  w.set_tres_detail("CPU=1000,Mem=2000");
  pb::PriorityFactors j = Job(3, 10, 0);
  j.set_tres_detail("cpu=500,mem=1000,gres/gpu=7");
  EXPECT_EQ(Format({j}, w, o),
            "JOBID TRES|TRES\n3 cpu=0.50,mem=0.50|cpu=500,mem=1000,gres/gpu=7\n");
}

TEST(SprioFormat, WeightsRow) {
  SprioFormatOptions o = Opts();
  o.weights = true;
  std::vector<pb::PriorityFactors> jobs = {Job(1, 2, 3)};  // not printed with -w
  EXPECT_EQ(Format(jobs, ManWeights(), o),
            "          JOBID PARTITION   PRIORITY       SITE        AGE  FAIRSHARE    JOBSIZE  "
            "PARTITION        QOS\n"
            "        Weights                               1       1000     100000       1000  "
            "    10000          1\n");
  pb::PriorityFactors w = ManWeights();
  w.set_tres_detail("CPU=1000");
  o.long_output = true;
  o.no_header = true;
  EXPECT_EQ(Format({}, w, o),
            "        Weights                                        1       1000          0  "
            "   100000       1000      10000          1                         CPU=1000\n");
}

TEST(SprioFormat, CustomFormat) {
  SprioFormatOptions o = Opts();
  o.has_format = true;
  o.format = "job=%i:%5u|%.4Y|%N|%S|%r|%c";
  pb::PriorityFactors j = Job(42, 123456, 0, 1001, "gpu");
  j.set_nice(5);
  j.set_site(-3);
  EXPECT_EQ(Format({j}, ManWeights(), o),
            "job=JOBID:USER |PRIO|NICE|SITE|PARTITION|CLUSTER\n"
            "job=42:sally|1234|5|-3|gpu|shoal\n");
  o.format = "";
  EXPECT_EQ(Format({j}, ManWeights(), o), "\n\n");
}

TEST(SprioFormat, UnknownFormatLetterIsReportedAndSkipped) {
  SprioFormatOptions o = Opts();
  o.has_format = true;
  o.format = "%i %z| %Y";
  SprioOutput out = FormatSprio(Ptrs({Job(9, 99, 0)}), ManWeights(), o);
  ASSERT_EQ(out.warnings.size(), 1u);
  EXPECT_EQ(out.warnings[0], "Invalid job format specification: z");
  EXPECT_EQ(out.text, "JOBID PRIORITY\n9 99\n");
  EXPECT_TRUE(out.error.empty());
}

TEST(SprioFormat, Sorting) {
  SprioFormatOptions o = Opts();
  o.has_format = true;
  o.format = "%i %r %u %Y";
  o.no_header = true;
  std::vector<pb::PriorityFactors> jobs = {Job(1, 300, 0, 1001, "b"), Job(2, 100, 0, 1000, "a"),
                                           Job(3, 200, 0, 1000, "b"), Job(4, 300, 0, 1000, "a")};
  o.sort = "-Y";
  EXPECT_EQ(Format(jobs, ManWeights(), o),
            "1 b sally 300\n4 a fred 300\n3 b fred 200\n2 a fred 100\n");
  o.sort = "-y,+i";
  EXPECT_EQ(Format(jobs, ManWeights(), o),
            "1 b sally 300\n4 a fred 300\n3 b fred 200\n2 a fred 100\n");
  o.sort = "-y,-i";
  EXPECT_EQ(Format(jobs, ManWeights(), o),
            "4 a fred 300\n1 b sally 300\n3 b fred 200\n2 a fred 100\n");
  // The man page's example: user name, partition, then descending priority.
  o.sort = "u,r,-y";
  EXPECT_EQ(Format(jobs, ManWeights(), o),
            "4 a fred 300\n2 a fred 100\n3 b fred 200\n1 b sally 300\n");
  o.sort = "";  // default: ascending job id
  EXPECT_EQ(Format(jobs, ManWeights(), o),
            "1 b sally 300\n2 a fred 100\n3 b fred 200\n4 a fred 300\n");
}

TEST(SprioFormat, InvalidSortFailsAfterHeader) {
  SprioFormatOptions o = Opts();
  o.has_format = true;
  o.format = "%i";
  o.sort = "Z,i";
  SprioOutput out = FormatSprio(Ptrs({Job(1, 1, 0)}), ManWeights(), o);
  EXPECT_EQ(out.error, "Invalid sort specification: Z");
  EXPECT_EQ(out.text, "JOBID\n");
}

TEST(SprioFormat, JobIdsAndFilter) {
  auto ids = ParseSprioJobIds("65548,65547");
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<uint32_t>{65548, 65547}));
  EXPECT_EQ(ParseSprioJobIds("12,x").error(), "Invalid job id: x");
  EXPECT_EQ(ParseSprioJobIds("0").error(), "Invalid job id: 0");
  EXPECT_EQ(ParseSprioJobIds("12_3").error(), "Invalid job id: 12_3");

  SprioFilter f;
  pb::PriorityFactors j = Job(5, 1, 0, 1000, "debug");
  EXPECT_TRUE(SprioJobMatches(j, f));
  f.job_ids = {4, 5};
  f.partitions = {"gpu", "debug"};
  EXPECT_TRUE(SprioJobMatches(j, f));
  f.uids_given = true;  // -u named only unknown users: nothing matches
  EXPECT_FALSE(SprioJobMatches(j, f));
  f.uids = {1000};
  EXPECT_TRUE(SprioJobMatches(j, f));
  f.partitions = {"gpu"};
  EXPECT_FALSE(SprioJobMatches(j, f));
}

}  // namespace
}  // namespace shoal::cli
