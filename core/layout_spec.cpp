// The layout-spec parser (`tessel layout SPEC`): named layouts and explicit Layout(...) /
// Fragment(...) in the printer's syntax (declared in expr_parser.h).
#include "core/builtin_layouts.h"
#include "core/error.h"
#include "core/expr_parser.h"
#include "core/input_limits.h"
#include "core/int_eval.h"

namespace tessel {

namespace {

class SpecParser {
 public:
  explicit SpecParser(const std::string& spec) : cur_(spec) {}

  std::variant<Layout, Fragment> parse() {
    if (cur_.at_end()) {
      cur_.error_at(cur_.peek(),
                    "empty layout spec; expected a named layout such as "
                    "swizzle_128b(64, 64, f16) or Layout([...], lambda ...: ...)");
    }
    const Token& head = cur_.expect_name("a layout name, Layout or Fragment");
    std::string name = head.text;
    if (name == "T" && cur_.at_op(".")) {
      cur_.next();
      name = cur_.expect_name("a layout name after 'T.'").text;
    }
    std::variant<Layout, Fragment> result;
    if (name == "Layout") {
      result = explicit_layout(head);
    } else if (name == "Fragment") {
      result = explicit_fragment(head);
    } else {
      result = named(name, head);
    }
    if (!cur_.at_end()) {
      cur_.error_at(cur_.peek(), "unexpected " + TokenCursor::describe(cur_.peek()) +
                                     " after the end of the layout spec");
    }
    return result;
  }

 private:
  /// A constant integer expression (`64`, `64 * 2`).
  int64_t constant(const char* what) {
    const Token& at = cur_.peek();
    ExprParseHooks no_names;
    Expr e = parse_expression(cur_, no_names);
    if (!e.dtype().is_integral() || e.dtype().is_bool()) {
      cur_.error_at(at, std::string("expected an integer ") + what);
    }
    return eval_int(e, {});
  }

  std::vector<int64_t> shape() {
    const Token& open = cur_.expect_op("[", "to start the shape list");
    std::vector<int64_t> dims;
    while (!cur_.at_op("]")) {
      const Token& at = cur_.peek();
      int64_t d = constant("extent");
      if (d < 1) cur_.error_at(at, "every extent must be at least 1, got " + std::to_string(d));
      dims.push_back(d);
      if (dims.size() > static_cast<size_t>(kMaxLayoutRank)) {
        cur_.error_at(at, "more than " + std::to_string(kMaxLayoutRank) +
                              " dimensions; layouts have at most " +
                              std::to_string(kMaxLayoutRank));
      }
      if (!cur_.accept_op(",")) break;
    }
    cur_.expect_op("]", "to close '[' at column " + std::to_string(open.column));
    if (dims.empty()) cur_.error_at(open, "the shape needs at least one extent");
    return dims;
  }

  template <typename F>
  auto build(const Token& at, F make) {
    try {
      return make();
    } catch (const UserError& e) {
      cur_.error_at(at, e.what());
    }
  }

  Layout explicit_layout(const Token& head) {
    const Token& open = cur_.expect_op("(", "after 'Layout'");
    std::vector<int64_t> dims = shape();
    cur_.expect_op(",", "after the shape");
    ParsedLambda l = parse_lambda(cur_);
    cur_.accept_op(",");
    cur_.expect_op(")", "to close 'Layout(' at column " + std::to_string(open.column));
    if (l.params.size() != dims.size()) {
      cur_.error_at(l.at, "the lambda takes " + std::to_string(l.params.size()) +
                              " parameters but the shape has " + std::to_string(dims.size()) +
                              " dimensions");
    }
    return build(l.body_at, [&] { return Layout::make(l.params, dims, l.outputs); });
  }

