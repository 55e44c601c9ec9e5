// Lowers host functions (`def`) to LLVM IR for the CPU JIT: the compiled
// tier of host code. A function is compiled for the kinds of the values it
// is called with (integers, floats, bools, host tensors of a dtype and
// rank) and the types they give its locals; the functions it calls from
// the same module are compiled with it, recursion included. Semantics are
// the interpreter's: i64 arithmetic wraps, floats are f64, integer division
// truncates and fails on zero, an index out of range, a loop step that is
// not positive and calls nested too deep stop with the interpreter's error
// at the same source location (a numbered site, see host_abi).
//
// What the interpreter runs that this does not (strings, lists, records,
// compute blocks, builtins with effects, a local whose type changes) leaves
// the function interpreted; `why` says what, at its source line.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "support/dtype.hpp"
#include "support/source.hpp"
#include "syntax/ast.hpp"

namespace llvm {
class LLVMContext;
class Module;
}  // namespace llvm

namespace zyntax::host {

// The type of a host value in compiled code.
struct HostType {
  enum class Kind { None, Bool, Int, Float, Tensor, Record };
  Kind kind = Kind::None;
  // Tensor: its elements. Float: the precision it prints with, as the
  // interpreter keeps it (an f32 tensor's element prints as f32; what
  // arithmetic makes, as f64).
  DType dtype = DType::F64;
  int rank = 0;  // Tensor
  // Record: its fields (numbers and bools), in order. Compiled code reads
  // and writes them in place (as 64-bit words, see host_abi).
  std::vector<std::string> field_names;
  std::vector<HostType> field_types;
  bool operator==(const HostType&) const = default;
  std::string str() const;  // "int", "float (f32)", "tensor[f32, rank 1]", "record{price: float, qty: int}"
  static HostType of(Kind k) { return {k, DType::F64, 0, {}, {}}; }
  static HostType tensor(DType d, int rank) { return {Kind::Tensor, d, rank, {}, {}}; }
  static HostType record(std::vector<std::string> names, std::vector<HostType> types) {
    return {Kind::Record, DType::F64, 0, std::move(names), std::move(types)};
  }
};

// A failed check of compiled code: what the interpreter would say, where.
struct ErrorSite {
  enum class Kind { IndexOutOfRange, IntegerDivisionByZero, IntegerRemainderByZero, StepNotPositive, CallsTooDeep };
  Kind kind;
  Span span;
  int axis = 0;  // IndexOutOfRange: the axis, of a tensor of this rank
  int rank = 0;
};

// The function a call names, where it is one of the program's own (a
// module-level `def`), else null.
using FunctionResolver = std::function<const ast::FuncDef*(const std::string& name)>;

// One compiled entry: a function for the types of its bound names (its
// parameters, then the dimensions its parameter types name, in `names`).
struct HostCompilation {
  std::vector<std::string> names;
  std::vector<HostType> types;
  HostType result;
  std::vector<ErrorSite> sites;
  bool writes_tensors = false;  // stores into a tensor's elements
  bool writes_records = false;  // stores into a record's fields
  bool calls_functions = false;  // calls the program's functions (may recurse as deep as the limit)
  std::string symbol;  // the entry's name in the module
  std::string key;     // what the code is, for the disk cache
  std::unique_ptr<llvm::Module> module;
};

// Lowers `def` for arguments of `types` bound to `names` (the interpreter's
// bound parameters and dimensions), with `ctx` owning the module; or a
// reason it stays interpreted ("line 7: 'print' is not compiled"). `file`
// holds the module's functions (for lines, and the code's cache key).
struct HostLowering {
  std::optional<HostCompilation> compiled;
  std::string why;     // "line 7: ...", as --explain-host says it
  Span where;          // and the span it points at
  std::string reason;  // without the line
  bool allocates = false;  // the reason is something that allocates
  bool whatever_the_arguments = false;  // the code alone rules it out, for any argument types
};
HostLowering lower_host_function(const ast::FuncDef& def, const std::vector<std::string>& names, const std::vector<HostType>& types,
                                 const FunctionResolver& resolve, llvm::LLVMContext& ctx, const SourceFile* file);

}  // namespace zyntax::host
