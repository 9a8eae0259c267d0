// Source locations, source files and the lowered IR line by line, for the report.
#include "tools/report_lines.h"

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "core/printer.h"
#include "core/stmt_functor.h"

namespace tessel::cli {

namespace {

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  size_t b = s.find_last_not_of(" \t");
  return s.substr(a, b - a + 1);
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace

std::optional<LineRef> parse_loc(const std::string& loc) {
  size_t c2 = loc.rfind(':');
  if (c2 == std::string::npos || c2 == 0) return std::nullopt;
  size_t c1 = loc.rfind(':', c2 - 1);
  if (c1 == std::string::npos || c1 == 0) return std::nullopt;
  std::string line = loc.substr(c1 + 1, c2 - c1 - 1);
  if (line.empty() || line.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  int n = std::stoi(line);
  if (n <= 0) return std::nullopt;
  return LineRef{loc.substr(0, c1), n};
}

std::optional<LineRef> find_loc_in_text(const std::string& text) {
  static const std::regex kAt(R"( at ([^\s:]+):(\d+):(\d+))");
  std::smatch m;
  if (!std::regex_search(text, m, kAt)) return std::nullopt;
  return LineRef{m[1].str(), std::stoi(m[2].str())};
}

std::string find_source_file(const std::string& name, const std::string& source_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_regular_file(name, ec)) return name;
  if (source_dir.empty() || name.find('/') != std::string::npos) return "";
  fs::path root = fs::path(source_dir) / "examples";
  if (!fs::is_directory(root, ec)) return "";
  for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file(ec) && it->path().filename() == name) return it->path().string();
  }
  return "";
}

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<IrLine> ir_lines(const Kernel& kernel) {
  std::vector<IrLine> out;
  for (std::string& line : split_lines(print_kernel(kernel))) out.push_back({std::move(line), {}});
  // Statements in print order (parents first); each one's first printed line is found at or
  // after the previous statement's.
  size_t cursor = 0;
  for (const Kernel& launch : launches_of(kernel))
    for_each_stmt(launch->body, [&](const Stmt& s) {
      if (s.kind() == StmtKind::kSeq || !s->loc.known()) return;
      std::vector<std::string> printed = split_lines(print_stmt(s, 0));
      if (printed.empty()) return;
      std::string head = trim(printed.front());
      if (head.empty()) return;
      for (size_t k = cursor; k < out.size(); ++k) {
        if (trim(out[k].text) == head) {
          out[k].source = LineRef{s->loc.file, s->loc.line};
          cursor = k + 1;
          return;
        }
      }
    });
  return out;
}

}  // namespace tessel::cli
