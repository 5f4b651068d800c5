// Run-time handling of kernels: names, parsing, parameter checks. The formulas themselves are
// in the header, next to their derivatives.
#include "kernelformer/kernels.hpp"

#include "kernelformer/suggest.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace kf {
namespace {

// Calls f with a default-constructed value of every any_kernel alternative, in variant order:
// the name lookup, the catalog and the error messages all walk the one list, so adding a kernel
// to any_kernel is the whole registration.
template <class F, std::size_t... I>
void for_each_alternative(F&& f, std::index_sequence<I...>) {
  (f(std::variant_alternative_t<I, any_kernel>{}), ...);
}
template <class F>
void for_each_kernel_type(F&& f) {
  for_each_alternative(std::forward<F>(f),
                       std::make_index_sequence<std::variant_size_v<any_kernel>>{});
}

// Largest r accepted for rff and favor (checked at parse and again at resolve): the feature
// route's memory and work grow linearly with r.
constexpr index kMaxFeatures = 65536;

// Aliases → the struct's name (kernels.hpp lists them); any other text is returned unchanged.
std::string_view canonical_name(std::string_view n) {
  if (n == "rbf") return "gaussian";
  if (n == "softmax" || n == "attention") return "exp_dot";
  if (n == "quartic") return "biweight";
  if (n == "box") return "boxcar";
  return n;
}

// For the unknown-name message: every name in variant order, then the aliases.
std::string known_names() {
  std::string s;
  for_each_kernel_type([&](auto k) {
    if (!s.empty()) s += ", ";
    s += decltype(k)::name;
  });
  return s + " (aliases: rbf, softmax, attention, quartic, box)";
}

// The whole text must be one number (from_chars: no locale, no leading spaces, no trailing
// text); throws std::invalid_argument naming the parameter otherwise.
double parse_number(std::string_view text, std::string_view what) {
  double v = 0;
  const auto* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || p != end)
    throw std::invalid_argument(
        fmt::format("kernel parameter {}: '{}' is not a number", what, text));
  return v;
}

// features|r, seed, redraw of a random-feature kernel: integers (redraw 0 or 1).
void set_feature_key(index& features, std::uint64_t& seed, bool& redraw, std::string_view key,
                     double value) {
  if (value != std::floor(value) || value < 0)
    throw std::invalid_argument(
        fmt::format("kernel parameter {} = {} must be a non-negative integer", key, value));
  // Integers reach here as doubles (parse_number), hence the exactness bound on the seed.
  if (key == "seed") {
    if (value >= 9007199254740992.0)  // 2^53: larger integers are not exact in a double
      throw std::invalid_argument(
          fmt::format("kernel parameter seed = {} must be below 2^53", value));
    seed = static_cast<std::uint64_t>(value);
  } else if (key == "redraw") {
    if (value > 1) throw std::invalid_argument("kernel parameter redraw must be 0 or 1");
    redraw = value == 1;
  } else {
    if (value < 1 || value > static_cast<double>(kMaxFeatures))
      throw std::invalid_argument(
          fmt::format("kernel parameter features = {} must be in 1..{}", value, kMaxFeatures));
    features = static_cast<index>(value);
  }
}

