#include "cli/sdiag_format.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>

namespace shoal::cli {
namespace {

class SdiagFormat : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("TZ", "UTC", 1);
    ::tzset();
  }
};

pb::RpcStat* Row(google::protobuf::RepeatedPtrField<pb::RpcStat>* rows, const char* name,
                 uint32_t id, uint64_t count, uint64_t usec) {
  auto* r = rows->Add();
  r->set_name(name);
  r->set_id(id);
  r->set_count(count);
  r->set_total_usec(usec);
  return r;
}

pb::DiagResponse Sample() {
  pb::DiagResponse d;
  d.set_now(1795000000);    // Wed Nov 18 11:06:40 2026 UTC
  d.set_since(1794999000);  // 1000 s earlier
  d.set_server_thread_count(1);
  d.set_dbd_agent_queue_size(0);
  d.set_jobs_submitted(12);
  d.set_jobs_started(10);
  d.set_jobs_completed(7);
  d.set_jobs_canceled(1);
  d.set_jobs_failed(2);
  d.set_job_states_ts(1795000000);
  d.set_jobs_pending(2);
  d.set_jobs_running(3);
  d.set_schedule_cycle_last(120);
  d.set_schedule_cycle_max(900);
  d.set_schedule_cycle_sum(3200);
  d.set_schedule_cycle_counter(32);
  d.set_schedule_cycle_depth(64);
  d.set_schedule_queue_len(2);
  Row(d.mutable_rpc_by_type(), "REQUEST_JOB_INFO", 2003, 5, 500);
  Row(d.mutable_rpc_by_type(), "REQUEST_SUBMIT_BATCH_JOB", 4003, 12, 2400);
  Row(d.mutable_rpc_by_type(), "REQUEST_PING", 1008, 1, 900);
  Row(d.mutable_rpc_by_user(), "alice", 1001, 3, 300);
  Row(d.mutable_rpc_by_user(), "root", 0, 15, 3500);
  return d;
}

TEST_F(SdiagFormat, SlurmLayout) {
  std::string out = FormatSdiag(Sample(), SdiagSort::kCount, 17);
  EXPECT_EQ(out,
            "*******************************************************\n"
            "sdiag output at Wed Nov 18 11:06:40 2026 (1795000000)\n"
            "Data since      Wed Nov 18 10:50:00 2026 (1794999000)\n"
            "*******************************************************\n"
            "Server thread count:  1\n"
            "Agent queue size:     0\n"
            "Agent count:          0\n"
            "Agent thread count:   0\n"
            "DBD Agent queue size: 0\n"
            "\n"
            "Jobs submitted: 12\n"
            "Jobs started:   10\n"
            "Jobs completed: 7\n"
            "Jobs canceled:  1\n"
            "Jobs failed:    2\n"
            "\n"
            "Job states ts:  Wed Nov 18 11:06:40 2026 (1795000000)\n"
            "Jobs pending:   2\n"
            "Jobs running:   3\n"
            "\n"
            "Main schedule statistics (microseconds):\n"
            "\tLast cycle:   120\n"
            "\tMax cycle:    900\n"
            "\tTotal cycles: 32\n"
            "\tMean cycle:   100\n"
            "\tMean depth cycle:  2\n"
            "\tCycles per minute: 2\n"
            "\tLast queue length: 2\n"
            "\n"
            "Backfilling stats\n"
            "\tTotal backfilled jobs (since last slurm start): 0\n"
            "\tTotal backfilled jobs (since last stats cycle start): 0\n"
            "\tTotal backfilled heterogeneous job components: 0\n"
            "\tTotal cycles: 0\n"
            "\tLast cycle when: N/A\n"
            "\tLast cycle: 0\n"
            "\tMax cycle:  0\n"
            "\tLast depth cycle: 0\n"
            "\tLast depth cycle (try sched): 0\n"
            "\tLast queue length: 0\n"
            "\tLast table size: 0\n"
            "\n"
            "Latency for 1000 calls to gettimeofday(): 17 microseconds\n"
            "\n"
            "Remote Procedure Call statistics by message type\n"
            "\tREQUEST_SUBMIT_BATCH_JOB                ( 4003) count:12     ave_time:200    "
            "total_time:2400\n"
            "\tREQUEST_JOB_INFO                        ( 2003) count:5      ave_time:100    "
            "total_time:500\n"
            "\tREQUEST_PING                            ( 1008) count:1      ave_time:900    "
            "total_time:900\n"
            "\n"
            "Remote Procedure Call statistics by user\n"
            "\troot            (       0) count:15     ave_time:233    total_time:3500\n"
            "\talice           (    1001) count:3      ave_time:100    total_time:300\n"
            "\n"
            "Pending RPC statistics\n"
            "\tNo pending RPCs\n");
}

TEST_F(SdiagFormat, BackfillMeansOnlyWithCycles) {
  pb::DiagResponse d = Sample();
  d.set_bf_cycle_counter(4);
  d.set_bf_when_last_cycle(1794999990);
  d.set_bf_cycle_last(50);
  d.set_bf_cycle_max(80);
  d.set_bf_cycle_sum(200);
  d.set_bf_depth_sum(40);
  d.set_bf_depth_try_sum(20);
  d.set_bf_queue_len_sum(8);
  d.set_bf_table_size_sum(4);
  std::string out = FormatSdiag(d, SdiagSort::kCount, 1);
  EXPECT_NE(out.find("\tLast cycle when: Wed Nov 18 11:06:30 2026 (1794999990)\n"),
            std::string::npos);
  EXPECT_NE(out.find("\tMax cycle:  80\n\tMean cycle: 50\n"), std::string::npos);
  EXPECT_NE(out.find("\tDepth Mean: 10\n\tDepth Mean (try depth): 5\n"), std::string::npos);
  EXPECT_NE(out.find("\tQueue length mean: 2\n"), std::string::npos);
  EXPECT_NE(out.find("\tMean table size: 1\n"), std::string::npos);
}

TEST_F(SdiagFormat, SortOrders) {
  auto order = [](SdiagSort s) {
    std::string out = FormatSdiag(Sample(), s, 1);
    size_t job = out.find("REQUEST_JOB_INFO"), sub = out.find("REQUEST_SUBMIT_BATCH_JOB"),
           ping = out.find("REQUEST_PING ");
    std::string o;
    std::vector<std::pair<size_t, char>> v = {{job, 'J'}, {sub, 'S'}, {ping, 'P'}};
    std::sort(v.begin(), v.end());
    for (auto& [pos, c] : v) o += c;
    return o;
  };
  EXPECT_EQ(order(SdiagSort::kCount), "SJP");
  EXPECT_EQ(order(SdiagSort::kId), "PJS");     // 1008, 2003, 4003
  EXPECT_EQ(order(SdiagSort::kTime), "SPJ");   // 2400, 900, 500
  EXPECT_EQ(order(SdiagSort::kTime2), "PSJ");  // 900, 200, 100
}

}  // namespace
}  // namespace shoal::cli
