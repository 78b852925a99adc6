#include "sched/reservation.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>

#include "common/hostlist.h"
#include "common/units.h"

namespace shoal::sched {
namespace {

class ReservationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("TZ", "UTC", 1);
    tzset();
    now = *ParseBeginTime("2026-11-22T06:00:00", 0);
    cluster.now = now;
    cluster.node_names = {"n1", "n2", "n3", "n4", "m1", "m2"};
    cluster.node_cpus = {2, 2, 2, 2, 4, 4};
    cluster.user_exists = [](std::string_view u) {
      return u == "root" || u == "alice" || u == "bob" || u == "alan";
    };
    cluster.partition_nodes = [](std::string_view p) -> std::optional<std::vector<int>> {
      if (p == "debug") return std::vector<int>{0, 1, 2, 3};
      if (p == "big") return std::vector<int>{4, 5};
      return std::nullopt;
    };
    cluster.default_partition = "debug";
  }
  int64_t T(const char* s) { return *ParseBeginTime(s, now); }
  Result<ReservationRequest> Parse(std::vector<std::string> args, bool update = false) {
    return ParseReservationArgs(args, update, now);
  }
  Reservation Create(std::vector<std::string> args) {
    auto req = Parse(args);
    EXPECT_TRUE(req.ok()) << req.error();
    auto r = CreateReservation(*req, cluster, next_id);
    EXPECT_TRUE(r.ok()) << r.error();
    next_id = r->next_id;
    return r->resv;
  }
  std::string CreateError(std::vector<std::string> args) {
    auto req = Parse(args);
    if (!req.ok()) return "parse: " + req.error();
    auto r = CreateReservation(*req, cluster, next_id);
    return r.ok() ? "" : r.error();
  }

  int64_t now = 0;
  ResvCluster cluster;
  uint32_t next_id = 1;
};

TEST_F(ReservationTest, ParseErrorsUseScontrolWording) {
  auto e = [&](std::vector<std::string> a, bool upd = false) {
    auto r = Parse(a, upd);
    return r.ok() ? std::string("OK") : r.error();
  };
  EXPECT_EQ(e({"starttime=now", "duration=60", "nodes=n1", "flags=bogus", "user=root"}),
            "Error parsing flags bogus.  No reservation created.");
  EXPECT_EQ(e({"starttime=now", "duration=60", "nodes=n1", "flags=daily,bogus", "user=root"}),
            "Error parsing flags daily,bogus.  No reservation created.");
  EXPECT_EQ(e({"starttime=now", "duration=60", "nodes=n1"}),
            "Either Users/Groups and/or Accounts must be specified.  No reservation created.");
  EXPECT_EQ(e({"starttime=xyz", "duration=60", "nodes=n1", "user=root"}),
            "Invalid start time starttime=xyz.  No reservation created.");
  EXPECT_EQ(e({"starttime=now", "duration=60", "nodes=n1", "user=root", "endtime=xx"}),
            "Invalid end time endtime=xx.  No reservation created.");
  EXPECT_EQ(e({"starttime=now", "duration=abc", "nodes=n1", "user=root"}),
            "Invalid duration duration=abc.  No reservation created.");
  EXPECT_EQ(e({"starttime=now", "duration=60", "nodes=n1", "user=root", "foo=bar"}),
            "Unknown parameter foo=bar.  No reservation created.");
  EXPECT_EQ(e({}), "A start time must be given.  No reservation created.");
  EXPECT_EQ(e({"starttime=now"}),
            "An end time or duration must be given.  No reservation created.");
  EXPECT_EQ(e({"starttime=now", "duration=5"}),
            "CoreCnt, Nodes, NodeCnt, BurstBuffer, Licenses or Watts must be specified.  No "
            "reservation created.");
  EXPECT_EQ(e({"starttime=now", "duration=60", "nodecnt=x", "user=root"}), "Invalid node count x");
  EXPECT_EQ(e({"starttime=now+2hour", "endtime=now+1hour", "nodes=n1", "user=root"}),
            "Start time cannot be after end time.  No reservation created.");
  EXPECT_EQ(e({"starttime=now", "duration=5", "nodes=n1", "user=root", "users=x"}),
            "Parameter users=x specified more than once");
  EXPECT_EQ(e({"starttime=now", "duration=5", "nodes=n1", "user=root", "flags=part_nodes"}),
            "PART_NODES flag requires specifying a Partition and ALL nodes.  No reservation "
            "created.");
  EXPECT_EQ(e({"flags=daily"}, true), "Reservation must be given.  No reservation update.");
  EXPECT_EQ(e({"reservationname=x", "flags=bogus"}, true),
            "Error parsing flags bogus.  No reservation update.");
  EXPECT_EQ(e({"reservationname=x", "flags-=maint,overlap"}, true),
            "Error parsing flags -maint,-overlap.  No reservation update.");
}