// Sets one key=value of kernel_parse's text on k; throws std::invalid_argument naming the kernel
// when it has no such parameter. Values are range-checked later, in kernel_resolve.
void set_key(any_kernel& k, std::string_view key, double value) {
  const std::string_view name = kernel_name(k);
  auto fail = [&] {
    throw std::invalid_argument(
        fmt::format("kernel {} has no parameter '{}' (h/bandwidth for distance kernels, "
                    "t/temperature for dot kernels, period, alpha, degree, offset; features, "
                    "seed, redraw for rff and favor)",
                    name, key));
  };
  auto* rff = std::get_if<kernel_rff>(&k);
  auto* favor = std::get_if<kernel_favor>(&k);
  if (key == "h" || key == "bandwidth") {
    // param() is 0 for the parameterless distance kernels (uniform, inverse_distance); rff is a
    // features kernel that still takes a bandwidth.
    if ((kernel_arg_of(k) != kernel_arg::sqdist || kernel_param(k) == 0.0) && !rff) fail();
    kernel_set_param(k, value);
  } else if (key == "t" || key == "temperature") {
    if (kernel_arg_of(k) != kernel_arg::dot && !favor) fail();
    kernel_set_param(k, value);
  } else if (key == "features" || key == "r" || key == "seed" || key == "redraw") {
    if (!rff && !favor) fail();
    set_feature_key(rff ? rff->features : favor->features, rff ? rff->seed : favor->seed,
                    rff ? rff->redraw : favor->redraw, key, value);
  } else if (key == "p" || key == "period") {
    if (auto* a = std::get_if<kernel_periodic>(&k))
      a->period = value;
    else if (auto* b = std::get_if<kernel_locally_periodic>(&k))
      b->period = value;
    else
      fail();
  } else if (key == "alpha") {
    if (auto* a = std::get_if<kernel_rational_quadratic>(&k))
      a->alpha = value;
    else
      fail();
  } else if (key == "degree") {
    auto* a = std::get_if<kernel_polynomial>(&k);
    if (!a) fail();
    if (value != std::floor(value) || value < 1 || value > 64)
      throw std::invalid_argument(
          fmt::format("polynomial degree must be an integer in 1..64, got {}", value));
    a->degree = static_cast<int>(value);
  } else if (key == "c" || key == "offset") {
    if (auto* a = std::get_if<kernel_polynomial>(&k))
      a->offset = value;
    else if (auto* b = std::get_if<kernel_linear>(&k))
      b->offset = value;
    else
      fail();
  } else {
    fail();
  }
}

// "NAME" or "NAME:key=value,key=value" → that kernel with the keys applied in order, the rest at
// their defaults; throws std::invalid_argument listing the known names on an unknown one.
any_kernel parse_single(std::string_view text) {
  const auto colon = text.find(':');
  const std::string_view name = canonical_name(text.substr(0, colon));
  std::optional<any_kernel> found;
  for_each_kernel_type([&](auto k) {
    if (decltype(k)::name == name) found = k;
  });
  if (!found) {
    std::vector<std::string> names = {"rbf", "softmax", "attention", "quartic", "box"};
    for_each_kernel_type([&](auto k) { names.emplace_back(decltype(k)::name); });
    const std::string near = suggest_name(text.substr(0, colon), names);
    throw std::invalid_argument(fmt::format(
        "unknown kernel '{}'{}; known kernels: {}", text.substr(0, colon),
        near.empty() ? std::string() : fmt::format(" (did you mean '{}'?)", near), known_names()));
  }
  if (colon == std::string_view::npos) return *found;
  std::string_view rest = text.substr(colon + 1);
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    const auto eq = item.find('=');
    if (eq == std::string_view::npos)
      throw std::invalid_argument(
          fmt::format("kernel parameter '{}' must be key=value (e.g. gaussian:h=0.5)", item));
    set_key(*found, item.substr(0, eq), parse_number(item.substr(eq + 1), item.substr(0, eq)));
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
  }
  return *found;
}

// Parameters enter as divisors (1/h², 1/T): zero, negative, NaN and ±inf are all refused.
void check_positive(std::string_view kname, std::string_view pname, double v) {
  if (!(std::isfinite(v) && v > 0))
    throw std::invalid_argument(
        fmt::format("kernel {}: {} = {} must be positive and finite", kname, pname, v));
}

// Coefficients such as 1/h² and h² must be representable in float32 for a float computation.
void check_float_range(std::string_view kname, std::string_view pname, double v) {
  const float a = static_cast<float>(v * v), b = static_cast<float>(1.0 / (v * v));
  if (!std::isfinite(a) || !std::isfinite(b) || a == 0.0f || b == 0.0f)
    throw std::invalid_argument(fmt::format(
        "kernel {}: {} = {} is outside the float32 range (about 5.4e-20..1.8e19: its square "
        "and inverse square must be float32 numbers); use float64 data",
        kname, pname, v));
}

// r of a random-feature kernel; 0 for every other kernel (elu1's r = d is not a parameter).
index feature_count(const any_kernel& k) {
  if (const auto* f = std::get_if<kernel_rff>(&k)) return f->features;
  if (const auto* f = std::get_if<kernel_favor>(&k)) return f->features;
  return 0;
}

