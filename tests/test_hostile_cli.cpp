// Hostile inputs to the command line: devices and directories as kernel files, unwritable outputs,
// nonsense option values, runaway kernels and sizes. Each must end in exit 0, 1 or 2 with a
// message naming the problem, within bounded time and memory (DESIGN.md's exit-code contract).
#include <doctest/doctest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "interp/run_control.h"
#include "tests/cli_runner.h"
#include "tools/progress_line.h"

namespace fs = std::filesystem;

namespace {

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

/// A scratch folder for this test process, removed at exit.
struct Scratch {
  fs::path dir;
  Scratch() {
    dir = fs::temp_directory_path() / ("tessel_hostile_" + std::to_string(getpid()));
    fs::create_directories(dir);
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string write(const std::string& name, const std::string& text) const {
    std::string path = (dir / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
};

const Scratch& scratch() {
  static Scratch s;
  return s;
}

/// Peak resident memory of this process, in MiB.
long peak_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024;
}

/// Runs `tessel args...` and checks the contract: the status is 0, 1 or 2, and it took less than
/// `seconds` (a hang or a runaway read never ends; the bound is loose for a loaded machine).
CliResult run_bounded(const std::vector<std::string>& args, double seconds = 60) {
  auto start = std::chrono::steady_clock::now();
  CliResult r = run_tessel(args);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::string line;
  for (const std::string& a : args) line += a + " ";
  INFO("tessel " << line << "\nstatus " << r.status << "\nstdout: " << r.out
                 << "\nstderr: " << r.err);
  CHECK(r.status >= 0);
  CHECK(r.status <= 2);
  CHECK(took < seconds);
  return r;
}

// A block loops 10**9 times: it never ends in a test's time without a limit.
const char* kEndless = R"(import tilelang.language as T


@T.prim_func
def endless(A: T.Tensor((128,), "float32")):
    with T.Kernel(4, threads=32) as bx:
        tx = T.get_thread_binding()
        v = T.alloc_var("float32")
        v = A[tx]
        for k in T.serial(1000000000):
            v = v + 1.0
        A[tx] = v
)";

}  // namespace

TEST_SUITE("hostile cli") {
  // ---- Kernel files that are not kernel files ---------------------------------------------------

  TEST_CASE("an endless device as a kernel file stops at the size limit with a usage error") {
    long before = peak_mib();
    for (const char* command : {"run", "print", "list"}) {
      CliResult r = run_bounded({command, "/dev/zero"});
      CHECK(r.status == 2);
      CHECK(contains(r.err, "'/dev/zero' holds more than 4 MiB"));
    }
    CliResult r = run_bounded({"print", "/dev/urandom"});
    CHECK(r.status == 2);
    CHECK(contains(r.err, "holds more than 4 MiB"));
    // At most the 4 MiB limit (plus a chunk) is ever held.
    CHECK(peak_mib() - before < 64);
  }

  TEST_CASE("a directory as a kernel file says it is a directory") {
    std::string dir = scratch().dir.string() + "/";
    for (const char* command : {"run", "print", "list"}) {
      CliResult r = run_bounded({command, dir});
      CHECK(r.status == 2);
      CHECK(contains(r.err, "is a directory, not a"));
      CHECK(!contains(r.err, "no kernel in this file"));
    }
  }

  TEST_CASE("a CR-only, an empty and a binary kernel file each get a message saying what it is") {
    std::string cr = scratch().write("cr.py",
                                     "import tilelang.language as T\r\r@T.prim_func\rdef k(A: "
                                     "T.Tensor((4,), \"float32\")):\r    pass\r");
    CliResult r = run_bounded({"print", cr});
    CHECK(r.status == 2);
    CHECK(contains(r.err, "separates its lines with CR alone"));
    r = run_bounded({"print", scratch().write("empty.py", "")});
    CHECK(r.status == 2);
    CHECK(contains(r.err, "is empty"));
    r = run_bounded({"print", scratch().write("bin.py", std::string("ab\0cd", 5))});
    CHECK(r.status == 2);
    CHECK(contains(r.err, "is not a text file (a NUL byte at offset 2)"));
  }

  TEST_CASE("a missing kernel file is a usage error naming the path") {
    CliResult r = run_bounded({"run", "/nonexistent/k.py"});
    CHECK(r.status == 2);
    CHECK(contains(r.err, "cannot read the kernel file '/nonexistent/k.py' (No such file"));
  }

  // ---- -D values ------------------------------------------------------------------------------

  TEST_CASE("a non-positive size for a T.dynamic dimension of a built-in is a usage error") {
    for (const char* n : {"N=-1", "N=0"}) {
      CliResult r = run_bounded({"run", "elementwise", "-D", n});
      CHECK(r.status == 2);
      CHECK(contains(r.err,
                     "kernel 'elementwise' needs a positive size for its symbolic "
                     "dimension 'N'"));
      CHECK(!contains(r.err, "internal error"));
    }
  }

  TEST_CASE("a -D value of the wrong kind is a usage error for a built-in as for a kernel file") {
    CliResult builtin = run_bounded({"run", "gemm", "-D", "M=big"});
    CHECK(builtin.status == 2);
    CHECK(contains(builtin.err, "parameter M=big is not an integer"));
    CliResult dtype = run_bounded({"run", "gemm", "-D", "dtype=float99"});
    CHECK(dtype.status == 2);
    CHECK(contains(dtype.err, "kernel 'gemm': parameter dtype=float99 is not a data type"));
    CliResult block = run_bounded({"run", "gemm", "-D", "block_M=0"});
    CHECK(block.status == 2);
    CHECK(contains(block.err, "kernel 'gemm': parameter block_M=0 must be at least 1"));
    // The same mistake in a kernel file's symbolic size.
    std::string file = std::string(TESSEL_SOURCE_DIR) + "/examples/kernels/warp_shuffle_reduce.py";
    CliResult blocks = run_bounded({"run", file, "-D", "blocks=two"});
    CHECK(blocks.status == 2);
    CHECK(contains(blocks.err, "-D blocks=two: parameter 'blocks' of 'warp_shuffle_reduce'"));
    CHECK(contains(blocks.err, "is an integer (default 2); give e.g. -D blocks=2"));
  }

  TEST_CASE("a -D name given twice is a usage error") {
    CliResult r = run_bounded({"run", "gemm", "-D", "M=64", "-D", "M=128"});
    CHECK(r.status == 2);
    CHECK(contains(r.err, "-D M=128: 'M' is already set (-D M=64)"));
  }

  // ---- Outputs that cannot be written --------------------------------------------------------

  TEST_CASE("emit -o to a full device or an unwritable path fails instead of exiting 0") {
    CliResult full = run_bounded({"emit", "softmax", "-o", "/dev/full"}, 30);
    CHECK(full.status == 2);
    CHECK(contains(full.err, "-o /dev/full: writing"));
    CHECK(contains(full.err, "No space left on device"));
    CliResult missing = run_bounded({"emit", "softmax", "-o", "/nonexistent/dir/k.cu"}, 30);
    CHECK(missing.status == 2);
    CHECK(contains(missing.err, "cannot open '/nonexistent/dir/k.cu' for writing"));
  }

  TEST_CASE("layout --svg and run --save check their writes") {
    CliResult svg = run_bounded({"layout", "swizzle_128b(64, 64, f16)", "--svg", "/dev/full"});
    CHECK(svg.status == 2);
    CHECK(contains(svg.err, "--svg /dev/full"));
    // --save DIR where DIR is a file: the folder cannot be made.
    std::string file = scratch().write("not_a_dir", "x");
    CliResult save = run_bounded({"run", "softmax", "-D", "M=16", "--save", file});
    CHECK(save.status == 2);
    CHECK(contains(save.err, "--save " + file));
  }

  // ---- Usage errors: JSON and the bare command -----------------------------------------------

  TEST_CASE("--json on a usage error prints one JSON object with the error") {
    CliResult r = run_bounded({"run", "nosuch", "--json"});
    CHECK(r.status == 2);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["exit_code"] == 2);
    CHECK(contains(j["error"].get<std::string>(), "no built-in kernel named 'nosuch'"));
    // Also when the command line itself does not parse.
    CliResult bad = run_bounded({"run", "gemm", "--nosuch-option", "--json"});
    CHECK(bad.status == 2);
    CHECK(nlohmann::json::parse(bad.out)["exit_code"] == 2);
  }

