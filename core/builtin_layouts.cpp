// Built-in layouts and fragments from their public specifications (see builtin_layouts.h for the
// formulas and where each comes from).
#include "core/builtin_layouts.h"

#include <algorithm>

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

Layout swizzle_mfma(int64_t rows, int64_t cols, DataType dtype, int64_t granule_bytes) {
  require_positive("swizzle_mfma", rows, cols);
  const std::string what = "swizzle_mfma" + dims(rows, cols) + " for " + dtype.name();
  if (granule_bytes != 4 && granule_bytes != 8) {
    user_error(what + ": the granule must be 4 or 8 bytes (the bank word or a ds_read_b64), not " +
               std::to_string(granule_bytes));
  }
  const int bits = dtype.storage_bits() * dtype.lanes;
  if (bits > granule_bytes * 8 || (granule_bytes * 8) % bits != 0) {
    user_error(what + ": the element type must divide the " + std::to_string(granule_bytes) +
               "-byte granule");
  }
  const int64_t vec = granule_bytes * 8 / bits;  // elements per granule
  const int64_t granules = cols / vec;
  const bool pow2 = granules > 0 && (granules & (granules - 1)) == 0;
  if (cols % vec != 0 || !(pow2 || granules % 16 == 0)) {
    user_error(what + ": a row must hold a power of two or a multiple of 16 " +
               std::to_string(granule_bytes) + "-byte granules (cols a multiple of " +
               std::to_string(vec) + ", cols / " + std::to_string(vec) +
               " a power of two or a multiple of 16); use padded(...) instead");
  }
  // A 128-byte bank line holds `slots` granules and per_phase rows; the 16 rows of one phase
  // span 16 / per_phase lines, which max_phase XOR patterns tell apart.
  const int64_t slots = 128 / granule_bytes;
  const int64_t per_phase = std::max<int64_t>(1, slots / granules);
  const int64_t max_phase = std::min<int64_t>(granules, std::max<int64_t>(1, 16 / per_phase));
  return Layout::from_fn({rows, cols}, [&](const std::vector<Var>& v) {
    Expr i = v[0], j = v[1];
    if (max_phase == 1) return std::vector<Expr>{i, j};
    Expr line = per_phase == 1 ? i : floordiv(i, make_int(per_phase));
    Expr phase = floormod(line, make_int(max_phase));
    if (per_phase == 2 && max_phase == 8) {
      // Rows r and r + 4 (r % 8 < 4: the two row groups of one 2-byte phase of an MFMA
      // accumulator or of an operand stored M/N-contiguous) must XOR bit 2 of the granule
      // differently; (r / 2) % 8 differs there only through a carry. Swapping bits 1 and 2 of
      // the phase (bit 2 becomes r's bit 2) keeps it a bijection over the 8 line pairs.
      phase = floormod(line, make_int(2)) + floormod(floordiv(i, make_int(8)), make_int(2)) * 2 +
              floormod(floordiv(i, make_int(4)), make_int(2)) * 4;
    }
    Expr granule = floordiv(j, make_int(vec));
    Expr col = vec == 1 ? (granule ^ phase)
                        : (granule ^ phase) * make_int(vec) + floormod(j, make_int(vec));
    if (granule_bytes == 8 && per_phase == 4 && max_phase == 4 && rows % 4 == 0) {
      // 32-byte rows, four a line: rows r and r + 4 (the two row groups of one 2-byte phase)
      // sit at the same quarter of neighbouring lines, so permuting granules within a row cannot
      // part them. The rows of line L also trade quarters, row r % 4 -> (r % 4) ^ (L % 4): rows
      // r and r + 4 then take different quarters, and 16 rows at one granule still take 16
      // slots (4 quarters in a line, 4 granules XOR L across lines).
      Expr row = floordiv(i, make_int(4)) * make_int(4) + (floormod(i, make_int(4)) ^ phase);
      return std::vector<Expr>{row, col};
    }
    return std::vector<Expr>{i, col};
  });
}

Layout mfma_operand_layout(int64_t rows, int64_t cols, DataType dtype, bool k_inner) {
  if (mfma_operand_layout_kind(rows, cols, dtype, k_inner) == "swizzle_mfma") {
    return swizzle_mfma(rows, cols, dtype);
  }
  return gemm_operand_layout(rows, cols, dtype, k_inner);
}

std::string mfma_operand_layout_kind(int64_t rows, int64_t cols, DataType dtype, bool k_inner) {
  const int bits = dtype.storage_bits() * dtype.lanes;
  // One rule for both orientations, so a tile read by two gemms (K of Q K^T, then of another
  // product) gets one layout: with M or N contiguous the MFMA path reads 2-byte elements, 16
  // lanes along one row and 16 along the row 4 below, which the same XOR keeps apart when a row
  // holds 8 or more granules (64 bytes).
  if (bits == 16 && rows >= 1 && cols % 4 == 0) {
    const int64_t granules = cols / 4;
    if ((granules & (granules - 1)) == 0 || granules % 16 == 0) return "swizzle_mfma";
  }
  // int8 with k contiguous (the int8 MFMA): lane l reads K/4 bytes (4 or 8) of row l % 16 at
  // byte K/4 (l / 16), so one LDS phase reads 16 consecutive rows at one 8-byte granule (CDNA3
  // ds_read_b64) or the two words of one granule (CDNA2 ds_read_b32, 32 lanes): both are
  // conflict-free when the 16 rows fall in 16 different 8-byte slots of a line.
  if (bits == 8 && k_inner && rows >= 1 && cols % 8 == 0) {
    const int64_t granules = cols / 8;
    if ((granules & (granules - 1)) == 0 || granules % 16 == 0) return "swizzle_mfma";
  }
  return gemm_operand_layout_kind(rows, cols, dtype, k_inner);
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
  require_dtype("mma_m16n8k16_c", dtype, {DataType::f32(), DataType::f16(), DataType::i32()});
  return Fragment::from_fn({16, 8}, [](const std::vector<Var>& v, const Var&) {
    Expr i = v[0], j = v[1];
    return std::pair(floormod(i, 8) * 4 + floordiv(j, 2), floormod(j, 2) + floordiv(i, 8) * 2);
  });
}

Fragment mma_m16n8k32_a(DataType dtype) {
  require_dtype("mma_m16n8k32_a", dtype, {DataType::i8()});
  return Fragment::from_fn({16, 32}, [](const std::vector<Var>& v, const Var&) {
    Expr i = v[0], j = v[1];
    return std::pair(floormod(i, 8) * 4 + floordiv(floormod(j, 16), 4),
                     floormod(j, 4) + floordiv(i, 8) * 4 + floordiv(j, 16) * 8);
  });
}

Fragment mma_m16n8k32_b(DataType dtype) {
  require_dtype("mma_m16n8k32_b", dtype, {DataType::i8()});
  return Fragment::from_fn({32, 8}, [](const std::vector<Var>& v, const Var&) {
    Expr k = v[0], n = v[1];
    return std::pair(n * 4 + floordiv(floormod(k, 16), 4), floormod(k, 4) + floordiv(k, 16) * 4);
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
  require_dtype("mfma_16x16x16_d", dtype, {DataType::f32(), DataType::i32()});
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
