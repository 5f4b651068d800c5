// kernelformer/progress.hpp — how long library steps report their progress (the library never
// prints: a caller that wants a bar installs a sink).
//
//   progress_scope scope([](std::string_view step, index done, index total) { ... });
//   ... regression_fit_data(...) ...   // steps that run on this thread report to the sink
//
// A step (progress_step) names what it does ("binning", "k-d tree queries", …) and counts its
// units of work. The sink is installed per thread and called on that thread only: a step whose
// work runs in an OpenMP loop counts the units of every thread (add() is atomic), and the thread
// that opened the step calls the sink — at most every ~0.1 s, and once with done = total when the
// step ends. Steps nest: only the outermost reports, so a bandwidth search (which reports through
// its own progress_fn and opens a silent step) is one bar, not one per criterion evaluation.
// Without a sink a step costs an atomic add per call and a thread-local read.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <string_view>
#include <thread>

#include "kernelformer/tensor.hpp"

namespace kf {

using progress_sink = std::function<void(std::string_view step, index done, index total)>;

// Installs sink for the calling thread until destroyed (the previous one is restored).
class progress_scope {
 public:
  explicit progress_scope(progress_sink sink);
  ~progress_scope();
  progress_scope(const progress_scope&) = delete;
  progress_scope& operator=(const progress_scope&) = delete;

 private:
  progress_sink previous_;
};

class progress_step {
 public:
  // total: the units of work (rows, bytes, transforms); silent: counts nothing, only keeps the
  // steps it encloses quiet (a caller reporting by other means).
  progress_step(std::string_view name, index total, bool silent = false);
  ~progress_step();
  progress_step(const progress_step&) = delete;
  progress_step& operator=(const progress_step&) = delete;

  // units more are done; from any thread.
  void add(index units);
  // In a loop over i (any thread): counts 1024 units every 1024th i — an atomic add per block,
  // not per row.
  void tick(index i) {
    if ((i & 1023) == 1023) add(1024);
  }
  // done is the absolute count (a step whose loop knows where it is); from the opening thread.
  void set(index done);

 private:
  void maybe_report(index done);
  std::string name_;
  index total_;
  bool reports_;  // the outermost step on a thread with a sink
  std::atomic<index> done_{0};
  std::thread::id owner_;
  double last_ = 0;
  int unwinding_;  // std::uncaught_exceptions() at construction: no final report on a throw
};

}  // namespace kf
