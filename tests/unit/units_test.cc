#include "common/units.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <ctime>
#include <string>

namespace shoal {
namespace {

uint32_t Minutes(const char* text) {
  auto r = ParseTimeLimit(text);
  EXPECT_TRUE(r.ok()) << text << ": " << r.error();
  return r.ok() ? *r : 0;
}

TEST(ParseTimeLimit, AllFormats) {
  EXPECT_EQ(Minutes("5"), 5u);     // minutes
  EXPECT_EQ(Minutes("0"), 0u);     // zero: callers apply "no limit" where Slurm does
  EXPECT_EQ(Minutes("5:00"), 5u);  // minutes:seconds
  EXPECT_EQ(Minutes("0:30"), 1u);  // seconds round up
  EXPECT_EQ(Minutes("1:30"), 2u);
  EXPECT_EQ(Minutes("1:00:00"), 60u);  // hours:minutes:seconds
  EXPECT_EQ(Minutes("1:00:01"), 61u);
  EXPECT_EQ(Minutes("2-0"), 2880u);  // days-hours
  EXPECT_EQ(Minutes("1-2"), 1560u);
  EXPECT_EQ(Minutes("1-2:30"), 1590u);   // days-hours:minutes
  EXPECT_EQ(Minutes("1-0:0:1"), 1441u);  // days-hours:minutes:seconds
  EXPECT_EQ(Minutes("0-00:05:00"), 5u);
  EXPECT_EQ(Minutes("90"), 90u);  // fields are not range-checked, like Slurm
  EXPECT_EQ(Minutes(" 10 "), 10u);
}

TEST(ParseTimeLimit, Unlimited) {
  EXPECT_EQ(Minutes("UNLIMITED"), kTimeInfinite);
  EXPECT_EQ(Minutes("unlimited"), kTimeInfinite);
  EXPECT_EQ(Minutes("INFINITE"), kTimeInfinite);
  EXPECT_EQ(Minutes("Infinite"), kTimeInfinite);
  EXPECT_EQ(Minutes("-1"), kTimeInfinite);
}

TEST(ParseTimeLimit, Errors) {
  for (const char* bad : {"", "abc", "1:2:3:4", "-5", "1-", "-", "1-2:3:4:5", "1:", ":1", "1.5",
                          "5m", "1--2", "99999999999", "1-2-3", "+5"}) {
    auto r = ParseTimeLimit(bad);
    EXPECT_FALSE(r.ok()) << "'" << bad << "' parsed as " << (r.ok() ? *r : 0);
    if (!r.ok()) {
      EXPECT_EQ(r.error(), "Invalid time limit specification");
    }
  }
}

TEST(ParseDurationSeconds, Formats) {
  EXPECT_EQ(*ParseDurationSeconds("5"), 300);
  EXPECT_EQ(*ParseDurationSeconds("0:30"), 30);
  EXPECT_EQ(*ParseDurationSeconds("1:02:03"), 3723);
  EXPECT_EQ(*ParseDurationSeconds("1-00:00:01"), 86401);
  EXPECT_EQ(*ParseDurationSeconds("UNLIMITED"), -1);
  EXPECT_EQ(ParseDurationSeconds("x").error(), "Invalid time limit specification");
}

TEST(FormatTimeLimit, SqueueStyle) {
  EXPECT_EQ(FormatTimeLimit(kTimeInfinite), "UNLIMITED");
  EXPECT_EQ(FormatTimeLimit(kTimeNoVal), "NONE");
  EXPECT_EQ(FormatTimeLimit(0), "0:00");
  EXPECT_EQ(FormatTimeLimit(5), "5:00");
  EXPECT_EQ(FormatTimeLimit(59), "59:00");
  EXPECT_EQ(FormatTimeLimit(60), "1:00:00");
  EXPECT_EQ(FormatTimeLimit(90), "1:30:00");
  EXPECT_EQ(FormatTimeLimit(1440), "1-00:00:00");
  EXPECT_EQ(FormatTimeLimit(2 * 1440 + 61), "2-01:01:00");
}

TEST(FormatElapsed, SqueueTime) {
  EXPECT_EQ(FormatElapsed(0), "0:00");
  EXPECT_EQ(FormatElapsed(5), "0:05");
  EXPECT_EQ(FormatElapsed(65), "1:05");
  EXPECT_EQ(FormatElapsed(307), "5:07");
  EXPECT_EQ(FormatElapsed(3599), "59:59");
  EXPECT_EQ(FormatElapsed(3600), "1:00:00");
  EXPECT_EQ(FormatElapsed(3723), "1:02:03");
  EXPECT_EQ(FormatElapsed(90061), "1-01:01:01");
  EXPECT_EQ(FormatElapsed(3 * 86400 + 3723), "3-01:02:03");
  EXPECT_EQ(FormatElapsed(-1), "INVALID");
}

TEST(FormatHms, ScontrolStyle) {
  EXPECT_EQ(FormatHms(0), "00:00:00");
  EXPECT_EQ(FormatHms(5), "00:00:05");
  EXPECT_EQ(FormatHms(3723), "01:02:03");
  EXPECT_EQ(FormatHms(86399), "23:59:59");
  EXPECT_EQ(FormatHms(86400 + 2 * 3600 + 3 * 60 + 4), "1-02:03:04");
  EXPECT_EQ(FormatHms(12 * 86400), "12-00:00:00");
}

TEST(ParseMemoryMB, UnitsAndRounding) {
  EXPECT_EQ(*ParseMemoryMB("500"), 500u);
  EXPECT_EQ(*ParseMemoryMB("0"), 0u);
  EXPECT_EQ(*ParseMemoryMB("100M"), 100u);
  EXPECT_EQ(*ParseMemoryMB("2048MB"), 2048u);
  EXPECT_EQ(*ParseMemoryMB("4G"), 4096u);
  EXPECT_EQ(*ParseMemoryMB("4g"), 4096u);
  EXPECT_EQ(*ParseMemoryMB("4GB"), 4096u);
  EXPECT_EQ(*ParseMemoryMB("4gb"), 4096u);
  EXPECT_EQ(*ParseMemoryMB("1T"), 1048576u);
  EXPECT_EQ(*ParseMemoryMB("1024K"), 1u);
  EXPECT_EQ(*ParseMemoryMB("1025K"), 2u);
  EXPECT_EQ(*ParseMemoryMB("500K"), 1u);
  EXPECT_EQ(*ParseMemoryMB("500kb"), 1u);
  EXPECT_EQ(*ParseMemoryMB("0K"), 0u);
}

TEST(ParseMemoryMB, Errors) {
  for (const char* bad : {"", "M", "-1", "1.5G", "4X", "4GBB", "4 G", "abc", "99999999999999999999",
                          "99999999999T"}) {
    auto r = ParseMemoryMB(bad);
    EXPECT_FALSE(r.ok()) << "'" << bad << "'";
    if (!r.ok()) {
      EXPECT_EQ(r.error(), "Invalid memory specification");
    }
  }
}

TEST(FormatMemoryCompact, ExactUnits) {
  EXPECT_EQ(FormatMemoryCompact(0), "0");
  EXPECT_EQ(FormatMemoryCompact(500), "500M");
  EXPECT_EQ(FormatMemoryCompact(1536), "1536M");
  EXPECT_EQ(FormatMemoryCompact(1024), "1G");
  EXPECT_EQ(FormatMemoryCompact(4096), "4G");
  EXPECT_EQ(FormatMemoryCompact(1048576), "1T");
  EXPECT_EQ(FormatMemoryCompact(3 * 1048576ull * 1024), "3P");
}

// Begin times are local; the tests pin the zone so expectations are exact.
class BeginTime : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tz = std::getenv("TZ");
    saved_ = tz ? tz : "";
    had_ = tz != nullptr;
    setenv("TZ", "UTC", 1);
    tzset();
  }
  void TearDown() override {
    if (had_) {
      setenv("TZ", saved_.c_str(), 1);
    } else {
      unsetenv("TZ");
    }
    tzset();
  }
  // 2026-03-10T14:30:00Z, a Tuesday.
  static constexpr int64_t kNow = 1773153000;
  static constexpr int64_t kMidnight = 1773100800;  // 2026-03-10T00:00:00Z
  static constexpr int64_t kDay = 86400;

