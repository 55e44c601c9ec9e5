// Thousands of small asynchronous kernels launched from several host
// threads at once, each thread running its own ZynML program in its own
// interpreter over the shared runtime (device registry, kernel caches, the
// JIT, thread pools): every result is checked against the host's own
// arithmetic. Built and run under ThreadSanitizer by scripts/run_tests.sh,
// and under AddressSanitizer (with leak checking) as a ctest test.
//
//   zyntax_stress [THREADS] [ROUNDS]
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "driver/session.hpp"
#include "interp/host_interpreter.hpp"
#include "lower/check_program.hpp"

namespace {

// Four async kernels per round on four devices, awaited together, then
// compared with the same arithmetic on the host; sizes vary so new
// specialisations are compiled while others run.
//
// Host functions in it are compiled in the background (the tiered host
// code) while the interpreter goes on and the other threads launch and
// compile kernels; their results are checked the same way.
const char* kProgram = R"(
def triangle(n: int) -> int {
    var s = 0
    for i in 0..n {
        s += i
    }
    return s
}
def add_one(t: tensor[n, f32], book) {
    for i in 0..n {
        t[i] = t[i] + 1.0
    }
    book.calls += 1
}
let ones = zeros([9])
let book = {calls: 0}
var total = 0
var bad = 0
for r in 0..rounds:
    let x = randn([17 + r % 7], seed=seed * 100000 + r)
    let fs = [
        compute(x) @async {
            @kernel elementwise
            for i in 0..len:
                out[i] = x[i] * 2.0 + 1.0
        },
        compute(x) @async @device("cpu:0") {
            @kernel elementwise
            for i in 0..len:
                out[i] = x[i] - 3.0
        },
        compute(x) @async @device("cpu:1") {
            @kernel elementwise
            for i in 0..len:
                out[i] = x[i] * x[i]
        },
        compute(x) @async @device("cpu:reference") {
            @kernel elementwise
            for i in 0..len:
                out[i] = x[i] + 0.5
        },
    ]
    let ys = await all(fs)
    if not all(ys[0] == x * 2.0 + 1.0): bad += 1
    if not all(ys[1] == x - 3.0): bad += 1
    if not all(ys[2] == x * x): bad += 1
    if not all(ys[3] == x + 0.5): bad += 1
    total += 4
    if triangle(r + 10) != (r + 10) * (r + 9) / 2: bad += 1
    add_one(ones, book)
    if ones[8] != float(r + 1) or book.calls != r + 1: bad += 1
    // A host write into an input of a block still running: the block sees
    // the input as it was at launch, never a torn or later value.
    let before = x[0]
    let snap = compute(x) @async @device("cpu:reference") {
        @kernel elementwise
        for i in 0..len:
            out[i] = x[i]
    }
    x[0] = before + 100.0
    if (await snap)[0] != before: bad += 1
    total += 1
    // A future never awaited: it must finish and be freed all the same.
    let dropped = compute(x) @async {
        @kernel elementwise
        for i in 0..len:
            out[i] = x[i]
    }
println("kernels:", total, "bad:", bad)
)";

struct Outcome {
  bool ok = false;
  std::string output;
};

Outcome run_thread(int seed, int rounds) {
  Outcome o;
  zyntax::Session session;
  std::string text = "let seed = " + std::to_string(seed) + "\nlet rounds = " + std::to_string(rounds) + "\n" + kProgram;
  zyntax::LoadedModule* m = session.load_text("stress_" + std::to_string(seed) + ".zynml", text);
  if (session.diags().has_errors() || !zyntax::check_program(session, *m, nullptr)) {
    o.output = session.diags().render_all();
    return o;
  }
  std::ostringstream out;
  zyntax::RunOptions options;
  options.out = &out;
  zyntax::Interpreter interp(session, options);
  o.ok = interp.run(*m);
  o.output = out.str() + session.diags().render_all();
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = argc > 1 ? std::atoi(argv[1]) : 4;
  int rounds = argc > 2 ? std::atoi(argv[2]) : 150;
  std::vector<Outcome> outcomes(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back([&, t] { outcomes[t] = run_thread(t + 1, rounds); });
  for (std::thread& t : pool) t.join();
  int failures = 0;
  std::string want = "kernels: " + std::to_string(rounds * 5) + " bad: 0";
  for (int t = 0; t < threads; ++t) {
    bool good = outcomes[t].ok && outcomes[t].output.find(want) != std::string::npos;
    if (!good) ++failures;
    std::printf("thread %d: %s%s", t, good ? "ok, " : "FAILED: ", outcomes[t].output.c_str());
  }
  std::printf("%d threads x %d rounds: %d kernels launched (5 awaited and 1 dropped per round), %d threads failed\n", threads,
              rounds, threads * rounds * 6, failures);
  return failures ? 1 : 0;
}
