#include "p2v/engine/programs.hpp"

#include "p2v/engine/error.hpp"
#include "p2v/engine/placement.hpp"
#include "p2v/engine/system.hpp"

namespace p2v::engine {

LoweredProgram PlacementPrograms::lower(const Program& prog) const {
  return on_shape() ? lower_shape_program(*shape, *result, prog) : engine::lower(*result, prog);
}

std::vector<GroupPattern> PlacementPrograms::patterns(const Program& prog) const {
  if (!shape) throw Error("level patterns exist for hierarchy (d) only");
  return program_patterns(*shape, *result, prog);
}

ProgramSource::ProgramSource(std::vector<int> system_cards, std::vector<std::string> system_names,
                             std::vector<int> axes, ProgramsOptions opt)
    : cards_(std::move(system_cards)), names_(std::move(system_names)), axes_(std::move(axes)), opt_(opt) {}

ProgramSource::ProgramSource(const System& system, std::vector<int> axes, ProgramsOptions opt)
    : ProgramSource(system.cardinalities(), system.level_names(), std::move(axes), opt) {}

PlacementPrograms ProgramSource::programs_for(const ParallelismMatrix& x, const std::vector<int>& reduce) {
  PlacementPrograms out;
  auto concrete = [&](ProgramsPath path) {
    out.path = path;
    out.result = std::make_shared<const SynthResult>(
        synthesize(Placement(cards_, axes_, x, reduce), names_, opt_.kind, opt_.synth));
    out.cards.assign(out.result->hierarchy.cards.begin(), out.result->hierarchy.cards.end());
  };
  if (!is_reduction_kind(opt_.kind)) {
    check_concrete_size(opt_.kind, x, reduce);
    concrete(ProgramsPath::Concrete);
    return out;
  }
  out.shape = make_shape(cards_, names_, x, reduce, opt_.kind);
  if (opt_.concrete) {
    check_concrete_size(opt_.kind, x, reduce);
    concrete(ProgramsPath::Concrete);
    return out;
  }
  // Placements of the same shape have the same programs: each shape is synthesized once.
  const std::string sig = out.shape->signature();
  auto& slot = by_shape_[sig];
  out.first_of_shape = !slot.result;
  if (!slot.result) slot.result = std::make_shared<const SynthResult>(synthesize_shape(*out.shape, opt_.synth));
  // The basis is the placement's, not the signature's: at depth 3 under `all` it depends on whether this
  // instance's cardinalities are equal (docs/shape.md §3.5), which placements of one signature need not share.
  const ShapeBasis basis = shape_theorem_basis(*out.shape, *slot.result, {}, opt_.synth.master);
  if (!basis.complete_proved && out.shape->group_size() <= kExactFallbackDevices) {
    concrete(ProgramsPath::ExactFallback);
    return out;
  }
  out.path = ProgramsPath::Shape;
  out.key = sig;
  out.result = slot.result;
  out.cards = out.shape->cards();
  if (!basis.complete_proved) {
    out.unproved = basis.text;
    out.first_unproved_of_shape = !slot.unproved_served;
    slot.unproved_served = true;
  }
  return out;
}

}  // namespace p2v::engine
