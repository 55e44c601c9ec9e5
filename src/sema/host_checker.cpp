#include "sema/host_checker.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "sema/builtin_names.hpp"
#include "sema/function_annotations.hpp"
#include "sema/kernel_annotations.hpp"
#include "sema/static_type.hpp"
#include "support/nearest_name.hpp"
#include "support/scalar.hpp"

namespace zyntax {

namespace {

using K = StaticType::Kind;

struct Symbol {
  StaticType type;
  Span decl;
  bool is_mutable = false;
  std::vector<std::pair<std::string, int>> param_axes;  // a dimension of these parameters' types
};

using Scope = std::map<std::string, Symbol>;

// The checker's view of one module: its globals and where it came from.
struct ModuleInfo {
  LoadedModule* source = nullptr;
  Scope globals;
  bool checked = false;
};

class Checker;

// Answers a kernel's questions about host names from the checker's scopes.
class StaticHostEnv : public HostEnv {
 public:
  explicit StaticHostEnv(const Checker& c) : checker_(c) {}
  std::optional<HostBinding> lookup(std::string_view name) const override;

 private:
  const Checker& checker_;
};

class Checker {
 public:
  Checker(Session& s, ComputeBlockChecker& blocks) : session_(s), blocks_(blocks) {}

  void check_module(LoadedModule& m) {
    ModuleInfo& info = modules_[m.path];
    if (info.checked) return;
    info.checked = true;
    info.source = &m;
    ModuleInfo* saved_module = module_;
    auto saved_scopes = std::move(scopes_);
    scopes_.clear();
    module_ = &info;
    // Functions first, so calls may come before definitions; their bodies
    // are checked after the top level, when every global is known.
    std::vector<const ast::FuncDef*> functions;
    hoist(m.ast.body, info.globals, functions);
    for (const ast::StmtPtr& s : m.ast.body.stmts) stmt(*s);
    for (const ast::FuncDef* f : functions) function_body(*f);
    module_ = saved_module;
    scopes_ = std::move(saved_scopes);
  }

  const Symbol* lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto f = it->find(name);
      if (f != it->end()) return &f->second;
    }
    auto g = module_->globals.find(name);
    return g == module_->globals.end() ? nullptr : &g->second;
  }

 private:
  DiagnosticEngine& diags() { return session_.diags(); }
  Scope& innermost() { return scopes_.empty() ? module_->globals : scopes_.back(); }

  void hoist(const ast::Block& b, Scope& scope, std::vector<const ast::FuncDef*>& functions) {
    for (const ast::StmtPtr& s : b.stmts) {
      if (s->kind != ast::StmtKind::FuncDef) continue;
      const auto& f = ast::as<ast::FuncDef>(*s);
      if (auto it = scope.find(f.name); it != scope.end() && it->second.type.kind == K::Function)
        diags().error(f.name_span, "'" + f.name + "' is defined twice").note(it->second.decl, "first defined here");
      StaticType t = StaticType::of(K::Function);
      t.function = &f;
      scope[f.name] = Symbol{t, f.name_span, false, {}};
      functions.push_back(&f);
    }
  }

  // ------------------------------------------------------------ statements

  void block(const ast::Block& b) {
    scopes_.emplace_back();
    std::vector<const ast::FuncDef*> functions;
    hoist(b, scopes_.back(), functions);
    for (const ast::StmtPtr& s : b.stmts) stmt(*s);
    for (const ast::FuncDef* f : functions) function_body(*f);
    scopes_.pop_back();
  }

