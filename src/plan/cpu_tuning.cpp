#include "plan/cpu_tuning.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>

#include "cir/flop_count.hpp"
#include "cir/passes/scalarize_tiles.hpp"
#include "cir/passes/schedule_matmul.hpp"
#include "cir/printer.hpp"
#include "plan/cpu_plan.hpp"
#include "plan/kernel_support.hpp"

namespace zyntax {

namespace {

// The data caches of the first core, from sysfs; typical sizes where it says nothing.
struct Caches {
  double l1 = 32 << 10, l2 = 1 << 20, l3_per_core = 2 << 20;
  int l1_ways = 8;
};

double sysfs_size(int index) {
  std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/size");
  std::string s;
  if (!(in >> s) || s.empty()) return 0;
  double v = std::atof(s.c_str());
  if (s.back() == 'K') v *= 1024;
  if (s.back() == 'M') v *= 1024 * 1024;
  return v;
}

int sysfs_ways(int index) {
  std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/ways_of_associativity");
  int ways = 0;
  return in >> ways ? ways : 0;
}

const Caches& caches() {
  static const Caches c = [] {
    Caches c;
    if (double l1 = sysfs_size(0)) c.l1 = l1;  // index0: L1 data
    if (int ways = sysfs_ways(0)) c.l1_ways = ways;
    if (double l2 = sysfs_size(2)) c.l2 = l2;
    if (double l3 = sysfs_size(3)) c.l3_per_core = std::min(l3, 4.0 * c.l2);  // a share of a shared L3
    return c;
  }();
  return c;
}

double ceil_div(double a, double b) { return std::ceil(a / b); }

// Cycles per thread for a product blocked as `z` on `threads` threads with
// `lanes` floats per vector: the register block's k steps at the slower of
// its multiply-adds and its loads (two of each per cycle), slowed where its
// panels miss their cache; packing and passes over C; tasks over threads.
double product_cycles(const cir::MatMulBlocking& z, int threads, int lanes, int registers) {
  double vec_cols = static_cast<double>(z.NR) / lanes;
  if (z.MR * vec_cols + vec_cols + 1 > registers) return 1e30;  // spills: never
  double fma = z.MR * vec_cols / 2, loads = (z.MR + vec_cols) / 2;
  double step = std::max(fma, loads) + 1.0;  // the loop's own overhead
  double tasks = static_cast<double>(z.batch * z.gm * z.gn);
  double task_m = ceil_div(ceil_div(z.M, z.MR), z.gm) * z.MR, task_n = ceil_div(ceil_div(z.N, z.NR), z.gn) * z.NR;
  // The product's last column panel may do less than a whole one (in the last group's task).
  double blocks = ceil_div(task_m, z.MR) * (ceil_div(task_n, z.NR) - (z.gn == 1 ? 1 - z.last_panel_share() : 0.0));
  double compute = blocks * z.K * step;
  const Caches& c = caches();
  double slow = 1;
  if ((z.KC * (z.NR + z.MR)) * 4.0 > 0.75 * c.l1) slow *= 1.2;     // the micro-panels leave L1
  if (!z.a_in_place && z.MC * z.KC * 4.0 > 0.5 * c.l2) slow *= 1.15;  // A's block leaves L2
  if (!z.b_in_place && z.KC * z.NC * 4.0 > c.l3_per_core) slow *= 1.1;
  if (z.b_in_place) slow *= 1.05;  // strided rows of B: more TLB and prefetch misses than a packed panel
  // Rows in the same few L1 sets: conflict misses. A's MR rows are read
  // together, a line of each at a time: they fit where L1 has ways for
  // them and B's two lines (4096x4096x64 with 8 rows read in place, 12
  // ways: 1.4x faster than packed; 12 rows: slower than packed).
  if (z.b_aliased || (z.a_aliased && z.MR + 2 > c.l1_ways)) slow *= 2;
  double pack = 0;
  if (!z.b_in_place && !z.window) pack += task_n * z.K * 0.5;                  // B once per task
  if (!z.a_in_place) pack += task_m * z.K * ceil_div(task_n, z.NC) * 0.5;     // A once per column block
  double c_passes = task_m * task_n * ceil_div(z.K, z.KC) * 1.0;             // C read and written per depth block
  double per_task = compute * slow + pack + c_passes + 2000;                   // + a task's start
  return per_task * ceil_div(tasks, threads);
}

// Cycles per thread for other kernels: their operations spread over the
// tasks the plan makes, a task's start, and waking the pool.
double loop_cycles(double work, int64_t tasks, int threads, bool one_thread) {
  if (one_thread) return work;
  double t = std::max<int64_t>(tasks, 1);
  return work / t * ceil_div(t, threads) + t * 300 / threads + 20000;
}

void add(std::vector<TuningCandidate>& out, TuningChoice c, double cost) { out.push_back({std::move(c), cost}); }

// Whether the knob changes the kernel's plan (the rules' against `knob=1`).
bool knob_changes_plan(const cir::Kernel& kernel, int threads, int vector_bits, const std::string& knob) {
  try {
    CpuPlan rules = plan_cpu_kernel(kernel, threads, vector_bits), plain = plan_cpu_kernel(kernel, threads, vector_bits, {{{knob, 1}}});
    return rules.kernel && plain.kernel && cir::print(*rules.kernel) != cir::print(*plain.kernel);
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

bool is_cpu_knob(const std::string& name) {
  static const std::set<std::string> knobs = {"mr", "nr", "kc", "mc", "nc", "ain", "bin", "rows", "tasks", "block", "chunks", "one", "jam", "sumrows"};
  return knobs.count(name) != 0;
}

std::vector<TuningCandidate> cpu_tuning_space(const cir::Kernel& kernel, int threads, int vector_bits, size_t limit) {
  std::vector<TuningCandidate> out;
  const int lanes = std::max(vector_bits / 32, 1), registers = vector_bits >= 512 ? 32 : 16;
  cir::MatMulSchedule base = cir::cpu_matmul_schedule(vector_bits, threads);
  std::optional<cir::Kernel> scalar;
  const cir::Kernel* k = &kernel;
  if (cpu_unsupported_reason(kernel) && kernel.dims.empty()) {
    scalar = cir::scalarize_tiles(kernel, nullptr);
    if (scalar) k = &*scalar;
  }
  std::optional<double> work = cir::count_operations(*k);
  double ops = work ? *work : 0;

  // Products: every register block that fits the registers, panels
  // around the cache sizes, in place or packed, row groups; choices that
  // block a product alike are one candidate.
  std::vector<cir::MatMulSchedule> schedules = {base};
  std::vector<TuningChoice> choices = {{}};
  std::vector<std::pair<int, int>> blocks;
  for (int nv : {1, 2, 4})  // B's panels are copied half a panel at a time: whole vectors of a power of two
    for (int mr : {2, 4, 6, 8, 10, 12, 14, 16})
      if (mr * nv + nv + 1 <= registers && mr * nv >= 6) blocks.push_back({mr, nv * lanes});
  std::vector<int64_t> row_groups = {0};
  for (int64_t r = 1; r <= std::min<int64_t>(threads, 8); r *= 2) row_groups.push_back(r);
  for (auto [mr, nr] : blocks)
    for (int64_t kc : {128, 192, 256, 384, 512, 640, 768, 1024})
      for (int64_t mc : {48, 96, 144, 192, 256, 384})
        for (int64_t nc : {256, 512, 1024, 2048, 4096})
          for (int ain : {-1, 0, 1})
            for (int bin : {-1, 0, 1})
              for (int64_t rows : row_groups) {
                cir::MatMulSchedule s = base;
                s.mr = mr, s.nr = nr, s.kc = kc, s.mc = mc, s.nc = nc, s.a_in_place = ain, s.b_in_place = bin, s.row_groups = rows;
                schedules.push_back(s);
                TuningChoice c;
                c.knobs = {{"mr", mr}, {"nr", nr}, {"kc", kc}, {"mc", mc}, {"nc", nc}};
                if (ain >= 0) c.knobs["ain"] = ain;
                if (bin >= 0) c.knobs["bin"] = bin;
                if (rows > 0) c.knobs["rows"] = rows;
                choices.push_back(std::move(c));
              }
  std::vector<cir::MatMulBlocking> blocked = cir::matmul_blockings(*k, schedules);
  if (!blocked.empty()) {
    std::set<std::vector<int64_t>> seen;
    for (size_t i = 0; i < blocked.size(); ++i) {
      const cir::MatMulBlocking& z = blocked[i];
      if (!seen.insert({z.MR, z.NR, z.KC, z.MC, z.NC, z.gm, z.gn, z.a_in_place, z.b_in_place}).second) continue;
      add(out, choices[i], product_cycles(blocked[i], threads, lanes, registers));
    }
  } else if (k->kind == cir::KernelKind::Reduce) {
    add(out, {}, loop_cycles(ops, kCpuTasksPerThread * threads, threads, false));
    for (int64_t chunks : {int64_t(threads), 2 * int64_t(threads), 8 * int64_t(threads), 32 * int64_t(threads)})
      add(out, {{{"chunks", chunks}}}, loop_cycles(ops, chunks, threads, false));
  } else {
    bool one = ops < kCpuOperationsToShare;
    add(out, {}, loop_cycles(ops, kCpuTasksPerThread * threads, threads, one));
    if (threads > 1) {
      for (int64_t tasks : {int64_t(threads), 2 * int64_t(threads), 4 * int64_t(threads), 16 * int64_t(threads), 64 * int64_t(threads)})
        for (int64_t block : {64, 256, 1024, 4096}) {
          TuningChoice c;
          c.knobs = {{"tasks", tasks}, {"block", block}, {"one", 0}};
          add(out, std::move(c), loop_cycles(ops, tasks, threads, false));
        }
      add(out, {{{"one", 1}}}, loop_cycles(ops, 1, threads, true));
    }
    // The unroll of interchanged reductions, where the kernel has one (the
    // plans differ): the model cannot tell these apart, timing can.
    if (knob_changes_plan(kernel, threads, vector_bits, "jam"))
      for (int64_t jam : {int64_t(1), int64_t(2), int64_t(8)}) add(out, {{{"jam", jam}}}, out[0].cost);
    // Long row sums a row at a time or four at once, beside the rules' eight.
    if (knob_changes_plan(kernel, threads, vector_bits, "sumrows"))
      for (int64_t rows : {int64_t(1), int64_t(4)}) add(out, {{{"sumrows", rows}}}, out[0].cost);
  }
  rank_candidates(out);
  // Many choices cost alike in the model (it cannot tell them apart): the
  // cheapest of each cost first, so that a short list still spans the space.
  if (limit && out.size() > limit) {
    std::vector<TuningCandidate> spread = {out[0]}, rest;
    double last = -1;
    for (size_t i = 1; i < out.size(); ++i) {
      bool new_cost = last < 0 || out[i].cost > last * 1.005;
      (new_cost ? spread : rest).push_back(out[i]);
      if (new_cost) last = out[i].cost;
    }
    spread.insert(spread.end(), rest.begin(), rest.end());
    spread.resize(limit);
    out = std::move(spread);
  }
  return out;
}

}  // namespace zyntax
