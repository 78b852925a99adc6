#include <gtest/gtest.h>

#include <algorithm>

#include "sched/eligibility.h"

namespace shoal::sched {
namespace {

std::vector<uint32_t> Sorted(std::vector<uint32_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(EligibilityIndex, BeginTimesComeDueInOrderAndOnce) {
  EligibilityIndex idx;
  idx.ParkUntil(1, 100);
  idx.ParkUntil(2, 50);
  idx.ParkUntil(3, 200);
  EXPECT_TRUE(idx.TakeDue(49).empty());
  EXPECT_EQ(idx.TakeDue(100), (std::vector<uint32_t>{2, 1}));
  EXPECT_TRUE(idx.TakeDue(150).empty());
  EXPECT_EQ(idx.size(), 1u);
  EXPECT_EQ(idx.TakeDue(1000), (std::vector<uint32_t>{3}));
  EXPECT_EQ(idx.size(), 0u);
}

TEST(EligibilityIndex, EventParkedJobsWaitForAnEvent) {
  EligibilityIndex idx;
  idx.ParkUntilEvent(7);
  idx.ParkUntilEvent(8);
  EXPECT_TRUE(idx.TakeDue(1'000'000).empty());  // time alone never frees them
  idx.NoteEvent();
  EXPECT_TRUE(idx.event_pending());
  EXPECT_EQ(Sorted(idx.TakeDue(0)), (std::vector<uint32_t>{7, 8}));
  EXPECT_FALSE(idx.event_pending());
  EXPECT_TRUE(idx.TakeDue(0).empty());
}

TEST(EligibilityIndex, AnEventBeforeParkingDoesNotWakeLaterParking) {
  EligibilityIndex idx;
  idx.NoteEvent();
  EXPECT_TRUE(idx.TakeDue(0).empty());  // consumes the event
  idx.ParkUntilEvent(4);
  EXPECT_TRUE(idx.TakeDue(0).empty());
}

TEST(EligibilityIndex, UnparkAndReparkReplace) {
  EligibilityIndex idx;
  idx.ParkUntil(1, 100);
  idx.ParkUntil(1, 10);  // a new begin time replaces the old
  EXPECT_EQ(idx.size(), 1u);
  EXPECT_EQ(idx.TakeDue(10), (std::vector<uint32_t>{1}));
  idx.ParkUntil(2, 10);
  idx.ParkUntilEvent(2);  // now waits for an event instead
  EXPECT_TRUE(idx.TakeDue(10).empty());
  EXPECT_TRUE(idx.Contains(2));
  idx.Unpark(2);
  EXPECT_FALSE(idx.Contains(2));
  idx.NoteEvent();
  EXPECT_TRUE(idx.TakeDue(10).empty());
  idx.Unpark(99);  // unknown: no-op
  EXPECT_EQ(idx.size(), 0u);
}

}  // namespace
}  // namespace shoal::sched
