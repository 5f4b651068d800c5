// kernelformer/kernels.hpp — every kernel K(q, k) the smoother knows, declared once.
//
// A kernel is a small struct: its formula as a function of ONE scalar argument s, the derivative
// of that formula w.r.t. s and w.r.t. its parameter, and a one-line doc. The argument is either
//   s = q·k            (kernel_arg::dot:    exp_dot, linear, polynomial), or
//   s = |q − k|²       (kernel_arg::sqdist: gaussian, laplacian, …, the compact kernels),
// so one tile of Q·Kᵀ (plus the squared norms) feeds every kernel. Feature-map kernels (elu1,
// rff, favor: feature_kernels.hpp) take s = φ(q)ᵀφ(k) (kernel_arg::features) and have a route
// of their own.
// "weight(s)" is log K for log-domain kernels (accumulated with a running max: no overflow) and
// K itself for the compact kernels (bounded by 1, summed directly, tiles outside the support
// skipped). Compact kernels are 0 beyond |q − k| > h; the support edge is included.
// The primitive takes a kernel_spec: one kernel, or the product of two kernels on two column
// blocks (content × position, Tsai et al. 2019).
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "kernelformer/feature_kernels.hpp"
#include "kernelformer/tensor.hpp"

namespace kf {

namespace detail {
template <class T>
constexpr T neg_inf = -std::numeric_limits<T>::infinity();
}  // namespace detail

// ---- distance kernels, log domain: weight = log K ----

// K = exp(−|q−k|² / (2h²)). 'rbf' is an alias; scikit-learn's gamma = 1 / (2h²).
struct kernel_gaussian {
  static constexpr std::string_view name = "gaussian";
  static constexpr std::string_view doc = "exp(-|q-k|^2 / (2 h^2)); alias rbf (gamma = 1/(2h^2))";
  static constexpr kernel_arg arg = kernel_arg::sqdist;
  static constexpr bool log_domain = true, compact = false;
  double bandwidth = 1.0;
  double param() const { return bandwidth; }
  void set_param(double h) { bandwidth = h; }
  template <class T>
  T weight(T s) const {
    return -s * T(0.5 / (bandwidth * bandwidth));
  }
  template <class T>
  T dweight(T) const {
    return T(-0.5 / (bandwidth * bandwidth));
  }
  double dweight_dparam(double s) const { return s / (bandwidth * bandwidth * bandwidth); }
};

// K = exp(−|q−k| / h). Not differentiable at q = k (gradient taken as 0 there).
struct kernel_laplacian {
  static constexpr std::string_view name = "laplacian";
  static constexpr std::string_view doc = "exp(-|q-k| / h)";
  static constexpr kernel_arg arg = kernel_arg::sqdist;
  static constexpr bool log_domain = true, compact = false;
  double bandwidth = 1.0;
  double param() const { return bandwidth; }
  void set_param(double h) { bandwidth = h; }
  template <class T>
  T weight(T s) const {
    return -std::sqrt(s) * T(1.0 / bandwidth);
  }
  template <class T>
  T dweight(T s) const {
    return s > T(0) ? T(-0.5 / bandwidth) / std::sqrt(s) : T(0);
  }
  double dweight_dparam(double s) const { return std::sqrt(s) / (bandwidth * bandwidth); }
};

// K = 1 / (1 + |q−k|²/h²).
struct kernel_cauchy {
  static constexpr std::string_view name = "cauchy";
  static constexpr std::string_view doc = "1 / (1 + |q-k|^2 / h^2)";
  static constexpr kernel_arg arg = kernel_arg::sqdist;
  static constexpr bool log_domain = true, compact = false;
  double bandwidth = 1.0;
  double param() const { return bandwidth; }
  void set_param(double h) { bandwidth = h; }
  template <class T>
  T weight(T s) const {
    return -std::log1p(s * T(1.0 / (bandwidth * bandwidth)));
  }
  template <class T>
  T dweight(T s) const {
    return T(-1) / (T(bandwidth * bandwidth) + s);
  }
  double dweight_dparam(double s) const {
    return 2 * s / (bandwidth * (bandwidth * bandwidth + s));
  }
};

// K = (1 + |q−k|² / (2αh²))^(−α); α → ∞ gives the gaussian.
struct kernel_rational_quadratic {
  static constexpr std::string_view name = "rational_quadratic";
  static constexpr std::string_view doc = "(1 + |q-k|^2 / (2 alpha h^2))^(-alpha), alpha=1 default";
  static constexpr kernel_arg arg = kernel_arg::sqdist;
  static constexpr bool log_domain = true, compact = false;
  double bandwidth = 1.0;
  double alpha = 1.0;
  double param() const { return bandwidth; }
  void set_param(double h) { bandwidth = h; }
  template <class T>
  T weight(T s) const {
    return T(-alpha) * std::log1p(s * T(1.0 / (2 * alpha * bandwidth * bandwidth)));
  }
  template <class T>
  T dweight(T s) const {
    return T(-alpha) / (T(2 * alpha * bandwidth * bandwidth) + s);
  }
  double dweight_dparam(double s) const {
    return 2 * alpha * s / (bandwidth * (2 * alpha * bandwidth * bandwidth + s));
  }
};

// K = exp(−2 sin²(π|q−k|/p) / h²): distance taken modulo the period p.
struct kernel_periodic {
  static constexpr std::string_view name = "periodic";
  static constexpr std::string_view doc = "exp(-2 sin^2(pi |q-k| / p) / h^2), period p (2 pi)";
  static constexpr kernel_arg arg = kernel_arg::sqdist;
  static constexpr bool log_domain = true, compact = false;
  double bandwidth = 1.0;
  double period = 2 * std::numbers::pi;
  double param() const { return bandwidth; }
  void set_param(double h) { bandwidth = h; }
  template <class T>
  T weight(T s) const {
    const T a = std::sin(T(std::numbers::pi / period) * std::sqrt(s));
    return T(-2.0 / (bandwidth * bandwidth)) * a * a;
  }
  template <class T>
  T dweight(T s) const {  // d/ds of −2 sin²(πr/p)/h² with r = √s; smooth at r = 0
    const T r = std::sqrt(s);
    const T c = T(std::numbers::pi / period);
    if (r * c < T(1e-4)) return T(-2.0 / (bandwidth * bandwidth)) * c * c;
    return T(-1.0 / (bandwidth * bandwidth)) * c * std::sin(T(2) * c * r) / r;
  }
  double dweight_dparam(double s) const {
    const double a = std::sin(std::numbers::pi * std::sqrt(s) / period);
    return 4 * a * a / (bandwidth * bandwidth * bandwidth);
  }
};

// K = periodic(p, h) × gaussian(h): a periodic pattern that fades with distance.
struct kernel_locally_periodic {
  static constexpr std::string_view name = "locally_periodic";
  static constexpr std::string_view doc = "periodic(p, h) * gaussian(h)";
  static constexpr kernel_arg arg = kernel_arg::sqdist;
  static constexpr bool log_domain = true, compact = false;
  double bandwidth = 1.0;
  double period = 2 * std::numbers::pi;
  double param() const { return bandwidth; }
  void set_param(double h) { bandwidth = h; }
  kernel_periodic per() const { return {bandwidth, period}; }
  kernel_gaussian gau() const { return {bandwidth}; }
  template <class T>
  T weight(T s) const {
    return per().weight(s) + gau().weight(s);
  }
  template <class T>
  T dweight(T s) const {
    return per().dweight(s) + gau().dweight(s);
  }
  double dweight_dparam(double s) const {
    return per().dweight_dparam(s) + gau().dweight_dparam(s);
  }
};

// ---- compact distance kernels, direct domain: weight = K ∈ [0, 1], 0 where |q−k| > h ----

namespace detail {
// t = 1 − |q−k|²/h², negative outside the support.
inline double compact_t(double s, double h) { return 1.0 - s / (h * h); }
}  // namespace detail

#define KF_COMPACT_KERNEL_COMMON()                          \
  static constexpr kernel_arg arg = kernel_arg::sqdist;     \
  static constexpr bool log_domain = false, compact = true; \
  double bandwidth = 1.0;                                   \
  double param() const { return bandwidth; }                \
  void set_param(double h) { bandwidth = h; }               \
  template <class T>                                        \
  T t_of(T s) const {                                       \
    return T(1) - s * T(1.0 / (bandwidth * bandwidth));     \
  }

// K = 1 for |q−k| ≤ h.
struct kernel_boxcar {
  static constexpr std::string_view name = "boxcar";
  static constexpr std::string_view doc = "1 if |q-k| <= h else 0 (compact)";
  KF_COMPACT_KERNEL_COMMON()
  template <class T>
  T weight(T s) const {
    return t_of(s) >= T(0) ? T(1) : T(0);
  }
  template <class T>
  T dweight(T) const {
    return T(0);
  }
  double dweight_dparam(double) const { return 0.0; }
};

// K = 1 − u², u = |q−k|/h.
struct kernel_epanechnikov {
  static constexpr std::string_view name = "epanechnikov";
  static constexpr std::string_view doc = "1 - u^2 for u = |q-k|/h <= 1 (compact)";
  KF_COMPACT_KERNEL_COMMON()
  template <class T>
  T weight(T s) const {
    return std::max(t_of(s), T(0));
  }
  template <class T>
  T dweight(T s) const {
    return t_of(s) > T(0) ? T(-1.0 / (bandwidth * bandwidth)) : T(0);
  }
  double dweight_dparam(double s) const {
    return detail::compact_t(s, bandwidth) > 0 ? 2 * s / (bandwidth * bandwidth * bandwidth) : 0;
  }
};

// K = (1 − u²)² (quartic).
struct kernel_biweight {
  static constexpr std::string_view name = "biweight";
  static constexpr std::string_view doc = "(1 - u^2)^2 for u <= 1 (quartic, compact)";
  KF_COMPACT_KERNEL_COMMON()
  template <class T>
  T weight(T s) const {
    const T t = std::max(t_of(s), T(0));
    return t * t;
  }
  template <class T>
  T dweight(T s) const {
    return T(-2.0 / (bandwidth * bandwidth)) * std::max(t_of(s), T(0));
  }
  double dweight_dparam(double s) const {
    const double t = std::max(detail::compact_t(s, bandwidth), 0.0);
    return 4 * t * s / (bandwidth * bandwidth * bandwidth);
  }
};

// K = (1 − u²)³.
struct kernel_triweight {
  static constexpr std::string_view name = "triweight";
  static constexpr std::string_view doc = "(1 - u^2)^3 for u <= 1 (compact)";
  KF_COMPACT_KERNEL_COMMON()
  template <class T>
  T weight(T s) const {
    const T t = std::max(t_of(s), T(0));
    return t * t * t;
  }
  template <class T>
  T dweight(T s) const {
    const T t = std::max(t_of(s), T(0));
    return T(-3.0 / (bandwidth * bandwidth)) * t * t;
  }
  double dweight_dparam(double s) const {
    const double t = std::max(detail::compact_t(s, bandwidth), 0.0);
    return 6 * t * t * s / (bandwidth * bandwidth * bandwidth);
  }
};

// K = (1 − u³)³.
struct kernel_tricube {
  static constexpr std::string_view name = "tricube";
  static constexpr std::string_view doc = "(1 - u^3)^3 for u <= 1 (compact; LOESS)";
  KF_COMPACT_KERNEL_COMMON()
  template <class T>
  T weight(T s) const {
    const T u = std::sqrt(s) * T(1.0 / bandwidth);
    if (!(u <= T(1))) return T(0);
    const T a = T(1) - u * u * u;
    return a * a * a;
  }
  template <class T>
  T dweight(T s) const {  // dK/du · du/ds with du/ds = 1/(2h²u): −9u(1−u³)²/(2h²)
    const T u = std::sqrt(s) * T(1.0 / bandwidth);
    if (!(u < T(1))) return T(0);
    const T a = T(1) - u * u * u;
    return T(-4.5 / (bandwidth * bandwidth)) * u * a * a;
  }
  double dweight_dparam(double s) const {
    const double u = std::sqrt(s) / bandwidth;
    if (!(u < 1)) return 0;
    const double a = 1 - u * u * u;
    return 9 * u * u * u * a * a / bandwidth;
  }
};

// K = cos(πu/2).
struct kernel_cosine {
  static constexpr std::string_view name = "cosine";
  static constexpr std::string_view doc = "cos(pi u / 2) for u <= 1 (compact)";
  KF_COMPACT_KERNEL_COMMON()
  template <class T>
  T weight(T s) const {
    const T u = std::sqrt(s) * T(1.0 / bandwidth);
    return u <= T(1) ? std::cos(T(std::numbers::pi / 2) * u) : T(0);
  }
  template <class T>
  T dweight(T s) const {  // −(π/2) sin(πu/2) / (2h²u), → −π²/(8h²) at u = 0
    const T u = std::sqrt(s) * T(1.0 / bandwidth);
    if (!(u < T(1))) return T(0);
    const T c = T(std::numbers::pi / 2);
    if (u < T(1e-4)) return -c * c * T(0.5 / (bandwidth * bandwidth));
    return -c * std::sin(c * u) * T(0.5 / (bandwidth * bandwidth)) / u;
  }
  double dweight_dparam(double s) const {
    const double u = std::sqrt(s) / bandwidth;
    if (!(u < 1)) return 0;
    return std::numbers::pi / 2 * std::sin(std::numbers::pi / 2 * u) * u / bandwidth;
  }
};
#undef KF_COMPACT_KERNEL_COMMON

// K = 1 everywhere: the masked mean. With a top-k mask ranked by distance it is KNN.
struct kernel_uniform {
  static constexpr std::string_view name = "uniform";
  static constexpr std::string_view doc = "1 for every key: the (masked) mean; with topk = KNN";
  static constexpr kernel_arg arg = kernel_arg::sqdist;
  static constexpr bool log_domain = false, compact = false;
  double param() const { return 0.0; }
  void set_param(double) {}
  template <class T>
  T weight(T) const {
    return T(1);
  }
  template <class T>
  T dweight(T) const {
    return T(0);
  }
  double dweight_dparam(double) const { return 0.0; }
};

// K = 1 / |q−k|: KNN's "distance" weights (scikit-learn weights='distance'). A key at distance 0
// gets weight 1/√(tiny) (1e150 in double, 1e19 in float), so exact matches take all the weight, as
// in scikit-learn. No parameter. Meant for use with a top-k mask.
struct kernel_inverse_distance {
  static constexpr std::string_view name = "inverse_distance";
  static constexpr std::string_view doc = "1 / |q-k| (KNN distance weights; exact matches win)";
  static constexpr kernel_arg arg = kernel_arg::sqdist;
  static constexpr bool log_domain = true, compact = false;
  double param() const { return 0.0; }
  void set_param(double) {}
  template <class T>
  static constexpr T tiny() {
    return std::is_same_v<T, float> ? T(1e-38) : T(1e-300);
  }
  template <class T>
  T weight(T s) const {
    return T(-0.5) * std::log(std::max(s, tiny<T>()));
  }
  template <class T>
  T dweight(T s) const {
    return s > tiny<T>() ? T(-0.5) / s : T(0);
  }
  double dweight_dparam(double) const { return 0.0; }
};

// ---- dot kernels, log domain ----

// K = exp(q·k / T): the attention kernel. temperature 0 means "auto": √d.
struct kernel_exp_dot {
  static constexpr std::string_view name = "exp_dot";
  static constexpr std::string_view doc = "exp(q.k / T), T = sqrt(d) by default: softmax attention";
  static constexpr kernel_arg arg = kernel_arg::dot;
  static constexpr bool log_domain = true, compact = false;
  double temperature = 0.0;
  double param() const { return temperature; }
  void set_param(double t) { temperature = t; }
  template <class T>
  T weight(T s) const {
    return s * T(1.0 / temperature);
  }
  template <class T>
  T dweight(T) const {
    return T(1.0 / temperature);
  }
  double dweight_dparam(double s) const { return -s / (temperature * temperature); }
};

// K = (q·k/T + c)^p. Negative bases are NOT weights: for odd p the kernel is the positive part
// max(0, q·k/T + c)^p (documented normalization: negative similarities get weight 0); for even p
// the power is non-negative already. A row with no positive weight is an empty row.
struct kernel_polynomial {
  static constexpr std::string_view name = "polynomial";
  static constexpr std::string_view doc =
      "(q.k / T + c)^p, p=2 c=1 default; odd p: positive part (negative -> weight 0)";
  static constexpr kernel_arg arg = kernel_arg::dot;
  static constexpr bool log_domain = true, compact = false;
  double temperature = 0.0;
  double offset = 1.0;
  int degree = 2;
  double param() const { return temperature; }
  void set_param(double t) { temperature = t; }
  template <class T>
  T base(T s) const {
    return s * T(1.0 / temperature) + T(offset);
  }
  template <class T>
  T weight(T s) const {
    const T b = base(s);
    if (degree % 2 == 1 ? !(b > T(0)) : b == T(0)) return detail::neg_inf<T>;
    return T(degree) * std::log(std::abs(b));
  }
  template <class T>
  T dweight(T s) const {
    const T b = base(s);
    if (degree % 2 == 1 ? !(b > T(0)) : b == T(0)) return T(0);
    return T(degree / temperature) / b;
  }
  double dweight_dparam(double s) const {
    const double b = s / temperature + offset;
    if (degree % 2 == 1 ? !(b > 0) : b == 0) return 0;
    return -degree * s / (temperature * temperature * b);
  }
};

// K = max(0, q·k/T + c): the linear kernel of "attention is kernel trick reloaded" (seed 003
// §3.3), made a weight by taking its positive part; c = 0 by default.
struct kernel_linear {
  static constexpr std::string_view name = "linear";
  static constexpr std::string_view doc = "max(0, q.k / T + c), c=0 default: positive part";
  static constexpr kernel_arg arg = kernel_arg::dot;
  static constexpr bool log_domain = true, compact = false;
  double temperature = 0.0;
  double offset = 0.0;
  double param() const { return temperature; }
  void set_param(double t) { temperature = t; }
  kernel_polynomial poly() const { return {temperature, offset, 1}; }
  template <class T>
  T weight(T s) const {
    return poly().weight(s);
  }
  template <class T>
  T dweight(T s) const {
    return poly().dweight(s);
  }
  double dweight_dparam(double s) const { return poly().dweight_dparam(s); }
};

// One kernel chosen at run time. Hot loops visit it once per tile, never per element.
using any_kernel =
    std::variant<kernel_gaussian, kernel_laplacian, kernel_cauchy, kernel_rational_quadratic,
                 kernel_periodic, kernel_locally_periodic, kernel_boxcar, kernel_epanechnikov,
                 kernel_biweight, kernel_triweight, kernel_tricube, kernel_cosine, kernel_uniform,
                 kernel_inverse_distance, kernel_exp_dot, kernel_linear, kernel_polynomial,
                 kernel_elu1, kernel_rff, kernel_favor>;

// What the smoothing primitive takes: one kernel, or the product of two kernels on two column
// blocks of q and k — `first` on columns [0, split), `second` on [split, d) — e.g. content
// exp_dot × positional gaussian. A product accumulates in the log domain.
struct kernel_spec {
  any_kernel first = kernel_exp_dot{};
  std::optional<any_kernel> second;
  index split = 0;