  int64_t Begin(const char* text) {
    auto r = ParseBeginTime(text, kNow);
    EXPECT_TRUE(r.ok()) << text << ": " << r.error();
    return r.ok() ? *r : -1;
  }

 private:
  std::string saved_;
  bool had_ = false;
};

TEST_F(BeginTime, SanityOfConstants) { EXPECT_EQ(FormatTimestamp(kNow), "2026-03-10T14:30:00"); }

TEST_F(BeginTime, Now) {
  EXPECT_EQ(Begin("now"), kNow);
  EXPECT_EQ(Begin("NOW"), kNow);
  EXPECT_EQ(Begin("now+60"), kNow + 60);
  EXPECT_EQ(Begin("now+60seconds"), kNow + 60);
  EXPECT_EQ(Begin("now+5minutes"), kNow + 300);
  EXPECT_EQ(Begin("now+1hour"), kNow + 3600);
  EXPECT_EQ(Begin("now+2hours"), kNow + 7200);
  EXPECT_EQ(Begin("now+1day"), kNow + kDay);
  EXPECT_EQ(Begin("now+3days"), kNow + 3 * kDay);
  EXPECT_EQ(Begin("now+1week"), kNow + 7 * kDay);
  EXPECT_EQ(Begin("now + 2 weeks"), kNow + 14 * kDay);
}

