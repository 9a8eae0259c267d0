// `tessel list [FILE]`: the built-in kernels, or the kernels a kernel file defines, with their
// parameters and defaults.
#include <fstream>
#include <sstream>

#include "core/kernel_parser.h"
#include "examples/presets.h"
#include "examples/registry.h"
#include "tools/cli.h"
#include "tools/file_io.h"

namespace tessel::cli {

namespace {

const char* kind_help(KernelFileParam::Kind kind) {
  switch (kind) {
    case KernelFileParam::Kind::kParameter:
      return "parameter";
    case KernelFileParam::Kind::kConst:
      return "size made by T.const: symbolic when not given";
    case KernelFileParam::Kind::kDynamic:
      return "symbolic size (T.dynamic): -D sizes it for a run";
    case KernelFileParam::Kind::kScalar:
      return "scalar kernel parameter: -D sets it (an integer one is symbolic when not given)";
  }
  return "";
}

const char* kind_name(KernelFileParam::Kind kind) {
  switch (kind) {
    case KernelFileParam::Kind::kParameter:
      return "parameter";
    case KernelFileParam::Kind::kConst:
      return "const";
    case KernelFileParam::Kind::kDynamic:
      return "dynamic";
    case KernelFileParam::Kind::kScalar:
      return "scalar";
  }
  return "";
}

void list_file(Context& ctx, const std::string& path) {
  std::string text = read_kernel_text(path);
  std::vector<KernelFileEntry> kernels;
  try {
    kernels = list_kernels(text, path);
  } catch (const KernelFileError& e) {
    throw UsageError(e.what());
  }
  if (ctx.json) {
    nlohmann::json list = nlohmann::json::array();
    for (const KernelFileEntry& k : kernels) {
      nlohmann::json params = nlohmann::json::array();
      for (const KernelFileParam& p : k.params) {
        params.push_back({{"name", p.name},
                          {"default", p.default_text ? nlohmann::json(*p.default_text)
                                                     : nlohmann::json(nullptr)},
                          {"kind", kind_name(p.kind)},
                          {"help", kind_help(p.kind)},
                          {"from_call", p.host_call ? nlohmann::json(p.host_call->str())
                                                    : nlohmann::json(nullptr)}});
      }
      list.push_back({{"name", k.name}, {"line", k.loc.line}, {"params", params}});
    }
    emit_json(ctx, {{"file", path}, {"kernels", list}});
    return;
  }
  *ctx.out << path << ": " << kernels.size() << (kernels.size() == 1 ? " kernel" : " kernels")
           << (kernels.size() > 1 ? " (pick one with --kernel NAME)" : "") << "\n";
  for (const KernelFileEntry& k : kernels) {
    *ctx.out << k.name << " (line " << k.loc.line << ")\n";
    for (const KernelFileParam& p : k.params) {
      *ctx.out << "    " << p.name;
      if (p.kind == KernelFileParam::Kind::kParameter) {
        *ctx.out << "=" << (p.default_text ? *p.default_text : "(required)");
      }
      *ctx.out << "  (" << kind_help(p.kind)
               << (p.host_call ? "; the value the call at " + p.host_call->str() + " passes" : "")
               << ")\n";
    }
  }
}

}  // namespace

void add_list_command(CLI::App& app, Context& ctx) {
  CLI::App* sub = app.add_subcommand(
      "list", "built-in kernels, or the kernels of a kernel file, with their parameters");
  add_common_options(*sub, ctx);
  static std::string file;
  // Fresh values for every App: an earlier in-process run (tests) must not leave its options.
  file.clear();
  sub->add_option("FILE", file, "a kernel file (.py): list the kernels it defines");
  sub->callback([&ctx] {
    if (!ctx.defines.empty()) {
      throw UsageError("-D sets a kernel's parameters; `tessel list` takes none (it shows them)");
    }
    if (!file.empty()) return list_file(ctx, file);
    if (ctx.json) {
      nlohmann::json list = nlohmann::json::array();
      for (const Example& e : examples()) {
        nlohmann::json params = nlohmann::json::array();
        for (const ParamSpec& p : e.params) {
          params.push_back({{"name", p.name}, {"default", p.default_value}, {"help", p.help}});
        }
        nlohmann::json presets = nlohmann::json::array();
        for (const Preset* p : presets_of(e.name)) {
          nlohmann::json values = nlohmann::json::object();
          for (const auto& [name, value] : p->values) values[name] = value;
          presets.push_back({{"name", p->name}, {"source", p->source}, {"values", values}});
        }
        list.push_back({{"name", e.name},
                        {"description", e.description},
                        {"params", params},
                        {"presets", presets}});
      }
      emit_json(ctx, {{"kernels", list}});
      return;
    }
    for (const Example& e : examples()) {
      *ctx.out << e.name << " — " << e.description << "\n";
      for (const ParamSpec& p : e.params) {
        *ctx.out << "    " << p.name << "=" << p.default_value << "  (" << p.help << ")\n";
      }
      std::vector<const Preset*> mine = presets_of(e.name);
      if (!mine.empty()) *ctx.out << "  presets (-D preset=NAME; other -D values win):\n";
      for (const Preset* p : mine) {
        *ctx.out << "    " << p->name << ": " << p->values_text() << "  (" << p->source << ")\n";
      }
    }
  });
}

}  // namespace tessel::cli
