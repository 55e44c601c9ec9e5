// Dispatch of builtin calls, methods and attributes to the builtins_*.cpp
// implementations, and the safety net that turns data and memory failures
// into located errors.
#include "interp/builtins.hpp"

#include <algorithm>
#include <map>
#include <new>
#include <stdexcept>

#include "interp/builtins_args.hpp"
#include "interp/host_convert.hpp"
#include "sema/builtin_names.hpp"

namespace zyntax {

namespace {

struct Registry {
  std::map<std::string, BuiltinImpl, std::less<>> impls;
};

const Registry& registry() {
  static const Registry r = [] {
    Registry reg;
    for (std::span<const BuiltinEntry> table : {io_builtins(), creation_builtins(), layout_builtins(), math_builtins(),
                                                reduction_builtins(), value_builtins(), device_builtins(), memory_builtins(),
                                                dist_builtins()})
      for (const BuiltinEntry& e : table) reg.impls.emplace(e.name, e.impl);
    // Exactly the functions the checker knows by name (sema/builtin_names).
    std::vector<std::string> implemented;
    for (const auto& [name, impl] : reg.impls) implemented.push_back(name);
    if (implemented != builtin_names()) {
      std::string missing, extra;
      for (const std::string& n : builtin_names())
        if (!reg.impls.count(n)) missing += " " + n;
      for (const std::string& n : implemented)
        if (!is_builtin(n)) extra += " " + n;
      throw std::logic_error("the builtins implemented differ from sema/builtin_names: missing" + missing + "; not listed" + extra);
    }
    return reg;
  }();
  return r;
}

Value guarded_call(BuiltinImpl impl, const Invocation& inv) {
  try {
    return impl(inv);
  } catch (const DataError& e) {
    throw Error(inv.args.span, e.what());
  } catch (const std::bad_alloc&) {
    throw Error(inv.args.span, inv.name + "(): not enough memory");
  }
}

Value item(const Invocation& inv) {
  Args a(inv, {{"self"}});
  const Tensor& t = a.tensor(0);
  if (t.numel() != 1)
    a.fail_call("only a tensor with one element has an item, got " + type_name(a[0]));
  return value_of_scalar(t.get(0));
}

Value append(const Invocation& inv) {
  Args a(inv, {{"self"}, {"item"}});
  a[0].items->push_back(a[1]);
  return Value::none();
}

struct Method {
  Value::Kind receiver;
  const char* name;
  // A builtin taking the receiver as its first argument, or an own implementation.
  const char* builtin;
  BuiltinImpl impl;
};

const Method kMethods[] = {
    {Value::Kind::Tensor, "to_device", "to_device", nullptr},
    {Value::Kind::Tensor, "astype", "astype", nullptr},
    {Value::Kind::Tensor, "reshape", "reshape", nullptr},
    {Value::Kind::Tensor, "transpose", "transpose", nullptr},
    {Value::Kind::Tensor, "sum", "sum", nullptr},
    {Value::Kind::Tensor, "mean", "mean", nullptr},
    {Value::Kind::Tensor, "prod", "prod", nullptr},
    {Value::Kind::Tensor, "max", "max", nullptr},
    {Value::Kind::Tensor, "min", "min", nullptr},
    {Value::Kind::Tensor, "argmax", "argmax", nullptr},
    {Value::Kind::Tensor, "argmin", "argmin", nullptr},
    {Value::Kind::Tensor, "any", "any", nullptr},
    {Value::Kind::Tensor, "all", "all", nullptr},
    {Value::Kind::Tensor, "item", nullptr, item},
    {Value::Kind::List, "append", nullptr, append},
    {Value::Kind::List, "len", "len", nullptr},
    {Value::Kind::Pool, "allocate", nullptr, pool_allocate},
    {Value::Kind::Pool, "free", nullptr, pool_free},
    {Value::Kind::Pool, "reset", nullptr, pool_reset},
};

const Method* find_method(const Value& self, std::string_view name) {
  for (const Method& m : kMethods)
    if (m.receiver == self.kind && name == m.name) return &m;
  return nullptr;
}

const char* receiver_noun(Value::Kind k) {
  return k == Value::Kind::Tensor ? "tensor" : k == Value::Kind::Pool ? "memory_pool" : "list";
}

}  // namespace

Value call_builtin(const std::string& name, CallArgs& args, BuiltinContext& ctx) {
  auto it = registry().impls.find(name);
  if (it == registry().impls.end()) throw Error(args.span, "unknown builtin '" + name + "'");
  return guarded_call(it->second, Invocation{name, args, ctx});
}

bool has_method(const Value& self, const std::string& name) { return find_method(self, name) != nullptr; }

Value call_method(const Value& self, const std::string& name, CallArgs& args, BuiltinContext& ctx) {
  const Method* m = find_method(self, name);
  if (!m) throw Error(args.span, type_name(self) + " has no method '" + name + "'");
  CallArgs with_self = args;
  with_self.positional.insert(with_self.positional.begin(), self);
  with_self.positional_spans.insert(with_self.positional_spans.begin(), args.span);
  BuiltinImpl impl = m->impl ? m->impl : registry().impls.at(m->builtin);
  return guarded_call(impl, Invocation{std::string(receiver_noun(self.kind)) + "." + name, with_self, ctx, 1});
}

bool get_attribute(const Value& self, const std::string& name, Value& out) {
  if (self.kind == Value::Kind::Pool) {
    if (name == "device") out = Value::of_str(self.pool->device());
    else if (name == "capacity") out = Value::of_int(self.pool->capacity());
    else if (name == "used") out = Value::of_int(self.pool->used());
    else return false;
    return true;
  }
  if (self.kind != Value::Kind::Tensor || !self.tensor.valid()) return false;
  const Tensor& t = self.tensor;
  if (name == "shape") {
    std::vector<Value> dims;
    for (int64_t d : t.shape()) dims.push_back(Value::of_int(d));
    out = Value::of_list(std::move(dims));
  } else if (name == "dtype") {
    out = Value::of_dtype(t.dtype());
  } else if (name == "device") {
    out = Value::of_str(t.device());
  } else if (name == "rank") {
    out = Value::of_int(t.rank());
  } else if (name == "size") {
    out = Value::of_int(t.numel());
  } else if (name == "T") {
    Tensor transposed = transpose(t);
    transposed.set_device(t.device());
    out = Value::of_tensor(std::move(transposed));
  } else {
    return false;
  }
  return true;
}

}  // namespace zyntax