  void stmt(const ast::Stmt& s) {
    using ast::StmtKind;
    if (diags().saturated()) return;
    switch (s.kind) {
      case StmtKind::Let: return let(ast::as<ast::Let>(s));
      case StmtKind::Assign: return assign(ast::as<ast::Assign>(s));
      case StmtKind::ExprStmt: expr(*ast::as<ast::ExprStmt>(s).expr); return;
      case StmtKind::If: {
        const auto& i = ast::as<ast::If>(s);
        expr(*i.cond);
        block(i.then_body);
        block(i.else_body);
        return;
      }
      case StmtKind::For: {
        const auto& f = ast::as<ast::For>(s);
        scopes_.emplace_back();
        for (const ast::ForRange& r : f.ranges) {
          StaticType var;
          if (r.hi) {
            for (const ast::Expr* e : {r.lo.get(), r.hi.get(), r.step.get()}) {
              if (!e) continue;
              StaticType t = expr(*e);
              if (t.known() && t.kind != K::Int)
                diags().error(e->span, "a range bound must be an integer, but this is " + describe(t));
            }
            var = StaticType::integer();
          } else {
            StaticType t = expr(*r.iterable);
            if (t.kind == K::List && !t.elems.empty()) var = t.elems[0];
            if (t.kind == K::Tensor && t.rank && *t.rank > 1) var = StaticType::tensor(*t.rank - 1, t.dtype);
          }
          scopes_.back()[r.var] = Symbol{var, r.var_span, false, {}};
        }
        ++loop_depth_;
        block(f.body);
        --loop_depth_;
        scopes_.pop_back();
        return;
      }
      case StmtKind::While: {
        const auto& w = ast::as<ast::While>(s);
        expr(*w.cond);
        ++loop_depth_;
        block(w.body);
        --loop_depth_;
        return;
      }
      case StmtKind::Return: {
        const auto& r = ast::as<ast::Return>(s);
        if (r.value) expr(*r.value);
        return;
      }
      case StmtKind::Break:
      case StmtKind::Continue:
        if (loop_depth_ == 0) diags().error(s.span, "break and continue belong inside a loop");
        return;
      case StmtKind::FuncDef: return;  // hoisted
      case StmtKind::Import: return import(ast::as<ast::Import>(s));
      case StmtKind::Config: return config(ast::as<ast::Config>(s));
      case StmtKind::BlockStmt: block(ast::as<ast::BlockStmt>(s).block); return;
      case StmtKind::Yield: diags().error(s.span, "yield belongs inside a reduce kernel's compute block"); return;
      case StmtKind::SharedVar: diags().error(s.span, "shared arrays belong inside compute blocks"); return;
      case StmtKind::Annotation:
        diags().error(s.span, "annotations such as @" + ast::as<ast::AnnotationStmt>(s).annotation.name +
                                  " belong inside compute blocks");
        return;
    }
  }

  void let(const ast::Let& l) {
    StaticType t = l.init ? expr(*l.init) : StaticType{};
    if (l.type) {
      // A dimension name the type introduces (`let x: tensor[n, m] = ...`)
      // is an integer from here on, bound to x's axis when the let runs.
      Scope introduced;
      StaticType declared = from_type(*l.type, &introduced, l.destructure ? "" : l.names[0]);
      for (auto& [name, sym] : introduced)
        if (!lookup(name)) innermost()[name] = sym;
      if (declared.known()) t = declared;
    }
    if (!l.destructure) {
      innermost()[l.names[0]] = Symbol{t, l.name_spans[0], l.is_mutable, {}};
      return;
    }
    if (t.kind == K::Future && t.inner) t = *t.inner;
    if (t.kind == K::Tuple && t.elems.size() != l.names.size())
      diags().error(l.init->span, "cannot unpack " + std::to_string(t.elems.size()) + " values into " +
                                      std::to_string(l.names.size()) + " names");
    for (size_t i = 0; i < l.names.size(); ++i) {
      StaticType e = t.kind == K::Tuple && i < t.elems.size() ? t.elems[i] : StaticType{};
      innermost()[l.names[i]] = Symbol{e, l.name_spans[i], l.is_mutable, {}};
    }
  }

  void assign(const ast::Assign& a) {
    StaticType v = expr(*a.value);
    if (a.target->kind != ast::ExprKind::Name) {
      expr(*a.target);
      return;
    }
    const std::string& name = ast::as<ast::Name>(*a.target).name;
    Symbol* sym = const_cast<Symbol*>(lookup(name));
    if (!sym) {
      diags().error(a.target->span, "assignment to undeclared name '" + name + "'")
          .with_hint("declare it first: `var " + name + " = ...` or `let mut " + name + " = ...`");
      return;
    }
    if (!sym->is_mutable) {
      diags().error(a.target->span, "cannot assign to '" + name + "': it was declared with let")
          .note(sym->decl, "declared here")
          .with_hint("declare it with `let mut` or `var` to make it mutable");
      return;
    }
    // A variable that changes keeps only what all its values share.
    if (a.op == ast::AssignOp::Set && sym->type.kind != v.kind) sym->type = StaticType{};
    if (sym->type.kind == K::Int) sym->type.int_value.reset();
    if (sym->type.kind == K::Tensor) sym->type = StaticType::tensor(sym->type.rank == v.rank ? v.rank : std::nullopt);
  }

  void import(const ast::Import& imp) {
    std::string path = session_.resolve_import(imp, *module_->source);
    LoadedModule* m = session_.load(path, imp.span);
    if (!m) return;
    if (modules_.count(m->path) && !modules_[m->path].checked) return;
    if (importing_.count(m->path)) {
      diags().error(imp.span, "import cycle: '" + imp.path + "' imports this file back");
      return;
    }
    importing_.insert(m->path);
    check_module(*m);
    importing_.erase(m->path);
    StaticType t = StaticType::of(K::Module);
    t.module = m;
    std::string name = imp.alias;
    if (name.empty()) {
      name = imp.path;
      size_t slash = name.find_last_of('/');
      if (slash != std::string::npos) name = name.substr(slash + 1);
      name = name.substr(0, name.find('.'));
    }
    innermost()[name] = Symbol{t, imp.span, false, {}};
  }

