// The tuner: finds the fastest schedule choice for a kernel on a device by
// timing candidates with the kernel's real inputs, and keeps the winner in
// the tuning database (runtime/tuning_database).
//
//   1. the device's candidates (Device::tuning_candidates): the default (its
//      rules) first, the rest ranked by its cost model;
//   2. the default timed (a warm-up run that compiles, then the median of
//      several), its output kept as the reference;
//   3. others timed the same way, in turns with the default (their time is
//      the default's times their ratio to it), within the budget: the first half of them
//      in the cost model's order, the rest the fastest one's neighbours
//      (the fewest knobs changed), where the model's errors hide the best.
//      One that fails to compile or exceeds a limit is recorded as such and
//      skipped; one whose output differs from the default's beyond rounding
//      is rejected; one whose first run is 3x slower than the best so far is
//      cut short;
//   4. the final: the default and the two fastest timed again, taking turns
//      over several rounds; the fastest there wins if it beats the default
//      by the margin (3%), else the default stays; either way the result is
//      recorded, so that the kernel is not timed again.
// Every run gets a fresh output (in-place kernels, whose output starts
// zeroed, are timed on their own copy each time).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "runtime/device.hpp"
#include "runtime/tuning_database.hpp"

namespace zyntax {

struct TuneOptions {
  double budget_seconds = 20;  // per kernel, timing and compiling included (with a total budget: what is left of it)
  size_t max_timed = 8;        // candidates timed besides the default
  int repetitions = 5;         // timed runs per candidate (the median counts)
  double margin = 0.03;        // a winner beats the default by this share
  double cut_factor = 3;       // a candidate this much slower than the best is cut short
  bool exhaustive = false;     // time every candidate (to check the search against)
  // `on` mode: after each search, an exhaustive one over the same
  // candidates, recorded nowhere (`zyntax tune --compare-exhaustive`).
  bool compare_exhaustive = false;
  double total_budget_seconds = 0;  // `on` mode: searches stop once this much is spent (0: no limit)
};

struct CandidateTiming {
  TuningChoice choice;
  double cost = 0;        // the cost model's estimate
  double ms = -1;         // median (the default's, times the candidate's ratio to it timed in turns); -1 where it did not run to the end
  std::string outcome;    // "ok", "cut", "failed to compile", "wrong result: ...", "over budget"
  double warmup_ms = 0;   // the first run's wall time: its compile included
};

struct TuneResult {
  TuningRecord record;
  std::vector<CandidateTiming> candidates;  // in the order timed
  std::vector<CandidateTiming> final;       // the final's medians: the default first
  double seconds = 0;                       // the search's wall time
};

// A clock for timed runs: a run's milliseconds. The default times the
// device's run (the device's own timer where it keeps one, else the wall
// clock); tests give a model instead.
using RunTimer = std::function<double(const TuningChoice&, const std::function<bool()>& run)>;

// Searches and records. `candidates` empty: the device's own.
TuneResult tune_kernel(Device& device, const cir::Kernel& kernel, uint64_t key, const std::vector<Tensor>& inputs,
                       const std::map<std::string, Scalar>& scalars, const TuneOptions& options, TuningDatabase& db,
                       std::vector<TuningCandidate> candidates = {}, const RunTimer& timer = {});

// Outputs equal up to what reassociated sums round differently: exactly for
// integers and booleans; floats within a relative tolerance of the output's
// magnitude, NaN where NaN. "" when they agree, else where they differ.
std::string compare_outputs(const Tensor& reference, const Tensor& candidate);

// The tuning of one launch seen by this process (for `zyntax tune`'s table).
struct TunedLaunch {
  std::string kernel, device, shapes;
  TuningRecord record;
  bool searched = false;  // timed now (false: the database had it)
  std::string skipped;    // why it was not searched, where it was not and had no record
  double seconds = 0;     // the search's time
  size_t candidates = 0;  // in the space the search chose from
  std::vector<CandidateTiming> timings;  // the search's, in the order timed
  std::vector<CandidateTiming> final;    // the final's
  // With compare_exhaustive: the best of every candidate, and its time.
  // exhaustive_chosen_ms: the tuner's choice as the exhaustive search timed it (side by side with the rest).
  // exhaustive_seconds: its wall time, plus the compiles it found done (the
  // search's candidates, whose plans it reused), as the search paid them.
  double exhaustive_ms = -1, exhaustive_chosen_ms = -1, exhaustive_seconds = 0;
};
std::vector<TunedLaunch> tuned_launches();
void clear_tuned_launches();

// How many candidate runs this process has timed (tests check a warm
// database times none).
uint64_t tuning_runs_timed();

// Where Device::run asks in `on` mode: a kernel with no record and
// something to tune is tuned now, with these inputs, and recorded (once per
// device and kernel in a process).
void tune_if_needed(Device& device, const cir::Kernel& kernel, uint64_t key, const std::vector<Tensor>& inputs,
                    const std::map<std::string, Scalar>& scalars);

// Options for `on` mode's searches (`zyntax tune --budget`).
void set_tune_options(const TuneOptions& options);

}  // namespace zyntax
