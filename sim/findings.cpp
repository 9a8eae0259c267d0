// Aggregation of findings.
#include "sim/findings.h"

namespace tessel::sim {

FindingLog::Key FindingLog::key_of(const Finding& f) {
  return Key{f.kind,
             f.benign,
             f.buffer,
             f.sites.size() > 0 ? f.sites[0] : -1,
             f.sites.size() > 1 ? f.sites[1] : -1,
             f.variant};
}

void FindingLog::add(FindingKind kind, bool benign, const std::string& buffer, int site_a,
                     int site_b, const std::function<Finding()>& make, int variant) {
  Key key{kind, benign, buffer, site_a, site_b, variant};
  auto it = index_.find(key);
  if (it != index_.end()) {
    ++findings_[it->second].count;
    return;
  }
  Finding f = make();
  f.kind = kind;
  f.benign = benign;
  f.buffer = buffer;
  f.sites.clear();
  if (site_a >= 0 || site_b >= 0) f.sites.push_back(site_a);
  if (site_b >= 0) f.sites.push_back(site_b);
  f.count = 1;
  f.variant = variant;
  index_.emplace(key, findings_.size());
  findings_.push_back(std::move(f));
}

void FindingLog::merge(const FindingLog& other) {
  for (const Finding& f : other.findings_) {
    Key key = key_of(f);
    auto it = index_.find(key);
    if (it != index_.end()) {
      findings_[it->second].count += f.count;
      continue;
    }
    index_.emplace(key, findings_.size());
    findings_.push_back(f);
  }
}

bool FindingLog::has_errors() const {
  for (const Finding& f : findings_) {
    if (!f.benign) return true;
  }
  return false;
}

}  // namespace tessel::sim
