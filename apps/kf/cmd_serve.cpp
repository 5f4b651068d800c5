// kf serve — the interactive explorer: a real HTTP server (cpp-httplib, loopback by default)
// serving web/explorer/ and the JSON API of serve_api.hpp, computed by the C++ core.
// Bad, oversized or out-of-range requests get a 4xx and {"error": "..."}; static files are served
// only from inside the web folder (httplib rejects ".." paths; the folder is canonicalized).
// Nothing is compressed and multi-range requests are served whole (see pre_routing); idle or
// slow connections cannot starve new ones (see elastic_pool and the timeouts in run()); the
// requests that compute are admitted a few at a time (serve_api.hpp: heavy_gate); a port in use
// is an error (no SO_REUSEPORT).
#include <fmt/format.h>
#include <httplib.h>
#include <signal.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <malloc.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
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

// httplib gives each connection a worker for its whole keep-alive life, so a fixed pool is
// stalled by as many idle or slow sockets. This queue starts another thread whenever a
// connection arrives and no worker is idle, up to `max` (connection threads mostly wait in
// recv: a slow client costs a blocked thread, never a core — the compute is admitted separately,
// serve_api.hpp's heavy_gate). A worker idle for `idle_exit` ends, down to `keep` workers, so the
// thread count falls back after a burst (and with it each thread's OpenMP team and arena).
class elastic_pool final : public httplib::TaskQueue {
 public:
  elastic_pool(std::size_t max, std::size_t keep, std::chrono::milliseconds idle_exit)
      : max_(max), keep_(keep), idle_exit_(idle_exit) {}
  ~elastic_pool() override { shutdown(); }

  void enqueue(std::function<void()> fn) override {
    std::lock_guard lock(mutex_);
    jobs_.push_back(std::move(fn));
    if (idle_ < jobs_.size() && running_ < max_) {
      ++running_;
      std::thread([this] { work(); }).detach();
    } else {
      cond_.notify_one();
    }
  }

  void shutdown() override {
    std::unique_lock lock(mutex_);
    stop_ = true;
    cond_.notify_all();
    done_.wait(lock, [this] { return running_ == 0; });
  }

 private:
  void work() {
    std::unique_lock lock(mutex_);
    for (;;) {
      ++idle_;
      const bool woken =
          cond_.wait_for(lock, idle_exit_, [this] { return stop_ || !jobs_.empty(); });
      --idle_;
      if (jobs_.empty() && (stop_ || (!woken && running_ > keep_))) break;
      if (jobs_.empty()) continue;
      std::function<void()> fn = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      fn();
      lock.lock();
    }
    --running_;
    done_.notify_all();
  }

  std::size_t max_, keep_, idle_ = 0, running_ = 0;
  std::chrono::milliseconds idle_exit_;
  bool stop_ = false;
  std::mutex mutex_;
  std::condition_variable cond_, done_;
  std::deque<std::function<void()>> jobs_;
};

// httplib 0.11 compresses every JSON, JavaScript and text answer whenever the request's
// Accept-Encoding names br or gzip, which every browser's does: Brotli at its slowest setting
// (quality 11) took 2.8 s for the 1.35 MB /api/smooth answer that took 0.13 s plain. The answers
// are now ≤ ~110 KB and the server is meant for loopback, where sending them costs well under a
// millisecond, so compression never pays here. httplib decides from the request's header when it
// writes the answer; this hook runs first, on the Request object httplib owns (non-const; the
// hook's signature makes it const), and drops the header, so nothing is compressed.
//
// It also collapses a multi-range request (Range: bytes=0-1,2-3,…) to the whole file: httplib
// 0.11 builds a multipart answer for every range in memory (32 requests of 8 KB of ranges took
// the server to 3.9 GB). One range is served as asked.
httplib::Server::HandlerResponse pre_routing(const httplib::Request& req, httplib::Response&) {
  auto& r = const_cast<httplib::Request&>(req);
  r.headers.erase("Accept-Encoding");
  if (r.ranges.size() > 1) {
    r.ranges.clear();
    r.headers.erase("Range");
  }
  return httplib::Server::HandlerResponse::Unhandled;
}

// kf's main keeps freed memory in the heap (training reuses it every step); a server must give
// it back after a burst: glibc's default thresholds again, few arenas (one per request thread
// otherwise), and heavy_gate trims the heap whenever the last heavy request leaves.
void serve_memory_policy() {
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  mallopt(M_TRIM_THRESHOLD, 8 << 20);
  mallopt(M_ARENA_MAX, 4);
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
      candidates.push_back(exe.parent_path().parent_path().parent_path() /
                           "share/kernelformer/web/explorer");
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
  svr.new_task_queue = [] { return new elastic_pool(1024, 4, std::chrono::milliseconds(3000)); };
  // httplib writes the headers and the body separately; with Nagle's algorithm the body of a small
  // answer waited for the client's delayed ACK of the headers: ~40 ms per request in Chromium.
  svr.set_tcp_nodelay(true);
  svr.set_pre_routing_handler(pre_routing);
  // The listening socket: SO_REUSEADDR (a restart binds at once) but not httplib's default
  // SO_REUSEPORT, under which a second kf serve on the same port started too and took half the
  // traffic; now its bind fails. Its descriptor is kept to raise the listen backlog below.
  int listen_fd = -1;
  svr.set_socket_options([&listen_fd](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    listen_fd = sock;
  });
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
    throw user_error(fmt::format(
        "cannot listen on {}:{}: the port is in use (another kf serve?) or the address is not "
        "this machine's; try --port 0 for any free port",
        o.host, port));
  }
  // httplib listens with a backlog of 5: 64 clients connecting at once waited up to a second for
  // the kernel's SYN retry. listen() again on the bound socket sets the backlog.
  if (listen_fd >= 0) ::listen(listen_fd, SOMAXCONN);
  serve_memory_policy();
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
