// Builtins that talk to the world outside the program: printing and .npy files.
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

const BuiltinEntry kEntries[] = {
    {"print", print},
    {"println", print},
    {"load", load},
    {"save", save},
};

}  // namespace

std::span<const BuiltinEntry> io_builtins() { return kEntries; }

}  // namespace zyntax
