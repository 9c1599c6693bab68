// `_strata`: plan, compute, visualize and callbacks: the places
// where Python and the engine's threads meet.
//
// GIL rules. plan() and compute() release the GIL for all their C++ work.
// compute() runs Execute on a thread of its own while the calling thread
// waits without the GIL, waking every 50 ms to let Python run its signal
// handlers: a KeyboardInterrupt (Ctrl-C) sets the compute's cancel flag
// (runtime/executor.h), the compute winds down (running tasks finish,
// intermediates are removed) and the KeyboardInterrupt is raised. Python
// code called from tasks (callbacks here; map_blocks, map_overlap and
// apply_gufunc functions in block_functions.cc) takes the GIL for the length
// of each call.
#include <fmt/format.h>

#include <chrono>
#include <optional>
#include <thread>

#include "strata/api/visualize.h"
#include "strata/base/thread_annotations.h"
#include "strata/python/binding.h"
#include "strata/runtime/executor.h"

namespace strata::python {
namespace {

using Clock = std::chrono::steady_clock;

// The first Python exception raised by a callback during one compute.
struct CallbackErrors {
  Mutex mu;
  std::optional<py::error_already_set> first STRATA_GUARDED_BY(mu);  // touched with the GIL
};

py::dict OpDict(const PlannedOp& op) {
  py::dict d;
  d["name"] = op.node->name;
  d["op"] = op.node->op_name;
  d["num_tasks"] = op.num_tasks();
  d["projected_mem"] = op.projected_mem;
  return d;
}

py::dict SummaryDict(const ComputeSummary& s) {
  py::dict d;
  d["seconds"] = s.seconds;
  d["tasks"] = s.tasks;
  d["peak_pool_bytes"] = s.peak_pool_bytes;
  d["intermediate_bytes_written"] = s.intermediate_bytes_written;
  d["peak_resident_intermediate_bytes"] = s.peak_resident_intermediate_bytes;
  return d;
}

// Forwards the executor's events to a Python object (strata.callbacks'
// dispatcher) as dicts. A Python exception cancels the compute and is
// raised by compute() once it has wound down.
class PythonCallback : public Callback {
 public:
  PythonCallback(py::object target, std::shared_ptr<std::atomic<bool>> cancel,
                 std::shared_ptr<CallbackErrors> errors)
      : target_(std::move(target)), cancel_(std::move(cancel)), errors_(std::move(errors)) {}
  ~PythonCallback() override {
    py::gil_scoped_acquire gil;
    target_ = py::object();
  }

  void OnComputeStart(const Plan& plan) override {
    Call("on_compute_start", [&] {
      py::dict d;
      d["plan_json"] = plan.ToJson();
      py::list ops;
      for (const PlannedOp& op : plan.ops()) {
        if (op.materialized) ops.append(OpDict(op));
      }
      d["ops"] = ops;
      d["num_tasks"] = plan.total_tasks();
      return d;
    });
  }
  void OnOpStart(const PlannedOp& op) override {
    Call("on_operation_start", [&] { return OpDict(op); });
  }
  void OnTaskEnd(const TaskEndEvent& e) override {
    Call("on_task_end", [&] {
      py::dict d;
      d["name"] = e.op ? e.op->node->name : e.op_name;
      d["op"] = e.op_name;
      d["block"] = IndexTuple(e.block);
      d["start"] = e.start_seconds;
      d["end"] = e.end_seconds;
      d["projected_mem"] = e.projected_mem;
      d["measured_peak_mem"] = e.measured_peak;
      d["worker_rss"] = e.worker_rss;
      d["attempts"] = e.attempts;
      d["worker"] = e.worker;
      d["skipped"] = e.skipped;
      return d;
    });
  }
  void OnOpEnd(const PlannedOp& op) override {
    Call("on_operation_end", [&] { return OpDict(op); });
  }
  void OnComputeEnd(const Plan& plan, const Status& status,
                    const ComputeSummary& summary) override {
    Call("on_compute_end", [&] {
      py::dict d;
      d["ok"] = status.ok();
      d["error"] = std::string(status.message());
      d["summary"] = SummaryDict(summary);
      return d;
    });
  }

 private:
  template <typename MakeEvent>
  void Call(const char* method, MakeEvent make) {
    py::gil_scoped_acquire gil;
    try {
      target_.attr(method)(make());
    } catch (py::error_already_set& e) {
      MutexLock lock(&errors_->mu);
      if (!errors_->first) errors_->first.emplace(std::move(e));
      cancel_->store(true);
    }
  }

  py::object target_;
  std::shared_ptr<std::atomic<bool>> cancel_;
  std::shared_ptr<CallbackErrors> errors_;
};

// The computes running in this process, so that interpreter shutdown can
// cancel them and wait: a compute on a daemon thread would otherwise still be
// running C++ tasks while Python and then the C++ statics are torn down.
struct RunningComputes {
  Mutex mu;
  CondVar cv;
  std::vector<std::shared_ptr<std::atomic<bool>>> cancels STRATA_GUARDED_BY(mu);
  bool shutting_down STRATA_GUARDED_BY(mu) = false;
};
RunningComputes& Running() {
  static auto* r = new RunningComputes();  // never destroyed: used during exit
  return *r;
}

// Registered for the length of one compute (taken and dropped with the GIL).
class ComputeRegistration {
 public:
  explicit ComputeRegistration(std::shared_ptr<std::atomic<bool>> cancel)
      : cancel_(std::move(cancel)) {
    RunningComputes& r = Running();
    MutexLock lock(&r.mu);
    if (r.shutting_down) cancel_->store(true);
    r.cancels.push_back(cancel_);
  }
  ~ComputeRegistration() {
    RunningComputes& r = Running();
    MutexLock lock(&r.mu);
    std::erase(r.cancels, cancel_);
    r.cv.SignalAll();
  }

