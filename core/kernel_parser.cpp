// The kernel-file parser's entry points and the file's structure: input limits, directives,
// imports, decorators and which kind of function each def is.
#include "core/kernel_parser.h"

#include <cctype>
#include <fstream>
#include <sstream>

#include "core/kernel_parser_detail.h"

namespace tessel {

namespace kernel_parser_detail {

namespace {

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return true;
}

}  // namespace

Parser::Parser(const std::string& source, std::string path,
               const std::map<std::string, std::string>& defines)
    : source_(source),
      path_(std::move(path)),
      defines_(defines),
      main_cursor_(source, std::vector<Token>{}),
      cur_(&main_cursor_) {
  scope_ = std::make_shared<NameScope>();
  bind_python_builtins(*scope_);
  scope_->names["T"] = Binding{Value::module("T"), {}, false};
  scope_->names["tilelang"] = Binding{Value::module("tilelang"), {}, false};
  Value maker;
  maker.kind = Value::Kind::kConvertMaker;
  scope_->names["_tir_packed_to_unsigned_convert"] = Binding{maker, {}, false};
}

ParsedKernel Parser::run() {
  try {
    main_cursor_ = TokenCursor(source_, tokenize(source_, TokenizeMode::kFile, path_));
    main_cursor_.set_file(path_);
    scan_limits();
    scan_directives();
    // Module-level names live in a child of the built-ins, so they may shadow them.
    auto module = std::make_shared<NameScope>();
    module->parent = scope_;
    scope_ = module;
    parse_module();
    if (!have_kernel_) {
      throw KernelFileError(path_ +
                            ": no kernel in this file: expected a @T.prim_func (or "
                            "@tilelang.jit) function whose parameters are T.Tensor((...), dtype) "
                            "tensors");
    }
    for (const auto& [name, d] : tensor_directives_) {
      if (!d.used) {
        fail(token_at(d.line, d.column), "this directive describes '" + name +
                                             "', but no kernel "
                                             "parameter '" +
                                             name + "' is annotated with a bare T.Tensor");
      }
    }
    return result_;
  } catch (const KernelFileError&) {
    throw;
  } catch (const LocatedError&) {
    throw;
  } catch (const UserError& e) {
    std::string message = e.what();
    if (message.rfind(path_ + ":", 0) == 0) throw KernelFileError(message);
    throw UserError(path_ + ": " + message);
  }
}

void Parser::scan_limits() const {
  // Bound recursion: bracket depth, runs of unary operators, powers and conditionals per line,
  // tokens per line, and indentation depth. Real kernels stay far below every limit.
  int depth = 0, unary_run = 0, powers = 0, conditionals = 0, tokens = 0, indent = 0;
  Token line_start = cur_->peek();
  for (size_t k = 0;; ++k) {
    const Token& t = cur_->peek(k);
    if (t.kind == TokenKind::kEnd) break;
    if (t.kind == TokenKind::kNewline) {
      depth = unary_run = powers = conditionals = tokens = 0;
      line_start = cur_->peek(k + 1);
      continue;
    }
    if (t.kind == TokenKind::kIndent && ++indent > kMaxBlockDepth) {
      fail(t, "blocks nest more than " + std::to_string(kMaxBlockDepth) + " deep");
    }
    if (t.kind == TokenKind::kDedent) --indent;
    if (++tokens > kMaxLineTokens) {
      fail(line_start,
           "this statement has more than " + std::to_string(kMaxLineTokens) + " tokens; split it");
    }
    bool unary = (t.kind == TokenKind::kOp && (t.text == "-" || t.text == "+" || t.text == "~")) ||
                 (t.kind == TokenKind::kName && t.text == "not");
    unary_run = unary ? unary_run + 1 : 0;
    if (unary_run > kMaxUnaryRun) fail(t, "too many unary operators in a row");
    if (t.kind == TokenKind::kOp && t.text == "**" && ++powers > kMaxUnaryRun) {
      fail(t, "too many '**' in one statement");
    }
    if (t.kind == TokenKind::kName && (t.text == "if" || t.text == "lambda") &&
        ++conditionals > kMaxUnaryRun) {
      fail(t, "too many conditional expressions in one statement");
    }
    if (t.kind == TokenKind::kOp && (t.text == "(" || t.text == "[" || t.text == "{") &&
        ++depth > kMaxBracketDepth) {
      fail(t, "brackets nest more than " + std::to_string(kMaxBracketDepth) + " deep");
    }
    if (t.kind == TokenKind::kOp && (t.text == ")" || t.text == "]" || t.text == "}")) --depth;
  }
}

void Parser::scan_directives() {
  std::istringstream in(source_);
  std::string text;
  for (int line = 1; std::getline(in, text); ++line) {
    size_t p = text.find_first_not_of(" \t");
    if (p == std::string::npos || text[p] != '#') continue;
    p = text.find_first_not_of(" \t", p + 1);
    if (p == std::string::npos || text.compare(p, 7, "tessel:") != 0) continue;
    p = text.find_first_not_of(" \t", p + 7);
    if (p == std::string::npos) p = text.size();
    std::string body = text.substr(p);
    while (!body.empty() && (body.back() == ' ' || body.back() == '\t' || body.back() == '\r')) {
      body.pop_back();
    }
    Token at = token_at(line, static_cast<int>(p) + 1);
    size_t eq = body.find('='), colon = body.find(':');
    auto trim = [](std::string s) {
      size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
      return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
    };
    if (eq != std::string::npos && trim(body.substr(0, eq)) == "reference") {
      std::string name = trim(body.substr(eq + 1));
      if (!is_identifier(name)) {
        fail(at,
             "`# tessel: reference=NAME` needs the name of a built-in kernel (tessel list), "
             "got '" +
                 name + "'");
      }
      if (result_.reference) fail(at, "a second reference directive; a kernel has one reference");
      result_.reference = name;
      result_.reference_loc = loc_of(at);
      continue;
    }
    if (colon != std::string::npos && is_identifier(trim(body.substr(0, colon)))) {
      std::string name = trim(body.substr(0, colon));
      size_t start = body.find_first_not_of(" \t", colon + 1);
      if (start == std::string::npos) fail(at, "the directive for '" + name + "' has no T.Tensor");
      if (tensor_directives_.count(name)) fail(at, "a second directive for '" + name + "'");
      tensor_directives_[name] =
          TensorDirective{body.substr(start), line, static_cast<int>(p + start) + 1, false};
      continue;
    }
    fail(at,
         "unknown directive; the directives are `# tessel: reference=NAME` (the built-in "
         "kernel whose reference checks this one) and `# tessel: NAME: T.Tensor(shape, dtype)` "
         "(the shape of a parameter annotated with a bare T.Tensor)");
  }
}

// ---- The module -------------------------------------------------------------------------------

void Parser::parse_module() {
  context_ = Context::kModule;
  std::vector<Stmt> out;
  std::vector<size_t> lets;
  while (!cur_->at_end()) {
    if (cur_->peek().kind == TokenKind::kDedent) {
      cur_->next();
      continue;
    }
    parse_statement(out, lets);
  }
}

void Parser::parse_import() {
  const Token kw = cur_->next();
  auto module_name = [&] {
    std::string name;
    while (cur_->accept_op(".")) name += ".";
    if (cur_->peek().kind == TokenKind::kName) {
      std::string dotted;
      read_dotted(dotted);
      name += dotted;
    }
    return name;
  };
  auto import_alias = [&]() -> Token {
    const Token alias = cur_->expect_name("a name after 'as'");
    if (is_keyword(alias.text))
      fail(alias, "'" + alias.text + "' is a keyword and cannot be a name");
    return alias;
  };
  // Every imported name is bound to its module path (tilelang.language is T); names of other
  // modules only matter to name host code in messages and for the few functions Tessel
  // evaluates (math.sqrt, tvm.DataType, torch.float16, ...).
  auto bind_module = [&](const std::string& module, const Token& alias) {
    if (module.size() >= 31 &&
        module.compare(module.size() - 31, 31, "_tir_packed_to_unsigned_convert") == 0) {
      Value maker;  // TVM's converter, built in
      maker.kind = Value::Kind::kConvertMaker;
      bind(alias.text, maker, alias);
      return;
    }
    bind(alias.text, Value::module(kernel_parser_detail::module_name(module)), alias);
  };
  if (kw.text == "import") {
    do {
      const Token first = cur_->peek();
      std::string module = module_name();
      if (module.empty()) fail(first, "expected a module name after 'import'");
      if (cur_->accept_name("as")) {
        bind_module(module, import_alias());
      } else if (first.kind == TokenKind::kName) {
        bind_module(first.text, first);  // `import a.b` binds a
      }
    } while (cur_->accept_op(","));
  } else {
    std::string module = module_name();
    if (!cur_->accept_name("import")) {
      fail(cur_->peek(),
           "expected 'import' in the from-import, found " + TokenCursor::describe(cur_->peek()));
    }
    bool paren = cur_->accept_op("(");
    if (!cur_->accept_op("*")) {
      do {
        if (paren && cur_->at_op(")")) break;
        Token name = cur_->expect_name("a name to import");
        Token alias = name;
        if (cur_->accept_name("as")) alias = import_alias();
        bind_module(module + "." + name.text, alias);
      } while (cur_->accept_op(","));
    }
    if (paren) cur_->expect_op(")", "to close the imported names");
  }
  end_of_simple_statement();
}

std::vector<CallArgs> Parser::parse_decorators() {
  std::vector<CallArgs> decorators;
  while (cur_->at_op("@")) {
    cur_->next();
    const Token at = cur_->peek();
    if (at.kind != TokenKind::kName) fail(at, "expected a decorator name after '@'");
    std::string dotted;
    read_dotted(dotted);
    decorators.push_back(CallArgs{normalize(dotted), at, {}});
    if (cur_->at_op("(")) {  // decorator arguments (out_idx=..., configs=...) do not matter here
      int depth = 0;
      do {
        if (cur_->at_end()) fail(at, "unclosed '(' in this decorator");
        if (cur_->at_op("(") || cur_->at_op("[") || cur_->at_op("{")) ++depth;
        if (cur_->at_op(")") || cur_->at_op("]") || cur_->at_op("}")) --depth;
        cur_->next();
      } while (depth > 0);
    }
    if (cur_->peek().kind != TokenKind::kNewline) {
      fail(cur_->peek(),
           "expected the end of the decorator line, found " + TokenCursor::describe(cur_->peek()));
    }
    cur_->next();
  }
  return decorators;
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

bool Parser::body_has_nested_def() const {
  // At the function name: skip the signature to its ':' and look for `def` in the block.
  int depth = 0;
  size_t k = 1;
  for (;; ++k) {
    const Token& t = cur_->peek(k);
    if (t.kind == TokenKind::kEnd) return false;
    if (t.kind != TokenKind::kOp) continue;
    if (t.text == "(" || t.text == "[") ++depth;
    if (t.text == ")" || t.text == "]") --depth;
    if (t.text == ":" && depth == 0) break;
  }
  if (cur_->peek(k + 1).kind != TokenKind::kNewline ||
      cur_->peek(k + 2).kind != TokenKind::kIndent) {
    return false;
  }
  int indent = 0;
  for (k += 2;; ++k) {
    const Token& t = cur_->peek(k);
    if (t.kind == TokenKind::kEnd) return false;
    if (t.kind == TokenKind::kIndent) ++indent;
    if (t.kind == TokenKind::kDedent && --indent == 0) return false;
    if (t.kind == TokenKind::kName && t.text == "def") return true;
  }
}

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

void Parser::parse_def(std::vector<CallArgs> decorators, const Token& def_token) {
  if (cur_->peek().kind != TokenKind::kName) {
    fail(cur_->peek(), "expected a function name after 'def'");
  }
  check_binding(cur_->peek());
  bool macro = false, prim = false;
  const CallArgs* unknown = nullptr;
  for (const CallArgs& d : decorators) {
    if (d.callee == "T.macro")
      macro = true;
    else if (d.callee == "T.prim_func")
      prim = true;
    else if (d.callee.rfind("tilelang.", 0) != 0 && !unknown)
      unknown = &d;
  }
  bool kernel = !macro && (prim || params_have_tensors());
  if ((macro || kernel) && unknown) {
    fail(unknown->at, "unsupported decorator '@" + unknown->callee +
                          "'; kernels take "
                          "@T.prim_func or @tilelang.jit, helpers @T.macro");
  }
  if (macro) return parse_macro_def(def_token);
  if (kernel) return parse_kernel_def(def_token);
  if (context_ == Context::kModule && body_has_nested_def()) {
    if (unknown) {
      fail(unknown->at, "unsupported decorator '@" + unknown->callee + "' on the enclosing def");
    }
    return parse_generator(def_token);
  }
  if (context_ == Context::kModule) {
    // Host code (a test harness, a reference in PyTorch): skipped unread.
    cur_->next();
    int depth = 0;
    while (!(depth == 0 && cur_->at_op(":")) && !cur_->at_end()) {
      if (cur_->at_op("(") || cur_->at_op("[")) ++depth;
      if (cur_->at_op(")") || cur_->at_op("]")) --depth;
      cur_->next();
    }
    skip_suite();
    return;
  }
  fail(def_token,
       "a plain nested def is not supported: mark helpers @T.macro (they are "
       "inlined where they are called)");
}

}  // namespace kernel_parser_detail

ParsedKernel parse_kernel(const std::string& source, const std::string& path,
                          const std::map<std::string, std::string>& defines) {
  return kernel_parser_detail::Parser(source, path.empty() ? "<kernel>" : path, defines).run();
}

ParsedKernel parse_kernel_file(const std::string& path,
                               const std::map<std::string, std::string>& defines) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw KernelFileError("cannot read the kernel file '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_kernel(text.str(), path, defines);
}

}  // namespace tessel
