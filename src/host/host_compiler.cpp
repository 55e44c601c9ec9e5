#include "host/host_compiler.hpp"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <map>

#include "host/host_abi.hpp"
#include "sema/function_annotations.hpp"
#include "support/scalar.hpp"

namespace zyntax::host {

std::string HostType::str() const {
  switch (kind) {
    case Kind::None: return "none";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return dtype == DType::F64 ? "float" : std::string("float (") + dtype_name(dtype) + ")";
    case Kind::Tensor: return std::string("tensor[") + dtype_name(dtype) + ", rank " + std::to_string(rank) + "]";
    case Kind::Record: {
      std::string s = "record{";
      for (size_t i = 0; i < field_names.size(); ++i) s += (i ? ", " : "") + field_names[i] + ": " + field_types[i].str();
      return s + "}";
    }
  }
  return "?";
}

namespace {

using Kind = HostType::Kind;

// Why a function stays interpreted, at the statement or expression that
// makes it so.
struct NotCompiled {
  Span span;
  std::string why;
  bool allocates = false;
  bool whatever_the_arguments = false;
};

[[noreturn]] void refuse(Span s, std::string why) { throw NotCompiled{s, std::move(why)}; }
// What the function's code alone rules out, whatever its arguments' types.
[[noreturn]] void refuse_always(Span s, std::string why) { throw NotCompiled{s, std::move(why), false, true}; }
// What allocates memory (what `@no_allocation` forbids) is never compiled.
[[noreturn]] void refuse_allocation(Span s, std::string what) { throw NotCompiled{s, what + " allocates", true, true}; }

bool is_number(const HostType& t) { return t.kind == Kind::Int || t.kind == Kind::Float; }

// The element dtypes compiled code reads and writes in place.
bool native_dtype(DType d) { return d == DType::F32 || d == DType::F64 || d == DType::I32 || d == DType::I64; }

// The scalar a tensor element reads as (a float keeps its dtype's precision).
HostType element_type(DType d) { return is_float(d) ? HostType{Kind::Float, d, 0} : HostType::of(Kind::Int); }

// The same kind of value (floats of any precision).
bool same_kind(const HostType& a, const HostType& b) { return a.kind == b.kind && (a.kind == Kind::Float || a == b); }

// A function compiled for argument types, and what it gives.
struct FunctionKey {
  const ast::FuncDef* def;
  std::vector<HostType> params;
  bool operator<(const FunctionKey& o) const {
    if (def != o.def) return def < o.def;
    if (params.size() != o.params.size()) return params.size() < o.params.size();
    for (size_t i = 0; i < params.size(); ++i) {
      std::string a = params[i].str(), b = o.params[i].str();
      if (a != b) return a < b;
    }
    return false;
  }
};

struct Local {
  HostType type;
  bool is_mutable = false;
  llvm::Value* slot = nullptr;  // an alloca (scalars) or the TensorArg* (tensors)
};

class Lowerer {
 public:
  Lowerer(const FunctionResolver& resolve, llvm::LLVMContext& ctx, llvm::Module& m, std::vector<ErrorSite>& sites)
      : resolve_(resolve), ctx_(ctx), m_(m), b_(ctx), sites_(sites) {
    i64_ = llvm::Type::getInt64Ty(ctx);
    i32_ = llvm::Type::getInt32Ty(ctx);
    i1_ = llvm::Type::getInt1Ty(ctx);
    f64_ = llvm::Type::getDoubleTy(ctx);
    ptr_ = llvm::PointerType::get(ctx, 0);
  }

  // The function for `def` at these types: bound names are its parameters
  // then the dimensions of its parameter types.
  llvm::Function* function(const ast::FuncDef& def, const std::vector<std::string>& names, const std::vector<HostType>& types,
                           HostType* result) {
    FunctionKey key{&def, types};
    auto it = functions_.find(key);
    if (it != functions_.end()) {
      *result = it->second.result;
      return it->second.fn;
    }
    Compiled& c = functions_[key];
    c.result = infer_result(def, names, types, key);
    *result = c.result;
    std::vector<llvm::Type*> params{ptr_};
    for (const HostType& t : types) params.push_back(llvm_type(t));
    auto* fty = llvm::FunctionType::get(c.result.kind == Kind::None ? llvm::Type::getVoidTy(ctx_) : llvm_type(c.result), params, false);
    c.fn = llvm::Function::Create(fty, llvm::Function::InternalLinkage, "zyntax_host_" + def.name + "_" + std::to_string(functions_.size()), m_);
    pending_.push_back({&def, names, types, c.fn, c.result});
    return c.fn;
  }

  // Emits the bodies of every function asked for so far, and of those their bodies call.
  void emit_pending() {
    while (!pending_.empty()) {
      Pending p = pending_.back();
      pending_.pop_back();
      emit_body(p);
    }
  }

  llvm::Type* llvm_type(const HostType& t) {
    switch (t.kind) {
      case Kind::Bool: return i1_;
      case Kind::Int: return i64_;
      case Kind::Float: return f64_;
      case Kind::Tensor:
      case Kind::Record: return ptr_;
      case Kind::None: return i64_;
    }
    return i64_;
  }

  bool writes_tensors = false;
  bool writes_records = false;
  bool calls_functions = false;

 private:
  struct Compiled {
    llvm::Function* fn = nullptr;
    HostType result;
  };
  struct Pending {
    const ast::FuncDef* def;
    std::vector<std::string> names;
    std::vector<HostType> types;
    llvm::Function* fn;
    HostType result;
  };

  // ------------------------------------------------------------ typing
  //
  // Types are found by walking the body once without emitting: each local
  // keeps the type of its first value, and every later value must have it.
  // A call of a function whose result is still being found (recursion)
  // types as unknown (nullopt), and so does what it flows into; the result
  // is what the known `return`s agree on.

  using Types = std::vector<std::map<std::string, Local>>;

  HostType infer_result(const ast::FuncDef& def, const std::vector<std::string>& names, const std::vector<HostType>& types,
                        const FunctionKey& key) {
    Types scopes(1);
    for (size_t i = 0; i < names.size(); ++i) scopes[0][names[i]] = {types[i], false, nullptr};
    in_progress_.push_back(key);
    std::optional<HostType> result;
    bool returns_nothing = false;
    type_block(def.body, scopes, result, returns_nothing);
    in_progress_.pop_back();
    if (!result) {
      if (returns_nothing || !ends_in_return(def.body)) return HostType::of(Kind::None);
      refuse(def.name_span, "its result's type depends only on itself");
    }
    if (returns_nothing || !always_returns(def.body)) refuse(def.name_span, "it returns a value on some paths and nothing on others");
    return *result;
  }

  // Every path through `b` ends in a return.
  static bool always_returns(const ast::Block& b) {
    if (b.stmts.empty()) return false;
    const ast::Stmt& last = *b.stmts.back();
    if (last.kind == ast::StmtKind::Return) return true;
    if (last.kind != ast::StmtKind::If) return false;
    const auto& i = ast::as<ast::If>(last);
    return i.has_else && always_returns(i.then_body) && always_returns(i.else_body);
  }

  static bool ends_in_return(const ast::Block& b) {
    return !b.stmts.empty() && b.stmts.back()->kind == ast::StmtKind::Return;
  }

