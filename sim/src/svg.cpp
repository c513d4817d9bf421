#include "p2v/sim/svg.hpp"

#include <fmt/core.h>
#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>

#include "p2v/engine/text_util.hpp"

namespace p2v::sim {

using namespace engine;

namespace {

std::string esc(const std::string& s) { return text::xml_escape(s); }

// Group colours: hues stepped by the golden angle (137.5 degrees), so neighbouring groups differ
// and no two of the first few hundred groups share a colour; lightness alternates in three
// levels so that hues that come close again still differ.
std::string group_fill(int g) {
  const double hue = std::fmod(210.0 + static_cast<double>(g) * 137.50776405, 360.0);  // group 0 blue, not link red
  static constexpr int kLight[] = {62, 48, 74};
  return fmt::format("hsl({:.1f},65%,{}%)", hue, kLight[g % 3]);
}

}  // namespace

std::vector<double> nice_ticks(double hi, int target) {
  std::vector<double> out;
  if (!(hi > 0) || target < 1) return out;
  const double raw = hi / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  for (int k = 0; k * step <= hi * (1 + 1e-9); ++k) out.push_back(k * step);
  return out;
}

std::string tick_label(double seconds, double span) {
  if (seconds == 0) return "0";
  if (span >= 1) return fmt::format("{:g} s", seconds);
  if (span >= 1e-3) return fmt::format("{:g} ms", std::round(seconds * 1e9) / 1e6);
  return fmt::format("{:g} us", std::round(seconds * 1e12) / 1e6);
}

std::string topology_svg(const Topology& t, const LoweredProgram& prog, const ProgramCost* cost,
                         const std::string& title, const std::vector<std::string>& step_labels) {
  // Switch/NIC labels: the name's last 14 characters, in a box that fits them at 11 px.
  auto short_name = [](const std::string& nm) { return nm.size() > 14 ? nm.substr(nm.size() - 14) : nm; };
  const double box_w = 14 * 6.6 + 8;
  const auto& V = t.vertices();
  const auto& E = t.edges();
  const int nv = static_cast<int>(V.size());
  // Layers: devices 0, others 1 + min layer of a neighbour (BFS from the devices).
  std::vector<int> layer(static_cast<std::size_t>(nv), std::numeric_limits<int>::max());
  std::vector<std::vector<int>> adj(static_cast<std::size_t>(nv));
  for (const auto& e : E) adj[static_cast<std::size_t>(e.from)].push_back(e.to);
  std::deque<int> q;
  for (int v = 0; v < nv; ++v)
    if (V[static_cast<std::size_t>(v)].is_device()) {
      layer[static_cast<std::size_t>(v)] = 0;
      q.push_back(v);
    }
  while (!q.empty()) {
    const int v = q.front();
    q.pop_front();
    for (int w : adj[static_cast<std::size_t>(v)])
      if (layer[static_cast<std::size_t>(w)] == std::numeric_limits<int>::max()) {
        layer[static_cast<std::size_t>(w)] = layer[static_cast<std::size_t>(v)] + 1;
        q.push_back(w);
      }
  }
  int max_layer = 0;
  for (int v = 0; v < nv; ++v) {
    if (layer[static_cast<std::size_t>(v)] == std::numeric_limits<int>::max()) layer[static_cast<std::size_t>(v)] = 1;
    max_layer = std::max(max_layer, layer[static_cast<std::size_t>(v)]);
  }
  // x: devices in order with a gap between nodes; others at the mean x of lower neighbours.
  const double dx = 34, gap = 18, margin = 40;
  std::vector<double> x(static_cast<std::size_t>(nv), 0.0);
  double cx = margin;
  for (int d = 0; d < t.num_devices(); ++d) {
    if (d > 0 && t.node_of(d) != t.node_of(d - 1)) cx += gap;
    x[static_cast<std::size_t>(t.device_vertex(d))] = cx;
    cx += dx;
  }
  const double width = std::max(cx + margin, 480.0);
  for (int l = 1; l <= max_layer; ++l) {
    std::vector<int> vs;
    for (int v = 0; v < nv; ++v)
      if (layer[static_cast<std::size_t>(v)] == l) {
        double s = 0;
        int n = 0;
        for (int w : adj[static_cast<std::size_t>(v)])
          if (layer[static_cast<std::size_t>(w)] < l) {
            s += x[static_cast<std::size_t>(w)];
            ++n;
          }
        x[static_cast<std::size_t>(v)] = n ? s / n : width / 2;
        vs.push_back(v);
      }
    std::stable_sort(vs.begin(), vs.end(),
                     [&](int a, int b) { return x[static_cast<std::size_t>(a)] < x[static_cast<std::size_t>(b)]; });
    for (std::size_t i = 1; i < vs.size(); ++i)
      x[static_cast<std::size_t>(vs[i])] =
          std::max(x[static_cast<std::size_t>(vs[i])], x[static_cast<std::size_t>(vs[i - 1])] + box_w + 10);
  }
  const double layer_h = 70, panel_top = 36;
  const double panel_h = panel_top + max_layer * layer_h + 70;
  const std::size_t panels = std::max<std::size_t>(prog.size(), 1);
  double wmax = width;
  for (int v = 0; v < nv; ++v) wmax = std::max(wmax, x[static_cast<std::size_t>(v)] + margin + 40);
  wmax = std::max(wmax, 20 + 8.5 * static_cast<double>(title.size()));
  const double H = 40 + static_cast<double>(panels) * panel_h;
  std::string o = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" font-family=\"sans-serif\" "
      "font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"10\" y=\"20\" font-size=\"14\" font-weight=\"bold\">{}</text>\n"
      "<text x=\"10\" y=\"36\" font-size=\"12\" fill=\"#555\">device colour: its group in the step (grey: in none); "
      "links: thicker and redder = busier, bright red = the step's bottleneck; hover for names and loads</text>\n",
      wmax, H + 16, esc(title));
  for (std::size_t p = 0; p < panels; ++p) {
    const double y0 = 56 + static_cast<double>(p) * panel_h;
    auto y = [&](int v) { return y0 + panel_top + (max_layer - layer[static_cast<std::size_t>(v)]) * layer_h; };
    const StepCost* sc = (cost && p < cost->steps.size()) ? &cost->steps[p] : nullptr;
    std::string label;
    if (!prog.empty()) {
      label = fmt::format("step {}: {}", p, p < step_labels.size() ? step_labels[p] : to_string(prog[p].collective));
      if (sc)
        label += fmt::format("  ({} groups of {}, {}, bottleneck {})", sc->num_groups, sc->group_size,
                             format_seconds(sc->time_s),
                             sc->bottleneck_edge >= 0 ? t.edge_name(sc->bottleneck_edge) : std::string("-"));
    } else {
      label = "topology";
    }
    o += fmt::format("<text x=\"10\" y=\"{:.0f}\" font-size=\"13\">{}</text>\n", y0 + 14, esc(label));
    // Link loads of this step, by physical link (max of the two directions).
    std::vector<double> busy(E.size(), 0.0);
    double maxbusy = 0;
    if (sc)
      for (const auto& l : sc->links) {
        busy[static_cast<std::size_t>(l.edge)] = l.busy_s;
        maxbusy = std::max(maxbusy, l.busy_s);
      }
    for (std::size_t e = 0; e < E.size(); ++e) {
      const auto& ed = E[e];
      if (ed.reverse >= 0 && static_cast<std::size_t>(ed.reverse) < e) continue;
      const double b = std::max(busy[e], ed.reverse >= 0 ? busy[static_cast<std::size_t>(ed.reverse)] : 0.0);
      const double u = maxbusy > 0 ? b / maxbusy : 0.0;
      const bool bottleneck = sc && (static_cast<int>(e) == sc->bottleneck_edge || ed.reverse == sc->bottleneck_edge);
      const std::string color =
          bottleneck ? "#d62728" : (u > 0 ? fmt::format("rgb({},{},{})", 90 + int(120 * u), 90, 90) : "#c8c8c8");
      const double wdt = 1 + 4 * u;
      const double x1 = x[static_cast<std::size_t>(ed.from)], y1 = y(ed.from), x2 = x[static_cast<std::size_t>(ed.to)],
                   y2 = y(ed.to);
      const std::string tip =
          fmt::format("<title>{} ({}, {:.1f} GB/s){}</title>", esc(t.edge_name(static_cast<int>(e))), esc(ed.kind),
                      ed.bandwidth / 1e9, b > 0 ? fmt::format(": busy {}", format_seconds(b)) : "");
      if (V[static_cast<std::size_t>(ed.from)].is_device() && V[static_cast<std::size_t>(ed.to)].is_device()) {
        const double dip = 12 + 0.12 * std::fabs(x2 - x1);
        o += fmt::format(
            "<path d=\"M{:.1f},{:.1f} Q{:.1f},{:.1f} {:.1f},{:.1f}\" fill=\"none\" stroke=\"{}\" "
            "stroke-width=\"{:.1f}\">{}</path>\n",
            x1, y1 + 9, (x1 + x2) / 2, y1 + 9 + dip, x2, y2 + 9, color, wdt, tip);
      } else {
        o += fmt::format(
            "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" "
            "stroke-width=\"{:.1f}\">{}</line>\n",
            x1, y1, x2, y2, color, wdt, tip);
      }
    }
    // Group of each device in this step.
    std::vector<int> grp(static_cast<std::size_t>(t.num_devices()), -1);
    if (!prog.empty()) {
      int gi = 0;
      for (const auto& g : prog[p].groups) {
        if (g.size() > 1)
          for (int d : g) grp[static_cast<std::size_t>(d)] = gi;
        ++gi;
      }
    }
    for (int v = 0; v < nv; ++v) {
      const auto& vx = V[static_cast<std::size_t>(v)];
      const double X = x[static_cast<std::size_t>(v)], Y = y(v);
      if (vx.is_device()) {
        const int g = grp[static_cast<std::size_t>(vx.device)];
        const std::string fill = g >= 0 ? group_fill(g) : "#eeeeee";
        o += fmt::format(
            "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"30\" height=\"18\" rx=\"3\" fill=\"{}\" stroke=\"#333\"><title>{} "
            "(device {}){}</title></rect>\n",
            X - 15, Y - 9, fill, esc(vx.name), vx.device, g >= 0 ? fmt::format(", group {}", g) : "");
        o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" font-size=\"11\">{}</text>\n", X,
                         Y + 4, vx.device);
      } else {
        o += fmt::format(
            "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.0f}\" height=\"20\" rx=\"4\" fill=\"#f7f7f7\" "
            "stroke=\"#555\"><title>{} ({})</title></rect>\n",
            X - box_w / 2, Y - 10, box_w, esc(vx.name), esc(vx.kind));
        o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" font-size=\"11\">{}</text>\n", X,
                         Y + 4, esc(short_name(vx.name)));
      }
    }
  }
  o += "</svg>\n";
  return o;
}

