// Layouts, proofs and run details of the report page.
#include "tools/report_html_parts.h"

#include <cstdio>

#include "core/layout_svg.h"
#include "tools/html_text.h"

namespace tessel::cli {

namespace {

/// Pictures past this many rows or columns show their top-left corner (a whole 128 x 128
/// fragment would weigh megabytes); `tessel layout --svg` draws all of it.
constexpr int64_t kMaxPictureRows = 32, kMaxPictureCols = 64;

/// Rows x columns of a layout's picture (leading dimensions fold into rows).
std::pair<int64_t, int64_t> grid_of(const std::vector<int64_t>& shape) {
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < shape.size(); ++d) rows *= shape[d];
  return {rows, shape.empty() ? 1 : shape.back()};
}

std::string ms(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f ms", v);
  return buf;
}

void picture(std::string& out, const std::string& what, const std::string& origin,
             const std::vector<int64_t>& shape, const std::string& spec,
             const std::function<std::string()>& draw) {
  out += "<details class=\"pictures\"><summary>" + html_escape(what) + " — " + html_escape(origin) +
         "</summary>\n<p class=\"note\"><code>" + html_escape(spec) + "</code></p>\n";
  auto [rows, cols] = grid_of(shape);
  if (rows > kMaxPictureRows || cols > kMaxPictureCols) {
    out += "<p class=\"note\">The first " + std::to_string(std::min(rows, kMaxPictureRows)) +
           " rows and " + std::to_string(std::min(cols, kMaxPictureCols)) + " columns of " +
           std::to_string(rows) + " x " + std::to_string(cols) + "; <code>tessel layout '" +
           html_escape(spec) + "' --svg FILE</code> draws all of it.</p>\n";
  }
  out += draw();
  out += "</details>\n";
}

}  // namespace

void layouts_section(std::string& out, const ReportData& d) {
  out += "<section id=\"layouts\">\n<h2>Inferred layouts</h2>\n";
  if (!d.lowered) {
    out += "<p class=\"note\">None: the kernel was not lowered.</p>\n</section>\n";
    return;
  }
  const LayoutMap& m = d.lowered->layouts;
  if (m.shared.empty() && m.fragments.empty()) out += "<p class=\"note\">None.</p>\n";
  for (const auto& [node, dec] : m.shared) {
    const Layout& layout = dec.layout;
    DataType dtype = dec.buffer->dtype;
    picture(out, "shared " + dec.buffer->name + " (bank of each element)", dec.origin,
            layout.input_shape(), layout.to_string(), [&] {
              return bank_map_svg(layout, dtype,
                                  {22, 18, dec.buffer->name, kMaxPictureRows, kMaxPictureCols});
            });
  }
  for (const auto& [node, dec] : m.fragments) {
    const Fragment& frag = dec.layout;
    picture(
        out, "fragment " + dec.buffer->name + " (thread and register of each element)", dec.origin,
        frag.input_shape(), frag.to_string(), [&] {
          return fragment_svg(frag, {44, 30, dec.buffer->name, kMaxPictureRows, kMaxPictureCols});
        });
  }
  out += "</section>\n";
}

