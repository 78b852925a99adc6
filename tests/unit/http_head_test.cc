#include "common/http_head.h"

#include <gtest/gtest.h>

namespace shoal {
namespace {

TEST(HttpHead, ParsesRequestLineAndHeaders) {
  auto r = ParseHttpHead(
      "GET /metrics/jobs?x=1 HTTP/1.1\r\nHost: ctl:6817\r\nUser-Agent: curl/7.88\r\n"
      "X-Empty:\r\n\r\n");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->method, "GET");
  EXPECT_EQ(r->target, "/metrics/jobs?x=1");
  EXPECT_EQ(r->path, "/metrics/jobs");
  EXPECT_EQ(r->query, "x=1");
  EXPECT_EQ(r->version, "HTTP/1.1");
  EXPECT_EQ(r->Header("host"), "ctl:6817");
  EXPECT_EQ(r->Header("user-agent"), "curl/7.88");  // names are lower-cased
  EXPECT_EQ(r->Header("x-empty"), "");
  EXPECT_EQ(r->Header("missing"), "");
}

TEST(HttpHead, AcceptsBareLfAndHttp10WithoutHost) {
  auto r = ParseHttpHead("HEAD /livez HTTP/1.0\n\n");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->method, "HEAD");
  EXPECT_EQ(r->path, "/livez");
}

TEST(HttpHead, RejectsGarbage) {
  EXPECT_FALSE(ParseHttpHead("").ok());
  EXPECT_FALSE(ParseHttpHead("GET\r\n\r\n").ok());
  EXPECT_FALSE(ParseHttpHead("GET /x\r\n\r\n").ok());                      // no version
  EXPECT_FALSE(ParseHttpHead("GET /x HTTP/2.0\r\nHost: a\r\n\r\n").ok());  // not 1.x
  EXPECT_FALSE(ParseHttpHead("GET x HTTP/1.1\r\nHost: a\r\n\r\n").ok());   // not origin-form
  EXPECT_FALSE(ParseHttpHead("GET /x HTTP/1.1\r\n\r\n").ok());             // 1.1 needs Host
  EXPECT_FALSE(ParseHttpHead("GET /x HTTP/1.1\r\nHost a\r\n\r\n").ok());   // no colon
  EXPECT_FALSE(ParseHttpHead("GET /x HTTP/1.1\r\nHo st: a\r\n\r\n").ok());
  EXPECT_FALSE(ParseHttpHead("GET /x HTTP/1.1\r\nHost: a\r\n").ok());  // unterminated
  EXPECT_FALSE(ParseHttpHead("G(T /x HTTP/1.1\r\nHost: a\r\n\r\n").ok());
  EXPECT_FALSE(ParseHttpHead(std::string("GET /a\x01 HTTP/1.1\r\nHost: a\r\n\r\n")).ok());
  EXPECT_FALSE(ParseHttpHead(std::string("GET /a HTTP/1.1\r\nHost: a\x01\r\n\r\n")).ok());
}

TEST(HttpHead, LooksLikeHttp) {
  auto check = [](const char* s) {
    return LooksLikeHttp(reinterpret_cast<const unsigned char*>(s));
  };
  EXPECT_TRUE(check("GET "));
  EXPECT_TRUE(check("HEAD"));
  EXPECT_TRUE(check("POST"));
  EXPECT_TRUE(check("DELE"));
  EXPECT_FALSE(check("get "));
  EXPECT_FALSE(check("\x10\0\0\0"));
  EXPECT_FALSE(check("G1T "));
}

TEST(HttpHead, FormatsResponses) {
  HttpResponse r;
  r.status = 200;
  r.content_type = "text/plain";
  r.body = "ok\n";
  r.headers.emplace_back("Allow", "GET, HEAD");
  EXPECT_EQ(FormatHttpResponse(r, false),
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n"
            "Connection: close\r\nAllow: GET, HEAD\r\n\r\nok\n");
  // HEAD: same length header, no body.
  EXPECT_EQ(FormatHttpResponse(r, true),
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n"
            "Connection: close\r\nAllow: GET, HEAD\r\n\r\n");
  HttpResponse e = HttpError(404);
  EXPECT_EQ(e.status, 404);
  EXPECT_EQ(e.body, "404 Not Found\n");
  EXPECT_STREQ(HttpReason(431), "Request Header Fields Too Large");
}

}  // namespace
}  // namespace shoal
