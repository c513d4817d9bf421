// verify_placements (verify.hpp): the enumerator against the solvers, per matrix, on a pool.
#include "p2v/encodings/verify.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <new>
#include <nlohmann/json.hpp>
#include <set>
#include <system_error>
#include <thread>

#include "p2v/encodings/certificate.hpp"
#include "p2v/encodings/symbolic.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/replay.hpp"
#include "p2v/engine/state.hpp"
#include "p2v/engine/workers.hpp"

namespace p2v::encodings {

VerifyEncoding parse_verify_encoding(const std::string& s) {
  if (s == "auto") return VerifyEncoding::Auto;
  if (s == "shape") return VerifyEncoding::Shape;
  if (s == "concrete") return VerifyEncoding::Concrete;
  if (s == "symbolic" || s == "per-level") return VerifyEncoding::Symbolic;
  throw Error("--encoding: expected concrete, shape, symbolic or auto, got '" + s + "'");
}

const char* to_string(VerifyEncoding e) {
  switch (e) {
    case VerifyEncoding::Auto:
      return "auto";
    case VerifyEncoding::Shape:
      return "shape";
    case VerifyEncoding::Concrete:
      return "concrete";
    case VerifyEncoding::Symbolic:
      return "symbolic";
  }
  return "?";
}

const char* VerifyCase::encoding() const {
  return to_string(symbolic ? VerifyEncoding::Symbolic : shape ? VerifyEncoding::Shape : VerifyEncoding::Concrete);
}

int VerifyCase::shortest() const {
  return enumerator.programs.empty() ? 0 : static_cast<int>(enumerator.programs.front().size());
}

bool VerifyCase::same() const {
  return std::all_of(run_agrees.begin(), run_agrees.end(), [](bool b) { return b; });
}

bool VerifyResult::any_shape() const {
  return std::any_of(cases.begin(), cases.end(), [](const VerifyCase& c) { return c.shape.has_value(); });
}

std::string diagnose(const engine::SynthResult& r, const engine::Program& prog, const engine::Groups& goal_groups) {
  const int k = r.hierarchy.num_local();
  const engine::Trace t = engine::replay(r, prog, &goal_groups);
  auto devices = [k](const engine::StateSet& st) {
    std::string s;
    for (int d = 0; d < k; ++d) s += fmt::format("\n        device {}: {}", d, st.describe_device(d));
    return s;
  };
  if (t.failed_step >= 0 && t.reason.rfind("the goal", 0) == 0) return t.reason;
  if (t.failed_step >= 0)
    return fmt::format(
        "step {} ({}) is invalid: {}; state before it:{}", t.failed_step + 1,
        engine::instruction_name(r.hierarchy, r.instructions.at(static_cast<std::size_t>(prog[t.failed_step]))),
        t.reason, devices(t.states.back()));
  if (!t.reaches_goal) return "every step is valid but the final state is not the goal:" + devices(t.states.back());
  std::string s = "valid under the engine's rules; states after each step:";
  for (std::size_t i = 1; i < t.states.size(); ++i) {
    s += fmt::format("\n        after step {}:", i);
    for (int d = 0; d < k; ++d) s += fmt::format(" [{}] {}", d, t.states[i].describe_device(d));
  }
  return s;
}

namespace {

// A case with what the comparison needs besides the result.
struct Work {
  VerifyCase c;
  engine::Placement placement;
  SearchProblem sp;
};

// The case of matrix `x` on the shape's smallest instance (`shape` set) or on the reduction
// group's devices: the hierarchy, the enumerator's programs and the search problem.
Work build(const engine::System& system, const std::vector<int>& axes, const std::vector<int>& reduce,
           const engine::ParallelismMatrix& x, const VerifyOptions& opt, std::optional<engine::Shape> shape) {
  Work w{{}, engine::Placement(system.cardinalities(), axes, x, reduce), {}};
  engine::SynthesisHierarchy h;
  if (shape) {
    const auto inst = engine::smallest_instance(*shape);
    h = engine::canonical_hierarchy(*shape);
    w.c.goal =
        engine::local_goal_groups(h, engine::Placement(inst.system.cardinalities(), inst.axes, inst.x, inst.reduce));
  } else {
    h = engine::make_hierarchy(w.placement, system.level_names(), opt.kind);
    w.c.goal = engine::local_goal_groups(h, w.placement);
  }
  w.c.x = x;
  w.c.shape = std::move(shape);
  const auto t0 = std::chrono::steady_clock::now();
  w.c.enumerator = engine::synthesize(h, w.c.goal, opt.synth);
  w.c.enumerator_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  w.sp = make_search_problem(h, w.c.enumerator.instructions, w.c.goal);
  return w;
}

// The encoding of one matrix (VerifyEncoding). auto: the symbolic encoding on the shape's smallest
// instance where the reduction group has at least kAutoSymbolicFrom devices and the per-level
// encoding applies; otherwise, as before it existed, the concrete encoding on the smallest instance
// above kAutoShapeAbove devices per group and on the group's devices up to it.
Work prepare(const engine::System& system, const std::vector<int>& axes, const std::vector<int>& reduce,
             const engine::ParallelismMatrix& x, const VerifyOptions& opt) {
  const bool d = engine::is_reduction_kind(opt.kind);
  const VerifyEncoding enc = opt.encoding;
  if (!d && (enc == VerifyEncoding::Shape || enc == VerifyEncoding::Symbolic))
    throw Error(
        fmt::format("--encoding {} works on hierarchy (d) only; (a)-(c) cover every device: use --encoding concrete",
                    to_string(enc)));
  std::optional<engine::Shape> shape;
  if (d) shape = engine::make_shape(system.cardinalities(), system.level_names(), x, reduce, opt.kind);
  const bool large = d && shape->group_size() > kAutoShapeAbove;
  if (enc == VerifyEncoding::Symbolic ||
      (enc == VerifyEncoding::Auto && d && shape->group_size() >= kAutoSymbolicFrom)) {
    Work w = build(system, axes, reduce, x, opt, shape);
    const std::string why = per_level_unsupported(w.sp);
    if (why.empty()) {
      w.c.symbolic = true;
      return w;
    }
    if (enc == VerifyEncoding::Symbolic)
      throw Error(fmt::format(
          "--encoding symbolic: the per-level encoding does not apply to matrix {} (on its smallest instance "
          "[{}]): {}; use --encoding shape or concrete",
          engine::format_matrix(x), fmt::join(w.c.enumerator.hierarchy.cards, " "), why));
  }
  const bool on_shape = d && (enc == VerifyEncoding::Shape || (enc == VerifyEncoding::Auto && large));
  if (!on_shape) {
    shape.reset();
    engine::check_concrete_size(opt.kind, x, reduce);
  }
  return build(system, axes, reduce, x, opt, std::move(shape));
}

// Why the per-level encoding has no run of `prog` (a diagnostic of a difference): the first state
// of the engine's replay without a per-level form, or that every state has one.
std::string per_level_diagnosis(const engine::SynthResult& r, const engine::Program& prog,
                                const engine::Groups& goal_groups) {
  const engine::Trace t = engine::replay(r, prog, &goal_groups);
  for (std::size_t i = 0; i < t.states.size(); ++i)
    if (!per_level_state(t.states[i]))
      return fmt::format("cannot represent it (the state after step {} has no per-level form)", i);
  return "rejects it (every state of the engine's replay has a per-level form)";
}

// The solver runs of every case on a pool of workers, largest first (estimated by the state bits
// per step, k^3 concrete and k^2 symbolic, x instructions, cvc5 three times z3). The futures are read in case order by
// the caller.
class Pool {
 public:
  Pool(const std::vector<Work>& work, const VerifyOptions& opt) : work_(work), opt_(opt) {
    const std::size_t ns = opt.solvers.size();
    jobs_ = std::vector<Job>(work.size() * ns);
    for (std::size_t ci = 0; ci < work.size(); ++ci)
      for (std::size_t si = 0; si < ns; ++si) {
        Job& j = jobs_[ci * ns + si];
        const double k = work[ci].sp.k;
        j.c = ci;
        j.s = si;
        j.cost = k * k * (work[ci].c.symbolic ? 1 : k) * static_cast<double>(work[ci].sp.instructions.size()) *
                 (opt.solvers[si] == smt::SolverKind::Cvc5 ? 3 : 1);
      }
    for (std::size_t i = 0; i < jobs_.size(); ++i) order_.push_back(i);
    std::stable_sort(order_.begin(), order_.end(),
                     [&](std::size_t x, std::size_t y) { return jobs_[x].cost > jobs_[y].cost; });
    const std::size_t n = std::min(jobs_.size(), engine::worker_count(opt.jobs));
    // A thread that cannot be started: the started ones are joined before the error leaves the
    // constructor (~Pool does not run then, and a joinable std::thread must never be destroyed).
    try {
      for (std::size_t w = 0; w < n; ++w) threads_.emplace_back([this] { worker(); });
    } catch (const std::system_error& e) {
      const std::size_t started = threads_.size();
      join();
      throw Error(engine::thread_start_error(started, n, e.code().message(), "try fewer --jobs"));
    } catch (...) {
      join();
      throw;
    }
  }
  ~Pool() { join(); }
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  // The runs of case `ci`, in solver order; throws p2v::Error naming the first failed run.
  std::vector<EnumerationResult> runs(std::size_t ci) {
    std::vector<EnumerationResult> out;
    std::string err;
    for (std::size_t si = 0; si < opt_.solvers.size(); ++si) {
      try {
        out.push_back(jobs_[ci * opt_.solvers.size() + si].done.get_future().get());
      } catch (const std::exception& e) {
        if (err.empty()) err = e.what();
      }
    }
    if (err.empty()) return out;
    join();                                      // every run has ended: first_error_ is final
    if (out_of_memory_) throw std::bad_alloc();  // reported by the CLI as out of memory, exit 2
    throw Error(first_error_.empty() ? fmt::format("matrix {}: {}", engine::format_matrix(work_[ci].c.x), err)
                                     : first_error_);
  }