TEST_F(BeginTime, TimeOfDay) {
  EXPECT_EQ(Begin("16:00"), kMidnight + 16 * 3600);
  EXPECT_EQ(Begin("16:00:30"), kMidnight + 16 * 3600 + 30);
  EXPECT_EQ(Begin("14:30"), kNow);                          // exactly now: today
  EXPECT_EQ(Begin("10:00"), kMidnight + kDay + 10 * 3600);  // past: tomorrow
  EXPECT_EQ(Begin("4pm"), kMidnight + 16 * 3600);
  EXPECT_EQ(Begin("4:15PM"), kMidnight + 16 * 3600 + 15 * 60);
  EXPECT_EQ(Begin("11am"), kMidnight + kDay + 11 * 3600);
  EXPECT_EQ(Begin("12am"), kMidnight + kDay);
  EXPECT_EQ(Begin("midnight"), kMidnight + kDay);
  EXPECT_EQ(Begin("noon"), kMidnight + kDay + 12 * 3600);
  EXPECT_EQ(Begin("fika"), kMidnight + 15 * 3600);
  EXPECT_EQ(Begin("teatime"), kMidnight + 16 * 3600);
  EXPECT_EQ(Begin("today"), kMidnight);
  EXPECT_EQ(Begin("tomorrow"), kMidnight + kDay);
}

TEST_F(BeginTime, Dates) {
  const int64_t apr1 = kMidnight + 22 * kDay;  // 2026-04-01
  const int64_t mar1_2027 = 1803859200;        // 2027-03-01
  EXPECT_EQ(Begin("0401"), apr1);
  EXPECT_EQ(Begin("040126"), apr1);
  EXPECT_EQ(Begin("04/01"), apr1);
  EXPECT_EQ(Begin("04/01/26"), apr1);
  EXPECT_EQ(Begin("4/1/2026"), apr1);
  EXPECT_EQ(Begin("04.01"), apr1);
  EXPECT_EQ(Begin("04.01.26"), apr1);
  EXPECT_EQ(Begin("2026-04-01"), apr1);
  EXPECT_EQ(Begin("03/10"), kMidnight);  // today's date stays this year
  EXPECT_EQ(Begin("03/01"), mar1_2027);  // already past: next year
  EXPECT_EQ(Begin("2026-04-01T12:34"), apr1 + 12 * 3600 + 34 * 60);
  EXPECT_EQ(Begin("2010-01-20T12:34:00"), 1263990840);
}

TEST_F(BeginTime, Errors) {
  for (const char* bad : {"", "later", "now+", "now+5parsecs", "now-5", "25:00", "12:60", "13pm",
                          "1301", "0230", "02/30", "2026-13-01", "2026-02-29", "2026-04-01T",
                          "2026-04-01T25:00", "123", "04/01/2", "nowish"}) {
    auto r = ParseBeginTime(bad, kNow);
    EXPECT_FALSE(r.ok()) << "'" << bad << "' parsed as " << (r.ok() ? FormatTimestamp(*r) : "");
    if (!r.ok()) {
      EXPECT_EQ(r.error(), "Invalid time specification");
    }
  }
}

TEST_F(BeginTime, FormatTimestamp) {
  EXPECT_EQ(FormatTimestamp(0), "Unknown");
  EXPECT_EQ(FormatTimestamp(1263990840), "2010-01-20T12:34:00");
  EXPECT_EQ(FormatTimestamp(1803859200), "2027-03-01T00:00:00");
}

TEST(Signals, Parse) {
  EXPECT_EQ(*ParseSignal("USR1"), SIGUSR1);
  EXPECT_EQ(*ParseSignal("SIGUSR1"), SIGUSR1);
  EXPECT_EQ(*ParseSignal("sigusr2"), SIGUSR2);
  EXPECT_EQ(*ParseSignal("KILL"), SIGKILL);
  EXPECT_EQ(*ParseSignal("term"), SIGTERM);
  EXPECT_EQ(*ParseSignal("SIGINT"), SIGINT);
  EXPECT_EQ(*ParseSignal("HUP"), SIGHUP);
  EXPECT_EQ(*ParseSignal("CONT"), SIGCONT);
  EXPECT_EQ(*ParseSignal("STOP"), SIGSTOP);
  EXPECT_EQ(*ParseSignal("10"), 10);
  EXPECT_EQ(*ParseSignal("9"), 9);
  EXPECT_EQ(*ParseSignal("IOT"), SIGABRT);
}

TEST(Signals, ParseErrors) {
  for (const char* bad : {"", "SIG", "FOO", "SIGFOO", "0", "65", "-9", "9x", "USR 1"}) {
    auto r = ParseSignal(bad);
    EXPECT_FALSE(r.ok()) << "'" << bad << "'";
    if (!r.ok()) {
      EXPECT_EQ(r.error(), "Invalid signal specification");
    }
  }
}

TEST(Signals, Names) {
  EXPECT_EQ(SignalName(SIGUSR1), "USR1");
  EXPECT_EQ(SignalName(SIGKILL), "KILL");
  EXPECT_EQ(SignalName(SIGTERM), "TERM");
  EXPECT_EQ(SignalName(SIGABRT), "ABRT");
  EXPECT_EQ(SignalName(SIGCHLD), "CHLD");
  EXPECT_EQ(SignalName(200), "200");
  for (int sig = 1; sig < 32; ++sig) {
    std::string name = SignalName(sig);
    auto r = ParseSignal(name);
    ASSERT_TRUE(r.ok()) << name;
    EXPECT_EQ(*r, sig) << name;
  }
}

}  // namespace
}  // namespace shoal
