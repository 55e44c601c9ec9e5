#include "interp/direct_call.hpp"

#include <algorithm>
#include <map>
#include <string>

#include "interp/compiled_call.hpp"
#include "support/stack.hpp"
#include "syntax/ast.hpp"

namespace zyntax {

DirectCall::Shape DirectCall::shape_of(const Value& v) {
  if (v.kind == Value::Kind::Tensor && v.tensor.valid()) return {v.kind, v.tensor.dtype(), v.tensor.rank()};
  return {v.kind};
}

namespace {

bool size_holds(const Value& a, int axis, const std::vector<Value>& args, int other_param, int other_axis, int64_t value) {
  int64_t actual = a.tensor.dim(axis);
  if (other_param < 0) return actual == value;
  const Value& o = args[static_cast<size_t>(other_param)];
  return actual == (other_axis < 0 ? o.i : o.tensor.dim(other_axis));
}

}  // namespace

std::unique_ptr<DirectCall> DirectCall::make(const ast::FuncDef& def, const std::vector<Value>& args, const host::HostCode& code) {
  if (args.size() != def.params.size()) return nullptr;
  std::unique_ptr<DirectCall> d(new DirectCall(code));
  // The names binding defines, as the interpreter's bind_call and
  // check_type define them: parameters, and the sizes their types name.
  struct Bound {
    int param;
    int axis;      // -1: the parameter itself
    bool is_int;   // what a later type's size is compared with
  };
  std::map<std::string, Bound> scope;
  std::vector<bool> as_float(args.size(), false);
  for (size_t i = 0; i < args.size(); ++i) {
    const Value& v = args[i];
    const int param = static_cast<int>(i);
    if (v.kind != Value::Kind::Int && v.kind != Value::Kind::Float && v.kind != Value::Kind::Bool && v.kind != Value::Kind::Tensor)
      return nullptr;
    if (v.kind == Value::Kind::Tensor && !v.tensor.valid()) return nullptr;
    d->shapes_.push_back(shape_of(v));
    const ast::Param& p = def.params[i];
    if (p.type) {
      const ast::TypeExpr& t = *p.type;
      const std::string& n = t.name;
      if (n == "int") {
        if (v.kind != Value::Kind::Int) return nullptr;
      } else if (n == "float") {
        if (v.kind != Value::Kind::Float && v.kind != Value::Kind::Int) return nullptr;
        as_float[i] = v.kind == Value::Kind::Int;
      } else if (n == "bool") {
        if (v.kind != Value::Kind::Bool) return nullptr;
      } else if (n == "str" || n == "list" || n == "tuple" || n == "record") {
        return nullptr;
      } else if (parse_dtype(n)) {
        if (!v.is_number()) return nullptr;
      } else if (n == "tensor") {
        if (v.kind != Value::Kind::Tensor) return nullptr;
        if (!t.dims.empty() && static_cast<size_t>(v.tensor.rank()) != t.dims.size()) return nullptr;
        if (!t.dtype.empty())
          if (std::optional<DType> dt = parse_dtype(t.dtype); dt && *dt != v.tensor.dtype()) return nullptr;
        for (size_t a = 0; a < t.dims.size(); ++a) {
          const ast::Expr& e = *t.dims[a];
          const int axis = static_cast<int>(a);
          SizeCheck check{param, axis};
          if (e.kind == ast::ExprKind::Name) {
            const std::string& dim = ast::as<ast::Name>(e).name;
            auto it = scope.find(dim);
            if (it == scope.end()) {
              scope[dim] = {param, axis, true};
              continue;
            }
            if (!it->second.is_int) continue;  // the interpreter compares sizes with integers only
            check.other_param = it->second.param;
            check.other_axis = it->second.axis;
          } else if (e.kind == ast::ExprKind::IntLit && ast::as<ast::IntLit>(e).unit.empty()) {
            check.value = ast::as<ast::IntLit>(e).value;
          } else {
            return nullptr;  // a size computed from others: the interpreter evaluates it
          }
          if (!size_holds(v, axis, args, check.other_param, check.other_axis, check.value)) return nullptr;
          d->sizes_.push_back(check);
        }
      }
      // Other names (records' types, `any`) are not checked when binding.
    }
    scope[p.name] = {param, -1, v.kind == Value::Kind::Int && !as_float[i]};
  }
  // The code's values: the parameters, then the sizes, by name.
  std::vector<std::string> names;
  for (const ast::Param& p : def.params) names.push_back(p.name);
  std::vector<std::string> sizes;
  for (const auto& [name, b] : scope)
    if (std::find(names.begin(), names.end(), name) == names.end()) sizes.push_back(name);
  names.insert(names.end(), sizes.begin(), sizes.end());  // a map's keys come sorted
  if (names != code.names) return nullptr;
  for (const std::string& name : names) {
    const Bound& b = scope.at(name);
    d->slots_.push_back({b.param, b.axis, b.axis < 0 && as_float[static_cast<size_t>(b.param)]});
  }
  // The declared result, checked as the interpreter checks it.
  if (def.return_type) {
    const std::string& r = def.return_type->name;
    host::HostType::Kind k = code.result.kind;
    using K = host::HostType::Kind;
    if (r == "float" && (k == K::Int || k == K::Float)) d->result_as_float = k == K::Int;
    else if (r == "int" && k == K::Int) {
    } else if (r == "bool" && k == K::Bool) {
    } else if (parse_dtype(r) && (k == K::Int || k == K::Float || k == K::Bool)) {
    } else {
      return nullptr;
    }
  }
  return d;
}

bool DirectCall::takes(const std::vector<Value>& args) const {
  if (args.size() != shapes_.size()) return false;
  for (size_t i = 0; i < args.size(); ++i)
    if (!(shape_of(args[i]) == shapes_[i]) || (args[i].kind == Value::Kind::Tensor && !args[i].tensor.valid())) return false;
  for (const SizeCheck& c : sizes_)
    if (!size_holds(args[static_cast<size_t>(c.param)], c.axis, args, c.other_param, c.other_axis, c.value)) return false;
  return true;
}

Value DirectCall::run(const std::vector<Value>& args, int max_depth) const {
  std::vector<Value> values;
  values.reserve(slots_.size());
  for (const Slot& s : slots_) {
    const Value& a = args[static_cast<size_t>(s.param)];
    if (s.axis >= 0) values.push_back(Value::of_int(a.tensor.dim(s.axis)));
    else if (s.as_float) values.push_back(Value::of_float(static_cast<double>(a.i)));
    else values.push_back(a);
  }
  std::vector<Value*> bound;
  for (Value& v : values) bound.push_back(&v);
  auto call = [&] {
    CompiledCall compiled(code_, bound);
    host::HostCallContext ctx;
    ctx.depth = 1;  // as the interpreter counts its outermost call
    ctx.max_depth = max_depth;
    uint64_t result = compiled.run(ctx);
    return compiled.finish(ctx, result, max_depth);
  };
  // Code that calls functions may recurse as deep as the limit allows.
  Value result = code_.calls_functions ? with_deep_stack(call) : call();
  if (result_as_float && result.kind == Value::Kind::Int) result = Value::of_float(static_cast<double>(result.i));
  return result;
}

}  // namespace zyntax
