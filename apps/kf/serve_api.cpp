#include "serve_api.hpp"

#include <fmt/format.h>
#include <httplib.h>
#include <malloc.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <list>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "kernelformer/explore/explorer.hpp"
#include "kernelformer/explore/explorer_head.hpp"
#include "lru_cache.hpp"
#include "serve_json.hpp"

namespace kf::cli {
namespace {

using json = nlohmann::json;
using clock_type = std::chrono::steady_clock;

struct bad_request : std::runtime_error {
  using std::runtime_error::runtime_error;
};

double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

// ---- query parameters ----

// The value of NAME in the request's query, taken from the raw target and split at the first
// '=' of each '&'-separated part, so a value may hold '=' as typed (kernel=periodic:period=2:
// httplib's own map splits at the last one); percent-decoded; the first occurrence wins.
std::optional<std::string> raw_param(const httplib::Request& req, const char* name) {
  const auto q = req.target.find('?');
  if (q == std::string::npos) return std::nullopt;
  std::string_view rest(req.target);
  rest.remove_prefix(q + 1);
  while (!rest.empty()) {
    const auto amp = rest.find('&');
    const std::string_view part = rest.substr(0, amp);
    const auto eq = part.find('=');
    const std::string key = httplib::detail::decode_url(std::string(part.substr(0, eq)), true);
    if (key == name)
      return eq == std::string_view::npos
                 ? std::string()
                 : httplib::detail::decode_url(std::string(part.substr(eq + 1)), true);
    if (amp == std::string_view::npos) break;
    rest.remove_prefix(amp + 1);
  }
  return std::nullopt;
}

std::string param(const httplib::Request& req, const char* name, const std::string& fallback) {
  const auto v = raw_param(req, name);
  if (!v) return fallback;
  if (v->size() > 200) throw bad_request(fmt::format("{}: value too long", name));
  return *v;
}

double param_double(const httplib::Request& req, const char* name, double fallback) {
  if (!raw_param(req, name)) return fallback;
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
  if (!raw_param(req, name)) return fallback;
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
  r.attention = param(req, "attention", r.attention);
  r.attention_kernel = param(req, "attention_kernel", r.attention_kernel);
  r.temperature = param_double(req, "temperature", r.temperature);
  r.grid = param_index(req, "grid", r.grid);
  try {
    explorer_validate(r);
  } catch (const std::invalid_argument& e) {
    throw bad_request(e.what());
  }
  return r;
}

// ---- caches: trained heads, LOO bandwidths, head fits ----

template <class V, class Make>
std::shared_ptr<const V> cached(lru_cache<V>& cache, const std::string& key, Make make, bool& hit) {
  auto v = cache.get(key);
  hit = v != nullptr;
  if (!v) {
    v = std::make_shared<const V>(make());
    cache.put(key, v);
  }
  return v;
}

struct caches {
  lru_cache<explorer_head> heads{16};
  lru_cache<double> loo{64};
  lru_cache<explorer_head_diagnostics> fits{64};
};

// ---- answers ----

json smooth_answer(caches& c, const httplib::Request& req) {
  const auto t0 = clock_type::now();
  const explorer_request r = parse_request(req);
  bool hit = false;
  const auto head = cached(
      c.heads, explorer_head_key(r), [&] { return explorer_make_head(r); }, hit);
  const explorer_result res = explorer_compute(r, *head);
  const auto& d = res.data;
  json heat = {{"rows", res.heat_nw.rows()},      {"cols", res.heat_nw.cols()},
               {"row_x", numbers(res.heat_x, 5)}, {"col_first", res.heat_col_first},
               {"nw", levels(res.heat_nw)},       {"attention", levels(res.heat_attention)}};
  json out = {{"function", r.function},
              {"kernel", r.kernel},
              {"bandwidth", r.bandwidth},
              {"attention_mode", r.attention},
              {"attention_kernel", r.attention_kernel},
              {"temperature", r.temperature},
              {"n", d.x.size()},
              {"lo", d.lo},
              {"hi", d.hi},
              {"x", numbers(d.x, 5)},
              {"y", numbers(d.y, 5)},
              {"grid", numbers(d.grid, 6)},
              {"truth", numbers(d.truth, 5)},
              {"nw", numbers(res.nw, 5)},
              {"attention", numbers(res.attention, 5)},
              {"attention_bandwidth", round_sig(res.attention_bandwidth, 4)},
              {"heatmap", std::move(heat)},
              {"head", head_json(*head, hit)}};
  index point = -1;
  if (req.has_param("point")) {
    point = param_index(req, "point", 0);
  } else if (req.has_param("at")) {
    point = explorer_nearest_point(d, param_double(req, "at", 0));
  }
  if (point >= 0) out["profile"] = profile_json(explorer_point_profile(r, *head, d, point));
  out["elapsed_ms"] = round_sig(ms_since(t0), 3);
  return out;
}

json fit_answer(caches& c, const httplib::Request& req) {
  const auto t0 = clock_type::now();
  const explorer_request r = parse_request(req);
  bool hit_head = false, hit_loo = false, hit_fit = false;
  const std::string head_key = explorer_head_key(r);
  const auto head = cached(
      c.heads, head_key, [&] { return explorer_make_head(r); }, hit_head);
  explorer_request r1 = r;
  r1.bandwidth = 1;  // the LOO search does not depend on the bandwidth asked for
  const std::string data_key = fmt::format("{}|{}|{:.17g}|{}|{}", r.function, r.n, r.noise, r.seed,
                                           kernel_format(explorer_nw_kernel(r1)));
  const auto loo = cached(
      c.loo, data_key, [&] { return explorer_loo_bandwidth(r); }, hit_loo);
  const explorer_data d = explorer_make_data(r);
  const auto fit = cached(
      c.fits, head_key, [&] { return explorer_head_diagnose(*head, d.lo, d.hi); }, hit_fit);
  return {{"bandwidth_loo", round_sig(*loo, 5)},
          {"head", head_fit_json(*head, *fit)},
          {"cached", hit_loo && hit_fit},
          {"elapsed_ms", round_sig(ms_since(t0), 3)}};
}

void reply(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_header("Cache-Control", "no-store");
  // A parameter echoed in an error may hold bytes that are not UTF-8 (a fuzzing finding: the
  // JSON writer threw from inside the error handler): they are written as U+FFFD.
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

// An error message as one bounded line: a parameter it echoes may hold control bytes (a fuzzing
// finding: a value with a line break made a two-line error), shown as '?'.
std::string one_line(std::string_view m) {
  std::string s = m.size() > 400 ? std::string(m.substr(0, 397)) + "..." : std::string(m);
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == '\x7f') c = '?';
  return s;
}

// Wraps an API handler: bad requests and bad indices → 400, anything else → 500.
template <class Fn>
httplib::Server::Handler api(Fn fn) {
  return [fn](const httplib::Request& req, httplib::Response& res) {
    try {
      reply(res, 200, fn(req));
    } catch (const bad_request& e) {
      reply(res, 400, {{"error", one_line(e.what())}});
    } catch (const std::out_of_range& e) {
      reply(res, 400, {{"error", one_line(e.what())}});
    } catch (const std::invalid_argument& e) {
      reply(res, 400, {{"error", one_line(e.what())}});
    } catch (const std::exception& e) {
      reply(res, 500, {{"error", "internal error: " + one_line(e.what())}});
    }
  };
}

// Admission control for the handlers that compute (smooth, fit, profile): at most `slots` at
// once (the cores), up to `queue` more wait at most `wait` each, the rest get 503 with
// Retry-After at once. A request alone gets every core's OpenMP thread; with others running it
// gets cores / running (at least one), so the compute threads stay about the cores however many
// clients ask. When the last one leaves, the heap is trimmed: a burst's memory goes back.
class heavy_gate {
 public:
  heavy_gate(int slots, int queue, std::chrono::milliseconds wait)
      : slots_(std::max(slots, 1)), queue_(queue), wait_(wait) {}

