// Progress reporting through a per-thread sink (see progress.hpp).
#include "kernelformer/progress.hpp"

#include <algorithm>
#include <chrono>
#include <exception>
#include <utility>

namespace kf {
namespace {

thread_local progress_sink t_sink;
thread_local int t_depth = 0;  // steps open on this thread

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

// Swaps the thread's sink in; the destructor swaps the previous one back, so scopes nest.
progress_scope::progress_scope(progress_sink sink) : previous_(std::move(t_sink)) {
  t_sink = std::move(sink);
}

progress_scope::~progress_scope() { t_sink = std::move(previous_); }

progress_step::progress_step(std::string_view name, index total, bool silent)
    : name_(name),
      total_(std::max<index>(total, 1)),  // ≥ 1, so a sink may divide by total
      // Decided once, at construction: only the outermost non-silent step on a thread with a
      // sink reports. A silent step still counts in t_depth, which is what quiets its children.
      reports_(!silent && t_depth == 0 && static_cast<bool>(t_sink)),
      owner_(std::this_thread::get_id()),
      last_(now_seconds()),
      unwinding_(std::uncaught_exceptions()) {
  ++t_depth;
}

// The final done = total report is skipped while an exception thrown inside the step unwinds:
// a failed step must not look finished.
progress_step::~progress_step() {
  --t_depth;
  if (reports_ && std::uncaught_exceptions() == unwinding_) t_sink(name_, total_, total_);
}

// Relaxed atomic: the count is only a display; other threads add, the owner reports.
void progress_step::add(index units) {
  const index done = done_.fetch_add(units, std::memory_order_relaxed) + units;
  if (reports_ && std::this_thread::get_id() == owner_) maybe_report(done);
}

void progress_step::set(index done) {
  done_.store(done, std::memory_order_relaxed);
  if (reports_ && std::this_thread::get_id() == owner_) maybe_report(done);
}

void progress_step::maybe_report(index done) {
  const double t = now_seconds();
  if (t - last_ < 0.1) return;  // at most ten sink calls a second: a bar, not a log
  last_ = t;
  t_sink(name_, std::min(done, total_), total_);
}

}  // namespace kf