TEST_F(ReservationTest, ParsesAbbreviationsTimesAndFlags) {
  auto r =
      Parse({"ReservationName=m", "start=2026-12-01T10:00:00", "Duration=1-00:00:00",
             "Nodes=n[1-2]", "User=-alan", "account=foo", "Flags=MAINT,ignore_jobs,PURGE_COMP=10"});
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(*r->name, "m");
  EXPECT_EQ(*r->start, T("2026-12-01T10:00:00"));
  EXPECT_EQ(*r->duration, 86400);
  EXPECT_EQ(r->flags_set, kResvMaint | kResvIgnoreJobs | kResvPurgeComp);
  EXPECT_EQ(*r->purge_comp_seconds, 600);
  auto u = Parse({"start=now", "duration=UNLIMITED", "nodecnt=2k", "users=root"});
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(*u->duration, kResvUnlimitedSeconds);
  EXPECT_EQ(*u->node_cnt, 2048u);
  auto upd = Parse({"reservation=x", "flags+=hourly", "flags-=daily", "users+=bob"}, true);
  EXPECT_FALSE(upd.ok());  // flags given twice
  upd = Parse({"reservation=x", "flags=+hourly,-daily", "users+=bob"}, true);
  ASSERT_TRUE(upd.ok()) << upd.error();
  EXPECT_EQ(upd->flags_add, kResvHourly);
  EXPECT_EQ(upd->flags_remove, kResvDaily);
  EXPECT_EQ(upd->users->op, ListOp::kAdd);
}

TEST_F(ReservationTest, CreateShowAndSinfo) {
  Reservation maint = Create({"starttime=2026-12-01T10:00:00", "duration=120", "user=root",
                              "flags=maint,ignore_jobs", "nodes=ALL"});
  EXPECT_EQ(maint.name, "root_1");
  EXPECT_EQ(FormatReservation(maint, now),
            "ReservationName=root_1 StartTime=2026-12-01T10:00:00 EndTime=2026-12-01T12:00:00 "
            "Duration=02:00:00\n"
            "   Nodes=m[1-2],n[1-4] NodeCnt=6 CoreCnt=16 Features=(null) PartitionName=(null) "
            "Flags=MAINT,IGNORE_JOBS,SPEC_NODES,ALL_NODES\n"
            "   TRES=cpu=16\n"
            "   Users=root Groups=(null) Accounts=(null) Licenses=(null) State=INACTIVE "
            "BurstBuffer=(null) Watts=n/a\n"
            "   MaxStartDelay=(null)\n");
  Reservation acct =
      Create({"starttime=now", "duration=UNLIMITED", "account=acct1", "user=-alan", "nodes=m1",
              "flags=overlap,flex,hourly,static_alloc,"
              "no_hold_jobs_after,magnetic,purge_comp=10"});
  EXPECT_EQ(acct.name, "alan_2");
  std::string show = FormatReservation(acct, now);
  EXPECT_NE(show.find("Duration=365-00:00:00"), std::string::npos) << show;
  EXPECT_NE(show.find("Flags=FLEX,OVERLAP,HOURLY,SPEC_NODES,STATIC,PURGE_COMP=00:10:00,"
                      "NO_HOLD_JOBS_AFTER_END,MAGNETIC\n"),
            std::string::npos)
      << show;
  EXPECT_NE(show.find("Users=-alan Groups=(null) Accounts=acct1 "), std::string::npos);
  EXPECT_NE(show.find("State=ACTIVE"), std::string::npos);
  Reservation named =
      Create({"reservationname=averyveryverylongname", "starttime=2027-04-01T00:00:00",
              "duration=60", "user=root", "nodes=m2"});
  EXPECT_EQ(next_id, 4u);
  EXPECT_EQ(FormatReservationTable({&maint, &acct, &named}, now),
            "RESV_NAME                 STATE           START_TIME             END_TIME     "
            "DURATION  NODELIST\n"
            "root_1                 INACTIVE  2026-12-01T10:00:00  2026-12-01T12:00:00     "
            "02:00:00  m[1-2],n[1-4]\n"
            "alan_2                   ACTIVE  2026-11-22T06:00:00  2027-11-22T06:00:00  "
            "365-00:00:00  m1\n"
            "averyveryverylongname  INACTIVE  2027-04-01T00:00:00  2027-04-01T01:00:00     "
            "01:00:00  m2\n");
}

