// The host language's built-in functions (print, load, save, zeros, randn,
// reshape, split, sqrt, ...: the names sema/builtin_names lists), methods
// (t.to_device(..), t.astype(..)) and attributes (t.shape, t.dtype).
#pragma once

#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "interp/value.hpp"
#include "runtime/tensor_ops.hpp"
#include "support/diagnostics.hpp"

namespace zyntax {

struct CallArgs {
  std::vector<Value> positional;
  std::vector<Span> positional_spans;
  std::vector<std::pair<std::string, Value>> keywords;
  std::vector<Span> keyword_spans;
  Span span;  // the whole call
};

// What builtins may touch besides their arguments.
struct BuiltinContext {
  std::ostream* out = nullptr;
  Random* rng = nullptr;  // the program's generator when no seed is given
};

// Calls builtin `name`. Errors are zyntax::Error located at the call or at
// the offending argument; data errors name the function, the argument and
// the shapes.
Value call_builtin(const std::string& name, CallArgs& args, BuiltinContext& ctx);

// `self.name(args)` for the methods of tensors (to_device, astype, reshape,
// transpose, sum, mean, max, min) and lists (append, len).
Value call_method(const Value& self, const std::string& name, CallArgs& args, BuiltinContext& ctx);
bool has_method(const Value& self, const std::string& name);

// `self.name` for t.shape (a list of ints), t.dtype, t.device, t.rank, t.size, t.T.
// Returns false when `self` has no such attribute.
bool get_attribute(const Value& self, const std::string& name, Value& out);

}  // namespace zyntax
