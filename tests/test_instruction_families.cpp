// The instruction-family registry (core/instruction_family.h): every entry has its home, the
// homes declare the memory accesses the proofs read, and a family's execution semantics run
// against any WarpIntrinsicExec — here a small fake warp, not the thread-level interpreter.
// Expected values come from the PTX ISA ("ldmatrix": lanes 8m..8m+7 address the rows of matrix
// m; thread t receives row t / 4, columns 2 (t % 4) and 2 (t % 4) + 1 of each matrix).
#include <doctest/doctest.h>

#include <set>

#include "core/error.h"
#include "core/instruction_family.h"
#include "tests/null_warp.h"

using namespace tessel;

namespace {

/// One warp of 32 lanes: operand 0 is a register array of `regs` cells per lane, operand 1 a
/// shared array; each lane's element index is given directly (no IR).
class FakeWarp final : public testing::NullWarp {
 public:
  std::vector<std::vector<uint64_t>> registers;  ///< [lane][reg]
  std::vector<uint64_t> shared;
  std::array<int64_t, 64> src_flat{};  ///< the shared element each lane addresses
  std::vector<OperandRequest> observed;

  FakeWarp(int regs, int shared_elements)
      : registers(32, std::vector<uint64_t>(regs, 0)), shared(shared_elements, 0) {}

  OperandLanes resolve(const OperandRequest& r) override {
    OperandLanes out;
    out.ok = r.lanes;
    for (int l = 0; l < 32; ++l) out.flat[l] = r.operand == 1 ? src_flat[l] : 0;
    return out;
  }
  void observe(const OperandRequest& r, const OperandLanes&) override { observed.push_back(r); }
  uint64_t& cell(int operand, int lane, int64_t flat) override {
    return operand == 0 ? registers[lane][flat] : shared[flat];
  }
};

}  // namespace