TEST_F(ReservationTest, CreateValidationErrors) {
  Reservation weekly =
      Create({"reservationname=weekly", "starttime=2026-12-03T10:00:00",
              "endtime=2026-12-03T12:30:00", "user=root", "nodes=n3", "flags=weekly"});
  cluster.existing = {&weekly};
  EXPECT_EQ(CreateError({"starttime=2026-12-01T10:00:00", "duration=60", "user=root", "nodes=zz1"}),
            "Invalid node name specified");
  EXPECT_EQ(
      CreateError({"starttime=2026-12-01T10:00:00", "duration=60", "user=nosuch", "nodes=n1"}),
      "Invalid user id");
  EXPECT_EQ(
      CreateError({"starttime=2026-12-01T10:00:00", "duration=60", "user=root,-alan", "nodes=n1"}),
      "Invalid user id");
  EXPECT_EQ(
      CreateError({"starttime=2026-12-01T10:00:00", "duration=60", "account=a,-b", "nodes=n1"}),
      "Invalid account or account/partition combination specified");
  EXPECT_EQ(CreateError({"starttime=2026-12-01T10:00:00", "duration=60", "user=root", "nodes=n1",
                         "partition=nopart"}),
            "Invalid partition name specified");
  EXPECT_EQ(
      CreateError({"starttime=2026-12-01T10:00:00", "duration=60", "user=root", "nodecnt=100"}),
      "Requested nodes are busy");
  EXPECT_EQ(CreateError({"reservationname=weekly", "starttime=2027-12-01T10:00:00", "duration=60",
                         "user=root", "nodes=m2"}),
            "Duplicate reservation name");
  EXPECT_EQ(CreateError({"starttime=2020-01-04T00:00:00", "duration=60", "user=root", "nodes=m2"}),
            "Invalid time specified");
  // The weekly one repeats: a week later on n3 overlaps.
  EXPECT_EQ(CreateError({"starttime=2026-12-10T11:00:00", "duration=60", "user=root", "nodes=n3"}),
            "Requested reservation overlaps with another reservation");
  // MAINT (and OVERLAP) may overlap.
  EXPECT_EQ(CreateError({"starttime=2026-12-10T11:00:00", "duration=60", "user=root", "nodes=n3",
                         "flags=maint"}),
            "");
  EXPECT_EQ(CreateError({"starttime=2026-12-10T11:00:00", "duration=60", "user=root", "nodes=m2",
                         "flags=daily,time_float"}),
            "Requested operation not supported on this system");
  // Running jobs past the start: busy unless IGNORE_JOBS.
  cluster.node_busy_until = [&](int n) { return n == 4 ? now + 7200 : 0; };
  EXPECT_EQ(CreateError({"starttime=now+1hour", "duration=60", "user=root", "nodes=m1"}),
            "Requested nodes are busy");
  EXPECT_EQ(CreateError({"starttime=now+1hour", "duration=60", "user=root", "nodes=m1",
                         "flags=ignore_jobs"}),
            "");
}

TEST_F(ReservationTest, NodeCountPicksFreeNodesInPartition) {
  Reservation a = Create({"starttime=2026-12-01T10:00:00", "duration=60", "user=root", "nodes=n1"});
  cluster.existing = {&a};
  cluster.node_usable = {true, false, true, true, true, true};
  Reservation b =
      Create({"starttime=2026-12-01T10:30:00", "duration=60", "user=alice", "nodecnt=2"});
  EXPECT_EQ(b.node_indexes, (std::vector<int>{2, 3}));  // n1 reserved, n2 down
  EXPECT_EQ(CompressHostlist(b.node_names), "n[3-4]");
  EXPECT_FALSE(b.Has(kResvSpecNodes));
  cluster.preferred_order = {3, 2, 0, 1};
  Reservation c =
      Create({"starttime=2026-12-02T10:30:00", "duration=60", "user=alice", "nodecnt=1"});
  EXPECT_EQ(c.node_indexes, (std::vector<int>{3}));
  Reservation d = Create(
      {"starttime=2026-12-03T10:30:00", "duration=60", "user=alice", "nodecnt=2", "partition=big"});
  EXPECT_EQ(d.node_indexes, (std::vector<int>{4, 5}));
  EXPECT_EQ(d.partition, "big");
}

