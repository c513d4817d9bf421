// Gantt chart of one training step (docs/step.md): compute, gradient sync and (ZeRO) gather
// lanes, for the chosen schedule and, beside it, DDP's default; a time axis with ticks, bucket
// labels and a table of the buckets.
#include <fmt/core.h>

#include <algorithm>

#include "p2v/engine/text_util.hpp"
#include "p2v/sim/cost.hpp"
#include "p2v/sim/report.hpp"
#include "p2v/sim/step.hpp"
#include "p2v/sim/svg.hpp"

namespace p2v::sim::step {

using namespace engine;

std::string step_svg(const StepResult& r, const std::vector<std::string>& program_names, const std::string& title) {
  return step_svg(r, nullptr, program_names, title);
}

std::string step_svg(const StepResult& chosen, const StepResult* ddp, const std::vector<std::string>& program_names,
                     const std::string& title) {
  const double W = 1100, left = 150, right = 40, lane = 26, gap = 8, head = 22;
  struct Panel {
    const StepResult* r;
    std::string name;
  };
  std::vector<Panel> panels;
  if (ddp) panels.push_back({ddp, "default (DDP's buckets and program)"});
  panels.push_back({&chosen, ddp ? "chosen" : "schedule"});
  auto zero_of = [](const StepResult& r) {
    return std::any_of(r.buckets.begin(), r.buckets.end(), [](const Bucket& b) { return b.gather_s() > 0; });
  };
  double span = 1e-12;
  for (const auto& p : panels) span = std::max(span, p.r->step_s);
  const auto ticks = sim::nice_ticks(span, 8);
  auto x = [&](double t) { return left + (W - left - right) * t / span; };
  const char* pal[] = {"#4e79a7", "#f28e2b", "#e15759", "#59a14f", "#b07aa1", "#edc948", "#76b7b2", "#9c755f"};
  auto fill_of = [&](int prog) { return pal[static_cast<std::size_t>(prog) % std::size(pal)]; };

  std::string body;
  double y = 66;
  const double plot_top = y;
  for (const auto& p : panels) {
    const StepResult& r = *p.r;
    const bool zero = zero_of(r);
    std::string head_text = fmt::format("{}: step {} (compute {}, exposed communication {}, sync total {})", p.name,
                                        sim::format_seconds(r.step_s), sim::format_seconds(r.compute_s),
                                        sim::format_seconds(r.exposed_comm_s), sim::format_seconds(r.sync_s));
    if (ddp && p.r == &chosen && chosen.step_s > 0)
      head_text += fmt::format(": {:.3f}x faster than the default", ddp->step_s / chosen.step_s);
    body += fmt::format("<text x=\"10\" y=\"{:.1f}\" font-weight=\"bold\">{}</text>\n", y + 14,
                        text::xml_escape(head_text));
    y += head;
    std::vector<std::string> lanes = {"forward", "backward", "grad sync"};
    if (zero) lanes.push_back("param gather");
    auto lane_y = [&](int i) { return y + i * (lane + gap); };
    for (std::size_t i = 0; i < lanes.size(); ++i)
      body +=
          fmt::format("<text x=\"10\" y=\"{:.1f}\">{}</text>\n", lane_y(static_cast<int>(i)) + lane / 2 + 4, lanes[i]);
    auto box = [&](int row, double a, double b, const std::string& fill, const std::string& tip) {
      body += fmt::format(
          "<rect x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{}\" fill=\"{}\" stroke=\"white\" "
          "stroke-width=\"0.5\"><title>{}</title></rect>\n",
          x(a), lane_y(row), std::max(0.8, x(b) - x(a)), lane, fill, text::xml_escape(tip));
    };
    const auto L = r.layer_fwd_start.size();
    for (std::size_t i = 0; i < L; ++i) {
      const double fe = i + 1 < L ? r.layer_fwd_start[i + 1] : r.fwd_s;
      box(0, r.layer_fwd_start[i], std::max(r.layer_fwd_start[i], fe), i % 2 ? "#9ecae1" : "#6baed6",
          fmt::format("forward layer {}", i));
      const double be = i > 0 ? r.layer_bwd_start[i - 1] : r.fwd_s + r.bwd_s;
      box(1, r.layer_bwd_start[i], be, i % 2 ? "#a1d99b" : "#74c476", fmt::format("backward layer {}", i));
    }
    // Buckets: boxes coloured by program, labelled b<i> inside when wide enough, else above the
    // lane where the previous label leaves room (every bucket is in the table below and in the
    // tooltip).
    double last_label = -1e9;
    for (std::size_t b = 0; b < r.buckets.size(); ++b) {
      const auto& k = r.buckets[b];
      const std::string pn = static_cast<std::size_t>(k.program) < program_names.size()
                                 ? program_names[static_cast<std::size_t>(k.program)]
                                 : std::to_string(k.program);
      box(2, k.start_s, k.end_s, fill_of(k.program),
          fmt::format("bucket b{} (layers {}-{}, {}): sync {} from {} to {}, {}", b, k.first, k.last,
                      sim::format_bytes(k.bytes), sim::format_seconds(k.sync_s()), sim::format_seconds(k.start_s),
                      sim::format_seconds(k.end_s), pn));
      if (zero) box(3, k.gather_start_s, k.gather_end_s, fill_of(k.program), fmt::format("gather of bucket b{}", b));
      const std::string lab = fmt::format("b{}", b);
      const double cx = (x(k.start_s) + x(k.end_s)) / 2, tw = 7.0 * static_cast<double>(lab.size()) + 4;
      if (x(k.end_s) - x(k.start_s) >= tw) {
        body += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"white\">{}</text>\n", cx,
                            lane_y(2) + lane / 2 + 4, lab);
        last_label = cx + tw / 2;
      } else if (cx - tw / 2 > last_label + 2) {
        body += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" font-size=\"11\">{}</text>\n", cx,
                            lane_y(2) - 2, lab);
        last_label = cx + tw / 2;
      }
    }
    // End of this schedule's step.
    const double ye = lane_y(static_cast<int>(lanes.size())) - gap;
    body += fmt::format(
        "<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1:.1f}\" y2=\"{2:.1f}\" stroke=\"#d62728\" stroke-width=\"1.5\"/>\n",
        x(r.step_s), y - 4, ye + 4);
    y = ye + 18;
  }
  const double plot_bottom = y - 10;
  // Time axis: grid lines behind the lanes, tick labels with units below.
  std::string grid;
  for (double t : ticks) {
    grid += fmt::format("<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1:.1f}\" y2=\"{2:.1f}\" stroke=\"#e3e3e3\"/>\n",
                        x(t), plot_top, plot_bottom);
    body += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", x(t), plot_bottom + 16,
                        sim::tick_label(t, span));
  }
  body += fmt::format("<line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#333\"/>\n", x(0),
                      x(span), plot_bottom + 2, plot_bottom + 2);
  y = plot_bottom + 34;
  body += fmt::format(
      "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">time since the step's start (red line: the step's "
      "end)</text>\n",
      (left + W - right) / 2, y);
  y += 24;
  // Legend: the programs drawn.
  std::vector<int> used;
  for (const auto& p : panels)
    for (const auto& b : p.r->buckets)
      if (std::find(used.begin(), used.end(), b.program) == used.end()) used.push_back(b.program);
  std::sort(used.begin(), used.end());
  for (int prog : used) {
    const std::string pn = static_cast<std::size_t>(prog) < program_names.size()
                               ? program_names[static_cast<std::size_t>(prog)]
                               : std::to_string(prog);
    body += fmt::format(
        "<rect x=\"10\" y=\"{:.1f}\" width=\"12\" height=\"12\" fill=\"{}\"/><text x=\"28\" y=\"{:.1f}\">p{}: "
        "{}</text>\n",
        y - 10, fill_of(prog), y, prog, text::xml_escape(pn));
    y += 18;
  }
  // The chosen schedule's buckets.
  y += 8;
  body += fmt::format("<text x=\"10\" y=\"{:.1f}\" font-weight=\"bold\">{} buckets (backward order)</text>\n", y,
                      ddp ? "chosen schedule's" : "the schedule's");
  y += 18;
  body += fmt::format(
      "<text x=\"10\" y=\"{:.1f}\" font-family=\"monospace\" font-size=\"11\" xml:space=\"preserve\">{:<5}{:>12}  "
      "{:<13}{:>12}{:>12}{:>12}  {}</text>\n",
      y, "", "bytes", "layers", "ready", "start", "sync", "program (legend above)");
  for (std::size_t b = 0; b < chosen.buckets.size(); ++b) {
    const auto& k = chosen.buckets[b];
    y += 15;
    body += fmt::format(
        "<text x=\"10\" y=\"{:.1f}\" font-family=\"monospace\" font-size=\"11\" xml:space=\"preserve\">{:<5}{:>12}  "
        "{:<13}{:>12}{:>12}{:>12}  {}</text>\n",
        y, fmt::format("b{}", b), sim::format_bytes(k.bytes), fmt::format("{}-{}", k.first, k.last),
        sim::format_seconds(k.ready_s), sim::format_seconds(k.start_s), sim::format_seconds(k.sync_s()),
        fmt::format("p{}", k.program));
  }
  const double H = y + 20;
  std::string o = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{:.0f}\" font-family=\"sans-serif\" "
      "font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"10\" y=\"22\" font-size=\"15\">{}</text>\n"
      "<text x=\"10\" y=\"42\">step = compute + exposed communication; AutoSync's max() estimate {}</text>\n",
      W, H, text::xml_escape(title), sim::format_seconds(chosen.autosync_s));
  return o + grid + body + "</svg>\n";
}

}  // namespace p2v::sim::step
