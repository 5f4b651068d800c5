// kernelformer/jobs.hpp — independent jobs (whole training runs) on threads of one OpenMP thread
// each: N small models trained at once on N cores, each run's numbers those of a one-thread
// process whatever the machine (a run's GEMMs are cut by the thread count, so the same seed on 2
// and on 8 threads gives different weights).
//
//   run_jobs(runs.size(), job_workers(runs.size()), [&](index i) { train(runs[i]); },
//            [&] { bar.update(epochs_done, epochs_total); });
//
// Each worker thread sets its OpenMP team to one thread before its first job, so every parallel
// region and every OpenBLAS call inside a job runs single-threaded (OpenBLAS's OpenMP build sizes
// its team from the calling thread's omp_get_max_threads()): a job computes exactly what a
// one-thread process (OMP_NUM_THREADS=1) computes, whatever the number of workers.
#pragma once

#include <functional>

#include "kernelformer/tensor.hpp"

namespace kf {

// How many workers n jobs get by default: min(n, omp_get_max_threads()) — the cores, or
// OMP_NUM_THREADS when set — and at least 1.
int job_workers(index n);

// Runs job(i) for every i in [0, n), in order of i, on `workers` threads (clamped to [1, n]) that
// each take the next job when they finish one; the calling thread waits, calling monitor() (when
// given) about every 0.2 s and once at the end — the place for a progress bar, which therefore
// draws from one thread only. When a job (or monitor) throws, no further job starts, the running
// ones finish, and the first exception is rethrown here.
void run_jobs(index n, int workers, const std::function<void(index)>& job,
              const std::function<void()>& monitor = {});

}  // namespace kf