TEST_F(ReservationTest, UpdateFlagsUsersDuration) {
  Reservation f1 = Create({"reservationname=f1", "starttime=2027-01-01T00:00:00", "duration=60",
                           "user=alice,bob", "nodes=n[1-2]", "flags=daily,weekly"});
  auto req = Parse({"reservation=f1", "flags+=hourly"}, true);
  ASSERT_TRUE(req.ok());
  auto u = UpdateReservation(f1, *req, cluster);
  ASSERT_TRUE(u.ok()) << u.error();
  req = Parse({"reservation=f1", "flags-=daily", "users+=root"}, true);
  ASSERT_TRUE(req.ok()) << req.error();
  u = UpdateReservation(*u, *req, cluster);
  ASSERT_TRUE(u.ok()) << u.error();
  req = Parse({"reservationname=f1", "users-=bob", "duration=30"}, true);
  ASSERT_TRUE(req.ok()) << req.error();
  u = UpdateReservation(*u, *req, cluster);
  ASSERT_TRUE(u.ok()) << u.error();
  std::string show = FormatReservation(*u, now);
  EXPECT_NE(show.find("EndTime=2027-01-01T00:30:00 Duration=00:30:00"), std::string::npos) << show;
  EXPECT_NE(show.find("Flags=HOURLY,WEEKLY,SPEC_NODES"), std::string::npos) << show;
  EXPECT_NE(show.find("Users=alice,root "), std::string::npos) << show;
  req = Parse({"reservationname=f1", "starttime=2027-01-01T05:00:00", "endtime=2027-01-01T06:00:00",
               "nodes=n4"},
              true);
  u = UpdateReservation(*u, *req, cluster);
  ASSERT_TRUE(u.ok()) << u.error();
  EXPECT_EQ(u->node_indexes, (std::vector<int>{3}));
  EXPECT_EQ(u->node_cnt, 1u);
  req = Parse({"reservationname=f1", "endtime=2026-12-31T00:00:00"}, true);
  EXPECT_EQ(UpdateReservation(*u, *req, cluster).error(), "Invalid time specified");
}

TEST_F(ReservationTest, RecurringWindows) {
  Reservation d;
  d.start = T("2026-11-23T12:00:00");  // a Monday
  d.end = d.start + 3600;
  d.flags = kResvDaily;
  auto w = Windows(d, T("2026-11-24T00:00:00"), T("2026-11-26T00:00:00"));
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].first, T("2026-11-24T12:00:00"));
  EXPECT_EQ(w[1].second, T("2026-11-25T13:00:00"));

  Reservation wd = d;
  wd.flags = kResvWeekday;
  w = Windows(wd, T("2026-11-27T00:00:00"), T("2026-12-01T00:00:00"));  // Fri..Mon
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].first, T("2026-11-27T12:00:00"));
  EXPECT_EQ(w[1].first, T("2026-11-30T12:00:00"));

  Reservation we = d;
  we.flags = kResvWeekend;
  w = Windows(we, T("2026-11-23T00:00:00"), T("2026-12-01T00:00:00"));
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].first, T("2026-11-28T12:00:00"));
  EXPECT_EQ(w[1].first, T("2026-11-29T12:00:00"));

  Reservation wk = d;
  wk.flags = kResvWeekly;
  w = Windows(wk, T("2027-03-01T00:00:00"), T("2027-03-15T00:00:00"));
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].first, T("2027-03-01T12:00:00"));

  Reservation h = d;
  h.flags = kResvHourly;
  h.end = h.start + 600;
  w = Windows(h, T("2026-11-23T13:05:00"), T("2026-11-23T15:00:01"));
  ASSERT_EQ(w.size(), 3u);  // 13:00 (still open at 13:05), 14:00, 15:00
  EXPECT_EQ(w[0].first, T("2026-11-23T13:00:00"));

  // Rolling a past window forward.
  Reservation r = d;
  EXPECT_FALSE(RollForward(r, T("2026-11-23T12:30:00")));
  EXPECT_TRUE(RollForward(r, T("2026-11-25T13:00:00")));
  EXPECT_EQ(r.start, T("2026-11-26T12:00:00"));
  EXPECT_EQ(r.end, T("2026-11-26T13:00:00"));
  Reservation once = d;
  once.flags = 0;
  EXPECT_FALSE(RollForward(once, T("2026-12-01T00:00:00")));
  EXPECT_TRUE(IsExpired(once, T("2026-12-01T00:00:00")));
  EXPECT_TRUE(IsActive(d, T("2026-11-23T12:59:59")));
  EXPECT_FALSE(IsActive(d, T("2026-11-23T13:00:00")));
}

