#include "runtime/tuner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <optional>
#include <set>

#include "support/dtype.hpp"

namespace zyntax {

namespace {

std::mutex g_mu;  // one search at a time: timings taken side by side would disturb each other
std::vector<TunedLaunch> g_launches;
std::set<std::pair<const Device*, uint64_t>> g_considered;
TuneOptions g_options;
std::optional<std::chrono::steady_clock::time_point> g_deadline;
std::atomic<uint64_t> g_runs{0};

// A candidate's timed runs last about this long (more runs for short kernels), at most kMostRuns.
constexpr double kTimedMs = 30;
constexpr int kMostRuns = 50;
// The final: the default and this many in all, timed in turns this many rounds.
constexpr size_t kFinalists = 3;
constexpr int kFinalRounds = 9;
// A turn of a short kernel is several runs, about this long, their mean:
// a single run of a fraction of a millisecond is much of it the timer's
// and the caches' noise, which decided a 3% margin either way.
constexpr double kTurnMs = 3;
constexpr int kMostTurnRuns = 16;

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? -1 : v[v.size() / 2];
}

// Knobs with different values, or set in one choice only.
int knob_distance(const TuningChoice& a, const TuningChoice& b) {
  int d = 0;
  for (const auto& [name, value] : a.knobs)
    if (!b.has(name) || b.get(name, 0) != value) ++d;
  for (const auto& [name, value] : b.knobs)
    if (!a.has(name)) ++d;
  return d;
}

}  // namespace

std::string compare_outputs(const Tensor& reference, const Tensor& candidate) {
  if (reference.dtype() != candidate.dtype() || reference.shape() != candidate.shape()) return "another dtype or shape";
  const int64_t n = reference.numel();
  if (!is_float(reference.dtype())) {
    return std::memcmp(reference.data(), candidate.data(), reference.nbytes()) == 0 ? "" : "integers differ";
  }
  // Reassociated sums round differently: a tolerance relative to the
  // output's magnitude, wider for narrow floats.
  double rtol = reference.dtype() == DType::F32 || reference.dtype() == DType::F64 ? 1e-3 : 3e-2;
  auto value = [](const Tensor& t, int64_t i) {
    return t.dtype() == DType::F32 ? static_cast<double>(t.data_as<float>()[i]) : t.get_f64(i);
  };
  double scale = 0;
  for (int64_t i = 0; i < n; ++i) {
    double r = value(reference, i);
    if (std::isfinite(r)) scale = std::max(scale, std::fabs(r));
  }
  for (int64_t i = 0; i < n; ++i) {
    double r = value(reference, i), c = value(candidate, i);
    if (std::isnan(r) != std::isnan(c)) return "element " + std::to_string(i) + ": " + std::to_string(c) + ", not " + std::to_string(r);
    if (std::isnan(r)) continue;
    if (std::isinf(r) || std::isinf(c)) {
      if (r != c) return "element " + std::to_string(i) + ": " + std::to_string(c) + ", not " + std::to_string(r);
      continue;
    }
    if (std::fabs(r - c) > rtol * (scale + std::fabs(r)))
      return "element " + std::to_string(i) + ": " + std::to_string(c) + ", not " + std::to_string(r);
  }
  return "";
}