  TEST_CASE("bytes that are not UTF-8 in an error still give one valid JSON object") {
    // Found by the CLI fuzz test: the message quoted the bytes and the JSON dump threw.
    CliResult r = run_bounded({"run", "no\xff\xfesuch", "--json"});
    CHECK(r.status == 2);
    auto j = nlohmann::json::parse(r.out);
    CHECK(contains(j["error"].get<std::string>(), "no\xEF\xBF\xBD\xEF\xBF\xBDsuch"));
  }

  TEST_CASE("no command at all lists the commands") {
    CliResult r = run_bounded({});
    CHECK(r.status == 2);
    CHECK(contains(r.err, "a command is required; the commands are:"));
    CHECK(contains(r.err, "tessel run"));
    CHECK(contains(r.err, "tessel banks"));
  }

  // ---- Option values that mean nothing ---------------------------------------------------------

  TEST_CASE("run refuses negative seeds, worker and repeat counts and options without effect") {
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {{"--seed", "-1"}, "--seed: -1 is negative; give 0 or more"},
        {{"--workers", "-4"}, "--workers: Value -4 not in range 0 to 1024"},
        {{"--workers", "100000"}, "--workers: Value 100000 not in range 0 to 1024"},
        {{"--repeats", "-1"}, "--repeats: Value -1 not in range 1 to 10000"},
        {{"--max-steps", "-5"}, "--max-steps: -5 is negative; give 0 or more"},
        {{"--timeout", "-1"}, "--timeout: -1 is negative; give 0 or more"}};
    for (const auto& [extra, message] : cases) {
      std::vector<std::string> args = {"run", "softmax", "-D", "M=16"};
      args.insert(args.end(), extra.begin(), extra.end());
      CliResult r = run_bounded(args);
      CHECK(r.status == 2);
      CHECK(contains(r.err, message));
    }
    CliResult target = run_bounded({"run", "softmax", "-D", "M=16", "--target", "sm90"});
    CHECK(target.status == 2);
    CHECK(contains(target.err, "--target picks how --level thread simulates the GPU"));
    CliResult repeats = run_bounded({"run", "softmax", "-D", "M=16", "--repeats", "3"});
    CHECK(repeats.status == 2);
    CHECK(contains(repeats.err, "--repeats counts timed runs of --device cuda only"));
  }

  TEST_CASE("-D on a command without kernel parameters is refused") {
    CliResult list = run_bounded({"list", "-D", "M=3"});
    CHECK(list.status == 2);
    CHECK(contains(list.err, "`tessel list` takes none"));
    CliResult layout = run_bounded({"layout", "row_major(4, 4)", "-D", "M=3"});
    CHECK(layout.status == 2);
    CHECK(contains(layout.err, "`tessel layout` has none (write the numbers into the SPEC)"));
  }

  TEST_CASE("banks refuses a width or lane count below 1 and symbols the lambda lacks") {
    const std::vector<std::string> base = {"banks", "--layout", "row_major(32, 32)",     "--dtype",
                                           "f32",   "--access", "lambda lane: (lane, 0)"};
    auto with = [&](std::vector<std::string> extra) {
      std::vector<std::string> args = base;
      args.insert(args.end(), extra.begin(), extra.end());
      return run_bounded(args);
    };
    CHECK(with({}).status == 0);
    for (const char* w : {"0", "-4"}) {
      CliResult r = with({"--width", w});
      CHECK(r.status == 2);
      CHECK(contains(r.err, "--width"));
    }
    CliResult lanes = with({"--lanes", "0"});
    CHECK(lanes.status == 2);
    CHECK(contains(lanes.err, "--lanes must be in [1, 32]"));
    CliResult range = with({"--range", "k=0:3"});
    CHECK(range.status == 2);
    CHECK(contains(range.err, "the access lambda has no symbol 'k'; it has only the lane"));
    CliResult define = with({"-D", "k=1"});
    CHECK(define.status == 2);
    CHECK(contains(define.err, "-D k=1: the access lambda has no symbol 'k'"));
  }

  TEST_CASE("banks refuses an access outside the layout, naming the lane and the index") {
    // Lane l reads row l + 8 of a 32-row layout: lanes 24..31 fall outside (24 + 8 = 32).
    CliResult r = run_bounded({"banks", "--layout", "row_major(32, 32)", "--dtype", "f32",
                               "--access", "lambda lane: (lane + 8, 0)"});
    CHECK(r.status == 2);
    CHECK(contains(r.err, "lane 24 accesses A_shared[32, 0], outside the layout's shape (32, 32)"));
    // A symbol that pushes it out for one value of its range only: k = 1 takes lane 31 to row 32.
    CliResult k = run_bounded({"banks", "--layout", "row_major(32, 32)", "--dtype", "f32",
                               "--access", "lambda lane, k: (lane + k, 0)", "--range", "k=0:1"});
    CHECK(k.status == 2);
    CHECK(contains(k.err, "lane 31, k=1 accesses A_shared[32, 0]"));
  }

  TEST_CASE("T.annotate_layout twice on one buffer is a kernel error naming both") {
    std::string file = scratch().write("twice.py", R"(import tilelang.language as T


@T.prim_func
def twice(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16")):
    with T.Kernel(1, threads=128):
        S = T.alloc_shared((64, 64), "float16")
        T.annotate_layout({S: swizzle_128b(64, 64, f16)})
        T.annotate_layout({S: row_major(64, 64)})
        T.copy(A, S)
        T.copy(S, B)
)");
    CliResult r = run_bounded({"lower", file});
    CHECK(r.status == 1);
    CHECK(contains(r.err, "buffer 'S' is annotated twice"));
    std::string dict = scratch().write("dict.py", R"(import tilelang.language as T


@T.prim_func
def dict_twice(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16")):
    with T.Kernel(1, threads=128):
        S = T.alloc_shared((64, 64), "float16")
        T.annotate_layout({S: swizzle_128b(64, 64, f16), S: row_major(64, 64)})
        T.copy(A, S)
        T.copy(S, B)
)");
    CliResult d = run_bounded({"print", dict});
    CHECK(d.status != 0);
    CHECK(contains(d.err, "'S' is given two layouts"));
  }

  // ---- Division by zero ---------------------------------------------------------------------

  TEST_CASE("a division by zero in a layout names the expression and the indices") {
    // i // j at the first point, i = 0, j = 0; exit 1: the layout, not the command line, is wrong.
    CliResult r = run_bounded({"layout", "Layout([4, 4], lambda i, j: i // j)"});
    CHECK(r.status == 1);
    CHECK(contains(r.err,
                   "division by zero in the index expression `i // j`: the divisor `j` "
                   "is 0 at i = 0, j = 0"));
    CliResult mod = run_bounded({"layout", "Layout([4, 4], lambda i, j: i % j)", "--json"});
    CHECK(mod.status == 1);
    CHECK(contains(nlohmann::json::parse(mod.out)["error"].get<std::string>(),
                   "division by zero in the index expression `i % j`"));
  }

  TEST_CASE("a division by zero in a kernel's index names kernel, line, buffer and indices") {
    // A[i // (j - j), j]: thread 0 holds (i, j) = (0, 0) first and divides by j - j = 0.
    std::string file = scratch().write("ij.py", R"(import tilelang.language as T


@T.prim_func
def ij(A: T.Tensor((8, 8), "float32"), B: T.Tensor((8, 8), "float32")):
    with T.Kernel(1, threads=32) as bx:
        for i, j in T.Parallel(8, 8):
            B[i, j] = A[i // (j - j), j]
)");
    for (const char* level : {"tile", "thread"}) {
      CAPTURE(level);
      CliResult r = run_bounded({"run", file, "--level", level});
      CHECK(r.status == 1);
      CHECK(contains(r.err, "kernel 'ij', block (0,), thread 0 (at " + file +
                                ":8:13): integer "
                                "division by zero in `"));
      CHECK(contains(r.err, "in an index of the load of A["));
    }
  }

  // ---- Runaway kernels ------------------------------------------------------------------------

  TEST_CASE("--max-steps stops an endless kernel at both levels, saying where") {
    std::string file = scratch().write("endless.py", kEndless);
    for (const char* level : {"tile", "thread"}) {
      CliResult r = run_bounded({"run", file, "--level", level, "--max-steps", "200000"});
      CHECK(r.status == 1);
      CHECK(contains(r.err, "stopped: kernel 'endless', block (0"));
      CHECK(contains(r.err, "it reached the limit of 200000 steps (--max-steps)"));
      CHECK(contains(r.err, std::string("of 4 blocks done at ") + level + " level"));
    }
  }

  TEST_CASE("--timeout stops an endless kernel within the time, and --json says so") {
    std::string file = scratch().write("endless.py", kEndless);
    auto start = std::chrono::steady_clock::now();
    CliResult r = run_bounded({"run", file, "--timeout", "0.3", "--json"});
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    CHECK(r.status == 1);
    CHECK(took < 20);  // 0.3 s and the checks after it; generous for a loaded CI machine
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["passed"] == false);
    CHECK(j["stopped"] == true);
    CHECK(contains(j["error"].get<std::string>(), "it ran for longer than 0.3 s (--timeout)"));
  }

  TEST_CASE("the progress line counts blocks done, the rate and the time left") {
    tessel::RunControl control;
    CHECK(tessel::cli::progress_text(control).find(": 0/0 blocks") != std::string::npos);
    control.begin("thread level", 64);
    for (int i = 0; i < 16; ++i) control.block_done();
    std::string text = tessel::cli::progress_text(control);
    CHECK(contains(text, "thread level: 16/64 blocks"));
    CHECK(contains(text, "blocks/s"));
    CHECK(contains(text, "left"));
  }

  TEST_CASE("--progress draws on stderr and never on stdout") {
    std::string file = scratch().write("endless.py", kEndless);
    CliResult r = run_bounded({"run", file, "--timeout", "3", "--progress", "--json"});
    CHECK(r.status == 1);
    CHECK(contains(r.err, "tile level: 0/4 blocks"));
    CHECK(nlohmann::json::parse(r.out)["stopped"] == true);
  }

  // ---- Determinism ------------------------------------------------------------------------------

  TEST_CASE("cross-block findings and their order do not depend on --workers") {
    // Eight blocks store to overlapping elements of C and read elements other blocks store:
    // write conflicts and races between blocks, found by whichever block comes second. With
    // several workers, which block that is once depended on thread timing; and the values a
    // block loads from C (so the value it stores, and whether a second store of an element is
    // a benign race or a write conflict) depended on how far the other blocks had got. A launch
    // with races between blocks now runs again in block order: the whole report is --workers 1's.
    std::string file = scratch().write("overlap.py", R"(import tilelang.language as T


@T.prim_func
def overlap(A: T.Tensor((256,), "float32"), C: T.Tensor((64,), "float32")):
    with T.Kernel(8, threads=32) as bx:
        tx = T.get_thread_binding()
        C[(tx + bx * 5) % 64] = A[bx * 32 + tx]
        C[(tx * 3 + bx) % 64] = C[(tx * 7 + bx * 3) % 64] + A[tx]
)");
    auto report = [&](const char* workers) {
      CliResult r = run_bounded({"run", file, "--level", "thread", "--workers", workers, "--json"});
      CHECK(r.status == 1);
      nlohmann::json j = nlohmann::json::parse(r.out);
      return nlohmann::json{{"sim", j["sim"]}, {"max_abs_err", j["max_abs_err"]}};
    };
    nlohmann::json whole = report("1");
    nlohmann::json one = whole["sim"]["findings"];
    REQUIRE(one.size() >= 2);
    bool conflict = false, race = false;
    for (const auto& f : one) {
      conflict = conflict || f["kind"] == "write_conflict";
      race = race || f["kind"] == "race";
    }
    CHECK(conflict);
    CHECK(race);
    // Before turns, about 1 run in 6 with 4 workers named another element or block.
    for (int run = 0; run < 10; ++run) {
      nlohmann::json many = report(run % 2 ? "4" : "8");
      CHECK(many == whole);
    }
  }

  TEST_CASE(
      "values loaded from another block's stores, and the verdicts on them, follow block "
      "order whatever --workers") {
    // Block b stores B[b] = 1, then C[0] = B[(b + 1) % 8], with B all zeros at the start; the
    // loops make later blocks reach their stores first, so with several workers block b used to
    // load B[b + 1] after block b + 1 stored it. In block order (derived by hand): blocks 0..6
    // load a 0 (block b + 1 has not run), block 7 loads B[0] = 1 stored by block 0. So of the
    // seven stores to C[0] after block 0's (a 0), blocks 1..6 store the same value (6 benign
    // races) and block 7 a different one (1 write conflict); blocks 1..7 each store an element
    // of B an earlier block read (7 races), and block 7 reads B[0] after block 0 stored it (1).
    std::string file = scratch().write("late_reads.py", R"(import tilelang.language as T


@T.prim_func
def late_reads(A: T.Tensor((32,), "float32"), B: T.Tensor((8,), "float32"),
               C: T.Tensor((1,), "float32")):
    with T.Kernel(8, threads=32) as bx:
        tx = T.get_thread_binding()
        acc = T.alloc_local((1,), "float32")
        acc[0] = 0.0
        for k in T.serial(100 * (8 - bx)):
            acc[0] = acc[0] + A[tx]
        if tx == 0:
            B[bx] = 1.0
        for k in T.serial(100 * (8 - bx)):
            acc[0] = acc[0] + A[tx]
        if tx == 0:
            C[0] = B[(bx + 1) % 8]
)");
    for (const char* workers : {"1", "2", "4", "8", "4", "8"}) {
      CAPTURE(workers);
      CliResult r = run_bounded(
          {"run", file, "--level", "thread", "--init", "B=zeros", "--workers", workers, "--json"});
      CHECK(r.status == 1);
      nlohmann::json j = nlohmann::json::parse(r.out);
      int benign_c = 0, conflict_c = 0, races_b = 0;
      for (const auto& f : j["sim"]["findings"]) {
        int count = f.value("count", 1);
        if (f["buffer"] == "C" && f["benign"] == true) benign_c += count;
        if (f["buffer"] == "C" && f["kind"] == "write_conflict") conflict_c += count;
        if (f["buffer"] == "B" && f["kind"] == "race") races_b += count;
      }
      CHECK(benign_c == 6);
      CHECK(conflict_c == 1);
      CHECK(races_b == 8);
    }
  }

  // ---- Sizes ----------------------------------------------------------------------------------

  TEST_CASE("huge local and shared buffers are refused before anything is allocated") {
    long before = peak_mib();
    std::string local = scratch().write("big_local.py", R"(import tilelang.language as T


@T.prim_func
def big_local(A: T.Tensor((128,), "float32")):
    with T.Kernel(1, threads=128) as bx:
        tx = T.get_thread_binding()
        acc = T.alloc_local((1073741824,), "float32")
        acc[0] = A[tx]
        A[tx] = acc[0]
)");
    std::string shared = scratch().write("big_shared.py", R"(import tilelang.language as T


@T.prim_func
def big_shared(A: T.Tensor((128,), "float32")):
    with T.Kernel(1, threads=128) as bx:
        tx = T.get_thread_binding()
        S = T.alloc_shared((1073741824,), "float32")
        S[tx] = A[tx]
        A[tx] = S[tx]
)");
    for (const char* level : {"tile", "thread"}) {
      CliResult l = run_bounded({"run", local, "--level", level});
      CHECK(l.status == 1);
      CHECK(contains(l.err, "acc"));
      CHECK(contains(l.err, "registers"));
      CliResult s = run_bounded({"run", shared, "--level", level});
      CHECK(s.status == 1);
      CHECK(contains(s.err, "S 4294967296 B"));
    }
    CHECK(peak_mib() - before < 256);
  }

  TEST_CASE("host tensors larger than the machine are refused naming the tensors") {
    long before = peak_mib();
    CliResult r = run_bounded({"run", "gemm", "-D", "M=1000000", "-D", "N=1000000"});
    CHECK(r.status == 1);
    CHECK(contains(r.err, "kernel 'gemm': its tensors would need"));
    CHECK(contains(r.err, "C (1000000, 1000000)"));
    CHECK(contains(r.err, "three quarters of this machine's memory"));
    CHECK(peak_mib() - before < 256);
  }
}
