// A small persistent thread pool for the interpreter's kernels.
//
// Work is split into contiguous index ranges; every output element is
// computed by exactly one task with the same arithmetic order, so results do
// not depend on the number of threads.
#pragma once

#include <cstdint>
#include <functional>

namespace cct::interp {

// Threads used by parallel_for: $CCT_THREADS when set, else the hardware
// concurrency (at least 1).
int thread_count();
// Overrides the thread count (1 = run everything on the calling thread).
void set_thread_count(int n);

// Calls fn(begin, end) over disjoint ranges covering [0, n), each range at
// least `grain` long (except the last), in parallel. Returns when all are done.
// The first exception thrown by a task is rethrown here.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

}  // namespace cct::interp