  void config(const ast::Config& c) {
    for (const ast::RecordField& e : c.entries) {
      StaticType t = expr(*e.value);
      if (e.name == "compute_device") {
        if (t.known() && t.kind != K::Str) diags().error(e.value->span, "compute_device takes a device name in quotes");
      } else if (e.name == "seed") {
        if (t.known() && t.kind != K::Int) diags().error(e.value->span, "seed takes an integer");
      } else {
        diags().error(e.name_span, "unknown config key '" + e.name + "'").with_hint("known keys: compute_device, seed");
      }
    }
  }

  void function_body(const ast::FuncDef& f) {
    read_function_annotations(f, &diags());
    scopes_.emplace_back();
    std::set<std::string> seen;
    for (const ast::Param& p : f.params) {
      if (!seen.insert(p.name).second) diags().error(p.span, "parameter '" + p.name + "' is declared twice");
      if (p.default_value) expr(*p.default_value);
      StaticType t = p.type ? from_type(*p.type, &scopes_.back(), p.name) : StaticType{};
      scopes_.back()[p.name] = Symbol{t, p.span, false, {}};
    }
    if (f.return_type) from_type(*f.return_type, &scopes_.back(), "");
    int saved_loops = loop_depth_;
    loop_depth_ = 0;
    block(f.body);
    loop_depth_ = saved_loops;
    scopes_.pop_back();
  }

  // The static type a written type promises. Tensor dims that are names
  // become integer variables of `dims` (when given) bound to `param`'s axes.
  StaticType from_type(const ast::TypeExpr& t, Scope* dims, const std::string& param) {
    const std::string& n = t.name;
    if (n == "int") return StaticType::integer();
    if (n == "float") return StaticType::of(K::Float);
    if (n == "bool") return StaticType::of(K::Bool);
    if (n == "str") return StaticType::of(K::Str);
    if (n == "list") return StaticType::of(K::List);
    if (n == "tuple") return StaticType::of(K::Tuple);
    if (n == "record") return StaticType::of(K::Record);
    if (n == "none") return StaticType::of(K::None);
    if (parse_dtype(n)) return StaticType::of(is_float(*parse_dtype(n)) ? K::Float : K::Int);
    if (n == "tensor") {
      StaticType out = StaticType::tensor(t.dims.empty() ? std::nullopt : std::optional<int>(static_cast<int>(t.dims.size())));
      if (!t.dtype.empty()) out.dtype = parse_dtype(t.dtype);
      for (size_t a = 0; a < t.dims.size(); ++a) {
        const ast::Expr& d = *t.dims[a];
        if (auto c = constant_int(d)) {
          out.extents[a] = *c;
        } else if (d.kind == ast::ExprKind::Name) {
          const std::string& dim = ast::as<ast::Name>(d).name;
          if (dims && !dims->count(dim))
            (*dims)[dim] = Symbol{StaticType::integer(), d.span, false, {{param, static_cast<int>(a)}}};
          else if (dims && !(*dims)[dim].param_axes.empty())
            (*dims)[dim].param_axes.push_back({param, static_cast<int>(a)});
        } else if (dims) {
          expr(d);
        }
      }
      return out;
    }
    diags().error(t.span, "unknown type '" + n + "'")
        .with_hint("types are int, float, bool, str, list, tuple, record, tensor[dims..., dtype] and element types such as f32");
    return {};
  }

  // ------------------------------------------------------------ expressions

  static std::string describe(const StaticType& t) {
    switch (t.kind) {
      case K::Unknown: return "unknown";
      case K::None: return "none";
      case K::Bool: return "a bool";
      case K::Int: return "an int";
      case K::Float: return "a float";
      case K::Str: return "a str";
      case K::Tensor: return "a tensor";
      case K::List: return "a list";
      case K::Tuple: return "a tuple";
      case K::Record: return "a record";
      case K::Function: return "a function";
      case K::Builtin: return "a builtin function";
      case K::DType: return "a dtype";
      case K::Module: return "a module";
      case K::Future: return "a future";
    }
    return "a value";
  }

  void unknown_name(const ast::Name& n) {
    std::vector<std::string> candidates;
    for (const Scope& s : scopes_)
      for (const auto& [k, v] : s) candidates.push_back(k);
    for (const auto& [k, v] : module_->globals) candidates.push_back(k);
    for (const std::string& b : builtin_names()) candidates.push_back(b);
    std::string best = nearest_name(n.name, candidates);
    // Else a member of a module in scope: `gelu` for `nn.gelu`.
    if (best.empty()) {
      std::vector<std::string> members;
      auto add_members = [&](const std::string& alias, const Symbol& s) {
        if (s.type.kind != K::Module || !s.type.module) return;
        for (const auto& [member, v] : modules_[s.type.module->path].globals) members.push_back(alias + "." + member);
      };
      for (const Scope& s : scopes_)
        for (const auto& [k, v] : s) add_members(k, v);
      for (const auto& [k, v] : module_->globals) add_members(k, v);
      for (const std::string& m : members)
        if (m.substr(m.find('.') + 1) == n.name) best = m;
      if (best.empty()) {
        std::vector<std::string> bare;
        for (const std::string& m : members) bare.push_back(m.substr(m.find('.') + 1));
        std::string near = nearest_name(n.name, bare);
        for (const std::string& m : members)
          if (!near.empty() && m.substr(m.find('.') + 1) == near) best = m;
      }
    }
    Diagnostic& d = diags().error(n.span, "unknown name '" + n.name + "'");
    if (!best.empty()) d.with_hint("did you mean '" + best + "'?");
  }

