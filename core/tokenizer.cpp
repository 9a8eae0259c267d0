// The Python tokenizer and the token cursor of the expression parser (declared in expr_parser.h).
#include <algorithm>
#include <cctype>
#include <climits>
#include <cstring>
#include <sstream>

#include "core/error.h"
#include "core/expr_parser.h"
#include "core/input_limits.h"

namespace tessel {

std::string caret_message(const std::string& source, int line, int column,
                          const std::string& message, const std::string& file) {
  std::istringstream in(source);
  std::string text;
  int lines = 0;
  std::string wanted;
  while (std::getline(in, text)) {
    ++lines;
    if (lines == line) wanted = text;
  }
  std::string where = lines <= 1
                          ? "column " + std::to_string(column)
                          : "line " + std::to_string(line) + ", column " + std::to_string(column);
  if (!file.empty()) where = file + ":" + std::to_string(line) + ":" + std::to_string(column);
  std::string caret(static_cast<size_t>(std::max(column - 1, 0)), ' ');
  // Keep tabs so the caret lines up under tab-indented source.
  for (size_t k = 0; k < caret.size() && k < wanted.size(); ++k) {
    if (wanted[k] == '\t') caret[k] = '\t';
  }
  return where + ": " + message + "\n  " + wanted + "\n  " + caret + "^";
}

namespace {

const char* kOps3[] = {"**=", "//=", "<<=", ">>=", "..."};
const char* kOps2[] = {"**", "//", "<<", ">>", "<=", ">=", "==", "!=", "->",
                       "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", ":="};
const char* kOps1 = "+-*/%&|^~<>()[]{},:.=@;";

class Tokenizer {
 public:
  Tokenizer(const std::string& src, TokenizeMode mode, const std::string& file)
      : src_(src), mode_(mode), file_(file) {}

  std::vector<Token> run() {
    indents_.push_back(0);
    at_line_start_ = true;
    while (pos_ < src_.size()) {
      if (mode_ == TokenizeMode::kFile && at_line_start_ && depth_ == 0) {
        if (handle_indentation()) continue;
      }
      char c = src_[pos_];
      if (c != '\n') at_line_start_ = false;
      if (c == '\n') {
        if (mode_ == TokenizeMode::kFile && depth_ == 0 && !tokens_.empty() &&
            tokens_.back().kind != TokenKind::kNewline &&
            tokens_.back().kind != TokenKind::kIndent &&
            tokens_.back().kind != TokenKind::kDedent) {
          push(TokenKind::kNewline, "\n", col());
        }
        advance_line();
        continue;
      }
      if (c == ' ' || c == '\t' || c == '\r' || c == '\f') {
        ++pos_;
        continue;
      }
      if (c == '#') {
        while (pos_ < src_.size() && src_[pos_] != '\n') ++pos_;
        continue;
      }
      if (c == '\\' && pos_ + 1 < src_.size() && src_[pos_ + 1] == '\n') {
        pos_ += 1;
        advance_line();
        at_line_start_ = false;
        continue;
      }
      if (std::isdigit(static_cast<unsigned char>(c)) ||
          (c == '.' && pos_ + 1 < src_.size() &&
           std::isdigit(static_cast<unsigned char>(src_[pos_ + 1])))) {
        number();
      } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        name_or_string();
      } else if (c == '"' || c == '\'') {
        string_literal(pos_);
      } else {
        op();
      }
    }
    if (mode_ == TokenizeMode::kFile) {
      if (!tokens_.empty() && tokens_.back().kind != TokenKind::kNewline &&
          tokens_.back().kind != TokenKind::kDedent) {
        push(TokenKind::kNewline, "\n", col());
      }
      while (indents_.size() > 1) {
        indents_.pop_back();
        push(TokenKind::kDedent, "", 1);
      }
    }
    push(TokenKind::kEnd, "", col());
    return tokens_;
  }

 private:
  int col() const { return static_cast<int>(pos_ - line_start_) + 1; }

  [[noreturn]] void fail(int column, const std::string& message) const {
    user_error(caret_message(src_, line_, column, message, file_));
  }

  void push(TokenKind kind, std::string text, int column) {
    Token t;
    t.kind = kind;
    t.text = std::move(text);
    t.line = line_;
    t.column = column;
    tokens_.push_back(std::move(t));
  }

