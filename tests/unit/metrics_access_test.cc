#include "ctld/metrics_access.h"

#include <gtest/gtest.h>

#include "common/jwt.h"
#include "common/openmetrics.h"
#include "noded/node_http.h"

namespace shoal {
namespace {

SlurmConf Conf(const std::string& text) {
  auto r = ParseSlurmConf(
      "ClusterName=c\nSlurmctldHost=h\n" + text, "slurm.conf",
      [](const std::string&) -> Result<std::string> { return std::string(); },
      [](const std::string& p) { return std::vector<std::string>{p}; });
  EXPECT_TRUE(r.ok()) << r.error();
  return r.ok() ? *r : SlurmConf();
}

HttpRequest WithToken(const std::string& header, const std::string& value) {
  HttpRequest req;
  req.method = "GET";
  req.path = "/metrics/jobs";
  if (!header.empty()) req.headers.emplace_back(header, value);
  return req;
}

constexpr char kKey[] = "0123456789abcdef0123456789abcdef";
constexpr int64_t kNow = 1800000000;

std::string Token(const std::string& user, int64_t exp = kNow + 600) {
  return jwt::Sign(kKey, jwt::Claims{user, kNow, exp});
}

TEST(MetricsAccess, OpenByDefaultAndWithIgnorePrivateData) {
  EXPECT_TRUE(ctld::MetricsAccessPolicyFrom(Conf("")).open);
  EXPECT_FALSE(ctld::MetricsAccessPolicyFrom(Conf("PrivateData=jobs\n")).open);
  EXPECT_TRUE(ctld::MetricsAccessPolicyFrom(
                  Conf("PrivateData=jobs\nMetricsParameters=ignore_private_data\n"))
                  .open);
  auto p = ctld::MetricsAccessPolicyFrom(Conf("MetricsAuthUsers=alice,bob\n"));
  EXPECT_FALSE(p.open);
  EXPECT_EQ(p.allowed_users, (std::vector<std::string>{"alice", "bob"}));
  EXPECT_EQ(ctld::CheckMetricsAccess(ctld::MetricsAccessPolicyFrom(Conf("")), WithToken("", ""), "",
                                     kNow),
            0);
}

TEST(MetricsAccess, TokensDecideWhenRestricted) {
  auto p = ctld::MetricsAccessPolicyFrom(Conf("MetricsAuthUsers=alice\nSlurmUser=slurm\n"));
  auto check = [&](const HttpRequest& r) { return ctld::CheckMetricsAccess(p, r, kKey, kNow); };
  EXPECT_EQ(check(WithToken("", "")), 401);
  EXPECT_EQ(check(WithToken("x-slurm-user-token", Token("alice"))), 0);
  EXPECT_EQ(check(WithToken("authorization", "Bearer " + Token("alice"))), 0);
  EXPECT_EQ(check(WithToken("x-slurm-user-token", Token("root"))), 0);
  EXPECT_EQ(check(WithToken("x-slurm-user-token", Token("slurm"))), 0);
  EXPECT_EQ(check(WithToken("x-slurm-user-token", Token("mallory"))), 403);
  EXPECT_EQ(check(WithToken("x-slurm-user-token", Token("alice", kNow - 1))), 401);  // expired
  EXPECT_EQ(check(WithToken("x-slurm-user-token", Token("alice") + "x")), 401);      // forged
  // auth/jwt not configured: no token can be checked.
  EXPECT_EQ(ctld::CheckMetricsAccess(p, WithToken("x-slurm-user-token", Token("alice")), "", kNow),
            401);
}

TEST(NodeHttp, ProbesAndMetrics) {
  noded::NodeHttpState s;
  s.node = "n1";
  s.registered = false;
  s.start_time = 1700000000;
  s.steps = 1;
  s.jobs.push_back({7, 1, true, 2500000, 4096});
  HttpRequest req;
  req.path = "/livez";
  EXPECT_EQ(noded::NodeHttpAnswer(req, s).status, 200);
  req.path = "/readyz";
  EXPECT_EQ(noded::NodeHttpAnswer(req, s).status, 503);  // not registered yet
  s.registered = true;
  EXPECT_EQ(noded::NodeHttpAnswer(req, s).status, 200);
  req.path = "/healthz/";
  EXPECT_EQ(noded::NodeHttpAnswer(req, s).status, 200);
  req.path = "/other";
  EXPECT_EQ(noded::NodeHttpAnswer(req, s).status, 404);
  req.path = "/metrics";
  HttpResponse m = noded::NodeHttpAnswer(req, s);
  EXPECT_EQ(m.content_type, kOpenMetricsContentType);
  EXPECT_NE(m.body.find("shoal_node_jobs{node=\"n1\"} 1\n"), std::string::npos);
  EXPECT_NE(m.body.find("shoal_node_job_cpu_seconds_total{node=\"n1\",job=\"7\"} 2.5\n"),
            std::string::npos);
  EXPECT_NE(m.body.find("shoal_node_job_memory_max_bytes{node=\"n1\",job=\"7\"} 4096\n"),
            std::string::npos);
  EXPECT_EQ(m.body.substr(m.body.size() - 6), "# EOF\n");
}

}  // namespace
}  // namespace shoal