  void type_block(const ast::Block& b, Types& scopes, std::optional<HostType>& result, bool& returns_nothing) {
    scopes.emplace_back();
    for (const ast::StmtPtr& s : b.stmts) type_stmt(*s, scopes, result, returns_nothing);
    scopes.pop_back();
  }

  static Local* find(Types& scopes, const std::string& name) {
    for (auto it = scopes.rbegin(); it != scopes.rend(); ++it) {
      auto f = it->find(name);
      if (f != it->end()) return &f->second;
    }
    return nullptr;
  }

  void type_stmt(const ast::Stmt& s, Types& scopes, std::optional<HostType>& result, bool& returns_nothing) {
    switch (s.kind) {
      case ast::StmtKind::Let: {
        const auto& l = ast::as<ast::Let>(s);
        if (l.destructure || l.names.size() != 1) refuse_always(s.span, "tuples are not compiled");
        if (l.type) refuse_always(l.type->span, "a typed 'let' is not compiled");
        if (!l.init) refuse_always(s.span, "a declaration without a value is not compiled");
        std::optional<HostType> t = type_of(*l.init, scopes);
        if (!t) refuse(l.init->span, "the type of '" + l.names[0] + "' depends on a recursive call");
        if (t->kind == Kind::None) refuse(l.init->span, "'" + l.names[0] + "' would hold none");
        if ((t->kind == Kind::Tensor || t->kind == Kind::Record) && l.is_mutable) refuse(s.span, "a mutable binding of a " + t->str() + " is not compiled");
        scopes.back()[l.names[0]] = {*t, l.is_mutable, nullptr};
        return;
      }
      case ast::StmtKind::Assign: {
        const auto& a = ast::as<ast::Assign>(s);
        std::optional<HostType> v = type_of(*a.value, scopes);
        std::optional<HostType> target = assign_target_type(a, scopes);
        if (v && target && !assignable(a, *target, *v))
          refuse(a.value->span, "assigning " + v->str() + " where " + target->str() + " is held changes its type");
        return;
      }
      case ast::StmtKind::ExprStmt: {
        const auto& e = ast::as<ast::ExprStmt>(s);
        if (e.expr->kind != ast::ExprKind::Call) refuse_always(s.span, "an expression statement that is not a call");
        type_of(*e.expr, scopes);
        return;
      }
      case ast::StmtKind::If: {
        const auto& i = ast::as<ast::If>(s);
        condition(*i.cond, scopes);
        type_block(i.then_body, scopes, result, returns_nothing);
        type_block(i.else_body, scopes, result, returns_nothing);
        return;
      }
      case ast::StmtKind::While: {
        const auto& w = ast::as<ast::While>(s);
        condition(*w.cond, scopes);
        type_block(w.body, scopes, result, returns_nothing);
        return;
      }
      case ast::StmtKind::For: {
        const auto& f = ast::as<ast::For>(s);
        scopes.emplace_back();
        for (const ast::ForRange& r : f.ranges) {
          if (!r.hi) refuse_always(r.span, "a loop over a value's items is not compiled (a range 'lo..hi' is)");
          for (const ast::Expr* e : {r.lo.get(), r.hi.get(), r.step.get()}) {
            if (!e) continue;
            std::optional<HostType> t = type_of(*e, scopes);
            if (!t || t->kind != Kind::Int) refuse(e->span, "a range bound that is not an integer");
          }
          // The interpreter binds the variable in the enclosing scope, where it outlives the loop.
          if (find(scopes, r.var)) refuse(r.var_span, "the loop variable '" + r.var + "' reuses a name already bound");
          scopes.back()[r.var] = {HostType::of(Kind::Int), false, nullptr};
        }
        type_block(f.body, scopes, result, returns_nothing);
        scopes.pop_back();
        return;
      }
      case ast::StmtKind::Return: {
        const auto& r = ast::as<ast::Return>(s);
        if (!r.value) {
          returns_nothing = true;
          return;
        }
        std::optional<HostType> t = type_of(*r.value, scopes);
        if (!t) return;
        if (t->kind == Kind::Tensor || t->kind == Kind::Record) refuse(r.value->span, "returning a " + t->str() + " is not compiled");
        if (t->kind == Kind::None) {
          returns_nothing = true;
          return;
        }
        if (result && !(*result == *t)) refuse(r.value->span, "it returns " + result->str() + " and " + t->str());
        result = t;
        return;
      }
      case ast::StmtKind::Break:
      case ast::StmtKind::Continue: return;
      case ast::StmtKind::BlockStmt: type_block(ast::as<ast::BlockStmt>(s).block, scopes, result, returns_nothing); return;
      case ast::StmtKind::FuncDef: refuse_always(s.span, "a function defined inside a function is not compiled");
      default: refuse_always(s.span, "this statement is not compiled");
    }
  }

  // A value may replace a local's, or be stored into a tensor's element,
  // without changing what the interpreter would hold.
  static bool assignable(const ast::Assign& a, const HostType& target, const HostType& v) {
    if (a.target->kind == ast::ExprKind::Index) {
      // Stored converted to the tensor's dtype: integers anywhere, floats into floats.
      return v.kind == Kind::Int || (v.kind == Kind::Float && target.kind == Kind::Float);
    }
    if (a.op == ast::AssignOp::Set) return target == v;
    // `x op= v` is `x = x op v`: an int stays an int only with an int; a
    // float becomes one printed as f64.
    if (target.kind == Kind::Float) return is_number(v) && target.dtype == DType::F64;
    if (target.kind == Kind::Int) return v.kind == Kind::Int;
    return false;
  }

  std::optional<HostType> assign_target_type(const ast::Assign& a, Types& scopes) {
    if (a.target->kind == ast::ExprKind::Name) {
      const auto& n = ast::as<ast::Name>(*a.target);
      Local* l = find(scopes, n.name);
      if (!l) refuse(a.target->span, "'" + n.name + "' is not a local of the function");
      if (!l->is_mutable) refuse(a.target->span, "'" + n.name + "' is not mutable");
      if (l->type.kind == Kind::Tensor || l->type.kind == Kind::Record) refuse(a.target->span, "rebinding a " + l->type.str() + " is not compiled");
      return l->type;
    }
    if (a.target->kind == ast::ExprKind::Index) {
      if (a.op != ast::AssignOp::Set) refuse(a.span, "a compound assignment into a tensor element is not compiled");
      return element_of(ast::as<ast::Index>(*a.target), scopes);
    }
    if (a.op != ast::AssignOp::Set && a.op != ast::AssignOp::Add && a.op != ast::AssignOp::Sub && a.op != ast::AssignOp::Mul &&
        a.op != ast::AssignOp::Div)
      refuse(a.span, "this assignment is not compiled");
    return field_of(ast::as<ast::Field>(*a.target), scopes);
  }

  // The type of `r.name` for a record argument with that field.
  HostType field_of(const ast::Field& fe, Types& scopes) {
    std::optional<HostType> base = type_of(*fe.base, scopes);
    if (!base || base->kind != Kind::Record) refuse(fe.span, "a field of what is not a record argument is not compiled");
    for (size_t i = 0; i < base->field_names.size(); ++i)
      if (base->field_names[i] == fe.field) return base->field_types[i];
    refuse(fe.field_span, "the record has no field '" + fe.field + "' (the interpreter reports it)");
  }

