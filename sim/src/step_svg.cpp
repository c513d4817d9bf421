// Gantt chart of one training step (docs/step.md): compute, gradient sync and (ZeRO) gather lanes.
#include <fmt/core.h>

#include <algorithm>

#include "p2v/engine/text_util.hpp"
#include "p2v/sim/cost.hpp"
#include "p2v/sim/step.hpp"

namespace p2v::sim::step {

using namespace engine;

std::string step_svg(const StepResult& r, const std::vector<std::string>& program_names, const std::string& title) {
  const double W = 1000, left = 110, right = 20, lane = 34, top = 50;
  const bool zero = std::any_of(r.buckets.begin(), r.buckets.end(), [](const Bucket& b) { return b.gather_s() > 0; });
  const int lanes = zero ? 4 : 3;
  const double H = top + lanes * (lane + 12) + 40 + 16.0 * static_cast<double>(program_names.size());
  const double span = std::max(r.step_s, 1e-12);
  auto x = [&](double t) { return left + (W - left - right) * t / span; };
  std::string o = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{:.0f}\" font-family=\"sans-serif\" "
      "font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"10\" y=\"20\" font-size=\"14\">{}</text>\n"
      "<text x=\"10\" y=\"38\">step {} = compute {} + exposed communication {}; sync total {}; AutoSync {}</text>\n",
      W, H, text::xml_escape(title), sim::format_seconds(r.step_s), sim::format_seconds(r.compute_s),
      sim::format_seconds(r.exposed_comm_s), sim::format_seconds(r.sync_s), sim::format_seconds(r.autosync_s));
  const char* pal[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#9c755f"};
  auto box = [&](int row, double a, double b, const char* fill, const std::string& tip) {
    const double y = top + row * (lane + 12);
    o += fmt::format(
        "<rect x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{}\" fill=\"{}\" stroke=\"white\" "
        "stroke-width=\"0.5\"><title>{}</title></rect>\n",
        x(a), y, std::max(0.5, x(b) - x(a)), lane, fill, text::xml_escape(tip));
  };
  const char* names[] = {"forward", "backward", "grad sync", "param gather"};
  for (int i = 0; i < lanes; ++i)
    o += fmt::format("<text x=\"10\" y=\"{:.1f}\">{}</text>\n", top + i * (lane + 12) + lane / 2 + 4, names[i]);
  const auto L = r.layer_fwd_start.size();
  for (std::size_t i = 0; i < L; ++i) {
    const double fe = i + 1 < L ? r.layer_fwd_start[i + 1] : r.fwd_s;
    box(0, r.layer_fwd_start[i], std::max(r.layer_fwd_start[i], fe), i % 2 ? "#9ecae1" : "#6baed6",
        fmt::format("forward layer {}", i));
    const double be = i > 0 ? r.layer_bwd_start[i - 1] : r.fwd_s + r.bwd_s;
    box(1, r.layer_bwd_start[i], be, i % 2 ? "#a1d99b" : "#74c476", fmt::format("backward layer {}", i));
  }
  for (std::size_t b = 0; b < r.buckets.size(); ++b) {
    const auto& k = r.buckets[b];
    const char* fill = pal[static_cast<std::size_t>(k.program) % 8];
    const std::string pn = static_cast<std::size_t>(k.program) < program_names.size()
                               ? program_names[static_cast<std::size_t>(k.program)]
                               : std::to_string(k.program);
    box(2, k.start_s, k.end_s, fill,
        fmt::format("bucket {} (layers {}-{}, {}): {}", b, k.first, k.last, sim::format_seconds(k.sync_s()), pn));
    if (zero) box(3, k.gather_start_s, k.gather_end_s, fill, fmt::format("gather bucket {}", b));
  }
  double y = top + lanes * (lane + 12) + 20;
  o +=
      fmt::format("<text x=\"10\" y=\"{:.1f}\">0</text><text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n",
                  y - 6, W - right, y - 6, sim::format_seconds(r.step_s));
  for (std::size_t p = 0; p < program_names.size(); ++p) {
    bool used = std::any_of(r.buckets.begin(), r.buckets.end(),
                            [&](const Bucket& b) { return b.program == static_cast<int>(p); });
    if (!used) continue;
    o += fmt::format(
        "<rect x=\"10\" y=\"{:.1f}\" width=\"12\" height=\"12\" fill=\"{}\"/><text x=\"28\" y=\"{:.1f}\">{}</text>\n",
        y, pal[p % 8], y + 10, text::xml_escape(program_names[p]));
    y += 16;
  }
  return o + "</svg>\n";
}

}  // namespace p2v::sim::step
