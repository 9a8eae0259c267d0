// The `tessel._tessel` extension module (nanobind): kernels resolved as the command line resolves
// them, run through run_kernel with the same JSON reports, printed, lowered, emitted and
// verified. Arrays cross as (name, NumPy type string, shape, bytes); python/tessel/ makes NumPy
// arrays and report objects of them.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "core/passes.h"
#include "core/printer.h"
#include "core/target.h"
#include "tools/cli.h"
#include "tools/host_data.h"
#include "tools/kernel_run.h"
#include "tools/kernel_source.h"
#include "tools/kernel_views.h"
#include "tools/run_report.h"
#include "verify/kernel_proofs.h"

namespace nb = nanobind;

namespace tessel::py {

namespace {

/// One array as it crosses the boundary: name, NumPy type string, shape, C-order bytes.
using WireArray = std::tuple<std::string, std::string, std::vector<int64_t>, nb::bytes>;

std::vector<cli::NamedArray> from_wire(const std::vector<WireArray>& arrays,
                                       const std::string& what) {
  std::vector<cli::NamedArray> out;
  for (const auto& [name, descr, shape, data] : arrays) {
    cli::NpyArray a;
    a.descr = descr;
    a.shape = shape;
    const auto* p = static_cast<const uint8_t*>(data.data());
    a.bytes.assign(p, p + data.size());
    out.push_back({name, std::move(a), what + "['" + name + "']"});
  }
  return out;
}

WireArray to_wire(const std::string& name, const HostTensor& tensor) {
  cli::NpyArray a = cli::tensor_array(tensor);
  return {name, a.descr, a.shape,
          nb::bytes(reinterpret_cast<const char*>(a.bytes.data()), a.bytes.size())};
}

/// The target called `target` (with `aliases`: also cuda, hip, ...); UsageError when none is.
const Target& check_target(const std::string& target, bool aliases) {
  if (const Target* t = lookup_target(target, aliases)) return *t;
  std::string names;
  for (const std::string& n : target_name_list(aliases)) names += (names.empty() ? "" : ", ") + n;
  throw cli::UsageError("target '" + target + "': unknown target; use one of " + names);
}

/// A resolved kernel with its parameter values; built anew by each call, as the CLI does.
class PyKernel {
 public:
  explicit PyKernel(cli::ResolvedKernel resolved) : k_(std::move(resolved)) {}

  std::string name() const { return build()->name; }
  std::string path() const { return k_.path; }
  bool has_reference() const { return k_.has_reference; }

  /// (name, value, help) of every parameter, in the kernel's order.
  std::vector<std::tuple<std::string, std::string, std::string>> params() const {
    std::vector<std::tuple<std::string, std::string, std::string>> out;
    for (const ParamSpec& p : k_.example->params)
      out.emplace_back(p.name, k_.params.text(p.name), p.help);
    return out;
  }

  /// (name, dtype, shape, written) of every tensor parameter, with a run's concrete sizes.
  std::vector<std::tuple<std::string, std::string, std::vector<int64_t>, bool>> signature() const {
    std::map<std::string, int64_t> dims;
    if (k_.example->dynamic_dims) dims = k_.example->dynamic_dims(k_.params);
    std::vector<std::tuple<std::string, std::string, std::vector<int64_t>, bool>> out;
    for (const cli::ParamInfo& p : cli::kernel_signature(build(), dims))
      out.emplace_back(p.name, p.dtype.name(), p.shape, p.written);
    return out;
  }

  std::string print() const { return print_kernel(build()); }

  std::string lower(const std::string& target) const {
    LoweredKernel lowered = lower_kernel(build(), check_target(target, false));
    return lowered.layouts.to_string() + print_kernel(lowered.kernel);
  }

  std::string emit(const std::string& target) const {
    return cli::emit_kernel(build(), check_target(target, true)).code;
  }