  // The element type of `t[i, j, ...]` with an index for every axis.
  HostType element_of(const ast::Index& ix, Types& scopes) {
    std::optional<HostType> base = type_of(*ix.base, scopes);
    if (!base || base->kind != Kind::Tensor) refuse(ix.base->span, "indexing what is not a tensor parameter is not compiled");
    if (static_cast<int>(ix.items.size()) != base->rank)
      refuse(ix.span, "an index that does not name one element (" + std::to_string(ix.items.size()) + " of " +
                          std::to_string(base->rank) + " axes) is not compiled");
    for (const ast::IndexItem& it : ix.items) {
      if (it.is_slice) refuse(it.span, "slices are not compiled");
      std::optional<HostType> t = type_of(*it.index, scopes);
      if (!t || t->kind != Kind::Int) refuse(it.span, "an index that is not an integer is not compiled");
    }
    return element_type(base->dtype);
  }

  void condition(const ast::Expr& e, Types& scopes) {
    std::optional<HostType> t = type_of(e, scopes);
    if (t && (t->kind == Kind::Tensor || t->kind == Kind::Record)) refuse(e.span, "a " + t->str() + " as a condition is not compiled");
    if (t && t->kind == Kind::None) refuse(e.span, "none as a condition is not compiled");
  }

  std::optional<HostType> type_of(const ast::Expr& e, Types& scopes) {
    switch (e.kind) {
      case ast::ExprKind::IntLit:
        if (!ast::as<ast::IntLit>(e).unit.empty()) refuse_always(e.span, "a number with a unit is not compiled");
        return HostType::of(Kind::Int);
      case ast::ExprKind::FloatLit: return HostType::of(Kind::Float);
      case ast::ExprKind::BoolLit: return HostType::of(Kind::Bool);
      case ast::ExprKind::Name: {
        const auto& n = ast::as<ast::Name>(e);
        if (Local* l = find(scopes, n.name)) return l->type;
        refuse_always(e.span, "'" + n.name + "' is not a local of the function (module-level values are read by the interpreter)");
      }
      case ast::ExprKind::Unary: {
        const auto& u = ast::as<ast::Unary>(e);
        std::optional<HostType> t = type_of(*u.operand, scopes);
        if (u.op == ast::UnOp::Not) {
          if (t && !is_number(*t) && t->kind != Kind::Bool) refuse(e.span, "'not' of " + t->str() + " is not compiled");
          return HostType::of(Kind::Bool);
        }
        if (t && !is_number(*t)) refuse(e.span, "a sign on " + t->str() + " is not compiled");
        if (t && t->kind == Kind::Float) return HostType::of(Kind::Float);  // printed as f64 after
        return t;
      }
      case ast::ExprKind::Binary: return type_binary(ast::as<ast::Binary>(e), scopes);
      case ast::ExprKind::Index: return element_of(ast::as<ast::Index>(e), scopes);
      case ast::ExprKind::Field: return field_of(ast::as<ast::Field>(e), scopes);
      case ast::ExprKind::Call: return type_call(ast::as<ast::Call>(e), scopes);
      case ast::ExprKind::StringLit: refuse_allocation(e.span, "a string");
      case ast::ExprKind::List: refuse_allocation(e.span, "a list");
      case ast::ExprKind::Tuple: refuse_allocation(e.span, "a tuple");
      case ast::ExprKind::Record: refuse_allocation(e.span, "a record");
      case ast::ExprKind::Compute: refuse_allocation(e.span, "a compute block (its result)");
      default: refuse_always(e.span, "this expression is not compiled");
    }
  }

  std::optional<HostType> type_binary(const ast::Binary& b, Types& scopes) {
    std::optional<HostType> x = type_of(*b.lhs, scopes), y = type_of(*b.rhs, scopes);
    using Op = ast::BinOp;
    if (b.op == Op::And || b.op == Op::Or) {
      for (const auto& [t, side] : {std::pair{x, b.lhs.get()}, {y, b.rhs.get()}})
        if (t && !is_number(*t) && t->kind != Kind::Bool) refuse(side->span, "'" + std::string(ast::binop_text(b.op)) + "' of " + t->str() + " is not compiled");
      return HostType::of(Kind::Bool);
    }
    if (b.op == Op::MatMul) refuse_always(b.span, "'@' is not compiled");
    for (const auto& t : {x, y})
      if (t && !is_number(*t)) refuse(b.span, "'" + std::string(ast::binop_text(b.op)) + "' on " + t->str() + " is not compiled");
    if (b.op == Op::Eq || b.op == Op::Ne) {
      if (x && y && !same_kind(*x, *y)) refuse(b.span, "comparing an int with a float is not compiled");
      return HostType::of(Kind::Bool);
    }
    if (b.op == Op::Lt || b.op == Op::Le || b.op == Op::Gt || b.op == Op::Ge) return HostType::of(Kind::Bool);
    if (!x || !y) return (x && x->kind == Kind::Float) || (y && y->kind == Kind::Float) ? std::optional(HostType::of(Kind::Float)) : std::nullopt;
    bool floats = x->kind == Kind::Float || y->kind == Kind::Float;
    if (b.op == Op::Pow && !floats) {
      // An integer power with a negative exponent is a float: only constant exponents.
      if (b.rhs->kind != ast::ExprKind::IntLit) refuse(b.span, "an integer power whose exponent is not a constant is not compiled");
    }
    return HostType::of(floats ? Kind::Float : Kind::Int);
  }

  std::optional<HostType> type_call(const ast::Call& c, Types& scopes) {
    if (c.callee->kind != ast::ExprKind::Name) refuse_always(c.callee->span, "calling this is not compiled");
    const std::string& name = ast::as<ast::Name>(*c.callee).name;
    for (const ast::Arg& a : c.args)
      if (!a.name.empty()) refuse_always(a.name_span, "keyword arguments are not compiled");
    if (find(scopes, name)) refuse(c.callee->span, "calling a local value is not compiled");
    std::vector<HostType> args;
    std::vector<bool> known;
    bool all_known = true;
    for (const ast::Arg& a : c.args) {
      std::optional<HostType> t = type_of(*a.value, scopes);
      all_known = all_known && t.has_value();
      args.push_back(t.value_or(HostType{}));
    }
    if (const ast::FuncDef* def = resolve_(name)) {
      if (!all_known) refuse(c.span, "an argument's type depends on a recursive call");
      std::vector<std::string> names;
      std::vector<HostType> types;
      bind_callee(*def, args, c, names, types);
      FunctionKey key{def, types};
      for (const FunctionKey& k : in_progress_)
        if (!(k < key) && !(key < k)) return std::nullopt;
      HostType result;
      function(*def, names, types, &result);
      return result;
    }
    if (name == "float" || name == "int") {
      if (args.size() != 1 || (all_known && !is_number(args[0]))) refuse(c.span, "'" + name + "' of this is not compiled");
      return HostType::of(name == "float" ? Kind::Float : Kind::Int);
    }
    if (name == "len") {
      if (args.size() != 1 || (all_known && args[0].kind != Kind::Tensor)) refuse(c.span, "'len' of what is not a tensor is not compiled");
      if (args[0].rank == 0) refuse(c.span, "'len' of a 0-d tensor");
      return HostType::of(Kind::Int);
    }
    static const char* const kMakesTensors[] = {"zeros", "ones", "full", "arange", "rand", "randn", "reshape", "transpose", "concat",
                                                "split", "matmul", "where", "astype", "load", "to_device", "allocate", "str"};
    for (const char* m : kMakesTensors)
      if (name == m) refuse_allocation(c.span, "'" + name + "'");
    std::optional<MathFn> fn = parse_math_fn(name);
    if (!fn) refuse_always(c.callee->span, "'" + name + "' is not compiled (a builtin without a native form, or not one of the module's functions)");
    if (static_cast<int>(args.size()) != math_fn_arity(*fn)) refuse(c.span, "'" + name + "' with " + std::to_string(args.size()) + " arguments is not compiled");
    if (!all_known) return std::nullopt;
    bool ints = math_fn_keeps_int(*fn);
    for (const HostType& t : args) {
      if (!is_number(t)) refuse(c.span, "'" + name + "' of " + t.str() + " is not compiled");
      ints = ints && t.kind == Kind::Int;
    }
    return HostType::of(ints ? Kind::Int : Kind::Float);
  }

