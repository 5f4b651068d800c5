// Shared by the fuzz targets: what a parser may do with any input. It may return, or throw one
// of the documented exception types (std::runtime_error or std::invalid_argument, whose
// messages are one bounded line); anything else — another exception type (bad_alloc,
// out_of_range, nlohmann's json exceptions), a message of more than kMaxMessage characters or
// with a line break, a sanitizer report — is a finding.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string_view>

namespace kf::fuzz {

inline constexpr std::size_t kMaxMessage = 600;

inline void check_message(const char* what) {
  const std::string_view m(what);
  if (m.size() > kMaxMessage || m.find('\n') != std::string_view::npos || m.empty()) {
    std::fprintf(stderr, "fuzz: unbounded or multi-line message (%zu chars): %.300s\n", m.size(),
                 what);
    std::abort();
  }
}

// Runs f; documented exceptions are fine when their message is one bounded line.
template <class F>
void expect_clean(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    check_message(e.what());
  } catch (const std::runtime_error& e) {
    check_message(e.what());
  }
}

}  // namespace kf::fuzz
