#include "interp/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace cct::interp {
namespace {

int default_threads() {
  if (const char* e = std::getenv("CCT_THREADS")) {
    int n = std::atoi(e);
    if (n > 0) return n;
  }
  unsigned h = std::thread::hardware_concurrency();
  return h == 0 ? 1 : static_cast<int>(std::min(h, 64u));
}

// Workers sleep on a condition variable until a job is posted; a job is a
// task plus an atomic counter of chunks still to claim. The caller works on
// its own job too. Each job lives in a shared_ptr so a worker that wakes late
// only ever sees a finished job, never a half-initialised one.
class Pool {
 public:
  explicit Pool(int threads) { resize(threads); }
  ~Pool() { stop(); }

  int size() const { return size_; }

  void resize(int threads) {
    stop();
    size_ = std::max(1, threads);
    quit_ = false;
    for (int t = 1; t < size_; ++t) workers_.emplace_back([this] { loop(); });
  }

  void run(int64_t chunks, const std::function<void(int64_t)>& task) {
    std::lock_guard<std::mutex> serial(run_mutex_);  // one job at a time
    auto job = std::make_shared<Job>();
    job->task = &task;
    job->total = chunks;
    job->remaining = chunks;
    {
      std::lock_guard<std::mutex> g(m_);
      job_ = job;
      ++generation_;
    }
    cv_.notify_all();
    work(*job);
    {
      std::unique_lock<std::mutex> g(job->m);
      job->done.wait(g, [&] { return job->remaining == 0; });
    }
    {
      std::lock_guard<std::mutex> g(m_);
      job_.reset();
    }
    if (job->error) std::rethrow_exception(job->error);
  }

 private:
  struct Job {
    const std::function<void(int64_t)>* task = nullptr;
    std::atomic<int64_t> next{0};
    int64_t total = 0;
    std::mutex m;
    std::condition_variable done;
    int64_t remaining = 0;  // guarded by m
    std::exception_ptr error;  // guarded by m
  };

  static void work(Job& job) {
    for (;;) {
      int64_t c = job.next.fetch_add(1);
      if (c >= job.total) return;
      std::exception_ptr err;
      try {
        (*job.task)(c);
      } catch (...) {
        err = std::current_exception();
      }
      std::lock_guard<std::mutex> g(job.m);
      if (err && !job.error) job.error = err;
      if (--job.remaining == 0) job.done.notify_all();
    }
  }

  void loop() {
    uint64_t seen = 0;
    for (;;) {
      std::shared_ptr<Job> job;
      {
        std::unique_lock<std::mutex> g(m_);
        cv_.wait(g, [&] { return quit_ || (job_ && generation_ != seen); });
        if (quit_) return;
        seen = generation_;
        job = job_;
      }
      work(*job);
    }
  }

  void stop() {
    {
      std::lock_guard<std::mutex> g(m_);
      quit_ = true;
    }
    cv_.notify_all();
    for (auto& w : workers_) w.join();
    workers_.clear();
  }

  int size_ = 1;
  std::vector<std::thread> workers_;
  std::mutex m_, run_mutex_;
  std::condition_variable cv_;
  std::shared_ptr<Job> job_;  // guarded by m_
  uint64_t generation_ = 0;   // guarded by m_
  bool quit_ = false;         // guarded by m_
};

Pool& pool() {
  static Pool p(default_threads());
  return p;
}

thread_local bool t_in_parallel = false;

}  // namespace

int thread_count() { return pool().size(); }

void set_thread_count(int n) { pool().resize(n); }

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  int threads = pool().size();
  // Nested calls (a kernel inside a parallel task) run serially.
  if (threads <= 1 || n <= grain || t_in_parallel) {
    fn(0, n);
    return;
  }
  int64_t chunks = std::min<int64_t>(threads * 4, (n + grain - 1) / grain);
  int64_t step = (n + chunks - 1) / chunks;
  chunks = (n + step - 1) / step;
  pool().run(chunks, [&](int64_t c) {
    bool saved = t_in_parallel;
    t_in_parallel = true;
    int64_t b = c * step, e = std::min(n, b + step);
    try {
      fn(b, e);
    } catch (...) {
      t_in_parallel = saved;
      throw;
    }
    t_in_parallel = saved;
  });
}

}  // namespace cct::interp
