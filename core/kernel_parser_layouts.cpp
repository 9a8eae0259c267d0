// TileLang's public layout makers as the values of T.annotate_layout({buf: maker(buf)}):
// tilelang.layout.make_swizzled_layout and the full/half/quarter-bank swizzles, the linear
// layout and the fully replicated fragment, each built from the buffer's shape and dtype with
// the built-in layouts that follow the same public rules (core/builtin_layouts.h).
#include "core/builtin_layouts.h"
#include "core/kernel_parser_detail.h"

namespace tessel::kernel_parser_detail {

namespace {

const char* const kMakers[] = {"make_swizzled_layout",
                               "make_full_bank_swizzled_layout",
                               "make_half_bank_swizzled_layout",
                               "make_quarter_bank_swizzled_layout",
                               "make_wgmma_swizzled_layout",
                               "make_linear_layout",
                               "make_fully_replicated_layout_fragment",
                               "make_volta_swizzled_layout",
                               "make_tcgen05mma_swizzled_layout"};

std::string last_part(const std::string& dotted) {
  size_t dot = dotted.rfind('.');
  return dot == std::string::npos ? dotted : dotted.substr(dot + 1);
}

}  // namespace

bool Parser::at_layout_maker() const {
  // name(.name)* '(' whose last name is one of the makers.
  size_t k = 0;
  std::string last;
  while (cur_->peek(k).kind == TokenKind::kName) {
    last = cur_->peek(k).text;
    if (!cur_->at_op(".", k + 1)) break;
    k += 2;
  }
  if (last.empty() || !cur_->at_op("(", k + 1)) return false;
  return std::find(std::begin(kMakers), std::end(kMakers), last) != std::end(kMakers);
}

std::variant<Layout, Fragment> Parser::parse_layout_maker() {
  const Token at = cur_->peek();
  std::string dotted;
  read_dotted(dotted);
  const std::string maker = last_part(dotted);
  CallArgs call = parse_call_args(maker, at);
  if (maker == "make_volta_swizzled_layout" || maker == "make_tcgen05mma_swizzled_layout") {
    fail(at, maker + " is a layout for " +
                 (maker == "make_volta_swizzled_layout" ? std::string("Volta (sm70) mma")
                                                        : std::string("Blackwell tcgen05 mma")) +
                 ", which Tessel does not target; use make_swizzled_layout");
  }
  std::vector<std::string> names = {"buffer"};
  if (maker == "make_swizzled_layout") names = {"buffer", "k_major", "allow_pad"};
  if (maker == "make_wgmma_swizzled_layout") names = {"buffer", "continuity", "k_major"};
  if (maker == "make_fully_replicated_layout_fragment") names = {"buffer", "threads"};
  auto a = bind_args(call, names, names.size() == 2 && names[1] == "threads" ? 2 : 1);
  // The buffer may be given as a whole, a region or an element (its shape and dtype are used).
  const Arg& b = *a[0];
  if (b.value.kind != Value::Kind::kBuffer && b.value.kind != Value::Kind::kRegion &&
      b.value.kind != Value::Kind::kElement) {
    wrong_kind(call, b, "buffer", "a buffer (the one the layout is for)");
  }
  const Buffer& buffer = b.value.buffer;
  std::vector<int64_t> shape;
  for (const Expr& e : buffer->shape) {
    auto c = as_const_int(e);
    if (!c) fail(b.value_at, maker + ": '" + buffer->name + "' needs a constant shape");
    shape.push_back(*c);
  }
  if (maker == "make_linear_layout") return Layout::row_major(shape);
  if (maker == "make_fully_replicated_layout_fragment") {
    int64_t threads = arg_int(call, *a[1], "threads", 1, 1024);
    return located(at, [&] { return Fragment::fully_replicated(shape, threads); });
  }
  if (shape.size() != 2) {
    fail(b.value_at, maker + ": '" + buffer->name + "' has " + std::to_string(shape.size()) +
                         " dimensions; the swizzled layouts are for 2-d tiles (rows, columns)");
  }
  int64_t rows = shape[0], cols = shape[1];
  DataType dtype = buffer->dtype;
  return located(at, [&]() -> Layout {
    if (maker == "make_full_bank_swizzled_layout") return swizzle_128b(rows, cols, dtype);
    if (maker == "make_half_bank_swizzled_layout") return swizzle_64b(rows, cols, dtype);
    if (maker == "make_quarter_bank_swizzled_layout") return swizzle_32b(rows, cols, dtype);
    if (maker == "make_wgmma_swizzled_layout") {
      // The Hopper rule: 128B, 64B or 32B by how many 16-byte chunks a row holds.
      int64_t vec = 128 / dtype.bits;
      if (cols % (8 * vec) == 0) return swizzle_128b(rows, cols, dtype);
      if (cols % (4 * vec) == 0) return swizzle_64b(rows, cols, dtype);
      return swizzle_32b(rows, cols, dtype);
    }
    bool k_major = a[1] ? arg_bool(call, *a[1], "k_major") : true;
    bool allow_pad = a[2] ? arg_bool(call, *a[2], "allow_pad") : true;
    Layout l = gemm_operand_layout(rows, cols, dtype, k_major);
    if (!allow_pad && gemm_operand_layout_kind(rows, cols, dtype, k_major) == "padded") {
      return Layout::row_major(shape);  // no swizzle fits and padding is not allowed
    }
    return l;
  });
}

}  // namespace tessel::kernel_parser_detail