  // "module 'nn' has no 'gleu'", with the member nearest it.
  void no_member(Span at, const std::string& module, const std::string& field) {
    std::vector<std::string> members;
    for (const auto& [k, v] : modules_[module].globals) members.push_back(k);
    Diagnostic& d = diags().error(at, "module '" + module + "' has no '" + field + "'");
    std::string best = nearest_name(field, members);
    if (!best.empty()) d.with_hint("did you mean '" + best + "'?");
  }

  StaticType expr(const ast::Expr& e) {
    using ast::ExprKind;
    switch (e.kind) {
      case ExprKind::IntLit: return StaticType::integer(ast::as<ast::IntLit>(e).unit.empty() ? std::optional<int64_t>(ast::as<ast::IntLit>(e).value) : std::nullopt);
      case ExprKind::FloatLit: return StaticType::of(K::Float);
      case ExprKind::StringLit: return StaticType::of(K::Str);
      case ExprKind::BoolLit: return StaticType::of(K::Bool);
      case ExprKind::NoneLit: return StaticType::of(K::None);
      case ExprKind::Name: {
        const auto& n = ast::as<ast::Name>(e);
        if (const Symbol* s = lookup(n.name)) return s->type;
        if (is_builtin(n.name)) return StaticType::of(K::Builtin);
        if (auto d = parse_dtype(n.name)) {
          StaticType t = StaticType::of(K::DType);
          t.dtype = d;
          return t;
        }
        if (n.name == "inf" || n.name == "nan" || n.name == "pi") return StaticType::of(K::Float);
        unknown_name(n);
        return {};
      }
      case ExprKind::Unary: {
        const auto& u = ast::as<ast::Unary>(e);
        StaticType t = expr(*u.operand);
        if (u.op == ast::UnOp::Not && t.kind != K::Tensor) return StaticType::of(K::Bool);
        if (t.kind == K::Int && t.int_value && u.op == ast::UnOp::Neg && *t.int_value != INT64_MIN) t.int_value = -*t.int_value;
        return t;
      }
      case ExprKind::Binary: return binary(ast::as<ast::Binary>(e));
      case ExprKind::Call: return call(ast::as<ast::Call>(e));
      case ExprKind::Index: return index(ast::as<ast::Index>(e));
      case ExprKind::Field: return field(ast::as<ast::Field>(e));
      case ExprKind::Tuple: {
        StaticType t = StaticType::of(K::Tuple);
        for (const ast::ExprPtr& x : ast::as<ast::Tuple>(e).elems) t.elems.push_back(expr(*x));
        return t;
      }
      case ExprKind::List: {
        StaticType t = StaticType::of(K::List);
        std::vector<StaticType> elems;
        for (const ast::ExprPtr& x : ast::as<ast::List>(e).elems) elems.push_back(expr(*x));
        bool uniform = !elems.empty();
        for (const StaticType& x : elems) uniform = uniform && x.kind == elems[0].kind;
        if (uniform) t.elems.push_back(elems[0]);
        list_items_ = elems;
        return t;
      }
      case ExprKind::Record: {
        StaticType t = StaticType::of(K::Record);
        std::set<std::string> names;
        for (const ast::RecordField& f : ast::as<ast::Record>(e).fields) {
          if (!names.insert(f.name).second) diags().error(f.name_span, "duplicate field '" + f.name + "'");
          t.field_names.push_back(f.name);
          t.field_types.push_back(expr(*f.value));
        }
        return t;
      }
      case ExprKind::Compute: return compute(ast::as<ast::Compute>(e));
      case ExprKind::Await: {
        const auto& a = ast::as<ast::Await>(e);
        StaticType t = expr(*a.value);
        if (a.timeout) expr(*a.timeout);
        if (a.fallback) expr(*a.fallback);
        return t.kind == K::Future && t.inner ? *t.inner : t;
      }
    }
    return {};
  }

