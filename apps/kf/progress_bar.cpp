// Progress bars with ETA on a terminal (common.hpp: progress_bar for a command's own loop,
// step_progress for the library's long steps); silent when stderr is not a terminal.
#include <unistd.h>

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "common.hpp"
#include "kernelformer/dist/mpi.hpp"

namespace kf::cli {

namespace {
double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

progress_bar::progress_bar(std::string label)
    : label_(std::move(label)),
      enabled_(::isatty(2) != 0 && dist::is_root()),
      start_(now_seconds()) {
  // KF_PROGRESS_MIN_SECONDS: how long a job runs before its bar shows (0.3 s; tests set 0).
  if (const char* v = std::getenv("KF_PROGRESS_MIN_SECONDS")) min_seconds_ = std::atof(v);
}

progress_bar::~progress_bar() {
  if (drawn_) std::fputs("\r\033[K", stderr);
}

void progress_bar::update(int done, int total, const std::string& note) {
  if (!enabled_ || total <= 0) return;
  const double elapsed = now_seconds() - start_;
  if (elapsed < min_seconds_ && done < total) return;  // quick jobs never show a bar
  constexpr int kWidth = 30;
  const int filled = done * kWidth / total;
  const double eta = done > 0 ? elapsed * (total - done) / done : 0.0;
  fmt::print(stderr, "\r{} [{}{}] {}/{}  {}{:.1f}s elapsed, ETA {:.1f}s\033[K", label_,
             std::string(static_cast<std::size_t>(filled), '#'),
             std::string(static_cast<std::size_t>(kWidth - filled), '-'), done, total,
             note.empty() ? note : note + "  ", elapsed, eta);
  std::fflush(stderr);
  drawn_ = true;
}

step_progress::step_progress() {
  if (::isatty(2) == 0 || !dist::is_root()) return;  // no sink: the steps stay silent
  scope_ = std::make_unique<progress_scope>([this](std::string_view step, index done, index total) {
    if (step != step_ || !bar_) {
      bar_.reset();  // clears the previous step's line
      step_ = step;
      bar_ = std::make_unique<progress_bar>(step_);
    }
    if (done >= total) {  // the step is over: its line is cleared for whatever comes next
      bar_.reset();
      step_.clear();
      return;
    }
    // The bar counts in ints: large totals (bytes of a file) are scaled to per-mille.
    if (total > 1000000)
      bar_->update(static_cast<int>(done * 1000 / total), 1000);
    else
      bar_->update(static_cast<int>(done), static_cast<int>(total));
  });
}

step_progress::~step_progress() {
  bar_.reset();
  scope_.reset();
}

}  // namespace kf::cli
