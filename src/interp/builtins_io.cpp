// Builtins that talk to the world outside the program: printing, .npy
// files and the clock.
#include <chrono>
#include <iostream>

#include "interp/builtins_args.hpp"
#include "runtime/npy.hpp"
#include "runtime/npz.hpp"

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

bool is_npz(const std::string& path) { return path.size() > 4 && path.ends_with(".npz"); }

// A .npy file is a tensor; a .npz archive a record of its arrays (by the
// names they were saved under). The library's messages already name the file.
Value load(const Invocation& inv) {
  Args a(inv, {{"path"}});
  const std::string& path = a.str(0);
  try {
    if (!is_npz(path)) return Value::of_tensor(load_npy(path));
    std::vector<std::pair<std::string, Value>> fields;
    for (auto& [name, t] : load_npz(path)) fields.emplace_back(name, Value::of_tensor(std::move(t)));
    return Value::of_record(std::move(fields));
  } catch (const DataError& e) {
    a.fail_call(e.what());
  }
}

// save(tensor, "x.npy"); save(record of tensors, "x.npz") (a tensor alone
// into a .npz is its "arr_0", as NumPy names it).
Value save(const Invocation& inv) {
  Args a(inv, {{"tensor"}, {"path"}});
  const std::string& path = a.str(1);
  try {
    if (!is_npz(path)) {
      save_npy(a.tensor(0), path);
      return Value::none();
    }
    std::vector<std::pair<std::string, Tensor>> arrays;
    if (a[0].kind == Value::Kind::Record) {
      for (const auto& [name, v] : a[0].record->fields) {
        if (v.kind != Value::Kind::Tensor)
          a.fail_call("field '" + name + "' is " + type_name(v) + "; a .npz archive holds tensors");
        arrays.emplace_back(name, v.tensor);
      }
    } else {
      arrays.emplace_back("arr_0", a.tensor(0));
    }
    save_npz(arrays, path);
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

// latency(f, ...) calls a function of the program, which only the
// interpreter can (Interpreter::measure_latency); reached here, it has none.
Value latency_without_program(const Invocation& inv) {
  throw Error(inv.args.span, "latency() measures a function of the program, inside `zyntax run`");
}

const BuiltinEntry kEntries[] = {
    {"time", time_now},
    {"latency", latency_without_program},
    {"print", print},
    {"println", print},
    {"load", load},
    {"save", save},
};

}  // namespace

std::span<const BuiltinEntry> io_builtins() { return kEntries; }

}  // namespace zyntax
