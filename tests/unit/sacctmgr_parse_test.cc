#include "cli/sacctmgr_parse.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace shoal::cli::sacctmgr {
namespace {

using ::testing::HasSubstr;

Result<Command> Parse(std::vector<std::string> args, Options* out_opts = nullptr) {
  std::vector<std::string> words;
  auto opts = ParseOptions(args, &words);
  if (!opts) return opts.status();
  if (out_opts) *out_opts = *opts;
  return ParseCommand(words, *opts);
}

TEST(SacctmgrParseTest, Options) {
  Options o;
  auto c = Parse({"-i", "-nP", "--quiet", "show", "user"}, &o);
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_TRUE(o.immediate);
  EXPECT_TRUE(o.noheader);
  EXPECT_EQ(o.parsable, 2);
  EXPECT_TRUE(o.quiet);
  EXPECT_EQ(Parse({"-V"})->action, Action::kVersion);
  EXPECT_EQ(Parse({"--help"})->action, Action::kHelp);
  auto bad = Parse({"--foo"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(),
            "sacctmgr: unrecognized option '--foo'\nTry \"sacctmgr --help\" for more information");
  EXPECT_FALSE(Parse({"-x", "show", "user"}).ok());
}

TEST(SacctmgrParseTest, AddAccount) {
  auto c = Parse({"add", "account", "physics", "Description=x y", "Parent=science"});
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->action, Action::kAdmin);
  EXPECT_EQ(c->admin.verb(), pb::AcctAdminRequest::ADD);
  EXPECT_EQ(c->admin.entity(), "account");
  ASSERT_EQ(c->admin.names_size(), 1);
  EXPECT_EQ(c->admin.names(0), "physics");
  ASSERT_EQ(c->admin.set_size(), 2);
  EXPECT_EQ(c->admin.set(0).key(), "Description");
  EXPECT_EQ(c->admin.set(0).value(), "x y");
  EXPECT_EQ(Parse({"create", "acct", "a,b"})->admin.names_size(), 2);
}

TEST(SacctmgrParseTest, ModifyWhereSet) {
  auto c = Parse({"modify", "user", "bob", "set", "MaxJobs=2"});
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->admin.verb(), pb::AcctAdminRequest::MODIFY);
  EXPECT_EQ(c->admin.names(0), "bob");
  ASSERT_EQ(c->admin.set_size(), 1);
  EXPECT_EQ(c->admin.set(0).key(), "MaxJobs");
  EXPECT_EQ(c->admin.set(0).op(), "=");

  c = Parse({"update", "user", "set", "qos+=high", "where", "name=bob", "cluster=tux"});
  ASSERT_TRUE(c.ok()) << c.error();
  ASSERT_EQ(c->admin.set_size(), 1);
  EXPECT_EQ(c->admin.set(0).key(), "qos");
  EXPECT_EQ(c->admin.set(0).op(), "+=");
  EXPECT_EQ(c->admin.set(0).value(), "high");
  ASSERT_EQ(c->admin.where_size(), 2);
  EXPECT_EQ(c->admin.where(1).value(), "tux");

  c = Parse({"modify", "qos", "high", "set", "Preempt-=low"});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->admin.set(0).op(), "-=");

  auto bad = Parse({"modify", "user", "bob"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(), " You didn't give me anything to set");
  bad = Parse({"modify", "user", "bob", "set", "oops"});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error(), HasSubstr("Unknown option: oops"));
}

TEST(SacctmgrParseTest, DeleteAndErrors) {
  auto c = Parse({"remove", "user", "where", "name=bob", "account=physics"});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->admin.verb(), pb::AcctAdminRequest::DELETE);
  EXPECT_EQ(c->admin.where_size(), 2);

  auto bad = Parse({"frobnicate", "user"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(), "invalid keyword: frobnicate");
  bad = Parse({"show", "foo"});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error(), HasSubstr("No valid entity in list command"));
  bad = Parse({"add", "foo", "x"});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error(), HasSubstr("No valid entity in add command"));
  bad = Parse({"show"});
  EXPECT_FALSE(bad.ok());
  bad = Parse({"-r", "add", "account", "x"});
  EXPECT_FALSE(bad.ok());
  // Injection-looking text is passed along literally as one name.
  c = Parse({"delete", "account", "x'); DROP TABLE jobs; --"});
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->admin.names_size(), 1);
  EXPECT_EQ(c->admin.names(0), "x'); DROP TABLE jobs; --");
}

TEST(SacctmgrParseTest, Show) {
  auto c = Parse({"show", "assoc", "tree", "format=Cluster,Account%20", "Format=User", "where",
                  "cluster=tux", "onlydefaults"});
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->action, Action::kShow);
  EXPECT_EQ(c->show.entity(), "association");
  EXPECT_TRUE(c->tree);
  EXPECT_EQ(c->format, (std::vector<std::string>{"Cluster", "Account%20", "User"}));
  ASSERT_EQ(c->show.where_size(), 2);
  EXPECT_EQ(c->show.where(0).key(), "cluster");
  EXPECT_EQ(c->show.where(1).key(), "onlydefaults");
  c = Parse({"-s", "list", "users", "bob"});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->show.entity(), "user");
  EXPECT_TRUE(c->show.with_assoc());
  EXPECT_EQ(c->show.names(0), "bob");
  EXPECT_TRUE(Parse({"show", "user", "withassoc"})->show.with_assoc());
  EXPECT_EQ(Parse({"show", "tres"})->show.entity(), "tres");
  EXPECT_EQ(Parse({"show", "qos"})->show.entity(), "qos");
  EXPECT_EQ(CanonicalEntity("associations"), "association");
  EXPECT_EQ(CanonicalEntity("a"), "");
}

}  // namespace
}  // namespace shoal::cli::sacctmgr
