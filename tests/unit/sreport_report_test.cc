// Layouts checked against Slurm 22.05.8's sreport on the observation cluster.
#include "cli/sreport_report.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <initializer_list>
#include <string>
#include <vector>

namespace shoal::cli {
namespace {

const bool kUtc = [] {
  setenv("TZ", "UTC", 1);
  tzset();
  return true;
}();

constexpr int64_t kStart = 1795348800;  // 2026-11-22T12:00:00Z
constexpr int64_t kNow = 1795353240;    // 2026-11-22T13:14:00Z

Result<SreportOptions> Parse(std::initializer_list<const char*> args) {
  std::vector<std::string> store{"sreport"};
  for (const char* a : args) store.emplace_back(a);
  std::vector<char*> argv;
  for (std::string& s : store) argv.push_back(s.data());
  return ParseSreportArgs(static_cast<int>(argv.size()), argv.data(), kNow);
}

pb::AcctJob Ran(const std::string& user, const std::string& account, uint32_t cpus, int64_t start,
                int64_t end) {
  pb::AcctJob j;
  j.set_cluster("obs");
  j.set_user(user);
  j.set_account(account);
  j.set_alloc_cpus(cpus);
  j.set_req_cpus(cpus);
  j.set_start_time(start);
  j.set_end_time(end);
  j.set_eligible_time(start);
  return j;
}

pb::AcctUsageResponse Sample() {
  pb::AcctUsageResponse u;
  pb::AcctCluster* c = u.add_clusters();
  c->set_name("obs");
  c->set_tres("cpu=8,mem=8G,node=4,billing=8");
  *u.add_jobs() = Ran("acctuser1", "chem", 2, kStart - 600, 0);             // the whole hour
  *u.add_jobs() = Ran("acctuser2", "bio", 1, kStart + 600, kStart + 1200);  // 10 minutes
  pb::AcctEvent* e = u.add_events();
  e->set_cluster("obs");
  e->set_node_name("n1");
  e->set_state("DOWN");
  e->set_tres("cpu=2,mem=2G");
  e->set_time_start(kStart + 1800);
  return u;
}

TEST(Sreport, ClusterUtilizationLayoutMatchesSlurm) {
  auto o = Parse({"cluster", "utilization", "start=2026-11-22T12:00", "end=2026-11-22T13:00"});
  ASSERT_TRUE(o.ok()) << o.error();
  auto text = FormatSreport(Sample(), *o, {});
  ASSERT_TRUE(text.ok()) << text.error();
  // allocated 2x60 + 1x10 = 130 min; down 2 CPUs x 30 min; reported 8 x 60.
  EXPECT_EQ(*text,
            "--------------------------------------------------------------------------------\n"
            "Cluster Utilization 2026-11-22T12:00:00 - 2026-11-22T12:59:59\n"
            "Usage reported in CPU Minutes\n"
            "--------------------------------------------------------------------------------\n"
            "  Cluster Allocate     Down PLND Dow     Idle  Planned Reported \n"
            "--------- -------- -------- -------- -------- -------- -------- \n"
            "      obs      130       60        0      290        0      480 \n");
}

TEST(Sreport, ClusterUtilizationParsablePercent) {
  auto o = Parse({"-P", "-t", "percent", "cluster", "Utilization", "start=2026-11-22T12:00",
                  "end=2026-11-22T13:00", "format=Cluster,Allocated,Idle,Reported"});
  ASSERT_TRUE(o.ok()) << o.error();
  o->no_header = false;
  auto text = FormatSreport(Sample(), *o, {});
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text,
            "--------------------------------------------------------------------------------\n"
            "Cluster Utilization 2026-11-22T12:00:00 - 2026-11-22T12:59:59\n"
            "Usage reported in Percentage of Total\n"
            "--------------------------------------------------------------------------------\n"
            "Cluster|Allocated|Idle|Reported\n"
            "obs|27.08%|60.42%|100.00%\n");
}

TEST(Sreport, UserTopLayout) {
  auto o =
      Parse({"-t", "percent", "user", "top", "start=2026-11-22T12:00", "end=2026-11-22T13:00"});
  ASSERT_TRUE(o.ok()) << o.error();
  SreportLookups lk;
  lk.proper_name = [](const std::string& u) { return u == "acctuser2" ? "Ann User" : ""; };
  auto text = FormatSreport(Sample(), *o, lk);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text,
            "--------------------------------------------------------------------------------\n"
            "Top 10 Users 2026-11-22T12:00:00 - 2026-11-22T12:59:59 (3600 secs)\n"
            "Usage reported in Percentage of Total\n"
            "--------------------------------------------------------------------------------\n"
            "  Cluster     Login     Proper Name         Account     Used   Energy \n"
            "--------- --------- --------------- --------------- -------- -------- \n"
            "      obs acctuser1                            chem   25.00%    0.00% \n"
            "      obs acctuser2        Ann User             bio    2.08%    0.00% \n");
  o = Parse({"-n", "-P", "user", "TopUsage", "TopCount=1", "start=2026-11-22T12:00",
             "end=2026-11-22T13:00"});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(*FormatSreport(Sample(), *o, {}), "obs|acctuser1||chem|120|0\n");
}

TEST(Sreport, DefaultWindowAndTimeFormats) {
  auto o = Parse({"cluster", "utilization"});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->start, kStart - 12 * 3600 - 86400);  // yesterday 00:00
  EXPECT_EQ(o->end, kStart - 12 * 3600);            // today 00:00
  EXPECT_EQ(*ParseSreportTime("hours"), SreportTime::kHours);
  EXPECT_EQ(*ParseSreportTime("minper"), SreportTime::kMinsPer);
  EXPECT_EQ(*ParseSreportTime("s"), SreportTime::kSecs);
  EXPECT_FALSE(ParseSreportTime("fortnights").ok());
  auto bad = Parse({"cluster", "utilization", "format=Bogus"});
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(FormatSreport(Sample(), *bad, {}).error(), " Unknown field 'Bogus'");
}

TEST(Sreport, ComputeClusterUsageCapsAndReservations) {
  pb::AcctUsageResponse u = Sample();
  pb::AcctReservation* r = u.add_reservations();
  r->set_cluster("obs");
  r->set_name("maint");
  r->set_flags("MAINT");
  r->set_tres("cpu=2");
  r->set_time_start(kStart);
  r->set_time_end(kStart + 3600);
  auto rows = ComputeClusterUsage(u, kStart, kStart + 3600);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].alloc, 130u * 60);
  EXPECT_EQ(rows[0].down, 60u * 60);
  EXPECT_EQ(rows[0].planned_down, 120u * 60);
  EXPECT_EQ(rows[0].idle, (480u - 130 - 60 - 120) * 60);
  EXPECT_EQ(rows[0].reported, 480u * 60);
}

}  // namespace
}  // namespace shoal::cli