  // The OpenMP threads this request may use, or 0: refused (busy).
  int enter() {
    std::unique_lock lock(mutex_);
    if (running_ >= slots_) {
      if (waiting_ >= queue_) return 0;
      ++waiting_;
      const bool ok = cond_.wait_for(lock, wait_, [this] { return running_ < slots_; });
      --waiting_;
      if (!ok) return 0;
    }
    ++running_;
    return std::max(1, slots_ / running_);
  }
  void leave() {
    bool idle = false;
    {
      std::lock_guard lock(mutex_);
      --running_;
      idle = running_ == 0 && waiting_ == 0;
    }
    cond_.notify_one();
    if (idle) malloc_trim(0);
  }

 private:
  int slots_, queue_, running_ = 0, waiting_ = 0;
  std::chrono::milliseconds wait_;
  std::mutex mutex_;
  std::condition_variable cond_;
};

template <class Fn>
httplib::Server::Handler heavy(std::shared_ptr<heavy_gate> gate, Fn fn) {
  return [gate, handler = api(std::move(fn))](const httplib::Request& req, httplib::Response& res) {
    const int threads = gate->enter();
    if (threads == 0) {
      res.set_header("Retry-After", "1");
      reply(res, 503, {{"error", "busy: other requests are being computed; retry in a second"}});
      return;
    }
    const int before = omp_get_max_threads();
    omp_set_num_threads(threads);  // this thread's team only
    handler(req, res);             // api() catches everything: leave() always runs
    omp_set_num_threads(before);
    gate->leave();
  };
}

}  // namespace

std::vector<std::pair<std::string, httplib::Server::Handler>> explorer_api_handlers() {
  auto c = std::make_shared<caches>();
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  auto gate = std::make_shared<heavy_gate>(cores, 4 * cores, std::chrono::seconds(10));
  std::vector<std::pair<std::string, httplib::Server::Handler>> h;
  h.emplace_back("/api/functions", api([](const httplib::Request&) {
                   return json{{"functions", functions_json(explorer_functions())}};
                 }));
  h.emplace_back("/api/kernels", api([](const httplib::Request&) {
                   return json{{"kernels", kernels_json(explorer_kernels())},
                               {"attention_kernels", kernels_json(explorer_attention_kernels())},
                               {"attention_modes", explorer_attention_modes()}};
                 }));
  h.emplace_back("/api/smooth",
                 heavy(gate, [c](const httplib::Request& req) { return smooth_answer(*c, req); }));
  h.emplace_back("/api/fit",
                 heavy(gate, [c](const httplib::Request& req) { return fit_answer(*c, req); }));
  h.emplace_back(
      "/api/profile", heavy(gate, [c](const httplib::Request& req) {
        const explorer_request r = parse_request(req);
        if (!req.has_param("point")) throw bad_request("point: missing (an index 0..n-1)");
        bool hit = false;
        const auto head = cached(
            c->heads, explorer_head_key(r), [&] { return explorer_make_head(r); }, hit);
        const explorer_data d = explorer_make_data(r);
        return profile_json(explorer_point_profile(r, *head, d, param_index(req, "point", 0)));
      }));
  return h;
}

void add_explorer_api(httplib::Server& svr) {
  for (auto& [path, handler] : explorer_api_handlers()) svr.Get(path, std::move(handler));
  svr.Get(R"(/api/.*)", [](const httplib::Request& req, httplib::Response& res) {
    reply(res, 404, {{"error", one_line("no such API endpoint: " + req.path)}});
  });
}

}  // namespace kf::cli
