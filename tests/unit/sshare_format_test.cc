#include "cli/sshare_format.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "common/units.h"

namespace shoal::cli {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr char kRun[] = "cpu=0,mem=0,energy=0,node=0,billing=0,fs/disk=0,vmem=0,pages=0";

void Add(pb::ShareQueryResponse& r, const std::string& acct, const std::string& user,
         uint32_t depth, uint32_t raw_shares, double norm_shares, uint64_t raw_usage,
         double norm_usage, double eff, double fs, double level) {
  pb::ShareRecord* s = r.add_records();
  s->set_account(acct);
  s->set_user(user);
  s->set_depth(depth);
  s->set_raw_shares(raw_shares);
  s->set_norm_shares(norm_shares);
  s->set_raw_usage(raw_usage);
  s->set_norm_usage(norm_usage);
  s->set_effective_usage(eff);
  s->set_fairshare(fs);
  s->set_level_fs(level);
  s->set_tres_run_mins(kRun);
}

// What Slurm 22.05.8 answered on the observation cluster (sshare -a -l -P).
pb::ShareQueryResponse Observed() {
  pb::ShareQueryResponse r;
  r.set_fair_tree(true);
  Add(r, "root", "", 0, 0xfffffffe, 1.0 / 4294967296.0, 362, kNaN, 1.0, kNaN, kNaN);
  Add(r, "root", "root", 1, 1, 0.2, 40, 0.112952, 0.112952, 0.6, 1.770660);
  Add(r, "bio", "", 1, 1, 0.2, 4, 0.013775, 0.013775, kNaN, 14.519099);
  Add(r, "bio", "acctuser2", 2, 1, 1.0, 4, 0.013775, 1.0, 1.0, 1.0);
  Add(r, "chem", "", 1, 1, 0.2, 283, 0.782358, 0.782358, kNaN, 0.255637);
  Add(r, "chem", "acctuser1", 2, 1, 0.5, 278, 0.768583, 0.982393, 0.2, 0.508961);
  Add(r, "chem", "acctuser2", 2, 1, 0.5, 4, 0.013775, 0.017607, 0.4, 28.397842);
  Add(r, "lim", "", 1, 1, 0.2, 29, 0.082650, 0.082650, kNaN, 2.419855);
  Add(r, "lim", "acctuser3", 2, 1, 1.0, 29, 0.082650, 1.0, 0.8, 1.0);
  Add(r, "physics", "", 1, 1, 0.2, 0, 0.0, 0.0, kNaN, std::numeric_limits<double>::infinity());
  return r;
}

std::string Format(const pb::ShareQueryResponse& r, const SshareFormatOptions& o) {
  auto out = FormatSshare(r, o);
  EXPECT_TRUE(out.ok()) << out.error();
  return out.ok() ? *out : "";
}

TEST(SshareFormat, DefaultLayout) {
  EXPECT_EQ(Format(Observed(), {}),
            "Account                    User  RawShares  NormShares    RawUsage  EffectvUsage  "
            "FairShare \n"
            "-------------------- ---------- ---------- ----------- ----------- ------------- "
            "---------- \n"
            "root                                          0.000000         362      1.000000   "
            "         \n"
            " root                      root          1    0.200000          40      0.112952   "
            "0.600000 \n"
            " bio                                     1    0.200000           4      0.013775   "
            "         \n"
            "  bio                 acctuser2          1    1.000000           4      1.000000   "
            "1.000000 \n"
            " chem                                    1    0.200000         283      0.782358   "
            "         \n"
            "  chem                acctuser1          1    0.500000         278      0.982393   "
            "0.200000 \n"
            "  chem                acctuser2          1    0.500000           4      0.017607   "
            "0.400000 \n"
            " lim                                     1    0.200000          29      0.082650   "
            "         \n"
            "  lim                 acctuser3          1    1.000000          29      1.000000   "
            "0.800000 \n"
            " physics                                 1    0.200000           0      0.000000   "
            "         \n");
}

TEST(SshareFormat, LongLayout) {
  SshareFormatOptions o;
  o.long_output = true;
  std::string out = Format(Observed(), o);
  std::string want =
      "Account                    User  RawShares  NormShares    RawUsage   NormUsage  "
      "EffectvUsage  FairShare    LevelFS                    GrpTRESMins                    "
      "TRESRunMins \n"
      "-------------------- ---------- ---------- ----------- ----------- ----------- "
      "------------- ---------- ---------- ------------------------------ "
      "------------------------------ \n"
      "root                                          0.000000         362                  "
      "1.000000                                                      cpu=0,mem=0,energy=0,node=0,"
      "b+ \n"
      " root                      root          1    0.200000          40    0.112952      "
      "0.112952   0.600000   1.770660                                cpu=0,mem=0,energy=0,node=0,"
      "b+ \n"
      " bio                                     1    0.200000           4    0.013775      "
      "0.013775             14.519099                                cpu=0,mem=0,energy=0,node=0,"
      "b+ \n";
  EXPECT_EQ(out.substr(0, want.size()), want);
  // physics: no usage, LevelFS infinity.
  EXPECT_NE(out.find(" physics                                 1    0.200000           0    "
                     "0.000000      0.000000                   inf"),
            std::string::npos);
  // Classic: no LevelFS column.
  pb::ShareQueryResponse classic = Observed();
  classic.set_fair_tree(false);
  EXPECT_EQ(Format(classic, o).find("LevelFS"), std::string::npos);
}

TEST(SshareFormat, Parsable2Long) {
  SshareFormatOptions o;
  o.long_output = true;
  o.parsable = 2;
  std::string r = std::string("|") + kRun + "\n";
  EXPECT_EQ(Format(Observed(), o),
            "Account|User|RawShares|NormShares|RawUsage|NormUsage|EffectvUsage|FairShare|LevelFS|"
            "GrpTRESMins|TRESRunMins\n"
            "root|||0.000000|362||1.000000|||" +
                r + " root|root|1|0.200000|40|0.112952|0.112952|0.600000|1.770660|" + r +
                " bio||1|0.200000|4|0.013775|0.013775||14.519099|" + r +
                "  bio|acctuser2|1|1.000000|4|0.013775|1.000000|1.000000|1.000000|" + r +
                " chem||1|0.200000|283|0.782358|0.782358||0.255637|" + r +
                "  chem|acctuser1|1|0.500000|278|0.768583|0.982393|0.200000|0.508961|" + r +
                "  chem|acctuser2|1|0.500000|4|0.013775|0.017607|0.400000|28.397842|" + r +
                " lim||1|0.200000|29|0.082650|0.082650||2.419855|" + r +
                "  lim|acctuser3|1|1.000000|29|0.082650|1.000000|0.800000|1.000000|" + r +
                " physics||1|0.200000|0|0.000000|0.000000||inf|" + r);
}

TEST(SshareFormat, ParsableWithPartitions) {
  SshareFormatOptions o;
  o.parsable = 1;
  o.partitions = true;
  std::string out = Format(Observed(), o);
  EXPECT_EQ(out.substr(0, 200),
            std::string("Account|User|Partition|RawShares|NormShares|RawUsage|EffectvUsage|"
                        "FairShare|\n"
                        "root||||0.000000|362|1.000000||\n"
                        " root|root||1|0.200000|40|0.112952|0.600000|\n"
                        " bio|||1|0.200000|4|0.013775||\n"
                        "  bio|acctuser2||1|1.000000|4|1.000000|1.000000|\n")
                .substr(0, 200));
}

TEST(SshareFormat, UsersOnlyAndNoHeader) {
  SshareFormatOptions o;
  o.users_only = true;
  o.no_header = true;
  std::string out = Format(Observed(), o);
  EXPECT_EQ(out.substr(0, 2 * 93),
            "root                       root          1    0.200000          40      0.112952   "
            "0.600000 \n"
            "bio                   acctuser2          1    1.000000           4      1.000000   "
            "1.000000 \n");
}

TEST(SshareFormat, FieldListWidthsAndExponents) {
  SshareFormatOptions o;
  o.has_format = true;
  o.format = "NormS%5,RawU%4,LevelFS%4,User%3";
  std::string out = Format(Observed(), o);
  EXPECT_EQ(out.substr(0, 120), std::string("NormS RawU Leve Use \n"
                                            "----- ---- ---- --- \n"
                                            "2.328306e-10  362          \n"
                                            "2.000000e-01   40 1.770660e+00 ro+ \n"
                                            "2.000000e-01    4 1.451910e+01     \n"
                                            "1.000000e+00    4 1.000000e+00 ac+ \n")
                                    .substr(0, 120));

  o.format = "Account%30,User%-12,Fair,Cluster";
  o.cluster_name = "obs";
  out = Format(Observed(), o);
  EXPECT_EQ(out.substr(0, 4 * 67),
            "                       Account User          FairShare    Cluster \n"
            "------------------------------ ------------ ---------- ---------- \n"
            "                          root                                obs \n"
            "                          root root           0.600000        obs \n");
}

TEST(SshareFormat, InvalidFieldAndEmptyList) {
  SshareFormatOptions o;
  o.has_format = true;
  o.format = "Account,Foo";
  auto out = FormatSshare(Observed(), o);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error(), "Invalid field requested: \"foo\"");
  o.format = "";
  EXPECT_EQ(Format(Observed(), o).substr(0, 22), "Account              \n");
  o.format = "fairshare,rawshares";
  o.parsable = 2;
  EXPECT_EQ(Format(Observed(), o).substr(0, 31), "FairShare|RawShares\n|\n0.600000|");
}

TEST(SshareFormat, ParentSharesAndHelpFormat) {
  pb::ShareQueryResponse r;
  r.set_fair_tree(true);
  Add(r, "a", "u", 1, kSharesParent, 0.5, 0, 0, 0, 1.0, 3.0);
  SshareFormatOptions o;
  o.parsable = 2;
  o.long_output = true;
  EXPECT_EQ(Format(r, o).substr(Format(r, o).find('\n') + 1, 51),
            " a|u|parent|0.500000|0|0.000000|0.000000|1.000000||");
  EXPECT_EQ(SshareHelpFormat(),
            "Account           Cluster           EffectvUsage      FairShare        \n"
            "GrpTRESMins       GrpTRESRaw        ID                LevelFS          \n"
            "NormShares        NormUsage         Partition         RawShares        \n"
            "RawUsage          TRESRunMins       User             \n");
}

}  // namespace
}  // namespace shoal::cli
