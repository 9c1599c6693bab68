// `_strata`: both halves of the dask and ray executors
// (runtime/external_run.h) for python/strata/_dask.py and _ray.py, which
// talk to the distributed.Client and to Ray.
//
//   compute_external(arrays, callback, fuse, submit)
//       compute() on the dask or ray executor: plans and prepares in C++
//       (GIL released), then calls submit(run) with the ExternalRun (GIL
//       held while Python runs; the clients wait without it). A Python
//       exception raised by submit is raised by compute_external as it is.
//   TaskHost(plan, run_dir, object_prefix).run(op, block, attempt, inputs)
//       a worker's task: the inputs (memory-tier blocks as numpy arrays)
//       are lent without a copy, the task runs with the GIL released, and
//       its block comes back as a numpy array owning the engine's buffer.
//       Errors come back as values (code, retryable, message, exception), so
//       that the caller decides what Dask or Ray retries.
#include <fmt/format.h>

#include "strata/python/binding.h"
#include "strata/runtime/dispatcher.h"
#include "strata/runtime/external_run.h"

namespace strata::python {

// compute.cc: compute() with `options` (callback, cancellation, Ctrl-C).
py::list ComputeWith(const std::vector<Array>& arrays, py::object callback, bool fuse,
                     ComputeOptions options);

namespace {

TaskFigures FiguresFrom(double start, double end, int64_t measured_peak, int64_t worker_rss) {
  TaskFigures f;
  f.start_seconds = start;
  f.end_seconds = end;
  f.measured_peak = measured_peak;
  f.worker_rss = worker_rss;
  return f;
}

std::string TierLabel(Tier t) { return std::string(TierName(t)); }

py::list TaskList(const ExternalRun& run) {
  py::list out;
  for (const ExternalTask& t : run.tasks()) {
    py::list inputs;
    for (const TaskId& in : t.inputs) inputs.append(py::make_tuple(in.op, in.block));
    out.append(py::make_tuple(t.id.op, t.id.block, inputs, t.projected_mem, t.returns_block));
  }
  return out;
}

py::list OpList(const Plan& plan) {
  py::list out;
  for (const PlannedOp& op : plan.ops()) {
    py::dict d;
    d["index"] = op.index;
    d["name"] = op.node->name;
    d["op"] = op.node->op_name;
    d["materialized"] = op.materialized;
    d["num_tasks"] = op.num_tasks();
    d["tier"] = TierLabel(op.tier);
    d["projected_mem"] = op.projected_mem;
    d["fused_names"] = op.fused_names;
    d["output"] = op.output_slot >= 0;
    out.append(d);
  }
  return out;
}

// A numpy array the engine may read in place (C-contiguous, aligned, native
// byte order, a Strata dtype), or TypeError.
py::array Readable(py::handle h, const char* what) {
  if (!py::isinstance<py::array>(h)) {
    throw py::type_error(fmt::format("{}: expected a numpy array, got {}", what,
                                     py::str(py::type::of(h).attr("__name__")).cast<std::string>()));
  }
  py::array a = py::reinterpret_borrow<py::array>(h);
  py::module_ np = py::module_::import("numpy");
  if (!a.dtype().attr("isnative").cast<bool>()) {
    a = a.attr("astype")(a.dtype().attr("newbyteorder")("="));
  }
  // Bytes Dask received from another worker may sit at any offset of a
  // frame; a Ray object-store buffer is aligned and read in place.
  return np.attr("require")(a, py::none(), "CA");
}

py::tuple ErrorTuple(const Status& s) {
  std::string message(s.message());
  py::object exception = TakeStashedPythonError(&message);
  return py::make_tuple(static_cast<int>(s.code()), IsRetryable(s), message, exception);
}

}  // namespace

void RegisterExternalRun(py::module_& m) {
  py::class_<ExternalRun>(m, "ExternalRun")
      .def_property_readonly("run_dir", &ExternalRun::run_dir)
      .def_property_readonly("object_prefix", &ExternalRun::object_prefix)
      .def_property_readonly("cancelled", &ExternalRun::cancelled)
      .def("seconds", &ExternalRun::seconds)
      .def("tasks", &TaskList)
      .def("ops", [](const ExternalRun& run) { return OpList(run.plan()); })
      .def(
          "task_done",
          [](ExternalRun& run, int op, Index block, int attempts, int worker, double start,
             double end, int64_t measured_peak, int64_t worker_rss, py::object data) {
            Status s;
            const TaskFigures f = FiguresFrom(start, end, measured_peak, worker_rss);
            if (data.is_none()) {
              s = run.TaskDone(TaskId{op, block}, attempts, worker, f, nullptr);
            } else {
              std::shared_ptr<const NDArray> a = FromNumpy(Readable(data, "task_done"));
              ConstArrayView v = a->view();
              s = run.TaskDone(TaskId{op, block}, attempts, worker, f, &v);
            }
            Check(s, Phase::kCompute);
          },
          py::arg("op"), py::arg("block"), py::arg("attempts"), py::arg("worker"),
          py::arg("start"), py::arg("end"), py::arg("measured_peak"), py::arg("worker_rss"),
          py::arg("data"))
      .def(
          "task_failed",
          [](ExternalRun& run, int op, Index block, int code, std::string message,
             py::object exception, int attempts) {
            if (!exception.is_none()) message += StashPythonObject(exception);
            StatusCode c = static_cast<StatusCode>(code);
            if (c == StatusCode::kOk) c = StatusCode::kUnknown;
            (void)run.TaskFailed(TaskId{op, block}, Status(c, std::move(message)), attempts);
          },
          py::arg("op"), py::arg("block"), py::arg("code"), py::arg("message"),
          py::arg("exception"), py::arg("attempts"));

  m.def(
      "compute_external",
      [](const std::vector<Array>& arrays, py::object callback, bool fuse, py::object submit) {
        if (!PyCallable_Check(submit.ptr())) throw py::type_error("submit must be callable");
        ComputeOptions options;
        // Called on the compute's thread; `submit` lives as long as this call.
        options.external = [submit = submit.ptr()](ExternalRun& run) -> Status {
          py::gil_scoped_acquire gil;
          try {
            py::object fn = py::reinterpret_borrow<py::object>(submit);
            fn(py::cast(&run, py::return_value_policy::reference));
            return Status::Ok();
          } catch (py::error_already_set& e) {
            return UnknownError(StashPythonError(e));
          }
        };
        return ComputeWith(arrays, std::move(callback), fuse, std::move(options));
      },
      py::arg("arrays"), py::arg("callback"), py::arg("fuse"), py::arg("submit"));

  py::class_<TaskHost, std::shared_ptr<TaskHost>>(m, "TaskHost")
      .def(py::init([](std::shared_ptr<Plan> plan, std::string run_dir, std::string object_prefix) {
             Result<std::unique_ptr<TaskHost>> host = InvalidArgumentError("unset");
             {
               py::gil_scoped_release release;
               host = TaskHost::Open(std::move(plan), std::move(run_dir), std::move(object_prefix));
             }
             return std::shared_ptr<TaskHost>(Unwrap(std::move(host), Phase::kCompute));
           }),
           py::arg("plan"), py::arg("run_dir"), py::arg("object_prefix"))
      .def("ops", [](const TaskHost& h) { return OpList(h.plan()); })
      .def(
          "run",
          [](TaskHost& host, int op, Index block, int attempt, py::list inputs) -> py::tuple {
            std::vector<TaskHost::Input> lent;
            for (py::handle item : inputs) {
              py::tuple t = py::reinterpret_borrow<py::tuple>(item);
              if (t.size() != 3) throw py::value_error("run: inputs are (op, block, array)");
              lent.push_back({TaskId{t[0].cast<int>(), t[1].cast<Index>()},
                              FromNumpy(Readable(t[2], "run"))});
            }
            TaskFigures figures;
            Result<std::optional<NDArray>> out = InvalidArgumentError("unset");
            {
              py::gil_scoped_release release;  // the task runs without the GIL
              out = host.Run(TaskId{op, block}, attempt, lent, &figures);
              lent.clear();  // the inputs' references are dropped with the GIL
            }
            py::tuple f = py::make_tuple(figures.measured_peak, CurrentRss());
            // (data, figures, error): py::tuple, since pybind11 3 types each
            // make_tuple by its arguments.
            if (!out.ok()) {
              return py::tuple(py::make_tuple(py::none(), f, ErrorTuple(out.status())));
            }
            py::object data = py::none();
            if (out->has_value()) data = ToNumpy(std::move(**out));
            return py::tuple(py::make_tuple(data, f, py::none()));
          },
          py::arg("op"), py::arg("block"), py::arg("attempt"), py::arg("inputs"));
}

}  // namespace strata::python
