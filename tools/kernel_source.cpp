// KERNEL argument resolution: built-in examples by name, kernel files by path.
#include "tools/kernel_source.h"

#include <charconv>
#include <fstream>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/int_eval.h"
#include "core/kernel_parser.h"
#include "examples/presets.h"
#include "interp/tile_interpreter.h"
#include "tools/cli.h"
#include "tools/file_io.h"

namespace tessel::cli {

namespace {

std::string builtin_names() {
  std::string known;
  for (const Example& e : examples()) known += (known.empty() ? "" : ", ") + e.name;
  return known;
}

/// The reference example's parameter values: the file's values for the names both have.
Params reference_params(const Example& ref, const std::vector<ParamSpec>& file_params,
                        const Params& p) {
  std::map<std::string, std::string> values;
  for (const ParamSpec& rp : ref.params) {
    for (const ParamSpec& fp : file_params) {
      if (fp.name == rp.name && !p.text(fp.name).empty()) values[rp.name] = p.text(fp.name);
    }
  }
  return make_params(ref, values);
}

/// UsageError unless the file's tensors are the reference kernel's: same names, shapes, dtypes.
void check_fits_reference(const Example& file, const Example& ref, const Params& params,
                          const Kernel& kernel, const ParsedKernel& parsed) {
  Params rp = reference_params(ref, file.params, params);
  Kernel rk = ref.build(rp);
  auto shapes = param_shapes(
      kernel, file.dynamic_dims ? file.dynamic_dims(params) : std::map<std::string, int64_t>{});
  auto ref_shapes =
      param_shapes(rk, ref.dynamic_dims ? ref.dynamic_dims(rp) : std::map<std::string, int64_t>{});
  auto shape_text = [](const std::vector<int64_t>& s) {
    std::string t = "(";
    for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
    return t + ")";
  };
  std::string where = parsed.reference_loc.str() + ": ";
  for (const Buffer& rb : rk->params) {
    const Buffer* mine = nullptr;
    for (const Buffer& b : kernel->params) {
      if (b->name == rb->name) mine = &b;
    }
    if (!mine) {
      throw UsageError(where + "the reference of '" + ref.name + "' reads and writes tensor '" +
                       rb->name + "', which kernel '" + kernel->name +
                       "' does not have; name the "
                       "tensors as the built-in does");
    }
    const auto& got = shapes.at(rb->name);
    const auto& want = ref_shapes.at(rb->name);
    if (got != want || (*mine)->dtype != rb->dtype) {
      throw UsageError(where + "tensor '" + rb->name + "' is " + shape_text(got) + " " +
                       (*mine)->dtype.name() + " in kernel '" + kernel->name + "' but " +
                       shape_text(want) + " " + rb->dtype.name() + " in the built-in '" + ref.name +
                       "' whose reference checks it (with the same -D values)");
    }
  }
}

/// Checks the file's asserts on symbolic sizes for the sizes of a run (a kernel error naming the
/// assert and the sizes when one fails).
void check_assertions(const std::vector<KernelAssertion>& assertions, const Kernel& kernel,
                      const std::map<std::string, int64_t>& sizes) {
  IntEnv env;
  std::string with;
  for (const Var& v : kernel->dynamic_vars) {
    auto it = sizes.find(v.name());
    if (it == sizes.end()) continue;
    env[static_cast<const VarNode*>(v.get())] = it->second;
    with += (with.empty() ? "" : ", ") + v.name() + "=" + std::to_string(it->second);
  }
  for (const KernelAssertion& a : assertions) {
    if (eval_int(a.condition, env) == 0) {
      user_error(a.loc.str() + ": " + a.message + " (with " + with + ")");
    }
  }
}

ResolvedKernel resolve_source(std::shared_ptr<const std::string> source, const std::string& path,
                              std::map<std::string, std::string> values, const std::string& choice);

ResolvedKernel resolve_file(const std::string& path,
                            const std::map<std::string, std::string>& values,
                            const std::string& choice) {
  std::string text;
  try {
    text = read_kernel_text(path);
  } catch (const UsageError& e) {
    throw UsageError(std::string(e.what()) + " (KERNEL is a built-in name — " + builtin_names() +
                     " — or the path of a .py kernel file)");
  }
  return resolve_source(std::make_shared<const std::string>(std::move(text)), path, values, choice);
}

ResolvedKernel resolve_source(std::shared_ptr<const std::string> source, const std::string& path,
                              std::map<std::string, std::string> values,
                              const std::string& choice) {
  ParsedKernel parsed;
  try {
    // A file has the presets of the built-in whose reference checks it: parsed once without
    // `preset` to find that built-in, then again with the preset's values.
    auto preset = values.find("preset");
    if (preset != values.end()) {
      std::map<std::string, std::string> rest = values;
      rest.erase("preset");
      parsed = parse_kernel(*source, path, rest, choice);
      if (!parsed.reference) {
        throw ParamError("-D preset=" + preset->second + ": kernel file '" + path +
                         "' has no presets; a file has those of the built-in kernel that its "
                         "`# tessel: reference=NAME` line names");
      }
      values = apply_preset(*parsed.reference, values);
    }
    parsed = parse_kernel(*source, path, values, choice);
  } catch (const KernelFileError& e) {
    throw UsageError(e.what());  // a malformed input file
  } catch (const ParamError& e) {
    throw UsageError(e.what());
  }
  const Kernel& kernel = parsed.kernel;
  const Example* ref = nullptr;
  if (parsed.reference) {
    ref = find_example(*parsed.reference);
    if (!ref) {
      throw UsageError(parsed.reference_loc.str() + ": `# tessel: reference=" + *parsed.reference +
                       "` names no built-in kernel; the built-in kernels are " + builtin_names());
    }
  }
  auto ex = std::make_shared<Example>();
  ex->name = kernel->name;
  ex->description =
      "kernel file " + path +
      (ref ? ", checked against the reference of '" + ref->name + "'" : ", no reference");
  // -D sets the def's parameters and T.const sizes (in the file: the parser reads them); the
  // sizes still symbolic (T.dynamic, T.const not set) are given for a run.
  std::set<std::string> def_params, dims;
  for (const KernelFileParam& p : parsed.params) {
    bool size = p.kind == KernelFileParam::Kind::kConst;
    bool scalar = p.kind == KernelFileParam::Kind::kScalar;
    ex->params.push_back(
        {p.name, p.default_text.value_or(""),
         size ? "size of " + parsed.generator + " made by T.const (" + p.loc.str() +
                    "); symbolic when not given"
         : scalar
             ? "scalar parameter of " + parsed.generator + " (" + p.loc.str() + ")"
             : "parameter of " + parsed.generator + " (" + p.loc.str() + ")" +
                   (p.host_call ? "; default: what the call at " + p.host_call->str() + " passes"
                                : "")});
    def_params.insert(p.name);
  }
  for (const Var& v : kernel->dynamic_vars) {
    if (dims.count(v.name())) continue;
    dims.insert(v.name());
    if (def_params.count(v.name())) continue;  // a T.const size: listed above
    std::string size;
    if (ref) {
      for (const ParamSpec& rp : ref->params) {
        if (rp.name == v.name()) size = rp.default_value;
      }
    }
    ex->params.push_back(
        {v.name(), size, "size of the symbolic dimension " + v.name() + " for a run"});
  }
  for (const auto& [name, value] : values) {
    if (!def_params.count(name) && !dims.count(name)) {
      std::string known;
      for (const ParamSpec& p : ex->params) known += (known.empty() ? "" : ", ") + p.name;
      throw UsageError(
          "kernel file '" + path + "' has no parameter '" + name + "'; " +
          (known.empty() ? std::string("it has none") : "its parameters are " + known) +
          " (the enclosing def's parameters and the symbolic dimensions)");
    }
  }
  std::vector<ParamSpec> specs = ex->params;
  ex->build = [source, path, def_params, specs, choice](const Params& p) {
    std::map<std::string, std::string> defines;
    for (const ParamSpec& s : specs) {
      if (def_params.count(s.name) && p.text(s.name) != s.default_value)
        defines[s.name] = p.text(s.name);
    }
    return parse_kernel(*source, path, defines, choice).kernel;
  };
  if (!dims.empty()) {
    ex->dynamic_dims = [dims, name = kernel->name, assertions = parsed.assertions,
                        kernel](const Params& p) {
      std::map<std::string, int64_t> sizes;
      for (const std::string& d : dims) {
        const std::string& s = p.text(d);
        int64_t v = 0;
        auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v <= 0) {
          throw ParamError("kernel '" + name + "': symbolic dimension '" + d +
                           "' needs a positive size "
                           "for a run; give it with -D " +
                           d + "=1000");
        }
        sizes[d] = v;
      }
      check_assertions(assertions, kernel, sizes);
      return sizes;
    };
  }
  if (ref) {
    ex->outputs = ref->outputs;
    ex->zero_outputs = ref->zero_outputs;
    ex->reference = [ref, specs](const Params& p, TensorMap& t) {
      ref->reference(reference_params(*ref, specs, p), t);
    };
    if (ref->reference_macs) {
      ex->reference_macs = [ref, specs](const Params& p) {
        return ref->reference_macs(reference_params(*ref, specs, p));
      };
    }
    if (ref->sampled_reference) {
      ex->sampled_reference = [ref, specs](const Params& p, const TensorMap& t,
                                           const ReferenceSampleRequest& r) {
        return ref->sampled_reference(reference_params(*ref, specs, p), t, r);
      };
    }
  } else {
    // No reference: the outputs (T.empty returns, out_idx) start as NaN bytes like a fresh
    // allocation, and no values are checked against a reference.
    ex->outputs = parsed.outputs;
    ex->reference = [](const Params&, TensorMap&) {};
  }
  Params params = make_params(*ex, values);
  if (ref) check_fits_reference(*ex, *ref, params, kernel, parsed);
  return ResolvedKernel{ex.get(), std::move(params), path, ref != nullptr, ex};
}

}  // namespace