std::string ranking_svg(const std::vector<RankPoint>& pts, double allreduce_s, const std::string& title,
                        int label_top) {
  const double W = 900, plot_h = 360, left = 80, right = 20, top = 40;
  const int nlab = std::min<int>(label_top, static_cast<int>(pts.size()));
  const double H = top + plot_h + 50 + 16.0 * (nlab + 2);
  double lo = std::numeric_limits<double>::max(), hi = 0;
  auto upd = [&](double v) {
    if (v > 0) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  };
  for (const auto& p : pts) {
    upd(p.predicted_s);
    upd(p.measured_s);
  }
  upd(allreduce_s);
  if (hi <= 0) {
    lo = 1e-6;
    hi = 1;
  }
  const bool logy = hi / lo > 20;
  double ylo = logy ? std::pow(10, std::floor(std::log10(lo))) : 0.0;
  double yhi = logy ? std::pow(10, std::ceil(std::log10(hi))) : hi * 1.1;
  if (logy && yhi <= ylo) yhi = ylo * 10;
  if (!logy) {  // round the top up to a tick
    const auto tk = nice_ticks(yhi, 5);
    if (tk.size() > 1) yhi = std::ceil(yhi / tk[1] - 1e-9) * tk[1];
  }
  auto Y = [&](double v) {
    const double f = logy ? (std::log10(v) - std::log10(ylo)) / (std::log10(yhi) - std::log10(ylo)) : v / yhi;
    return top + plot_h * (1 - f);
  };
  const double pw = W - left - right;
  const std::size_t n = std::max<std::size_t>(pts.size(), 1);
  auto X = [&](std::size_t i) { return left + pw * (static_cast<double>(i) + 0.5) / static_cast<double>(n); };
  std::string o = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" font-family=\"sans-serif\" "
      "font-size=\"12\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"10\" y=\"20\" font-size=\"13\" "
      "font-weight=\"bold\">{}</text>\n",
      W, H, esc(title));
  o += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\"/>\n", left, top,
                   pw, plot_h);
  // y ticks
  if (logy) {
    for (double v = ylo; v <= yhi * 1.0001; v *= 10) {
      o += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>\n", left, left + pw,
                       Y(v), Y(v));
      o += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", left - 4, Y(v) + 3,
                       format_seconds(v));
    }
  } else {
    for (double v : nice_ticks(yhi, 5)) {
      const bool zero = v == 0;
      o += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>\n", left, left + pw,
                       Y(v), Y(v));
      o += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", left - 4, Y(v) + 3,
                       zero ? std::string("0") : tick_label(v, yhi));
    }
  }
  // x ticks: ranks 1, and about ten more.
  {
    const std::size_t step = std::max<std::size_t>(1, (pts.size() + 9) / 10);
    for (std::size_t i = 0; i < pts.size(); i += step)
      o += fmt::format("<text x=\"{:.1f}\" y=\"{:.0f}\" text-anchor=\"middle\">{}</text>\n", X(i), top + plot_h + 14,
                       i + 1);
  }
  o += fmt::format(
      "<text x=\"{:.0f}\" y=\"{:.0f}\" text-anchor=\"middle\">program rank (by predicted time), {} programs</text>\n",
      left + pw / 2, top + plot_h + 30, pts.size());
  if (allreduce_s > 0 && (!logy || allreduce_s >= ylo)) {
    o += fmt::format(
        "<line x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#d62728\" stroke-dasharray=\"6 4\"/>\n", left,
        left + pw, Y(allreduce_s), Y(allreduce_s));
    o += fmt::format("<text x=\"{}\" y=\"{:.1f}\" fill=\"#d62728\" text-anchor=\"end\">single AllReduce {}</text>\n",
                     left + pw - 4, Y(allreduce_s) - 4, format_seconds(allreduce_s));
  }
  std::string line;
  for (std::size_t i = 0; i < pts.size(); ++i)
    line += fmt::format("{}{:.1f},{:.1f}", i ? " " : "", X(i), Y(pts[i].predicted_s));
  if (!pts.empty()) o += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"#4e79a7\"/>\n", line);
  for (std::size_t i = 0; i < pts.size(); ++i) {
    o += fmt::format(
        "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2.5\" fill=\"#4e79a7\"><title>#{} {}: {}</title></circle>\n", X(i),
        Y(pts[i].predicted_s), i + 1, esc(pts[i].label), format_seconds(pts[i].predicted_s));
    if (pts[i].measured_s > 0)
      o += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"5\" height=\"5\" fill=\"#f28e2b\"><title>#{} measured "
          "{}</title></rect>\n",
          X(i) - 2.5, Y(pts[i].measured_s) - 2.5, i + 1, format_seconds(pts[i].measured_s));
  }
  double ly = top + plot_h + 50;
  // The legend names only what is drawn.
  const bool measured = std::any_of(pts.begin(), pts.end(), [](const RankPoint& p) { return p.measured_s > 0; });
  const bool ar_line = allreduce_s > 0 && (!logy || allreduce_s >= ylo);
  o += fmt::format("<text x=\"10\" y=\"{:.0f}\"><tspan fill=\"#4e79a7\">● predicted</tspan>{}{}</text>\n", ly,
                   measured ? "  <tspan fill=\"#f28e2b\">■ measured</tspan>" : "",
                   ar_line ? "  <tspan fill=\"#d62728\">- - single AllReduce</tspan>" : "");
  for (int i = 0; i < nlab; ++i) {
    ly += 16;
    o += fmt::format("<text x=\"10\" y=\"{:.0f}\">#{} {}  {}</text>\n", ly, i + 1,
                     format_seconds(pts[static_cast<std::size_t>(i)].predicted_s),
                     esc(pts[static_cast<std::size_t>(i)].label));
  }
  o += "</svg>\n";
  return o;
}

}  // namespace p2v::sim
