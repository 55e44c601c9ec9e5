// Schedule tuning: choices as text, the CPU's tuning space (every candidate
// a legal plan that computes what the default computes), the tuning
// database (keys that miss on any change, corrupt files, concurrent
// writers, compaction, import/export), the search (against an exhaustive
// one, on a modelled clock), and tuning through Device::run (a warm
// database times nothing).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "backends/reference/reference_executor.hpp"
#include "backends/registry.hpp"
#include "cir/hash.hpp"
#include "cir/passes/specialize.hpp"
#include "codegen/llvm/cpu/cpu_jit.hpp"
#include "kernel_source.hpp"
#include "plan/cpu_plan.hpp"
#include "plan/cpu_tuning.hpp"
#include "runtime/launch.hpp"
#include "runtime/tensor_ops.hpp"
#include "runtime/tuner.hpp"
#include "runtime/tuning_database.hpp"

namespace zyntax {
namespace {

using testing::kernel_of;

const char* const kMatmul = testing::kPlainMatmul;
const char* kScale =
    "def f(x: tensor[N, f32]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..N:\n  out[i] = x[i] * 2.0 + 1.0\n }\n}";
// Accumulates into an output that starts zeroed: each timed run must get its own.
const char* kScatterAdd =
    "def f(x: tensor[N, f32], idx: tensor[N, i64]) {\n return compute(x, idx) {\n @kernel fused\n"
    " out = zeros(N)\n for i in 0..N:\n  out[idx[i]] += x[i]\n }\n}";

std::string temp_dir(const std::string& name) {
  std::string d = std::filesystem::temp_directory_path().string() + "/zyntax-tuning-" + name + "-" + std::to_string(::getpid());
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

TuningRecord record_for(const TuningKey& k, const std::string& choice) {
  TuningRecord r;
  r.key = k.hash(), r.cir = k.cir, r.shapes = k.shapes, r.device = k.device, r.compiler = k.compiler;
  r.kernel = "f";
  r.choice = *TuningChoice::parse(choice);
  r.default_ms = 2, r.tuned_ms = 1, r.timed = 3;
  return r;
}

cir::Kernel matmul(int64_t m, int64_t k, int64_t n) {
  return cir::specialize(kernel_of(kMatmul), {{"M", m}, {"K", k}, {"N", n}});
}

TEST(TuningChoice, TextRoundTripsAndGarbageIsRefused) {
  TuningChoice c;
  c.knobs = {{"nr", 32}, {"kc", 256}, {"mr", 8}};
  EXPECT_EQ(c.text(), "kc=256 mr=8 nr=32");
  EXPECT_EQ(TuningChoice::parse(c.text()), c);
  EXPECT_EQ(TuningChoice().text(), "default");
  EXPECT_TRUE(TuningChoice::parse("default")->empty());
  for (const char* bad : {"", "kc", "kc=", "=4", "kc=4x", "kc=1 kc=2", "k-c=3", "kc=99999999999999999999"})
    EXPECT_FALSE(TuningChoice::parse(bad).has_value()) << bad;
}

TEST(CpuTuningSpace, DefaultComesFirstAndTheRestByCost) {
  for (const cir::Kernel& k : {matmul(128, 512, 512), matmul(1, 512, 512), cir::specialize(kernel_of(kScale), {{"N", 100000}})}) {
    std::vector<TuningCandidate> space = cpu_tuning_space(k, 4, 512);
    ASSERT_GT(space.size(), 2u) << k.name;
    EXPECT_TRUE(space[0].choice.empty());
    for (size_t i = 2; i < space.size(); ++i) EXPECT_LE(space[i - 1].cost, space[i].cost);
    for (const TuningCandidate& c : space)
      for (const auto& [name, value] : c.choice.knobs) EXPECT_TRUE(is_cpu_knob(name)) << name;
  }
  EXPECT_EQ(cpu_tuning_space(matmul(300, 300, 300), 2, 256, 10).size(), 10u);
}

// The differential test of tuned plans: every candidate of a space, on the
// cpu device, against the reference executor (products of odd sizes, a
// matrix-vector product, an element-wise map, an accumulating scatter).
TEST(CpuTuningSpace, EveryCandidateComputesWhatTheReferenceDoes) {
  Device* cpu = device_registry().find("cpu");
  ASSERT_NE(cpu, nullptr);
  Random rng(5);
  std::vector<testing::KernelCase> cases;
  for (auto [m, k, n] : {std::tuple{37, 53, 71}, std::tuple{1, 301, 257}, std::tuple{130, 9, 66}}) {
    cases.push_back({matmul(m, k, n), {rand_uniform(rng, DType::F32, {m, k}, -1, 1), rand_uniform(rng, DType::F32, {k, n}, -1, 1)}});
  }
  cases.push_back({cir::specialize(kernel_of(kScale), {{"N", 5001}}), {rand_uniform(rng, DType::F32, {5001}, -1, 1)}});
  Tensor idx = Tensor::zeros(DType::I64, {999});
  for (int64_t i = 0; i < 999; ++i) idx.set(i, Scalar::of_int((i * 7) % 999 / 3, DType::I64));
  cases.push_back({cir::specialize(kernel_of(kScatterAdd), {{"N", 999}}), {rand_uniform(rng, DType::F32, {999}, -1, 1), idx}});
  for (const testing::KernelCase& c : cases) {
    Tensor want = ReferenceKernel(c.kernel).run(c.inputs, {});
    std::vector<TuningCandidate> space = cpu_tuning_space(c.kernel, 3, codegen::CpuJit::instance().target().vector_bits, 24);
    ASSERT_GT(space.size(), 1u);
    for (const TuningCandidate& cand : space) {
      SCOPED_TRACE(c.kernel.name + " " + cand.choice.text());
      Device::Attempt a = cpu->execute_choice(c.kernel, cir::hash_kernel(c.kernel), cand.choice, c.inputs, {});
      ASSERT_EQ(a.outcome, Device::Outcome::Done) << c.kernel.name << " " << cand.choice.text();
      EXPECT_EQ(compare_outputs(want, a.result), "") << c.kernel.name << " " << cand.choice.text();
    }
  }
}

// A choice the plans do not take (a hand-edited or foreign record) is
// refused, never run: the tuner sees Unsupported, a launch the rules' plan.
TEST(CpuTuningSpace, ChoicesThePlansDoNotTakeAreRefused) {
  Device* cpu = device_registry().find("cpu");
  cir::Kernel k = matmul(40, 40, 96);
  Random rng(4);
  std::vector<Tensor> in = {rand_uniform(rng, DType::F32, {40, 40}), rand_uniform(rng, DType::F32, {40, 96})};
  int lanes = codegen::CpuJit::instance().target().vector_bits / 32;
  for (const std::string& bad : {"nr=" + std::to_string(3 * lanes), "nr=" + std::to_string(lanes + 1), std::string("mr=0"), std::string("mr=33"), std::string("zz=1")}) {
    Device::Attempt a = cpu->execute_choice(k, cir::hash_kernel(k), *TuningChoice::parse(bad), in, {});
    EXPECT_EQ(a.outcome, Device::Outcome::Unsupported) << bad;
  }
}

TEST(TuningDatabase, RecordsAreFoundAgainFromDiskAndAnyChangeMisses) {
  std::string dir = temp_dir("keys");
  cir::Kernel k = matmul(64, 64, 64);
  TuningKey key = tuning_key(k, "cpu model | 4 cores");
  {
    TuningDatabase db(dir, key.compiler);
    db.record(record_for(key, "kc=128 mr=8 nr=32"));
  }
  TuningDatabase db(dir, key.compiler);
  std::optional<TuningRecord> r = db.find(key.hash());
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->choice.text(), "kc=128 mr=8 nr=32");
  EXPECT_EQ(r->shapes, "f32[64,64] f32[64,64] -> f32[64,64]");
  // Names do not matter; shapes, dtypes, the device and the compiler do.
  std::string renamed = kMatmul;
  renamed.replace(renamed.find("def f("), 6, "def g(");
  EXPECT_EQ(tuning_key(cir::specialize(kernel_of(renamed), {{"M", 64}, {"K", 64}, {"N", 64}}), key.device).hash(), key.hash());
  EXPECT_FALSE(db.find(tuning_key(matmul(64, 64, 65), key.device).hash()));
  std::string f16 = kMatmul;
  f16.replace(f16.find("B: tensor[K, N, f32]"), 20, "B: tensor[K, N, f16]");
  EXPECT_FALSE(db.find(tuning_key(cir::specialize(kernel_of(f16), {{"M", 64}, {"K", 64}, {"N", 64}}), key.device).hash()));
  EXPECT_FALSE(db.find(tuning_key(k, "cpu model | 8 cores").hash()));
  TuningDatabase newer(dir, key.compiler + " (newer)");
  TuningKey as_newer = key;
  as_newer.compiler += " (newer)";
  EXPECT_FALSE(newer.find(as_newer.hash()));
  EXPECT_TRUE(newer.records().empty());  // the old compiler's record is stale there
  std::filesystem::remove_all(dir);
}

TEST(TuningDatabase, CorruptLinesAreIgnoredAndTheRestIsRead) {
  std::string dir = temp_dir("corrupt");
  TuningKey a = tuning_key(matmul(32, 32, 32), "d"), b = tuning_key(matmul(32, 32, 48), "d");
  TuningRecord forged = record_for(b, "kc=64");
  forged.shapes = "f32[1] -> f32[1]";  // its key no longer matches its fields
  {
    std::ofstream out(dir + "/records.jsonl");
    out << "not json at all\n" << record_for(a, "mc=96").json() << "\n{\"key\": 5}\n" << forged.json() << "\n\x01\x02\xff\n";
    out << record_for(b, "nc=512").json().substr(0, 40);  // a line being appended: no newline yet
  }
  ::testing::internal::CaptureStderr();
  TuningDatabase db(dir, a.compiler);
  ASSERT_TRUE(db.find(a.hash()).has_value());
  EXPECT_EQ(db.find(a.hash())->choice.text(), "mc=96");
  EXPECT_FALSE(db.find(b.hash()).has_value());
  std::string warnings = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(warnings.find("records.jsonl:1: tuning record ignored: not a JSON object"), std::string::npos) << warnings;
  EXPECT_NE(warnings.find("records.jsonl:3: tuning record ignored: no string 'key'"), std::string::npos) << warnings;
  EXPECT_NE(warnings.find("records.jsonl:4: tuning record ignored: its key does not match its fields"), std::string::npos) << warnings;
  EXPECT_EQ(warnings.find("records.jsonl:6"), std::string::npos) << "a partial last line is not warned of: " << warnings;
  // Still writable, and what is written reads back.
  db.record(record_for(b, "nc=512"));
  TuningDatabase again(dir, a.compiler);
  ::testing::internal::CaptureStderr();
  std::optional<TuningRecord> found = again.find(b.hash());
  ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(found.has_value()) << "a record appended after an unfinished line is a line of its own";
  EXPECT_EQ(found->choice.text(), "nc=512");
  std::filesystem::remove_all(dir);
}

TEST(TuningDatabase, ConcurrentWritersLoseNothing) {
  std::string dir = temp_dir("concurrent");
  const int kProcesses = 4, kEach = 40;
  std::vector<TuningKey> keys;
  for (int i = 0; i < kProcesses * kEach; ++i) keys.push_back(TuningKey{"c" + std::to_string(i), "s", "d", "v"});
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      TuningDatabase db(dir, "v");
      for (int i = 0; i < kEach; ++i) db.record(record_for(keys[p * kEach + i], "tasks=" + std::to_string(i + 1)));
      ::_exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  TuningDatabase db(dir, "v");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(db.records().size(), keys.size());
  for (int p = 0; p < kProcesses; ++p)
    for (int i = 0; i < kEach; ++i) EXPECT_EQ(db.find(keys[p * kEach + i].hash())->choice.get("tasks", 0), i + 1);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");  // every line whole
  std::filesystem::remove_all(dir);
}

TEST(TuningDatabase, SupersededRecordsAreCompactedAwayAndExportImportRoundTrips) {
  std::string dir = temp_dir("compact");
  TuningKey k{"c", "s", "d", "v"};
  TuningDatabase db(dir, "v");
  for (int i = 1; i <= 600; ++i) db.record(record_for(k, "tasks=" + std::to_string(i)));
  size_t lines = 0;
  std::ifstream in(dir + "/records.jsonl");
  for (std::string line; std::getline(in, line);) ++lines;
  EXPECT_LT(lines, 300u);
  TuningDatabase reread(dir, "v");
  EXPECT_EQ(reread.find(k.hash())->choice.get("tasks", 0), 600);

  std::string exported = reread.export_lines();
  std::string other = temp_dir("import");
  TuningDatabase target(other, "v");
  EXPECT_EQ(target.import_lines(exported, "exported.jsonl"), 1u);
  EXPECT_EQ(TuningDatabase(other, "v").find(k.hash())->choice.get("tasks", 0), 600);
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(other);
}

// The search on a modelled clock: candidates whose true times are random,
// ranked by an imperfect model (within a factor 1.25 of the truth). The
// search times at most a fifth of the space and lands within 5% of the best
// that timing every candidate finds.
TEST(Tuner, SearchComesWithinFivePercentOfExhaustiveInAFifthOfTheRuns) {
  Device* cpu = device_registry().find("cpu");
  cir::Kernel k = cir::specialize(kernel_of(kScale), {{"N", 4096}});
  Random rng(3);
  std::vector<Tensor> inputs = {rand_uniform(rng, DType::F32, {4096}, -1, 1)};
  std::mt19937 gen(11);
  for (int trial = 0; trial < 20; ++trial) {
    // The real space's choices, with modelled times and costs.
    std::vector<TuningCandidate> space = cpu_tuning_space(k, 4, 256);
    std::uniform_real_distribution<double> truth(1, 10), model_error(0.8, 1.25);
    std::map<std::string, double> time;
    for (TuningCandidate& c : space) {
      time[c.choice.text()] = truth(gen);
      c.cost = time[c.choice.text()] * model_error(gen);
    }
    rank_candidates(space);
    RunTimer clock = [&](const TuningChoice& c, const std::function<bool()>& run) { return run() ? time.at(c.text()) : -1.0; };
    TuningDatabase db("", "v");
    TuneOptions search;
    search.max_timed = std::max<size_t>(1, space.size() / 5 - 1);  // with the default: a fifth
    search.margin = 0;
    TuneResult r = tune_kernel(*cpu, k, 77, inputs, {}, search, db, space, clock);
    TuneOptions all = search;
    all.exhaustive = true;
    all.cut_factor = 1e30;
    TuneResult e = tune_kernel(*cpu, k, 77, inputs, {}, all, db, space, clock);
    double best = 1e30;
    for (const CandidateTiming& t : e.candidates) {
      EXPECT_GE(t.ms, 0) << t.choice.text() << ": " << t.outcome;
      best = std::min(best, t.ms);
    }
    EXPECT_EQ(e.candidates.size(), space.size());
    EXPECT_LE(r.candidates.size() * 5, space.size()) << "trial " << trial;
    EXPECT_LE(r.record.tuned_ms, best * 1.05 + 1e-9) << "trial " << trial;
  }
}

// A slow spell of a shared machine that falls on the best candidate's
// timing (every run 3x slower) slows the default's runs taken in turns
// with it alike: the candidate still reaches the final and wins there.
TEST(Tuner, ASlowSpellDoesNotRuleOutTheCandidateItFallsOn) {
  Device* cpu = device_registry().find("cpu");
  cir::Kernel k = cir::specialize(kernel_of(kScale), {{"N", 4096}});
  Random rng(3);
  std::vector<Tensor> inputs = {rand_uniform(rng, DType::F32, {4096}, -1, 1)};
  std::vector<TuningCandidate> space = cpu_tuning_space(k, 4, 256);
  ASSERT_GT(space.size(), 3u);
  const std::string fastest = space[1].choice.text();  // timed first after the default
  int runs = 0;
  RunTimer clock = [&](const TuningChoice& c, const std::function<bool()>& run) {
    if (!run()) return -1.0;
    double ms = c.empty() ? 10.0 : c.text() == fastest ? 8.0 : 12.0;
    ++runs;
    return runs > 6 && runs <= 30 ? 3 * ms : ms;  // after the default's warm-up and 5 runs
  };
  TuningDatabase db("", "v");
  TuneOptions o;
  o.max_timed = 3;
  TuneResult r = tune_kernel(*cpu, k, 78, inputs, {}, o, db, space, clock);
  ASSERT_GE(r.candidates.size(), 2u);
  EXPECT_EQ(r.candidates[1].choice.text(), fastest);
  EXPECT_NEAR(r.candidates[1].ms, 8.0, 1e-9);
  EXPECT_EQ(r.record.choice.text(), fastest);
}

// Accumulating kernels are timed on fresh outputs: no candidate sees another's sums.
TEST(Tuner, InPlaceKernelsGetFreshOutputsEachRun) {
  Device* cpu = device_registry().find("cpu");
  cir::Kernel k = cir::specialize(kernel_of(kScatterAdd), {{"N", 4099}});
  Random rng(9);
  Tensor idx = Tensor::zeros(DType::I64, {4099});
  for (int64_t i = 0; i < 4099; ++i) idx.set(i, Scalar::of_int(i % 17, DType::I64));
  std::vector<Tensor> inputs = {rand_uniform(rng, DType::F32, {4099}, 0, 1), idx};
  TuningDatabase db("", "v");
  TuneOptions o;
  o.repetitions = 3;
  TuneResult r = tune_kernel(*cpu, k, 0xacc, inputs, {}, o, db);
  ASSERT_GT(r.candidates.size(), 1u);
  for (const CandidateTiming& t : r.candidates) EXPECT_TRUE(t.outcome == "ok" || t.outcome == "cut") << t.choice.text() << ": " << t.outcome;
  EXPECT_TRUE(db.find(r.record.key).has_value());
}

// Device::run with tuning on: the first launch searches and records; with
// the record there (a warm database), no candidate is timed again, and the
// launch runs the recorded plan.
TEST(Tuner, AWarmDatabaseTimesNothing) {
  Device* cpu = device_registry().find("cpu");
  cir::Kernel k = matmul(61, 47, 83);  // a shape no other test tunes
  Random rng(2);
  std::vector<Tensor> inputs = {rand_uniform(rng, DType::F32, {61, 47}, -1, 1), rand_uniform(rng, DType::F32, {47, 83}, -1, 1)};
  Tensor want = ReferenceKernel(k).run(inputs, {});
  TuneOptions quick;
  quick.max_timed = 3;
  quick.repetitions = 2;
  set_tune_options(quick);
  set_tune_mode(TuneMode::On);
  clear_tuned_launches();
  uint64_t key = 0x7a11 + static_cast<uint64_t>(::getpid());
  uint64_t before = tuning_runs_timed();
  bool recorded_before = false;
  cpu->tuned_choice(k, key, &recorded_before);
  EXPECT_EQ(compare_outputs(want, cpu->run(k, key, inputs, {})), "");
  if (!recorded_before) {
    EXPECT_GT(tuning_runs_timed(), before);
  }
  clear_tuned_launches();  // as a new process would
  uint64_t warm = tuning_runs_timed();
  EXPECT_EQ(compare_outputs(want, cpu->run(k, key, inputs, {})), "");
  EXPECT_EQ(tuning_runs_timed(), warm);
  std::vector<TunedLaunch> seen = tuned_launches();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_FALSE(seen[0].searched);
  bool recorded = false;
  cpu->tuned_choice(k, key, &recorded);
  EXPECT_TRUE(recorded);
  set_tune_mode(TuneMode::Cached);
  set_tune_options({});
}

}  // namespace
}  // namespace zyntax
