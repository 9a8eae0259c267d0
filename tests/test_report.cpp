// `tessel report` and the bank maps: the HTML page is parsed with libxml2's HTML parser (lenient
// HTML4: it does not validate, so the tests check the structure with XPath) and checked as a
// reader would look at it — every source line there, every finding at its line with the other
// line it involves, a bank map exactly under the instructions that have bank conflicts. The
// expected lines are found by reading the kernel files, the expected costs derived by hand from
// the bank rules of REFERENCE.md (32 banks x 4 B; an ldmatrix phase is 8 rows of 16 bytes).
#include <doctest/doctest.h>
#include <libxml/HTMLparser.h>
#include <libxml/xpath.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/bank_phase.h"
#include "sim/block_sim.h"
#include "tests/cli_runner.h"

using namespace tessel;

namespace {

std::string source(const std::string& rel) { return std::string(TESSEL_SOURCE_DIR) + "/" + rel; }

std::vector<std::string> file_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

/// The 1-based line of `path` containing `text` (the first one).
int line_of(const std::string& path, const std::string& text) {
  std::vector<std::string> lines = file_lines(path);
  for (size_t k = 0; k < lines.size(); ++k) {
    if (lines[k].find(text) != std::string::npos) return static_cast<int>(k + 1);
  }
  FAIL("no line of " << path << " contains " << text);
  return 0;
}

/// The line of the innermost `T.serial(` at or above `line` (the builder records the loop).
int enclosing_serial(const std::string& path, int line) {
  std::vector<std::string> lines = file_lines(path);
  for (int k = line; k >= 1; --k) {
    if (lines[k - 1].find("T.serial(") != std::string::npos) return k;
  }
  FAIL("no T.serial( above line " << line << " of " << path);
  return 0;
}

/// A report page parsed by libxml2, queried with XPath.
class Page {
 public:
  explicit Page(const std::string& html) {
    doc_ = htmlReadMemory(html.data(), static_cast<int>(html.size()), "report.html", "utf-8",
                          HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING | HTML_PARSE_NONET);
    REQUIRE(doc_ != nullptr);
    ctx_ = xmlXPathNewContext(doc_);
  }
  ~Page() {
    xmlXPathFreeContext(ctx_);
    xmlFreeDoc(doc_);
  }
  Page(const Page&) = delete;
  Page& operator=(const Page&) = delete;

  /// The nodes an XPath expression selects.
  std::vector<xmlNodePtr> all(const std::string& xpath) const {
    xmlXPathObjectPtr r = xmlXPathEvalExpression(BAD_CAST xpath.c_str(), ctx_);
    std::vector<xmlNodePtr> nodes;
    if (r && r->nodesetval) {
      for (int k = 0; k < r->nodesetval->nodeNr; ++k) nodes.push_back(r->nodesetval->nodeTab[k]);
    }
    xmlXPathFreeObject(r);
    return nodes;
  }
  size_t count(const std::string& xpath) const { return all(xpath).size(); }

  static std::string text(xmlNodePtr n) {
    xmlChar* t = xmlNodeGetContent(n);
    std::string s = t ? reinterpret_cast<const char*>(t) : "";
    xmlFree(t);
    return s;
  }
  static std::string attr(xmlNodePtr n, const char* name) {
    xmlChar* v = xmlGetProp(n, BAD_CAST name);
    std::string s = v ? reinterpret_cast<const char*>(v) : "";
    xmlFree(v);
    return s;
  }

