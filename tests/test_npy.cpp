// .npy/.npz files as NumPy and ml_dtypes write them (tests/data/npy, made by make_fixtures.py),
// read into kernel tensors and written back; malformed files and arrays that do not fit a
// parameter are usage errors naming the file and the parameter.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tools/cli.h"
#include "tools/host_data.h"
#include "tools/npy.h"

using namespace tessel;
using namespace tessel::cli;

namespace {

std::string fixture(const std::string& name) {
  return std::string(TESSEL_SOURCE_DIR) + "/tests/data/npy/" + name;
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

ParamInfo param(const std::string& name, DataType dtype, std::vector<int64_t> shape) {
  return {"k", name, dtype, std::move(shape), false};
}

/// The message of the UsageError `f` throws ("" when it throws none).
template <class F>
std::string usage_error(F f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_SUITE("npy files") {
  TEST_CASE("a float16 file from NumPy reads as its values in C order") {
    HostTensor t = input_tensor(read_npy(fixture("f16_2x3.npy"), "f"),
                                param("A", DataType::f16(), {2, 3}), "f");
    for (int i = 0; i < 6; ++i) CHECK(t.at(i) == i / 4.0);  // written as arange(6) / 4
  }

  TEST_CASE("ml_dtypes' bfloat16 and fp8 files read as those types") {
    // The files hold 1.5, -2, 0.25; ml_dtypes writes bfloat16 as '<V2', float8_e4m3fn as '<V1'
    // and float8_e5m2 as '<f1'.
    for (auto [file, dtype] :
         {std::pair{"bf16_3.npy", DataType::bf16()}, std::pair{"e4m3_3.npy", DataType::e4m3()},
          std::pair{"e5m2_3.npy", DataType::e5m2()}}) {
      CAPTURE(file);
      HostTensor t = input_tensor(read_npy(fixture(file), "f"), param("A", dtype, {3}), "f");
      CHECK(t.at(0) == 1.5);
      CHECK(t.at(1) == -2.0);
      CHECK(t.at(2) == 0.25);
    }
  }

  TEST_CASE("a Fortran-order file is transposed into C order") {
    // np.asfortranarray(arange(6).reshape(2, 3)): element [i, j] is 3 * i + j.
    HostTensor t = input_tensor(read_npy(fixture("f32_fortran_2x3.npy"), "f"),
                                param("A", DataType::f32(), {2, 3}), "f");
    for (int i = 0; i < 6; ++i) CHECK(t.at(i) == i);
  }

  TEST_CASE("a big-endian file is byte-swapped") {
    HostTensor t = input_tensor(read_npy(fixture("i32_big_3.npy"), "f"),
                                param("A", DataType::i32(), {3}), "f");
    CHECK(t.at(0) == 1);
    CHECK(t.at(1) == -2);
    CHECK(t.at(2) == 300);
  }

  TEST_CASE("format version 2 and 0-d arrays read") {
    NpyArray v2 = read_npy(fixture("f32_v2_2.npy"), "f");
    CHECK(v2.descr == "<f4");
    CHECK(v2.shape == std::vector<int64_t>{2});
    NpyArray scalar = read_npy(fixture("f64_scalar.npy"), "f");
    CHECK(scalar.shape.empty());
    CHECK(scalar.bytes.size() == 8);
  }

  TEST_CASE("a compressed .npz archive yields its arrays by name") {
    auto arrays = read_npz(fixture("pair.npz"), "f");
    REQUIRE(arrays.size() == 2);
    CHECK(arrays.at("A").descr == "<f2");
    CHECK(arrays.at("A").shape == std::vector<int64_t>{2, 3});
    HostTensor b = input_tensor(arrays.at("B"), param("B", DataType::i8(), {3}), "f");
    CHECK(b.at(2) == 9);  // written as [7, 8, 9]
  }

  TEST_CASE("written files are byte for byte what NumPy writes") {
    for (auto [file, dtype, shape] :
         {std::tuple{"f16_2x3.npy", DataType::f16(), std::vector<int64_t>{2, 3}},
          std::tuple{"bf16_3.npy", DataType::bf16(), std::vector<int64_t>{3}},
          std::tuple{"e4m3_3.npy", DataType::e4m3(), std::vector<int64_t>{3}},
          std::tuple{"bool_4.npy", DataType::boolean(), std::vector<int64_t>{4}}}) {
      CAPTURE(file);
      HostTensor t = input_tensor(read_npy(fixture(file), "f"), param("A", dtype, shape), "f");
      CHECK(npy_file(tensor_array(t)) == file_bytes(fixture(file)));
    }
  }

  TEST_CASE("float8_e5m2 is written as '<V1', which NumPy loads back") {
    HostTensor t(DataType::e5m2(), {2});
    CHECK(tensor_array(t).descr == "<V1");
  }

  TEST_CASE("packed 4-bit tensors are uint8 arrays with the last dimension halved") {
    HostTensor t(DataType::i4(), {2, 4});
    for (int i = 0; i < 8; ++i) t.set(i, i - 4);  // -4 .. 3
    NpyArray a = tensor_array(t);
    CHECK(a.descr == "|u1");
    CHECK(a.shape == std::vector<int64_t>{2, 2});
    // Elements 0 and 1 (-4 = 0xC, -3 = 0xD) share byte 0, the even one in the low nibble.
    CHECK(a.bytes[0] == 0xDC);
    HostTensor back = input_tensor(a, param("Q", DataType::i4(), {2, 4}), "f");
    for (int i = 0; i < 8; ++i) CHECK(back.at(i) == i - 4);
    // An odd last dimension: one flat byte array.
    CHECK(npy_shape(DataType::u4(), {3, 3}) == std::vector<int64_t>{5});
  }
}

TEST_SUITE("npy errors") {
  TEST_CASE("a missing file names the option and the path") {
    std::string msg =
        usage_error([] { read_npy("/nonexistent/a.npy", "--input A=/nonexistent/a.npy"); });
    CHECK(msg.find("--input A=/nonexistent/a.npy: cannot read '/nonexistent/a.npy'") == 0);
  }

  TEST_CASE("a file that is not .npy is refused") {
    CHECK(usage_error([] { parse_npy("hello, world", "x.npy"); }) ==
          "x.npy: not a .npy file (it does not start with NumPy's magic bytes)");
  }

  TEST_CASE("a truncated file is refused with the bytes it lacks") {
    std::string data = file_bytes(fixture("f16_2x3.npy"));
    data.resize(data.size() - 2);  // 6 float16 need 12 bytes, 10 remain
    CHECK(usage_error([&] { parse_npy(data, "t.npy"); }) ==
          "t.npy: the .npy file is truncated: its shape needs 12 bytes of data, it has 10");
  }

  TEST_CASE("malformed headers, object and structured arrays are refused") {
    std::string good = file_bytes(fixture("f16_2x3.npy"));
    auto with_header = [&](std::string from, std::string to) {
      std::string d = good;
      d.replace(d.find(from), from.size(), to);
      return d;
    };
    CHECK(usage_error([&] {
            parse_npy(with_header("(2, 3)", "(2, x)"), "h.npy");
          }).find("h.npy: malformed .npy header") == 0);
    CHECK(usage_error([&] {
            parse_npy(with_header("'<f2'", "'|O8'"), "h.npy");
          }).find("holds no plain numbers") != std::string::npos);
    CHECK(usage_error([&] {
            parse_npy(with_header("'<f2'", "[('a','<f2')]"), "h.npy");
          }).find("structured arrays") != std::string::npos);
    std::string v9 = good;
    v9[6] = 9;
    CHECK(usage_error([&] { parse_npy(v9, "v.npy"); }) ==
          "v.npy: .npy format version 9 is not supported (versions 1, 2 and 3 are)");
  }

  TEST_CASE("a corrupt .npz archive is refused") {
    CHECK(usage_error([] {
            read_npz(fixture("f16_2x3.npy"), "--input d.npz");
          }).find("--input d.npz: cannot read '") == 0);
  }

  TEST_CASE("a wrong dtype names the parameter, both dtypes and the fix") {
    NpyArray a = read_npy(fixture("f16_2x3.npy"), "f");
    CHECK(usage_error([&] {
            input_tensor(a, param("A", DataType::f32(), {2, 3}), "--input A=a.npy");
          }) ==
          "--input A=a.npy: kernel 'k' takes A as float32 (2, 3); the array is float16 (2, 3); "
          "give a numpy float32 array (e.g. a.astype(np.float32))");
    CHECK(usage_error([&] {
            input_tensor(a, param("A", DataType::bf16(), {2, 3}), "o");
          }).find("give an ml_dtypes.bfloat16 array") != std::string::npos);
  }

  TEST_CASE("a wrong shape names the parameter and both shapes") {
    NpyArray a = read_npy(fixture("f16_2x3.npy"), "f");
    CHECK(usage_error([&] {
            input_tensor(a, param("A", DataType::f16(), {3, 2}), "o");
          }) == "o: kernel 'k' takes A as float16 (3, 2); the array is float16 (2, 3)");
  }

  TEST_CASE("expected values may have any numeric dtype but must have the shape") {
    NpyArray a = read_npy(fixture("f16_2x3.npy"), "f");
    HostTensor t = expected_tensor(a, param("C", DataType::f32(), {2, 3}), "o");
    CHECK(t.at(5) == 1.25);
    CHECK(usage_error([&] { expected_tensor(a, param("C", DataType::f32(), {6}), "o"); }) ==
          "o: kernel 'k' takes C as float32 (6,); the expected array is float16 (2, 3)");
    NpyArray bf = read_npy(fixture("bf16_3.npy"), "f");
    CHECK(usage_error([&] {
            expected_tensor(bf, param("C", DataType::f32(), {3}), "o");
          }).find("holds no numbers Tessel can compare") != std::string::npos);
  }
}