  /// The JSON report (as `tessel run --json`), the terminal report, every tensor after the run
  /// and, at thread level, the tile level's.
  std::tuple<std::string, std::string, std::vector<WireArray>, std::vector<WireArray>> run(
      const std::string& level, const std::string& target, uint64_t seed, int workers,
      const std::string& schedule, const std::vector<WireArray>& inputs,
      const std::vector<WireArray>& expected, std::optional<double> atol,
      std::optional<double> rtol, const std::string& blocks) const {
    cli::RunRequest request;
    request.blocks = blocks;
    request.level = level;
    request.target = target;
    request.seed = seed;
    request.workers = workers;
    request.schedule = schedule;
    request.inputs = from_wire(inputs, "inputs");
    request.expected = from_wire(expected, "expected");
    request.atol = atol;
    request.rtol = rtol;
    cli::KernelRun run;
    {
      nb::gil_scoped_release release;
      run = cli::run_kernel(k_, request);
    }
    std::vector<WireArray> tensors, tile;
    for (const cli::ParamInfo& p : run.signature) {
      tensors.push_back(to_wire(p.name, run.tensors.at(p.name)));
      if (run.tile_ran) tile.push_back(to_wire(p.name, run.tile_tensor(p.name)));
    }
    return {cli::run_json(run).dump(), cli::run_text(run), std::move(tensors), std::move(tile)};
  }

  /// The JSON report of `tessel verify --json`.
  std::string verify(const std::string& target, unsigned timeout_ms) const {
    const Target& t = check_target(target, false);
    Kernel kernel = build();
    KernelProofs proofs;
    {
      nb::gil_scoped_release release;
      proofs = verify_kernel(kernel, t, {timeout_ms});
    }
    return cli::verify_json(kernel, target, proofs).dump();
  }

 private:
  Kernel build() const { return k_.example->build(k_.params); }

  cli::ResolvedKernel k_;
};

}  // namespace

}  // namespace tessel::py

NB_MODULE(_tessel, m) {
  using tessel::py::PyKernel;
  m.doc() = "Tessel's C++ core; use the `tessel` package rather than this module.";

  // Tessel's two channels of user errors; anything else is an internal error (RuntimeError).
  PyObject* base = PyErr_NewExceptionWithDoc(
      "tessel.TesselError", "An error Tessel reports with its message.", PyExc_Exception, nullptr);
  m.attr("TesselError") = nb::steal(base);
  nb::exception<tessel::cli::UsageError>(m, "UsageError", base);
  nb::exception<tessel::UserError>(m, "KernelError", base);
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const tessel::InternalError& e) {
      PyErr_SetString(
          PyExc_RuntimeError,
          (std::string("tessel: internal error (please report it): ") + e.what()).c_str());
    }
  });

  nb::class_<PyKernel>(m, "Kernel")
      .def_prop_ro("name", &PyKernel::name)
      .def_prop_ro("path", &PyKernel::path)
      .def_prop_ro("has_reference", &PyKernel::has_reference)
      .def("params", &PyKernel::params)
      .def("signature", &PyKernel::signature)
      .def("print", &PyKernel::print)
      .def("lower", &PyKernel::lower, nb::arg("target"))
      .def("emit", &PyKernel::emit, nb::arg("target"))
      .def("run", &PyKernel::run, nb::arg("level"), nb::arg("target"), nb::arg("seed"),
           nb::arg("workers"), nb::arg("schedule"), nb::arg("inputs"), nb::arg("expected"),
           nb::arg("atol").none(), nb::arg("rtol").none(), nb::arg("blocks"))
      .def("verify", &PyKernel::verify, nb::arg("target"), nb::arg("timeout_ms"));

  m.def(
      "load",
      [](const std::string& kernel, const std::vector<std::string>& defines,
         const std::string& choice) {
        return PyKernel(tessel::cli::resolve_kernel(kernel, defines, choice));
      },
      nb::arg("kernel"), nb::arg("defines"), nb::arg("choice"),
      "A built-in kernel by name or a kernel file by path, with its -D values.");
  m.def(
      "load_text",
      [](const std::string& text, const std::string& origin,
         const std::vector<std::string>& defines, const std::string& choice) {
        return PyKernel(tessel::cli::resolve_kernel_text(text, origin, defines, choice));
      },
      nb::arg("text"), nb::arg("origin"), nb::arg("defines"), nb::arg("choice"),
      "A kernel from the source text of a kernel file.");
}