  void advance_line() {
    ++pos_;
    ++line_;
    line_start_ = pos_;
    at_line_start_ = true;
  }

  /// Measures the indentation of a new logical line; emits INDENT/DEDENT. Returns true when the
  /// line was blank or a comment (consumed up to its newline).
  bool handle_indentation() {
    size_t p = pos_;
    int width = 0;
    while (p < src_.size() && (src_[p] == ' ' || src_[p] == '\t')) {
      width = src_[p] == '\t' ? (width / 8 + 1) * 8 : width + 1;
      ++p;
    }
    if (p >= src_.size() || src_[p] == '\n' || src_[p] == '#' || src_[p] == '\r') {
      while (p < src_.size() && src_[p] != '\n') ++p;
      pos_ = p;
      if (pos_ < src_.size())
        advance_line();
      else
        at_line_start_ = false;
      return true;
    }
    pos_ = p;
    at_line_start_ = false;
    if (width > indents_.back()) {
      indents_.push_back(width);
      push(TokenKind::kIndent, "", col());
    } else {
      while (width < indents_.back()) {
        indents_.pop_back();
        push(TokenKind::kDedent, "", col());
      }
      if (width != indents_.back()) {
        fail(col(), "this line's indentation matches no enclosing block");
      }
    }
    return false;
  }