void verify_section(std::string& out, const ReportData& d,
                    const std::function<std::string(const std::string&)>& link_of) {
  out += "<section id=\"verify\">\n<h2>Proofs (tessel verify)</h2>\n";
  if (!d.verify_error.empty()) {
    out += "<div class=\"finding\"><b>verify stopped</b><p>" + html_escape(d.verify_error) +
           "</p></div>\n</section>\n";
    return;
  }
  if (!d.proofs) {
    out += "<p class=\"note\">Not run (--no-verify).</p>\n</section>\n";
    return;
  }
  out +=
      "<table class=\"grid\">\n<tr><th>result</th><th>time</th><th>claim</th><th>line</th></tr>\n";
  for (const KernelCheck& c : d.proofs->checks) {
    bool ok = c.result == "proved";
    out += "<tr class=\"check" + std::string(ok ? "" : " failed") + "\"><td>" +
           html_escape(c.result) + "</td><td class=\"num\">" + ms(c.ms) + "</td><td>" +
           html_escape(c.what);
    if (c.counterexample) {
      out += "<br><b>" + std::string(ok ? "" : "counterexample: ") + "</b>" +
             html_escape(*c.counterexample);
    }
    out += "</td><td>" + link_of(c.what) + "</td></tr>\n";
  }
  out += "</table>\n<p>" + std::to_string(d.proofs->checks.size()) +
         " checks: " + std::to_string(d.proofs->count("proved")) + " proved, " +
         std::to_string(d.proofs->count("failed")) + " failed, " +
         std::to_string(d.proofs->count("undecided")) + " undecided (" + ms(d.proofs->total_ms()) +
         ")</p>\n</section>\n";
}

void run_section(std::string& out, const ReportData& d) {
  out += "<section id=\"run\">\n<h2>Run at thread level</h2>\n";
  if (!d.run) {
    out +=
        "<p class=\"note\">Not run" +
        std::string(d.run_error.empty() && d.lower_error.empty() ? "" : ": see the error above") +
        ".</p>\n</section>\n";
    return;
  }
  const KernelRun& r = *d.run;
  out += "<table class=\"grid\">\n<tr><th>tensor</th><th>against</th><th>result</th></tr>\n";
  auto rows = [&](const std::vector<OutputCheck>& checks, const std::string& what) {
    for (const OutputCheck& c : checks) {
      char err[96];
      std::snprintf(err, sizeof err, "max abs err %.3g, %lld element(s) differ",
                    c.comparison.max_abs_err, static_cast<long long>(c.comparison.mismatches));
      out += "<tr class=\"" + std::string(c.comparison.passed ? "" : "failed") + "\"><td>" +
             html_escape(c.name) + "</td><td>" + what +
             (c.sampled ? " on a sample of " + std::to_string(*c.sampled) + " elements (" +
                              html_escape(c.sample_note) + ")"
                        : "") +
             "</td><td>" + (c.comparison.passed ? "matches" : "DIFFERS") + " (" + err +
             ")</td></tr>\n";
    }
  };
  rows(r.vs_reference, "the reference");
  rows(r.vs_expected, "the expected array");
  rows(r.vs_tile, "the tile level");
  out += "</table>\n";
  if (!r.tile_ran && !r.tile_note.empty()) {
    out += "<p class=\"note\">tile level: " + html_escape(r.tile_note) + "</p>\n";
  }
  if (!r.thread) {
    out += "</section>\n";
    return;
  }
  const sim::SimReport& s = r.thread->report;
  out +=
      "<details><summary>Counters per instruction</summary>\n<table class=\"grid\">\n"
      "<tr><th>instruction</th><th>requests</th><th>wavefronts</th><th>ideal</th>"
      "<th>conflicts</th><th>sectors</th><th>ideal</th></tr>\n";
  for (size_t k = 0; k < s.sites.size(); ++k) {
    const sim::Counters& c = s.per_site[k];
    if (c.shared_requests + c.global_requests == 0) continue;
    out += "<tr><td>" + html_escape(s.sites[k].describe()) + "</td>";
    for (int64_t v : {c.shared_requests + c.global_requests, c.wavefronts, c.ideal_wavefronts,
                      c.bank_conflicts, c.sectors, c.ideal_sectors}) {
      out += "<td class=\"num\">" + std::to_string(v) + "</td>";
    }
    out += "</tr>\n";
  }
  out += "</table>\n<p class=\"note\">" + std::to_string(s.barriers) + " barrier rounds; " +
         std::to_string(s.async_bytes) + " bytes by cp.async.</p>\n</details>\n</section>\n";
}

}  // namespace tessel::cli