TuneResult tune_kernel(Device& device, const cir::Kernel& kernel, uint64_t key, const std::vector<Tensor>& inputs,
                       const std::map<std::string, Scalar>& scalars, const TuneOptions& options, TuningDatabase& db,
                       std::vector<TuningCandidate> candidates, const RunTimer& timer) {
  auto start = std::chrono::steady_clock::now();
  if (candidates.empty()) candidates = device.tuning_candidates(kernel);
  TuneResult result;
  TuningKey tk = tuning_key(kernel, device.tuning_signature());
  TuningRecord& rec = result.record;
  rec.key = tk.hash(), rec.cir = tk.cir, rec.shapes = tk.shapes, rec.device = tk.device, rec.compiler = tk.compiler;
  rec.kernel = kernel.name;
  if (candidates.empty()) return result;

  Tensor reference;
  // One run of a candidate into a fresh output, timed; false where it did not run here.
  auto run_once = [&](const TuningChoice& choice, Tensor* out, std::string* outcome) -> double {
    std::function<bool()> run = [&]() {
      Device::Attempt a = device.execute_choice(kernel, key, choice, inputs, scalars);
      g_runs.fetch_add(1, std::memory_order_relaxed);
      if (a.outcome == Device::Outcome::Unsupported) {
        *outcome = "failed to compile or exceeds a limit";
        return false;
      }
      if (a.outcome == Device::Outcome::CheckFailed) {
        *outcome = "a runtime check failed";
        return false;
      }
      if (out) *out = std::move(a.result);
      return true;
    };
    if (timer) return timer(choice, run);
    auto t0 = std::chrono::steady_clock::now();
    if (!run()) return -1;
    double wall = seconds_since(t0) * 1e3;
    double own = device.last_kernel_milliseconds();
    return own >= 0 ? own : wall;
  };

  double best = -1, default_ms = -1;
  size_t timed = 0, best_index = 0;
  std::vector<bool> tried(candidates.size(), false);
  // Which candidate next: in the cost model's order for the first half of
  // the runs; then the neighbours of the fastest so far (the fewest knobs
  // changed, cheaper first), where the model's errors hide the best.
  const size_t ranked_first = (options.max_timed + 1) / 2;
  auto next = [&]() -> size_t {
    if (options.exhaustive || timed < ranked_first) {
      for (size_t i = 0; i < candidates.size(); ++i)
        if (!tried[i]) return i;
      return candidates.size();
    }
    size_t pick = candidates.size();
    int closest = 0;
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (tried[i]) continue;
      int d = knob_distance(candidates[i].choice, candidates[best_index].choice);
      if (pick == candidates.size() || d < closest) pick = i, closest = d;
    }
    return pick;
  };
  for (size_t i = next(); i < candidates.size(); i = next()) {
    tried[i] = true;
    const TuningCandidate& cand = candidates[i];
    bool is_default = i == 0;
    CandidateTiming t{cand.choice, cand.cost, -1, "ok"};
    if (!is_default && !options.exhaustive && (timed >= options.max_timed || seconds_since(start) > options.budget_seconds)) break;
    if (!is_default) ++timed;
    // The warm-up: compiles, and gives the output to compare.
    Tensor out;
    std::string outcome;
    try {
      auto warm_start = std::chrono::steady_clock::now();
      double first = run_once(cand.choice, &out, &outcome);
      t.warmup_ms = seconds_since(warm_start) * 1e3;
      if (first < 0) {
        t.outcome = outcome.empty() ? "did not run" : outcome;
        result.candidates.push_back(t);
        if (is_default) return result;  // the rules cannot run here: nothing to tune against
        continue;
      }
    } catch (const std::exception& e) {
      t.outcome = std::string("failed: ") + e.what();
      result.candidates.push_back(t);
      if (is_default) return result;
      continue;
    }
    if (is_default) {
      reference = out;
    } else if (std::string diff = compare_outputs(reference, out); !diff.empty()) {
      t.outcome = "wrong result: " + diff;
      result.candidates.push_back(t);
      continue;
    }
    // Short kernels get more runs: about kTimedMs of them, at least
    // `repetitions`. Each run of another candidate is followed by one of
    // the default, and the candidate's time is the default's times the
    // ratio of the two medians: a slow spell of a shared machine then
    // slows both alike, instead of ruling out whichever candidate it fell on.
    std::vector<double> runs, controls;
    int reps = std::max(options.repetitions, 1);
    auto scale = [&] { return is_default || controls.empty() ? 1.0 : default_ms / median(controls); };
    for (int r = 0; r < reps; ++r) {
      double ms = run_once(cand.choice, nullptr, &outcome);
      if (ms < 0) break;
      runs.push_back(ms);
      if (!is_default) {
        std::string control_outcome;
        double d = run_once(candidates[0].choice, nullptr, &control_outcome);
        if (d > 0) controls.push_back(d);
      }
      if (r == 0 && ms > 0 && !timer) reps = std::clamp(static_cast<int>(kTimedMs / ms), reps, kMostRuns);
      if (best > 0 && r == 0 && ms * scale() > options.cut_factor * best) {
        t.outcome = "cut";
        break;
      }
    }
    if (t.outcome == "ok") {
      t.ms = median(runs) * scale();
      if (is_default) default_ms = t.ms;
      if (best < 0 || t.ms < best) best = t.ms, best_index = i;
    }
    result.candidates.push_back(t);
  }
  rec.timed = static_cast<int>(result.candidates.size());
  // The final: the default and the fastest few timed again, taking turns
  // (a slow spell of a shared machine then falls on all of them alike); the
  // default stays unless beaten there by the margin.
  std::vector<const CandidateTiming*> finalists;
  for (const CandidateTiming& t : result.candidates)
    if (t.ms >= 0) finalists.push_back(&t);
  if (finalists.empty() || finalists[0] != &result.candidates[0]) finalists.clear();
  std::stable_sort(finalists.begin() + (finalists.empty() ? 0 : 1), finalists.end(),
                   [](const CandidateTiming* a, const CandidateTiming* b) { return a->ms < b->ms; });
  if (finalists.size() > kFinalists) finalists.resize(kFinalists);
  std::vector<std::vector<double>> turns(finalists.size());
  if (default_ms >= 0 && finalists.size() > 1) {
    std::string outcome;
    for (int round = 0; round < kFinalRounds; ++round)
      for (size_t f = 0; f < finalists.size(); ++f) {
        int runs = timer || finalists[f]->ms <= 0 ? 1 : std::clamp(static_cast<int>(kTurnMs / finalists[f]->ms), 1, kMostTurnRuns);
        double sum = 0;
        int done = 0;
        for (; done < runs; ++done) {
          double ms = run_once(finalists[f]->choice, nullptr, &outcome);
          if (ms < 0) break;
          sum += ms;
        }
        if (done == runs) turns[f].push_back(sum / runs);
      }
  }
  rec.default_ms = default_ms;
  rec.tuned_ms = default_ms;
  if (!turns.empty() && !turns[0].empty()) {
    rec.default_ms = rec.tuned_ms = median(turns[0]);
    for (size_t f = 0; f < finalists.size(); ++f)
      result.final.push_back({finalists[f]->choice, finalists[f]->cost, turns[f].empty() ? -1 : median(turns[f]), "final"});
    for (size_t f = 1; f < finalists.size(); ++f) {
      if (turns[f].empty()) continue;
      double ms = median(turns[f]);
      if (ms < rec.default_ms * (1 - options.margin) && ms < rec.tuned_ms) {
        rec.choice = finalists[f]->choice;
        rec.tuned_ms = ms;
      }
    }
  }
  result.seconds = seconds_since(start);
  if (default_ms >= 0) db.record(rec);
  return result;
}