  StaticType binary(const ast::Binary& b) {
    StaticType x = expr(*b.lhs), y = expr(*b.rhs);
    using ast::BinOp;
    if (b.op == BinOp::And || b.op == BinOp::Or) return StaticType::of(K::Bool);
    bool cmp = b.op == BinOp::Eq || b.op == BinOp::Ne || b.op == BinOp::Lt || b.op == BinOp::Le || b.op == BinOp::Gt ||
               b.op == BinOp::Ge;
    if (x.kind == K::Tensor || y.kind == K::Tensor) {
      if (b.op == BinOp::MatMul) {
        if (x.rank && y.rank) {
          int r = std::max(*x.rank, *y.rank);
          if (*x.rank == 1 && *y.rank == 1) return StaticType::of(K::Float);
          return StaticType::tensor(*x.rank == 1 || *y.rank == 1 ? r - 1 : r, cmp ? std::optional<DType>(DType::Bool) : x.dtype);
        }
        return StaticType::tensor(std::nullopt, x.dtype);
      }
      std::optional<int> rank;
      if ((x.kind != K::Tensor || x.rank) && (y.kind != K::Tensor || y.rank))
        rank = std::max(x.kind == K::Tensor ? *x.rank : 0, y.kind == K::Tensor ? *y.rank : 0);
      std::optional<DType> dtype = cmp ? std::optional<DType>(DType::Bool) : (x.kind == K::Tensor ? x.dtype : y.dtype);
      return StaticType::tensor(rank, dtype);
    }
    if (cmp) return StaticType::of(K::Bool);
    if (x.kind == K::Int && y.kind == K::Int) {
      StaticType t = StaticType::integer();
      if (x.int_value && y.int_value) {
        int64_t a = *x.int_value, c = *y.int_value, r;
        bool ok = false;
        switch (b.op) {
          case BinOp::Add: ok = !__builtin_add_overflow(a, c, &r); break;
          case BinOp::Sub: ok = !__builtin_sub_overflow(a, c, &r); break;
          case BinOp::Mul: ok = !__builtin_mul_overflow(a, c, &r); break;
          case BinOp::Div:
            ok = c != 0 && !(a == INT64_MIN && c == -1);
            if (ok) r = a / c;
            break;
          default: break;
        }
        if (ok) t.int_value = r;
      }
      return t;
    }
    if ((x.kind == K::Int || x.kind == K::Float) && (y.kind == K::Int || y.kind == K::Float)) return StaticType::of(K::Float);
    if (x.kind == K::Str && y.kind == K::Str) return StaticType::of(K::Str);
    if (x.kind == K::List && y.kind == K::List) return StaticType::of(K::List);
    return {};
  }

  StaticType call(const ast::Call& c) {
    std::vector<StaticType> args;
    std::map<std::string, StaticType> kwargs;
    std::vector<std::vector<StaticType>> list_args;
    for (const ast::Arg& a : c.args) {
      list_items_.clear();
      StaticType t = expr(*a.value);
      if (a.name.empty()) {
        args.push_back(t);
        list_args.push_back(list_items_);
      } else {
        kwargs[a.name] = t;
      }
    }
    if (c.callee->kind == ast::ExprKind::Field) {
      const auto& fe = ast::as<ast::Field>(*c.callee);
      StaticType self = expr(*fe.base);
      if (self.kind == K::Module && self.module) {
        auto& g = modules_[self.module->path].globals;
        auto it = g.find(fe.field);
        if (it == g.end()) {
          no_member(fe.field_span, self.module->path, fe.field);
          return {};
        }
        if (it->second.type.kind == K::Function) return user_call(*it->second.type.function, c, args);
        return {};
      }
      if (self.kind == K::Tensor && (fe.field == "to_device" || fe.field == "astype" || fe.field == "reshape")) {
        if (fe.field == "to_device") return self;
        if (fe.field == "astype") return StaticType::tensor(self.rank);
        return StaticType::tensor(args.size() == 1 && !list_args[0].empty() ? std::optional<int>(static_cast<int>(list_args[0].size())) : std::nullopt);
      }
      if (self.kind == K::Record) {
        for (size_t i = 0; i < self.field_names.size(); ++i)
          if (self.field_names[i] == fe.field && self.field_types[i].kind == K::Function)
            return user_call(*self.field_types[i].function, c, args);
      }
      return {};
    }
    StaticType callee = expr(*c.callee);
    if (callee.kind == K::Function && callee.function) return user_call(*callee.function, c, args);
    if (callee.kind == K::Builtin && c.callee->kind == ast::ExprKind::Name) {
      const std::string& name = ast::as<ast::Name>(*c.callee).name;
      // load() of a .npz archive gives a record of its arrays, named as saved.
      if (name == "load" && !c.args.empty() && c.args[0].value->kind == ast::ExprKind::StringLit &&
          ast::as<ast::StringLit>(*c.args[0].value).value.ends_with(".npz"))
        return {};
      return builtin_result(name, args, kwargs, list_args);
    }
    if (callee.known() && callee.kind != K::Function && callee.kind != K::Builtin)
      diags().error(c.callee->span, describe(callee) + " is not a function");
    return {};
  }

