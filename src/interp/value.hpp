// Values of host code: numbers, strings, tensors, lists, tuples, records,
// functions, modules, dtypes and futures. Tensors, lists and records are
// references (assigning one shares it), like NumPy arrays and Python lists.
#pragma once

#include <future>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/memory_pool.hpp"
#include "runtime/tensor.hpp"
#include "syntax/ast.hpp"

namespace zyntax {

struct Value;
struct ModuleInstance;
struct PendingBlock;  // interp/pending_block.hpp

struct RecordData {
  std::vector<std::pair<std::string, Value>> fields;  // in the order written
  Value* find(const std::string& name);
  const Value* find(const std::string& name) const;
};

struct FunctionData {
  const ast::FuncDef* def = nullptr;
  ModuleInstance* module = nullptr;  // whose globals the body sees
};

struct Value {
  // Pending: a compute block's result, not computed yet (so that blocks
  // fuse); only bindings, arguments and results of user functions and
  // blocks' inputs hold one, and reading it computes it.
  enum class Kind { None, Bool, Int, Float, Str, Tensor, List, Tuple, Record, Function, Builtin, DType, Module, Future, Pool, Pending };

  Kind kind = Kind::None;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;  // Str; Builtin: the builtin's name
  DType dtype = DType::F32;  // DType values; for Float, the precision it prints with
  Tensor tensor;
  std::shared_ptr<std::vector<Value>> items;  // List and Tuple
  std::shared_ptr<RecordData> record;
  std::shared_ptr<FunctionData> function;
  std::shared_ptr<ModuleInstance> module;
  std::shared_ptr<std::shared_future<Value>> future;
  std::shared_ptr<MemoryPool> pool;
  std::shared_ptr<PendingBlock> pending;  // null in a binding no statement reads again

  Value() = default;
  Value(const Value&) = default;
  Value(Value&&) noexcept = default;
  Value& operator=(const Value&) = default;
  Value& operator=(Value&&) noexcept = default;
  // Lists, tuples and records nested deeply (`a = [a]` in a loop) are freed
  // by a loop here, not by one destructor call per level.
  ~Value();

  static Value none() { return {}; }
  static Value of_bool(bool v);
  static Value of_int(int64_t v);
  static Value of_float(double v);
  static Value of_str(std::string v);
  static Value of_tensor(Tensor t);
  static Value of_list(std::vector<Value> v);
  static Value of_tuple(std::vector<Value> v);
  static Value of_record(std::vector<std::pair<std::string, Value>> fields);
  static Value of_builtin(std::string name);
  static Value of_dtype(DType t);
  static Value of_pending(std::shared_ptr<PendingBlock> p);

  bool is_number() const { return kind == Kind::Int || kind == Kind::Float || kind == Kind::Bool; }
  double as_double() const;  // Int, Float, Bool
  // A Scalar of a number, or of a tensor with one element.
  Scalar as_scalar() const;
};

// "int", "tensor[2, 3, f32]", "list", ... for messages.
std::string type_name(const Value& v);
// The text print() shows: 3, 2.5, "s" unquoted, tensors NumPy-like.
std::string to_display(const Value& v);
bool values_equal(const Value& a, const Value& b);
// Python-like truthiness: none, false, 0, "" and empty lists are false. Tensors of more
// than one element have no truth value (an error for the caller to report).
std::optional<bool> truthy(const Value& v);

}  // namespace zyntax