 private:
  struct Job {
    std::size_t c = 0, s = 0;
    double cost = 0;
    std::promise<EnumerationResult> done;
  };

  void worker() {
    for (std::size_t i; (i = next_++) < order_.size();) {
      Job& j = jobs_[order_[i]];
      if (stop_) {  // after a failure: resolve the remaining runs without running them
        j.done.set_exception(std::make_exception_ptr(Error("not run: another solver run failed")));
        continue;
      }
      try {
        const SearchProblem& sp = work_[j.c].sp;
        const smt::SolverKind kind = opt_.solvers[j.s];
        const int L = opt_.synth.max_size;
        if (work_[j.c].c.symbolic)
          j.done.set_value(opt_.minimal ? find_shortest_per_level(kind, sp, L, opt_.search)
                                        : enumerate_programs_per_level(kind, sp, L, opt_.search));
        else
          j.done.set_value(opt_.minimal ? find_shortest(kind, sp, L, opt_.search)
                                        : enumerate_programs(kind, sp, L, opt_.search));
      } catch (const std::exception& e) {
        stop_ = true;
        if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr) out_of_memory_ = true;
        {
          std::lock_guard<std::mutex> lock(mutex_);
          if (first_error_.empty())
            first_error_ = fmt::format("matrix {}, {}: {}", engine::format_matrix(work_[j.c].c.x),
                                       smt::to_string(opt_.solvers[j.s]), e.what());
        }
        j.done.set_exception(std::current_exception());
      } catch (...) {
        stop_ = true;
        j.done.set_exception(std::current_exception());
      }
    }
  }
  void join() {
    stop_ = true;
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

  const std::vector<Work>& work_;
  const VerifyOptions& opt_;
  std::vector<Job> jobs_;
  std::vector<std::size_t> order_;
  std::atomic<std::size_t> next_{0};
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::string first_error_;  // the first run that failed, named
  std::atomic<bool> out_of_memory_{false};
  std::vector<std::thread> threads_;
};

}  // namespace

void compare_runs(VerifyCase& c, const VerifyOptions& opt) {
  c.run_agrees.clear();
  c.differences.clear();
  const engine::SynthResult& r = c.enumerator;
  std::set<engine::LoweredProgram> want;
  for (const auto& prog : r.programs) want.insert(engine::lower(r, prog));
  auto only_solver = [&](const EnumerationResult& run, const engine::Program& prog) {
    c.differences.push_back(fmt::format("only {} finds: {}\n      engine: {}", run.solver,
                                        engine::program_name(r, prog), diagnose(r, prog, c.goal)));
  };
  for (std::size_t i = 0; i < c.runs.size(); ++i) {
    const EnumerationResult& run = c.runs[i];
    bool eq = false;
    if (opt.minimal) {
      const bool valid = run.programs.empty() || want.count(engine::lower(r, run.programs[0]));
      eq = run.shortest == c.shortest() && valid;
      if (run.shortest != c.shortest())
        c.differences.push_back(
            fmt::format("{}'s shortest program has {} steps, the enumerator's {} (0 = none up to {})", run.solver,
                        run.shortest, c.shortest(), opt.synth.max_size));
      if (!valid) only_solver(run, run.programs[0]);
    } else {
      std::set<engine::LoweredProgram> got;
      for (const auto& prog : run.programs) got.insert(engine::lower(r, prog));
      eq = got == want && run.programs.size() == r.programs.size();
      if (!eq) {
        for (const auto& prog : run.programs)
          if (!want.count(engine::lower(r, prog))) only_solver(run, prog);
        for (const auto& prog : r.programs) {
          if (got.count(engine::lower(r, prog))) continue;
          if (c.symbolic) {
            c.differences.push_back(fmt::format(
                "only the enumerator finds: {}\n      the per-level encoding {}; engine: {}",
                engine::program_name(r, prog), per_level_diagnosis(r, prog, c.goal), diagnose(r, prog, c.goal)));
            continue;
          }
          bool accepts = false;
          try {
            accepts = encoding_accepts(opt.solvers.at(i), make_search_problem(r.hierarchy, r.instructions, c.goal),
                                       prog, opt.search);
          } catch (const std::exception&) {  // a diagnostic only: the difference stands either way
          }
          c.differences.push_back(fmt::format(
              "only the enumerator finds: {}\n      {} {} this program; engine: {}", engine::program_name(r, prog),
              run.solver, accepts ? "accepts (enumeration missed it)" : "rejects", diagnose(r, prog, c.goal)));
        }
      }
    }
    c.run_agrees.push_back(eq);
  }
}

VerifyResult verify_placements(const engine::System& system, const std::vector<int>& axes,
                               const std::vector<int>& reduce, const std::vector<engine::ParallelismMatrix>& matrices,
                               const VerifyOptions& opt, const std::function<void(const VerifyCase&)>& on_case) {
  if (opt.solvers.empty()) throw Error("--solver: give z3, cvc5 or both");
  if (opt.minimal && !opt.certify_dir.empty()) throw Error("--certify needs the whole sets: drop --minimal");
  // The enumerator first (milliseconds), then the solver runs on the pool.
  std::vector<Work> work;
  for (const auto& x : matrices) work.push_back(prepare(system, axes, reduce, x, opt));
  VerifyResult out;
  {
    Pool pool(work, opt);
    for (std::size_t ci = 0; ci < work.size(); ++ci) {
      Work& w = work[ci];
      w.c.runs = pool.runs(ci);
      compare_runs(w.c, opt);
      if (!opt.certify_dir.empty() && w.c.same()) {
        CertifyOptions co;
        co.dir = opt.certify_dir;
        co.solvers = opt.solvers;
        co.search = opt.search;
        // The symbolic runs enumerated the per-level encoding; its certificates carry the facts of
        // its closure (method symbolic-closure, whose premise `p2v check` re-derives), run here.
        co.encoding = w.c.symbolic ? EncodingChoice::PerLevel : EncodingChoice::Concrete;
        const std::vector<EnumerationResult>* runs = w.c.symbolic ? nullptr : &w.c.runs;
        const auto cr = w.c.shape ? certify_shape_programs(system, *w.c.shape, w.c.enumerator, opt.synth, co, runs)
                                  : certify_programs(system, w.placement, w.c.enumerator, opt.synth, co, runs);
        w.c.certificates = cr.files;
        out.certificates += cr.files.size();
      }
      out.identical = out.identical && w.c.same();
      if (on_case) on_case(w.c);
    }
  }  // the pool's workers have ended
  for (auto& w : work) out.cases.push_back(std::move(w.c));
  return out;
}

nlohmann::json to_json(const VerifyCase& c, bool minimal) {
  const engine::SynthResult& r = c.enumerator;
  nlohmann::json res;
  res["matrix"] = c.x;
  res["encoding"] = c.encoding();
  if (c.shape) res["shape"] = c.shape->signature();
  res["hierarchy"] = r.hierarchy.cards;
  res["k"] = r.hierarchy.num_local();
  res["instructions"] = r.instructions.size();
  res["enumerator"] = {{"programs", r.programs.size()}, {"ms", c.enumerator_ms}};
  res["solvers"] = nlohmann::json::array();
  for (std::size_t i = 0; i < c.runs.size(); ++i) {
    const EnumerationResult& run = c.runs[i];
    nlohmann::json bj = nlohmann::json::array();
    nlohmann::json sj = {
        {"solver", run.solver}, {"version", run.version}, {"seconds", run.seconds}, {"shortest", run.shortest}};
    if (minimal) {
      for (const auto& b : run.bounds)
        bj.push_back({{"bound", b.bound}, {"result", smt::to_string(b.final_result)}, {"seconds", b.seconds}});
      sj["agrees"] = static_cast<bool>(c.run_agrees[i]);
    } else {
      for (const auto& b : run.bounds)
        bj.push_back({{"bound", b.bound},
                      {"programs", b.programs},
                      {"result_after_blocking", smt::to_string(b.final_result)},
                      {"seconds", b.seconds},
                      {"final_check_seconds", b.final_seconds}});
      sj["programs"] = run.programs.size();
      sj["identical"] = static_cast<bool>(c.run_agrees[i]);
    }
    sj["bounds"] = std::move(bj);
    res["solvers"].push_back(std::move(sj));
  }
  res["identical"] = c.same();
  res["differences"] = c.differences;
  if (!c.certificates.empty()) res["certificates"] = c.certificates;
  return res;
}

}  // namespace p2v::encodings
