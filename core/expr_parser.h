// A tokenizer and precedence-climbing parser for Python expressions into tessel::Expr, used by
// layout specs and the kernel-file front end; plus the layout-spec parser (`tessel layout SPEC`).
//
// Operator precedence is Python's, loosest first: lambda; `x if c else y`; `or`; `and`; `not`;
// comparisons (chained: `a < b < c` is `a < b and b < c`); `|`; `^`; `&`; `<< >>`; `+ -`;
// `* / // %`; unary `+ - ~`; `**`; calls, attributes and subscripts. Errors are UserErrors whose
// message quotes the source line with a caret under the offending column.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/expr.h"
#include "core/layout.h"

namespace tessel {

enum class TokenKind : uint8_t {
  kName,     ///< identifiers and keywords (`lambda`, `and`, `True`)
  kInt,      ///< 42, 0x2a, 0b101, 1_000
  kFloat,    ///< 1.5, 1e-3
  kString,   ///< 'a' or "a" (value without quotes, simple escapes decoded)
  kOp,       ///< operators and delimiters: + - * // % ** << >> & | ^ ~ < <= == ( ) [ ] , : . = ->
  kNewline,  ///< end of a logical line (kFile mode only)
  kIndent,   ///< indentation increased (kFile mode only)
  kDedent,   ///< indentation decreased (kFile mode only)
  kEnd,      ///< end of input
};

/// One token with its 1-based line and column in the source.
struct Token {
  TokenKind kind = TokenKind::kEnd;
  std::string text;  ///< the source text (for strings: the decoded value)
  int line = 1;
  int column = 1;
  int64_t int_value = 0;
  double float_value = 0.0;
};

/// kExpression: newlines are whitespace. kFile: Python's logical lines, NEWLINE/INDENT/DEDENT
/// tokens, `#` comments, implicit line joining inside brackets.
enum class TokenizeMode { kExpression, kFile };

/// Splits `source` into tokens ending with kEnd. Throws UserError (with caret) on an unknown
/// character, an unterminated string, a malformed number or inconsistent dedent. A non-empty
/// `file` names the location as file:line:column in those errors (kernel files).
std::vector<Token> tokenize(const std::string& source,
                            TokenizeMode mode = TokenizeMode::kExpression,
                            const std::string& file = "");

/// "line L, column C: MESSAGE" (or "FILE:L:C: MESSAGE" when `file` is given) followed by the
/// source line and a caret under column C.
std::string caret_message(const std::string& source, int line, int column,
                          const std::string& message, const std::string& file = "");

/// A position in a token list with look-ahead, backtracking and caret errors.
class TokenCursor {
 public:
  TokenCursor(std::string source, std::vector<Token> tokens);
  /// Tokenizes `source` in kExpression mode and applies the limits of core/input_limits.h
  /// (tokens, bracket depth, unary runs, `**` and conditionals): UserError with a caret past them.
  explicit TokenCursor(const std::string& source);

  const Token& peek(size_t ahead = 0) const;
  const Token& next();
  bool at_end() const { return peek().kind == TokenKind::kEnd; }
  bool at_op(std::string_view op, size_t ahead = 0) const;
  bool at_name(std::string_view name, size_t ahead = 0) const;
  /// Consumes the operator when it is next.
  bool accept_op(std::string_view op);
  bool accept_name(std::string_view name);
  /// Consumes the operator or throws "expected 'op' CONTEXT, found ...".
  const Token& expect_op(std::string_view op, std::string_view context = "");
  /// Consumes an identifier or throws "expected WHAT".
  const Token& expect_name(std::string_view what);
  size_t position() const { return pos_; }
  void rewind(size_t position) { pos_ = position; }
  /// The token at an absolute position (the last, kEnd, past the end).
  const Token& token(size_t position) const {
    return tokens_[std::min(position, tokens_.size() - 1)];
  }
  const std::string& source() const { return source_; }
  /// Names the source in error locations (file:line:column), for kernel files.
  void set_file(std::string file) { file_ = std::move(file); }
  /// Throws a UserError with a caret under `at`.
  [[noreturn]] void error_at(const Token& at, const std::string& message) const;
  /// "'+'", "name 'x'", "end of input": how a token is named in "found ..." messages.
  static std::string describe(const Token& token);

