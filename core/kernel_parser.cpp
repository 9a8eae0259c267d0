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

void Parser::start() {
  main_cursor_ = TokenCursor(source_, tokenize(source_, TokenizeMode::kFile, path_));
  main_cursor_.set_file(path_);
  scan_limits();
  scan_directives();
  // Module-level names live in a child of the built-ins, so they may shadow them.
  auto module = std::make_shared<NameScope>();
  module->parent = scope_;
  scope_ = module;
  module_scope_ = module;
  parse_module();
}

/// Runs `fn`, turning a UserError that is not yet located into one that names the file.
template <typename Fn>
auto with_file_errors(const std::string& path, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const KernelFileError&) {
    throw;
  } catch (const LocatedError&) {
    throw;
  } catch (const UserError& e) {
    std::string message = e.what();
    if (message.rfind(path + ":", 0) == 0) throw KernelFileError(message);
    throw UserError(path + ": " + message);
  }
}

ParsedKernel Parser::run() {
  return with_file_errors(path_, [&] {
    start();
    parse_entry(pick_entry());
    for (const auto& [name, d] : tensor_directives_) {
      if (!d.used) {
        fail(token_at(d.line, d.column), "this directive describes '" + name +
                                             "', but no kernel "
                                             "parameter '" +
                                             name + "' is annotated with a bare T.Tensor");
      }
    }
    return result_;
  });
}

std::vector<KernelFileEntry> Parser::list() {
  return with_file_errors(path_, [&] {
    start();
    std::vector<KernelFileEntry> list;
    for (const KernelEntry& e : entries_) {
      KernelFileEntry entry{e.name, loc_of(e.name_token), {}};
      // The parameters -D sets: of the def's signature, minus the tensors.
      cur_->rewind(e.start);
      parse_decorators();
      cur_->next();  // def
      cur_->next();  // the name
      for (const SignatureParam& p : read_signature(e.name)) {
        if (auto scalar = scalar_param_type(p)) {
          entry.params.push_back(
              {p.name.text, std::nullopt, loc_of(p.name), KernelFileParam::Kind::kScalar});
          continue;
        }
        bool tensor = p.annotation_head.rfind("T.", 0) == 0 || e.scan.declared.count(p.name.text);
        if (tensor) continue;
        KernelFileParam param{p.name.text, std::nullopt, loc_of(p.name)};
        if (p.default_value) param.default_text = define_text(*p.default_value);
        if (auto passed = host_argument(e.name, p.position, p.name.text)) {
          param.default_text = define_text(passed->value);
          param.host_call = loc_of(passed->call);
        }
        entry.params.push_back(param);
      }
      if (e.scan.role == DefRole::kGenerator) {
        for (const SignatureParam& p : nested_kernel_signature()) {
          if (scalar_param_type(p)) {
            entry.params.push_back(
                {p.name.text, std::nullopt, loc_of(p.name), KernelFileParam::Kind::kScalar});
          }
        }
      }
      for (const std::string& c : e.scan.consts) {
        entry.params.push_back(
            {c, std::nullopt, loc_of(e.name_token), KernelFileParam::Kind::kConst});
      }
      for (const std::string& d : e.scan.dynamics) {
        entry.params.push_back(
            {d, std::nullopt, loc_of(e.name_token), KernelFileParam::Kind::kDynamic});
      }
      list.push_back(std::move(entry));
    }
    return list;
  });
}

std::optional<DataType> Parser::scalar_param_type(const SignatureParam& p) {
  if (p.annotation_head.rfind("T.", 0) != 0) return std::nullopt;
  return DataType::parse(p.annotation_head.substr(2));
}

std::vector<SignatureParam> Parser::nested_kernel_signature() {
  // The cursor is in the generator's body (after its signature): find its first
  // `@T.prim_func` def before the body ends and read that def's signature.
  int indent = 0;
  bool decorated = false;
  for (;;) {
    const Token& t = cur_->peek();
    if (t.kind == TokenKind::kEnd) return {};
    if (t.kind == TokenKind::kIndent) ++indent;
    if (t.kind == TokenKind::kDedent && --indent <= 0) return {};
    if (t.kind == TokenKind::kOp && t.text == "@" && cur_->peek(1).kind == TokenKind::kName) {
      cur_->next();
      std::string dotted;
      read_dotted(dotted);
      std::string norm = normalize(dotted);
      decorated = decorated || norm == "T.prim_func";
      continue;
    }
    if (t.kind == TokenKind::kName && t.text == "def") {
      if (decorated && cur_->peek(1).kind == TokenKind::kName) {
        cur_->next();
        std::string name = cur_->next().text;
        return read_signature(name);
      }
      decorated = false;
    }
    cur_->next();
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

// ---- Imports and decorators ---------------------------------------------------------------------

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

std::vector<Decorator> Parser::parse_decorators() {
  def_start_ = cur_->position();
  std::vector<Decorator> decorators;
  while (cur_->at_op("@")) {
    cur_->next();
    const Token at = cur_->peek();
    if (at.kind != TokenKind::kName) fail(at, "expected a decorator name after '@'");
    std::string dotted;
    read_dotted(dotted);
    Decorator d{normalize(dotted), at, std::nullopt};
    if (cur_->at_op("(")) {  // arguments (out_idx=..., configs=...): read where they matter
      d.args = cur_->position();
      int depth = 0;
      do {
        if (cur_->at_end()) fail(at, "unclosed '(' in this decorator");
        if (cur_->at_op("(") || cur_->at_op("[") || cur_->at_op("{")) ++depth;
        if (cur_->at_op(")") || cur_->at_op("]") || cur_->at_op("}")) --depth;
        cur_->next();
      } while (depth > 0);
    }
    decorators.push_back(std::move(d));
    if (cur_->peek().kind != TokenKind::kNewline) {
      fail(cur_->peek(),
           "expected the end of the decorator line, found " + TokenCursor::describe(cur_->peek()));
    }
    cur_->next();
  }
  return decorators;
}

}  // namespace kernel_parser_detail

ParsedKernel parse_kernel(const std::string& source, const std::string& path,
                          const std::map<std::string, std::string>& defines,
                          const std::string& kernel) {
  kernel_parser_detail::Parser parser(source, path.empty() ? "<kernel>" : path, defines);
  parser.set_kernel_choice(kernel);
  return parser.run();
}

std::vector<KernelFileEntry> list_kernels(const std::string& source, const std::string& path) {
  return kernel_parser_detail::Parser(source, path.empty() ? "<kernel>" : path, {}).list();
}

ParsedKernel parse_kernel_file(const std::string& path,
                               const std::map<std::string, std::string>& defines,
                               const std::string& kernel) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw KernelFileError("cannot read the kernel file '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_kernel(text.str(), path, defines, kernel);
}

}  // namespace tessel
