// `tessel layout SPEC`: evaluate one layout or fragment at a point, prove its properties with Z3,
// draw it as SVG; `tessel layout --list` prints the named layouts.
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include "core/builtin_layouts.h"
#include "core/error.h"
#include "core/expr_parser.h"
#include "core/layout_svg.h"
#include "tools/cli.h"
#include "tools/file_io.h"
#include "verify/layout_proofs.h"

namespace tessel::cli {

namespace {

struct LayoutArgs {
  std::string spec;
  std::string at;
  std::string svg;
  std::string dtype = "f16";
  std::string name = "A";
  bool check = false;
  bool list = false;
};

using nlohmann::json;

std::vector<int64_t> parse_point(const std::string& text, const std::vector<int64_t>& shape) {
  std::vector<int64_t> point;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      size_t used = 0;
      point.push_back(std::stoll(item, &used));
      if (item.find_first_not_of(" \t", used) != std::string::npos) throw std::invalid_argument("");
    } catch (const std::exception&) {
      throw UsageError("--at expects comma-separated integers like 3,8; got '" + text + "'");
    }
  }
  if (point.size() != shape.size()) {
    throw UsageError("--at gives " + std::to_string(point.size()) + " indices but the layout has " +
                     std::to_string(shape.size()) + " dimensions");
  }
  for (size_t d = 0; d < shape.size(); ++d) {
    if (point[d] < 0 || point[d] >= shape[d]) {
      throw UsageError("--at index " + std::to_string(point[d]) + " of dimension " +
                       std::to_string(d) + " is outside [0, " + std::to_string(shape[d]) + ")");
    }
  }
  return point;
}

json proof_json(const ProofResult& r) {
  return {{"holds", r.holds}, {"decided", r.decided}, {"ms", r.ms}, {"message", r.message}};
}

/// The two colliding indices of a failed injectivity proof, or null.
json collision_json(const ProofResult& injective) {
  if (injective.holds || !injective.cex || injective.cex->indices.size() != 2) return nullptr;
  return injective.cex->indices;
}

std::string ms_text(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f ms", ms);
  return buf;
}

std::string list_text(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t k = 0; k < v.size(); ++k) s += (k ? ", " : "") + std::to_string(v[k]);
  return s + "]";
}

void print_proof(std::ostream& out, const std::string& label, const ProofResult& r) {
  std::string verdict = r.holds ? "yes" : (r.decided ? "NO" : "unknown");
  out << "  " << label << std::string(13 - std::min<size_t>(label.size(), 12), ' ') << verdict
      << std::string(9 - verdict.size(), ' ') << r.message << " (" << ms_text(r.ms) << ")\n";
}

void write_svg(const std::string& path, const std::string& svg) {
  write_checked(path, svg, "--svg " + path);
}

/// The fragment's map (index, rep) -> (thread, local) as an IndexMap over its slot box.
IndexMap slot_map(const Fragment& f) {
  IndexMap m;
  m.iter_vars = f.iter_vars();
  for (int64_t e : f.input_shape()) m.input_shape.push_back(make_int(e));
  m.iter_vars.push_back(f.replicate_var());
  m.input_shape.push_back(make_int(f.replicate()));
  m.forward_index = {f.forward_thread(), f.local_index()};
  m.output_shape = {make_int(f.thread_extent()), make_int(f.local_extent())};
  return m;
}

void run_layout(const Layout& layout, const LayoutArgs& args, Context& ctx) {
  ProofOptions options;
  options.name = args.name;
  LayoutProofs p = prove_layout(layout, options);
  json j = {{"kind", "layout"},
            {"spec", layout.to_string()},
            {"input_shape", layout.input_shape()},
            {"output_shape", layout.output_shape()},
            {"in_range", p.in_range.holds},
            {"injective", p.injective.holds},
            {"surjective", p.surjective.holds},
            {"bijective", p.bijective.holds},
            {"counterexample", collision_json(p.injective)},
            {"proofs",
             {{"in_range", proof_json(p.in_range)},
              {"injective", proof_json(p.injective)},
              {"surjective", proof_json(p.surjective)},
              {"bijective", proof_json(p.bijective)}}}};
  if (!p.surjective.holds && p.surjective.cex) j["missing_output"] = p.surjective.cex->output;
  std::vector<int64_t> at_out;
  if (!args.at.empty()) {
    std::vector<int64_t> point = parse_point(args.at, layout.input_shape());
    at_out = layout.map(point);
    j["at"] = {{"index", point}, {"output", at_out}};
  }
  if (!args.svg.empty()) {
    auto dtype = DataType::parse(args.dtype);
    if (!dtype)
      throw UsageError("unknown --dtype '" + args.dtype + "'; use one of " +
                       DataType::accepted_names());
    write_svg(args.svg, bank_map_svg(layout, *dtype));
  }
  ctx.exit_code = (args.check && !p.bijective.holds) ? kKernelWrong : kOk;
  if (ctx.json) {
    emit_json(ctx, j);
    return;
  }
  std::ostream& out = *ctx.out;
  out << layout.to_string() << "\n";
  out << "  input shape  " << list_text(layout.input_shape()) << "\n";
  out << "  output shape " << list_text(layout.output_shape()) << "\n";
  print_proof(out, "in range", p.in_range);
  print_proof(out, "injective", p.injective);
  print_proof(out, "surjective", p.surjective);
  print_proof(out, "bijective", p.bijective);
  if (!args.at.empty()) {
    out << "  at " << list_text(j["at"]["index"].get<std::vector<int64_t>>()) << " -> "
        << list_text(at_out) << "\n";
  }
  if (!args.svg.empty()) out << "  bank map written to " << args.svg << "\n";
}

