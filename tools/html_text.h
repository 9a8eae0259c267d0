// Escaping text for HTML (element content and attribute values), for the report page.
#pragma once

#include <string>
#include <string_view>

namespace tessel::cli {

/// `text` with & < > " ' replaced by entities, safe inside elements and quoted attributes.
std::string html_escape(std::string_view text);

}  // namespace tessel::cli
