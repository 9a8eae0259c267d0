// Kernel files on the command line: KERNEL may be a path wherever it may be a name; -D sets the
// enclosing def's parameters; exit 2 for a malformed file or command line, 1 for a wrong kernel.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/cli_runner.h"

namespace {

std::string example(const std::string& name) {
  return std::string(TESSEL_SOURCE_DIR) + "/examples/kernels/" + name;
}

/// Writes `text` to a fresh file in a per-process temporary folder; returns its path.
std::string write_file(const std::string& name, const std::string& text) {
  auto dir =
      std::filesystem::temp_directory_path() / ("tessel_parser_cli_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string path = (dir / name).string();
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_SUITE("parser cli") {
  TEST_CASE("the paper's Fig. 16 runs from its file and matches the gemm reference") {
    CliResult r = run_tessel({"run", example("fig16_gemm.py"), "--json"});
    REQUIRE(r.status == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["kernel"] == "Matmul");
    CHECK(j["passed"] == true);
    CHECK(j["blocks"] == 16);  // (512 // 128) * (512 // 128)
  }

  TEST_CASE("the paper's Fig. 17 runs from its file and matches the dequant_gemm reference") {
    CliResult r =
        run_tessel({"run", example("dequant_gemm.py"), "-D", "M=256", "-D", "N=128", "--json"});
    REQUIRE(r.status == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["passed"] == true);
    CHECK(j["blocks"] == 2);  // ceil(128 / 128) * ceil(256 / 128)
  }

  TEST_CASE("Fig. 16 and Fig. 17 go from their files through run, verify, lower and emit") {
    for (const char* file : {"fig16_gemm.py", "dequant_gemm.py"}) {
      CAPTURE(file);
      std::vector<std::string> d = {"-D", "M=256", "-D", "N=256", "-D", "K=128"};
      auto with = [&](std::vector<std::string> head) {
        head.insert(head.begin() + 1, example(file));
        head.insert(head.end(), d.begin(), d.end());
        return run_tessel(head);
      };
      CliResult thread = with({"run", "--level", "thread", "--json"});
      REQUIRE(thread.status == 0);
      auto j = nlohmann::json::parse(thread.out);
      CHECK(j["passed"] == true);
      CHECK(j["tile"]["matches"] == true);
      CliResult verify = with({"verify", "--json"});
      CHECK(verify.status == 0);
      CHECK(nlohmann::json::parse(verify.out)["failed"] == 0);
      CliResult lower = with({"lower"});
      CHECK(lower.status == 0);
      CHECK(lower.out.find("T.mma_m16n8k16_f16(") != std::string::npos);
      CliResult emit = with({"emit", "--target", "cuda"});
      CHECK(emit.status == 0);
      CHECK(emit.out.find("mma.sync.aligned.m16n8k16") != std::string::npos);
      CliResult hip = with({"emit", "--target", "hip"});
      CHECK(hip.status == 0);
      CHECK(hip.out.find("__builtin_amdgcn_mfma_f32_16x16x16f16") != std::string::npos);
    }
  }

  TEST_CASE("print takes a path and -D values") {
    CliResult r = run_tessel({"print", example("gemm.py"), "-D", "M=200"});
    REQUIRE(r.status == 0);
    // ceil(512 / 128) = 4 column blocks, ceil(200 / 128) = 2 row blocks.
    CHECK(
        r.out.find(
            "@T.prim_func\ndef gemm(A: T.Tensor((200, 512), \"float16\"), B: T.Tensor((512, 512), "
            "\"float16\"), C: T.Tensor((200, 512), \"float32\")):\n"
            "    with T.Kernel(4, 2, threads=128) as (bx, by):\n") == 0);
  }

  TEST_CASE("a symbolic dimension of a file is sized with -D") {
    CliResult r = run_tessel({"run", example("elementwise.py"), "-D", "N=77", "--json"});
    REQUIRE(r.status == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["passed"] == true);
    CHECK(j["blocks"] == 1);  // ceil(77 / 256)
  }

  TEST_CASE("an unknown -D name is a usage error listing the file's parameters") {
    std::string path = example("gemm.py");
    CliResult r = run_tessel({"run", path, "-D", "Q=3"});
    CHECK(r.status == 2);
    CHECK(r.err.find("kernel file '" + path +
                     "' has no parameter 'Q'; its parameters are M, N, K, "
                     "block_M, block_N, block_K, num_stages, threads, dtype (the enclosing def's "
                     "parameters and the symbolic dimensions)") != std::string::npos);
  }

  TEST_CASE("a malformed kernel file is a usage error located in the file") {
    std::string path = write_file("syntax.py",
                                  "@T.prim_func\n"
                                  "def k(A: T.Tensor((64,), \"float32\")):\n"
                                  "    with T.Kernel(1, threads=32) as bx:\n"
                                  "        A[0] = = 1.0\n");
    CliResult r = run_tessel({"print", path});
    CHECK(r.status == 2);
    CHECK(r.err.find(path + ":4:16: expected an expression, found '='") != std::string::npos);
  }

  TEST_CASE("a kernel error in a file exits 1 with its location") {
    std::string path = write_file("wrong.py",
                                  "@T.prim_func\n"
                                  "def k(A: T.Tensor((64,), \"float32\")):\n"
                                  "    with T.Kernel(1, threads=4096) as bx:\n"
                                  "        T.clear(A)\n");
    CliResult r = run_tessel({"run", path});
    CHECK(r.status == 1);
    CHECK(r.err.find(path + ":3:10: kernel 'k': threads=4096 must be between 1 and 1024 (the "
                            "threads a block may have)") != std::string::npos);
  }

  TEST_CASE("a file without a reference runs; its runtime errors carry file:line:column") {
    std::string ok = write_file("noref.py",
                                "@T.prim_func\n"
                                "def k(A: T.Tensor((64,), \"float32\")):\n"
                                "    with T.Kernel(1, threads=32) as bx:\n"
                                "        T.fill(A, 1.0)\n");
    CHECK(run_tessel({"run", ok}).status == 0);
    std::string bad = write_file("divergent.py",
                                 "@T.prim_func\n"
                                 "def k(A: T.Tensor((64,), \"float32\")):\n"
                                 "    with T.Kernel(1, threads=64) as bx:\n"
                                 "        tx = T.get_thread_binding()\n"
                                 "        if tx < 16:\n"
                                 "            T.sync_threads()\n");
    CliResult r = run_tessel({"run", bad});
    CHECK(r.status == 1);
    CHECK(
        r.err.find("(at " + bad + ":6:13): T.sync_threads() is reached by only 16 of 64 threads") !=
        std::string::npos);
  }

  TEST_CASE("simulator findings of a file kernel name its lines") {
    std::string path = write_file("race.py",
                                  "@T.prim_func\n"
                                  "def race(A: T.Tensor((64,), \"float32\")):\n"
                                  "    with T.Kernel(1, threads=64) as bx:\n"
                                  "        tx = T.get_thread_binding()\n"
                                  "        s = T.alloc_shared((64,), \"float32\")\n"
                                  "        s[tx] = A[tx]\n"
                                  "        A[tx] = s[63 - tx]\n");
    CliResult r = run_tessel({"run", path, "--level", "thread"});
    CHECK(r.status == 1);  // a race: no barrier between the store to s and the load of s
    CHECK(r.out.find(path + ":6:9") != std::string::npos);
    CHECK(r.out.find(path + ":7:9") != std::string::npos);
  }

  TEST_CASE("the reference directive must name a built-in whose tensors are the file's") {
    std::string unknown = write_file("unknown_ref.py",
                                     "# tessel: reference=gemmm\n"
                                     "@T.prim_func\n"
                                     "def k(A: T.Tensor((64,), \"float32\")):\n"
                                     "    with T.Kernel(1, threads=32) as bx:\n"
                                     "        T.clear(A)\n");
    CliResult r = run_tessel({"run", unknown});
    CHECK(r.status == 2);
    CHECK(r.err.find(unknown + ":1:11: `# tessel: reference=gemmm` names no built-in kernel; the "
                               "built-in kernels are gemm, ") != std::string::npos);
    // B declared (N, K) where the gemm reference reads (K, N): with N = 256, (256, 512) vs (512,
    // 256).
    std::string transposed = write_file("transposed.py",
                                        "# tessel: reference=gemm\n"
                                        "def gemm(M=512, N=256, K=512):\n"
                                        "    @T.prim_func\n"
                                        "    def main(A: T.Tensor((M, K), \"float16\"),\n"
                                        "             B: T.Tensor((N, K), \"float16\"),\n"
                                        "             C: T.Tensor((M, N), \"float32\")):\n"
                                        "        with T.Kernel(1, threads=128) as bx:\n"
                                        "            T.clear(C)\n"
                                        "    return main\n");
    r = run_tessel({"run", transposed});
    CHECK(r.status == 2);
    CHECK(
        r.err.find(transposed +
                   ":1:11: tensor 'B' is (256, 512) float16 in kernel 'gemm' but "
                   "(512, 256) float16 in the built-in 'gemm' whose reference checks it (with the "
                   "same -D values)") != std::string::npos);
  }

  TEST_CASE("a path that cannot be read is a usage error") {
    CliResult r = run_tessel({"run", "no/such/kernel.py"});
    CHECK(r.status == 2);
    CHECK(r.err.find("cannot read the kernel file 'no/such/kernel.py'") != std::string::npos);
  }

  TEST_CASE("several kernels in a file: list them, pick one with --kernel") {
    std::string path = write_file("two.py",
                                  "import tilelang.language as T\n"
                                  "def fwd(n=64, dtype=\"float32\"):\n"
                                  "    @T.prim_func\n"
                                  "    def main(A: T.Tensor((n,), dtype)):\n"
                                  "        with T.Kernel(1, threads=32) as bx:\n"
                                  "            A[bx] = 1.0\n"
                                  "    return main\n"
                                  "@T.prim_func\n"
                                  "def bwd(B: T.Tensor((8,), \"float32\")):\n"
                                  "    with T.Kernel(2, threads=32) as bx:\n"
                                  "        B[bx] = 2.0\n"
                                  "def test_fwd():\n"
                                  "    fwd()\n");
    CliResult r = run_tessel({"print", path});
    CHECK(r.status == 2);
    CHECK(r.err.find(path + ": this file holds 2 kernels: fwd (line 2), bwd (line 9); pick one "
                            "with --kernel NAME") != std::string::npos);
    r = run_tessel({"print", path, "--kernel", "bwd"});
    CHECK(r.status == 0);
    CHECK(r.out.find("def bwd(B: T.Tensor((8,), \"float32\")):") != std::string::npos);
    r = run_tessel({"run", path, "--kernel", "fwd", "-D", "n=16", "--json"});
    CHECK(r.status == 0);
    r = run_tessel({"print", "gemm", "--kernel", "fwd"});
    CHECK(r.status == 2);
    CHECK(r.err.find("--kernel fwd picks a kernel of a kernel file; 'gemm' is a built-in") !=
          std::string::npos);

    r = run_tessel({"list", path});
    CHECK(r.status == 0);
    CHECK(r.out == path +
                       ": 2 kernels (pick one with --kernel NAME)\n"
                       "fwd (line 2)\n"
                       "    n=64  (parameter)\n"
                       "    dtype=float32  (parameter)\n"
                       "bwd (line 9)\n");
    r = run_tessel({"list", path, "--json"});
    REQUIRE(r.status == 0);
    auto j = nlohmann::json::parse(r.out);
    REQUIRE(j["kernels"].size() == 2);
    CHECK(j["kernels"][0]["name"] == "fwd");
    CHECK(j["kernels"][0]["params"][0]["default"] == "64");
    CHECK(j["kernels"][1]["line"] == 9);
  }

  TEST_CASE("an eager @tilelang.jit kernel: T.const sizes from -D, symbolic otherwise") {
    std::string path =
        write_file("eager_add.py",
                   "import tilelang\n"
                   "import tilelang.language as T\n"
                   "@tilelang.jit\n"
                   "def add(A, B, block: int = 32):\n"
                   "    N = T.const(\"N\")\n"
                   "    A: T.Tensor((N,), T.float32)\n"
                   "    B: T.Tensor((N,), T.float32)\n"
                   "    C = T.empty((N,), T.float32)\n"
                   "    with T.Kernel(T.ceildiv(N, block), threads=block) as bx:\n"
                   "        for i in T.Parallel(block):\n"
                   "            C[bx * block + i] = A[bx * block + i] + B[bx * block + i]\n"
                   "    return C\n");
    CliResult r = run_tessel({"list", path});
    CHECK(r.out.find("    N  (size made by T.const: symbolic when not given)") !=
          std::string::npos);
    r = run_tessel({"run", path});
    CHECK(r.status == 2);  // a value the command line must give
    CHECK(r.err.find("symbolic dimension 'N' needs a positive size for a run; give it with -D "
                     "N=1000") != std::string::npos);
    r = run_tessel({"run", path, "-D", "N=64", "--json"});
    REQUIRE(r.status == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["blocks"] == 2);  // 64 / 32
    r = run_tessel({"run", path, "-D", "N=64", "--level", "thread"});
    CHECK(r.status == 0);
    CHECK(r.out.find("tile level: same results") != std::string::npos);
    r = run_tessel({"print", path, "-D", "N=64", "-D", "block=16"});
    CHECK(r.out.find("with T.Kernel(4, threads=16)") != std::string::npos);
  }

  TEST_CASE("asserts: a false one is a kernel error, one on a symbolic size is checked at run") {
    std::string path =
        write_file("asserts.py",
                   "import tilelang.language as T\n"
                   "N = T.dynamic(\"N\")\n"
                   "def k(block=32):\n"
                   "    assert block % 32 == 0, f\"block must be a multiple of 32\"\n"
                   "    @T.prim_func\n"
                   "    def main(A: T.Tensor((N,), \"float32\")):\n"
                   "        assert N % block == 0, \"N must be a multiple of block\"\n"
                   "        with T.Kernel(T.ceildiv(N, block), threads=32) as bx:\n"
                   "            A[bx] = 1.0\n"
                   "    return main\n");
    CliResult r = run_tessel({"print", path, "-D", "block=48"});
    CHECK(r.status == 1);
    CHECK(r.err.find(path + ":4:5: assertion failed: block must be a multiple of 32") !=
          std::string::npos);
    r = run_tessel({"run", path, "-D", "N=96"});
    CHECK(r.status == 0);
    r = run_tessel({"run", path, "-D", "N=100"});
    CHECK(r.status == 1);
    CHECK(r.err.find(path + ":7:9: assertion failed: N must be a multiple of block (with N=100)") !=
          std::string::npos);
  }

}  // TEST_SUITE
