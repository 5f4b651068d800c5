// kernelformer/jobs.hpp — independent jobs (whole training runs) on threads of one OpenMP thread
// each: N small models trained at once on N cores, each run's numbers those of a one-thread
// process whatever the machine (which are those of any thread count: products are cut by their
// shape, detail/blas.cpp).
//
//   run_jobs(runs.size(), job_workers(runs.size()), [&](index i) { train(runs[i]); },
//            [&] { bar.update(epochs_done, epochs_total); });
//
// Each worker thread sets its OpenMP team to one thread before its first job, so every parallel
// region and every OpenBLAS call inside a job runs single-threaded (OpenBLAS's OpenMP build sizes
// its team from the calling thread's omp_get_max_threads()): a job computes exactly what a
// one-thread process (OMP_NUM_THREADS=1) computes, whatever the number of workers.
//
// Why std::thread and not an outer `omp parallel` (the project's threads are otherwise OpenMP's):
// inside an OpenMP region omp_in_parallel() is true, which changes code paths a job takes (the
// BLAS wrapper's row splits, the primitive's block scheduling) from those of a one-thread
// process, so its numbers would no longer be that process's.
#pragma once

#include <functional>

#include "kernelformer/tensor.hpp"

namespace kf {

// How many workers n jobs get by default: min(n, omp_get_max_threads()) — the cores, or
// OMP_NUM_THREADS when set — and at least 1.
int job_workers(index n);

// Runs job(i) for every i in [0, n), in order of i, on `workers` threads (clamped to [1, n]) that
// each take the next job when they finish one; the calling thread waits, calling monitor() (when
// given) about every 0.2 s and once at the end of a run without failure — the place for a
// progress bar, which therefore draws from one thread only. When a job (or monitor) throws, no
// further job starts, the running ones finish (monitor is no longer called), and the first
// exception is rethrown here; when no thread can be started, that error is.
void run_jobs(index n, int workers, const std::function<void(index)>& job,
              const std::function<void()>& monitor = {});

}  // namespace kf
