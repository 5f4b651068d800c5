// kf serve as a real HTTP server on loopback: started on a free port, queried with an HTTP
// client — the JSON API, 4xx on bad input, no path traversal, oversized requests refused, the
// page itself served — then stopped with SIGTERM. (The page is tested in Chromium by
// tests/web/explorer.test.mjs.)
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

namespace kf {
namespace {

using json = nlohmann::json;

struct server {
  pid_t pid = -1;
  int port = 0;
  FILE* out = nullptr;
  server() {
    int fds[2];
    if (pipe(fds) != 0) return;
    pid = fork();
    if (pid == 0) {
      dup2(fds[1], 1);
      close(fds[0]);
      execl(KF_EXE, KF_EXE, "serve", "--port", "0", static_cast<char*>(nullptr));
      _exit(127);
    }
    close(fds[1]);
    out = fdopen(fds[0], "r");
    char line[1024];
    if (out && fgets(line, sizeof line, out)) {
      const std::string s(line);
      const auto p = s.find("127.0.0.1:");
      if (p != std::string::npos) port = std::stoi(s.substr(p + 10));
    }
  }
  ~server() {
    if (pid > 0) {
      kill(pid, SIGTERM);
      int st = 0;
      waitpid(pid, &st, 0);
    }
    if (out) fclose(out);
  }
};

TEST(KfServe, ApiPageAndErrors) {
  server s;
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
  EXPECT_EQ(j["heatmap"]["nw"].size(), 60u);
  EXPECT_GT(j["bandwidth_loo"].get<double>(), 0);
  r = c.Get("/api/profile?n=40&point=5");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  double sum = 0;
  const json prof = json::parse(r->body);
  for (double w : prof["nw"]) sum += w;
  EXPECT_NEAR(sum, 1.0, 1e-9);
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

}  // namespace
}  // namespace kf
