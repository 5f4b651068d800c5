// kf serve — the interactive explorer: a real HTTP server (cpp-httplib, loopback by default)
// serving web/explorer/ and the JSON API of serve_api.hpp, computed by the C++ core.
// Bad, oversized or out-of-range requests get a 4xx and {"error": "..."}; static files are served
// only from inside the web folder (httplib rejects ".." paths; the folder is canonicalized).
// Nothing is compressed (see no_compression); idle connections cannot starve new ones (see
// elastic_pool and the timeouts in run()).
#include <fmt/format.h>
#include <httplib.h>
#include <signal.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "common.hpp"
#include "serve_api.hpp"

namespace kf::cli {
namespace {

namespace fs = std::filesystem;

struct serve_options {
  int port = 8080;
  std::string host = "127.0.0.1", web_dir;
};

// httplib gives each connection a worker for its whole keep-alive life, so a fixed pool of 8
// (httplib's default here) is stalled by 8 idle sockets. This queue starts another thread
// whenever a connection arrives and no worker is idle, up to `max`: a worker stays free for a new
// request as long as fewer than `max` connections are open; beyond that, the timeouts in run()
// bound how long an idle one holds its thread.
class elastic_pool final : public httplib::TaskQueue {
 public:
  explicit elastic_pool(std::size_t max) : max_(max) {}
  ~elastic_pool() override { shutdown(); }

  void enqueue(std::function<void()> fn) override {
    std::lock_guard lock(mutex_);
    jobs_.push_back(std::move(fn));
    if (idle_ < jobs_.size() && threads_.size() < max_)
      threads_.emplace_back([this] { work(); });
    else
      cond_.notify_one();
  }

  void shutdown() override {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    cond_.notify_all();
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

 private:
  void work() {
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock lock(mutex_);
        ++idle_;
        cond_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
        --idle_;
        if (jobs_.empty()) return;  // stopping, nothing left to run
        fn = std::move(jobs_.front());
        jobs_.pop_front();
      }
      fn();
    }
  }

  std::size_t max_, idle_ = 0;
  bool stop_ = false;
  std::mutex mutex_;
  std::condition_variable cond_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;
};

// httplib 0.11 compresses every JSON, JavaScript and text answer whenever the request's
// Accept-Encoding names br or gzip, which every browser's does: Brotli at its slowest setting
// (quality 11) took 2.8 s for the 1.35 MB /api/smooth answer that took 0.13 s plain. The answers
// are now ≤ ~110 KB and the server is meant for loopback, where sending them costs well under a
// millisecond, so compression never pays here. httplib decides from the request's header when it
// writes the answer; this hook runs first, on the Request object httplib owns (non-const; the
// hook's signature makes it const), and drops the header, so nothing is compressed.
httplib::Server::HandlerResponse no_compression(const httplib::Request& req, httplib::Response&) {
  const_cast<httplib::Request&>(req).headers.erase("Accept-Encoding");
  return httplib::Server::HandlerResponse::Unhandled;
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
  // Bounded waits: a connection that sends nothing, or goes quiet between requests, holds its
  // worker for at most 2 s (httplib counts the keep-alive wait in whole seconds).
  svr.set_read_timeout(2, 0);
  svr.set_write_timeout(5, 0);
  svr.set_keep_alive_max_count(100);
  svr.set_keep_alive_timeout(2);
  svr.new_task_queue = [] { return new elastic_pool(64); };
  // httplib writes the headers and the body separately; with Nagle's algorithm the body of a small
  // answer waited for the client's delayed ACK of the headers: ~40 ms per request in Chromium.
  svr.set_tcp_nodelay(true);
  svr.set_pre_routing_handler(no_compression);
  if (!svr.set_mount_point("/", web.string()))
    throw user_error(fmt::format("cannot serve {}", web.string()));
  add_explorer_api(svr);
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
