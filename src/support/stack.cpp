#include "support/stack.hpp"

#include <pthread.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace zyntax {

namespace {

// The lowest address of this thread's stack (stacks grow down on every
// target we build for), found once per thread.
uintptr_t stack_low_end() {
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

struct NewStackCall {
  const std::function<void()>* fn;
  std::exception_ptr error;
};

void* run_call(void* arg) {
  auto* call = static_cast<NewStackCall*>(arg);
  try {
    (*call->fn)();
  } catch (...) {
    call->error = std::current_exception();
  }
  return nullptr;
}

}  // namespace

size_t stack_remaining() {
  auto here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  uintptr_t low = stack_low_end();
  return here > low ? here - low : 0;
}

void run_on_new_stack(size_t bytes, const std::function<void()>& fn) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, bytes);
  NewStackCall call{&fn, nullptr};
  pthread_t thread;
  int rc = pthread_create(&thread, &attr, run_call, &call);
  pthread_attr_destroy(&attr);
  if (rc != 0)  // no room for a large stack: run on this one, with its limits
    return fn();
  pthread_join(thread, nullptr);
  if (call.error) std::rethrow_exception(call.error);
}

}  // namespace zyntax
