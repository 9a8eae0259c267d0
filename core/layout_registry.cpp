// The registry of named layouts: names, signatures, descriptions, and argument binding for
// make_named_layout (declared in builtin_layouts.h).
#include <functional>

#include "core/builtin_layouts.h"
#include "core/error.h"

namespace tessel {

namespace {

enum class ArgKind { kInt, kDType, kBool, kIntOrDType };

struct Param {
  std::string name;
  ArgKind kind;
  std::optional<NamedLayoutArg> default_value;
};

using Value = std::variant<int64_t, DataType, bool>;
using Builder = std::function<std::variant<Layout, Fragment>(const std::vector<Value>&)>;

struct Entry {
  NamedLayoutInfo info;
  std::vector<Param> params;
  bool variadic = false;  ///< all arguments are integers (row_major(d0, d1, ...))
  Builder build;
};

int64_t as_int(const Value& v) { return std::get<int64_t>(v); }
DataType as_dtype(const Value& v) { return std::get<DataType>(v); }
bool as_bool(const Value& v) { return std::get<bool>(v); }

Param p_int(const char* n) { return {n, ArgKind::kInt, std::nullopt}; }
Param p_dtype() { return {"dtype", ArgKind::kDType, std::nullopt}; }
Param p_bool(const char* n, bool dflt) { return {n, ArgKind::kBool, NamedLayoutArg{n, dflt}}; }

template <typename F>
Entry fragment_entry(const char* name, const char* desc, F fn) {
  return {{name, std::string(name) + "(dtype)", desc},
          {p_dtype()},
          false,
          [fn](const std::vector<Value>& a) -> std::variant<Layout, Fragment> {
            return fn(as_dtype(a[0]));
          }};
}

template <typename F>
Entry ldmatrix_entry(const char* name, const char* desc, F fn) {
  return {{name, std::string(name) + "(dtype, trans=False)", desc},
          {p_dtype(), p_bool("trans", false)},
          false,
          [fn](const std::vector<Value>& a) -> std::variant<Layout, Fragment> {
            return fn(as_dtype(a[0]), as_bool(a[1]));
          }};
}

template <typename F>
Entry swizzle_entry(const char* name, const char* desc, F fn) {
  return {{name, std::string(name) + "(rows, cols, dtype)", desc},
          {p_int("rows"), p_int("cols"), p_dtype()},
          false,
          [fn](const std::vector<Value>& a) -> std::variant<Layout, Fragment> {
            return fn(as_int(a[0]), as_int(a[1]), as_dtype(a[2]));
          }};
}

const std::vector<Entry>& registry() {
  static const std::vector<Entry> kEntries = [] {
    std::vector<Entry> e;
    auto shape_of = [](const std::vector<Value>& a) {
      std::vector<int64_t> shape;
      for (const Value& v : a) shape.push_back(as_int(v));
      return shape;
    };
    e.push_back({{"row_major", "row_major(d0, d1, ...)", "C-order linearisation of the shape"},
                 {},
                 true,
                 [shape_of](const std::vector<Value>& a) -> std::variant<Layout, Fragment> {
                   return Layout::row_major(shape_of(a));
                 }});
    e.push_back(
        {{"column_major", "column_major(d0, d1, ...)", "Fortran-order linearisation of the shape"},
         {},
         true,
         [shape_of](const std::vector<Value>& a) -> std::variant<Layout, Fragment> {
           return Layout::column_major(shape_of(a));
         }});
    e.push_back({{"padded", "padded(rows, cols, pad | dtype)",
                  "row-major with each row padded by `pad` elements (a dtype: TileLang's gemm "
                  "rule, 16 bytes when the row is a multiple of 32 bytes)"},
                 {p_int("rows"), p_int("cols"), {"pad", ArgKind::kIntOrDType, std::nullopt}},
                 false,
                 [](const std::vector<Value>& a) -> std::variant<Layout, Fragment> {
                   if (std::holds_alternative<DataType>(a[2])) {
                     return gemm_padded(as_int(a[0]), as_int(a[1]), as_dtype(a[2]));
                   }
                   return padded(as_int(a[0]), as_int(a[1]), as_int(a[2]));
                 }});
    e.push_back(swizzle_entry("swizzle_32b",
                              "TileLang 32-byte shared-memory swizzle (CuTe "
                              "Swizzle<1,4,3> on bytes), column panels of 32 bytes",
                              swizzle_32b));
    e.push_back(swizzle_entry("swizzle_64b",
                              "TileLang 64-byte shared-memory swizzle (CuTe "
                              "Swizzle<2,4,3> on bytes), column panels of 64 bytes",
                              swizzle_64b));
    e.push_back(swizzle_entry("swizzle_128b",
                              "TileLang 128-byte shared-memory swizzle (CuTe "
                              "Swizzle<3,4,3> on bytes), column panels of 128 bytes",
                              swizzle_128b));
    e.push_back({{"swizzle", "swizzle(B, M, S, size)",
                  "CuTe Swizzle<B,M,S> on the 1-D range [0, size): x ^ ((x & (((1<<B)-1) << "
                  "(M+S))) >> S)"},
                 {p_int("B"), p_int("M"), p_int("S"), p_int("size")},
                 false,
                 [](const std::vector<Value>& a) -> std::variant<Layout, Fragment> {
                   return cute_swizzle(static_cast<int>(as_int(a[0])),
                                       static_cast<int>(as_int(a[1])),
                                       static_cast<int>(as_int(a[2])), as_int(a[3]));
                 }});
    e.push_back({{"swizzle_mfma", "swizzle_mfma(rows, cols, dtype, granule=8)",
                  "AMD LDS swizzle for MFMA operands: 8-byte (or 4-byte) granules XOR the row's "
                  "phase, so the 16 rows of one ds_read_b64 phase hit 16 bank slots"},
                 {p_int("rows"),
                  p_int("cols"),
                  p_dtype(),
                  {"granule", ArgKind::kInt, NamedLayoutArg{"granule", int64_t{8}}}},
                 false,
                 [](const std::vector<Value>& a) -> std::variant<Layout, Fragment> {
                   return swizzle_mfma(as_int(a[0]), as_int(a[1]), as_dtype(a[2]), as_int(a[3]));
                 }});
    e.push_back({{"gemm_operand", "gemm_operand(rows, cols, dtype, k_inner=True)",
                  "the shared-memory layout TileLang picks for a gemm operand on sm80 (128B or "
                  "64B swizzle, else padding)"},
                 {p_int("rows"), p_int("cols"), p_dtype(), p_bool("k_inner", true)},
                 false,
                 [](const std::vector<Value>& a) -> std::variant<Layout, Fragment> {
                   return gemm_operand_layout(as_int(a[0]), as_int(a[1]), as_dtype(a[2]),
                                              as_bool(a[3]));
                 }});
    e.push_back({{"mfma_operand", "mfma_operand(rows, cols, dtype, k_inner=True)",
                  "the shared-memory layout of a gemm operand on gfx90a/gfx942 (swizzle_mfma "
                  "when k is contiguous, else the sm80 rule)"},
                 {p_int("rows"), p_int("cols"), p_dtype(), p_bool("k_inner", true)},
                 false,
                 [](const std::vector<Value>& a) -> std::variant<Layout, Fragment> {
                   return mfma_operand_layout(as_int(a[0]), as_int(a[1]), as_dtype(a[2]),
                                              as_bool(a[3]));
                 }});
    e.push_back(fragment_entry("mma_m16n8k16_a",
                               "mma.m16n8k16 A operand (16x16, f16/bf16), PTX "
                               "ISA fragment layout",
                               mma_m16n8k16_a));
    e.push_back(fragment_entry("mma_m16n8k16_b",
                               "mma.m16n8k16 B operand (16x8, k x n, "
                               "f16/bf16)",
                               mma_m16n8k16_b));
    e.push_back(fragment_entry("mma_m16n8k16_c", "mma.m16n8k16 C/D accumulator (16x8, f32/f16)",
                               mma_m16n8k16_c));
    e.push_back(
        ldmatrix_entry("ldmatrix_x1", "ldmatrix .x1 destination: one 8x8 b16 matrix", ldmatrix_x1));
    e.push_back(ldmatrix_entry("ldmatrix_x2",
                               "ldmatrix .x2 destination: two 8x8 b16 matrices "
                               "stacked by rows",
                               ldmatrix_x2));
    e.push_back(ldmatrix_entry("ldmatrix_x4",
                               "ldmatrix .x4 destination: four 8x8 b16 matrices "
                               "stacked by rows",
                               ldmatrix_x4));
    e.push_back(fragment_entry("mfma_16x16x16_a",
                               "AMD v_mfma_f32_16x16x16 A operand (16x16, "
                               "wave64)",
                               mfma_16x16x16_a));
    e.push_back(fragment_entry("mfma_16x16x16_b",
                               "AMD v_mfma_f32_16x16x16 B operand (16x16, "
                               "k x n)",
                               mfma_16x16x16_b));
    e.push_back(fragment_entry("mfma_16x16x16_d",
                               "AMD v_mfma_f32_16x16x16 D accumulator "
                               "(16x16, f32)",
                               mfma_16x16x16_d));
    e.push_back(fragment_entry("mfma_32x32x8_a", "AMD v_mfma_f32_32x32x8 A operand (32x8)",
                               mfma_32x32x8_a));
    e.push_back(fragment_entry("mfma_32x32x8_b", "AMD v_mfma_f32_32x32x8 B operand (8x32, k x n)",
                               mfma_32x32x8_b));
    e.push_back(fragment_entry("mfma_32x32x8_d",
                               "AMD v_mfma_f32_32x32x8 D accumulator (32x32, "
                               "f32)",
                               mfma_32x32x8_d));
    auto fixed = [](const char* name, const char* desc, Fragment (*fn)()) {
      return Entry{
          {name, std::string(name) + "()", desc},
          {},
          false,
          [fn](const std::vector<Value>&) -> std::variant<Layout, Fragment> { return fn(); }};
    };
    e.push_back(fixed("fig6_base", "paper Fig. 6: m16k16 ldmatrix/mma base layout, one warp",
                      fig6_base_layout));
    e.push_back(fixed("fig6_warp", "paper Fig. 6: base.repeat([2, 1]), one warp holding m32k16",
                      fig6_warp_layout));
    e.push_back(fixed("fig6_block",
                      "paper Fig. 6: warp layout repeated on threads and "
                      "replicated, four warps holding m128k16",
                      fig6_block_layout));
    return e;
  }();
  return kEntries;
}

const char* kind_name(ArgKind k) {
  switch (k) {
    case ArgKind::kInt:
      return "an integer";
    case ArgKind::kDType:
      return "a dtype (f16, bf16, \"float16\", ...)";
    case ArgKind::kBool:
      return "True or False";
    case ArgKind::kIntOrDType:
      return "an integer or a dtype";
  }
  return "?";
}

Value convert(const Entry& entry, const Param& p, const NamedLayoutArg& arg) {
  const auto& v = arg.value;
  bool ok = false;
  switch (p.kind) {
    case ArgKind::kInt:
      ok = std::holds_alternative<int64_t>(v);
      break;
    case ArgKind::kDType:
      ok = std::holds_alternative<DataType>(v);
      break;
    case ArgKind::kBool:
      if (const auto* i = std::get_if<int64_t>(&v); i && (*i == 0 || *i == 1)) return *i == 1;
      ok = std::holds_alternative<bool>(v);
      break;
    case ArgKind::kIntOrDType:
      ok = !std::holds_alternative<bool>(v);
      break;
  }
  if (!ok) {
    user_error("argument '" + p.name + "' of " + entry.info.signature + " must be " +
               kind_name(p.kind));
  }
  return v;
}

}  // namespace

std::vector<NamedLayoutInfo> named_layouts() {
  std::vector<NamedLayoutInfo> out;
  for (const Entry& e : registry()) out.push_back(e.info);
  return out;
}

std::variant<Layout, Fragment> make_named_layout(const std::string& name,
                                                 const std::vector<NamedLayoutArg>& args) {
  const Entry* entry = nullptr;
  for (const Entry& e : registry()) {
    if (e.info.name == name) entry = &e;
  }
  if (!entry) {
    std::string known;
    for (const Entry& e : registry()) known += (known.empty() ? "" : ", ") + e.info.name;
    user_error("unknown layout '" + name + "'; known layouts: " + known);
  }
  const std::string& sig = entry->info.signature;
  if (entry->variadic) {
    if (args.empty()) user_error(sig + " needs at least one dimension");
    std::vector<Value> values;
    for (const NamedLayoutArg& a : args) {
      if (!a.keyword.empty()) user_error(sig + " takes no keyword argument '" + a.keyword + "'");
      if (!std::holds_alternative<int64_t>(a.value)) {
        user_error("every argument of " + sig + " must be an integer");
      }
      values.push_back(a.value);
    }
    return entry->build(values);
  }
  std::vector<std::optional<Value>> bound(entry->params.size());
  size_t positional = 0;
  for (const NamedLayoutArg& a : args) {
    if (a.keyword.empty()) {
      if (positional >= entry->params.size()) {
        user_error(sig + " takes " + std::to_string(entry->params.size()) + " arguments, got " +
                   std::to_string(args.size()));
      }
      bound[positional] = convert(*entry, entry->params[positional], a);
      ++positional;
      continue;
    }
    size_t k = 0;
    while (k < entry->params.size() && entry->params[k].name != a.keyword) ++k;
    if (k == entry->params.size()) {
      user_error(sig + " has no parameter named '" + a.keyword + "'");
    }
    if (bound[k]) user_error(sig + " got two values for '" + a.keyword + "'");
    bound[k] = convert(*entry, entry->params[k], a);
  }
  std::vector<Value> values;
  for (size_t k = 0; k < bound.size(); ++k) {
    if (!bound[k]) {
      if (!entry->params[k].default_value) {
        user_error(sig + " is missing the argument '" + entry->params[k].name + "'");
      }
      bound[k] = entry->params[k].default_value->value;
    }
    values.push_back(*bound[k]);
  }
  return entry->build(values);
}

}  // namespace tessel
