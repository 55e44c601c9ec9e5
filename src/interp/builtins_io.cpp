// Builtins that talk to the world outside the program: printing, .npy
// files and the clock.
#include <chrono>
#include <iostream>

#include "interp/builtins_args.hpp"
#include "runtime/npy.hpp"

namespace zyntax {

namespace {

Value print(const Invocation& inv) {
  reject_keywords(inv);
  std::string line;
  for (size_t k = 0; k < inv.args.positional.size(); ++k) {
    if (k) line += ' ';
    line += to_display(inv.args.positional[k]);
  }
  std::ostream& out = inv.ctx.out ? *inv.ctx.out : std::cout;
  out << line << '\n';
  return Value::none();
}

// The library's messages already name the file.
Value load(const Invocation& inv) {
  Args a(inv, {{"path"}});
  const std::string& path = a.str(0);
  try {
    return Value::of_tensor(load_npy(path));
  } catch (const DataError& e) {
    a.fail_call(e.what());
  }
}

Value save(const Invocation& inv) {
  Args a(inv, {{"tensor"}, {"path"}});
  const Tensor& t = a.tensor(0);
  const std::string& path = a.str(1);
  try {
    save_npy(t, path);
  } catch (const DataError& e) {
    a.fail_call(e.what());
  }
  return Value::none();
}

// Seconds on a monotonic clock (as Python's time.perf_counter): the
// difference of two readings is the time between them. Asynchronous
// launches still running are not waited for.
Value time_now(const Invocation& inv) {
  Args a(inv, {});
  using clock = std::chrono::steady_clock;
  static const clock::time_point origin = clock::now();
  return Value::of_float(std::chrono::duration<double>(clock::now() - origin).count());
}

const BuiltinEntry kEntries[] = {
    {"time", time_now},
    {"print", print},
    {"println", print},
    {"load", load},
    {"save", save},
};

}  // namespace

std::span<const BuiltinEntry> io_builtins() { return kEntries; }

}  // namespace zyntax
