// The values a file's own host code passes to a kernel def, for the parameters -D leaves unset:
// `kernel = matmul(1024, 1024, 1024, 128, 128, 32)` in `main()` or under `if __name__ ==
// "__main__":`, through the host names set before the call, the enclosing host function's
// parameters (what its own callers pass, else its defaults) and argparse's defaults (`args.m`).
// Host code is never run: only its assignments of values Tessel can evaluate are read, in order.
#include "core/kernel_parser_detail.h"

namespace tessel::kernel_parser_detail {

namespace {

/// Host functions calling host functions are followed this deep (and no recursion is followed).
constexpr int kMaxHostDepth = 4;

/// One argument of a call as written, at the token level.
struct CallSlot {
  std::string keyword;  ///< empty: positional
  size_t start = 0;     ///< the first token of its value
  bool star = false;    ///< *args or **kwargs: the positions after it are unknown
};

/// The arguments of the call whose '(' is at `open`.
std::vector<CallSlot> call_slots(const TokenCursor& c, size_t open) {
  std::vector<CallSlot> slots;
  int depth = 0;
  bool slot_start = true;
  for (size_t k = open + 1;; ++k) {
    const Token& t = c.token(k);
    if (t.kind == TokenKind::kEnd) break;
    if (depth == 0 && t.kind == TokenKind::kOp && t.text == ")") break;
    if (slot_start) {
      CallSlot s;
      if (t.kind == TokenKind::kOp && (t.text == "*" || t.text == "**")) {
        s.star = true;
      } else if (t.kind == TokenKind::kName && c.token(k + 1).kind == TokenKind::kOp &&
                 c.token(k + 1).text == "=") {
        s.keyword = t.text;
        s.start = k + 2;
      } else {
        s.start = k;
      }
      slots.push_back(s);
      slot_start = false;
    }
    if (opens_bracket(t)) ++depth;
    if (closes_bracket(t)) --depth;
    if (depth == 0 && t.kind == TokenKind::kOp && t.text == ",") slot_start = true;
  }
  return slots;
}

/// True for a value Python would pass as it is: numbers, strings, booleans, None, tuples of them.
bool host_constant(const Value& v) {
  switch (v.kind) {
    case Value::Kind::kNone:
    case Value::Kind::kString:
      return true;
    case Value::Kind::kExpr:
      return v.expr.as<IntImmNode>() || v.expr.as<FloatImmNode>();
    case Value::Kind::kTuple:
      return std::all_of(v.items.begin(), v.items.end(), host_constant);
    default:
      return false;
  }
}

/// At a statement's first token: `a = ...` or `a, b = ...` (a simple assignment).
bool at_simple_assignment(const TokenCursor& c, size_t k) {
  if (c.token(k).kind != TokenKind::kName || is_keyword(c.token(k).text)) return false;
  int depth = 0;
  for (;; ++k) {
    const Token& t = c.token(k);
    if (t.kind == TokenKind::kEnd || t.kind == TokenKind::kNewline) return false;
    if (opens_bracket(t)) ++depth;
    if (closes_bracket(t)) --depth;
    if (depth == 0 && t.kind == TokenKind::kOp && t.text == "=") return true;
  }
}

}  // namespace

const std::vector<size_t>& Parser::top_level_statements() {
  if (!top_level_.empty()) return top_level_;
  int depth = 0;
  bool line_start = true;
  for (size_t k = 0;; ++k) {
    const Token& t = main_cursor_.token(k);
    if (t.kind == TokenKind::kEnd) break;
    if (t.kind == TokenKind::kIndent) ++depth;
    if (t.kind == TokenKind::kDedent) --depth;
    if (t.kind == TokenKind::kNewline || t.kind == TokenKind::kIndent ||
        t.kind == TokenKind::kDedent) {
      line_start = true;
      continue;
    }
    if (line_start && depth == 0) top_level_.push_back(k);
    line_start = false;
  }
  return top_level_;
}

std::optional<Parser::HostArgument> Parser::host_argument(const std::string& function, size_t index,
                                                          const std::string& name, std::string* why,
                                                          int depth) {
  const HostCall& call = host_call(function, depth);
  if (why) *why = call.why;
  if (!call.found) return std::nullopt;
  if (auto it = call.keywords.find(name); it != call.keywords.end()) {
    return HostArgument{it->second, call.at};
  }
  if (index < call.positional.size()) return HostArgument{call.positional[index], call.at};
  return std::nullopt;  // the call leaves it to its default
}

const Parser::HostCall& Parser::host_call(const std::string& function, int depth) {
  if (auto it = host_calls_.find(function); it != host_calls_.end()) return it->second;
  HostCall& result = host_calls_[function];  // empty while it is worked out: no recursion
  if (depth > kMaxHostDepth) return result;
  const std::vector<size_t>& tops = top_level_statements();
  const TokenCursor& c = main_cursor_;
  for (size_t k = 1; c.token(k).kind != TokenKind::kEnd; ++k) {
    const Token& t = c.token(k);
    if (t.kind != TokenKind::kName || t.text != function || c.token(k + 1).text != "(") continue;
    const Token& before = c.token(k - 1);
    if (before.text == "." || before.text == "def") continue;  // an attribute, the def itself
    const size_t top = *std::prev(std::upper_bound(tops.begin(), tops.end(), k));
    if (c.token(top).text == "def" && c.token(top + 1).text == function) continue;  // recursion
    // Every argument is evaluated where the call is; the parser's state is put back after.
    const size_t saved_position = main_cursor_.position();
    TokenCursor* saved_cursor = cur_;
    auto saved_scope = scope_;
    const Context saved_context = context_;
    const int saved_no_eval = no_eval_;
    HostCall call;
    call.at = t;
    std::string line = "the call at line " + std::to_string(t.line);
    try {
      scope_ = host_scope_at(k, depth);
      cur_ = &main_cursor_;
      context_ = Context::kModule;
      no_eval_ = 0;
      call.found = true;
      for (const CallSlot& slot : call_slots(c, k + 1)) {
        if (slot.star) {
          call.why = line + " spreads arguments with * or **";
          call.found = false;
          break;
        }
        main_cursor_.rewind(slot.start);
        Value v = parse_value();
        if (!host_constant(v) || !(cur_->at_op(",") || cur_->at_op(")"))) {
          call.why = line + " passes " + v.describe() + ", not a constant";
          call.found = false;
          break;
        }
        if (slot.keyword.empty()) {
          call.positional.push_back(v);
        } else {
          call.keywords[slot.keyword] = v;
        }
      }
    } catch (const UserError& e) {
      std::string reason = e.what();
      reason = reason.substr(0, reason.find('\n'));
      size_t colon = reason.find(": ");  // after "file:line:column"
      if (reason.rfind(path_ + ":", 0) == 0 && colon != std::string::npos) {
        reason = reason.substr(colon + 2);
      }
      call.why = line + " passes a value Tessel cannot evaluate (" + reason + ")";
      call.found = false;
    }
    main_cursor_.rewind(saved_position);
    cur_ = saved_cursor;
    scope_ = saved_scope;
    context_ = saved_context;
    no_eval_ = saved_no_eval;
    if (call.found) {
      result = call;
      return result;
    }
    if (result.why.empty()) result.why = call.why;  // the first failure is the one named
  }
  return result;
}

std::shared_ptr<NameScope> Parser::host_scope_at(size_t call, int depth) {
  const std::vector<size_t>& tops = top_level_statements();
  const size_t top = *std::prev(std::upper_bound(tops.begin(), tops.end(), call));
  auto scope = std::make_shared<NameScope>();
  scope->parent = module_scope_;
  cur_ = &main_cursor_;
  context_ = Context::kModule;
  size_t body = top;
  if (main_cursor_.token(top).kind == TokenKind::kName && main_cursor_.token(top).text == "def") {
    // A host function: its parameters are what its callers pass, else its defaults.
    const std::string host = main_cursor_.token(top + 1).text;
    main_cursor_.rewind(top + 2);
    scope_ = module_scope_;  // defaults are read where the def is
    std::vector<SignatureParam> params = read_signature(host);
    body = main_cursor_.position();
    for (size_t i = 0; i < params.size(); ++i) {
      const std::string& p = params[i].name.text;
      auto passed = host_argument(host, i, p, nullptr, depth + 1);
      std::optional<Value> v =
          passed ? std::optional<Value>(passed->value) : params[i].default_value;
      if (v) scope->names[p] = Binding{*v, loc_of(params[i].name), false};
    }
  }
  scope_ = scope;  // host_argument put the cursor and the context back as they were
  // The simple assignments before the call, in order, at any depth of its block.
  bool line_start = true;
  for (size_t k = body; k < call; ++k) {
    const Token& t = main_cursor_.token(k);
    if (t.kind == TokenKind::kNewline || t.kind == TokenKind::kIndent ||
        t.kind == TokenKind::kDedent) {
      line_start = true;
      continue;
    }
    if (!line_start) continue;
    line_start = false;
    if (!at_simple_assignment(main_cursor_, k)) continue;
    size_t end = k;
    while (main_cursor_.token(end).kind != TokenKind::kNewline &&
           main_cursor_.token(end).kind != TokenKind::kEnd) {
      ++end;
    }
    if (end > call) break;  // the statement of the call itself
    main_cursor_.rewind(k);
    if (bind_argparse_namespace(scope)) continue;
    try {
      std::vector<Stmt> out;
      std::vector<size_t> lets;
      parse_statement(out, lets);
    } catch (const UserError& e) {
      main_cursor_.rewind(k);
      mark_host_targets(e.what());
    }
  }
  return scope;
}

bool Parser::bind_argparse_namespace(const std::shared_ptr<NameScope>& scope) {
  // `args = parser.parse_args()` (no argv list): args.NAME is the default of --NAME, read in
  // `scope` (`default=n` of a host function's parameter n). The options are the whole file's.
  const TokenCursor& c = main_cursor_;
  const size_t k = c.position();
  if (!(c.token(k + 1).text == "=" && c.token(k + 2).kind == TokenKind::kName &&
        c.token(k + 3).text == "." && c.token(k + 4).text == "parse_args" &&
        c.token(k + 5).text == "(" && c.token(k + 6).text == ")")) {
    return false;
  }
  auto options = std::make_shared<std::map<std::string, Value>>();
  for (size_t j = 1;; ++j) {
    const Token& t = c.token(j);
    if (t.kind == TokenKind::kEnd) break;
    if (!(t.text == "add_argument" && c.token(j - 1).text == "." && c.token(j + 1).text == "("))
      continue;
    std::string dest, action;
    std::optional<Value> value;
    for (const CallSlot& s : call_slots(c, j + 1)) {
      const Token& v = c.token(s.start);
      if (s.keyword.empty() && v.kind == TokenKind::kString &&
          (dest.empty() || v.text.rfind("--", 0) == 0)) {
        dest = v.text.substr(v.text.find_first_not_of('-'));
      }
      if (s.keyword == "dest" && v.kind == TokenKind::kString) dest = v.text;
      if (s.keyword == "action" && v.kind == TokenKind::kString) action = v.text;
      if (s.keyword == "default") {
        TokenCursor* saved_cursor = cur_;
        auto saved_scope = scope_;
        const size_t saved = main_cursor_.position();
        cur_ = &main_cursor_;
        scope_ = scope;
        main_cursor_.rewind(s.start);
        try {
          Value d = parse_value();
          if (host_constant(d)) value = d;
        } catch (const UserError&) {
          // a default Tessel cannot evaluate: the option stays unknown
        }
        main_cursor_.rewind(saved);
        cur_ = saved_cursor;
        scope_ = saved_scope;
      }
    }
    std::replace(dest.begin(), dest.end(), '-', '_');
    if (!value && action == "store_true") value = py_bool(false);
    if (!value && action == "store_false") value = py_bool(true);
    if (!dest.empty() && value) (*options)[dest] = *value;
  }
  Value ns;
  ns.kind = Value::Kind::kHost;
  ns.text = "'" + c.token(k).text + "', argparse's namespace (line " +
            std::to_string(c.token(k).line) + ")";
  ns.attributes = options;
  scope->names[c.token(k).text] = Binding{ns, loc_of(c.token(k)), false};
  return true;
}

}  // namespace tessel::kernel_parser_detail
