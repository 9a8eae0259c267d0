// `tessel run --input/--expect/--save`: a user's kernel file with no built-in reference checked
// against the user's expected values, outputs saved as .npy, and every error path of the data
// options (exit 2 with a message naming the option, the parameter and the file).
#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "cli_runner.h"
#include "interp/host_tensor.h"
#include "tools/host_data.h"
#include "tools/npy.h"

using namespace tessel;
using namespace tessel::cli;
namespace fs = std::filesystem;

namespace {

const std::string kRmsNorm = std::string(TESSEL_SOURCE_DIR) + "/examples/python/rms_norm.py";
constexpr int kM = 32, kN = 64;

/// A fresh folder with X.npy, W.npy (random fp16) and Y.npy, the RMSNorm of X computed here in
/// double precision: Y[i, j] = X[i, j] / sqrt(mean_j(X[i, :]^2) + 1e-6) * W[j].
struct Data {
  fs::path dir;
  HostTensor x{DataType::f16(), {kM, kN}}, w{DataType::f16(), {kN}}, y{DataType::f32(), {kM, kN}};

  Data() {
    dir = fs::temp_directory_path() / ("tessel_cli_data_" + std::to_string(getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    x.fill_random(11);
    w.fill_random(12);
    for (int i = 0; i < kM; ++i) {
      double sum = 0;
      for (int j = 0; j < kN; ++j) sum += x.at(i * kN + j) * x.at(i * kN + j);
      double scale = 1 / std::sqrt(sum / kN + 1e-6);
      for (int j = 0; j < kN; ++j) y.set(i * kN + j, x.at(i * kN + j) * scale * w.at(j));
    }
    write("X.npy", x);
    write("W.npy", w);
    write("Y.npy", y);
  }
  ~Data() { fs::remove_all(dir); }
  std::string path(const std::string& name) const { return (dir / name).string(); }
  void write(const std::string& name, const HostTensor& t) const {
    write_npy(path(name), tensor_array(t));
  }
  CliResult run(std::vector<std::string> extra) const {
    std::vector<std::string> args{
        "run", kRmsNorm, "-D", "M=" + std::to_string(kM), "-D", "N=" + std::to_string(kN)};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_tessel(args);
  }
  std::vector<std::string> inputs() const {
    return {"--input", "X=" + path("X.npy"), "--input", "W=" + path("W.npy")};
  }
};

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_SUITE("cli data") {
  TEST_CASE("a kernel file with no reference is checked against the user's expected values") {
    Data d;
    for (const char* level : {"tile", "thread"}) {
      CAPTURE(level);
      auto args = d.inputs();
      args.insert(args.end(), {"--expect", "Y=" + d.path("Y.npy"), "--level", level});
      CliResult r = d.run(args);
      CHECK(r.status == 0);
      CHECK(contains(r.out, "Y: matches the expected array"));
      CHECK(contains(r.out, "PASSED"));
    }
  }

  TEST_CASE("a wrong expected element fails the run and is named") {
    Data d;
    d.y.set(3 * kN + 5, d.y.at(3 * kN + 5) + 1);
    d.write("Y_bad.npy", d.y);
    auto args = d.inputs();
    args.insert(args.end(), {"--expect", "Y=" + d.path("Y_bad.npy")});
    CliResult r = d.run(args);
    CHECK(r.status == 1);
    CHECK(contains(r.out, "Y: DIFFERS FROM the expected array"));
    CHECK(contains(r.out, "1 element(s) differ; first at Y[3, 5]"));
    // A tolerance wider than the error passes it.
    args.insert(args.end(), {"--atol", "1.5"});
    CHECK(d.run(args).status == 0);
  }

  TEST_CASE("an .npz archive gives every parameter it names") {
    // A = I and B from the archive: C = A·B must be B (the archive's expected C).
    std::string data = std::string(TESSEL_SOURCE_DIR) + "/tests/data/npy/";
    CliResult r = run_tessel({"run", "gemm", "-D", "M=16", "-D", "N=16", "-D", "K=16", "--input",
                              data + "gemm_identity.npz", "--expect",
                              "C=" + data + "gemm_identity_C.npy", "--atol", "0", "--rtol", "0"});
    CHECK(r.status == 0);
    CHECK(contains(r.out, "C: matches the expected array"));
    // An archive with arrays the kernel does not take.
    Data d;
    r = d.run({"--input", data + "pair.npz"});
    CHECK(r.status == 2);
    CHECK(contains(r.err, "has no tensor parameter 'A'; its tensors are X, W, Y"));
  }

  TEST_CASE("--save writes every output, and the tile level's at thread level") {
    Data d;
    auto args = d.inputs();
    args.insert(args.end(), {"--level", "thread", "--save", d.path("out")});
    CliResult r = d.run(args);
    REQUIRE(r.status == 0);
    NpyArray y = read_npy(d.path("out/Y.npy"), "saved");
    NpyArray y_tile = read_npy(d.path("out/Y.tile.npy"), "saved");
    CHECK(y.descr == "<f2");
    CHECK(y.shape == std::vector<int64_t>{kM, kN});
    CHECK(y.bytes == y_tile.bytes);
    CHECK_FALSE(fs::exists(d.path("out/X.npy")));  // X is only read
    ParamInfo param{"rms_norm", "Y", DataType::f16(), {kM, kN}, true};
    HostTensor saved = input_tensor(y, param, "saved");
    CHECK(compare(saved, d.y, Tolerance::for_dtype(DataType::f16())).passed);
  }

  TEST_CASE("given inputs make the outputs independent of the seed") {
    Data d;
    for (const char* seed : {"1", "2"}) {
      auto args = d.inputs();
      args.insert(args.end(), {"--seed", seed, "--save", d.path(std::string("s") + seed)});
      REQUIRE(d.run(args).status == 0);
    }
    CHECK(read_npy(d.path("s1/Y.npy"), "").bytes == read_npy(d.path("s2/Y.npy"), "").bytes);
  }
}

TEST_SUITE("cli data errors") {
  TEST_CASE("a wrong shape is a usage error naming the parameter and both shapes") {
    Data d;
    d.write("X_short.npy", HostTensor(DataType::f16(), {kM / 2, kN}));
    CliResult r = d.run({"--input", "X=" + d.path("X_short.npy")});
    CHECK(r.status == 2);
    CHECK(contains(r.err,
                   "kernel 'rms_norm' takes X as float16 (32, 64); the array is float16 (16, 64)"));
  }

  TEST_CASE("a wrong dtype is a usage error with the fix") {
    Data d;
    CliResult r = d.run({"--input", "X=" + d.path("Y.npy")});  // Y.npy holds float32
    CHECK(r.status == 2);
    CHECK(contains(r.err,
                   "takes X as float16 (32, 64); the array is float32 (32, 64); give a "
                   "numpy float16 array"));
  }

  TEST_CASE("a missing file is a usage error naming it") {
    Data d;
    CliResult r = d.run({"--input", "X=" + d.path("nope.npy")});
    CHECK(r.status == 2);
    CHECK(contains(r.err, "--input X=" + d.path("nope.npy") + ": cannot read '"));
  }

  TEST_CASE("an unknown parameter is a usage error listing the kernel's tensors") {
    Data d;
    CliResult r = d.run({"--expect", "Z=" + d.path("Y.npy")});
    CHECK(r.status == 2);
    CHECK(contains(r.err,
                   "--expect Z=" + d.path("Y.npy") +
                       ": kernel 'rms_norm' has no tensor parameter 'Z'; its tensors are X, W, Y"));
  }

  TEST_CASE("a file that is not .npy is a usage error") {
    Data d;
    CliResult r = d.run({"--input", "X=" + kRmsNorm});
    CHECK(r.status == 2);
    CHECK(contains(r.err, "not a .npy file"));
  }

  TEST_CASE("malformed items and stray tolerances are usage errors") {
    Data d;
    CHECK(contains(d.run({"--input", d.path("X.npy")}).err, "expected NAME=file.npy"));
    CHECK(contains(
        d.run({"--input", "X=" + std::string(TESSEL_SOURCE_DIR) + "/tests/data/npy/pair.npz"}).err,
        "the archive has no array 'X'; it holds A, B"));
    CliResult r = d.run({"--atol", "0.1"});
    CHECK(r.status == 2);
    CHECK(contains(r.err, "--atol/--rtol set the tolerance of --expect"));
  }

  TEST_CASE("--init NAME=zeros lets a kernel that accumulates into its output be checked") {
    // C[i] = C[i] + A[i]: from zeros C ends equal to A; from the default NaN bytes it does not.
    Data d;
    fs::path kernel = d.dir / "accumulate.py";
    {
      std::ofstream f(kernel);
      f << "import tilelang.language as T\n\n\n"
           "@T.prim_func\n"
           "def accumulate(A: T.Tensor((64,), \"float32\"), C: T.Tensor((64,), \"float32\")):\n"
           "    with T.Kernel(1, threads=64) as bx:\n"
           "        for i in T.Parallel(64):\n"
           "            C[i] = C[i] + A[i]\n";
    }
    HostTensor a(DataType::f32(), {64});
    a.fill_random(5);
    d.write("A.npy", a);
    std::vector<std::string> args{"run",      kernel.string(),
                                  "--input",  "A=" + d.path("A.npy"),
                                  "--expect", "C=" + d.path("A.npy")};
    CHECK(run_tessel(args).status == 1);
    args.insert(args.end(), {"--init", "C=zeros"});
    for (const char* level : {"tile", "thread"}) {
      std::vector<std::string> with_level = args;
      with_level.insert(with_level.end(), {"--level", level});
      CliResult r = run_tessel(with_level);
      CHECK_MESSAGE(r.status == 0, r.out << r.err);
    }
    CliResult bad = run_tessel({"run", kernel.string(), "--init", "C=ones"});
    CHECK(bad.status == 2);
    CHECK(contains(bad.err, "write NAME=zeros, NAME=random or NAME=nan"));
    CliResult unknown = run_tessel({"run", kernel.string(), "--init", "D=zeros"});
    CHECK(unknown.status == 2);
    CHECK(contains(unknown.err, "has no tensor parameter 'D'"));
  }
}