  // The shapes of tensors given positionally against the parameters'
  // declared types, where both are known before the program runs: a rank
  // that differs, a size written as a number that differs, or one dimension
  // named by two parameters given two different sizes. (What only the
  // program's data decides is checked when the call runs.)
  void check_argument_shapes(const ast::FuncDef& f, const ast::Call& c, const std::vector<StaticType>& args) {
    struct Bound {
      int64_t size;
      size_t param;
    };
    std::map<std::string, Bound> bound;
    auto shape_text = [](const StaticType& t) {
      std::string s = "[";
      for (size_t a = 0; a < t.extents.size(); ++a) s += (a ? ", " : "") + (t.extents[a] ? std::to_string(*t.extents[a]) : "?");
      return s + "]";
    };
    size_t arg = 0;
    for (size_t k = 0; k < c.args.size() && arg < f.params.size(); ++k) {
      const ast::Arg& a = c.args[k];
      if (!a.name.empty()) continue;
      const size_t i = arg++;
      const ast::Param& p = f.params[i];
      if (i >= args.size() || !p.type || p.type->name != "tensor" || p.type->dims.empty()) continue;
      const StaticType& t = args[i];
      if (t.kind != K::Tensor || !t.rank) continue;
      // A variable that may change between here and the call's run is not vouched for.
      if (a.value->kind == ast::ExprKind::Name) {
        const Symbol* s = lookup(ast::as<ast::Name>(*a.value).name);
        if (!s || s->is_mutable) continue;
      }
      const auto& dims = p.type->dims;
      if (static_cast<size_t>(*t.rank) != dims.size()) {
        diags().error(a.value->span, "argument '" + p.name + "' of '" + f.name + "' has " + std::to_string(*t.rank) +
                                         " axes, but the parameter's type has " + std::to_string(dims.size()))
            .note(p.type->span, "the type is written here");
        continue;
      }
      for (size_t x = 0; x < dims.size(); ++x) {
        if (!t.extents[x]) continue;
        const int64_t size = *t.extents[x];
        if (auto written = constant_int(*dims[x])) {
          if (*written != size)
            diags().error(a.value->span, "argument '" + p.name + "' of '" + f.name + "' has shape " + shape_text(t) +
                                             ": axis " + std::to_string(x) + " is " + std::to_string(size) + ", but the type says " +
                                             std::to_string(*written))
                .note(dims[x]->span, "the size is written here");
          continue;
        }
        if (dims[x]->kind != ast::ExprKind::Name) continue;
        const std::string& dim = ast::as<ast::Name>(*dims[x]).name;
        auto [it, first] = bound.try_emplace(dim, Bound{size, i});
        if (!first && it->second.size != size)
          diags().error(a.value->span, "argument '" + p.name + "' of '" + f.name + "' has shape " + shape_text(t) +
                                           ": axis " + std::to_string(x) + " is " + std::to_string(size) + ", but '" + dim +
                                           "' is " + std::to_string(it->second.size))
              .note(f.params[it->second.param].span, "'" + dim + "' was bound here")
              .note(dims[x]->span, "the type is written here");
      }
    }
  }

  StaticType user_call(const ast::FuncDef& f, const ast::Call& c, const std::vector<StaticType>& args) {
    check_argument_shapes(f, c, args);
    size_t positional = 0;
    std::set<std::string> given;
    for (const ast::Arg& a : c.args) {
      if (a.name.empty()) {
        ++positional;
        continue;
      }
      auto it = std::find_if(f.params.begin(), f.params.end(), [&](const ast::Param& p) { return p.name == a.name; });
      if (it == f.params.end())
        diags().error(a.name_span, "'" + f.name + "' has no parameter '" + a.name + "'").note(f.name_span, "defined here");
      given.insert(a.name);
    }
    if (positional > f.params.size()) {
      diags().error(c.span, "'" + f.name + "' takes " + std::to_string(f.params.size()) + " argument" +
                                (f.params.size() == 1 ? "" : "s") + ", but " + std::to_string(positional) + " were given")
          .note(f.name_span, "defined here");
    } else {
      for (size_t i = positional; i < f.params.size(); ++i)
        if (!f.params[i].default_value && !given.count(f.params[i].name))
          diags().error(c.span, "missing argument '" + f.params[i].name + "' of '" + f.name + "'")
              .note(f.params[i].span, "the parameter is declared here");
    }
    if (f.return_type) return from_type(*f.return_type, nullptr, "");
    return {};
  }

