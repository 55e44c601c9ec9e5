// A program's function called from C++ or Python straight into its compiled
// code: no interpreter and, for code that calls no other function, no
// change of stack. Made from a call the interpreter ran compiled (the tier
// decides when there is code); later calls with arguments of the same types
// take it when binding them checks nothing this does not: the parameters'
// declared types (kinds, element types, ranks, sizes named or written as
// numbers). Anything else (defaults, keywords, other size expressions, a
// declared result it cannot vouch for) goes through the interpreter, which
// reports what is wrong as `zyntax run` does.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "host/host_tier.hpp"
#include "interp/value.hpp"

namespace zyntax {

namespace ast {
struct FuncDef;
}

class DirectCall {
 public:
  // Null where calls like this one (`args`, positional, one per parameter)
  // must keep going through the interpreter.
  static std::unique_ptr<DirectCall> make(const ast::FuncDef& def, const std::vector<Value>& args, const host::HostCode& code);

  // Whether `args` bind as those it was made from did: the same kinds,
  // element types and ranks, and every size the types require.
  bool takes(const std::vector<Value>& args) const;

  // Runs the code on `args` (which takes() took). Throws Error at the
  // source line for a failed check, as the interpreter would.
  Value run(const std::vector<Value>& args, int max_depth) const;

 private:
  explicit DirectCall(const host::HostCode& code) : code_(code) {}

  // What an argument is: its kind, and a tensor's elements and rank.
  struct Shape {
    Value::Kind kind;
    DType dtype = DType::F64;
    int64_t rank = 0;
    bool operator==(const Shape&) const = default;
  };
  static Shape shape_of(const Value& v);

  // A size a parameter's type requires: axis `axis` of argument `param`
  // equals that of another argument, an int argument, or a number.
  struct SizeCheck {
    int param, axis;
    int other_param = -1, other_axis = -1;  // other_axis < 0: the int argument itself
    int64_t value = 0;                      // other_param < 0: this number
  };
  // Where one of the code's values comes from: an argument (as a float
  // where the parameter is a float given an int), or a size of one.
  struct Slot {
    int param;
    int axis = -1;
    bool as_float = false;
  };

  const host::HostCode& code_;
  std::vector<Shape> shapes_;
  std::vector<SizeCheck> sizes_;
  std::vector<Slot> slots_;
  bool result_as_float = false;  // `-> float` with an int result
};

}  // namespace zyntax