void run_fragment(const Fragment& frag, const LayoutArgs& args, Context& ctx) {
  ProofOptions options;
  options.name = args.name;
  LayoutProofs p = prove_layout(slot_map(frag), options);
  ProofResult repl = prove_replication(frag, options);
  json j = {{"kind", "fragment"},
            {"spec", frag.to_string()},
            {"input_shape", frag.input_shape()},
            {"output_shape", frag.output_shape()},
            {"threads", frag.thread_extent()},
            {"replicate", frag.replicate()},
            {"replication_ok", repl.holds},
            {"injective", p.injective.holds},
            {"surjective", p.surjective.holds},
            {"bijective", p.bijective.holds},
            {"counterexample", collision_json(p.injective)},
            {"proofs",
             {{"replication", proof_json(repl)},
              {"injective", proof_json(p.injective)},
              {"surjective", proof_json(p.surjective)},
              {"bijective", proof_json(p.bijective)}}}};
  if (!args.at.empty()) {
    std::vector<int64_t> point = parse_point(args.at, frag.input_shape());
    auto [thread, local] = frag.map_fragment(point, 0);
    std::vector<int64_t> threads;
    for (int64_t rep = 0; rep < frag.replicate(); ++rep)
      threads.push_back(frag.map_fragment(point, rep).first);
    j["at"] = {{"index", point}, {"thread", thread}, {"local", local}, {"threads", threads}};
  }
  if (!args.svg.empty()) write_svg(args.svg, fragment_svg(frag));
  ctx.exit_code = (args.check && !repl.holds) ? kKernelWrong : kOk;
  if (ctx.json) {
    emit_json(ctx, j);
    return;
  }
  std::ostream& out = *ctx.out;
  out << frag.to_string() << "\n";
  out << "  input shape  " << list_text(frag.input_shape()) << "\n";
  out << "  threads      " << frag.thread_extent() << ", " << frag.local_extent()
      << " registers each, replicate " << frag.replicate() << "\n";
  print_proof(out, "replication", repl);
  print_proof(out, "injective", p.injective);
  print_proof(out, "surjective", p.surjective);
  if (!args.at.empty()) {
    out << "  at " << list_text(j["at"]["index"].get<std::vector<int64_t>>()) << " -> thread "
        << j["at"]["thread"] << ", local " << j["at"]["local"];
    if (frag.replicate() > 1) {
      out << " (all replicas: threads " << list_text(j["at"]["threads"].get<std::vector<int64_t>>())
          << ")";
    }
    out << "\n";
  }
  if (!args.svg.empty()) out << "  picture written to " << args.svg << "\n";
}

void list_layouts(Context& ctx) {
  if (ctx.json) {
    json list = json::array();
    for (const NamedLayoutInfo& info : named_layouts()) {
      list.push_back(
          {{"name", info.name}, {"signature", info.signature}, {"description", info.description}});
    }
    emit_json(ctx, {{"layouts", list}});
    return;
  }
  for (const NamedLayoutInfo& info : named_layouts()) {
    *ctx.out << info.signature << "\n    " << info.description << "\n";
  }
}

}  // namespace

void add_layout_command(CLI::App& app, Context& ctx) {
  auto args = std::make_shared<LayoutArgs>();
  CLI::App* sub = app.add_subcommand(
      "layout", "one layout or fragment: evaluate, prove (Z3), draw; --list for the named ones");
  add_common_options(*sub, ctx);
  sub->add_option("spec", args->spec,
                  "a named layout (swizzle_128b(64, 64, f16)) or Layout([...], lambda ...: ...) / "
                  "Fragment([...], lambda ...: (thread, local), replicate=1)");
  sub->add_option("--at", args->at, "evaluate at this index, e.g. 3,8")->type_name("I,J,...");
  sub->add_flag(
      "--check", args->check,
      "exit 1 unless the layout is a bijection (a fragment: unless its replication holds)");
  sub->add_option("--svg", args->svg,
                  "write a picture: a fragment's thread map or a layout's bank map")
      ->type_name("FILE");
  sub->add_option("--dtype", args->dtype, "element type for the bank map (default f16)");
  sub->add_option("--name", args->name, "buffer name used in counterexamples (default A)");
  sub->add_flag("--list", args->list, "print the named layouts");
  sub->callback([args, &ctx] {
    if (!ctx.defines.empty()) {
      throw UsageError(
          "-D sets a kernel's parameters; `tessel layout` has none (write the "
          "numbers into the SPEC)");
    }
    if (args->list) {
      list_layouts(ctx);
      return;
    }
    if (args->spec.empty())
      throw UsageError("layout: give a SPEC (or --list for the named layouts)");
    std::variant<Layout, Fragment> parsed;
    try {
      parsed = parse_layout_spec(args->spec);
    } catch (const UserError& e) {
      throw UsageError(std::string("malformed layout spec: ") + e.what());
    }
    if (const Layout* l = std::get_if<Layout>(&parsed))
      run_layout(*l, *args, ctx);
    else
      run_fragment(std::get<Fragment>(parsed), *args, ctx);
  });
}

}  // namespace tessel::cli
