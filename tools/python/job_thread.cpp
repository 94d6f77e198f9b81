#include "tools/python/job_thread.hpp"

#include <pthread.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <thread>

#include "engine/progress.hpp"
#include "tools/python/gil.hpp"

namespace py = pybind11;

namespace tw::python {
namespace {

std::mutex g_one_job;
// Set on the thread that runs a progress callback, while it runs: a job
// started from there would wait for the job that called it.
thread_local bool t_in_callback = false;

struct JobState {
  std::mutex mu;
  std::condition_variable cv;
  bool finished = false;
  std::exception_ptr error;
  std::atomic<bool> cancel{false};
  // The Python exception that stopped the job (the callback's, or Ctrl-C);
  // made and dropped with the GIL taken.
  std::shared_ptr<py::error_already_set> py_error;
  // The callback's throttle: each label's first and last call, else at most
  // one a tenth of a second.
  std::mutex throttle_mu;
  std::string last_label;
  std::chrono::steady_clock::time_point last_call;
};

// Clears the observer however the job ends.
struct ObserverGuard {
  ~ObserverGuard() { Progress::set_observer(nullptr); }
};

// The job running now, for stop_job_at_exit; its JobState outlives the
// entry (run_job's Running takes it out under the same mutex). Once the
// interpreter exits no job starts: a daemon thread waiting for the one
// stopped would otherwise start its own while Python tears down.
std::mutex g_running_mu;
JobState* g_running = nullptr;
bool g_exiting = false;

// After fork() the child has only the thread that forked: a job another
// thread of the parent was running is not running in the child, and its
// locks, held by a thread the child does not have, would make the child's
// first job wait for ever (a multiprocessing pool forked while a thread
// runs a job). The child starts with them free.
void reset_jobs_in_child() {
  new (&g_one_job) std::mutex;
  new (&g_running_mu) std::mutex;
  g_running = nullptr;
}
[[maybe_unused]] const int g_at_fork = pthread_atfork(nullptr, nullptr, &reset_jobs_in_child);

struct Running {
  explicit Running(JobState* st) {
    std::unique_lock<std::mutex> l(g_running_mu);
    if (g_exiting) {
      l.unlock();
      park_until_exit();
    }
    g_running = st;
  }
  ~Running() {
    std::lock_guard<std::mutex> l(g_running_mu);
    g_running = nullptr;
  }
};

}  // namespace

void run_job(const std::function<void()>& job, const py::object& progress) {
  if (t_in_callback) throw py::value_error("a whole-slide job cannot be started from another job's progress callback");
  std::unique_lock<std::mutex> one;
  {
    ReleaseGil nogil;
    one = std::unique_lock<std::mutex>(g_one_job);
  }
  JobState st;
  const bool has_callback = !progress.is_none();
  ObserverGuard guard;
  Progress::set_observer([&st, &progress, has_callback](const std::string& label, int64_t done, int64_t total) {
    if (st.cancel) throw Cancelled();
    if (!has_callback) return;
    {
      std::lock_guard<std::mutex> l(st.throttle_mu);
      const auto now = std::chrono::steady_clock::now();
      const bool first = label != st.last_label, last = done >= total;
      if (!first && !last && now - st.last_call < std::chrono::milliseconds(100)) return;
      st.last_label = label;
      st.last_call = now;
    }
    AcquireGil gil;
    t_in_callback = true;
    struct Reset {
      ~Reset() { t_in_callback = false; }
    } reset;
    try {
      progress(total > 0 ? std::min(1.0, static_cast<double>(done) / static_cast<double>(total)) : 1.0);
    } catch (py::error_already_set& e) {
      st.py_error = std::make_shared<py::error_already_set>(std::move(e));
      st.cancel = true;
      throw Cancelled();
    }
  });

  std::optional<Running> running;
  {
    ReleaseGil nogil;  // stop_job_at_exit may hold the mutex, waiting for a job without the GIL
    running.emplace(&st);
  }
  std::thread worker([&] {
    try {
      job();
    } catch (...) {
      st.error = std::current_exception();
    }
    std::lock_guard<std::mutex> l(st.mu);
    st.finished = true;
    st.cv.notify_all();
  });
  // Wait, waking for Ctrl-C: Python runs signal handlers only on the main
  // thread, and only when asked (PyErr_CheckSignals) while C++ runs.
  for (;;) {
    bool finished;
    {
      ReleaseGil nogil;
      std::unique_lock<std::mutex> l(st.mu);
      finished = st.cv.wait_for(l, std::chrono::milliseconds(50), [&] { return st.finished; });
    }
    if (finished) break;
    if (!st.cancel && PyErr_CheckSignals() != 0) {
      st.py_error = std::make_shared<py::error_already_set>();
      st.cancel = true;
    }
  }
  {
    ReleaseGil nogil;
    worker.join();
    running.reset();
  }
  if (st.py_error) {
    std::shared_ptr<py::error_already_set> e = std::move(st.py_error);
    e->restore();
    throw py::error_already_set();
  }
  if (st.error) std::rethrow_exception(st.error);
}

void stop_job_at_exit() {
  PyThreadState* state = PyEval_SaveThread();  // the job's callback may need the GIL to come back
  {
    std::lock_guard<std::mutex> l(g_running_mu);
    g_exiting = true;
    if (JobState* st = g_running) {
      st->cancel = true;
      std::unique_lock<std::mutex> fl(st->mu);
      st->cv.wait_for(fl, std::chrono::seconds(30), [&] { return st->finished; });
    }
  }
  PyEval_RestoreThread(state);
}

}  // namespace tw::python