TEST_F(ReservationTest, AccessRules) {
  Reservation r;
  r.users = {"alice", "bob"};
  EXPECT_TRUE(CanUse(r, {"alice", "x", {}, ""}));
  EXPECT_FALSE(CanUse(r, {"carol", "x", {}, ""}));
  r.accounts = {"phys"};
  EXPECT_FALSE(CanUse(r, {"alice", "x", {}, ""}));  // both must match
  EXPECT_TRUE(CanUse(r, {"alice", "phys", {}, ""}));
  Reservation d;
  d.users = {"alan"};
  d.users_denied = true;
  d.accounts = {"foo"};
  EXPECT_TRUE(CanUse(d, {"carol", "foo", {}, ""}));
  EXPECT_FALSE(CanUse(d, {"alan", "foo", {}, ""}));
  EXPECT_FALSE(CanUse(d, {"carol", "bar", {}, ""}));
  Reservation deny_only;
  deny_only.accounts = {"bad"};
  deny_only.accounts_denied = true;
  EXPECT_TRUE(CanUse(deny_only, {"x", "good", {}, ""}));
  EXPECT_FALSE(CanUse(deny_only, {"x", "bad", {}, ""}));
}

TEST_F(ReservationTest, BlocksForeignJobsAndLetsShortJobsRunBefore) {
  Reservation maint = Create({"reservationname=maint", "starttime=now+2hours", "duration=60",
                              "user=root", "nodes=n[1-2]", "flags=maint,ignore_jobs"});
  ResvJob foreign{"alice", "a", {}, ""};
  // A 1h job starting now ends before the window: it may run on the maint nodes.
  EXPECT_FALSE(Blocks(maint, 0, now, now + 3600, foreign));
  // A 3h job would run into the window.
  EXPECT_TRUE(Blocks(maint, 0, now, now + 3 * 3600, foreign));
  EXPECT_TRUE(Blocks(maint, 0, now, INT64_MAX, foreign));
  // Other nodes are free; after the window they are free again.
  EXPECT_FALSE(Blocks(maint, 2, now, now + 3 * 3600, foreign));
  EXPECT_FALSE(Blocks(maint, 0, now + 3 * 3600, now + 4 * 3600, foreign));
  // Node state while active.
  std::vector<const Reservation*> all = {&maint};
  EXPECT_FALSE(NodeInMaint(all, 0, now));
  EXPECT_TRUE(NodeInMaint(all, 0, now + 2 * 3600 + 1));
  EXPECT_FALSE(NodeInMaint(all, 3, now + 2 * 3600 + 1));

  // A job in a reservation: only its nodes, only inside the window; other reservations
  // (the maintenance one) still block it.
  Reservation team = Create({"reservationname=team", "starttime=now+1hour", "duration=180",
                             "user=alice", "nodes=n[2-3]", "flags=overlap"});
  ResvJob member{"alice", "a", {}, "team"};
  EXPECT_TRUE(CanUse(team, member));
  EXPECT_FALSE(CanUse(team, {"bob", "a", {}, "team"}));
  EXPECT_EQ(ReservedNodes(team, {0, 1, 2, 3, 4}), (std::vector<int>{1, 2}));
  EXPECT_FALSE(Blocks(team, 1, now, now + 7200, member));
  EXPECT_TRUE(Blocks(maint, 1, now + 3600, now + 3 * 3600, member));
  EXPECT_EQ(*EarliestStartInReservation(team, now, 1800), now + 3600);
  EXPECT_EQ(*EarliestStartInReservation(team, now + 3600 + 60, 600), now + 3600 + 60);
  EXPECT_FALSE(EarliestStartInReservation(team, now, 4 * 3600).has_value());
  team.flags |= kResvFlex;
  EXPECT_EQ(ReservedNodes(team, {0, 4}), (std::vector<int>{0, 4}));
  EXPECT_EQ(*EarliestStartInReservation(team, now, 4 * 3600), now);
}

}  // namespace
}  // namespace shoal::sched
