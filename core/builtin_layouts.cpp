// Built-in layouts and fragments from their public specifications (see builtin_layouts.h for the
// formulas and where each comes from).
#include "core/builtin_layouts.h"

#include "core/error.h"

namespace tessel {

namespace {

std::string dims(int64_t rows, int64_t cols) {
  std::string s = "(";
  s += std::to_string(rows);
  s += ", ";
  s += std::to_string(cols);
  s += ")";
  return s;
}

void require_positive(const char* what, int64_t rows, int64_t cols) {
  if (rows < 1 || cols < 1) {
    user_error(std::string(what) + dims(rows, cols) + ": rows and cols must be at least 1");
  }
}

/// TileLang's swizzle family: nb 16-byte chunks per swizzled row; the row bits above `shift`
/// select the XOR pattern.
Layout tilelang_swizzle(const char* name, int64_t rows, int64_t cols, DataType dtype, int64_t nb,
                        int shift) {
  require_positive(name, rows, cols);
  int bits = dtype.storage_bits() * dtype.lanes;
  if (bits > 128 || 128 % bits != 0) {
    user_error(std::string(name) + dims(rows, cols) + ", " + dtype.name() +
               "): the element type must divide 16 bytes (4, 8, 16, 32 or 64 bits)");
  }
  int64_t vec = 128 / bits;
  if (rows % 8 != 0) {
    user_error(std::string(name) + dims(rows, cols) + " for " + dtype.name() + ": rows (" +
               std::to_string(rows) + ") must be a multiple of 8; use padded(...) instead");
  }
  if (cols % (nb * vec) != 0) {
    user_error(std::string(name) + dims(rows, cols) + " for " + dtype.name() + ": cols (" +
               std::to_string(cols) + ") must be a multiple of " + std::to_string(nb * vec) +
               " elements (" + std::to_string(nb * 16) +
               " bytes); use a smaller swizzle or "
               "padded(...)");
  }
  return Layout::from_fn({rows, cols}, [&](const std::vector<Var>& v) {
    Expr i = v[0], j = v[1];
    Expr s = floormod(i, 8);
    Expr ts = floordiv(i, 8);
    Expr c = floormod(floordiv(j, make_int(vec)), make_int(nb));
    Expr tc = floordiv(j, make_int(vec * nb));
    Expr pattern = shift == 0 ? s : (s >> shift);
    Expr index = floormod(j, make_int(vec)) + ((c ^ pattern) + s * make_int(nb)) * make_int(vec);
    return std::vector<Expr>{tc, ts, index};
  });
}

void require_dtype(const char* what, DataType dtype, std::initializer_list<DataType> allowed) {
  for (DataType t : allowed) {
    if (dtype == t) return;
  }
  std::string names;
  for (DataType t : allowed) names += (names.empty() ? "" : ", ") + t.short_name();
  user_error(std::string(what) + " is defined for " + names + ", not " + dtype.name());
}

Fragment ldmatrix(int matrices, DataType dtype, bool trans) {
  std::string what = "ldmatrix_x" + std::to_string(matrices);
  int bits = dtype.storage_bits();
  if (dtype.lanes != 1 || (bits != 8 && bits != 16 && bits != 32)) {
    user_error(what +
               " moves 8x8 matrices of 16-bit words; the element type must be 8, 16 or 32 "
               "bits, not " +
               dtype.name());
  }
  if (trans && bits != 16) {
    user_error(what + "(trans=True) transposes 16-bit elements only, not " + dtype.name());
  }
  int64_t per_reg = 32 / bits;  // elements in one 32-bit register
  int64_t width = 128 / bits;   // elements in one 16-byte row
  int64_t rows = 8 * matrices;
  return Fragment::from_fn({rows, width}, [&](const std::vector<Var>& v, const Var&) {
    Expr i = v[0], j = v[1];
    Expr row = matrices == 1 ? i : floormod(i, 8);
    Expr matrix_reg = matrices == 1 ? Expr(0) : floordiv(i, 8) * make_int(per_reg);
    if (trans) {
      // Lane l holds column l / 4, rows 2 (l % 4) and 2 (l % 4) + 1 of each matrix.
      return std::pair(j * 4 + floordiv(row, 2), matrix_reg + floormod(i, 2));
    }
    return std::pair(row * 4 + floordiv(j, make_int(per_reg)),
                     matrix_reg + floormod(j, make_int(per_reg)));
  });
}

}  // namespace

Layout padded(int64_t rows, int64_t cols, int64_t pad) {
  require_positive("padded", rows, cols);
  if (pad < 0) user_error("padded" + dims(rows, cols) + ": the padding must not be negative");
  constexpr int64_t kMaxStride = int64_t{1} << 40;
  if (cols > kMaxStride || pad > kMaxStride - cols) {
    user_error("padded" + dims(rows, cols) + " with pad " + std::to_string(pad) +
               ": the padded row (cols + pad) is more than 2^40 elements");
  }
  return Layout::from_fn({rows, cols}, [&](const std::vector<Var>& v) {
    return std::vector<Expr>{v[0] * make_int(cols + pad) + v[1]};
  });
}

Layout gemm_padded(int64_t rows, int64_t cols, DataType dtype) {
  int64_t bits = dtype.storage_bits() * dtype.lanes;
  int64_t pad = (bits * cols) % 256 == 0 && 128 % bits == 0 ? 128 / bits : 0;
  return padded(rows, cols, pad);
}

Layout swizzle_32b(int64_t rows, int64_t cols, DataType dtype) {
  return tilelang_swizzle("swizzle_32b", rows, cols, dtype, 2, 2);
}

Layout swizzle_64b(int64_t rows, int64_t cols, DataType dtype) {
  return tilelang_swizzle("swizzle_64b", rows, cols, dtype, 4, 1);
}

Layout swizzle_128b(int64_t rows, int64_t cols, DataType dtype) {
  return tilelang_swizzle("swizzle_128b", rows, cols, dtype, 8, 0);
}

Layout cute_swizzle(int B, int M, int S, int64_t size) {
  std::string what = "swizzle(" + std::to_string(B) + ", " + std::to_string(M) + ", " +
                     std::to_string(S) + ", " + std::to_string(size) + ")";
  if (B < 0 || M < 0 || S < B || B + M + S > 30) {
    user_error(what +
               ": needs B >= 0, M >= 0, S >= B (so the XOR reads bits it does not write) "
               "and B + M + S <= 30");
  }
  int64_t period = int64_t{1} << (B + M + S);
  if (size < 1 || size % period != 0) {
    user_error(what +
               ": size must be a positive multiple of 2^(B+M+S) = " + std::to_string(period));
  }
  int64_t mask = ((int64_t{1} << B) - 1) << (M + S);
  return Layout::from_fn({size}, [&](const std::vector<Var>& v) {
    Expr x = v[0];
    if (B == 0) return std::vector<Expr>{x};
    return std::vector<Expr>{x ^ ((x & make_int(mask)) >> S)};
  });
}

std::string gemm_operand_layout_kind(int64_t rows, int64_t cols, DataType dtype, bool k_inner) {
  int bits = dtype.storage_bits() * dtype.lanes;
  if (bits >= 64 || 128 % bits != 0) return "padded";
  if (!k_inner && bits == 8) return "padded";
  int64_t vec = 128 / bits;
  if (rows % 8 != 0) return "padded";
  if (cols % (vec * 8) == 0) return "swizzle_128b";
  if (cols % (vec * 4) == 0) return "swizzle_64b";
  // A 32-byte row: padding to 48 bytes puts rows r and r + 3 of one cp.async phase (8 lanes x
  // 16 bytes) in the same banks, a 2-way conflict; the 32B swizzle is conflict-free for it and
  // for ldmatrix.
  if (cols % (vec * 2) == 0) return "swizzle_32b";
  return "padded";
}

Layout gemm_operand_layout(int64_t rows, int64_t cols, DataType dtype, bool k_inner) {
  std::string kind = gemm_operand_layout_kind(rows, cols, dtype, k_inner);
  if (kind == "swizzle_128b") return swizzle_128b(rows, cols, dtype);
  if (kind == "swizzle_64b") return swizzle_64b(rows, cols, dtype);
  if (kind == "swizzle_32b") return swizzle_32b(rows, cols, dtype);
  return gemm_padded(rows, cols, dtype);
}

Fragment mma_m16n8k16_a(DataType dtype) {
  require_dtype("mma_m16n8k16_a", dtype, {DataType::f16(), DataType::bf16()});
  return Fragment::from_fn({16, 16}, [](const std::vector<Var>& v, const Var&) {
    Expr i = v[0], j = v[1];
    return std::pair(floormod(i, 8) * 4 + floordiv(floormod(j, 8), 2),
                     floormod(j, 2) + floordiv(i, 8) * 2 + floordiv(j, 8) * 4);
  });
}

Fragment mma_m16n8k16_b(DataType dtype) {
  require_dtype("mma_m16n8k16_b", dtype, {DataType::f16(), DataType::bf16()});
  return Fragment::from_fn({16, 8}, [](const std::vector<Var>& v, const Var&) {
    Expr k = v[0], n = v[1];
    return std::pair(n * 4 + floordiv(floormod(k, 8), 2), floormod(k, 2) + floordiv(k, 8) * 2);
  });
}

Fragment mma_m16n8k16_c(DataType dtype) {
  require_dtype("mma_m16n8k16_c", dtype, {DataType::f32(), DataType::f16()});
  return Fragment::from_fn({16, 8}, [](const std::vector<Var>& v, const Var&) {
    Expr i = v[0], j = v[1];
    return std::pair(floormod(i, 8) * 4 + floordiv(j, 2), floormod(j, 2) + floordiv(i, 8) * 2);
  });
}

Fragment ldmatrix_x1(DataType dtype, bool trans) { return ldmatrix(1, dtype, trans); }
Fragment ldmatrix_x2(DataType dtype, bool trans) { return ldmatrix(2, dtype, trans); }
Fragment ldmatrix_x4(DataType dtype, bool trans) { return ldmatrix(4, dtype, trans); }

Fragment mfma_16x16x16_a(DataType dtype) {
  require_dtype("mfma_16x16x16_a", dtype, {DataType::f16(), DataType::bf16()});
  return Fragment::from_fn({16, 16}, [](const std::vector<Var>& v, const Var&) {
    return std::pair(v[0] + floordiv(v[1], 4) * 16, floormod(v[1], 4));
  });
}

Fragment mfma_16x16x16_b(DataType dtype) {
  require_dtype("mfma_16x16x16_b", dtype, {DataType::f16(), DataType::bf16()});
  return Fragment::from_fn({16, 16}, [](const std::vector<Var>& v, const Var&) {
    return std::pair(v[1] + floordiv(v[0], 4) * 16, floormod(v[0], 4));
  });
}

Fragment mfma_16x16x16_d(DataType dtype) {
  require_dtype("mfma_16x16x16_d", dtype, {DataType::f32()});
  return Fragment::from_fn({16, 16}, [](const std::vector<Var>& v, const Var&) {
    return std::pair(v[1] + floordiv(v[0], 4) * 16, floormod(v[0], 4));
  });
}

Fragment mfma_32x32x8_a(DataType dtype) {
  require_dtype("mfma_32x32x8_a", dtype, {DataType::f16(), DataType::bf16()});
  return Fragment::from_fn({32, 8}, [](const std::vector<Var>& v, const Var&) {
    return std::pair(v[0] + floordiv(v[1], 4) * 32, floormod(v[1], 4));
  });
}

Fragment mfma_32x32x8_b(DataType dtype) {
  require_dtype("mfma_32x32x8_b", dtype, {DataType::f16(), DataType::bf16()});
  return Fragment::from_fn({8, 32}, [](const std::vector<Var>& v, const Var&) {
    return std::pair(v[1] + floordiv(v[0], 4) * 32, floormod(v[0], 4));
  });
}

Fragment mfma_32x32x8_d(DataType dtype) {
  require_dtype("mfma_32x32x8_d", dtype, {DataType::f32()});
  return Fragment::from_fn({32, 32}, [](const std::vector<Var>& v, const Var&) {
    Expr i = v[0];
    return std::pair(v[1] + floormod(floordiv(i, 4), 2) * 32, floordiv(i, 8) * 4 + floormod(i, 4));
  });
}

Fragment fig6_base_layout() { return mma_m16n8k16_a(DataType::f16()); }

Fragment fig6_warp_layout() { return fig6_base_layout().repeat({2, 1}, /*on_thread=*/false); }

Fragment fig6_block_layout() {
  return fig6_warp_layout().repeat_on_thread({2, 1}).replicate(2).repeat({2, 1}, false);
}

}  // namespace tessel
