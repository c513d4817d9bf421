#include "p2v/sim/rewrite.hpp"

#include <queue>
#include <set>

#include "p2v/engine/counting.hpp"
#include "p2v/engine/error.hpp"

namespace p2v::sim {

using namespace engine;

RewriteResult rewrite_search(const RuleMoves& m, const Simulator& sim, const CostOptions& cost,
                             const LoweredProgram& input, const RewriteOptions& opt) {
  if (input.empty()) throw Error("the program to rewrite is empty");
  for (const auto& s : input)
    if (!m.available(s)) throw Error("a step of the program is not an instruction of the placement's hierarchy");
  RewriteResult res;
  res.input_s = sim.time(input, cost);
  res.best = input;
  res.best_s = res.input_s;
  const CountState want = run_counting(m.devices(), input);
  struct Node {
    double t;
    std::size_t id;
    bool operator<(const Node& o) const { return t != o.t ? t > o.t : id > o.id; }  // min-heap, FIFO on ties
  };
  std::vector<DerivedProgram> nodes{{input, {}}};
  std::priority_queue<Node> pq;
  pq.push({res.input_s, 0});
  std::set<LoweredProgram> seen{input};
  while (!pq.empty()) {
    if (res.expanded >= opt.budget) {
      res.budget_exhausted = true;
      break;
    }
    const Node n = pq.top();
    pq.pop();
    if (n.t > opt.prune * res.best_s) {
      ++res.pruned;
      continue;
    }
    ++res.expanded;
    const DerivedProgram cur = nodes[n.id];
    for (auto& [app, q] : m.moves(cur.program, true)) {
      if (static_cast<int>(q.size()) > opt.max_size || !seen.insert(q).second) continue;
      ++res.generated;
      const double t = sim.time(q, cost);
      if (t > opt.prune * res.best_s) {
        ++res.pruned;
        continue;
      }
      if (first_difference(want, run_counting(m.devices(), q))) {
        ++res.rejected;
        continue;
      }
      DerivedProgram d{std::move(q), cur.derivation};
      d.derivation.push_back(app);
      if (t < res.best_s) {
        res.best_s = t;
        res.best = d.program;
        res.derivation = d.derivation;
      }
      nodes.push_back(std::move(d));
      pq.push({t, nodes.size() - 1});
    }
  }
  return res;
}

}  // namespace p2v::sim
