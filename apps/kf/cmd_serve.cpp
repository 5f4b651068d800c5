// kf serve — the interactive explorer: a real HTTP server (cpp-httplib, loopback by default)
// serving web/explorer/ and a small JSON API computed by the C++ core (explore/explorer.hpp).
//   GET /api/functions, /api/kernels
//   GET /api/smooth?function=&n=&noise=&seed=&kernel=&bandwidth=&temperature=&grid=
//   GET /api/profile?<same>&point=i
// Bad, oversized or out-of-range requests get a 4xx and {"error": "..."}; static files are served
// only from inside the web folder (httplib rejects ".." paths; the folder is canonicalized).
#include <fmt/format.h>
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "common.hpp"
#include "kernelformer/explore/explorer.hpp"

namespace kf::cli {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

struct serve_options {
  int port = 8080;
  std::string host = "127.0.0.1", web_dir;
};

struct bad_request : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string param(const httplib::Request& req, const char* name, const std::string& fallback) {
  if (!req.has_param(name)) return fallback;
  std::string v = req.get_param_value(name);
  if (v.size() > 200) throw bad_request(fmt::format("{}: value too long", name));
  return v;
}

double param_double(const httplib::Request& req, const char* name, double fallback) {
  if (!req.has_param(name)) return fallback;
  const std::string v = param(req, name, "");
  try {
    std::size_t used = 0;
    const double x = std::stod(v, &used);
    if (used != v.size() || !std::isfinite(x)) throw std::invalid_argument(v);
    return x;
  } catch (const std::logic_error&) {
    throw bad_request(fmt::format("{}: '{}' is not a finite number", name, v));
  }
}

index param_index(const httplib::Request& req, const char* name, index fallback) {
  if (!req.has_param(name)) return fallback;
  const double x = param_double(req, name, 0);
  if (x != std::floor(x) || std::abs(x) > 1e9)
    throw bad_request(fmt::format("{}: '{}' is not an integer", name, param(req, name, "")));
  return static_cast<index>(x);
}

explorer_request parse_request(const httplib::Request& req) {
  explorer_request r;
  r.function = param(req, "function", r.function);
  r.n = param_index(req, "n", r.n);
  r.noise = param_double(req, "noise", r.noise);
  const index seed = param_index(req, "seed", 0);
  if (seed < 0) throw bad_request("seed: must be >= 0");
  r.seed = static_cast<std::uint64_t>(seed);
  r.kernel = param(req, "kernel", r.kernel);
  r.bandwidth = param_double(req, "bandwidth", r.bandwidth);
  r.temperature = param_double(req, "temperature", r.temperature);
  r.grid = param_index(req, "grid", r.grid);
  try {
    explorer_validate(r);
  } catch (const std::invalid_argument& e) {
    throw bad_request(e.what());
  }
  return r;
}

json rows_of(const matrix<double>& m) {
  json a = json::array();
  for (index i = 0; i < m.rows(); ++i) {
    json row = json::array();
    for (index j = 0; j < m.cols(); ++j) row.push_back(m(i, j));
    a.push_back(std::move(row));
  }
  return a;
}

void reply(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_header("Cache-Control", "no-store");
  res.set_content(body.dump(), "application/json");
}

// Wraps an API handler: bad requests → 400, bad indices → 404-free 400, anything else → 500.
template <class Fn>
httplib::Server::Handler api(Fn fn) {
  return [fn](const httplib::Request& req, httplib::Response& res) {
    try {
      reply(res, 200, fn(req));
    } catch (const bad_request& e) {
      reply(res, 400, {{"error", e.what()}});
    } catch (const std::out_of_range& e) {
      reply(res, 400, {{"error", e.what()}});
    } catch (const std::invalid_argument& e) {
      reply(res, 400, {{"error", e.what()}});
    } catch (const std::exception& e) {
      reply(res, 500, {{"error", std::string("internal error: ") + e.what()}});
    }
  };
}

fs::path find_web_dir(const std::string& given) {
  std::vector<fs::path> candidates;
  if (!given.empty()) {
    candidates.emplace_back(given);
  } else {
    if (const char* env = std::getenv("KF_WEB_DIR")) candidates.emplace_back(env);
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec)
      candidates.push_back(exe.parent_path().parent_path() / "share/kernelformer/web/explorer");
#ifdef KF_SOURCE_WEB_DIR
    candidates.emplace_back(KF_SOURCE_WEB_DIR);
#endif
  }
  for (const auto& c : candidates) {
    std::error_code ec;
    if (fs::exists(c / "index.html", ec)) return fs::canonical(c, ec);
  }
  throw user_error(given.empty()
                       ? "cannot find the explorer's web folder (web/explorer); pass --web-dir DIR"
                       : fmt::format("--web-dir {}: no index.html there", given));
}

