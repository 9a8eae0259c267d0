// Error construction helpers and source locations.
#include "core/error.h"

#include <string_view>

namespace tessel {

SourceLoc SourceLoc::here(std::source_location loc) {
  std::string_view file = loc.file_name();
  if (auto slash = file.rfind('/'); slash != std::string_view::npos) file.remove_prefix(slash + 1);
  return SourceLoc{std::string(file), static_cast<int>(loc.line()), static_cast<int>(loc.column())};
}

std::string SourceLoc::str() const {
  if (!known()) return "";
  return file + ":" + std::to_string(line) + ":" + std::to_string(column);
}

void user_error(const std::string& message) { throw UserError(message); }

void internal_error(const std::string& message, std::source_location loc) {
  throw InternalError("internal error in Tessel (" + std::string(loc.file_name()) + ":" +
                      std::to_string(loc.line()) + "): " + message +
                      " — please report this with the kernel that triggered it");
}

}  // namespace tessel
