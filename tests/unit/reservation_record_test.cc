#include "sched/reservation_record.h"

#include <gtest/gtest.h>

namespace shoal::sched {
namespace {

Reservation Sample() {
  Reservation r;
  r.name = "maint";
  r.start = 1'800'000'000;
  r.end = r.start + 7200;
  r.duration = 7200;
  r.node_indexes = {0, 2};
  r.node_names = {"n1", "n3"};
  r.node_cnt = 2;
  r.core_cnt = 8;
  r.partition = "debug";
  r.users = {"alan", "bob"};
  r.users_denied = true;
  r.accounts = {"physics"};
  r.groups = {"wheel"};
  r.flags = kResvMaint | kResvIgnoreJobs | kResvSpecNodes | kResvStatic | kResvPurgeComp |
            kResvNoHoldJobsAfter | kResvAnyNodes;
  r.purge_comp_seconds = 600;
  r.features = "fast";
  r.licenses = "matlab:2";
  return r;
}

TEST(ReservationRecordTest, RoundTripKeepsEverythingFormatsShow) {
  Reservation r = Sample();
  pb::ReservationRecord rec = ToRecord(r);
  EXPECT_EQ(rec.users(), "-alan,-bob");
  EXPECT_EQ(rec.accounts(), "physics");
  // Stable names, not bit values.
  EXPECT_EQ(rec.flags_size(), 7);
  EXPECT_EQ(rec.flags(0), "MAINT");

  auto index = [](const std::string& n) { return n == "n1" ? 0 : n == "n3" ? 2 : -1; };
  Reservation back = FromRecord(rec, index);
  EXPECT_EQ(FormatReservation(back, r.start - 10), FormatReservation(r, r.start - 10));
  EXPECT_EQ(back.node_indexes, r.node_indexes);
  EXPECT_TRUE(back.users_denied);
  EXPECT_FALSE(back.accounts_denied);
  EXPECT_EQ(back.groups, r.groups);
  EXPECT_EQ(back.flags, r.flags);
  EXPECT_EQ(back.purge_comp_seconds, 600);
  EXPECT_EQ(back.licenses, "matlab:2");

  // The commands need no node indexes: names are enough for the formats.
  Reservation shown = FromRecord(rec);
  EXPECT_TRUE(shown.node_indexes.empty());
  EXPECT_EQ(FormatReservation(shown, r.start), FormatReservation(r, r.start));
}

TEST(ReservationRecordTest, UnknownNodesAndFlagsAreDropped) {
  pb::ReservationRecord rec = ToRecord(Sample());
  rec.add_flags("SOMETHING_NEW");
  Reservation back = FromRecord(rec, [](const std::string& n) { return n == "n3" ? 5 : -1; });
  EXPECT_EQ(back.node_indexes, std::vector<int>{5});
  EXPECT_EQ(back.node_names, std::vector<std::string>{"n3"});
  EXPECT_EQ(back.node_cnt, 1u);
  EXPECT_EQ(back.flags, Sample().flags);
}

}  // namespace
}  // namespace shoal::sched
