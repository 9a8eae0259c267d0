// Tests of core/expr_parser: the tokenizer, Python operator precedence (values worked out by hand
// as Python computes them), the built-in calls, caret error messages, and the layout-spec parser.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/builtin_layouts.h"
#include "core/error.h"
#include "core/expr_parser.h"
#include "core/expr_printer.h"
#include "core/int_eval.h"

using namespace tessel;

namespace {

int64_t value_of(const std::string& text) {
  return eval_int(parse_expression(text, std::vector<Var>{}), {});
}

template <typename F>
std::string user_error_text(F&& fn) {
  try {
    fn();
  } catch (const UserError& e) {
    return e.what();
  }
  return "<no user error>";
}

}  // namespace

TEST_SUITE("tokenizer") {
  TEST_CASE("tokens carry line and column") {
    std::vector<Token> t = tokenize("a +\n  0x1F");
    REQUIRE(t.size() == 4);
    CHECK(t[0].text == "a");
    CHECK(t[1].column == 3);
    CHECK(t[2].kind == TokenKind::kInt);
    CHECK(t[2].int_value == 31);
    CHECK(t[2].line == 2);
    CHECK(t[2].column == 3);
    CHECK(t[3].kind == TokenKind::kEnd);
  }

  TEST_CASE("two-character operators are one token") {
    std::vector<Token> t = tokenize("a//b<<2**3");
    CHECK(t[1].text == "//");
    CHECK(t[3].text == "<<");
    CHECK(t[5].text == "**");
  }

  TEST_CASE("numbers with underscores, binary and exponents") {
    std::vector<Token> t = tokenize("1_000 0b101 2.5e-1");
    CHECK(t[0].int_value == 1000);
    CHECK(t[1].int_value == 5);
    CHECK(t[2].kind == TokenKind::kFloat);
    CHECK(t[2].float_value == 0.25);
  }

  TEST_CASE("file mode emits newlines, indents and dedents") {
    std::vector<Token> t = tokenize("if x:\n    y\nz\n", TokenizeMode::kFile);
    std::vector<TokenKind> kinds;
    for (const Token& tok : t) kinds.push_back(tok.kind);
    std::vector<TokenKind> expected = {TokenKind::kName,    TokenKind::kName,   TokenKind::kOp,
                                       TokenKind::kNewline, TokenKind::kIndent, TokenKind::kName,
                                       TokenKind::kNewline, TokenKind::kDedent, TokenKind::kName,
                                       TokenKind::kNewline, TokenKind::kEnd};
    CHECK(kinds == expected);
  }

  TEST_CASE("file mode joins lines inside brackets") {
    // One logical line `x = f(a)` then `y`: NEWLINE after ')' and none inside the brackets.
    std::vector<Token> t = tokenize("x = f(\n  a)\ny\n", TokenizeMode::kFile);
    std::vector<TokenKind> kinds;
    for (const Token& tok : t) kinds.push_back(tok.kind);
    std::vector<TokenKind> expected = {TokenKind::kName,    TokenKind::kOp,   TokenKind::kName,
                                       TokenKind::kOp,      TokenKind::kName, TokenKind::kOp,
                                       TokenKind::kNewline, TokenKind::kName, TokenKind::kNewline,
                                       TokenKind::kEnd};
    CHECK(kinds == expected);
  }

  TEST_CASE("an unexpected character is reported with a caret") {
    CHECK(user_error_text([] { tokenize("i $ 2"); }) ==
          "column 3: unexpected character '$'\n  i $ 2\n    ^");
  }

  TEST_CASE("an unterminated string is reported at its start") {
    CHECK(user_error_text([] { tokenize("f(\"abc"); }).find("column 3: unterminated string") == 0);
  }
}