std::vector<TunedLaunch> tuned_launches() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_launches;
}

void clear_tuned_launches() {
  std::lock_guard<std::mutex> lock(g_mu);
  g_launches.clear();
  g_considered.clear();
}

uint64_t tuning_runs_timed() { return g_runs.load(); }

void set_tune_options(const TuneOptions& options) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_options = options;
  g_deadline.reset();
  if (options.total_budget_seconds > 0)
    g_deadline = std::chrono::steady_clock::now() +
                 std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(options.total_budget_seconds));
}

void tune_if_needed(Device& device, const cir::Kernel& kernel, uint64_t key, const std::vector<Tensor>& inputs,
                    const std::map<std::string, Scalar>& scalars) {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_considered.count({&device, key})) return;
  }
  bool recorded = false;
  device.tuned_choice(kernel, key, &recorded);
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_considered.insert({&device, key}).second) return;
  TuningKey tk = tuning_key(kernel, device.tuning_signature());
  TunedLaunch launch{kernel.name, device.info().id, tk.shapes, {}, false};
  if (recorded) {
    if (std::optional<TuningRecord> r = TuningDatabase::global().find(tk.hash())) launch.record = *r;
    g_launches.push_back(launch);
    return;
  }
  std::vector<TuningCandidate> candidates = device.tuning_candidates(kernel);
  if (candidates.size() <= 1) return;  // nothing to choose
  launch.candidates = candidates.size();
  TuneOptions options = g_options;
  if (g_deadline) {
    double left = std::chrono::duration<double>(*g_deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      launch.skipped = "over the budget";
      g_launches.push_back(launch);
      return;
    }
    options.budget_seconds = left;  // a whole budget given: a kernel may take what is left of it
  }
  TuneResult r = tune_kernel(device, kernel, key, inputs, scalars, options, TuningDatabase::global(), candidates);
  launch.record = r.record;
  launch.searched = true;
  launch.seconds = r.seconds;
  launch.timings = r.candidates;
  launch.final = r.final;
  if (options.compare_exhaustive) {
    TuningDatabase scratch("", tuning_compiler_version());
    TuneOptions all = options;
    all.exhaustive = true;
    all.cut_factor = 1e30;  // every candidate to the end: the true best
    all.margin = 0;
    TuneResult e = tune_kernel(device, kernel, key, inputs, scalars, all, scratch, candidates);
    // The search's candidates were compiled already: what their compiles
    // cost the search is counted as the exhaustive search would pay it.
    double reused_ms = 0;
    for (const CandidateTiming& s : r.candidates)
      for (const CandidateTiming& x : e.candidates)
        if (x.choice == s.choice) reused_ms += std::max(0.0, s.warmup_ms - x.warmup_ms);
    launch.exhaustive_seconds = e.seconds + reused_ms / 1e3;
    // The two choices head to head, in turns: the search's first.
    launch.exhaustive_ms = launch.exhaustive_chosen_ms = e.record.tuned_ms;
    if (e.record.choice != r.record.choice) {
      TuneResult h = tune_kernel(device, kernel, key, inputs, scalars, all, scratch,
                                 {{r.record.choice, 0}, {e.record.choice, 1}});
      launch.exhaustive_chosen_ms = h.record.default_ms;
      launch.exhaustive_ms = std::min(h.record.default_ms, h.record.tuned_ms);
    }
  }
  g_launches.push_back(launch);
}

}  // namespace zyntax
