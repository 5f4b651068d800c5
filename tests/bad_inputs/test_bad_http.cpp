// The bad-input suite, continued: the explorer's HTTP API (kf serve on a free loopback port)
// answers bad requests with 400 and a message naming the parameter, and keeps serving.
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include <string>

#include "apps/run_kf.hpp"
#include "inputs.hpp"
#include "test_paths.hpp"

namespace kf::bad {
namespace {

using test::kf_server;

struct http_case {
  std::string name, query, parameter;
};

void PrintTo(const http_case& c, std::ostream* os) { *os << "GET /api/smooth?" << c.query; }

class BadRequest : public ::testing::TestWithParam<http_case> {
 protected:
  static void SetUpTestSuite() { srv = new kf_server(); }
  static void TearDownTestSuite() { delete srv; }
  static kf_server* srv;
};
kf_server* BadRequest::srv = nullptr;

TEST_P(BadRequest, IsRefusedWith400NamingTheParameter) {
  ASSERT_GT(srv->port, 0) << "kf serve did not start";
  httplib::Client c("127.0.0.1", srv->port);
  c.set_read_timeout(20, 0);
  const auto r = c.Get(("/api/smooth?" + GetParam().query).c_str());
  ASSERT_TRUE(r) << "no answer";
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_NE(r->body.find(GetParam().parameter), std::string::npos) << r->body;
  EXPECT_LE(r->body.size(), 1000u);
  const auto ok = c.Get("/api/kernels");  // still serving
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
}

std::vector<http_case> http_cases() {
  return {{"n_not_a_number", "n=abc", "n"},
          {"n_too_large", "n=1000000000", "n"},
          {"bandwidth_nan", "bandwidth=nan", "bandwidth"},
          {"bandwidth_negative", "bandwidth=-1", "bandwidth"},
          {"temperature_zero", "temperature=0", "temperature"},
          {"grid_too_small", "grid=1", "grid"},
          {"seed_negative", "seed=-1", "seed"},
          {"noise_infinite", "noise=inf", "noise"},
          {"unknown_function", "function=nope", "function"},
          {"unknown_kernel", "kernel=nope", "kernel"},
          {"value_too_long", "kernel=" + std::string(300, 'a'), "kernel"}};
}

// A raw '=' inside a value is the user's: kernel=periodic:period=2 is read as the percent-encoded
// spelling is (httplib's own map splits at the last '=' and read the kernel '2').
TEST_F(BadRequest, ARawEqualsSignInAValueIsPartOfIt) {
  ASSERT_GT(srv->port, 0) << "kf serve did not start";
  httplib::Client c("127.0.0.1", srv->port);
  c.set_read_timeout(20, 0);
  const auto raw = c.Get("/api/smooth?kernel=periodic:period=2&n=40");
  const auto encoded = c.Get("/api/smooth?kernel=periodic%3Aperiod%3D2&n=40");
  ASSERT_TRUE(raw && encoded);
  ASSERT_EQ(raw->status, 200) << raw->body.substr(0, 300);
  const auto a = nlohmann::json::parse(raw->body), b = nlohmann::json::parse(encoded->body);
  EXPECT_EQ(a["kernel"], "periodic:period=2");
  EXPECT_EQ(a["nw"], b["nw"]);  // the same fit (the timing fields differ)
}

INSTANTIATE_TEST_SUITE_P(Http, BadRequest, ::testing::ValuesIn(http_cases()),
                         [](const auto& i) { return i.param.name; });

}  // namespace
}  // namespace kf::bad
