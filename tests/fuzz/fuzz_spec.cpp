// libFuzzer entry point of the layout-spec and expression parser (`tessel layout SPEC`, `banks
// --access`): the first byte picks the mode, the rest is the text. Mode 0 parses a layout spec and
// prints, evaluates and re-parses what it accepts; mode 1 parses an expression over i and j and
// runs the analyzer (bound, simplify) and the evaluator on it. Only UserErrors may come back — an
// InternalError, another exception, a sanitizer report or a crash is a bug the fuzzer reports.
// Built with -DTESSEL_FUZZ=ON (clang); run with -max_len=65536 so inputs reach the parser limits.
#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>

#include "core/analyzer.h"
#include "core/error.h"
#include "core/expr_parser.h"
#include "core/expr_printer.h"
#include "core/int_eval.h"
#include "core/layout.h"

namespace {

void fuzz_layout_spec(const std::string& text) {
  std::variant<tessel::Layout, tessel::Fragment> parsed = tessel::parse_layout_spec(text);
  if (const auto* layout = std::get_if<tessel::Layout>(&parsed)) {
    std::string printed = layout->to_string();
    (void)tessel::parse_layout_spec(printed);
    if (layout->input_size() <= 4096) {
      std::vector<int64_t> zero(layout->input_rank(), 0);
      (void)layout->map(zero);
    }
  } else {
    const auto& fragment = std::get<tessel::Fragment>(parsed);
    (void)tessel::parse_layout_spec(fragment.to_string());
  }
}

void fuzz_expression(const std::string& text) {
  tessel::Var i("i"), j("j");
  tessel::Expr e = tessel::parse_expression(text, std::vector<tessel::Var>{i, j});
  (void)tessel::to_string(e);
  if (!e.dtype().is_integral()) return;
  tessel::Analyzer analyzer;
  analyzer.bind(i, 0, 64);
  analyzer.bind(j, -8, 16);
  (void)analyzer.const_int_bound(e);
  (void)analyzer.simplify(e);
  tessel::IntEnv env{{static_cast<const tessel::VarNode*>(i.get()), 5},
                     {static_cast<const tessel::VarNode*>(j.get()), -3}};
  (void)tessel::eval_int(e, env);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    if (data[0] % 2 == 0) {
      fuzz_layout_spec(text);
    } else {
      fuzz_expression(text);
    }
  } catch (const tessel::UserError&) {
    // Bad input is expected input.
  }
  return 0;
}
