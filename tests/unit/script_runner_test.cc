#include "common/script_runner.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <asio.hpp>
#include <chrono>

namespace shoal {
namespace {

ScriptSpec Sh(const std::string& text, int timeout_s = 0) {
  ScriptSpec s;
  s.path = "/bin/sh";
  s.args = {"-c", text};
  s.env = {"PATH=/usr/bin:/bin", "WHO=tester"};
  s.timeout_s = timeout_s;
  return s;
}

TEST(ScriptRunner, CapturesOutputAndStatus) {
  asio::io_context io;
  ScriptRunner runner(io, true);
  ScriptResult got;
  bool done = false;
  runner.Run(Sh("echo out $WHO; echo err >&2; exit 3"), [&](const ScriptResult& r) {
    got = r;
    done = true;
    io.stop();
  });
  io.run_for(std::chrono::seconds(10));
  ASSERT_TRUE(done);
  EXPECT_FALSE(got.ok());
  EXPECT_TRUE(WIFEXITED(got.status));
  EXPECT_EQ(WEXITSTATUS(got.status), 3);
  EXPECT_EQ(got.output, "out tester\nerr\n");
}

TEST(ScriptRunner, TimeoutKillsTheWholeGroup) {
  asio::io_context io;
  ScriptRunner runner(io, true);
  ScriptResult got;
  bool done = false;
  auto start = std::chrono::steady_clock::now();
  runner.Run(Sh("sleep 30 & sleep 30", 1), [&](const ScriptResult& r) {
    got = r;
    done = true;
    io.stop();
  });
  io.run_for(std::chrono::seconds(10));
  ASSERT_TRUE(done);
  EXPECT_TRUE(got.timed_out);
  EXPECT_FALSE(got.ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(ScriptRunner, SerialRunsOneAtATime) {
  asio::io_context io;
  ScriptRunner runner(io, true);
  runner.set_serial(true);
  std::vector<int> order;
  std::string file = "/tmp/shoal-script-runner-test-" + std::to_string(::getpid());
  ::unlink(file.c_str());
  // The second would see the first's file only if it started after the first ended.
  runner.Run(Sh("sleep 0.3; echo a >> " + file), [&](const ScriptResult& r) {
    EXPECT_TRUE(r.ok());
    order.push_back(1);
  });
  runner.Run(Sh("cat " + file), [&](const ScriptResult& r) {
    EXPECT_EQ(r.output, "a\n");
    order.push_back(2);
    io.stop();
  });
  io.run_for(std::chrono::seconds(10));
  ::unlink(file.c_str());
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

TEST(ScriptRunner, MissingProgramIsAnError) {
  asio::io_context io;
  ScriptRunner runner(io, true);
  ScriptSpec s;
  s.path = "/nonexistent/prolog";
  ScriptResult got;
  runner.Run(s, [&](const ScriptResult& r) {
    got = r;
    io.stop();
  });
  io.run_for(std::chrono::seconds(5));
  EXPECT_FALSE(got.ok());
  EXPECT_EQ(got.status, -1);
  EXPECT_NE(got.error.find("/nonexistent/prolog"), std::string::npos);
}

}  // namespace
}  // namespace shoal