  void number() {
    size_t start = pos_;
    int column = col();
    auto digits = [&](auto pred) {
      while (pos_ < src_.size() && (pred(src_[pos_]) || src_[pos_] == '_')) ++pos_;
    };
    auto is_dec = [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)) != 0; };
    Token t;
    t.line = line_;
    t.column = column;
    if (src_[pos_] == '0' && pos_ + 1 < src_.size() && std::strchr("xXbBoO", src_[pos_ + 1]) &&
        src_[pos_ + 1] != '\0') {
      char base_char = static_cast<char>(std::tolower(src_[pos_ + 1]));
      int base = base_char == 'x' ? 16 : base_char == 'b' ? 2 : 8;
      pos_ += 2;
      size_t digits_start = pos_;
      digits([](char ch) { return std::isxdigit(static_cast<unsigned char>(ch)) != 0; });
      std::string text;
      for (size_t k = digits_start; k < pos_; ++k) {
        if (src_[k] != '_') text += src_[k];
      }
      if (text.empty())
        fail(column, "malformed number: no digits after '0" + std::string(1, base_char) + "'");
      try {
        size_t used = 0;
        t.int_value = static_cast<int64_t>(std::stoull(text, &used, base));
        if (used != text.size()) throw std::invalid_argument("digit");
      } catch (const std::exception&) {
        fail(column, "malformed or too large integer '" + src_.substr(start, pos_ - start) + "'");
      }
      t.kind = TokenKind::kInt;
    } else {
      digits(is_dec);
      bool is_float = false;
      if (pos_ < src_.size() && src_[pos_] == '.') {
        is_float = true;
        ++pos_;
        digits(is_dec);
      }
      if (pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
        size_t save = pos_;
        ++pos_;
        if (pos_ < src_.size() && (src_[pos_] == '+' || src_[pos_] == '-')) ++pos_;
        if (pos_ < src_.size() && is_dec(src_[pos_])) {
          is_float = true;
          digits(is_dec);
        } else {
          pos_ = save;
        }
      }
      std::string text;
      for (size_t k = start; k < pos_; ++k) {
        if (src_[k] != '_') text += src_[k];
      }
      try {
        if (is_float) {
          t.kind = TokenKind::kFloat;
          t.float_value = std::stod(text);
        } else {
          t.kind = TokenKind::kInt;
          size_t used = 0;
          unsigned long long v = std::stoull(text, &used, 10);
          if (v > static_cast<unsigned long long>(INT64_MAX)) throw std::out_of_range("big");
          t.int_value = static_cast<int64_t>(v);
        }
      } catch (const std::exception&) {
        fail(column, "malformed or too large number '" + src_.substr(start, pos_ - start) + "'");
      }
    }
    if (pos_ < src_.size() &&
        (std::isalnum(static_cast<unsigned char>(src_[pos_])) || src_[pos_] == '_')) {
      fail(col(), "malformed number: unexpected '" + std::string(1, src_[pos_]) + "' after '" +
                      src_.substr(start, pos_ - start) + "'");
    }
    t.text = src_.substr(start, pos_ - start);
    tokens_.push_back(std::move(t));
  }

  void name_or_string() {
    size_t start = pos_;
    while (pos_ < src_.size() &&
           (std::isalnum(static_cast<unsigned char>(src_[pos_])) || src_[pos_] == '_')) {
      ++pos_;
    }
    std::string word = src_.substr(start, pos_ - start);
    // String prefixes: r"..", b"..", f"..", rb"..".
    bool prefix = word.size() <= 2 && word.find_first_not_of("rRbBfFuU") == std::string::npos;
    if (prefix && pos_ < src_.size() && (src_[pos_] == '"' || src_[pos_] == '\'')) {
      string_literal(start);
      return;
    }
    push(TokenKind::kName, word, static_cast<int>(start - line_start_) + 1);
  }

  void string_literal(size_t start) {
    int column = static_cast<int>(start - line_start_) + 1;
    bool raw = false;
    while (src_[pos_] != '"' && src_[pos_] != '\'') {
      raw = raw || src_[pos_] == 'r' || src_[pos_] == 'R';
      ++pos_;
    }
    char quote = src_[pos_];
    bool triple = src_.compare(pos_, 3, std::string(3, quote)) == 0;
    pos_ += triple ? 3 : 1;
    std::string value;
    int start_line = line_;
    while (true) {
      if (pos_ >= src_.size()) {
        line_ = start_line;
        fail(column, "unterminated string");
      }
      char c = src_[pos_];
      if (triple && src_.compare(pos_, 3, std::string(3, quote)) == 0) {
        pos_ += 3;
        break;
      }
      if (!triple && c == quote) {
        ++pos_;
        break;
      }
      if (!triple && c == '\n') {
        line_ = start_line;
        fail(column, "unterminated string (strings end on the line they start)");
      }
      if (c == '\\' && !raw && pos_ + 1 < src_.size()) {
        char e = src_[pos_ + 1];
        value += e == 'n' ? '\n' : e == 't' ? '\t' : e == '0' ? '\0' : e;
        pos_ += 2;
        continue;
      }
      if (c == '\n') {
        value += c;
        ++line_;
        line_start_ = pos_ + 1;
        ++pos_;
        continue;
      }
      value += c;
      ++pos_;
    }
    Token t;
    t.kind = TokenKind::kString;
    t.text = value;
    t.line = start_line;
    t.column = column;
    tokens_.push_back(std::move(t));
  }

  void op() {
    int column = col();
    for (const char* o : kOps3) {
      if (src_.compare(pos_, 3, o) == 0) {
        pos_ += 3;
        push(TokenKind::kOp, o, column);
        return;
      }
    }
    for (const char* o : kOps2) {
      if (src_.compare(pos_, 2, o) == 0) {
        pos_ += 2;
        push(TokenKind::kOp, o, column);
        return;
      }
    }
    char c = src_[pos_];
    if (std::strchr(kOps1, c) && c != '\0') {
      if (c == '(' || c == '[' || c == '{') ++depth_;
      if ((c == ')' || c == ']' || c == '}') && depth_ > 0) --depth_;
      ++pos_;
      push(TokenKind::kOp, std::string(1, c), column);
      return;
    }
    std::string shown(1, c);
    if (!std::isprint(static_cast<unsigned char>(c))) {
      static const char* kHex = "0123456789abcdef";
      unsigned char u = static_cast<unsigned char>(c);
      shown = std::string("\\x") + kHex[u >> 4] + kHex[u & 15];
    }
    fail(column, "unexpected character '" + shown + "'");
  }

  const std::string& src_;
  TokenizeMode mode_;
  const std::string& file_;
  size_t pos_ = 0;
  size_t line_start_ = 0;
  int line_ = 1;
  int depth_ = 0;
  bool at_line_start_ = true;
  std::vector<int> indents_;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(const std::string& source, TokenizeMode mode, const std::string& file) {
  return Tokenizer(source, mode, file).run();
}

// ---- TokenCursor -----------------------------------------------------------------------------

TokenCursor::TokenCursor(std::string source, std::vector<Token> tokens)
    : source_(std::move(source)), tokens_(std::move(tokens)) {
  if (tokens_.empty() || tokens_.back().kind != TokenKind::kEnd) {
    Token end;
    end.line = tokens_.empty() ? 1 : tokens_.back().line;
    end.column = tokens_.empty() ? 1 : tokens_.back().column + 1;
    tokens_.push_back(end);
  }
}

