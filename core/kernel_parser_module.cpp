// The file around the kernels: the top-level statements (host code is skipped, constants are
// kept), what each def is — decided by what it contains, not by its shape — and the kernels of
// the file, one of which is read (--kernel NAME picks it when there are several).
#include "core/kernel_parser_detail.h"

namespace tessel::kernel_parser_detail {

namespace {

/// Decorators that make a function a kernel generator or a jitted kernel.
bool is_jit_decorator(const std::string& name) {
  static const char* kNames[] = {"tilelang.jit",
                                 "tilelang.jit.jit",
                                 "tilelang.autotune",
                                 "tilelang.autotuner.autotune",
                                 "tilelang.autotuner.tuner.autotune",
                                 "tilelang.lazy_jit",
                                 "jit",
                                 "autotune"};
  for (const char* n : kNames) {
    if (name == n) return true;
  }
  return false;
}

/// The names of T.const("M, N") or T.const("B S H"): split at commas or at spaces.
std::vector<std::string> const_names(const std::string& text) {
  std::vector<std::string> names;
  bool commas = text.find(',') != std::string::npos;
  std::string current;
  for (char c : text + (commas ? "," : " ")) {
    if (c == (commas ? ',' : ' ') || (!commas && (c == '\t' || c == '\n'))) {
      size_t a = current.find_first_not_of(" \t\n"), b = current.find_last_not_of(" \t\n");
      if (a != std::string::npos) names.push_back(current.substr(a, b - a + 1));
      current.clear();
    } else {
      current += c;
    }
  }
  return names;
}

}  // namespace

std::vector<std::string> split_const_names(const std::string& text) { return const_names(text); }

// ---- Skipping ----------------------------------------------------------------------------------

void Parser::skip_suite() {
  const Token colon = cur_->expect_op(":", "to open the block");
  if (cur_->peek().kind != TokenKind::kNewline) {
    while (cur_->peek().kind != TokenKind::kNewline && !cur_->at_end()) cur_->next();
    if (!cur_->at_end()) cur_->next();
    return;
  }
  cur_->next();
  if (cur_->peek().kind != TokenKind::kIndent) {
    fail(cur_->peek(),
         "expected an indented block after the ':' on line " + std::to_string(colon.line));
  }
  int depth = 0;
  do {
    const Token& t = cur_->next();
    if (t.kind == TokenKind::kIndent) ++depth;
    if (t.kind == TokenKind::kDedent) --depth;
    if (t.kind == TokenKind::kEnd) break;
  } while (depth > 0);
}

void Parser::skip_to_colon() {
  int depth = 0;
  while (!(depth == 0 && cur_->at_op(":")) && !cur_->at_end() &&
         cur_->peek().kind != TokenKind::kNewline) {
    if (opens_bracket(cur_->peek())) ++depth;
    if (closes_bracket(cur_->peek())) --depth;
    cur_->next();
  }
  if (!cur_->at_op(":")) {
    fail(cur_->peek(),
         "expected ':' to open the block, found " + TokenCursor::describe(cur_->peek()));
  }
}

void Parser::skip_compound() {
  // The statement's own clauses: if/elif/else, try/except/else/finally, for/while/else, ...
  static const char* kClauses[] = {"elif", "else", "except", "finally"};
  do {
    cur_->next();
    skip_to_colon();
    skip_suite();
    while (cur_->peek().kind == TokenKind::kNewline) cur_->next();
  } while (std::any_of(std::begin(kClauses), std::end(kClauses),
                       [&](const char* c) { return cur_->at_name(c); }));
}

void Parser::skip_simple_statement() {
  while (!cur_->at_end() && cur_->peek().kind != TokenKind::kNewline &&
         cur_->peek().kind != TokenKind::kDedent) {
    cur_->next();
  }
  if (cur_->peek().kind == TokenKind::kNewline) cur_->next();
}

// ---- The module ---------------------------------------------------------------------------------

void Parser::parse_module() {
  context_ = Context::kModule;
  while (!cur_->at_end()) {
    if (cur_->peek().kind == TokenKind::kDedent || cur_->peek().kind == TokenKind::kNewline) {
      cur_->next();
      continue;
    }
    parse_module_statement();
  }
}

void Parser::parse_module_statement() {
  const Token t = cur_->peek();
  if (t.kind == TokenKind::kOp && t.text == "@") {
    std::vector<Decorator> decorators = parse_decorators();
    if (cur_->at_name("class")) return skip_compound();
    if (!cur_->at_name("def")) {
      fail(cur_->peek(),
           "expected 'def' after the decorators, found " + TokenCursor::describe(cur_->peek()));
    }
    return parse_def(std::move(decorators), cur_->next());
  }
  if (t.kind == TokenKind::kName) {
    if (t.text == "def") {
      def_start_ = cur_->position();
      return parse_def({}, cur_->next());
    }
    if (t.text == "import" || t.text == "from") return parse_import();
    if (t.text == "if") return parse_module_if();
    if (t.text == "class" || t.text == "try" || t.text == "with" || t.text == "for" ||
        t.text == "while" || t.text == "async" || t.text == "match") {
      return skip_compound();  // host code
    }
  }
  if (t.kind == TokenKind::kIndent) {
    fail(t, "unexpected indentation: this line is indented deeper than its block");
  }
  // A simple statement: kept when Tessel can evaluate it (constants the kernels use), skipped
  // otherwise (host code: argparse, torch, prints ...). A false assert still fails.
  size_t start = cur_->position();
  std::vector<Stmt> out;
  std::vector<size_t> lets;
  try {
    parse_statement(out, lets);
  } catch (const AssertionFailure&) {
    throw;
  } catch (const UserError& e) {
    cur_->rewind(start);
    mark_host_targets(e.what());
    skip_simple_statement();
  }
}

void Parser::mark_host_targets(const std::string& why) {
  // `a = b = f(...)` that Tessel cannot evaluate: a, b name host values from now on.
  std::string reason = why.substr(0, why.find('\n'));
  size_t colon = reason.find(": ");
  if (reason.rfind(path_ + ":", 0) == 0 && colon != std::string::npos) {
    reason = reason.substr(colon + 2);
  }
  int depth = 0;
  bool segment_start = true;
  for (size_t k = 0;; ++k) {
    const Token& t = cur_->peek(k);
    if (t.kind == TokenKind::kEnd || t.kind == TokenKind::kNewline) break;
    if (opens_bracket(t)) ++depth;
    if (closes_bracket(t)) --depth;
    if (depth == 0 && t.kind == TokenKind::kName && segment_start &&
        (cur_->at_op("=", k + 1) || cur_->at_op(",", k + 1) || cur_->at_op(":", k + 1)) &&
        !is_keyword(t.text) && t.text != "T") {
      Value host;
      host.kind = Value::Kind::kHost;
      host.text = "'" + t.text + "', set at line " + std::to_string(t.line) +
                  " by host code that Tessel does not run (" + reason + ")";
      scope_->names[t.text] = Binding{host, loc_of(t), false};
    }
    segment_start = depth == 0 && t.kind == TokenKind::kOp && (t.text == "=" || t.text == ",")
                        ? true
                        : (segment_start && t.kind == TokenKind::kOp && t.text == "(");
  }
}

void Parser::parse_module_if() {
  // `if __name__ == "__main__":` and conditions on host values are host code; a constant
  // condition (on module constants) picks its branch as in a kernel.
  size_t start = cur_->position();
  if (!cur_->at_name("__name__", 1)) {
    cur_->next();
    try {
      const Token cond_at = cur_->peek();
      Value cond = numeric(parse_value(), cond_at);
      if (py_truth(cond) && cur_->at_op(":")) {
        cur_->rewind(start);
        std::vector<Stmt> out;
        std::vector<size_t> lets;
        return parse_if(out, lets);
      }
    } catch (const AssertionFailure&) {
      throw;
    } catch (const UserError&) {
      // a condition on host values
    }
    cur_->rewind(start);
  }
  skip_compound();
}

// ---- What a def is ------------------------------------------------------------------------------

DefScan Parser::scan_def(const std::vector<Decorator>& decorators) const {
  DefScan scan;
  bool prim = false;
  for (const Decorator& d : decorators) {
    if (d.name == "T.macro") scan.macro = true;
    if (d.name == "T.prim_func") prim = true;
    if (is_jit_decorator(d.name)) scan.jit = true;
  }
  bool tensor_params = params_have_tensors();
  // Skip the signature to its ':'.
  int depth = 0;
  size_t k = 1;
  for (;; ++k) {
    const Token& t = cur_->peek(k);
    if (t.kind == TokenKind::kEnd) break;
    if (opens_bracket(t)) ++depth;
    if (closes_bracket(t)) --depth;
    if (depth == 0 && t.kind == TokenKind::kOp && t.text == ":") break;
  }
  // The body: a block, or the rest of the line. Nested defs are told apart from the function's
  // own statements by the indentation they end at.
  bool block =
      cur_->peek(k + 1).kind == TokenKind::kNewline && cur_->peek(k + 2).kind == TokenKind::kIndent;
  bool own_launch = false, nested_kernel = false;
  int indent = 0;
  std::vector<int> nested;  // indentation of each enclosing nested def's `def` line
  bool pending_def = false;
  for (k += 1;; ++k) {
    const Token& t = cur_->peek(k);
    if (t.kind == TokenKind::kEnd) break;
    if (t.kind == TokenKind::kNewline) {
      if (!block) break;
      // A one-line nested def ends at its newline.
      if (pending_def && cur_->peek(k + 1).kind != TokenKind::kIndent) nested.pop_back();
      pending_def = false;
      continue;
    }
    if (t.kind == TokenKind::kIndent) {
      ++indent;
      continue;
    }
    if (t.kind == TokenKind::kDedent) {
      if (--indent <= 0) break;
      while (!nested.empty() && indent <= nested.back()) nested.pop_back();
      continue;
    }
    bool inside = !nested.empty();
    const Token& before = cur_->peek(k - 1);
    bool line_start = before.kind == TokenKind::kNewline || before.kind == TokenKind::kIndent ||
                      before.kind == TokenKind::kDedent;
    if (!inside && line_start && t.kind == TokenKind::kName && cur_->at_op(":", k + 1) &&
        cur_->peek(k + 2).kind == TokenKind::kName) {
      // `A: T.Tensor((M, K), dtype)`: a tensor parameter declared in the body (eager style).
      std::string dotted = cur_->peek(k + 2).text;
      for (size_t j = k + 3; cur_->at_op(".", j) && cur_->peek(j + 1).kind == TokenKind::kName;
           j += 2) {
        dotted += "." + cur_->peek(j + 1).text;
      }
      std::string norm = normalize(dotted);
      if (norm == "T.Tensor" || norm == "T.Buffer") scan.declared.insert(t.text);
    }
    if (t.kind == TokenKind::kName && t.text == "def") {
      nested.push_back(indent);
      pending_def = true;
      continue;
    }
    if (t.kind == TokenKind::kOp && t.text == "@" && cur_->peek(k + 1).kind == TokenKind::kName) {
      std::string dotted = cur_->peek(k + 1).text;
      for (size_t j = k + 2; cur_->at_op(".", j) && cur_->peek(j + 1).kind == TokenKind::kName;
           j += 2) {
        dotted += "." + cur_->peek(j + 1).text;
      }
      std::string norm = normalize(dotted);
      if (norm == "T.prim_func" || is_jit_decorator(norm)) nested_kernel = true;
      continue;
    }
    if (t.kind != TokenKind::kName || (k > 0 && cur_->at_op(".", k - 1))) continue;
    std::string dotted = t.text;
    size_t j = k + 1;
    for (; cur_->at_op(".", j) && cur_->peek(j + 1).kind == TokenKind::kName; j += 2) {
      dotted += "." + cur_->peek(j + 1).text;
    }
    std::string norm = normalize(dotted);
    if (norm == "T.Kernel") (inside ? nested_kernel : own_launch) = true;
    if (inside && (norm == "T.Tensor" || norm == "T.Buffer")) nested_kernel = true;
    if ((norm == "T.const" || norm == "T.dynamic" || norm == "T.symbolic") && cur_->at_op("(", j) &&
        cur_->peek(j + 1).kind == TokenKind::kString) {
      const std::string& text = cur_->peek(j + 1).text;
      if (norm == "T.const") {
        for (const std::string& n : const_names(text)) scan.consts.push_back(n);
      } else {
        scan.dynamics.push_back(text);
      }
    }
  }
  if (scan.macro) {
    scan.role = DefRole::kMacro;
  } else if (prim || own_launch || tensor_params) {
    scan.role = DefRole::kKernel;
  } else if (nested_kernel || scan.jit) {
    scan.role = DefRole::kGenerator;
  }
  return scan;
}

bool Parser::params_have_tensors() const {
  // At the function name: is any parameter annotated `NAME: T.Tensor` / `T.Buffer`?
  int depth = 0;
  for (size_t k = 1;; ++k) {
    const Token& t = cur_->peek(k);
    if (t.kind == TokenKind::kEnd || t.kind == TokenKind::kNewline) return false;
    if (t.kind != TokenKind::kOp) continue;
    if (t.text == "(" || t.text == "[") ++depth;
    if (t.text == ")" || t.text == "]") {
      if (--depth == 0) return false;
    }
    if (t.text == ":" && depth == 1 && cur_->peek(k + 1).kind == TokenKind::kName) {
      std::string dotted = cur_->peek(k + 1).text;
      for (size_t j = k + 2; cur_->at_op(".", j) && cur_->peek(j + 1).kind == TokenKind::kName;
           j += 2) {
        dotted += "." + cur_->peek(j + 1).text;
      }
      std::string norm = normalize(dotted);
      if (norm == "T.Tensor" || norm == "T.Buffer") return true;
    }
  }
}

void Parser::parse_def(std::vector<Decorator> decorators, const Token& def_token) {
  if (cur_->peek().kind != TokenKind::kName) {
    fail(cur_->peek(), "expected a function name after 'def'");
  }
  check_binding(cur_->peek());
  DefScan scan = scan_def(decorators);
  const Token name_tok = cur_->peek();
  switch (scan.role) {
    case DefRole::kMacro:
      return parse_macro_def(def_token);
    case DefRole::kKernel:
    case DefRole::kGenerator:
      if (context_ == Context::kModule) {
        // A kernel of the file: read later if it is the one picked.
        KernelEntry entry{name_tok.text, scan, def_start_, name_tok};
        std::erase_if(entries_, [&](const KernelEntry& e) { return e.name == entry.name; });
        entries_.push_back(entry);
        Value v;
        v.kind = Value::Kind::kKernel;
        v.text = name_tok.text;
        bind(name_tok.text, v, name_tok);
        cur_->next();
        skip_to_colon();
        skip_suite();
        return;
      }
      if (scan.role == DefRole::kKernel) return parse_kernel_def(def_token, decorators, scan);
      break;
    case DefRole::kHost:
      break;
  }
  // Plain Python (a reference, a test harness, a helper) or a generator inside a function:
  // never read; a call of it says what it is.
  Value host;
  host.kind = Value::Kind::kHost;
  host.text = scan.role == DefRole::kGenerator
                  ? "the kernel generator '" + name_tok.text + "' (line " +
                        std::to_string(name_tok.line) +
                        "), defined inside a function (Tessel reads kernel generators at the top "
                        "level of a file)"
                  : "the plain Python function '" + name_tok.text + "' (line " +
                        std::to_string(name_tok.line) + ")";
  bind(name_tok.text, host, name_tok);
  cur_->next();
  skip_to_colon();
  skip_suite();
}

// ---- Picking the kernel -------------------------------------------------------------------------

const KernelEntry& Parser::pick_entry() const {
  std::string list;
  for (const KernelEntry& e : entries_) {
    list +=
        (list.empty() ? "" : ", ") + e.name + " (line " + std::to_string(e.name_token.line) + ")";
  }
  if (entries_.empty()) {
    throw KernelFileError(path_ +
                          ": no kernel in this file: expected a @T.prim_func or @tilelang.jit "
                          "function with a `with T.Kernel(...)` launch (its tensors annotated "
                          "T.Tensor((...), dtype)), or a function that defines one and returns it");
  }
  if (!kernel_choice_.empty()) {
    for (const KernelEntry& e : entries_) {
      if (e.name == kernel_choice_) return e;
    }
    throw KernelFileError(path_ + ": --kernel " + kernel_choice_ +
                          ": this file has no kernel of that name; its kernels are " + list);
  }
  if (entries_.size() > 1) {
    throw KernelFileError(path_ + ": this file holds " + std::to_string(entries_.size()) +
                          " kernels: " + list + "; pick one with --kernel NAME");
  }
  return entries_.front();
}

void Parser::parse_entry(const KernelEntry& entry) {
  cur_->rewind(entry.start);
  std::vector<Decorator> decorators = parse_decorators();
  const Token def_token = cur_->next();
  if (entry.scan.role == DefRole::kGenerator) {
    parse_generator(def_token, decorators);
  } else {
    parse_kernel_def(def_token, decorators, entry.scan);
    const Value& kernel = lookup(entry.name)->value;
    result_.kernel = kernel.kernel;
    result_.outputs = kernel.outputs;
  }
}

}  // namespace tessel::kernel_parser_detail
