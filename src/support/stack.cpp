#include "support/stack.hpp"

#include <pthread.h>
#include <sys/mman.h>

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace zyntax {

namespace {

// While this thread runs on a deep stack of its own (DeepStackInPlace): the
// low end of that stack, which stack_remaining() measures against.
thread_local uintptr_t t_switched_low = 0;

// The sanitizers follow threads, not stacks switched under them (GCC says
// so with __SANITIZE_*__, clang with __has_feature); other targets than
// these two have no switch written for them.
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define ZYNTAX_STACK_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || defined(ZYNTAX_STACK_SANITIZED) || \
    !(defined(__x86_64__) || defined(__aarch64__))
constexpr bool kSwitchStacksInPlace = false;
#else
constexpr bool kSwitchStacksInPlace = true;
#endif

}  // namespace
}  // namespace zyntax

// Calls fn(arg) with the stack pointer at `top` (16-byte aligned), then
// returns on the caller's stack. The frame pointer keeps the caller's
// frame, so debuggers and unwinders walk from one stack to the other.
// (ucontext does the same with a signal-mask system call per switch: a
// microsecond or more each.)
extern "C" void zyntax_call_on_stack(void* arg, void (*fn)(void*), void* top);
#if defined(__x86_64__)
asm(R"(
  .text
  .globl zyntax_call_on_stack
  .type zyntax_call_on_stack, @function
zyntax_call_on_stack:
  .cfi_startproc
  pushq %rbp
  .cfi_def_cfa_offset 16
  .cfi_offset %rbp, -16
  movq %rsp, %rbp
  .cfi_def_cfa_register %rbp
  movq %rdx, %rsp
  callq *%rsi
  movq %rbp, %rsp
  popq %rbp
  .cfi_def_cfa %rsp, 8
  retq
  .cfi_endproc
  .size zyntax_call_on_stack, .-zyntax_call_on_stack
  .section .note.GNU-stack,"",@progbits
  .text
)");
#elif defined(__aarch64__)
asm(R"(
  .text
  .globl zyntax_call_on_stack
  .type zyntax_call_on_stack, %function
zyntax_call_on_stack:
  .cfi_startproc
  stp x29, x30, [sp, #-16]!
  .cfi_def_cfa_offset 16
  .cfi_offset x29, -16
  .cfi_offset x30, -8
  mov x29, sp
  .cfi_def_cfa_register x29
  mov sp, x2
  blr x1
  mov sp, x29
  .cfi_def_cfa sp, 16
  ldp x29, x30, [sp], #16
  .cfi_def_cfa_offset 0
  .cfi_restore x29
  .cfi_restore x30
  ret
  .cfi_endproc
  .size zyntax_call_on_stack, .-zyntax_call_on_stack
  .section .note.GNU-stack,"",@progbits
  .text
)");
#else
extern "C" void zyntax_call_on_stack(void*, void (*)(void*), void*) {}  // never called: kSwitchStacksInPlace is false
#endif

namespace zyntax {
namespace {

// A deep stack of this thread's own, switched to in place: no other
// thread, nothing to wake, nanoseconds a call where handing work to
// another thread costs tens of microseconds. Mapped once per thread on
// first use (address space; pages are touched only as deep as the work
// goes), unmapped when the thread ends.
class DeepStackInPlace {
 public:
  // This thread's, or null where it cannot be had (mapping failed, or this
  // thread is on it already).
  static DeepStackInPlace* of_this_thread(size_t bytes) {
    thread_local std::unique_ptr<DeepStackInPlace> mine;
    if (t_switched_low) return nullptr;
    if (mine && mine->bytes_ < bytes) mine.reset();
    if (!mine) {
      void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
      if (base == MAP_FAILED) return nullptr;
      mprotect(base, kGuard, PROT_NONE);  // an overflow faults instead of writing below
      mine.reset(new DeepStackInPlace(base, bytes));
    }
    return mine.get();
  }

  ~DeepStackInPlace() { munmap(base_, bytes_); }

  void run(const std::function<void()>& fn) {
    Call call{&fn, nullptr};
    uintptr_t top = (reinterpret_cast<uintptr_t>(base_) + bytes_) & ~uintptr_t{15};
    t_switched_low = reinterpret_cast<uintptr_t>(base_) + kGuard + 64 * 1024;
    zyntax_call_on_stack(&call, &entry, reinterpret_cast<void*>(top));
    t_switched_low = 0;
    if (call.error) std::rethrow_exception(call.error);
  }

 private:
  static constexpr size_t kGuard = 64 * 1024;
  struct Call {
    const std::function<void()>* fn;
    std::exception_ptr error;
  };
  DeepStackInPlace(void* base, size_t bytes) : base_(base), bytes_(bytes) {}

  // Runs on the deep stack. Nothing may unwind past it onto the caller's.
  static void entry(void* arg) noexcept {
    auto* call = static_cast<Call*>(arg);
    try {
      (*call->fn)();
    } catch (...) {
      call->error = std::current_exception();
    }
  }

  void* base_;
  size_t bytes_;
};

// The lowest address of the stack this thread runs on (stacks grow down on
// every target we build for), found once per thread.
uintptr_t stack_low_end() {
  if (t_switched_low) return t_switched_low;
  thread_local uintptr_t low = [] {
    pthread_attr_t attr;
    void* addr = nullptr;
    size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
      pthread_attr_getstack(&attr, &addr, &size);
      pthread_attr_destroy(&attr);
    }
    // The guard page(s) sit inside the reported range on some libcs.
    return reinterpret_cast<uintptr_t>(addr) + 64 * 1024;
  }();
  return low;
}

// Threads with deep stacks, kept for the next call: starting one (mapping
// its stack, creating the thread) costs a hundred microseconds or more,
// handing work to one that waits a few. A call from the API on a small
// stack (Python's main thread) pays the handover, not the start.
class DeepStackThreads {
 public:
  void run(size_t bytes, const std::function<void()>& fn) {
    Worker* w = take(bytes);
    if (!w) return fn();  // no room for a large stack: run on this one, with its limits
    {
      std::unique_lock<std::mutex> lock(w->mu);
      w->job = &fn;
      w->error = nullptr;
      w->done = false;
      w->wake.notify_one();
      w->finished.wait(lock, [w] { return w->done; });
    }
    std::exception_ptr error = w->error;
    give_back(w);
    if (error) std::rethrow_exception(error);
  }

  // After fork() only the forking thread lives on in the child: the
  // workers are gone, and the pool's lock may have been held by one.
  static DeepStackThreads*& instance() {
    static DeepStackThreads* pool = [] {
      pthread_atfork(nullptr, nullptr, [] { instance() = new DeepStackThreads; });  // the old one is the parent's
      return new DeepStackThreads;  // never destroyed: its threads wait until the process ends
    }();
    return pool;
  }

 private:
  struct Worker {
    size_t bytes = 0;
    std::mutex mu;
    std::condition_variable wake, finished;
    const std::function<void()>* job = nullptr;
    std::exception_ptr error;
    bool done = false;
    bool retire = false;
  };
  // Threads kept waiting; more than this many at once (calls from many
  // threads together) end after their call.
  static constexpr size_t kKept = 4;

  static void* loop(void* arg) {
    auto* w = static_cast<Worker*>(arg);
    std::unique_lock<std::mutex> lock(w->mu);
    for (;;) {
      w->wake.wait(lock, [w] { return w->job != nullptr || w->retire; });
      if (!w->job) break;
      try {
        (*w->job)();
      } catch (...) {
        w->error = std::current_exception();
      }
      w->job = nullptr;
      w->done = true;
      w->finished.notify_one();
    }
    lock.unlock();
    delete w;
    return nullptr;
  }

  Worker* take(size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (size_t i = 0; i < idle_.size(); ++i)
        if (idle_[i]->bytes >= bytes) {
          Worker* w = idle_[i];
          idle_.erase(idle_.begin() + static_cast<std::ptrdiff_t>(i));
          return w;
        }
    }
    auto* w = new Worker;
    w->bytes = bytes;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, bytes);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t thread;
    int rc = pthread_create(&thread, &attr, loop, w);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
      delete w;
      return nullptr;
    }
    return w;
  }

  void give_back(Worker* w) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (idle_.size() < kKept) {
        idle_.push_back(w);
        return;
      }
    }
    std::lock_guard<std::mutex> lock(w->mu);
    w->retire = true;
    w->wake.notify_one();
  }

  std::mutex mu_;
  std::vector<Worker*> idle_;
};

}  // namespace

size_t stack_remaining() {
  auto here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  uintptr_t low = stack_low_end();
  return here > low ? here - low : 0;
}

void run_on_new_stack(size_t bytes, const std::function<void()>& fn) {
  if (kSwitchStacksInPlace)
    if (DeepStackInPlace* here = DeepStackInPlace::of_this_thread(bytes)) return here->run(fn);
  DeepStackThreads::instance()->run(bytes, fn);
}

}  // namespace zyntax
