// A point of a schedule's tuning space: named integer knobs, such as a
// matrix product's register block and panel sizes ("mr=8 nr=32 kc=256").
// The empty choice is the schedule's own rules. Plans take a choice as an
// input (plan/cpu_tuning, plan/gpu_tuning say what each knob means); the
// tuner (runtime/tuner) times candidates and the tuning database
// (runtime/tuning_database) keeps the winner per kernel, shape and device.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zyntax {

struct TuningChoice {
  std::map<std::string, int64_t> knobs;

  bool empty() const { return knobs.empty(); }
  bool has(const std::string& name) const { return knobs.count(name) != 0; }
  int64_t get(const std::string& name, int64_t otherwise) const;
  // "kc=256 mc=240 mr=8 nr=32" (knobs in name order); "default" when empty.
  std::string text() const;
  // text()'s inverse; none for anything else.
  static std::optional<TuningChoice> parse(std::string_view text);

  // `key` (a kernel's hash) made distinct per choice: where a device caches
  // what it builds for a kernel and a choice; the empty choice keeps `key`.
  uint64_t keyed(uint64_t key) const;

  bool operator==(const TuningChoice& o) const { return knobs == o.knobs; }
  bool operator!=(const TuningChoice& o) const { return knobs != o.knobs; }
};

// A candidate of a space and the cost model's estimate of its time (in the
// model's own units: only the order matters; lower is better).
struct TuningCandidate {
  TuningChoice choice;
  double cost = 0;
};

// The candidates in the order to try them: the default (empty choice)
// first, then the rest by cost, ties kept in the order given.
void rank_candidates(std::vector<TuningCandidate>& candidates);

}  // namespace zyntax
