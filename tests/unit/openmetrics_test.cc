#include "common/openmetrics.h"

#include <gtest/gtest.h>

#include "ctld/diag_stats.h"

namespace shoal {
namespace {

TEST(OpenMetrics, GaugesCountersAndEof) {
  OpenMetricsWriter w;
  w.Gauge("slurm_nodes", "Total number of nodes", uint64_t{3});
  w.Family("slurm_node_cpus", "gauge", "Total number of cpus in the node");
  w.Sample("slurm_node_cpus", {{"node", "n1"}}, uint64_t{4});
  w.Sample("slurm_node_cpus", {{"node", "n2"}}, uint64_t{8});
  w.Family("shoal_rpc_requests", "counter", "RPCs");
  w.Sample("shoal_rpc_requests_total", {{"type", "REQUEST_PING"}, {"x", "y"}}, uint64_t{7});
  EXPECT_EQ(w.Finish(),
            "# HELP slurm_nodes Total number of nodes\n"
            "# TYPE slurm_nodes gauge\n"
            "slurm_nodes 3\n"
            "# HELP slurm_node_cpus Total number of cpus in the node\n"
            "# TYPE slurm_node_cpus gauge\n"
            "slurm_node_cpus{node=\"n1\"} 4\n"
            "slurm_node_cpus{node=\"n2\"} 8\n"
            "# HELP shoal_rpc_requests RPCs\n"
            "# TYPE shoal_rpc_requests counter\n"
            "shoal_rpc_requests_total{type=\"REQUEST_PING\",x=\"y\"} 7\n"
            "# EOF\n");
  EXPECT_EQ(w.text(), "");  // Finish leaves the writer empty
}

TEST(OpenMetrics, EscapesLabelsAndHelp) {
  EXPECT_EQ(EscapeLabelValue("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  OpenMetricsWriter w;
  w.Family("m", "gauge", "line1\nline2 \\");
  w.Sample("m", {{"user", "we\"ird"}}, 1.5);
  EXPECT_EQ(w.Finish(),
            "# HELP m line1\\nline2 \\\\\n# TYPE m gauge\nm{user=\"we\\\"ird\"} 1.5\n# EOF\n");
}

TEST(OpenMetrics, NumberFormats) {
  EXPECT_EQ(FormatMetricValue(0), "0");
  EXPECT_EQ(FormatMetricValue(0.25), "0.25");
  EXPECT_EQ(FormatMetricValue(1e-4), "0.0001");
  EXPECT_EQ(FormatMetricValue(1.0 / 0.0), "+Inf");
}

TEST(OpenMetrics, HistogramIsCumulativeWithInfAndCount) {
  const double bounds[] = {0.001, 0.01};
  const uint64_t buckets[] = {2, 3, 1};  // per bucket; the last is +Inf
  OpenMetricsWriter w;
  w.Family("lat_seconds", "histogram", "latency");
  w.Histogram("lat_seconds", {{"type", "A"}}, bounds, 2, buckets, 0.5);
  EXPECT_EQ(w.Finish(),
            "# HELP lat_seconds latency\n"
            "# TYPE lat_seconds histogram\n"
            "lat_seconds_bucket{type=\"A\",le=\"0.001\"} 2\n"
            "lat_seconds_bucket{type=\"A\",le=\"0.01\"} 5\n"
            "lat_seconds_bucket{type=\"A\",le=\"+Inf\"} 6\n"
            "lat_seconds_count{type=\"A\"} 6\n"
            "lat_seconds_sum{type=\"A\"} 0.5\n"
            "# EOF\n");
}

TEST(DiagStats, HistogramBucketsByUpperBound) {
  ctld::RpcHistogram h;
  h.Observe(ctld::kRpcLatencyBounds, 100);      // 0.0001 s: first bucket (le is inclusive)
  h.Observe(ctld::kRpcLatencyBounds, 101);      // just over: second
  h.Observe(ctld::kRpcLatencyBounds, 9000000);  // 9 s: +Inf
  EXPECT_EQ(h.buckets[0], 1u);
  EXPECT_EQ(h.buckets[1], 1u);
  EXPECT_EQ(h.buckets[ctld::kRpcLatencyBounds.size()], 1u);
  EXPECT_EQ(h.count, 3u);
  EXPECT_EQ(h.sum_usec, 9000201u);
}

TEST(DiagStats, RecordsResetsAndKeepsLifetime) {
  ctld::DiagStats s(100);
  pb::Request ping;
  ping.mutable_ping();
  pb::Request submit;
  submit.mutable_submit_job();
  ctld::RpcType p = ctld::RpcTypeOf(ping), b = ctld::RpcTypeOf(submit);
  EXPECT_STREQ(p.name, "REQUEST_PING");
  EXPECT_EQ(p.id, 1008);
  EXPECT_STREQ(b.name, "REQUEST_SUBMIT_BATCH_JOB");
  EXPECT_EQ(b.id, 4003);
  s.RecordRpc(p, 0, 10);
  s.RecordRpc(p, 1000, 30);
  s.RecordRpc(b, 1000, 500);
  s.JobsSubmitted(2);
  s.JobEnded(pb::JOB_COMPLETED);
  s.JobEnded(pb::JOB_CANCELLED);
  s.JobEnded(pb::JOB_NODE_FAIL);
  pb::DiagResponse d;
  s.Fill(&d, [](uint32_t uid) { return uid == 0 ? std::string("root") : std::to_string(uid); });
  EXPECT_EQ(d.since(), 100);
  EXPECT_EQ(d.jobs_submitted(), 2u);
  EXPECT_EQ(d.jobs_completed(), 1u);
  EXPECT_EQ(d.jobs_canceled(), 1u);
  EXPECT_EQ(d.jobs_failed(), 1u);
  ASSERT_EQ(d.rpc_by_type_size(), 2);
  uint64_t ping_count = 0, ping_usec = 0;
  for (const auto& r : d.rpc_by_type())
    if (r.id() == 1008) ping_count = r.count(), ping_usec = r.total_usec();
  EXPECT_EQ(ping_count, 2u);
  EXPECT_EQ(ping_usec, 40u);
  ASSERT_EQ(d.rpc_by_user_size(), 2);

  s.Reset(200);
  pb::DiagResponse after;
  s.Fill(&after, [](uint32_t) { return std::string("u"); });
  EXPECT_EQ(after.since(), 200);
  EXPECT_EQ(after.rpc_by_type_size(), 0);  // rows with nothing since the reset are left out
  EXPECT_EQ(after.jobs_submitted(), 0u);
  // The metrics' lifetime view is untouched.
  EXPECT_EQ(s.by_type().at(1008).lifetime.count, 2u);
  EXPECT_EQ(s.lifetime_submitted(), 2u);
}

}  // namespace
}  // namespace shoal