std::map<std::string, std::string> parse_defines(const std::vector<std::string>& defines) {
  std::map<std::string, std::string> out;
  for (const std::string& d : defines) {
    size_t eq = d.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw UsageError("-D " + d + ": expected NAME=VALUE, e.g. -D M=256");
    }
    auto [it, fresh] = out.emplace(d.substr(0, eq), d.substr(eq + 1));
    if (!fresh) {
      throw UsageError("-D " + d + ": '" + it->first + "' is already set (-D " + it->first + "=" +
                       it->second + "); give each parameter once");
    }
  }
  return out;
}

ResolvedKernel resolve_kernel_text(const std::string& text, const std::string& origin,
                                   const std::vector<std::string>& defines,
                                   const std::string& choice) {
  return resolve_source(std::make_shared<const std::string>(text), origin, parse_defines(defines),
                        choice);
}

std::map<std::string, int64_t> run_dims(const ResolvedKernel& k) {
  if (!k.example->dynamic_dims) return {};
  std::map<std::string, int64_t> dims = k.example->dynamic_dims(k.params);
  for (const auto& [name, size] : dims) {
    if (size <= 0) {
      throw UsageError("-D " + name + "=" + std::to_string(size) + ": kernel '" + k.example->name +
                       "' needs a positive size for its symbolic dimension '" + name +
                       "' (e.g. -D " + name + "=1000)");
    }
  }
  return dims;
}

bool is_kernel_path(const std::string& kernel) {
  return kernel.find('/') != std::string::npos ||
         (kernel.size() > 3 && kernel.compare(kernel.size() - 3, 3, ".py") == 0);
}

ResolvedKernel resolve_kernel(const std::string& name, const std::vector<std::string>& defines,
                              const std::string& choice) {
  auto values = parse_defines(defines);
  if (is_kernel_path(name)) return resolve_file(name, values, choice);
  if (!choice.empty()) {
    throw UsageError("--kernel " + choice + " picks a kernel of a kernel file; '" + name +
                     "' is a built-in kernel ('tessel list' describes them)");
  }
  const Example* example = find_example(name);
  if (!example) {
    throw UsageError("no built-in kernel named '" + name + "'; the built-in kernels are " +
                     builtin_names() +
                     " ('tessel list' describes them), or give the path of a "
                     ".py kernel file");
  }
  try {
    return ResolvedKernel{example, make_params(*example, apply_preset(name, values)), "", true,
                          nullptr};
  } catch (const UserError& e) {
    throw UsageError(e.what());  // an unknown -D name is a command-line mistake
  }
}

}  // namespace tessel::cli