 private:
  htmlDocPtr doc_ = nullptr;
  xmlXPathContextPtr ctx_ = nullptr;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Runs `tessel report args... -o FILE` and returns the exit status and the page.
std::pair<int, std::string> report(std::vector<std::string> args) {
  std::string path = (std::filesystem::temp_directory_path() /
                      ("tessel_report_" + std::to_string(::getpid()) + ".html"))
                         .string();
  args.insert(args.begin(), "report");
  args.push_back("-o");
  args.push_back(path);
  CliResult r = run_tessel(args);
  INFO(r.out << r.err);
  REQUIRE(r.err.empty());
  std::string html = read_file(path);
  std::remove(path.c_str());
  return {r.status, html};
}

/// Every line of `file` is a row of the page with its text, numbered from 1.
void check_every_line(const Page& page, const std::string& file) {
  std::vector<std::string> lines = file_lines(file);
  REQUIRE(!lines.empty());
  for (size_t k = 0; k < lines.size(); ++k) {
    std::string id = "L" + std::to_string(k + 1);
    std::vector<xmlNodePtr> code = page.all("//tr[@id='" + id + "']/td[@class='code']");
    INFO("line " << k + 1 << " of " << file);
    REQUIRE(code.size() == 1);
    CHECK(Page::text(code[0]) == lines[k]);
  }
  CHECK(page.count("//table[@class='src'][1]/tr[contains(@class,'line')]") == lines.size());
}

}  // namespace

TEST_SUITE("report") {
  TEST_CASE("the worst phase of a request is its costliest, drawn with its conflicting words") {
    // 16-byte accesses: four phases of 8 lanes. Lanes 16..23 (phase 2) read rows 128 bytes
    // apart: words 32k..32k+3, banks 0-3 for every lane -> 8 distinct words per bank: 8
    // wavefronts. The other lanes read consecutive 16-byte chunks: 1 wavefront per phase.
    std::vector<int64_t> addr(32);
    for (int l = 0; l < 32; ++l) addr[l] = (l >= 16 && l < 24) ? 4096 + (l - 16) * 128 : l * 16;
    BankModel m = BankModel::nvidia();
    BankPhaseMap map = worst_phase(m, addr, full_mask(32), 16, false);
    CHECK(map.phase == 2);
    CHECK(map.num_phases == 4);
    CHECK(map.wavefronts == 8);
    CHECK(map.wavefronts == count_wavefronts(m, addr, full_mask(32), 16, false).max_degree);
    REQUIRE(map.lanes.size() == 8);
    CHECK(map.lanes.front() == 16);
    CHECK(map.words[0] == std::vector<int64_t>{1024, 1025, 1026, 1027});
    CHECK(map.distinct_per_bank[0] == 8);
    CHECK(map.distinct_per_bank[4] == 0);
    std::string svg = bank_phase_svg(map, {"t", 1024, 0});
    Page page(svg);
    // 8 lanes x 4 words, every one in a conflicting bank; word 1024 - 1024 = 0 first.
    CHECK(page.count("//g[@class='word conflict']") == 32);
    CHECK(page.count("//g[@class='word conflict'][@data-lane='16'][@data-word='0']") == 1);
  }

  TEST_CASE("the simulator keeps bank samples only when asked") {
    auto run_once = [](bool samples) {
      sim::SimRun run(sim::SimOptions{BankModel::nvidia(), true, true, samples},
                      {sim::Site{"load", "s", "", "", ""}});
      sim::BlockSim block(run, 0, 32);
      int buf =
          block.add_buffer(sim::BufferDesc{"s", sim::Space::kShared, DataType::f32(), {32, 32}, 0});
      std::array<int64_t, sim::kMaxLanes> rows{}, cols{};
      for (int l = 0; l < 32; ++l) rows[l] = l;  // a column: 32 lanes in bank 0
      sim::WarpRequest req;
      req.buffer = buf;
      req.site = 0;
      req.mask = full_mask(32);
      req.index[0] = rows.data();
      req.index[1] = cols.data();
      sim::Resolved r = block.resolve(req);
      block.observe(req, r);
      run.absorb(block);
      return run.report();
    };
    CHECK(run_once(false).worst_bank.empty());
    sim::SimReport with = run_once(true);
    REQUIRE(with.worst_bank.size() == 1);
    CHECK(with.worst_bank[0].max_degree == 32);  // 32 distinct words in bank 0
    CHECK(with.worst_bank[0].byte_addr[3] == 3 * 32 * 4);
  }

  TEST_CASE("tessel banks --svg draws the worst phase of one access") {
    std::string path = (std::filesystem::temp_directory_path() / "tessel_banks_test.svg").string();
    CliResult r = run_tessel({"banks", "--layout", "row_major(32, 32)", "--dtype", "f32",
                              "--access", "lambda lane: (lane, 0)", "--svg", path});
    CHECK(r.status == 0);
    CHECK(r.out.find("bank map    written to") != std::string::npos);
    Page page(read_file(path));
    std::remove(path.c_str());
    // Lane l reads element (l, 0) = word 32 l, bank 0: 32 conflicting cells, all in bank 0.
    CHECK(page.count("//svg[@data-wavefronts='32']") == 1);
    CHECK(page.count("//g[@class='word conflict']") == 32);
    CHECK(page.count("//g[@class='word conflict'][@data-bank='0']") == 32);
    CHECK(page.count("//g[@data-lane='5'][@data-word='160']") == 1);
  }

  TEST_CASE("the report of the missing-barrier kernel shows its race at both lines") {
    std::string file = source("examples/kernels/bug_missing_barrier.py");
    auto [status, html] = report({file, "--no-verify", "--workers", "1"});
    CHECK(status == 1);
    Page page(html);
    check_every_line(page, file);
    int store = line_of(file, "s[tx] = A[");
    int load = line_of(file, "= s[127 - tx]");
    // Two races (write after read, read after write), each between the store and the load.
    std::vector<xmlNodePtr> races =
        page.all("//div[contains(@class,'finding')][@data-kind='race']");
    REQUIRE(races.size() == 2);
    for (xmlNodePtr f : races) {
      int here = std::stoi(Page::attr(f, "data-line"));
      int other = std::stoi(Page::attr(f, "data-other-line"));
      CHECK(((here == store && other == load) || (here == load && other == store)));
      // Anchored: in the annotation row right under its line, which is marked.
      std::string row = "L" + std::to_string(here);
      CHECK(page.count("//tr[@id='" + row + "'][contains(@class,'finding-line')]") == 1);
      CHECK(page.count("//tr[@id='" + row + "']/following-sibling::tr[1][@class='ann']//div[@id='" +
                       Page::attr(f, "id") + "']") == 1);
      CHECK(Page::text(f).find("other line") != std::string::npos);
    }
    CHECK(page.count("//div[@class='bankmap-box']") == 0);  // no bank conflicts
    CHECK(Page::text(page.all("//span[contains(@class,'verdict')]")[0]) == "FAILED");
  }

  TEST_CASE("the report of a gemm with row-major shared tiles draws a bank map per ldmatrix") {
    std::string file = source("examples/kernels/gemm_row_major.py");
    auto [status, html] =
        report({file, "-D", "M=128", "-D", "N=128", "-D", "K=64", "--no-verify", "--workers", "1"});
    CHECK(status == 0);  // slow but correct
    Page page(html);
    check_every_line(page, file);
    int gemm = line_of(file, "T.gemm(A_shared, B_shared, C_local)");
    // Exactly two instructions conflict, both lowered from the T.gemm line: the ldmatrix of A
    // (64-byte rows: rows r and r + 2 start in the same bank -> 4 words per bank, 4 wavefronts)
    // and of B (256-byte rows: all 8 rows in the same 4 banks -> 8 wavefronts).
    std::vector<xmlNodePtr> maps = page.all("//div[@class='bankmap-box']");
    REQUIRE(maps.size() == 2);
    for (xmlNodePtr m : maps) CHECK(Page::attr(m, "data-line") == std::to_string(gemm));
    CHECK(page.count("//div[@class='bankmap-box']//svg[@data-wavefronts='4']") == 1);
    CHECK(page.count("//div[@class='bankmap-box']//svg[@data-wavefronts='8']") == 1);
    // A: 8 lanes x 4 words, all conflicting; B likewise.
    CHECK(page.count("//div[@class='bankmap-box'][1]//g[@class='word conflict']") == 32);
    // The line itself is coloured by its conflicts; the copies' lines are not.
    std::string style =
        Page::attr(page.all("//tr[@id='L" + std::to_string(gemm) + "']")[0], "style");
    CHECK(style.find("hsl(0,") != std::string::npos);
    int copy_a = line_of(file, "T.copy(A[by * block_M");
    CHECK(Page::attr(page.all("//tr[@id='L" + std::to_string(copy_a) + "']")[0], "style").empty());
    CHECK(page.count("//div[contains(@class,'finding')]") == 0);
    // The lowered IR links its statements back to the file's lines: the ldmatrix of the gemm.
    std::vector<xmlNodePtr> ir =
        page.all("//pre[@class='ir']/span[@data-src='" + std::to_string(gemm) + "']");
    bool ldmatrix = false;
    for (xmlNodePtr l : ir)
      ldmatrix = ldmatrix || Page::text(l).find("ldmatrix") != std::string::npos;
    CHECK(ldmatrix);
    CHECK(page.count("//pre[@class='ir']/span[@data-src='" + std::to_string(gemm) +
                     "']/a[@href='#L" + std::to_string(gemm) + "']") == ir.size());
  }

  TEST_CASE("the report of a built-in shows its C++ builder lines, conflicts and failed proof") {
    std::string file = source("examples/bugs/bank_conflicts.cpp");
    auto [status, html] = report({"row_sum_bank_conflicts", "-D", "blocks=1", "--workers", "1"});
    CHECK(status == 1);  // the conflict-freedom proof fails
    Page page(html);
    check_every_line(page, file);
    int read = line_of(file, "acc(0) + tile(tx, i)");
    // Only the column read conflicts: lane t reads word 32 t + i, bank i for every lane -> 32
    // words in one bank; the row-by-row store is conflict-free.
    std::vector<xmlNodePtr> maps = page.all("//div[@class='bankmap-box']");
    REQUIRE(maps.size() == 1);
    CHECK(Page::attr(maps[0], "data-line") == std::to_string(read));
    CHECK(page.count("//svg[@data-wavefronts='32']") == 1);
    CHECK(page.count("//g[@class='word conflict']") == 32);
    // The failed proof is anchored at the same line, with its counterexample.
    std::vector<xmlNodePtr> proofs = page.all("//div[@class='finding proof']");
    REQUIRE(proofs.size() >= 1);
    CHECK(Page::attr(proofs[0], "data-line") == std::to_string(read));
    CHECK(Page::text(proofs[0]).find("counterexample") != std::string::npos);
  }

  TEST_CASE("a line with two instructions gets a bank map only for the one that conflicts") {
    std::string file = source("examples/bugs/thread_gemm.cpp");
    auto [status, html] = report(
        {"gemm_simt", "-D", "M=64", "-D", "N=64", "-D", "K=64", "--no-verify", "--workers", "1"});
    CHECK(status == 0);
    Page page(html);
    check_every_line(page, file);
    // Element statements of the builder carry no location; the simulator counts them at their
    // enclosing loop's line.
    int fma =
        enclosing_serial(file, line_of(file, "acc(i * 4 + j) = acc(i * 4 + j) + cast(f32, A_s("));
    // Lane t of warp 0 reads A_s[(t / 16) * 4 + i, kk]: lanes 0-15 one word, lanes 16-31 the
    // word 4 rows (4 * 16 * 2 = 128 bytes = 32 words) further, in the same bank: 2 words, 2
    // wavefronts, every lane's cell red. B_s[kk, (t % 16) * 4 + j] is 16 words (2-byte
    // elements 4 apart = 8 bytes) in 16 banks: conflict-free, no map.
    std::vector<xmlNodePtr> maps = page.all("//div[@class='bankmap-box']");
    REQUIRE(maps.size() == 1);
    CHECK(Page::attr(maps[0], "data-line") == std::to_string(fma));
    CHECK(Page::text(maps[0]).find("A_s") != std::string::npos);
    CHECK(page.count("//svg[@data-wavefronts='2']") == 1);
    CHECK(page.count("//g[@class='word conflict']") == 32);
    // The store of C writes each thread's 4 x 4 micro-tile row by row: more sectors than the
    // ideal, an orange line.
    int store =
        enclosing_serial(file, line_of(file, "C(by * 64 + ty * 4 + i, bx * 64 + tx * 4 + j)"));
    std::string style =
        Page::attr(page.all("//tr[@id='L" + std::to_string(store) + "']")[0], "style");
    CHECK(style.find("hsl(35,") != std::string::npos);
    // Two instructions at the fma line, both counted in its cell.
    std::string stats =
        Page::text(page.all("//tr[@id='L" + std::to_string(fma) + "']/td[@class='stats']")[0]);
    CHECK(stats.find("bank conflicts") != std::string::npos);
  }

  TEST_CASE("a clean kernel's report says there is nothing to look at and draws its layouts") {
    std::string file = source("examples/gemm.cpp");
    auto [status, html] = report(
        {"gemm", "-D", "M=128", "-D", "N=128", "-D", "K=64", "--no-verify", "--workers", "1"});
    CHECK(status == 0);
    Page page(html);
    check_every_line(page, file);
    CHECK(page.count("//div[@class='bankmap-box']") == 0);  // swizzled: conflict-free
    CHECK(page.count("//p[@class='where-none']") == 1);
    // A_shared and B_shared as bank colourings, C_local as a thread/register grid.
    CHECK(page.count("//section[@id='layouts']//details//svg") == 3);
    CHECK(Page::text(page.all("//span[contains(@class,'verdict')]")[0]) == "PASSED");
  }

  TEST_CASE("report --json names the page and its counts") {
    std::string path =
        (std::filesystem::temp_directory_path() / "tessel_report_json.html").string();
    CliResult r = run_tessel({"report", "row_sum_bank_conflicts", "-D", "blocks=1", "--no-verify",
                              "--json", "-o", path});
    std::remove(path.c_str());
    CHECK(r.status == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["report"] == path);
    CHECK(j["passed"] == true);
    // 32 reads of 32 lanes in one bank: 32 x 32 wavefronts for 32 ideal, 992 conflicts.
    CHECK(j["bank_conflicts"] == 992);
  }

  TEST_CASE("the report needs an output file and a known kernel") {
    CliResult r = run_tessel({"report", "gemm"});
    CHECK(r.status == 2);
    r = run_tessel({"report", "no_such_kernel", "-o", "/tmp/x.html"});
    CHECK(r.status == 2);
  }
}