TEST_SUITE("expression precedence") {
  TEST_CASE("arithmetic binds tighter than xor, and tighter than xor") {
    // Python: 1 + 2 * 3 ^ 4 & 5 = (1 + 6) ^ (4 & 5) = 7 ^ 4 = 3.
    CHECK(value_of("1 + 2 * 3 ^ 4 & 5") == 3);
  }

  TEST_CASE("or is looser than xor, which is looser than and") {
    // 1 | 2 ^ 3 & 6 = 1 | (2 ^ (3 & 6)) = 1 | (2 ^ 2) = 1.
    CHECK(value_of("1 | 2 ^ 3 & 6") == 1);
  }

  TEST_CASE("shifts are looser than addition") {
    // 1 << 2 + 1 = 1 << 3 = 8.
    CHECK(value_of("1 << 2 + 1") == 8);
  }

  TEST_CASE("floor division and modulo round towards negative infinity") {
    // -7 // 2 = -4; 7 % -3 = -2; 7 // 2 * 2 = 6.
    CHECK(value_of("-7 // 2") == -4);
    CHECK(value_of("7 // 2 * 2 + 7 % -3") == 4);
  }

  TEST_CASE("power binds tighter than unary minus and is right-associative") {
    // -2 ** 2 = -(2 ** 2) = -4; 2 ** 3 ** 2 = 2 ** 9 = 512.
    CHECK(value_of("-2 ** 2") == -4);
    CHECK(value_of("2 ** 3 ** 2") == 512);
  }

  TEST_CASE("a constant power is exact beyond 32 bits") {
    CHECK(value_of("2 ** 40") == (int64_t{1} << 40));
  }

  TEST_CASE("bitwise not is minus one minus the value") { CHECK(value_of("~5") == -6); }

  TEST_CASE("comparisons chain") {
    // 1 < 2 < 3 is 1 < 2 and 2 < 3; 3 > 2 > 2 is false because 2 > 2 is.
    CHECK(value_of("1 < 2 < 3") == 1);
    CHECK(value_of("3 > 2 > 2") == 0);
  }

  TEST_CASE("not is looser than comparisons") {
    // not 1 == 2 is not (1 == 2).
    CHECK(value_of("not 1 == 2") == 1);
  }

  TEST_CASE("and binds tighter than or") {
    // 1 or 0 and 0 = 1 or (0 and 0) = 1.
    CHECK(value_of("1 or 0 and 0") == 1);
  }

  TEST_CASE("parentheses override precedence") { CHECK(value_of("(1 + 2) * 3") == 9); }

  TEST_CASE("a conditional expression selects by its condition") {
    Var x("x");
    Expr e = parse_expression("x * 2 if x > 2 else 0", std::vector<Var>{x});
    CHECK(eval_int(e, {{static_cast<const VarNode*>(x.get()), 5}}) == 10);
    CHECK(eval_int(e, {{static_cast<const VarNode*>(x.get()), 1}}) == 0);
  }
}

TEST_SUITE("expression calls and names") {
  TEST_CASE("min and max take any number of arguments") {
    CHECK(value_of("min(3, 1, 2)") == 1);
    CHECK(value_of("T.max(3, 7)") == 7);
  }

  TEST_CASE("T.if_then_else and T.floordiv are built in") {
    CHECK(value_of("T.if_then_else(1 < 2, 10, 20)") == 10);
    CHECK(value_of("T.floordiv(-7, 2)") == -4);
  }

  TEST_CASE("T.cast reads a type name") {
    Expr e = parse_expression("T.cast(3, \"int64\")", std::vector<Var>{});
    CHECK(e.dtype() == DataType::i64());
  }

  TEST_CASE("names resolve to the given variables") {
    Var i("i"), j("j");
    Expr e = parse_expression("i * 64 + j", std::vector<Var>{i, j});
    IntEnv env{{static_cast<const VarNode*>(i.get()), 2},
               {static_cast<const VarNode*>(j.get()), 5}};
    CHECK(eval_int(e, env) == 133);
  }

  TEST_CASE("printed expressions parse back to the same expression") {
    Var i("i"), j("j");
    std::vector<Expr> cases = {i * 64 + j,
                               floormod(i, 8) * 4 + floordiv(j, 2),
                               (i ^ (j & 7)) >> 1,
                               i - (j - 1),
                               min(i, j) + max(i, 3),
                               if_then_else(i < j && j < 8, i, Expr(0) - j),
                               (i << 2) | j};
    for (const Expr& e : cases) {
      CAPTURE(to_string(e));
      CHECK(structural_equal(parse_expression(to_string(e), std::vector<Var>{i, j}), e));
    }
  }
}

TEST_SUITE("expression errors") {
  TEST_CASE("a missing operand puts the caret under the offending token") {
    CHECK(user_error_text([] { parse_expression("1 + * 2", std::vector<Var>{}); }) ==
          "column 5: expected an expression, found '*'\n  1 + * 2\n      ^");
  }

  TEST_CASE("an unknown name is reported at the name") {
    std::string msg =
        user_error_text([] { parse_expression("i + k", std::vector<Var>{Var("i")}); });
    CHECK(msg.find("column 5: unknown name 'k'") == 0);
  }

  TEST_CASE("an unclosed parenthesis names the opening column") {
    CHECK(user_error_text([] {
            parse_expression("(1 + 2", std::vector<Var>{});
          }).find("expected ')' to close '(' at column 1, found end of input") !=
          std::string::npos);
  }

  TEST_CASE("tokens after a complete expression are an error") {
    CHECK(user_error_text([] {
            parse_expression("1 2", std::vector<Var>{});
          }).find("column 3: unexpected number 2 after a complete expression") == 0);
  }

  TEST_CASE("division by the constant zero is reported at the operator") {
    CHECK(user_error_text([] {
            parse_expression("7 // 0", std::vector<Var>{});
          }).find("column 3: division by the constant zero") == 0);
  }

  TEST_CASE("errors on later lines name the line") {
    CHECK(user_error_text([] {
            parse_expression("1 +\n  )", std::vector<Var>{});
          }).find("line 2, column 3") == 0);
  }
}