  // The names and types a callee binds: its parameters, then the
  // dimensions its tensor parameters' types name, as the interpreter binds them.
  void bind_callee(const ast::FuncDef& def, const std::vector<HostType>& args, const ast::Call& c, std::vector<std::string>& names,
                   std::vector<HostType>& types) {
    if (args.size() != def.params.size()) refuse(c.span, "a call that leaves parameters to their defaults is not compiled");
    std::vector<std::string> dims;
    for (size_t i = 0; i < def.params.size(); ++i) {
      const ast::Param& p = def.params[i];
      names.push_back(p.name);
      types.push_back(args[i]);
      if (!p.type) continue;
      const ast::TypeExpr& t = *p.type;
      if (args[i].kind == Kind::Tensor) {
        if (t.name != "tensor") refuse(c.span, "an argument whose declared type is checked by the interpreter");
        if (static_cast<int>(t.dims.size()) != args[i].rank) refuse(c.span, "an argument whose rank differs from its declared type's");
        if (!t.dtype.empty() && t.dtype != dtype_name(args[i].dtype)) refuse(c.span, "an argument whose dtype differs from its declared type's");
        for (const ast::ExprPtr& d : t.dims) {
          if (d->kind != ast::ExprKind::Name) refuse(d->span, "a dimension that is not a name is checked by the interpreter");
          const std::string& dn = ast::as<ast::Name>(*d).name;
          if (std::find(dims.begin(), dims.end(), dn) != dims.end() ||
              std::find(names.begin(), names.end(), dn) != names.end())
            refuse(d->span, "a dimension named twice is checked by the interpreter");
          dims.push_back(dn);
        }
      } else if (args[i].kind == Kind::Record) {
        if (t.name != "record") refuse(p.span, "a parameter whose declared type is checked by the interpreter");
      } else {
        bool ok = (t.name == "int" && args[i].kind == Kind::Int) || (t.name == "bool" && args[i].kind == Kind::Bool) ||
                  ((t.name == "float" || t.name == "f32" || t.name == "f64") && args[i].kind == Kind::Float);
        if (!ok || !t.dims.empty()) refuse(p.span, "a parameter whose declared type is checked by the interpreter");
      }
    }
    for (const std::string& d : dims) {
      names.push_back(d);
      types.push_back(HostType::of(Kind::Int));
    }
    if (def.return_type) {
      const std::string& r = def.return_type->name;
      if (r != "int" && r != "float" && r != "bool" && r != "f32" && r != "f64") refuse(def.return_type->span, "a declared result type checked by the interpreter");
    }
  }

  // ------------------------------------------------------------ emission

  void emit_body(const Pending& p) {
    FunctionAnnotations marks = read_function_annotations(*p.def);
    unchecked_ = marks.unchecked != nullptr;
    if (marks.inline_always) p.fn->addFnAttr(llvm::Attribute::AlwaysInline);
    fn_ = p.fn;
    result_ = p.result;
    llvm::BasicBlock* entry = llvm::BasicBlock::Create(ctx_, "entry", fn_);
    b_.SetInsertPoint(entry);
    ctx_arg_ = fn_->getArg(0);
    scopes_.assign(1, {});
    for (size_t i = 0; i < p.names.size(); ++i) {
      llvm::Value* arg = fn_->getArg(static_cast<unsigned>(i + 1));
      if (p.types[i].kind == Kind::Tensor || p.types[i].kind == Kind::Record) {
        scopes_[0][p.names[i]] = {p.types[i], false, arg};
      } else {
        llvm::Value* slot = alloca(p.types[i]);
        b_.CreateStore(arg, slot);
        scopes_[0][p.names[i]] = {p.types[i], true, slot};
      }
    }
    loops_.clear();
    emit_block(p.def->body);
    if (!b_.GetInsertBlock()->getTerminator()) {
      if (result_.kind == Kind::None) b_.CreateRetVoid();
      else b_.CreateUnreachable();  // every path returned (typing checked the last statement)
    }
  }

  llvm::Value* alloca(const HostType& t) {
    llvm::IRBuilder<> eb(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
    return eb.CreateAlloca(llvm_type(t));
  }

  bool open() const { return b_.GetInsertBlock() && !b_.GetInsertBlock()->getTerminator(); }

  void continue_in(const char* name) { b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, name, fn_)); }

  void emit_block(const ast::Block& blk) {
    scopes_.emplace_back();
    for (const ast::StmtPtr& s : blk.stmts) {
      if (!open()) continue_in("dead");
      emit_stmt(*s);
    }
    scopes_.pop_back();
  }

  Local* lookup(const std::string& name) { return find(scopes_, name); }

  // A failed check: the site is recorded in the context, and the function
  // returns at once; its callers return in turn (check_after_call).
  void fail(ErrorSite site, llvm::Value* detail = nullptr, llvm::Value* tensor = nullptr) {
    int id = static_cast<int>(sites_.size());
    sites_.push_back(site);
    b_.CreateStore(b_.getInt32(id), b_.CreateStructGEP(context_type(), ctx_arg_, 0));
    if (detail) b_.CreateStore(detail, b_.CreateStructGEP(context_type(), ctx_arg_, 4));
    if (tensor) b_.CreateStore(tensor, b_.CreateStructGEP(context_type(), ctx_arg_, 5));
    leave();
  }

  void leave() {
    if (result_.kind == Kind::None) b_.CreateRetVoid();
    else b_.CreateRet(llvm::UndefValue::get(llvm_type(result_)));
  }

  // Branches to a failure unless `ok`.
  void check(llvm::Value* ok, ErrorSite site, llvm::Value* detail = nullptr, llvm::Value* tensor = nullptr) {
    llvm::BasicBlock* bad = llvm::BasicBlock::Create(ctx_, "check_failed", fn_);
    llvm::BasicBlock* good = llvm::BasicBlock::Create(ctx_, "checked", fn_);
    b_.CreateCondBr(ok, good, bad, llvm::MDBuilder(ctx_).createLikelyBranchWeights());
    b_.SetInsertPoint(bad);
    fail(site, detail, tensor);
    b_.SetInsertPoint(good);
  }

  llvm::StructType* context_type() {
    if (!context_type_)
      context_type_ = llvm::StructType::create(ctx_, {i32_, i32_, i32_, i32_, i64_, ptr_}, "zyntax_host_context");
    return context_type_;
  }