// One kernel at its block's width d: fills "auto" (0) temperatures with √d and checks every
// parameter; throws std::invalid_argument naming kernel and parameter. for_float adds the
// float32 range check of the coefficients (1/h², h², 1/T², T²).
any_kernel resolve_one(any_kernel k, index d, bool for_float) {
  const std::string_view name = kernel_name(k);
  if (auto* f = std::get_if<kernel_favor>(&k)) {
    if (f->temperature == 0.0) f->temperature = std::sqrt(static_cast<double>(d));
    check_positive(name, "temperature", f->temperature);
    if (for_float) check_float_range(name, "temperature", f->temperature);
  }
  if (const auto* f = std::get_if<kernel_rff>(&k)) {
    check_positive(name, "bandwidth", f->bandwidth);
    if (for_float) check_float_range(name, "bandwidth", f->bandwidth);
    if (f->features % 2 != 0)
      throw std::invalid_argument(
          fmt::format("kernel rff: features = {} must be even (a cosine and a sine per frequency)",
                      f->features));
  }
  if (kernel_arg_of(k) == kernel_arg::features) {
    const index r = feature_count(k);
    const auto* rf = std::get_if<kernel_rff>(&k);
    const auto* fv = std::get_if<kernel_favor>(&k);
    if ((rf && rf->redraw) || (fv && fv->redraw))
      throw std::invalid_argument(fmt::format(
          "kernel {}: redraw=1 (fresh features every training step) applies to attention "
          "layers in training (kf train, kf lm, kf seq2seq); one smoothing call uses seed=S",
          name));
    // Again here: a kernel_rff{} built in code never passed through set_feature_key.
    if (name != "elu1" && (r < 1 || r > kMaxFeatures))
      throw std::invalid_argument(
          fmt::format("kernel {}: features = {} must be in 1..{}", name, r, kMaxFeatures));
    return k;
  }
  // Dot kernels: T = √d as scaled dot-product attention; the parameterless kernels skip the check.
  if (kernel_arg_of(k) == kernel_arg::dot) {
    if (kernel_param(k) == 0.0) kernel_set_param(k, std::sqrt(static_cast<double>(d)));
    check_positive(name, "temperature", kernel_param(k));
    if (for_float) check_float_range(name, "temperature", kernel_param(k));
  } else if (name != "uniform" && name != "inverse_distance") {
    check_positive(name, "bandwidth", kernel_param(k));
    if (for_float) check_float_range(name, "bandwidth", kernel_param(k));
  }
  if (const auto* p = std::get_if<kernel_periodic>(&k)) check_positive(name, "period", p->period);
  if (const auto* p = std::get_if<kernel_locally_periodic>(&k))
    check_positive(name, "period", p->period);
  if (const auto* p = std::get_if<kernel_rational_quadratic>(&k))
    check_positive(name, "alpha", p->alpha);
  if (const auto* p = std::get_if<kernel_polynomial>(&k)) {
    if (p->degree < 1) throw std::invalid_argument("kernel polynomial: degree must be >= 1");
    if (!std::isfinite(p->offset))
      throw std::invalid_argument("kernel polynomial: offset must be finite");
  }
  if (const auto* p = std::get_if<kernel_linear>(&k); p && !std::isfinite(p->offset))
    throw std::invalid_argument("kernel linear: offset must be finite");
  return k;
}

}  // namespace

// No checks here: kernel_resolve checks the split against d and refuses feature-map factors.
kernel_spec kernel_spec::product(any_kernel content, any_kernel position, index split) {
  kernel_spec s(std::move(content));
  s.second = std::move(position);
  s.split = split;
  return s;
}

std::string_view kernel_name(const any_kernel& k) {
  return std::visit([](const auto& kk) { return std::decay_t<decltype(kk)>::name; }, k);
}
kernel_arg kernel_arg_of(const any_kernel& k) {
  return std::visit([](const auto& kk) { return std::decay_t<decltype(kk)>::arg; }, k);
}
// Direct-domain kernels (the compact ones, uniform, the feature maps) return K itself from
// weight(): take its log here, with the positive part's −inf where K ≤ 0.
double kernel_log_weight(const any_kernel& k, double s) {
  return std::visit(
      [s](const auto& kk) {
        const double w = double(kk.template weight<double>(s));
        if constexpr (std::decay_t<decltype(kk)>::log_domain)
          return w;
        else
          return w > 0 ? std::log(w) : -std::numeric_limits<double>::infinity();
      },
      k);
}

