// support/stack: deep work gets a deep stack on any thread, and results and
// errors come back to the caller.
#include <gtest/gtest.h>

#include <pthread.h>

#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/diagnostics.hpp"
#include "support/stack.hpp"
#include "syntax/parser.hpp"

namespace zyntax {
namespace {

// Runs `fn` on a thread with a small stack (as a host program's worker
// thread might have).
void on_small_stack(size_t bytes, const std::function<void()>& fn) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, bytes);
  pthread_t t;
  auto* call = new std::function<void()>(fn);
  ASSERT_EQ(pthread_create(&t, &attr, [](void* p) -> void* {
              auto* f = static_cast<std::function<void()>*>(p);
              (*f)();
              delete f;
              return nullptr;
            }, call), 0);
  pthread_attr_destroy(&attr);
  pthread_join(t, nullptr);
}

// Not a tail call: the frame (and its 1 KB) stays while the next one runs.
size_t remaining_below(int levels) {
  volatile char pad[1024];
  pad[0] = 0;
  size_t r = levels == 0 ? stack_remaining() : remaining_below(levels - 1);
  pad[1] = static_cast<char>(r);
  return r + pad[0];
}

TEST(SupportStack, RemainingShrinksAsCallsNest) {
  size_t top = stack_remaining();
  size_t deeper = remaining_below(50);
  EXPECT_GT(top, deeper + 50 * 1024);
  EXPECT_GT(deeper, 0u);
}

TEST(SupportStack, DeepStackOnASmallThread) {
  size_t inside = 0, outside = 0;
  on_small_stack(256 * 1024, [&] {
    outside = stack_remaining();
    inside = with_deep_stack([] { return stack_remaining(); });
  });
  EXPECT_LT(outside, 256u * 1024);
  EXPECT_GE(inside, kDeepStackNeeded);
}

TEST(SupportStack, RunsInPlaceWhereTheStackIsDeepEnough) {
  with_deep_stack([] {
    size_t here = stack_remaining();
    // Already deep: the nested call runs on this thread, just below.
    size_t nested = with_deep_stack([] { return stack_remaining(); });
    EXPECT_LE(nested, here);
    EXPECT_GT(nested + 64 * 1024, here);
  });
}

TEST(SupportStack, ErrorsComeBackToTheCaller) {
  std::string what;
  on_small_stack(256 * 1024, [&] {
    try {
      with_deep_stack([]() -> int { throw std::runtime_error("from the deep stack"); });
    } catch (const std::runtime_error& e) {
      what = e.what();
    }
  });
  EXPECT_EQ(what, "from the deep stack");
}

TEST(SupportStack, TheDeepStackHoldsWhatItPromises) {
  // 100 MB of frames, far beyond a thread's usual 8 MB.
  size_t deepest = 0;
  on_small_stack(256 * 1024, [&] { deepest = with_deep_stack([] { return remaining_below(100 * 1000); }); });
  EXPECT_GT(deepest, kDeepStackNeeded - 100u * 1000 * 1024 - (1u << 20));
}

TEST(SupportStack, RepeatedCallsReuseOneStack) {
  size_t first = 0, second = 0;
  on_small_stack(256 * 1024, [&] {
    first = with_deep_stack([] { return stack_remaining(); });
    second = with_deep_stack([] { return stack_remaining(); });
  });
  EXPECT_EQ(first, second);
}

TEST(SupportStack, ManyThreadsAtOnceEachGetADeepStack) {
  constexpr int kThreads = 8;
  std::vector<std::thread> threads;
  std::vector<size_t> inside(kThreads, 0);
  std::vector<std::string> errors(kThreads);
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int k = 0; k < 50; ++k) {
        inside[t] = with_deep_stack([] { return remaining_below(200); });
        try {
          with_deep_stack([t]() -> int { throw std::runtime_error("thread " + std::to_string(t)); });
        } catch (const std::runtime_error& e) {
          errors[t] = e.what();
        }
      }
    });
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_GT(inside[t], kDeepStackNeeded - (1u << 20)) << t;
    EXPECT_EQ(errors[t], "thread " + std::to_string(t));
  }
}

TEST(SupportStack, ParsingDeepNestingOnASmallThread) {
  bool ok = false;
  std::string errors;
  on_small_stack(256 * 1024, [&] {
    SourceManager sources;
    DiagnosticEngine diags(sources);
    FileId id = sources.add("t.zynml", "let x = " + std::string(3000, '(') + "1" + std::string(3000, ')') + "\n");
    ast::Module m = parse_file(sources, id, diags);
    ok = !diags.has_errors() && m.body.stmts.size() == 1;
    errors = diags.render_all();
  });
  EXPECT_TRUE(ok) << errors;
}

}  // namespace
}  // namespace zyntax