  StaticType builtin_result(const std::string& name, const std::vector<StaticType>& args,
                            const std::map<std::string, StaticType>& kwargs,
                            const std::vector<std::vector<StaticType>>& list_args) {
    auto dtype_kw = [&]() -> std::optional<DType> {
      auto it = kwargs.find("dtype");
      return it == kwargs.end() ? std::optional<DType>(DType::F32) : it->second.dtype;
    };
    auto shaped = [&](size_t arg) {
      if (arg >= args.size()) return StaticType::tensor(std::nullopt);
      if (args[arg].kind == K::Int) {
        StaticType t = StaticType::tensor(1, dtype_kw());
        t.extents[0] = args[arg].int_value;
        return t;
      }
      if (args[arg].kind != K::List && args[arg].kind != K::Tuple) return StaticType::tensor(std::nullopt, dtype_kw());
      const auto& items = list_args[arg];
      if (items.empty()) return StaticType::tensor(std::nullopt, dtype_kw());
      StaticType t = StaticType::tensor(static_cast<int>(items.size()), dtype_kw());
      for (size_t i = 0; i < items.size(); ++i) t.extents[i] = items[i].int_value;
      return t;
    };
    if (name == "zeros" || name == "ones" || name == "rand" || name == "randn" || name == "full" || name == "allocate")
      return name == "allocate" ? StaticType::tensor(std::nullopt) : shaped(0);
    if (name == "reshape") {
      StaticType t = shaped(1);
      t.dtype = args.empty() ? std::nullopt : args[0].dtype;
      return t;
    }
    if (name == "arange") return StaticType::tensor(1);
    if (name == "load") return StaticType::tensor(std::nullopt);
    if (name == "transpose" || name == "to_device" || name == "astype") {
      StaticType t = args.empty() ? StaticType::tensor(std::nullopt) : args[0];
      if (name == "transpose") std::reverse(t.extents.begin(), t.extents.end());
      if (name == "astype") t.dtype = args.size() > 1 && args[1].kind == K::DType ? args[1].dtype : std::nullopt;
      return t;
    }
    if (name == "split") {
      StaticType t = StaticType::of(K::Tuple);
      if (args.size() >= 2 && args[1].int_value && *args[1].int_value > 0 && *args[1].int_value <= 1024)
        for (int64_t i = 0; i < *args[1].int_value; ++i)
          t.elems.push_back(StaticType::tensor(args[0].kind == K::Tensor ? args[0].rank : std::nullopt, args[0].dtype));
      return t;
    }
    if (name == "concat") {
      if (!list_args.empty() && !list_args[0].empty() && list_args[0][0].kind == K::Tensor)
        return StaticType::tensor(list_args[0][0].rank, list_args[0][0].dtype);
      return StaticType::tensor(std::nullopt);
    }
    if (name == "shape") return StaticType::of(K::List);
    if (name == "len" || name == "int") return StaticType::integer();
    if (name == "float" || name == "time") return StaticType::of(K::Float);
    if (name == "bool" || name == "allclose") return StaticType::of(K::Bool);
    if (name == "str") return StaticType::of(K::Str);
    if (name == "print" || name == "println" || name == "save" || name == "assert" || name == "assert_close")
      return StaticType::of(K::None);
    if (name == "compute_devices") return StaticType::of(K::List);
    if (name == "rank" || name == "world_size") return StaticType::integer();
    if (name == "all_reduce" || name == "broadcast") return args.empty() ? StaticType::tensor(std::nullopt) : args[0];
    if (name == "all_gather") {
      StaticType t = args.empty() ? StaticType::tensor(std::nullopt) : args[0];
      t.extents.assign(t.extents.size(), std::nullopt);  // the gathered axis grows with the ranks
      return t;
    }
    if (parse_math_fn(name) && !args.empty() && args[0].kind == K::Tensor && name != "min" && name != "max")
      return StaticType::tensor(args[0].rank, args[0].dtype);
    if (parse_math_fn(name) && !args.empty() && (args[0].kind == K::Int || args[0].kind == K::Float) && name != "min" &&
        name != "max" && name != "abs")
      return StaticType::of(K::Float);
    return {};
  }

  StaticType index(const ast::Index& ix) {
    StaticType base = expr(*ix.base);
    std::vector<StaticType> items;
    for (const ast::IndexItem& it : ix.items) {
      for (const ast::Expr* e : {it.index.get(), it.lo.get(), it.hi.get()}) {
        if (!e) continue;
        StaticType t = expr(*e);
        if (t.known() && t.kind != K::Int && t.kind != K::Bool && !(base.kind == K::Record && t.kind == K::Str))
          diags().error(e->span, "an index must be an integer, but this is " + describe(t));
        if (!it.is_slice) items.push_back(t);
      }
    }
    if (base.kind == K::Tensor) {
      if (base.rank && static_cast<int>(ix.items.size()) > *base.rank) {
        diags().error(ix.span, "this tensor has " + std::to_string(*base.rank) + " axes but is indexed with " +
                                   std::to_string(ix.items.size()));
        return {};
      }
      size_t removed = 0;
      for (const ast::IndexItem& it : ix.items) removed += it.is_slice ? 0 : 1;
      if (!base.rank) return StaticType::tensor(std::nullopt, base.dtype);
      int rank = *base.rank - static_cast<int>(removed);
      if (rank == 0) return StaticType::of(base.dtype && !is_float(*base.dtype) ? (is_bool(*base.dtype) ? K::Bool : K::Int) : K::Float);
      return StaticType::tensor(rank, base.dtype);
    }
    if (base.kind == K::List && !base.elems.empty() && ix.items.size() == 1 && !ix.items[0].is_slice) return base.elems[0];
    if (base.kind == K::Tuple && ix.items.size() == 1 && !ix.items[0].is_slice && !items.empty() && items[0].int_value) {
      int64_t i = *items[0].int_value;
      if (i < 0) i += static_cast<int64_t>(base.elems.size());
      if (i >= 0 && i < static_cast<int64_t>(base.elems.size())) return base.elems[static_cast<size_t>(i)];
    }
    return {};
  }