bool kernel_log_domain(const any_kernel& k) {
  return std::visit([](const auto& kk) { return std::decay_t<decltype(kk)>::log_domain; }, k);
}
bool kernel_compact(const any_kernel& k) {
  return std::visit([](const auto& kk) { return std::decay_t<decltype(kk)>::compact; }, k);
}
bool kernel_is_feature_map(const any_kernel& k) { return kernel_arg_of(k) == kernel_arg::features; }
std::optional<any_kernel> kernel_exact_counterpart(const any_kernel& k) {
  if (const auto* f = std::get_if<kernel_rff>(&k)) return kernel_gaussian{f->bandwidth};
  if (const auto* f = std::get_if<kernel_favor>(&k)) return kernel_exp_dot{f->temperature};
  return std::nullopt;
}
bool kernel_redraws(const kernel_spec& k) {
  if (k.is_product()) return false;  // feature-map kernels are never a product's factor
  if (const auto* f = std::get_if<kernel_rff>(&k.first)) return f->redraw;
  if (const auto* f = std::get_if<kernel_favor>(&k.first)) return f->redraw;
  return false;
}
kernel_spec kernel_with_draw(const kernel_spec& k, std::uint64_t draw) {
  kernel_spec out = k;
  const auto set = [draw](auto& f) {
    // The step's seed: splitmix64 of seed + golden-ratio · draw, a bijection of draw for a
    // given seed, so distinct draws give distinct features.
    if (draw != 0) {
      std::uint64_t z = f.seed + 0x9e3779b97f4a7c15ULL * draw;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      f.seed = z ^ (z >> 31);
    }
    f.redraw = false;
  };
  if (auto* f = std::get_if<kernel_rff>(&out.first)) set(*f);
  if (auto* f = std::get_if<kernel_favor>(&out.first)) set(*f);
  return out;
}
double kernel_param(const any_kernel& k) {
  return std::visit([](const auto& kk) { return kk.param(); }, k);
}
void kernel_set_param(any_kernel& k, double value) {
  std::visit([&](auto& kk) { kk.set_param(value); }, k);
}

// A short human label for logs and messages ("gaussian(h=0.5)", "rff(h=1,r=256)"); not parseable
// (kernel_format is the round-trip text). "auto" stands for an unresolved temperature of 0.
std::string kernel_describe(const kernel_spec& k) {
  auto one = [](const any_kernel& a) {
    const std::string_view name = kernel_name(a);
    if (name == "uniform" || name == "inverse_distance" || name == "elu1") return std::string(name);
    const index r = feature_count(a);
    if (r > 0) {
      const char* p = std::holds_alternative<kernel_favor>(a) ? "T" : "h";
      const std::string pv = kernel_param(a) == 0.0 ? "auto" : fmt::format("{:g}", kernel_param(a));
      return fmt::format("{}({}={},r={})", name, p, pv, r);
    }
    const char* p = kernel_arg_of(a) == kernel_arg::dot ? "T" : "h";
    if (kernel_param(a) == 0.0) return fmt::format("{}({}=auto)", name, p);
    return fmt::format("{}({}={:g})", name, p, kernel_param(a));
  };
  if (!k.is_product()) return one(k.first);
  return fmt::format("{}*{}[split {}]", one(k.first), one(*k.second), k.split);
}

