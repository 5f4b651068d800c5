// The explorer API's compact JSON (serve_json.hpp).
#include "serve_json.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "kernelformer/kernels.hpp"

namespace kf::cli {

// v rounded to `digits` significant digits (the nearest double to the decimal, so the JSON
// writer's shortest round-trip form prints at most `digits` digits); |v| < 1e-15 becomes 0.
double round_sig(double v, int digits) {
  static const auto pow10 = [] {
    std::array<double, 23> p{};
    p[0] = 1;
    for (std::size_t i = 1; i < p.size(); ++i) p[i] = p[i - 1] * 10;  // exact up to 1e22
    return p;
  }();
  if (!std::isfinite(v) || v == 0) return v;
  if (std::abs(v) < 1e-15) return 0.0;
  const int e = digits - 1 - static_cast<int>(std::floor(std::log10(std::abs(v))));
  if (e >= 0 && e < 23) return std::round(v * pow10[std::size_t(e)]) / pow10[std::size_t(e)];
  if (e < 0 && -e < 23) return std::round(v / pow10[std::size_t(-e)]) * pow10[std::size_t(-e)];
  return v;
}

nlohmann::json numbers(const std::vector<double>& v, int digits) {
  nlohmann::json a = nlohmann::json::array();
  for (double x : v) a.push_back(round_sig(x, digits));  // NaN is written as null
  return a;
}

std::string base64(const std::vector<std::uint8_t>& b) {
  static constexpr char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((b.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < b.size(); i += 3) {
    const std::uint32_t v = std::uint32_t(b[i]) << 16 |
                            (i + 1 < b.size() ? std::uint32_t(b[i + 1]) << 8 : 0) |
                            (i + 2 < b.size() ? std::uint32_t(b[i + 2]) : 0);
    out += tab[v >> 18 & 63];
    out += tab[v >> 12 & 63];
    out += i + 1 < b.size() ? tab[v >> 6 & 63] : '=';
    out += i + 2 < b.size() ? tab[v & 63] : '=';
  }
  return out;
}

// A weight matrix as the heatmap draws it: levels 0..255 of w / max(w), row-major, base64.
nlohmann::json levels(const matrix<double>& w) {
  double mx = 0;
  for (double v : w.values()) mx = std::max(mx, v);
  std::vector<std::uint8_t> b(w.values().size());
  for (std::size_t i = 0; i < b.size(); ++i)
    b[i] = mx > 0 ? static_cast<std::uint8_t>(std::lround(255 * std::max(w.values()[i], 0.0) / mx))
                  : 0;
  return {{"scale", round_sig(mx, 4)}, {"levels", base64(b)}};
}

// Weights to 4 significant digits, and 0 below 1e-5 of the row's largest (a fraction of a pixel
// in the profile plot): far from the query most weights then travel as "0".
nlohmann::json weights(const std::vector<double>& w) {
  double mx = 0;
  for (double v : w) mx = std::max(mx, v);
  nlohmann::json a = nlohmann::json::array();
  for (double v : w) a.push_back(v < 1e-5 * mx ? 0.0 : round_sig(v, 4));
  return a;
}

nlohmann::json profile_json(const explorer_profile& p) {
  return {{"point", p.point},
          {"x0", round_sig(p.x0, 6)},
          {"nw", weights(p.nw)},
          {"attention", weights(p.attention)}};
}

nlohmann::json head_json(const explorer_head& h, bool hit) {
  std::vector<double> loss;  // at most ~120 points of the curve: every k-th step and the last
  const std::size_t step = std::max<std::size_t>(1, (h.loss.size() + 119) / 120);
  for (std::size_t i = 0; i < h.loss.size(); i += step) loss.push_back(h.loss[i]);
  if (!h.loss.empty() && (h.loss.size() - 1) % step != 0) loss.push_back(h.loss.back());
  return {{"mode", h.mode},
          {"kernel", kernel_format(h.kernel)},
          {"d", h.wq.cols()},
          {"trained", h.steps > 0},
          {"steps", h.steps},
          {"points", h.train_points},
          {"loss", numbers(loss, 4)},
          {"loss_every", step},
          {"loss_name", h.mode == "data" ? "leave-one-out MSE" : "weight RMSE vs the smoother"},
          {"loss_before", round_sig(h.loss_before, 4)},
          {"loss_after", round_sig(h.loss_after, 4)},
          {"train_ms", round_sig(h.train_ms, 3)},
          {"cached", hit}};
}

nlohmann::json head_fit_json(const explorer_head& h, const explorer_head_diagnostics& fit) {
  nlohmann::json shapes = nlohmann::json::array();
  for (const auto& s : fit.fit.shapes)
    shapes.push_back({{"kernel", s.kernel},
                      {"bandwidth", round_sig(s.median_bandwidth, 4)},
                      {"offset", round_sig(s.median_offset, 4)},
                      {"r2", round_sig(s.r2, 4)}});
  return {{"mode", h.mode},
          {"shapes", shapes},
          {"best", fit.fit.best},
          {"asymmetry", round_sig(fit.asymmetry, 3)},
          {"positions", fit.positions},
          {"rows", fit.rows}};
}

nlohmann::json functions_json(const std::vector<explorer_function_info>& fs) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& f : fs)
    a.push_back({{"name", f.name},
                 {"description", f.description},
                 {"lo", f.lo},
                 {"hi", f.hi},
                 {"fixed_n", f.fixed_n}});
  return a;
}

nlohmann::json kernels_json(const std::vector<explorer_kernel_info>& ks) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& k : ks) {
    nlohmann::json params = nlohmann::json::array();
    for (const auto& p : k.params)
      params.push_back({{"key", p.key},
                        {"label", p.label},
                        {"value", p.value},
                        {"lo", p.lo},
                        {"hi", p.hi},
                        {"integer", p.integer},
                        {"log", p.log_scale}});
    a.push_back(
        {{"name", k.name}, {"description", k.doc}, {"compact", k.compact}, {"params", params}});
  }
  return a;
}

}  // namespace kf::cli