TEST_SUITE("layout specs") {
  TEST_CASE("a named layout with a dtype name") {
    auto v = parse_layout_spec("swizzle_128b(64, 64, f16)");
    CHECK(std::get<Layout>(v) == swizzle_128b(64, 64, DataType::f16()));
  }

  TEST_CASE("dtypes may be written as strings or T.float16") {
    Layout a = std::get<Layout>(parse_layout_spec("swizzle_64b(16, 32, \"float16\")"));
    Layout b = std::get<Layout>(parse_layout_spec("swizzle_64b(16, 32, T.float16)"));
    CHECK(a == b);
  }

  TEST_CASE("named arguments may be constant expressions and keywords") {
    auto v = parse_layout_spec("ldmatrix_x4(bf16, trans=True)");
    CHECK(std::get<Fragment>(v) == ldmatrix_x4(DataType::bf16(), true));
    CHECK(std::get<Layout>(parse_layout_spec("row_major(8 * 8, 2 ** 6)")) ==
          Layout::row_major({64, 64}));
  }

  TEST_CASE("an explicit layout parses") {
    Layout l = std::get<Layout>(parse_layout_spec("Layout([64, 64], lambda i, j: i * 64 + j)"));
    CHECK(l == Layout::row_major({64, 64}));
  }

  TEST_CASE("an explicit layout with several outputs parses a tuple") {
    Layout l = std::get<Layout>(parse_layout_spec("Layout([8, 8], lambda i, j: (i // 2, j))"));
    CHECK(l.output_shape() == std::vector<int64_t>{4, 8});
  }

  TEST_CASE("a parenthesised single output is not a tuple") {
    Layout l = std::get<Layout>(parse_layout_spec("Layout([4, 4], lambda i, j: (i + j) * 2)"));
    CHECK(l.output_rank() == 1);
    CHECK(l.map({1, 2}) == std::vector<int64_t>{6});
  }

  TEST_CASE("an explicit fragment with a replicate parameter parses") {
    Fragment f = std::get<Fragment>(parse_layout_spec(
        "Fragment([16, 8], lambda i, j, r: (i % 8 * 4 + j // 2 + r * 32, i // 8 * 2 + j % 2), "
        "replicate=2)"));
    CHECK(f.replicate() == 2);
    CHECK(f.thread_extent() == 64);
    CHECK(f.map_fragment({9, 2}, 1) == std::pair<int64_t, int64_t>{37, 2});
  }

  TEST_CASE("every built-in's printed form parses back to it") {
    for (const Layout& l :
         {Layout::row_major({4, 6}), swizzle_128b(64, 64, DataType::f16()),
          swizzle_32b(16, 16, DataType::f16()), cute_swizzle(3, 4, 3, 1024), padded(8, 8, 4)}) {
      CAPTURE(l.to_string());
      CHECK(std::get<Layout>(parse_layout_spec(l.to_string())) == l);
    }
    for (const Fragment& f : {mma_m16n8k16_a(DataType::f16()), ldmatrix_x4(DataType::f16(), true),
                              mfma_32x32x8_d(DataType::f32()), fig6_block_layout()}) {
      CAPTURE(f.to_string());
      CHECK(std::get<Fragment>(parse_layout_spec(f.to_string())) == f);
    }
  }

  TEST_CASE("a malformed spec points at the column") {
    CHECK(user_error_text([] { parse_layout_spec("Layout([64, 64], lambda i, j: i * 64 +)"); }) ==
          "column 39: expected an expression, found ')'\n"
          "  Layout([64, 64], lambda i, j: i * 64 +)\n"
          "                                        ^");
  }

  TEST_CASE("a lambda with the wrong number of parameters is reported at lambda") {
    std::string msg = user_error_text([] { parse_layout_spec("Layout([4, 4], lambda i: i)"); });
    CHECK(msg.find("column 16: the lambda takes 1 parameters but the shape has 2 dimensions") == 0);
  }

  TEST_CASE("an invalid layout body is reported at the body with the reason") {
    std::string msg = user_error_text([] { parse_layout_spec("Layout([4], lambda i: i - 1)"); });
    CHECK(msg.find("column 23:") == 0);
    CHECK(msg.find("can be negative") != std::string::npos);
  }

  TEST_CASE("an unknown dtype lists the accepted ones") {
    std::string msg = user_error_text([] { parse_layout_spec("mma_m16n8k16_a(f17)"); });
    CHECK(msg.find("column 16: 'f17' is neither an integer nor a dtype") == 0);
  }

  TEST_CASE("an unknown layout name is a user error") {
    CHECK_THROWS_WITH_AS(parse_layout_spec("swizzle_99b(8, 8, f16)"),
                         doctest::Contains("unknown layout 'swizzle_99b'"), UserError);
  }

  TEST_CASE("trailing text after a spec is an error") {
    CHECK(user_error_text([] {
            parse_layout_spec("row_major(4) x");
          }).find("column 14: unexpected name 'x'") == 0);
  }

  TEST_CASE("an empty spec is an error") { CHECK_THROWS_AS(parse_layout_spec(""), UserError); }
}
