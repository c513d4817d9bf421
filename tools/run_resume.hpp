#pragma once
// p2v run --resume (docs/sweeps.md "Results written as they come"): which (program, matrix, size) runs a --csv or
// --csv-programs file already holds, so that a rerun of an interrupted sweep skips them.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace p2v::tools {

// A completed run's identity: the system, ranks, backend, dtype and iterations it ran with, the
// matrix ("2 2;2 8"), the program and the buffer bytes per rank (runtime::buffer_bytes).
std::string run_key(const std::string& system, std::int64_t ranks, const std::string& backend, const std::string& dtype,
                    int iters, const std::string& matrix, const std::string& program, std::int64_t bytes);

struct DoneRun {
  double median_s = 0, baseline_s = 0;  // baseline 0: not measured
};

// The runs recorded in `csv` (its "# total" lines, which p2v run writes after each run's step
// rows in the same atomic append) and/or `csv_programs` (one row per run); with both, a run counts
// as done only if both files hold it. A file that does not exist holds nothing. Throws p2v::Error
// for a file that cannot be read or a line that does not parse.
std::map<std::string, DoneRun> completed_runs(const std::string& csv, const std::string& csv_programs);

// Whether `csv_programs` (missing: empty) already holds the run `key`. p2v run appends a run to
// --csv-programs before --csv, so a run interrupted between the two is in --csv-programs only: not
// done, run again by --resume, which then appends it to --csv alone (no row twice in either file).
bool programs_csv_holds(const std::string& csv_programs, const std::string& key);

}  // namespace p2v::tools
