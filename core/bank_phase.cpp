// The costliest phase of one shared-memory request and its SVG bank map.
#include "core/bank_phase.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "core/error.h"

namespace tessel {

namespace {

int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else if (c == '"')
      out += "&quot;";
    else
      out += c;
  }
  return out;
}

/// The map of one phase (its lanes in lane order).
BankPhaseMap map_of(const BankModel& model, const std::vector<int>& lanes,
                    std::span<const int64_t> byte_addr, uint64_t mask, int access_bytes) {
  BankPhaseMap m;
  m.num_banks = model.num_banks;
  m.bank_bytes = model.bank_bytes;
  m.distinct_per_bank.assign(model.num_banks, 0);
  std::set<int64_t> distinct;
  for (int lane : lanes) {
    if (lane >= static_cast<int>(byte_addr.size()) || !((mask >> lane) & 1)) continue;
    std::vector<int64_t> words;
    int64_t first = floor_div(byte_addr[lane], model.bank_bytes);
    int64_t last = floor_div(byte_addr[lane] + access_bytes - 1, model.bank_bytes);
    for (int64_t w = first; w <= last; ++w) {
      words.push_back(w);
      distinct.insert(w);
    }
    m.lanes.push_back(lane);
    m.words.push_back(std::move(words));
  }
  for (int64_t w : distinct) {
    int& n = m.distinct_per_bank[m.bank_of_word(w)];
    m.wavefronts = std::max(m.wavefronts, ++n);
  }
  return m;
}

}  // namespace

int BankPhaseMap::bank_of_word(int64_t word) const {
  int64_t b = word % num_banks;
  return static_cast<int>(b < 0 ? b + num_banks : b);
}

BankPhaseMap worst_phase(const BankModel& model, std::span<const int64_t> byte_addr,
                         uint64_t active_mask, int access_bytes, bool ldmatrix, bool write) {
  std::vector<std::vector<int>> phases = model.phases(access_bytes, ldmatrix, write);
  BankPhaseMap best;
  best.num_banks = model.num_banks;
  best.bank_bytes = model.bank_bytes;
  best.distinct_per_bank.assign(model.num_banks, 0);
  for (size_t p = 0; p < phases.size(); ++p) {
    std::vector<int> lanes = phases[p];
    std::sort(lanes.begin(), lanes.end());
    BankPhaseMap m = map_of(model, lanes, byte_addr, active_mask, access_bytes);
    if (m.wavefronts > best.wavefronts) {
      best = std::move(m);
      best.phase = static_cast<int>(p);
    }
  }
  best.num_phases = static_cast<int>(phases.size());
  return best;
}

std::string bank_phase_svg(const BankPhaseMap& map, const BankMapSvgOptions& options) {
  constexpr int kLabel = 96, kTop = 52, kCellW = 32, kCellH = 18;
  const int banks = map.num_banks;
  const int rows = static_cast<int>(map.lanes.size());
  int width = kLabel + banks * kCellW + 10;
  int height = kTop + rows * kCellH + 10;
  std::ostringstream os;
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"bankmap\" width=\"" << width
     << "\" height=\"" << height
     << "\" font-family=\"monospace\" font-size=\"10\" data-wavefronts=\"" << map.wavefronts
     << "\">\n";
  os << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  std::string title = options.title;
  if (title.empty()) {
    title = "phase " + std::to_string(map.phase) + " of " + std::to_string(map.num_phases) + ": " +
            std::to_string(map.wavefronts) + (map.wavefronts == 1 ? " wavefront" : " wavefronts");
  }
  os << "<text x=\"4\" y=\"14\" font-size=\"12\">" << escape(title) << "</text>\n";
  os << "<text x=\"" << kLabel - 4 << "\" y=\"" << kTop - 24
     << "\" text-anchor=\"end\" fill=\"#555\">bank</text>\n";
  os << "<text x=\"" << kLabel - 4 << "\" y=\"" << kTop - 8
     << "\" text-anchor=\"end\" fill=\"#555\">words</text>\n";
  for (int b = 0; b < banks; ++b) {
    int cx = kLabel + b * kCellW + kCellW / 2;
    int n = map.distinct_per_bank[b];
    os << "<text x=\"" << cx << "\" y=\"" << kTop - 24 << "\" text-anchor=\"middle\" fill=\"#555\">"
       << b << "</text>\n";
    if (n > 0) {
      os << "<text x=\"" << cx << "\" y=\"" << kTop - 8 << "\" text-anchor=\"middle\""
         << (n > 1 ? " fill=\"#b00000\" font-weight=\"bold\"" : " fill=\"#2a7a2a\"") << ">x" << n
         << "</text>\n";
    }
  }
  for (int r = 0; r < rows; ++r) {
    int lane = map.lanes[r];
    int y = kTop + r * kCellH;
    os << "<text x=\"" << kLabel - 4 << "\" y=\"" << y + kCellH - 5
       << "\" text-anchor=\"end\" fill=\"#333\">lane " << lane << " \xC2\xB7 T"
       << options.first_thread + lane << "</text>\n";
    // The row's empty banks, then its words.
    os << "<rect x=\"" << kLabel << "\" y=\"" << y << "\" width=\"" << banks * kCellW
       << "\" height=\"" << kCellH
       << "\" fill=\"#f7f7f7\" stroke=\"#ddd\" stroke-width=\"0.5\"/>\n";
    for (int64_t w : map.words[r]) {
      int b = map.bank_of_word(w);
      bool bad = map.conflicting(w);
      int x = kLabel + b * kCellW;
      os << "<g class=\"word" << (bad ? " conflict" : "") << "\" data-lane=\"" << lane
         << "\" data-bank=\"" << b << "\" data-word=\"" << w - options.word_base << "\">";
      os << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << kCellW << "\" height=\""
         << kCellH << "\" fill=\"" << (bad ? "#f3a0a0" : "#b9e4b9") << "\" stroke=\"#333\""
         << " stroke-width=\"0.5\"/>";
      os << "<text x=\"" << x + kCellW / 2 << "\" y=\"" << y + kCellH - 5
         << "\" text-anchor=\"middle\"" << (bad ? " font-weight=\"bold\"" : "") << ">"
         << w - options.word_base << "</text></g>\n";
    }
  }
  os << "</svg>\n";
  return os.str();
}

}  // namespace tessel