  Fragment explicit_fragment(const Token& head) {
    const Token& open = cur_.expect_op("(", "after 'Fragment'");
    std::vector<int64_t> dims = shape();
    cur_.expect_op(",", "after the shape");
    ParsedLambda l = parse_lambda(cur_);
    int64_t replicate = 1;
    if (cur_.accept_op(",") && !cur_.at_op(")")) {
      const Token& kw = cur_.peek();
      if (!cur_.at_name("replicate") || !cur_.at_op("=", 1)) {
        cur_.error_at(kw, "expected 'replicate=N', found " + TokenCursor::describe(kw));
      }
      cur_.next();
      cur_.next();
      const Token& at = cur_.peek();
      replicate = constant("replicate count");
      if (replicate < 1) cur_.error_at(at, "replicate must be at least 1");
      cur_.accept_op(",");
    }
    cur_.expect_op(")", "to close 'Fragment(' at column " + std::to_string(open.column));
    if (l.params.size() != dims.size() && l.params.size() != dims.size() + 1) {
      cur_.error_at(l.at, "the lambda takes " + std::to_string(l.params.size()) +
                              " parameters but the shape has " + std::to_string(dims.size()) +
                              " dimensions (plus, optionally, the replicate variable last)");
    }
    if (l.outputs.size() != 2) {
      cur_.error_at(l.body_at, "a Fragment's lambda returns (thread, local), got " +
                                   std::to_string(l.outputs.size()) + " value" +
                                   (l.outputs.size() == 1 ? "" : "s"));
    }
    Var rep = l.params.size() > dims.size() ? l.params.back() : Var("rep");
    std::vector<Var> vars(l.params.begin(), l.params.begin() + static_cast<long>(dims.size()));
    return build(l.body_at, [&] {
      return Fragment::make(vars, dims, l.outputs[0], l.outputs[1], replicate, rep);
    });
  }

  NamedLayoutArg argument() {
    NamedLayoutArg arg;
    if (cur_.peek().kind == TokenKind::kName && cur_.at_op("=", 1)) {
      arg.keyword = cur_.next().text;
      cur_.next();
    }
    const Token& t = cur_.peek();
    auto ends_here = [&](size_t ahead) { return cur_.at_op(",", ahead) || cur_.at_op(")", ahead); };
    if (t.kind == TokenKind::kString) {
      cur_.next();
      auto dtype = DataType::parse(t.text);
      if (!dtype) {
        cur_.error_at(t,
                      "unknown dtype \"" + t.text + "\"; accepted: " + DataType::accepted_names());
      }
      arg.value = *dtype;
      return arg;
    }
    if (t.kind == TokenKind::kName && (t.text == "True" || t.text == "False") && ends_here(1)) {
      cur_.next();
      arg.value = t.text == "True";
      return arg;
    }
    if (t.kind == TokenKind::kName && t.text == "T" && cur_.at_op(".", 1) &&
        cur_.peek(2).kind == TokenKind::kName && ends_here(3)) {
      if (auto dtype = DataType::parse(cur_.peek(2).text)) {
        cur_.next();
        cur_.next();
        cur_.next();
        arg.value = *dtype;
        return arg;
      }
    }
    if (t.kind == TokenKind::kName && !cur_.at_op("(", 1) && !cur_.at_op(".", 1) &&
        DataType::parse(t.text)) {
      cur_.next();
      arg.value = *DataType::parse(t.text);
      return arg;
    }
    if (t.kind == TokenKind::kName && ends_here(1)) {
      auto dtype = DataType::parse(t.text);
      if (!dtype) {
        cur_.error_at(t, "'" + t.text + "' is neither an integer nor a dtype; accepted dtypes: " +
                             DataType::accepted_names());
      }
      cur_.next();
      arg.value = *dtype;
      return arg;
    }
    arg.value = constant("argument");
    return arg;
  }

  std::variant<Layout, Fragment> named(const std::string& name, const Token& head) {
    std::vector<NamedLayoutArg> args;
    if (!cur_.at_op("(")) {
      cur_.error_at(cur_.peek(), "expected '(' after the layout name '" + name + "', found " +
                                     TokenCursor::describe(cur_.peek()));
    }
    const Token& open = cur_.next();
    while (!cur_.at_op(")")) {
      args.push_back(argument());
      if (!cur_.accept_op(",")) break;
    }
    cur_.expect_op(")", "to close '" + name + "(' at column " + std::to_string(open.column));
    return build(head, [&] { return make_named_layout(name, args); });
  }

  TokenCursor cur_;
};

}  // namespace

std::variant<Layout, Fragment> parse_layout_spec(const std::string& spec) {
  return SpecParser(spec).parse();
}

}  // namespace tessel
