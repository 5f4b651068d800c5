// The metadata fields that saved smoothers and saved densities share (model/saved_smoother.hpp,
// model/saved_density.hpp): read back with one message per field at fault, naming the file.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernelformer/model/checkpoint.hpp"

namespace kf::model::detail {

[[noreturn]] inline void saved_fail(const std::string& name, const std::string& what) {
  throw std::runtime_error(fmt::format("{}: {}", name, what));
}

// "h1,h2,…": positive finite numbers (17 digits as written).
inline std::vector<double> saved_bandwidths(const std::string& text, const std::string& name) {
  std::vector<double> h;
  std::size_t pos = 0;
  while (pos <= text.size() && !text.empty()) {
    const std::size_t end = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, end - pos);
    char* stop = nullptr;
    const double v = std::strtod(item.c_str(), &stop);
    if (item.empty() || *stop != '\0' || !(v > 0) || !std::isfinite(v))
      saved_fail(name, "metadata 'bandwidth' is '" + checkpoint_quote(text) +
                           "' (expected positive finite numbers, comma-separated)");
    h.push_back(v);
    pos = end + 1;
  }
  return h;
}

// x_names: a JSON array of d column names.
inline std::vector<std::string> saved_names(const std::string& text, const std::string& name,
                                            index d) {
  std::vector<std::string> out;
  try {
    out = nlohmann::json::parse(text).get<std::vector<std::string>>();
  } catch (const nlohmann::json::exception&) {
    saved_fail(name, "metadata 'x_names' is not a JSON array of column names");
  }
  if (static_cast<index>(out.size()) != d)
    saved_fail(
        name, fmt::format("metadata 'x_names' names {} columns; tensor 'x' has {}", out.size(), d));
  return out;
}

}  // namespace kf::model::detail