// %.17g keeps every double exact, so kernel_parse(kernel_format(k)) gives k back (a checkpoint
// stores the kernel as this text); defaults are written too, except a zero parameter and seed.
std::string kernel_format(const kernel_spec& k) {
  auto one = [](const any_kernel& a) {
    std::string s(kernel_name(a));
    std::vector<std::string> kv;
    const bool t_param =
        kernel_arg_of(a) == kernel_arg::dot || std::holds_alternative<kernel_favor>(a);
    if (kernel_param(a) != 0.0)
      kv.push_back(fmt::format("{}={:.17g}", t_param ? "t" : "h", kernel_param(a)));
    if (feature_count(a) > 0) {
      const auto* rf = std::get_if<kernel_rff>(&a);
      const auto* fv = std::get_if<kernel_favor>(&a);
      kv.push_back(fmt::format("features={}", feature_count(a)));
      const std::uint64_t seed = rf ? rf->seed : fv->seed;
      if (seed != 0) kv.push_back(fmt::format("seed={}", seed));
      if (rf ? rf->redraw : fv->redraw) kv.push_back("redraw=1");
    }
    if (const auto* p = std::get_if<kernel_periodic>(&a))
      kv.push_back(fmt::format("period={:.17g}", p->period));
    if (const auto* p = std::get_if<kernel_locally_periodic>(&a))
      kv.push_back(fmt::format("period={:.17g}", p->period));
    if (const auto* p = std::get_if<kernel_rational_quadratic>(&a))
      kv.push_back(fmt::format("alpha={:.17g}", p->alpha));
    if (const auto* p = std::get_if<kernel_polynomial>(&a)) {
      kv.push_back(fmt::format("degree={}", p->degree));
      kv.push_back(fmt::format("c={:.17g}", p->offset));
    }
    if (const auto* p = std::get_if<kernel_linear>(&a))
      kv.push_back(fmt::format("c={:.17g}", p->offset));
    for (std::size_t i = 0; i < kv.size(); ++i) s += (i == 0 ? ":" : ",") + kv[i];
    return s;
  };
  return k.is_product() ? one(k.first) + "*" + one(*k.second) : one(k.first);
}

// A product's factors see their own column blocks: [0, split) and [split, d), so an auto T is
// √ of the block's width, not of d.
kernel_spec kernel_resolve(const kernel_spec& k, index d, bool for_float) {
  if (!k.is_product()) return kernel_spec(resolve_one(k.first, d, for_float));
  for (const any_kernel* a : {&k.first, &*k.second})
    if (kernel_is_feature_map(*a))
      throw std::invalid_argument(fmt::format(
          "kernel {}: feature-map kernels are not offered as a factor of a product kernel",
          kernel_name(*a)));
  if (k.split <= 0 || k.split >= d)
    throw std::invalid_argument(fmt::format(
        "product kernel: split = {} must leave columns on both sides (1..{} for d = {})", k.split,
        d - 1, d));
  return kernel_spec::product(resolve_one(k.first, k.split, for_float),
                              resolve_one(*k.second, d - k.split, for_float), k.split);
}

// The split of a product is not part of the text: it is left 0 here and set by the caller.
kernel_spec kernel_parse(std::string_view text) {
  const auto star = text.find('*');
  if (star == std::string_view::npos) return kernel_spec(parse_single(text));
  if (text.find('*', star + 1) != std::string_view::npos)
    throw std::invalid_argument("a product kernel has exactly two factors: A*B");
  return kernel_spec::product(parse_single(text.substr(0, star)),
                              parse_single(text.substr(star + 1)), 0);
}

// An item with '=' and no ':' continues the previous kernel: "favor:features=128,seed=3" stays
// one kernel although it contains a comma.
std::vector<kernel_spec> kernel_parse_list(std::string_view text) {
  std::vector<std::string> items;
  while (!text.empty()) {
    const auto comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    const bool continues = item.find('=') != std::string_view::npos &&
                           item.find(':') == std::string_view::npos && !items.empty();
    if (continues) {
      // Appended in two steps: GCC 12 at -O3 flags `"," + std::string(item)` with a false
      // -Wrestrict (GCC bug 105329), an error in the isa-v4 preset.
      items.back() += ',';
      items.back().append(item);
    } else {
      items.emplace_back(item);
    }
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
  }
  std::vector<kernel_spec> out;
  for (const auto& it : items) out.push_back(kernel_parse(it));
  return out;
}

// In any_kernel order (for_each_kernel_type); the explorer lists its kernels from it.
std::vector<kernel_info> kernel_catalog() {
  std::vector<kernel_info> out;
  for_each_kernel_type([&](auto k) {
    using K = decltype(k);
    out.push_back({K::name, K::doc, K::arg, K::compact});
  });
  return out;
}

}  // namespace kf
