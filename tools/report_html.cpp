// The report page: summary, the kernel's source annotated line by line (traffic, heat, findings,
// bank maps), the lowered IR beside it. Layouts, proofs and run details are report_html_parts.cpp.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "core/bank_phase.h"
#include "core/stmt_functor.h"
#include "core/target.h"
#include "tools/html_text.h"
#include "tools/report.h"
#include "tools/report_html_parts.h"
#include "tools/report_lines.h"

namespace tessel::cli {

namespace {

constexpr const char* kStyle = R"css(
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#222;background:#fafafa}
header{padding:12px 20px;border-bottom:1px solid #ddd;background:#fff}
h1{font-size:20px;margin:0 0 8px}
h2{font-size:16px;margin:18px 0 8px}
section,main{padding:0 20px}
.verdict{display:inline-block;font-weight:bold;padding:2px 10px;border-radius:4px;color:#fff}
.verdict.pass{background:#2a7a2a}.verdict.fail{background:#b00000}
.facts{display:flex;flex-wrap:wrap;gap:6px 28px;margin:8px 0;padding:0;list-style:none}
.facts li b{font-size:15px}
.legend span{display:inline-block;padding:1px 8px;margin-right:6px;border:1px solid #ccc;font-size:12px}
.columns{display:flex;gap:16px;align-items:flex-start}
.src-col{flex:0 1 auto}.ir-col{flex:1 1 22em;min-width:18em}
table.src{border-collapse:collapse;width:100%;background:#fff;font-size:12.5px}
table.src td{padding:0 6px;vertical-align:top}
td.no{color:#888;background:#fff;text-align:right;user-select:none;width:3em;border-right:1px solid #ddd}
td.no a{color:inherit;text-decoration:none}
td.code{white-space:pre;font-family:ui-monospace,Menlo,Consolas,monospace}
td.stats{font-size:11.5px;color:#555;min-width:15em;max-width:24em}
tr.finding-line td.no{border-left:5px solid #b00000;color:#b00000;font-weight:bold}
tr.line:target td{outline:2px solid #36c}
.badge{display:inline-block;border-radius:3px;padding:0 5px;margin-left:4px;font-size:11px;color:#fff;background:#b00000}
.badge.benign{background:#888}.badge.proof{background:#7a2aa0}
tr.ann td{padding:4px 6px 8px 0}
.finding{overflow-wrap:anywhere;max-width:1100px;border:1px solid #b00000;border-left:5px solid #b00000;background:#fff3f3;padding:6px 10px;margin:4px 0;font-size:13px}
.finding.benign{border-color:#999;background:#f6f6f6}
.finding.proof{border-color:#7a2aa0;background:#f8f0fc}
.finding p{margin:4px 0 0}
.bankmap-box{border:1px solid #e0a0a0;background:#fff;padding:6px;margin:4px 0;overflow-x:auto}
.bankmap-box .cap{font-size:13px;margin-bottom:4px}
pre.ir{background:#fff;border:1px solid #ddd;padding:6px;font-size:12px;overflow-x:auto;margin:0}
pre.ir a{color:#36c;text-decoration:none}
pre.ir .nolink{color:#ccc}
table.grid{border-collapse:collapse;background:#fff;font-size:12.5px}
table.grid td,table.grid th{border:1px solid #ddd;padding:2px 8px;text-align:left;vertical-align:top}
td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.failed td{background:#fff3f3}
.pictures svg{margin:4px 8px 8px 0}
details{margin:6px 0}summary{cursor:pointer;font-weight:600}
.note{color:#666;font-size:13px}
)css";

std::string num(int64_t v) { return std::to_string(v); }

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

/// Background of a line by what it costs: red by the bank-conflict factor, orange by the
/// excess of global sectors over the ideal; "" for a line without excess.
std::string heat_style(const sim::Counters& c) {
  if (c.bank_conflicts > 0 && c.ideal_wavefronts > 0) {
    double factor = static_cast<double>(c.wavefronts) / static_cast<double>(c.ideal_wavefronts);
    int light = std::max(60, 93 - static_cast<int>((factor - 1) * 5));
    return "background:hsl(0,85%," + std::to_string(light) + "%)";
  }
  if (c.sectors > c.ideal_sectors && c.ideal_sectors > 0) {
    double factor = static_cast<double>(c.sectors) / static_cast<double>(c.ideal_sectors);
    int light = std::max(62, 92 - static_cast<int>((factor - 1) * 10));
    return "background:hsl(35,95%," + std::to_string(light) + "%)";
  }
  return "";
}

std::string stats_text(const sim::Counters& c) {
  std::string s;
  if (c.shared_requests) {
    s += "shared " + num(c.shared_requests) + " req · " + num(c.wavefronts) + " wavefronts / " +
         num(c.ideal_wavefronts) + " ideal";
    if (c.bank_conflicts) {
      s += " · <b>" + num(c.bank_conflicts) + " bank conflicts (" +
           fixed(static_cast<double>(c.wavefronts) / static_cast<double>(c.ideal_wavefronts), 1) +
           "×)</b>";
    }
  }
  if (c.global_requests) {
    if (!s.empty()) s += "<br>";
    s += "global " + num(c.global_requests) + " req · " + num(c.sectors) + " sectors / " +
         num(c.ideal_sectors) + " ideal";
    if (c.sectors > c.ideal_sectors)
      s += " · <b>" + num(c.sectors - c.ideal_sectors) + " excess</b>";
  }
  return s;
}

/// Everything anchored at one source line.
struct LineNotes {
  sim::Counters counters;
  std::vector<int> sites;          ///< simulator sites at this line
  std::vector<int> findings;       ///< simulator findings whose first site is here
  std::vector<int> proofs;         ///< verify checks that failed or were undecided, named here
  std::optional<size_t> first_ir;  ///< the first lowered IR line from here
};

struct Page {
  const ReportData& d;
  const sim::SimReport* sim = nullptr;
  std::vector<std::string> files;  ///< source files shown, main first
  std::map<LineRef, LineNotes> notes;
  std::vector<IrLine> ir;

  explicit Page(const ReportData& data) : d(data) {
    if (d.run && d.run->thread) sim = &d.run->thread->report;
    gather();
  }

  /// "L21" for the main file, "f1-L7" for the others; "" for a file not shown.
  std::string anchor(const LineRef& at) const {
    for (size_t f = 0; f < files.size(); ++f) {
      if (files[f] == at.file) {
        return (f == 0 ? "L" : "f" + std::to_string(f) + "-L") + std::to_string(at.line);
      }
    }
    return "";
  }
  std::string link(const LineRef& at) const {
    std::string a = anchor(at);
    std::string text =
        (files.size() > 1 || a.empty() ? at.file + ":" : "line ") + std::to_string(at.line);
    return a.empty() ? html_escape(text) : "<a href=\"#" + a + "\">" + html_escape(text) + "</a>";
  }

  /// The line a verify check is about: the location it names, else (a statement the builder
  /// recorded no location for) the line of the simulator's site with the same access, buffer and
  /// index ("load tile[tx, i]" is the load of `tile[tx, i]` in a statement).
  std::optional<LineRef> check_line(const std::string& what) const {
    if (std::optional<LineRef> at = find_loc_in_text(what)) return at;
    if (!sim) return std::nullopt;
    for (size_t s = 0; s < sim->sites.size(); ++s) {
      const sim::Site& site = sim->sites[s];
      std::string prefix = site.access + " " + site.buffer + "[";
      if (site.buffer.empty() || what.rfind(prefix, 0) != 0) continue;
      size_t close = what.find(']', prefix.size());
      if (close == std::string::npos) continue;
      std::string index = what.substr(site.access.size() + 1, close - site.access.size());
      if (site.statement.find(index) != std::string::npos) return parse_loc(site.loc);
    }
    return std::nullopt;
  }

  std::optional<LineRef> site_line(int s) const {
    if (!sim || s < 0 || s >= static_cast<int>(sim->sites.size())) return std::nullopt;
    return parse_loc(sim->sites[s].loc);
  }

  void gather() {
    std::map<std::string, int> uses;
    for_each_stmt(d.tile_kernel->body, [&](const Stmt& s) {
      if (s->loc.known()) uses[s->loc.file] += 1;
    });
    if (sim) {
      for (size_t s = 0; s < sim->sites.size(); ++s) {
        std::optional<LineRef> at = parse_loc(sim->sites[s].loc);
        if (!at) continue;
        uses[at->file] += 1;
        LineNotes& n = notes[*at];
        n.counters += sim->per_site[s];
        n.sites.push_back(static_cast<int>(s));
      }
      for (size_t f = 0; f < sim->findings.size(); ++f) {
        const sim::Finding& finding = sim->findings[f];
        if (finding.sites.empty()) continue;
        if (std::optional<LineRef> at = site_line(finding.sites[0])) {
          notes[*at].findings.push_back(static_cast<int>(f));
        }
      }
    }
    if (d.proofs) {
      for (size_t c = 0; c < d.proofs->checks.size(); ++c) {
        const KernelCheck& check = d.proofs->checks[c];
        if (check.result == "proved") continue;
        if (std::optional<LineRef> at = check_line(check.what)) {
          uses[at->file] += 1;
          notes[*at].proofs.push_back(static_cast<int>(c));
        }
      }
    }
    std::vector<std::pair<int, std::string>> order;
    for (const auto& [file, n] : uses) order.push_back({-n, file});
    std::sort(order.begin(), order.end());
    for (const auto& [n, file] : order) files.push_back(file);
    if (d.lowered) {
      ir = ir_lines(d.lowered->kernel);
      for (size_t k = 0; k < ir.size(); ++k) {
        if (!ir[k].source) continue;
        LineNotes& n = notes[*ir[k].source];
        if (!n.first_ir) n.first_ir = k;
      }
    }
  }
};

void summary(std::string& out, const Page& p) {
  const ReportData& d = p.d;
  bool ok = d.passed();
  out += "<section id=\"summary\">\n<p><span class=\"verdict " + std::string(ok ? "pass" : "fail") +
         "\">" + (ok ? "PASSED" : "FAILED") + "</span> ";
  out += html_escape(d.tile_kernel->name) + " on " + html_escape(d.target) +
         "</p>\n<ul class=\"facts\">\n";
  if (d.run) {
    const KernelRun& r = *d.run;
    out += "<li>run: <b>" + std::string(r.passed ? "values correct" : "FAILED") + "</b> (" +
           num(r.blocks) + " blocks × " + num(r.threads) + " threads)</li>\n";
  } else if (!d.run_error.empty() || !d.lower_error.empty()) {
    out += "<li>run: <b>not run</b> (error below)</li>\n";
  }
  if (p.sim) {
    const sim::SimReport& s = *p.sim;
    int errors = 0, benign = 0;
    std::set<std::string> kinds;
    for (const sim::Finding& f : s.findings) {
      (f.benign ? benign : errors) += 1;
      kinds.insert(sim::finding_kind_name(f.kind));
    }
    std::string kind_list;
    for (const std::string& k : kinds) kind_list += (kind_list.empty() ? "" : ", ") + k;
    out += "<li>findings: <b>" + num(errors) + "</b>" +
           (benign ? " (+" + num(benign) + " benign)" : "") +
           (kinds.empty() ? "" : " — " + kind_list) + "</li>\n";
    out += "<li>bank conflicts: <b>" + num(s.total.bank_conflicts) + "</b> (" +
           num(s.total.wavefronts) + " wavefronts for " + num(s.total.ideal_wavefronts) +
           " ideal)</li>\n";
    out += "<li>global sectors: <b>" + num(s.total.sectors) + "</b> for " +
           num(s.total.ideal_sectors) + " ideal</li>\n";
  }
  if (d.proofs) {
    out += "<li>proofs: <b>" + num(d.proofs->count("proved")) + "</b> proved, <b>" +
           num(d.proofs->count("failed")) + "</b> failed, " + num(d.proofs->count("undecided")) +
           " undecided</li>\n";
  }
  out += "<li>time: " + (d.run ? fixed(d.run->seconds, 2) + " s run, " : std::string()) +
         (d.proofs ? fixed(d.verify_seconds, 2) + " s verify, " : std::string()) +
         fixed(d.total_seconds, 2) + " s in all</li>\n</ul>\n";
  // Where to look: every finding, failed proof and conflicting line, linked.
  std::string where;
  for (const auto& [at, n] : p.notes) {
    for (int f : n.findings) {
      const sim::Finding& finding = p.sim->findings[f];
      where += "<li><span class=\"badge" + std::string(finding.benign ? " benign" : "") + "\">" +
               sim::finding_kind_name(finding.kind) + "</span> " + p.link(at);
      if (finding.sites.size() > 1) {
        if (auto other = p.site_line(finding.sites[1])) where += " with " + p.link(*other);
      }
      where += (finding.buffer.empty() ? "" : " on " + html_escape(finding.buffer)) + "</li>\n";
    }
    if (n.counters.bank_conflicts > 0) {
      where += "<li><span class=\"badge\">bank conflicts</span> " + p.link(at) + ": " +
               num(n.counters.bank_conflicts) + "</li>\n";
    }
    for (int c : n.proofs) {
      where += "<li><span class=\"badge proof\">proof " +
               html_escape(p.d.proofs->checks[c].result) + "</span> " + p.link(at) + "</li>\n";
    }
  }
  if (p.sim) {
    for (const sim::Finding& f : p.sim->findings) {
      if (f.sites.empty() || !p.site_line(f.sites[0])) {
        where += "<li><span class=\"badge\">" + std::string(sim::finding_kind_name(f.kind)) +
                 "</span> " + html_escape(f.message) + "</li>\n";
      }
    }
  }
  if (!where.empty()) {
    out += "<p>Where to look:</p>\n<ul class=\"where\">\n" + where + "</ul>\n";
  } else if (p.sim) {
    out += "<p class=\"where-none\">Nothing to look at: no finding, no bank conflict" +
           std::string(d.proofs ? ", no failed proof" : "") + ".</p>\n";
  }
  for (const std::string* e : {&d.lower_error, &d.run_error, &d.verify_error}) {
    if (!e->empty())
      out += "<div class=\"finding\"><b>error</b><p>" + html_escape(*e) + "</p></div>\n";
  }
  out +=
      "<p class=\"legend\">Lines: <span style=\"background:hsl(0,85%,80%)\">bank conflicts "
      "(darker: more wavefronts per ideal)</span><span style=\"background:hsl(35,95%,80%)\">"
      "global sectors over the ideal</span><span style=\"border-left:5px solid #b00000\">a "
      "finding</span></p>\n</section>\n";
}

void finding_box(std::string& out, const Page& p, int index) {
  const sim::Finding& f = p.sim->findings[index];
  std::optional<LineRef> here = p.site_line(f.sites[0]);
  std::optional<LineRef> other =
      f.sites.size() > 1 ? p.site_line(f.sites[1]) : std::optional<LineRef>{};
  out += "<div class=\"finding" + std::string(f.benign ? " benign" : "") + "\" id=\"finding-" +
         num(index) + "\" data-kind=\"" + sim::finding_kind_name(f.kind) + "\" data-line=\"" +
         num(here->line) + "\"";
  if (other) out += " data-other-line=\"" + num(other->line) + "\"";
  out +=
      "><b>" + std::string(sim::finding_kind_name(f.kind)) + (f.benign ? " (benign)" : "") + "</b>";
  if (!f.buffer.empty()) out += " on " + html_escape(f.buffer + f.element);
  if (!f.threads.empty()) {
    out += " · thread" + std::string(f.threads.size() > 1 ? "s " : " ");
    for (size_t t = 0; t < f.threads.size(); ++t) out += (t ? " and " : "") + num(f.threads[t]);
  }
  if (!f.blocks.empty()) {
    out += " · block" + std::string(f.blocks.size() > 1 ? "s " : " ");
    for (size_t b = 0; b < f.blocks.size(); ++b) {
      out += (b ? " and " : "") + sim::block_string(f.blocks[b]);
    }
  }
  if (other) out += " · other line: " + p.link(*other);
  if (f.count > 1) out += " · " + num(f.count) + " occurrences";
  out += "<p>" + html_escape(f.message) + "</p></div>\n";
}

void bank_map_box(std::string& out, const Page& p, int site, int line) {
  const sim::BankSample& s = p.sim->worst_bank[site];
  const sim::Counters& c = p.sim->per_site[site];
  const BankModel* model = &find_target(p.d.target).banks;
  BankPhaseMap map = worst_phase(*model, s.byte_addr, s.mask, s.access_bytes, s.ldmatrix, s.write);
  const sim::Site& at = p.sim->sites[site];
  BankMapSvgOptions options;
  options.word_base = s.buffer_base / model->bank_bytes;
  options.first_thread = s.first_thread;
  options.title = at.access + " " + at.buffer + ": phase " + num(map.phase) + " of " +
                  num(map.num_phases) + " of warp " + num(s.warp) + " costs " +
                  num(map.wavefronts) + " wavefronts (ideal 1)";
  out += "<div class=\"bankmap-box\" id=\"bank-" + num(site) + "\" data-site=\"" + num(site) +
         "\" data-line=\"" + num(line) + "\"><div class=\"cap\">Bank map of <b>" +
         html_escape(at.access + " " + at.buffer) + "</b> (" + num(c.wavefronts) +
         " wavefronts for " + num(c.ideal_wavefronts) +
         " ideal): its costliest phase, banks across, lanes down; each cell is the 4-byte word "
         "of " +
         html_escape(at.buffer) +
         " the lane requests, red where a bank must serve several words.</div>\n" +
         bank_phase_svg(map, options) + "</div>\n";
}

void proof_box(std::string& out, const Page& p, int check, int line) {
  const KernelCheck& c = p.d.proofs->checks[check];
  out += "<div class=\"finding proof\" data-line=\"" + num(line) + "\"><b>proof " +
         html_escape(c.result) + "</b>: " + html_escape(c.what);
  if (c.counterexample) out += "<p>counterexample: " + html_escape(*c.counterexample) + "</p>";
  out += "</div>\n";
}

void source_file(std::string& out, const Page& p, size_t index) {
  const std::string& name = p.files[index];
  std::string path = find_source_file(name, p.d.source_dir);
  std::vector<std::string> lines = path.empty() ? std::vector<std::string>{} : read_lines(path);
  out += "<h2>" + html_escape(name) + "</h2>\n";
  std::vector<int> shown;
  if (lines.empty()) {
    out += "<p class=\"note\">The file is not readable here; its lines that Tessel measured:</p>\n";
    for (const auto& [at, n] : p.notes) {
      if (at.file == name) shown.push_back(at.line);
    }
  } else {
    for (size_t k = 1; k <= lines.size(); ++k) shown.push_back(static_cast<int>(k));
  }
  out += "<table class=\"src\" data-file=\"" + html_escape(name) + "\">\n";
  for (int line : shown) {
    LineRef at{name, line};
    auto it = p.notes.find(at);
    const LineNotes* n = it == p.notes.end() ? nullptr : &it->second;
    std::string text = line <= static_cast<int>(lines.size()) ? lines[line - 1] : "";
    std::string id = p.anchor(at);
    bool has_finding = n && !n->findings.empty();
    std::string style = n ? heat_style(n->counters) : "";
    out += "<tr class=\"line" + std::string(has_finding ? " finding-line" : "") + "\" id=\"" + id +
           "\" data-line=\"" + num(line) + "\"" +
           (style.empty() ? "" : " style=\"" + style + "\"") + "><td class=\"no\"><a href=\"#" +
           id + "\">" + num(line) + "</a></td><td class=\"code\">" + html_escape(text) +
           "</td><td class=\"stats\">";
    if (n) {
      out += stats_text(n->counters);
      for (int f : n->findings) {
        const sim::Finding& finding = p.sim->findings[f];
        out += "<span class=\"badge" + std::string(finding.benign ? " benign" : "") + "\">" +
               sim::finding_kind_name(finding.kind) + "</span>";
      }
      if (!n->proofs.empty()) out += "<span class=\"badge proof\">proof</span>";
      if (n->first_ir)
        out += " <a href=\"#ir-" + num(static_cast<int64_t>(*n->first_ir)) + "\">IR</a>";
    }
    out += "</td></tr>\n";
    if (!n) continue;
    std::string notes;
    for (int f : n->findings) finding_box(notes, p, f);
    for (int c : n->proofs) proof_box(notes, p, c, line);
    for (int s : n->sites) {
      if (p.sim->per_site[s].bank_conflicts > 0 && s < static_cast<int>(p.sim->worst_bank.size()) &&
          p.sim->worst_bank[s].max_degree > 1) {
        bank_map_box(notes, p, s, line);
      }
    }
    if (!notes.empty())
      out += "<tr class=\"ann\"><td></td><td colspan=\"2\">" + notes + "</td></tr>\n";
  }
  out += "</table>\n";
}

void lowered_ir(std::string& out, const Page& p) {
  out += "<details id=\"lowered\"><summary>Lowered thread-level IR (" + num(p.ir.size()) +
         " lines; the number before a line is the source line it came from)</summary>\n"
         "<pre class=\"ir\">";
  for (size_t k = 0; k < p.ir.size(); ++k) {
    const IrLine& l = p.ir[k];
    out += "<span id=\"ir-" + num(static_cast<int64_t>(k)) + "\"";
    std::string a = l.source ? p.anchor(*l.source) : "";
    char pad[16];
    if (!a.empty()) {
      std::snprintf(pad, sizeof pad, "%4d", l.source->line);
      out += " data-src=\"" + num(l.source->line) + "\"><a href=\"#" + a + "\">" + pad + "</a> ";
    } else {
      out += "><span class=\"nolink\">   ·</span> ";
    }
    out += html_escape(l.text) + "</span>\n";
  }
  out += "</pre></details>\n";
}

}  // namespace

std::string report_html(const ReportData& d) {
  Page p(d);
  std::string out;
  out.reserve(1 << 20);
  out +=
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      "style-src 'unsafe-inline'; img-src data:\">\n"
      "<title>tessel report: " +
      html_escape(d.tile_kernel->name) + "</title>\n<style>" + kStyle +
      "</style>\n</head>\n<body>\n<header><h1>tessel report: " + html_escape(d.kernel_arg) +
      "</h1></header>\n";
  summary(out, p);
  out += "<main class=\"columns\">\n<div class=\"src-col\" id=\"source\">\n";
  for (size_t f = 0; f < p.files.size(); ++f) source_file(out, p, f);
  if (p.files.empty()) out += "<p class=\"note\">No source locations recorded.</p>\n";
  out += "</div>\n<div class=\"ir-col\">\n<h2>Lowered IR</h2>\n";
  if (d.lowered)
    lowered_ir(out, p);
  else
    out += "<p class=\"note\">The kernel is thread-level IR as written; nothing was lowered.</p>\n";
  out += "</div>\n</main>\n";
  layouts_section(out, d);
  verify_section(out, d, [&](const std::string& text) {
    std::optional<LineRef> at = p.check_line(text);
    return at ? p.link(*at) : std::string();
  });
  run_section(out, d);
  out += "</body>\n</html>\n";
  return out;
}

}  // namespace tessel::cli
