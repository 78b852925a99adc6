#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "noded/util.h"

namespace shoal::noded {
namespace {

volatile sig_atomic_t g_caught = 0;
void Catch(int) { g_caught = 1; }

// A signal sent to a task between fork() and its ResetSignals() must not run the supervisor's
// handler in the child (and be lost): it stays pending and acts once the defaults are back.
TEST(ForkSignalsBlocked, EarlySignalActsAfterReset) {
  struct sigaction sa {
  }, old{};
  sa.sa_handler = Catch;
  ::sigemptyset(&sa.sa_mask);
  ASSERT_EQ(::sigaction(SIGTERM, &sa, &old), 0);
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t pid = ForkSignalsBlocked();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    char c;
    // Wait until the parent has sent SIGTERM, with the parent's handler still installed.
    if (::read(ready[0], &c, 1) != 1) ::_exit(3);
    ::usleep(20000);
    if (g_caught) ::_exit(2);  // the handler ran in the child: the signal was lost
    ResetSignals();            // SIGTERM, pending, now kills the child
    ::_exit(0);
  }
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  ASSERT_EQ(::write(ready[1], "x", 1), 1);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status;
  // The parent's own mask is back: its handler still works.
  ASSERT_EQ(::raise(SIGTERM), 0);
  EXPECT_EQ(g_caught, 1);
  ::sigaction(SIGTERM, &old, nullptr);
  ::close(ready[0]);
  ::close(ready[1]);
}

}  // namespace
}  // namespace shoal::noded
