// Stack space for recursive phases. Every phase walks syntax trees and CIR
// recursively, and the interpreter recurses with the program: a long
// operator chain, generated code or a deeply recursive ZynML function needs
// more stack than a thread's default 8 MiB. Entry points run their work
// where enough stack remains (with_deep_stack), and the recursive walks that a
// program can drive arbitrarily deep (parser, interpreter) check what is
// left (stack_remaining) and report an error instead of overflowing.
#pragma once

#include <cstddef>
#include <exception>
#include <functional>
#include <optional>
#include <type_traits>
#include <utility>

namespace zyntax {

// What a phase needs at least: trees up to the parser's depth limit through
// every pass and code generator (sanitizer builds included).
constexpr size_t kDeepStackNeeded = size_t{256} << 20;
// The stack of the threads with_deep_stack starts: address space, touched
// only as deep as the work goes.
constexpr size_t kDeepStackBytes = size_t{1} << 30;

// Bytes of stack left below the caller's frame on this thread.
size_t stack_remaining();

// Runs `fn` on a stack of at least `bytes` and returns when it does; an
// exception thrown by `fn` is rethrown here. The stack is this thread's own
// deep stack, switched to in place; under the sanitizers (and on a deep
// stack already) another thread's, one kept waiting from an earlier call
// where there is one.
void run_on_new_stack(size_t bytes, const std::function<void()>& fn);

// Runs `fn` here if at least kDeepStackNeeded of stack remain, else on a
// stack of kDeepStackBytes (run_on_new_stack).
template <class F>
auto with_deep_stack(F&& fn) -> decltype(fn()) {
  using R = decltype(fn());
  if (stack_remaining() >= kDeepStackNeeded) return fn();
  if constexpr (std::is_void_v<R>) {
    run_on_new_stack(kDeepStackBytes, [&] { fn(); });
  } else {
    std::optional<R> result;
    run_on_new_stack(kDeepStackBytes, [&] { result.emplace(fn()); });
    return std::move(*result);
  }
}

}  // namespace zyntax
