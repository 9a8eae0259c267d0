// Division-by-zero messages shared by both interpreters.
#include "interp/division_error.h"

#include "core/expr_printer.h"

namespace tessel {

namespace {

std::string text(const Expr& e) {
  std::string s = to_string(e);
  return s.size() > 200 ? s.substr(0, 200) + "..." : s;
}

}  // namespace

std::string access_words(const char* access, const std::string& buffer,
                         const std::vector<Expr>& indices) {
  std::string s = std::string(access) + " " + buffer + "[";
  for (size_t k = 0; k < indices.size(); ++k) s += (k ? ", " : "") + text(indices[k]);
  return s + "]";
}

std::string division_by_zero_message(const std::string& where, const Expr& division,
                                     const std::string& access) {
  std::string divisor;
  if (const auto* d = division.as<FloorDivNode>()) divisor = text(d->b);
  if (const auto* d = division.as<FloorModNode>()) divisor = text(d->b);
  if (const auto* d = division.as<DivNode>()) divisor = text(d->b);
  std::string s = where + ": integer division by zero in `" + text(division) + "`";
  if (!divisor.empty()) s += " (the divisor `" + divisor + "` is 0)";
  if (!access.empty()) s += ", in an index of the " + access;
  return s + "; guard the division with an `if` on its divisor, or change the divisor";
}

}  // namespace tessel
