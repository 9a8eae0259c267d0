// Source lines for the report: source locations parsed back from the simulator's sites, the
// kernel's source files found on disk, and the lowered IR printed line by line with the source
// line each statement came from.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/kernel.h"

namespace tessel::cli {

/// A line of a source file, as locations name it ("gemm.cpp", 48).
struct LineRef {
  std::string file;
  int line = 0;
  friend auto operator<=>(const LineRef&, const LineRef&) = default;
};

/// "file:line:col" (the file may hold ':') -> its file and line; nullopt for "" or a malformed one.
std::optional<LineRef> parse_loc(const std::string& loc);

/// The first " at FILE:LINE:COL" in a text (verify checks name their statements so); nullopt
/// when there is none.
std::optional<LineRef> find_loc_in_text(const std::string& text);

/// The file a location names, on disk: the name itself when readable (kernel files are named as
/// given on the command line), else a file of that base name under `source_dir`/examples (the
/// built-in examples record their C++ file's base name). "" when none is found.
std::string find_source_file(const std::string& name, const std::string& source_dir);

/// The lines of a text file (without their '\n').
std::vector<std::string> read_lines(const std::string& path);

/// One printed line of the lowered IR and the source line of the statement it prints (nullopt
/// for lines of no statement with a location: headers, `else:`, closing lines).
struct IrLine {
  std::string text;
  std::optional<LineRef> source;
};

/// The kernel as print_kernel prints it, each statement's first line tied to its location.
std::vector<IrLine> ir_lines(const Kernel& kernel);

}  // namespace tessel::cli