  void emit_stmt(const ast::Stmt& s) {
    switch (s.kind) {
      case ast::StmtKind::Let: {
        const auto& l = ast::as<ast::Let>(s);
        auto [t, v] = emit(*l.init);
        if (t.kind == Kind::Tensor || t.kind == Kind::Record) {
          scopes_.back()[l.names[0]] = {t, false, v};
        } else {
          llvm::Value* slot = alloca(t);
          b_.CreateStore(v, slot);
          scopes_.back()[l.names[0]] = {t, l.is_mutable, slot};
        }
        return;
      }
      case ast::StmtKind::Assign: return emit_assign(ast::as<ast::Assign>(s));
      case ast::StmtKind::ExprStmt: emit(*ast::as<ast::ExprStmt>(s).expr); return;
      case ast::StmtKind::If: {
        const auto& i = ast::as<ast::If>(s);
        llvm::Value* c = truth(*i.cond);
        llvm::BasicBlock* then_bb = llvm::BasicBlock::Create(ctx_, "then", fn_);
        llvm::BasicBlock* else_bb = llvm::BasicBlock::Create(ctx_, "else", fn_);
        llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, "endif", fn_);
        b_.CreateCondBr(c, then_bb, else_bb);
        b_.SetInsertPoint(then_bb);
        emit_block(i.then_body);
        if (open()) b_.CreateBr(done);
        b_.SetInsertPoint(else_bb);
        emit_block(i.else_body);
        if (open()) b_.CreateBr(done);
        b_.SetInsertPoint(done);
        return;
      }
      case ast::StmtKind::While: {
        const auto& w = ast::as<ast::While>(s);
        llvm::BasicBlock* head = llvm::BasicBlock::Create(ctx_, "while", fn_);
        llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx_, "do", fn_);
        llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, "endwhile", fn_);
        b_.CreateBr(head);
        b_.SetInsertPoint(head);
        b_.CreateCondBr(truth(*w.cond), body, done);
        b_.SetInsertPoint(body);
        loops_.push_back({done, head});
        emit_block(w.body);
        loops_.pop_back();
        if (open()) b_.CreateBr(head);
        b_.SetInsertPoint(done);
        return;
      }
      case ast::StmtKind::For: {
        const auto& f = ast::as<ast::For>(s);
        scopes_.emplace_back();
        llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, "endfor", fn_);
        emit_for(f, 0, done);
        if (open()) b_.CreateBr(done);
        b_.SetInsertPoint(done);
        scopes_.pop_back();
        return;
      }
      case ast::StmtKind::Return: {
        const auto& r = ast::as<ast::Return>(s);
        if (!r.value || result_.kind == Kind::None) {
          if (r.value) emit(*r.value);
          b_.CreateRetVoid();
          return;
        }
        auto [t, v] = emit(*r.value);
        b_.CreateRet(v);
        return;
      }
      case ast::StmtKind::Break: b_.CreateBr(loops_.back().exit); return;
      case ast::StmtKind::Continue: b_.CreateBr(loops_.back().next); return;
      case ast::StmtKind::BlockStmt: emit_block(ast::as<ast::BlockStmt>(s).block); return;
      default: refuse(s.span, "this statement is not compiled");
    }
  }

  // `for a in lo..hi [step k], b in ...`: ranges nest; a break leaves them all.
  void emit_for(const ast::For& f, size_t r, llvm::BasicBlock* exit_all) {
    if (r == f.ranges.size()) {
      emit_block(f.body);
      return;
    }
    const ast::ForRange& range = f.ranges[r];
    llvm::Value* lo = emit(*range.lo).second;
    llvm::Value* hi = emit(*range.hi).second;
    llvm::Value* step = b_.getInt64(1);
    if (range.step) {
      step = emit(*range.step).second;
      check(b_.CreateICmpSGT(step, b_.getInt64(0)), {ErrorSite::Kind::StepNotPositive, range.step->span}, step);
    }
    llvm::Value* var = alloca(HostType::of(Kind::Int));
    b_.CreateStore(lo, var);
    scopes_.back()[range.var] = {HostType::of(Kind::Int), false, var};
    llvm::BasicBlock* head = llvm::BasicBlock::Create(ctx_, "for", fn_);
    llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx_, "body", fn_);
    llvm::BasicBlock* next = llvm::BasicBlock::Create(ctx_, "next", fn_);
    llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, "endrange", fn_);
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    llvm::Value* i = b_.CreateLoad(i64_, var);
    b_.CreateCondBr(b_.CreateICmpSLT(i, hi), body, done);
    b_.SetInsertPoint(body);
    loops_.push_back({exit_all, next});
    emit_for(f, r + 1, exit_all);
    loops_.pop_back();
    if (open()) b_.CreateBr(next);
    b_.SetInsertPoint(next);
    // The interpreter stops where the next value would pass hi (or wrap).
    llvm::Value* cur = b_.CreateLoad(i64_, var);
    llvm::Value* left = b_.CreateSub(hi, cur);
    llvm::BasicBlock* advance = llvm::BasicBlock::Create(ctx_, "advance", fn_);
    b_.CreateCondBr(b_.CreateICmpSLT(left, step), done, advance);
    b_.SetInsertPoint(advance);
    b_.CreateStore(b_.CreateAdd(cur, step), var);
    b_.CreateBr(head);
    b_.SetInsertPoint(done);
  }

  void emit_assign(const ast::Assign& a) {
    static const ast::BinOp kOps[] = {ast::BinOp::Add, ast::BinOp::Add, ast::BinOp::Sub, ast::BinOp::Mul, ast::BinOp::Div};
    if (a.target->kind == ast::ExprKind::Name) {
      Local* l = lookup(ast::as<ast::Name>(*a.target).name);
      auto [vt, v] = emit(*a.value);
      if (a.op != ast::AssignOp::Set) {
        llvm::Value* cur = b_.CreateLoad(llvm_type(l->type), l->slot);
        std::tie(vt, v) = arithmetic(kOps[static_cast<int>(a.op)], l->type, cur, vt, v, a.span);
      }
      b_.CreateStore(v, l->slot);
      return;
    }
    if (a.target->kind == ast::ExprKind::Field) {
      auto [vt, v] = emit(*a.value);
      auto [ft, slot] = field_address(ast::as<ast::Field>(*a.target));
      if (a.op != ast::AssignOp::Set) {
        llvm::Value* word = b_.CreateLoad(i64_, slot);
        llvm::Value* cur = ft.kind == Kind::Float ? b_.CreateBitCast(word, f64_) : word;
        std::tie(vt, v) = arithmetic(kOps[static_cast<int>(a.op)], ft, cur, vt, v, a.span);
      }
      b_.CreateStore(as_word(vt, v), slot);
      writes_records = true;
      return;
    }
    const auto& ix = ast::as<ast::Index>(*a.target);
    auto [vt, v] = emit(*a.value);
    auto [dtype, ptr] = element_address(ix);
    b_.CreateStore(to_element(vt, v, dtype), ptr);
    writes_tensors = true;
  }

  llvm::Value* to_element(const HostType& t, llvm::Value* v, DType d) {
    switch (d) {
      case DType::F32: return t.kind == Kind::Int ? b_.CreateSIToFP(v, b_.getFloatTy()) : b_.CreateFPTrunc(v, b_.getFloatTy());
      case DType::F64: return t.kind == Kind::Int ? b_.CreateSIToFP(v, f64_) : v;
      case DType::I32: return b_.CreateTrunc(v, i32_);
      default: return v;
    }
  }

  // The address of `t[i, ...]`, after the interpreter's checks (an index
  // may count from the end).
  std::pair<DType, llvm::Value*> element_address(const ast::Index& ix) {
    auto [bt, base] = emit(*ix.base);
    llvm::StructType* tensor_type = llvm::StructType::get(ctx_, {ptr_, llvm::ArrayType::get(i64_, kMostHostTensorRank)});
    llvm::Value* flat = b_.getInt64(0);
    for (size_t axis = 0; axis < ix.items.size(); ++axis) {
      const ast::IndexItem& it = ix.items[axis];
      llvm::Value* i = emit(*it.index).second;
      llvm::Value* n = b_.CreateLoad(i64_, b_.CreateInBoundsGEP(tensor_type, base, {b_.getInt32(0), b_.getInt32(1), b_.getInt32(axis)}));
      // -n <= i < n, as unsigned: i + n < 2n.
      llvm::Value* ok = b_.CreateAnd(b_.CreateICmpSGE(i, b_.CreateNeg(n)), b_.CreateICmpSLT(i, n));
      if (!unchecked_) check(ok, {ErrorSite::Kind::IndexOutOfRange, it.span.valid() ? it.span : ix.span, static_cast<int>(axis), bt.rank}, i, base);
      llvm::Value* k = b_.CreateSelect(b_.CreateICmpSLT(i, b_.getInt64(0)), b_.CreateAdd(i, n), i);
      flat = b_.CreateAdd(b_.CreateMul(flat, n), k);
    }
    llvm::Value* data = b_.CreateLoad(ptr_, b_.CreateStructGEP(tensor_type, base, 0));
    llvm::Type* et = element_llvm(bt.dtype);
    return {bt.dtype, b_.CreateInBoundsGEP(et, data, flat)};
  }

  llvm::Type* element_llvm(DType d) {
    switch (d) {
      case DType::F32: return b_.getFloatTy();
      case DType::F64: return f64_;
      case DType::I32: return i32_;
      default: return i64_;
    }
  }

  llvm::Value* truth(const ast::Expr& e) {
    auto [t, v] = emit(e);
    return truth_of(t, v);
  }

  llvm::Value* truth_of(const HostType& t, llvm::Value* v) {
    switch (t.kind) {
      case Kind::Bool: return v;
      case Kind::Int: return b_.CreateICmpNE(v, b_.getInt64(0));
      case Kind::Float: return b_.CreateFCmpUNE(v, llvm::ConstantFP::get(f64_, 0.0));
      default: return b_.getFalse();
    }
  }

  llvm::Value* as_f64(const HostType& t, llvm::Value* v) { return t.kind == Kind::Int ? b_.CreateSIToFP(v, f64_) : v; }

  std::pair<HostType, llvm::Value*> emit(const ast::Expr& e) {
    switch (e.kind) {
      case ast::ExprKind::IntLit: return {HostType::of(Kind::Int), b_.getInt64(ast::as<ast::IntLit>(e).value)};
      case ast::ExprKind::FloatLit: return {HostType::of(Kind::Float), llvm::ConstantFP::get(f64_, ast::as<ast::FloatLit>(e).value)};
      case ast::ExprKind::BoolLit: return {HostType::of(Kind::Bool), b_.getInt1(ast::as<ast::BoolLit>(e).value)};
      case ast::ExprKind::Name: {
        Local* l = lookup(ast::as<ast::Name>(e).name);
        if (!l) refuse(e.span, "'" + ast::as<ast::Name>(e).name + "' is not a local of the function");
        if (l->type.kind == Kind::Tensor || l->type.kind == Kind::Record) return {l->type, l->slot};
        return {l->type, b_.CreateLoad(llvm_type(l->type), l->slot)};
      }
      case ast::ExprKind::Unary: {
        const auto& u = ast::as<ast::Unary>(e);
        auto [t, v] = emit(*u.operand);
        if (u.op == ast::UnOp::Not) return {HostType::of(Kind::Bool), b_.CreateNot(truth_of(t, v))};
        HostType rt = t.kind == Kind::Float ? HostType::of(Kind::Float) : t;
        if (u.op == ast::UnOp::Pos) return {rt, v};
        return {rt, t.kind == Kind::Float ? b_.CreateFNeg(v) : b_.CreateSub(b_.getInt64(0), v)};
      }
      case ast::ExprKind::Binary: return emit_binary(ast::as<ast::Binary>(e));
      case ast::ExprKind::Index: {
        auto [dtype, ptr] = element_address(ast::as<ast::Index>(e));
        llvm::Value* x = b_.CreateLoad(element_llvm(dtype), ptr);
        switch (dtype) {
          case DType::F32: return {element_type(dtype), b_.CreateFPExt(x, f64_)};
          case DType::I32: return {HostType::of(Kind::Int), b_.CreateSExt(x, i64_)};
          default: return {element_type(dtype), x};
        }
      }
      case ast::ExprKind::Field: {
        auto [t, slot] = field_address(ast::as<ast::Field>(e));
        llvm::Value* word = b_.CreateLoad(i64_, slot);
        if (t.kind == Kind::Float) return {t, b_.CreateBitCast(word, f64_)};
        if (t.kind == Kind::Bool) return {t, b_.CreateICmpNE(word, b_.getInt64(0))};
        return {t, word};
      }
      case ast::ExprKind::Call: return emit_call(ast::as<ast::Call>(e));
      default: refuse(e.span, "this expression is not compiled");
    }
  }

  // A record field's type and the address of its 64-bit word.
  std::pair<HostType, llvm::Value*> field_address(const ast::Field& fe) {
    auto [rt, base] = emit(*fe.base);
    for (size_t i = 0; i < rt.field_names.size(); ++i)
      if (rt.field_names[i] == fe.field) return {rt.field_types[i], b_.CreateConstInBoundsGEP1_64(i64_, base, i)};
    refuse(fe.field_span, "the record has no field '" + fe.field + "'");
  }

  llvm::Value* as_word(const HostType& t, llvm::Value* v) {
    if (t.kind == Kind::Float) return b_.CreateBitCast(v, i64_);
    if (t.kind == Kind::Bool) return b_.CreateZExt(v, i64_);
    return v;
  }

  std::pair<HostType, llvm::Value*> emit_binary(const ast::Binary& b) {
    using Op = ast::BinOp;
    if (b.op == Op::And || b.op == Op::Or) {
      llvm::Value* x = truth(*b.lhs);
      llvm::BasicBlock* from = b_.GetInsertBlock();
      llvm::BasicBlock* rhs = llvm::BasicBlock::Create(ctx_, "rhs", fn_);
      llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, "logic", fn_);
      if (b.op == Op::And) b_.CreateCondBr(x, rhs, done);
      else b_.CreateCondBr(x, done, rhs);
      b_.SetInsertPoint(rhs);
      llvm::Value* y = truth(*b.rhs);
      llvm::BasicBlock* rhs_end = b_.GetInsertBlock();
      b_.CreateBr(done);
      b_.SetInsertPoint(done);
      llvm::PHINode* phi = b_.CreatePHI(i1_, 2);
      phi->addIncoming(x, from);
      phi->addIncoming(y, rhs_end);
      return {HostType::of(Kind::Bool), phi};
    }
    auto [xt, x] = emit(*b.lhs);
    auto [yt, y] = emit(*b.rhs);
    return arithmetic(b.op, xt, x, yt, y, b.op_span.valid() ? b.op_span : b.span);
  }

  std::pair<HostType, llvm::Value*> arithmetic(ast::BinOp op, const HostType& xt, llvm::Value* x, const HostType& yt, llvm::Value* y, Span span) {
    using Op = ast::BinOp;
    bool floats = xt.kind == Kind::Float || yt.kind == Kind::Float;
    const HostType boolean = HostType::of(Kind::Bool);
    if (floats) {
      x = as_f64(xt, x);
      y = as_f64(yt, y);
      switch (op) {
        case Op::Add: return {HostType::of(Kind::Float), b_.CreateFAdd(x, y)};
        case Op::Sub: return {HostType::of(Kind::Float), b_.CreateFSub(x, y)};
        case Op::Mul: return {HostType::of(Kind::Float), b_.CreateFMul(x, y)};
        case Op::Div: return {HostType::of(Kind::Float), b_.CreateFDiv(x, y)};
        case Op::Mod: return {HostType::of(Kind::Float), b_.CreateFRem(x, y)};
        case Op::Pow: return {HostType::of(Kind::Float), libm("pow", {x, y})};
        case Op::Eq: return {boolean, b_.CreateFCmpOEQ(x, y)};
        case Op::Ne: return {boolean, b_.CreateFCmpUNE(x, y)};
        case Op::Lt: return {boolean, b_.CreateFCmpOLT(x, y)};
        case Op::Le: return {boolean, b_.CreateFCmpOLE(x, y)};
        case Op::Gt: return {boolean, b_.CreateFCmpOGT(x, y)};
        case Op::Ge: return {boolean, b_.CreateFCmpOGE(x, y)};
        default: break;
      }
      refuse(span, "this operator is not compiled");
    }
    const HostType integer = HostType::of(Kind::Int);
    switch (op) {
      case Op::Add: return {integer, b_.CreateAdd(x, y)};
      case Op::Sub: return {integer, b_.CreateSub(x, y)};
      case Op::Mul: return {integer, b_.CreateMul(x, y)};
      case Op::Div:
      case Op::Mod: {
        bool div = op == Op::Div;
        check(b_.CreateICmpNE(y, b_.getInt64(0)),
              {div ? ErrorSite::Kind::IntegerDivisionByZero : ErrorSite::Kind::IntegerRemainderByZero, span});
        // x / -1 wraps (and x % -1 is 0) where the hardware would trap.
        llvm::Value* minus_one = b_.CreateICmpEQ(y, b_.getInt64(-1));
        llvm::Value* safe_y = b_.CreateSelect(minus_one, b_.getInt64(1), y);
        llvm::Value* q = div ? b_.CreateSDiv(x, safe_y) : b_.CreateSRem(x, safe_y);
        llvm::Value* at_minus_one = div ? b_.CreateSub(b_.getInt64(0), x) : b_.getInt64(0);
        return {integer, b_.CreateSelect(minus_one, at_minus_one, q)};
      }
      case Op::Pow: return {integer, b_.CreateCall(helper("zyntax_rt_host_ipow", i64_, {i64_, i64_}), {x, y})};
      case Op::Eq: return {boolean, b_.CreateICmpEQ(x, y)};
      case Op::Ne: return {boolean, b_.CreateICmpNE(x, y)};
      case Op::Lt: return {boolean, b_.CreateICmpSLT(x, y)};
      case Op::Le: return {boolean, b_.CreateICmpSLE(x, y)};
      case Op::Gt: return {boolean, b_.CreateICmpSGT(x, y)};
      case Op::Ge: return {boolean, b_.CreateICmpSGE(x, y)};
      default: break;
    }
    refuse(span, "this operator is not compiled");
  }

  llvm::Function* helper(const char* name, llvm::Type* ret, std::vector<llvm::Type*> params) {
    llvm::Function* f = m_.getFunction(name);
    if (f) return f;
    return llvm::Function::Create(llvm::FunctionType::get(ret, params, false), llvm::Function::ExternalLinkage, name, m_);
  }

  llvm::Value* libm(const char* name, std::vector<llvm::Value*> args) {
    std::vector<llvm::Type*> params(args.size(), f64_);
    return b_.CreateCall(helper(name, f64_, params), args);
  }

  std::pair<HostType, llvm::Value*> emit_call(const ast::Call& c) {
    const std::string& name = ast::as<ast::Name>(*c.callee).name;
    std::vector<std::pair<HostType, llvm::Value*>> args;
    for (const ast::Arg& a : c.args) args.push_back(emit(*a.value));
    if (const ast::FuncDef* def = resolve_(name)) {
      std::vector<HostType> arg_types;
      for (auto& a : args) arg_types.push_back(a.first);
      std::vector<std::string> names;
      std::vector<HostType> types;
      bind_callee(*def, arg_types, c, names, types);
      HostType result;
      llvm::Function* callee = function(*def, names, types, &result);
      std::vector<llvm::Value*> values{ctx_arg_};
      for (auto& a : args) values.push_back(a.second);
      // The callee's dimensions: its tensors' extents.
      for (size_t i = 0; i < def->params.size(); ++i) {
        if (types[i].kind != Kind::Tensor) continue;
        llvm::StructType* tensor_type = llvm::StructType::get(ctx_, {ptr_, llvm::ArrayType::get(i64_, kMostHostTensorRank)});
        for (int axis = 0; axis < types[i].rank; ++axis)
          values.push_back(b_.CreateLoad(i64_, b_.CreateInBoundsGEP(tensor_type, args[i].second, {b_.getInt32(0), b_.getInt32(1), b_.getInt32(axis)})));
      }
      // Calls nested as deep as the interpreter allows, counted on.
      calls_functions = true;
      llvm::Value* depth_ptr = b_.CreateStructGEP(context_type(), ctx_arg_, 1);
      llvm::Value* depth = b_.CreateLoad(i32_, depth_ptr);
      llvm::Value* most = b_.CreateLoad(i32_, b_.CreateStructGEP(context_type(), ctx_arg_, 2));
      check(b_.CreateICmpSLT(depth, most), {ErrorSite::Kind::CallsTooDeep, c.span});
      b_.CreateStore(b_.CreateAdd(depth, b_.getInt32(1)), depth_ptr);
      llvm::Value* r = b_.CreateCall(callee, values);
      b_.CreateStore(depth, depth_ptr);
      llvm::Value* site = b_.CreateLoad(i32_, b_.CreateStructGEP(context_type(), ctx_arg_, 0));
      llvm::BasicBlock* failed = llvm::BasicBlock::Create(ctx_, "callee_failed", fn_);
      llvm::BasicBlock* fine = llvm::BasicBlock::Create(ctx_, "returned", fn_);
      b_.CreateCondBr(b_.CreateICmpSLT(site, b_.getInt32(0)), fine, failed, llvm::MDBuilder(ctx_).createLikelyBranchWeights());
      b_.SetInsertPoint(failed);
      leave();
      b_.SetInsertPoint(fine);
      if (result.kind == Kind::None) return {result, b_.getInt64(0)};
      return {result, r};
    }
    if (name == "float") return {HostType::of(Kind::Float), as_f64(args[0].first, args[0].second)};
    if (name == "int") {
      if (args[0].first.kind == Kind::Int) return args[0];
      refuse(c.span, "'int' of a float is not compiled");
    }
    if (name == "len") {
      llvm::StructType* tensor_type = llvm::StructType::get(ctx_, {ptr_, llvm::ArrayType::get(i64_, kMostHostTensorRank)});
      return {HostType::of(Kind::Int),
              b_.CreateLoad(i64_, b_.CreateInBoundsGEP(tensor_type, args[0].second, {b_.getInt32(0), b_.getInt32(1), b_.getInt32(0)}))};
    }
    MathFn fn = *parse_math_fn(name);
    bool ints = math_fn_keeps_int(fn);
    for (auto& a : args) ints = ints && a.first.kind == Kind::Int;
    std::vector<llvm::Value*> values{b_.getInt32(static_cast<int>(fn))};
    for (size_t k = 0; k < 3; ++k) {
      if (k < args.size()) values.push_back(ints ? args[k].second : as_f64(args[k].first, args[k].second));
      else values.push_back(ints ? static_cast<llvm::Value*>(b_.getInt64(0)) : llvm::ConstantFP::get(f64_, 0.0));
    }
    if (ints) return {HostType::of(Kind::Int), b_.CreateCall(helper("zyntax_rt_host_math_i64", i64_, {i32_, i64_, i64_, i64_}), values)};
    return {HostType::of(Kind::Float), b_.CreateCall(helper("zyntax_rt_host_math_f64", f64_, {i32_, f64_, f64_, f64_}), values)};
  }

  struct Loop {
    llvm::BasicBlock* exit;
    llvm::BasicBlock* next;
  };

  const FunctionResolver& resolve_;
  llvm::LLVMContext& ctx_;
  llvm::Module& m_;
  llvm::IRBuilder<> b_;
  std::vector<ErrorSite>& sites_;
  llvm::Type *i64_, *i32_, *i1_, *f64_;
  llvm::PointerType* ptr_;
  llvm::StructType* context_type_ = nullptr;
  std::map<FunctionKey, Compiled> functions_;
  std::vector<FunctionKey> in_progress_;
  std::vector<Pending> pending_;
  // The function being emitted.
  llvm::Function* fn_ = nullptr;
  llvm::Value* ctx_arg_ = nullptr;
  HostType result_;
  bool unchecked_ = false;  // @unchecked: tensor indices are not checked
  Types scopes_;
  std::vector<Loop> loops_;
};

