#include "kernelformer/jobs.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace kf {

int job_workers(index n) {
  return int(std::max<index>(1, std::min<index>(n, index(omp_get_max_threads()))));
}

void run_jobs(index n, int workers, const std::function<void(index)>& job,
              const std::function<void()>& monitor) {
  if (n <= 0) return;
  workers = int(std::clamp<index>(workers, 1, n));
  std::atomic<index> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr first;
  std::mutex mu;
  std::condition_variable all_done;
  int running = workers;
  auto work = [&] {
    omp_set_num_threads(1);  // this thread's team: every region and BLAS call in a job
    for (index i = next++; i < n && !failed; i = next++) {
      try {
        job(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!first) first = std::current_exception();
        failed = true;
      }
    }
    std::lock_guard<std::mutex> lock(mu);
    if (--running == 0) all_done.notify_all();
  };
  std::vector<std::thread> threads;
  threads.reserve(std::size_t(workers));
  for (int w = 0; w < workers; ++w) {
    try {
      threads.emplace_back(work);
    } catch (...) {  // no thread for this worker (std::system_error): run with the ones started
      std::lock_guard<std::mutex> lock(mu);
      running -= workers - w;
      if (w == 0) first = std::current_exception();
      break;
    }
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    while (!all_done.wait_for(lock, std::chrono::milliseconds(200), [&] { return running == 0; }))
      if (monitor && !failed) {
        lock.unlock();
        try {
          monitor();
        } catch (...) {
          std::lock_guard<std::mutex> inner(mu);
          if (!first) first = std::current_exception();
          failed = true;
        }
        lock.lock();
      }
  }
  for (auto& t : threads) t.join();
  if (first) std::rethrow_exception(first);
  if (monitor) monitor();
}

}  // namespace kf