void run(const serve_options& o) {
  if (o.port < 0 || o.port > 65535)
    throw user_error("--port must be in 0..65535 (0: any free port)");
  const fs::path web = find_web_dir(o.web_dir);
  httplib::Server svr;
  svr.set_payload_max_length(16 * 1024);
  svr.set_read_timeout(5, 0);
  svr.set_write_timeout(5, 0);
  svr.set_keep_alive_max_count(100);
  svr.set_keep_alive_timeout(5);
  if (!svr.set_mount_point("/", web.string()))
    throw user_error(fmt::format("cannot serve {}", web.string()));

  svr.Get("/api/functions", api([](const httplib::Request&) {
            json a = json::array();
            for (const auto& f : explorer_functions())
              a.push_back(
                  {{"name", f.name}, {"description", f.description}, {"lo", f.lo}, {"hi", f.hi}});
            return json{{"functions", a}};
          }));
  svr.Get("/api/kernels", api([](const httplib::Request&) {
            json a = json::array();
            for (const auto& k : kernel_catalog())
              if (k.arg == kernel_arg::sqdist)
                a.push_back({{"name", std::string(k.name)},
                             {"description", std::string(k.doc)},
                             {"compact", k.compact}});
            return json{{"kernels", a}};
          }));
  svr.Get("/api/smooth", api([](const httplib::Request& req) {
            const explorer_request r = parse_request(req);
            const auto t0 = std::chrono::steady_clock::now();
            const explorer_result res = explorer_compute(r);
            const double ms =
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                    .count();
            return json{{"x", res.data.x},
                        {"y", res.data.y},
                        {"grid", res.data.grid},
                        {"truth", res.data.truth},
                        {"nw", res.nw},
                        {"attention", res.attention},
                        {"bandwidth", r.bandwidth},
                        {"bandwidth_loo", res.bandwidth_loo},
                        {"temperature", r.temperature},
                        {"attention_bandwidth", res.attention_bandwidth},
                        {"kernel", r.kernel},
                        {"function", r.function},
                        {"heatmap",
                         {{"rows", res.heat_rows},
                          {"cols", r.n},
                          {"row_x", res.heat_x},
                          {"nw", rows_of(res.heat_nw)},
                          {"attention", rows_of(res.heat_attention)}}},
                        {"elapsed_ms", ms}};
          }));
  svr.Get("/api/profile", api([](const httplib::Request& req) {
            const explorer_request r = parse_request(req);
            if (!req.has_param("point")) throw bad_request("point: missing (an index 0..n-1)");
            const index i = param_index(req, "point", 0);
            const explorer_profile p = explorer_point_profile(r, i);
            return json{{"point", i}, {"x0", p.x0}, {"nw", p.nw}, {"attention", p.attention}};
          }));
  svr.Get(R"(/api/.*)", [](const httplib::Request& req, httplib::Response& res) {
    reply(res, 404, {{"error", "no such API endpoint: " + req.path}});
  });
  svr.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (res.body.empty())
      res.set_content(fmt::format("{} {}\n", res.status, req.path.size() > 200 ? "" : req.path),
                      "text/plain");
  });

  int port = o.port;
  if (port == 0) {
    port = svr.bind_to_any_port(o.host);
    if (port < 0) throw user_error(fmt::format("cannot listen on {}", o.host));
  } else if (!svr.bind_to_port(o.host, port)) {
    throw user_error(fmt::format("cannot listen on {}:{} (in use? try --port 0)", o.host, port));
  }
  // SIGINT/SIGTERM stop the server cleanly: a thread waits for them.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::atomic<bool> signalled{false};
  std::thread stopper([&svr, &signalled, set] {
    int sig = 0;
    sigwait(&set, &sig);
    signalled = true;
    svr.stop();
  });
  fmt::print("kf serve: http://{}:{}/  (web folder {}; Ctrl-C to stop)\n", o.host, port,
             web.string());
  std::fflush(stdout);
  const bool ok = svr.listen_after_bind();
  if (!signalled) pthread_kill(stopper.native_handle(), SIGTERM);  // wakes its sigwait
  stopper.join();
  if (!ok) throw user_error("the server stopped with an error");
  fmt::print("kf serve: stopped\n");
}

}  // namespace

void add_serve(CLI::App& app) {
  auto o = std::make_shared<serve_options>();
  CLI::App* sub = app.add_subcommand(
      "serve", "Interactive explorer: kernel smoothing vs attention, live in the browser");
  sub->add_option("--port", o->port, "TCP port (0: any free port)")->capture_default_str();
  sub->add_option("--host", o->host, "address to listen on (loopback by default)")
      ->capture_default_str();
  sub->add_option("--web-dir", o->web_dir,
                  "the page's folder (default: the installed web/explorer)");
  sub->footer(
      "Then open the printed address. Example:\n"
      "  kf serve --port 8080        # http://127.0.0.1:8080/");
  sub->callback([o] { run(*o); });
}

}  // namespace kf::cli