  kernel_spec() = default;
  template <class K>
  requires std::is_constructible_v<any_kernel, K> kernel_spec(K k)
      : first(std::move(k)) {}  // NOLINT(google-explicit-constructor)
  static kernel_spec product(any_kernel content, any_kernel position, index split);
  bool is_product() const { return second.has_value(); }
};

// ---- run-time queries on a kernel ----
std::string_view kernel_name(const any_kernel& k);
kernel_arg kernel_arg_of(const any_kernel& k);
bool kernel_log_domain(const any_kernel& k);
bool kernel_compact(const any_kernel& k);
bool kernel_is_feature_map(const any_kernel& k);  // elu1, rff, favor (kernel_arg::features)
// The exact kernel a random-feature kernel approximates (rff(h) → gaussian(h), favor(T) →
// exp_dot(T)); nullopt for the others (elu1 is exact: its weights are φ(q)ᵀφ(k) by definition).
std::optional<any_kernel> kernel_exact_counterpart(const any_kernel& k);
// log K at argument s (q·k or |q − k|²) whatever the kernel's domain; −inf where K ≤ 0 (the
// positive part, as the smoother uses it). For plots and diagnostics, not the hot path.
double kernel_log_weight(const any_kernel& k, double s);
double kernel_param(const any_kernel& k);            // bandwidth (distance) or temperature (dot)
void kernel_set_param(any_kernel& k, double value);  // sets that parameter
std::string kernel_describe(const kernel_spec& k);   // "gaussian(h=0.5)", "exp_dot(T=8)*…"

// redraw=1 on a random-feature kernel (rff, favor) asks the attention layers for fresh features
// at every training step (Performer's redraw). kernel_redraws says whether k asks for it;
// kernel_with_draw is the kernel one step uses: k with its features drawn from `draw` (0: from
// its own seed=S, as evaluation and generation use it) and redraw cleared, since the primitive
// (one smoothing call) refuses redraw=1.
bool kernel_redraws(const kernel_spec& k);
kernel_spec kernel_with_draw(const kernel_spec& k, std::uint64_t draw);

// Resolves "auto" parameters for feature dimension d (exp_dot/linear/polynomial T = √(d of
// their block)) and checks every parameter; throws std::invalid_argument naming the kernel and
// the parameter. `for_float` also requires the kernel's coefficients to be finite in float32.
kernel_spec kernel_resolve(const kernel_spec& k, index d, bool for_float);

// Parses "NAME[:key=value,...]" or a product "A[:...]*B[:...]" (split is set separately).
// Keys: h|bandwidth, t|temperature, p|period, alpha, degree, c|offset, and for random-feature
// kernels features|r, seed, redraw. Aliases: rbf = gaussian,
// softmax|attention = exp_dot, quartic = biweight, box = boxcar. Throws std::invalid_argument
// listing the known names on an unknown one.
kernel_spec kernel_parse(std::string_view text);

// The inverse of kernel_parse: "gaussian:h=0.5", "periodic:h=1,period=6.28", "exp_dot" (auto T),
// "exp_dot:t=2*gaussian:h=1" (the split is not part of the text).
std::string kernel_format(const kernel_spec& k);

// A comma-separated list of kernels, where an item "key=value" without a name continues the
// previous kernel's parameters: "exp_dot,favor:features=128,seed=3,gaussian:h=2" is three kernels.
std::vector<kernel_spec> kernel_parse_list(std::string_view text);

struct kernel_info {
  std::string_view name, doc;
  kernel_arg arg;
  bool compact;
};
std::vector<kernel_info> kernel_catalog();  // every kernel, in any_kernel order

}  // namespace kf