TEST_SUITE("instruction families") {
  TEST_CASE("every registered family's entries are in the table with their home") {
    REQUIRE_FALSE(instruction_families().empty());
    for (const InstructionFamily* f : instruction_families()) {
      std::vector<IntrinsicInfo> entries = f->entries();
      CHECK_FALSE(entries.empty());
      for (const IntrinsicInfo& e : entries) {
        const IntrinsicInfo& in_table = intrinsic_info(e.id);
        CHECK(in_table.name == e.name);
        CHECK(in_table.home == f);
      }
    }
    // ldmatrix_x4_trans is declared by the ldmatrix family.
    REQUIRE(intrinsic_info(IntrinsicId::kLdmatrixX4Trans).home != nullptr);
    CHECK(intrinsic_info(IntrinsicId::kLdmatrixX4Trans).home->name() == "ldmatrix");
  }

  TEST_CASE("ldmatrix declares one 16-byte row address per lane of its matrices") {
    const IntrinsicInfo& x1 = intrinsic_info(IntrinsicId::kLdmatrixX1);
    const IntrinsicInfo& x4 = intrinsic_info(IntrinsicId::kLdmatrixX4);
    CHECK_FALSE(x4.home->memory_access(x4, 0).has_value());  // dst: registers
    auto a4 = x4.home->memory_access(x4, 1);
    REQUIRE(a4.has_value());
    CHECK(a4->bytes == 16);
    CHECK(a4->lanes == 32);  // 4 matrices x 8 rows
    CHECK(a4->ldmatrix);
    CHECK(a4->banks);
    CHECK(a4->align == 16);
    CHECK(a4->what == "ldmatrix_x4 row");
    CHECK(x1.home->memory_access(x1, 1)->lanes == 8);
  }

  TEST_CASE("ldmatrix has no HIP spelling; its CUDA helper is the PTX instruction") {
    const IntrinsicInfo& x2 = intrinsic_info(IntrinsicId::kLdmatrixX2);
    CHECK_THROWS_WITH_AS(x2.home->helper(Language::kHip, x2),
                         "codegen: ldmatrix_x2 is an NVIDIA instruction; it has no HIP spelling",
                         UserError);
    std::string cuda = x2.home->helper(Language::kCuda, x2);
    CHECK(cuda.find("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2]") !=
          std::string::npos);
  }

  TEST_CASE("ldmatrix_x1 executes against any WarpIntrinsicExec") {
    const IntrinsicInfo& x1 = intrinsic_info(IntrinsicId::kLdmatrixX1);
    // An 8x8 matrix in shared memory, row r at elements [16 r, 16 r + 8) (a padded row of 16),
    // element (r, c) holding 100 r + c. Lanes 0..7 give the row addresses.
    FakeWarp w(2, 8 * 16);
    for (int r = 0; r < 8; ++r) {
      for (int c = 0; c < 8; ++c) w.shared[16 * r + c] = 100 * r + c;
      w.src_flat[r] = 16 * r;
    }
    x1.home->execute(x1, w);
    for (int t = 0; t < 32; ++t) {
      int row = t / 4, col = 2 * (t % 4);
      CHECK(w.registers[t][0] == static_cast<uint64_t>(100 * row + col));
      CHECK(w.registers[t][1] == static_cast<uint64_t>(100 * row + col + 1));
    }
    // Two requests: the row addresses (8 lanes, ldmatrix phases), then the registers.
    REQUIRE(w.observed.size() == 2);
    CHECK(w.observed[0].operand == 1);
    CHECK(w.observed[0].lanes == 0xffu);
    CHECK(w.observed[0].ldmatrix);
    CHECK(w.observed[1].operand == 0);
  }

  TEST_CASE("every instruction of the table has a home, and the ten families are registered") {
    for (const IntrinsicInfo& info : intrinsic_table()) {
      INFO(info.name);
      CHECK(info.home != nullptr);
    }
    std::vector<std::string> names;
    for (const InstructionFamily* f : instruction_families()) names.emplace_back(f->name());
    CHECK(names == std::vector<std::string>{"mma.sync", "ldmatrix", "cp.async", "MFMA", "atomics",
                                            "mbarrier", "TMA", "wgmma", "MFMA int8 (CDNA2)",
                                            "MFMA int8 (CDNA3)"});
  }

  TEST_CASE("cp.async declares both addresses aligned to the copy; registers and atomics none") {
    const IntrinsicInfo& cp = intrinsic_info(IntrinsicId::kCpAsync16);
    auto dst = cp.home->memory_access(cp, 0);
    auto src = cp.home->memory_access(cp, 1);
    REQUIRE(dst.has_value());
    REQUIRE(src.has_value());
    CHECK(dst->bytes == 16);
    CHECK(dst->lanes == 0);  // every lane gives an address
    CHECK_FALSE(dst->ldmatrix);
    CHECK(dst->align == 16);  // PTX: cp.async addresses are aligned to the copy size
    CHECK(dst->what == "cp_async_16 destination");
    CHECK(src->what == "cp_async_16 source");
    CHECK_FALSE(cp.home->memory_access(cp, 2).has_value());  // src_size: a value
    const IntrinsicInfo& mma = intrinsic_info(IntrinsicId::kMmaM16N8K16F16);
    for (size_t k = 0; k < 4; ++k) CHECK_FALSE(mma.home->memory_access(mma, k).has_value());
    const IntrinsicInfo& add = intrinsic_info(IntrinsicId::kAtomAdd);
    CHECK_FALSE(add.home->memory_access(add, 0).has_value());  // lanes serialise: no bank question
  }

  TEST_CASE("each family spells its instructions in its own vendor's language only") {
    const IntrinsicInfo& mma = intrinsic_info(IntrinsicId::kMmaM16N8K16BF16);
    const IntrinsicInfo& mfma = intrinsic_info(IntrinsicId::kMfma32x32x8F16);
    CHECK_THROWS_WITH_AS(
        mma.home->helper(Language::kHip, mma),
        "codegen: mma_m16n8k16_bf16 is an NVIDIA instruction; it has no HIP spelling", UserError);
    CHECK_THROWS_WITH_AS(mfma.home->helper(Language::kCuda, mfma),
                         "codegen: mfma_32x32x8_f16 is an AMD instruction; it has no CUDA spelling",
                         UserError);
    CHECK(mfma.home->helper(Language::kHip, mfma).find("__builtin_amdgcn_mfma_f32_32x32x8f16(") !=
          std::string::npos);
    const IntrinsicInfo& wait = intrinsic_info(IntrinsicId::kCpAsyncWaitGroup);
    std::set<std::string> used;
    CallText text{Language::kCuda, {"2"}, DataType::f32(), nullptr};
    CHECK(wait.home->call(wait, text, used) == "tessel_cp_async_wait_group<2>();");
    CHECK(used.count("cp_async_wait_group") == 1);
  }

}  // TEST_SUITE
