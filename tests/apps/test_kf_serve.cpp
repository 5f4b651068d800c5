// kf serve as a real HTTP server on loopback: started on a free port, queried with an HTTP
// client — the JSON API, 4xx on bad input, no path traversal, oversized requests refused, the
// page itself served, no compression whatever the client offers, idle connections that do not
// stall a new request — then stopped with SIGTERM. (The page is tested in Chromium by
// tests/web/explorer.test.mjs.)
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apps/run_kf.hpp"

namespace kf {
namespace {

using json = nlohmann::json;

using test::connect_to;
using test::kf_server;

TEST(KfServe, ApiPageAndErrors) {
  kf_server s;
  ASSERT_GT(s.port, 0) << "kf serve did not print its address";
  httplib::Client c("127.0.0.1", s.port);
  c.set_connection_timeout(5, 0);
  c.set_read_timeout(20, 0);
  auto r = c.Get("/api/kernels");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_GE(json::parse(r->body)["kernels"].size(), 10u);
  r = c.Get("/api/smooth?function=seed001&n=40&kernel=gaussian&bandwidth=0.5&temperature=0.1");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = json::parse(r->body);
  EXPECT_EQ(j["x"].size(), 40u);
  EXPECT_EQ(j["nw"].size(), 200u);
  EXPECT_EQ(j["attention"].size(), 200u);
  EXPECT_EQ(j["heatmap"]["rows"], 60);
  EXPECT_EQ(j["heatmap"]["cols"], 40);
  EXPECT_EQ(j["heatmap"]["nw"]["levels"].get<std::string>().size(), 60u * 40u / 3u * 4u);  // base64
  EXPECT_FALSE(j.contains("profile"));
  r = c.Get("/api/fit?function=seed001&n=40&kernel=gaussian&bandwidth=0.5");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_GT(json::parse(r->body)["bandwidth_loo"].get<double>(), 0);
  // The profile of the point nearest x = 3 rides along with the curves.
  r = c.Get("/api/smooth?function=seed001&n=40&at=3&attention=mimic");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json m = json::parse(r->body);
  EXPECT_EQ(m["profile"]["nw"].size(), 40u);
  EXPECT_TRUE(m["head"]["trained"].get<bool>());
  EXPECT_LT(std::abs(m["profile"]["x0"].get<double>() - 3), 0.5);
  r = c.Get("/api/profile?n=40&point=5");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  double sum = 0;
  const json prof = json::parse(r->body);
  for (double w : prof["nw"]) sum += w;
  EXPECT_NEAR(sum, 1.0, 1e-3);  // weights travel with 4 significant digits
  // Bad input: 400 with a message naming the parameter.
  for (const char* q : {"/api/smooth?bandwidth=-1", "/api/smooth?n=1e9", "/api/smooth?n=abc",
                        "/api/smooth?kernel=exp_dot", "/api/profile?point=99999", "/api/profile",
                        "/api/smooth?function=../../etc"}) {
    r = c.Get(q);
    ASSERT_TRUE(r) << q;
    EXPECT_EQ(r->status, 400) << q;
    EXPECT_TRUE(json::parse(r->body).contains("error")) << q;
  }
  r = c.Get("/api/nothing");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  // The page and its files; nothing outside the web folder.
  r = c.Get("/");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_NE(r->body.find("<html"), std::string::npos);
  for (const char* q :
       {"/../../../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/..%2f..%2f..%2fetc%2fpasswd"}) {
    r = c.Get(q);
    ASSERT_TRUE(r) << q;
    EXPECT_NE(r->status, 200) << q;
    EXPECT_EQ(r->body.find("root:"), std::string::npos) << q;
  }
  // An oversized request line is refused, and the server keeps serving.
  r = c.Get("/api/smooth?kernel=" + std::string(20000, 'a'));
  ASSERT_TRUE(r);
  EXPECT_GE(r->status, 400);
  r = c.Get("/api/functions");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

// Whatever Accept-Encoding says (Chromium's is "gzip, deflate, br, zstd"), answers go out plain:
// httplib would otherwise compress them with Brotli at its slowest setting.
TEST(KfServe, AnswersAreNeverCompressed) {
  kf_server s;
  ASSERT_GT(s.port, 0) << "kf serve did not print its address";
  httplib::Client c("127.0.0.1", s.port);
  c.set_read_timeout(20, 0);
  for (const char* enc : {"gzip, deflate, br, zstd", "gzip, deflate, br", "br", "gzip"})
    for (const char* path : {"/api/smooth?function=seed001&n=2000", "/app.js", "/"}) {
      const auto r = c.Get(path, {{"Accept-Encoding", enc}});
      ASSERT_TRUE(r) << path;
      EXPECT_EQ(r->status, 200) << path;
      EXPECT_FALSE(r->has_header("Content-Encoding"))
          << path << " with " << enc << ": " << r->get_header_value("Content-Encoding");
    }
}

// Issue 20: 16 idle connections stalled kf serve for ~10 s. Now 16 that never send a byte, and
// 16 more that sent one request and stay open (keep-alive), leave a worker for a new request.
TEST(KfServe, IdleConnectionsDoNotStallANewRequest) {
  kf_server s;
  ASSERT_GT(s.port, 0) << "kf serve did not print its address";
  std::vector<int> idle;
  for (int i = 0; i < 16; ++i) idle.push_back(connect_to(s.port));
  const std::string get = "GET /api/functions HTTP/1.1\r\nHost: x\r\n\r\n";
  char buf[4096];
  for (int i = 0; i < 16; ++i) {
    const int fd = connect_to(s.port);
    ASSERT_EQ(write(fd, get.data(), get.size()), static_cast<ssize_t>(get.size()));
    ASSERT_GT(read(fd, buf, sizeof buf), 0);  // answered; the connection stays open
    idle.push_back(fd);
  }
  for (int fd : idle) ASSERT_GE(fd, 0);
  httplib::Client c("127.0.0.1", s.port);
  c.set_read_timeout(20, 0);
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = c.Get("/api/smooth?function=seed001&n=200");
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_LT(sec, 0.5) << "a request behind 32 idle connections took " << sec << " s";
  // The server closes an idle connection after its 2 s limit.
  timeval tv{5, 0};
  setsockopt(idle[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  const auto t1 = std::chrono::steady_clock::now();
  EXPECT_EQ(read(idle[0], buf, sizeof buf), 0);  // EOF, not a timeout
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count(), 3.0);
  for (int fd : idle) close(fd);
}

}  // namespace
}  // namespace kf