 private:
  void check_expression_limits() const;
  std::string source_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  std::string file_;
};

/// How the parser turns names, calls and subscripts into expressions. Every hook may return
/// nullopt to fall back to the parser's default (user error for names and subscripts; the
/// built-in functions for calls).
struct ExprParseHooks {
  /// A (possibly dotted) name such as `i` or `T.thread_binding`.
  std::function<std::optional<Expr>(const std::string& name, const Token& at)> resolve_name;
  /// A call `callee(args...)`, tried before the built-in functions.
  std::function<std::optional<Expr>(const std::string& callee, const std::vector<Expr>& args,
                                    const Token& at)>
      resolve_call;
  /// A call `callee(...)` whose arguments the caller reads itself (keyword arguments, strings),
  /// tried first, with the cursor on the '('. Returning nullopt must leave the cursor there.
  std::function<std::optional<Expr>(const std::string& callee, TokenCursor& cursor,
                                    const Token& at)>
      parse_call;
  /// A subscript `name[indices...]` (buffer loads in kernel files).
  std::function<std::optional<Expr>(const std::string& name, const std::vector<Expr>& indices,
                                    const Token& at)>
      resolve_subscript;
};

/// The built-in functions of expressions applied to `args`: min/max/T.min/T.max (2 or more),
/// T.if_then_else/T.Select, T.floordiv/T.floormod, abs, the math functions of the Builtin table
/// (T.exp, T.exp2, T.log, ...) and casts by dtype name (T.float16(x)). nullopt when `callee` is
/// none of them; UserError (no location) for a wrong number of arguments.
std::optional<Expr> call_builtin_function(const std::string& callee, const std::vector<Expr>& args);

/// Parses one expression starting at the cursor and stops before the first token that cannot
/// continue it (`,`, `)`, `:`, end). Built-in calls: min/max/T.min/T.max, T.if_then_else,
/// T.floordiv/T.floormod, T.cast-free math (T.exp, T.exp2, T.log, ... from the Builtin table).
/// `True`/`False` are bool literals; `/` is true division (Python), `**` needs a constant
/// non-negative exponent. Requires: names resolve through `hooks` (user error otherwise).
Expr parse_expression(TokenCursor& cursor, const ExprParseHooks& hooks);
/// Parses `text` as one whole expression (user error on trailing tokens).
Expr parse_expression(const std::string& text, const ExprParseHooks& hooks);
/// Parses `text` with the given names bound to variables (a convenience for tests and specs).
Expr parse_expression(const std::string& text, const std::vector<Var>& names);

/// A parsed `lambda a, b: body`, where the body is one expression or a parenthesised tuple.
struct ParsedLambda {
  std::vector<Var> params;    ///< fresh int32 variables named as written
  std::vector<Expr> outputs;  ///< the body, or the items of a tuple body
  Token at;                   ///< the `lambda` keyword
  Token body_at;              ///< the first token of the body
};
/// Parses a lambda at the cursor; names in the body resolve to its parameters only. Stops after
/// the body (a caller may accept more comma-separated items). UserError with a caret otherwise.
ParsedLambda parse_lambda(TokenCursor& cursor);

/// Parses a layout SPEC: a named layout (`swizzle_128b(64, 64, f16)`, `ldmatrix_x4(f16,
/// trans=True)`, dtype arguments as names or strings: f16, bf16, "float16") or an explicit
/// `Layout([64, 64], lambda i, j: i * 64 + j)` / `Fragment([16, 8], lambda i, j: (thread, local),
/// replicate=1)` in the printer's syntax (a Fragment lambda takes the replicate var as an extra
/// last parameter when it uses it). Throws UserError with a caret for malformed specs.
std::variant<Layout, Fragment> parse_layout_spec(const std::string& spec);

}  // namespace tessel
