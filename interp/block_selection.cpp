// Parsing and resolving --blocks specs (see block_selection.h).
#include "interp/block_selection.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <random>
#include <set>

namespace tessel {

namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

bool parse_int(const std::string& text, int64_t& out) {
  std::string t = trim(text);
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), out);
  return !t.empty() && ec == std::errc() && end == t.data() + t.size();
}

/// The top-level comma-separated items of `spec` (commas inside parentheses stay).
std::vector<std::string> split_items(const std::string& spec, const std::string& whole) {
  std::vector<std::string> items;
  std::string cur;
  int depth = 0;
  for (char c : spec) {
    if (c == '(') ++depth;
    if (c == ')' && --depth < 0) break;
    if (c == ',' && depth == 0) {
      items.push_back(trim(cur));
      cur.clear();
      continue;
    }
    cur += c;
  }
  if (depth != 0) {
    throw BlockSpecError("--blocks " + whole + ": unbalanced parentheses; " +
                         BlockSelection::accepted());
  }
  items.push_back(trim(cur));
  return items;
}

std::string grid_text(const std::vector<int64_t>& grid) {
  std::string t = "(";
  for (size_t d = 0; d < grid.size(); ++d) t += (d ? ", " : "") + std::to_string(grid[d]);
  return t + ")";
}

}  // namespace

const char* BlockSelection::accepted() {
  return "a comma-separated list of: all, edges, first, last, random:N (N >= 1), a linear block "
         "id such as 7, or grid coordinates such as (1, 2)";
}

BlockSelection BlockSelection::parse(const std::string& spec) {
  BlockSelection sel;
  sel.spec_ = spec;
  auto bad = [&](const std::string& item, const std::string& why) {
    return BlockSpecError("--blocks " + spec + ": " +
                          (item.empty() ? "an empty item" : "'" + item + "'") + " " + why +
                          "; expected " + accepted());
  };
  for (const std::string& item : split_items(spec, spec)) {
    int64_t n = 0;
    if (item == "all") {
      sel.items_.push_back({Item::Kind::kAll, {}});
    } else if (item == "edges") {
      sel.items_.push_back({Item::Kind::kEdges, {}});
    } else if (item == "first") {
      sel.items_.push_back({Item::Kind::kFirst, {}});
    } else if (item == "last") {
      sel.items_.push_back({Item::Kind::kLast, {}});
    } else if (item.rfind("random:", 0) == 0) {
      if (!parse_int(item.substr(7), n) || n < 1) {
        throw bad(item, "needs a positive count of blocks after 'random:'");
      }
      sel.items_.push_back({Item::Kind::kRandom, {n}});
    } else if (!item.empty() && item.front() == '(' && item.back() == ')') {
      std::vector<int64_t> coords;
      std::string inner = item.substr(1, item.size() - 2);
      size_t start = 0;
      while (true) {
        size_t comma = inner.find(',', start);
        std::string part =
            inner.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (!parse_int(part, n) || n < 0) {
          throw bad(item, "has a coordinate that is not a non-negative integer");
        }
        coords.push_back(n);
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
      sel.items_.push_back({Item::Kind::kCoords, coords});
    } else if (parse_int(item, n)) {
      if (n < 0) throw bad(item, "is negative");
      sel.items_.push_back({Item::Kind::kLinear, {n}});
    } else {
      throw bad(item, "is not a block spec");
    }
  }
  return sel;
}

bool BlockSelection::is_all() const {
  return std::any_of(items_.begin(), items_.end(),
                     [](const Item& i) { return i.kind == Item::Kind::kAll; });
}

std::vector<int64_t> BlockSelection::resolve(const std::vector<int64_t>& grid,
                                             uint64_t seed) const {
  int64_t blocks = 1;
  for (int64_t g : grid) blocks *= g;
  std::set<int64_t> chosen;
  auto coords_of = [&](int64_t id) {
    std::vector<int64_t> c(grid.size());
    for (size_t d = 0; d < grid.size(); ++d) {
      c[d] = id % grid[d];
      id /= grid[d];
    }
    return c;
  };
  for (const Item& item : items_) {
    switch (item.kind) {
      case Item::Kind::kAll:
        for (int64_t b = 0; b < blocks; ++b) chosen.insert(b);
        break;
      case Item::Kind::kEdges: {
        bool any_long = std::any_of(grid.begin(), grid.end(), [](int64_t g) { return g > 1; });
        if (!any_long) chosen.insert(0);
        for (int64_t b = 0; b < blocks && any_long; ++b) {
          std::vector<int64_t> c = coords_of(b);
          for (size_t d = 0; d < grid.size(); ++d) {
            if (grid[d] > 1 && (c[d] == 0 || c[d] == grid[d] - 1)) chosen.insert(b);
          }
        }
        break;
      }
      case Item::Kind::kFirst:
        chosen.insert(0);
        break;
      case Item::Kind::kLast:
        chosen.insert(blocks - 1);
        break;
      case Item::Kind::kRandom: {
        int64_t n = item.values[0];
        if (n >= blocks) {
          for (int64_t b = 0; b < blocks; ++b) chosen.insert(b);
          break;
        }
        // Floyd's sampling: n distinct ids out of `blocks`, deterministic in the seed.
        std::mt19937_64 rng(seed);
        std::set<int64_t> drawn;
        for (int64_t j = blocks - n; j < blocks; ++j) {
          int64_t t = std::uniform_int_distribution<int64_t>(0, j)(rng);
          drawn.insert(drawn.count(t) ? j : t);
        }
        chosen.insert(drawn.begin(), drawn.end());
        break;
      }
      case Item::Kind::kLinear:
        if (item.values[0] >= blocks) {
          throw BlockSpecError("--blocks " + spec_ + ": block " + std::to_string(item.values[0]) +
                               " is outside the grid " + grid_text(grid) + " of " +
                               std::to_string(blocks) + " blocks (linear ids 0 to " +
                               std::to_string(blocks - 1) + ")");
        }
        chosen.insert(item.values[0]);
        break;
      case Item::Kind::kCoords: {
        const std::vector<int64_t>& c = item.values;
        std::string text = "(";
        for (size_t d = 0; d < c.size(); ++d) text += (d ? ", " : "") + std::to_string(c[d]);
        text += ")";
        if (c.size() != grid.size()) {
          throw BlockSpecError("--blocks " + spec_ + ": block " + text + " has " +
                               std::to_string(c.size()) + " coordinate(s) but the grid " +
                               grid_text(grid) + " has " + std::to_string(grid.size()) +
                               " dimension(s)");
        }
        int64_t id = 0;
        for (size_t d = grid.size(); d-- > 0;) {
          if (c[d] >= grid[d]) {
            throw BlockSpecError("--blocks " + spec_ + ": block " + text + " is outside the grid " +
                                 grid_text(grid));
          }
          id = id * grid[d] + c[d];
        }
        chosen.insert(id);
        break;
      }
    }
  }
  return {chosen.begin(), chosen.end()};
}

}  // namespace tessel
