#pragma once
// The per-level symbolic encoding of reduction-program search (encodings/README.md, "The per-level
// encoding"). On a hierarchy whose devices are bit vectors (a shape's smallest instance: every
// level of cardinality 1 or 2) a state that is row-uniform (every held row of a device has the
// same column set) and in the form of docs/shape.md's Lemma 1 (the rows a device holds are those
// whose row bits are fixed to some of its level bits) is, per step:
//   - for each level (device bit) the row bit its digit is fixed to, if any: n x n bits;
//   - for each device its column set: k bits;
// k^2 + n^2 bits in all instead of the concrete encoding's k^3 + k^2 (k = 2^n). The closure of
// `--certify` uses a smaller form where the states allow it (summed_levels below): per device a
// presence bit and the n-bit set of levels its columns are summed over, k(n + 1) + n^2 bits. The five
// collectives' Hoare rules (docs/model.md §4) become conditions on the fixed levels (the rows: "the group's
// levels are fixed to none of the row bits", "all of them are") and on the devices' column sets.
// A step whose successor has no per-level form (an AllGather over members with different column
// sets, a Broadcast to an empty member whose rows would be another device's) is not a step of
// this encoding; with summed levels neither is one whose successor's columns are not summed
// levels (a sum over members with different summed levels, whose union is no cylinder; an
// AllGather over members whose summed levels do not contain the group's levels; a Broadcast from a
// root whose summed levels do not). The closure check (confirm_by_symbolic_closure) requires that no
// program of the reference semantics passes such a state.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "p2v/encodings/search.hpp"
#include "p2v/engine/state.hpp"

namespace p2v::encodings {

// Which encoding the closure check of `--certify` uses: the per-level one where it applies and the
// hierarchy has at least kPerLevelMinDevices devices (auto), or the one asked for.
enum class EncodingChoice { Auto, Concrete, PerLevel };
EncodingChoice parse_encoding_choice(const std::string& s);  // "auto" | "concrete" | "per-level" (or "symbolic")
const char* to_string(EncodingChoice e);
inline constexpr int kPerLevelMinDevices = 4;

// A state of a 2^n-device hierarchy in per-level form.
struct PerLevelState {
  int n = 0;
  std::vector<int> fixed;               // per level (device bit b, LSB = innermost): its row bit, or -1
  std::vector<std::vector<bool>> cols;  // per device: the column set of every row it holds; none = empty
  bool operator==(const PerLevelState&) const = default;
};

// Why the per-level encoding does not apply to this problem ("" when it does): it needs k = 2^n
// devices, every group of every instruction a sub-cube (its members are its first one with every
// combination of a set of bits, ascending), groups that do not cover every device (Master) only
// with AllReduce, and one goal group of every device.
std::string per_level_unsupported(const SearchProblem& p);

// The per-level form of a state (nullopt when it has none), and back.
std::optional<PerLevelState> per_level_state(const engine::StateSet& s);
engine::StateSet concrete_state(const PerLevelState& s);

// The summed levels of a state in per-level form: for each device that holds rows, the level set
// S (bit b: level b) such that its columns are exactly the devices that agree with it outside S
// (docs/shape.md's agreement form with the cylinders B_x = {A : A contains every level not in S});
// -1 for a device without rows; nullopt when some device's columns are not of that form. The
// closure of `--certify` encodes a device's columns by these n bits and a presence bit instead of
// k bits (the "summed levels" form: every program of the shapes checked passes only such states;
// docs/shape.md Lemma 2(a) for the live states of Master-free programs).
std::optional<std::vector<int>> summed_levels(const PerLevelState& s);

// confirm_by_closure's facts from the per-level encoding: the reference semantics' reachable
// states that have a per-level form are closed by one-step queries of the per-level encoding,
// and the programs must pass only such states (every other reachable state is then a dead end,
// which the reference graph shows). Throws p2v::Error as confirm_by_closure does, and when the
// encoding does not apply (per_level_unsupported).
std::vector<EnumerationResult> confirm_by_symbolic_closure(
    const std::vector<smt::SolverKind>& kinds, const SearchProblem& p, const std::vector<engine::Program>& programs,
    int max_size, const SearchOptions& opt = {}, const std::function<std::string(const engine::Program&)>& name = {});

// The per-level encoding over bounds 1..max_size from the initial state, as enumerate_programs
// and find_shortest do with the concrete encoding: every valid program of the per-level encoding
// (blocking those found; the final unsat of every bound is its completeness), or the first bound
// with one. Its programs are those passing only states with a per-level form. enumerate_programs_
// per_level encodes the columns as summed levels when every program of the reference semantics up
// to max_size passes only states with them (checked on the reference graph first, so the solver's
// set is then complete only as far as that graph is right about the other states; three-level
// shape, CPU: z3 3.6 -> 1.8 s, cvc5 13.6 -> 8.5 s), else as column sets (and with
// SearchOptions::closure_column_sets); find_shortest_per_level always as column sets. Throws
// p2v::Error on unknown, or when the encoding does not apply.
EnumerationResult enumerate_programs_per_level(smt::SolverKind kind, const SearchProblem& p, int max_size,
                                               const SearchOptions& opt = {});
EnumerationResult find_shortest_per_level(smt::SolverKind kind, const SearchProblem& p, int max_size,
                                          const SearchOptions& opt = {});

}  // namespace p2v::encodings