// "line 7: ..." for a reason a function stays interpreted.
std::string located(const SourceFile* file, Span s, const std::string& why) {
  if (!file || !s.valid()) return why;
  return "line " + std::to_string(file->line_col(s.begin).line) + ": " + why;
}

}  // namespace

HostLowering lower_host_function(const ast::FuncDef& def, const std::vector<std::string>& names, const std::vector<HostType>& types,
                                 const FunctionResolver& resolve, llvm::LLVMContext& ctx, const SourceFile* file) {
  HostLowering out;
  for (const HostType& t : types) {
    if (t.kind == Kind::Tensor && (!native_dtype(t.dtype) || t.rank > kMostHostTensorRank)) {
      out.why = "a " + t.str() + " argument is not compiled (f32, f64, i32 and i64 tensors up to rank " + std::to_string(kMostHostTensorRank) + " are)";
      return out;
    }
  }
  HostCompilation c;
  c.names = names;
  c.types = types;
  c.symbol = "zyntax_host_entry";
  auto module = std::make_unique<llvm::Module>("zyntax_host_" + def.name, ctx);
  try {
    Lowerer lower(resolve, ctx, *module, c.sites);
    llvm::Function* fn = lower.function(def, names, types, &c.result);
    lower.emit_pending();
    c.writes_tensors = lower.writes_tensors;
    c.writes_records = lower.writes_records;
    c.calls_functions = lower.calls_functions;
    // The entry: arguments as 64-bit words, the result likewise.
    llvm::IRBuilder<> b(ctx);
    llvm::Type* ptr = llvm::PointerType::get(ctx, 0);
    auto* entry = llvm::Function::Create(llvm::FunctionType::get(b.getVoidTy(), {ptr, ptr, ptr}, false), llvm::Function::ExternalLinkage,
                                         c.symbol, *module);
    b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", entry));
    std::vector<llvm::Value*> args{entry->getArg(0)};
    for (size_t i = 0; i < types.size(); ++i) {
      llvm::Value* word = b.CreateLoad(b.getInt64Ty(), b.CreateConstInBoundsGEP1_64(b.getInt64Ty(), entry->getArg(1), i));
      switch (types[i].kind) {
        case Kind::Float: args.push_back(b.CreateBitCast(word, b.getDoubleTy())); break;
        case Kind::Bool: args.push_back(b.CreateICmpNE(word, b.getInt64(0))); break;
        case Kind::Tensor:
        case Kind::Record: args.push_back(b.CreateIntToPtr(word, ptr)); break;
        default: args.push_back(word);
      }
    }
    llvm::Value* r = b.CreateCall(fn, args);
    switch (c.result.kind) {
      case Kind::None: break;
      case Kind::Float: b.CreateStore(b.CreateBitCast(r, b.getInt64Ty()), entry->getArg(2)); break;
      case Kind::Bool: b.CreateStore(b.CreateZExt(r, b.getInt64Ty()), entry->getArg(2)); break;
      default: b.CreateStore(r, entry->getArg(2));
    }
    b.CreateRetVoid();
  } catch (const NotCompiled& n) {
    out.why = located(file, n.span, n.why);
    out.where = n.span;
    out.reason = n.why;
    out.allocates = n.allocates;
    out.whatever_the_arguments = n.whatever_the_arguments;
    return out;
  }
  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyModule(*module, &os)) throw std::logic_error("compiled host function '" + def.name + "' does not verify: " + os.str());
  // What the code is: the source of the module's functions it was made from, and the types.
  c.key = "host function " + def.name + " at " + std::to_string(def.span.begin) + "\n";
  for (size_t i = 0; i < names.size(); ++i) c.key += names[i] + ": " + types[i].str() + "\n";
  if (file) {
    c.key += file->path() + "\n" + file->text();
  } else {
    c.key.clear();  // no source to name it by: not kept on disk
  }
  c.module = std::move(module);
  out.compiled = std::move(c);
  return out;
}

}  // namespace zyntax::host

extern "C" double zyntax_rt_host_math_f64(int fn, double x, double y, double z) {
  using namespace zyntax;
  Scalar args[3] = {Scalar::of_float(x, DType::F64), Scalar::of_float(y, DType::F64), Scalar::of_float(z, DType::F64)};
  return eval_math(static_cast<MathFn>(fn), std::span<const Scalar>(args, static_cast<size_t>(math_fn_arity(static_cast<MathFn>(fn))))).f;
}

extern "C" int64_t zyntax_rt_host_math_i64(int fn, int64_t x, int64_t y, int64_t z) {
  using namespace zyntax;
  Scalar args[3] = {Scalar::of_int(x, DType::I64), Scalar::of_int(y, DType::I64), Scalar::of_int(z, DType::I64)};
  return eval_math(static_cast<MathFn>(fn), std::span<const Scalar>(args, static_cast<size_t>(math_fn_arity(static_cast<MathFn>(fn))))).i;
}

extern "C" int64_t zyntax_rt_host_ipow(int64_t x, int64_t y) {
  using namespace zyntax;
  return eval_binary(BinaryOp::Pow, Scalar::of_int(x, DType::I64), Scalar::of_int(y, DType::I64)).i;
}