 private:
  std::shared_ptr<std::atomic<bool>> cancel_;
};

// atexit: cancel every compute and wait (without the GIL, so that their
// threads can return to Python) until they are all done.
void Shutdown(double timeout_seconds) {
  RunningComputes& r = Running();
  py::gil_scoped_release release;
  MutexLock lock(&r.mu);
  r.shutting_down = true;
  for (auto& c : r.cancels) c->store(true);
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(timeout_seconds));
  while (!r.cancels.empty() && r.cv.WaitUntil(&r.mu, deadline)) {
  }
}

// Runs `fn` (C++ only, no Python) on a thread of its own while this thread
// waits without the GIL, checking for signals (see the file comment).
template <typename T>
Result<T> RunInterruptibly(std::function<Result<T>()> fn, std::atomic<bool>& cancel,
                           std::optional<py::error_already_set>& interrupt) {
  struct Outcome {
    Mutex mu;
    CondVar cv;
    std::optional<Result<T>> value STRATA_GUARDED_BY(mu);
  } out;
  {
    py::gil_scoped_release release;
    std::thread worker([&] {
      Result<T> r = fn();
      MutexLock lock(&out.mu);
      out.value.emplace(std::move(r));
      out.cv.SignalAll();
    });
    while (true) {
      {
        MutexLock lock(&out.mu);
        const auto deadline = Clock::now() + std::chrono::milliseconds(50);
        while (!out.value && out.cv.WaitUntil(&out.mu, deadline)) {
        }
        if (out.value) break;
      }
      if (interrupt || _Py_IsFinalizing()) continue;
      py::gil_scoped_acquire gil;
      if (PyErr_CheckSignals() != 0) {
        interrupt.emplace();  // fetches the KeyboardInterrupt (or the handler's exception)
        cancel.store(true);
      }
    }
    worker.join();
  }
  MutexLock lock(&out.mu);
  return std::move(*out.value);
}

std::shared_ptr<const Plan> PlanOf(const std::vector<Array>& arrays, bool fuse) {
  PlanOptions options;
  options.fuse = fuse;  // optimize_graph: PlanOptions::fuse, as Spec(fuse=False)
  Result<std::shared_ptr<const Plan>> p = InvalidArgumentError("unset");
  {
    py::gil_scoped_release release;
    p = plan(arrays, options);
  }
  return Unwrap(std::move(p), Phase::kPlan);
}

}  // namespace

py::tuple IndexTuple(std::span<const Index> v) {
  py::tuple t(v.size());
  for (size_t i = 0; i < v.size(); ++i) t[i] = py::int_(v[i]);
  return t;
}

py::list ComputeWith(const std::vector<Array>& arrays, py::object callback, bool fuse,
                     ComputeOptions options) {
  std::shared_ptr<const Plan> p = PlanOf(arrays, fuse);
  auto cancel = std::make_shared<std::atomic<bool>>(false);
  auto errors = std::make_shared<CallbackErrors>();
  ComputeRegistration registration(cancel);
  options.cancel = cancel;
  if (!callback.is_none()) {
    options.callbacks.push_back(std::make_shared<PythonCallback>(callback, cancel, errors));
  }
  std::optional<py::error_already_set> interrupt;
  Result<ComputeResult> r = RunInterruptibly<ComputeResult>(
      [&]() -> Result<ComputeResult> { return Execute(*p, options); }, *cancel, interrupt);
  {
    py::gil_scoped_release release;
    options.callbacks.clear();  // PythonCallback's destructor takes the GIL
  }
  if (interrupt) throw std::move(*interrupt);
  std::optional<py::error_already_set> callback_error;
  {
    MutexLock lock(&errors->mu);
    if (errors->first) callback_error.emplace(std::move(*errors->first));
  }
  if (callback_error) throw std::move(*callback_error);
  ComputeResult result = Unwrap(std::move(r), Phase::kCompute);
  py::list out;
  for (auto& a : result.arrays) {
    if (a) {
      out.append(ToNumpy(std::move(*a)));
    } else {
      out.append(py::none());
    }
  }
  return out;
}

namespace {

py::list Compute(const std::vector<Array>& arrays, py::object callback, bool fuse) {
  return ComputeWith(arrays, std::move(callback), fuse, ComputeOptions());
}

}  // namespace

void RegisterCompute(py::module_& m) {
  py::class_<Plan, std::shared_ptr<Plan>>(m, "Plan")
      .def_property_readonly("total_tasks", &Plan::total_tasks)
      .def("to_text", &Plan::ToText)
      .def("to_json", &Plan::ToJson)
      .def("to_dot", [](const Plan& p) { return PlanToDot(p); });

  m.def(
      "plan",
      [](const std::vector<Array>& arrays, bool fuse) {
        return std::const_pointer_cast<Plan>(PlanOf(arrays, fuse));
      },
      py::arg("arrays"), py::arg("fuse") = true);
  m.def("_shutdown", &Shutdown, py::arg("timeout_seconds") = 600.0,
        "Cancels every running compute and waits for them (registered with atexit).");
  m.def("compute", &Compute, py::arg("arrays"), py::arg("callback") = py::none(),
        py::arg("fuse") = true);
  m.def("visualize", [](const std::vector<Array>& arrays, const std::string& filename) {
    Status s;
    {
      py::gil_scoped_release release;
      s = visualize(arrays, filename);
    }
    Check(s, Phase::kPlan);
  });
}

}  // namespace strata::python