TokenCursor::TokenCursor(const std::string& source)
    : TokenCursor(source, tokenize(source, TokenizeMode::kExpression)) {
  check_expression_limits();
}

void TokenCursor::check_expression_limits() const {
  // The recursive-descent parser recurses once per bracket, unary operator, `**` and
  // conditional; bounding those (and the length) bounds its stack, as in kernel files.
  int depth = 0, unary_run = 0, powers = 0, conditionals = 0;
  for (const Token& t : tokens_) {
    bool op = t.kind == TokenKind::kOp;
    bool unary = (op && (t.text == "-" || t.text == "+" || t.text == "~")) ||
                 (t.kind == TokenKind::kName && t.text == "not");
    unary_run = unary ? unary_run + 1 : 0;
    if (unary_run > kMaxUnaryRun) {
      error_at(t, "more than " + std::to_string(kMaxUnaryRun) + " unary operators in a row");
    }
    if (op && t.text == "**" && ++powers > kMaxUnaryRun) {
      error_at(t, "more than " + std::to_string(kMaxUnaryRun) + " '**' in one expression");
    }
    if (t.kind == TokenKind::kName && (t.text == "if" || t.text == "lambda") &&
        ++conditionals > kMaxUnaryRun) {
      error_at(t, "more than " + std::to_string(kMaxUnaryRun) +
                      " conditional expressions in one expression");
    }
    if (op && (t.text == "(" || t.text == "[" || t.text == "{") && ++depth > kMaxBracketDepth) {
      error_at(t, "brackets nest more than " + std::to_string(kMaxBracketDepth) + " deep");
    }
    if (op && (t.text == ")" || t.text == "]" || t.text == "}")) --depth;
  }
  if (tokens_.size() > static_cast<size_t>(kMaxLineTokens) + 1) {
    error_at(tokens_[kMaxLineTokens], "more than " + std::to_string(kMaxLineTokens) +
                                          " tokens in one expression; shorten it");
  }
}

const Token& TokenCursor::peek(size_t ahead) const {
  size_t k = std::min(pos_ + ahead, tokens_.size() - 1);
  return tokens_[k];
}

const Token& TokenCursor::next() {
  const Token& t = tokens_[std::min(pos_, tokens_.size() - 1)];
  if (pos_ < tokens_.size() - 1) ++pos_;
  return t;
}

bool TokenCursor::at_op(std::string_view op, size_t ahead) const {
  const Token& t = peek(ahead);
  return t.kind == TokenKind::kOp && t.text == op;
}

bool TokenCursor::at_name(std::string_view name, size_t ahead) const {
  const Token& t = peek(ahead);
  return t.kind == TokenKind::kName && t.text == name;
}

bool TokenCursor::accept_op(std::string_view op) {
  if (!at_op(op)) return false;
  next();
  return true;
}

bool TokenCursor::accept_name(std::string_view name) {
  if (!at_name(name)) return false;
  next();
  return true;
}

std::string TokenCursor::describe(const Token& token) {
  switch (token.kind) {
    case TokenKind::kEnd:
      return "end of input";
    case TokenKind::kNewline:
      return "end of line";
    case TokenKind::kIndent:
      return "an indent";
    case TokenKind::kDedent:
      return "a dedent";
    case TokenKind::kName:
      return "name '" + token.text + "'";
    case TokenKind::kInt:
    case TokenKind::kFloat:
      return "number " + token.text;
    case TokenKind::kString:
      return "string \"" + token.text + "\"";
    case TokenKind::kOp:
      return "'" + token.text + "'";
  }
  return "?";
}

const Token& TokenCursor::expect_op(std::string_view op, std::string_view context) {
  if (!at_op(op)) {
    std::string msg = "expected '" + std::string(op) + "'";
    if (!context.empty()) {
      msg += ' ';
      msg += context;
    }
    error_at(peek(), msg + ", found " + describe(peek()));
  }
  return next();
}

const Token& TokenCursor::expect_name(std::string_view what) {
  if (peek().kind != TokenKind::kName) {
    error_at(peek(), "expected " + std::string(what) + ", found " + describe(peek()));
  }
  return next();
}

void TokenCursor::error_at(const Token& at, const std::string& message) const {
  user_error(caret_message(source_, at.line, at.column, message, file_));
}

}  // namespace tessel
