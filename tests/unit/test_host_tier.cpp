// The compiled tier of host code: results and errors identical to the
// interpreter's, the reasons a function stays interpreted, and tiering.
#include <gtest/gtest.h>

#include <chrono>
#include <sstream>
#include <thread>

#include "driver/session.hpp"
#include "host/host_tier.hpp"
#include "interp/host_interpreter.hpp"
#include "lower/check_program.hpp"
#include "program_run.hpp"

namespace zyntax {
namespace {

using Run = testing::ProgramRun;

std::unique_ptr<Run> run(const std::string& src, host::HostMode mode) {
  RunOptions o;
  o.device = "cpu";
  o.host = mode;
  o.explain_host = &std::cerr;  // any stream: the run's own takes its place
  return testing::run_program(src, o);
}

bool contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

// `src` prints the same compiled and interpreted, and its functions ran compiled.
void same_compiled(const std::string& src, const std::string& expected_out) {
  auto interp = run(src, host::HostMode::Interp);
  auto compiled = run(src, host::HostMode::Compiled);
  ASSERT_TRUE(interp->ok) << interp->errors();
  ASSERT_TRUE(compiled->ok) << compiled->errors();
  EXPECT_EQ(compiled->out.str(), interp->out.str());
  EXPECT_EQ(compiled->out.str(), expected_out);
  EXPECT_TRUE(contains(compiled->explain.str(), "runs compiled")) << compiled->explain.str();
  EXPECT_FALSE(contains(compiled->explain.str(), "stays interpreted")) << compiled->explain.str();
  EXPECT_EQ(interp->explain.str(), "");
}

TEST(HostTier, IntegersWrapAndDivideAsInterpreted) {
  same_compiled(
      "def f(a: int, b: int) -> int {\n return a * b + a / b - a % b + (-a) / 3 + 7 ** 3\n}\n"
      "println(f(9223372036854775807, 3), f(-7, 2), f(7, -1), f(-9223372036854775807 - 1, -1))\n",
      "-9223372036854775469 329 327 -3074457345618258259\n");
}

TEST(HostTier, FloatsKeepTheirPrecisionAndIeeeEdges) {
  same_compiled(
      "def g(t: tensor[n, f32], k: int) -> f32 {\n return t[k]\n}\n"
      "def h(a: float, b: float) -> float {\n return a / b + (a % b) - sqrt(a - 2.0 * a) * 0.0\n}\n"
      "let x = full([3], 0.1)\nprintln(g(x, 1), g(x, -1), h(1.0, 0.0), h(-3.5, 2.0), 0.1 * 3.0)\n",
      "0.1 0.1 nan -3.25 0.30000000000000004\n");
}

TEST(HostTier, ConditionsLoopsAndCallsAsInterpreted) {
  same_compiled(
      "def count(n: int) -> int {\n var c = 0\n var i = 0\n while true {\n  i += 1\n  if i > n { break }\n"
      "  if i % 3 == 0 or i % 5 == 0 { continue }\n  c += 1\n }\n return c\n}\n"
      "def twice(n: int) -> int {\n return count(n) + count(n / 2)\n}\n"
      "def grid(n: int) -> int {\n var s = 0\n for i in 0..n, j in 0..n {\n  if j > i { break }\n  s += i * j\n }\n return s\n}\n"
      "println(twice(100), grid(6), not (count(3) > 1) and true)\n",
      "80 0 false\n");
}

TEST(HostTier, WritesIntoTensorsAsInterpreted) {
  same_compiled(
      "def ramp(t: tensor[r, c, f32], i32s: tensor[k, i32]) {\n for i in 0..r, j in 0..c {\n  t[i, j] = i * c + j + 0.5\n }\n"
      " for i in 0..k {\n  i32s[i] = i * 1000000000\n }\n}\n"
      "let a = zeros([2, 3])\nlet b = zeros([4], dtype=i32)\nramp(a, b)\nprintln(a)\nprintln(b)\n",
      "tensor([[0.5, 1.5, 2.5], [3.5, 4.5, 5.5]], f32)\ntensor([0, 1000000000, 2000000000, -1294967296], i32)\n");
}

TEST(HostTier, RecordsOfNumbersAreReadAndWrittenInPlace) {
  same_compiled(
      "def fill(o, q, price: float, qty: int) -> float {\n o.qty += qty\n o.price = price\n o.live = o.qty > 0\n"
      " q.qty = q.qty * 2\n return o.price * o.qty\n}\n"
      "let a = {price: 1.5, qty: 3, live: false}\nprintln(fill(a, a, 2.25, 4), a.price, a.qty, a.live)\n"
      "let b = {price: 0.5, qty: 1, live: true}\nprintln(fill(a, b, 0.5, -1), a, b)\n",
      "31.5 2.25 14 true\n6.5 {price: 0.5, qty: 13, live: true} {price: 0.5, qty: 2, live: true}\n");
}

// latency(f, ...) calls a function many times, each call timed, and says
// which tier ran it and whether its target was met (timings themselves are
// not checked here).
TEST(HostTier, LatencyTimesEachCallOfACompiledFunction) {
  auto r = run("@critical_path\n@target_latency(1ms)\ndef bump(o, by: int) -> int {\n o.n += by\n return o.n\n}\n"
               "let c = {n: 0}\nlet l = latency(bump, c, 2, calls=1000)\n"
               "println(c.n, l.calls, l.tier, l.target_ns, l.p50_ns <= l.p99_ns, l.p99_ns <= l.max_ns, l.mean_ns >= 0.0)\n",
               host::HostMode::Tiered);
  ASSERT_TRUE(r->ok) << r->errors();
  EXPECT_EQ(r->out.str(), "2002 1000 compiled 1000000 true true true\n");
  auto bad = run("def f(n: int) -> int {\n return n\n}\nprintln(latency(f, 1, calls=0))\n", host::HostMode::Tiered);
  EXPECT_FALSE(bad->ok);
  EXPECT_TRUE(contains(bad->errors(), "calls must be an integer from 1 to 100000000")) << bad->errors();
}

// A function marked to be on the critical path is compiled before its
// first call in every tier, and is an error where it cannot be.
TEST(HostTier, CriticalFunctionsMustCompile) {
  for (host::HostMode mode : {host::HostMode::Tiered, host::HostMode::Compiled, host::HostMode::Interp}) {
    auto ok = run("@critical_path\ndef f(n: int) -> int {\n return n * 2\n}\nprintln(f(21))\n", mode);
    ASSERT_TRUE(ok->ok) << ok->errors();
    EXPECT_EQ(ok->out.str(), "42\n");
    EXPECT_TRUE(contains(ok->explain.str(), "host: 'f' (line 2)")) << ok->explain.str();
    auto allocates = run("@no_allocation\ndef f(n: int) -> int {\n let l = [n]\n return n\n}\nprintln(f(1))\n", mode);
    EXPECT_FALSE(allocates->ok);
    EXPECT_TRUE(contains(allocates->errors(), "p.zynml:3:10: error: 'f' may not allocate, but a list allocates")) << allocates->errors();
    EXPECT_TRUE(contains(allocates->errors(), "'f' is marked @no_allocation here")) << allocates->errors();
    auto strings = run("@critical_path\ndef f(s) {\n return 1\n}\nprintln(f(\"x\"))\n", mode);
    EXPECT_FALSE(strings->ok);
    EXPECT_TRUE(contains(strings->errors(), "'f' must compile to native code, but its argument 's' is of type str")) << strings->errors();
  }
}

// What cannot be compiled runs interpreted, and --explain-host says why,
// at the line it comes from.
TEST(HostTier, ExplainSaysWhyAFunctionStaysInterpreted) {
  struct Case {
    const char* src;
    const char* why;
  };
  const Case cases[] = {
      {"def f(n: int) {\n print(n)\n}\nf(1)\n", "host: 'f' (line 1) stays interpreted: line 2: 'print' is not compiled"},
      {"def f(xs) {\n return 1\n}\nf([1, 2])\n", "host: 'f' (line 1) stays interpreted: argument 'xs' is of type list"},
      {"def f(n: int) -> float {\n var s = 0\n s = 0.5\n return s\n}\nprintln(f(1))\n",
       "stays interpreted: line 3: assigning float where int is held changes its type"},
      {"let g = 3\ndef f(n: int) -> int {\n return n + g\n}\nprintln(f(1))\n",
       "stays interpreted: line 3: 'g' is not a local of the function"},
      {"def f(n: int) {\n if n > 0 {\n  return 1\n }\n}\nprintln(f(1))\n",
       "stays interpreted: line 1: it returns a value on some paths and nothing on others"},
      {"def f(n: int) -> int {\n var i = 5\n for i in 0..n { }\n return i\n}\nprintln(f(2))\n",
       "stays interpreted: line 3: the loop variable 'i' reuses a name already bound"},
      {"def g(n: int) {\n print(n)\n}\ndef f(n: int) {\n g(n)\n}\nf(1)\n", "host: 'f' (line 4) stays interpreted: line 2: 'print'"},
  };
  for (const Case& c : cases) {
    auto interp = run(c.src, host::HostMode::Interp);
    auto compiled = run(c.src, host::HostMode::Compiled);
    ASSERT_TRUE(compiled->ok) << c.src << compiled->errors();
    EXPECT_EQ(compiled->out.str(), interp->out.str()) << c.src;
    EXPECT_TRUE(contains(compiled->explain.str(), c.why)) << c.src << "\n" << compiled->explain.str();
  }
}

// Tiered: interpreted until used enough, then compiled in the background;
// the calls after it is ready run the compiled code.
TEST(HostTier, TieredCompilesAfterEnoughCallsOrLoops) {
  Session session;
  LoadedModule* m = session.load_text("p.zynml", "def f(n: int) -> int {\n return n + 1\n}\ndef g(n: int) -> int {\n return n * 2\n}\n");
  ASSERT_TRUE(m && check_program(session, *m));
  const ast::FuncDef& f = ast::as<ast::FuncDef>(*m->ast.body.stmts[0]);
  const ast::FuncDef& g = ast::as<ast::FuncDef>(*m->ast.body.stmts[1]);
  std::ostringstream explain;
  host::HostTier tier(host::HostMode::Tiered, &session.sources(), &explain);
  auto none = [] { return std::map<std::string, const ast::FuncDef*>{}; };
  const std::vector<host::HostType> ints = {host::HostType::of(host::HostType::Kind::Int)};
  EXPECT_EQ(tier.code_for(f, {"n"}, ints, none), nullptr);  // one call: interpreted
  EXPECT_STREQ(tier.tier_of(f), "interpreted");
  const host::HostCode* code = nullptr;
  for (int i = 0; i < 3000 && !code; ++i) {  // the second call starts the compile
    code = tier.code_for(f, {"n"}, ints, none);
    if (!code) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_NE(code, nullptr);
  EXPECT_STREQ(tier.tier_of(f), "compiled");
  host::HostCallContext ctx;
  ctx.max_depth = 10;
  uint64_t arg = 41, result = 0;
  code->entry(&ctx, &arg, &result);
  EXPECT_EQ(ctx.error_site, -1);
  EXPECT_EQ(result, 42u);
  // Loops count too: a call whose loops ran long enough compiles at the next.
  tier.count_loops(g, host::kLoopsBeforeCompiling);
  code = nullptr;
  for (int i = 0; i < 3000 && !code; ++i) {
    code = tier.code_for(g, {"n"}, ints, none);
    if (!code) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_NE(code, nullptr);
  code->entry(&ctx, &arg, &result);
  EXPECT_EQ(result, 82u);
  // --host=interp never compiles.
  host::HostTier interp_only(host::HostMode::Interp, &session.sources(), nullptr);
  EXPECT_EQ(interp_only.code_for(g, {"n"}, ints, none), nullptr);
  EXPECT_EQ(interp_only.code_for(g, {"n"}, ints, none), nullptr);
  EXPECT_TRUE(contains(explain.str(), "host: 'f' (line 1) runs compiled for n: int")) << explain.str();
}

}  // namespace
}  // namespace zyntax