  StaticType field(const ast::Field& f) {
    StaticType base = expr(*f.base);
    if (base.kind == K::Future && base.inner) base = *base.inner;
    switch (base.kind) {
      case K::Record: {
        for (size_t i = 0; i < base.field_names.size(); ++i)
          if (base.field_names[i] == f.field) return base.field_types[i];
        std::string known;
        for (const std::string& name : base.field_names) known += (known.empty() ? "" : ", ") + name;
        diags().error(f.field_span, "record has no field '" + f.field + "'").with_hint("its fields are: " + known);
        return {};
      }
      case K::Module: {
        if (!base.module) return {};
        auto& g = modules_[base.module->path].globals;
        auto it = g.find(f.field);
        if (it == g.end()) {
          no_member(f.field_span, base.module->path, f.field);
          return {};
        }
        return it->second.type;
      }
      case K::Tensor:
        if (f.field == "shape") return StaticType::of(K::List);
        if (f.field == "dtype") return StaticType::of(K::DType);
        if (f.field == "rank" || f.field == "size") return StaticType::integer(f.field == "rank" && base.rank ? std::optional<int64_t>(*base.rank) : std::nullopt);
        if (f.field == "device") return StaticType::of(K::Str);
        if (f.field == "T") return StaticType::tensor(base.rank, base.dtype);
        return {};
      default: return {};
    }
  }

  StaticType compute(const ast::Compute& c) {
    std::vector<InputSignature> sigs;
    for (const ast::ExprPtr& x : c.inputs) {
      StaticType t = expr(*x);
      if (t.kind == K::Future && t.inner) t = *t.inner;
      InputSignature s;
      s.path = ast::path_text(*x);
      s.span = x->span;
      if (t.known() && t.kind != K::Tensor) {
        diags().error(x->span, "compute inputs must be tensors, but '" + s.path + "' is " + describe(t));
        return {};
      }
      s.rank = t.rank;
      s.dtype = t.dtype;
      s.extents = t.extents;
      sigs.push_back(std::move(s));
    }
    StaticHostEnv env(*this);
    std::optional<CheckedBlock> block = blocks_.check(c, std::move(sigs), env, diags());
    if (!block) return {};
    StaticType result = StaticType::tensor(block->rank, block->dtype);
    if (!block->is_async) return result;
    StaticType f = StaticType::of(K::Future);
    f.inner = std::make_shared<StaticType>(result);
    return f;
  }

  Session& session_;
  ComputeBlockChecker& blocks_;
  std::map<std::string, ModuleInfo> modules_;
  std::set<std::string> importing_;
  ModuleInfo* module_ = nullptr;
  std::vector<Scope> scopes_;
  std::vector<StaticType> list_items_;  // the elements of the last list literal, for shapes
  int loop_depth_ = 0;
};

std::optional<HostBinding> StaticHostEnv::lookup(std::string_view name) const {
  const Symbol* s = checker_.lookup(std::string(name));
  if (!s) return std::nullopt;
  HostBinding h;
  h.decl = s->decl;
  h.param_axes = s->param_axes;
  switch (s->type.kind) {
    case K::Int: h.kind = HostBinding::Kind::Int; break;
    case K::Float: h.kind = HostBinding::Kind::Float; break;
    case K::Bool: h.kind = HostBinding::Kind::Bool; break;
    case K::Tensor: h.kind = HostBinding::Kind::Tensor; break;
    case K::Unknown: h.kind = HostBinding::Kind::Unknown; break;
    case K::Future: h.kind = HostBinding::Kind::Tensor; break;
    default: h.kind = HostBinding::Kind::Other; break;
  }
  return h;
}

}  // namespace

bool check_host_program(Session& session, LoadedModule& main, ComputeBlockChecker& blocks) {
  size_t before = session.diags().error_count();
  Checker(session, blocks).check_module(main);
  return session.diags().error_count() == before;
}

}  // namespace zyntax
