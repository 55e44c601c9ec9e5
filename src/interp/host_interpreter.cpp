#include "interp/host_interpreter.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iostream>
#include <optional>
#include <thread>

#include "backends/registry.hpp"
#include "interp/compiled_call.hpp"
#include "interp/compute_runner.hpp"
#include "runtime/device.hpp"
#include "runtime/profiler.hpp"
#include "sema/builtin_names.hpp"
#include "sema/function_annotations.hpp"
#include "sema/kernel_annotations.hpp"
#include "support/stack.hpp"
#include "syntax/name_uses.hpp"

namespace zyntax {

namespace {

// Recursion deep enough for real programs (Python stops at 1000); the
// stack check below stops it earlier where frames are large. Under
// AddressSanitizer, whose frames are several times larger, fewer: an error
// thrown from more than 64 MB down a stack leaves the sanitizer's marks of
// the frames it unwound in place, and the destructors run while unwinding
// then trip over them (a false report, google/sanitizers#189).
#if defined(__SANITIZE_ADDRESS__)
constexpr int kMaxCallDepth = 3000;  // some 18 KiB a call level: 54 MB at the deepest
#else
constexpr int kMaxCallDepth = 20000;
#endif

// One call more nested while it lives.
struct CallDepth {
  int& depth;
  explicit CallDepth(int& d) : depth(d) { ++depth; }
  ~CallDepth() { --depth; }
  CallDepth(const CallDepth&) = delete;
  CallDepth& operator=(const CallDepth&) = delete;
};

// Stack kept free below the deepest call or expression: what one builtin
// needs (work that needs more, such as compiling, gets its own stack).
constexpr size_t kStackReserve = size_t{4} << 20;

const char* kind_word(ast::FuncKind k) {
  switch (k) {
    case ast::FuncKind::Def: return "def";
    case ast::FuncKind::Fn: return "fn";
    case ast::FuncKind::Pipeline: return "pipeline";
  }
  return "def";
}

// Sizes and durations written with a unit: bytes and milliseconds.
int64_t unit_scale(const std::string& unit) {
  if (unit == "B") return 1;
  if (unit == "KB") return int64_t{1} << 10;
  if (unit == "MB") return int64_t{1} << 20;
  if (unit == "GB") return int64_t{1} << 30;
  if (unit == "TB") return int64_t{1} << 40;
  if (unit == "ms") return 1;
  if (unit == "s") return 1000;
  return 1;  // ns and us round to whole milliseconds below
}

}  // namespace

Interpreter::Interpreter(Session& session, RunOptions options)
    : session_(session), options_(std::move(options)), rng_(options_.seed), computes_(std::make_unique<ComputeRunner>(session, options_.explain_fusion)) {
  if (!options_.out) options_.out = &std::cout;
  host_tier_ = std::make_unique<host::HostTier>(options_.host, &session_.sources(), options_.explain_host);
}

Interpreter::~Interpreter() = default;

bool Interpreter::run(LoadedModule& m) {
  return with_deep_stack([&] { return run_here(m); });
}

bool Interpreter::run_here(LoadedModule& m) {
  main_module_ = &m;
  try {
    ModuleInstance& inst = instantiate(m);
    auto main = inst.globals.find("main");
    if (!main_called_ && main != inst.globals.end() && main->second.value.kind == Value::Kind::Function) {
      Frame f;
      f.module = &inst;
      CallArgs args;
      args.span = main->second.decl;
      call_function(main->second.value, args);
    }
    computes_->flush();  // the end of the program: what is pending runs (and its checks)
    finish_launches();
    options_.out->flush();
    return true;
  } catch (const Error& e) {
    options_.out->flush();
    session_.diags().report(e.diagnostic());
    return false;
  }
}

int Interpreter::max_call_depth() { return kMaxCallDepth; }

Value Interpreter::call(LoadedModule& m, const std::string& name, CallArgs args) {
  return with_deep_stack([&] {
    main_module_ = &m;
    last_call_compiled_ = nullptr;
    ModuleInstance& inst = instantiate(m, /*definitions_only=*/true);
    auto fn = inst.globals.find(name);
    if (fn == inst.globals.end() || fn->second.value.kind != Value::Kind::Function)
      throw Error(args.span, "the program has no function '" + name + "'");
    if (!args.span.valid()) args.span = fn->second.decl;
    Value result = forced(call_function(fn->second.value, args), args.span);
    computes_->flush();
    if (result.kind == Value::Kind::Future) result = result.future->get();
    finish_launches();
    options_.out->flush();
    return result;
  });
}

// Launches nobody awaited still finish, and their errors still count, once.
void Interpreter::finish_launches() {
  while (launches_finished_ < launched_.size()) launched_[launches_finished_++]->get();
}

ModuleInstance& Interpreter::instantiate(LoadedModule& m, bool definitions_only) {
  auto it = instances_.find(m.path);
  if (it != instances_.end()) return *it->second;
  auto inst = std::make_shared<ModuleInstance>();
  inst->source = &m;
  instances_[m.path] = inst;
  execute_module(*inst, definitions_only);
  return *inst;
}

void Interpreter::execute_module(ModuleInstance& inst, bool definitions_only) {
  Frame f;
  f.module = &inst;
  hoist_functions(inst.source->ast.body, f);
  const ast::Block& body = inst.source->ast.body;
  for (size_t i = 0; i < body.stmts.size(); ++i) {
    const ast::StmtPtr& s = body.stmts[i];
    // A library of functions: its imports and config, nothing else runs.
    if (definitions_only && s->kind != ast::StmtKind::Import && s->kind != ast::StmtKind::Config) continue;
    // Profiled: each top-level statement is a host span named by its line.
    std::optional<ProfileSpan> span;
    if (Profiler::global().enabled()) span.emplace(ProfileEvent::Kind::Host, statement_label(*s));
    Flow flow = exec_in_order(*s, f);
    // The main module's own names only: an importer may read another's.
    if (inst.source == main_module_ && computes_->has_pending()) release_unread(body, i, f.innermost());
    if (flow == Flow::Return) break;
    if (flow != Flow::Normal) throw Error(s->span, "break and continue belong inside a loop");
  }
  inst.executed = true;
}

// Functions are visible in their whole block, so calls may come before the definition.
void Interpreter::hoist_functions(const ast::Block& b, Frame& f) {
  for (const ast::StmtPtr& s : b.stmts) {
    if (s->kind != ast::StmtKind::FuncDef) continue;
    const auto& def = ast::as<ast::FuncDef>(*s);
    Value v;
    v.kind = Value::Kind::Function;
    v.function = std::make_shared<FunctionData>();
    v.function->def = &def;
    v.function->module = f.module;
    f.innermost()[def.name] = Binding{v, false, def.name_span, {}};
  }
}

// ---------------------------------------------------------------- statements

Interpreter::Flow Interpreter::exec_block(const ast::Block& b, Frame& f, bool new_scope, bool profiled) {
  if (new_scope) f.scopes.emplace_back();
  hoist_functions(b, f);
  Flow flow = Flow::Normal;
  profiled = profiled && Profiler::global().enabled();
  for (size_t i = 0; i < b.stmts.size(); ++i) {
    flow = profiled ? exec_profiled(*b.stmts[i], f) : exec_in_order(*b.stmts[i], f);
    if (computes_->has_pending()) release_unread(b, i, f.innermost());
    if (flow != Flow::Normal) break;
  }
  if (new_scope) f.scopes.pop_back();
  return flow;
}

// Apart from exec_block, so that the span lives in a frame of its own:
// recursion that is not profiled keeps its frames as small as they were
// (a sanitizer build's deep recursion must stay within what ASan unwinds).
[[gnu::noinline]] Interpreter::Flow Interpreter::exec_profiled(const ast::Stmt& s, Frame& f) {
  ProfileSpan span(ProfileEvent::Kind::Host, statement_label(s));
  return exec_in_order(s, f);
}

Interpreter::Flow Interpreter::exec(const ast::Stmt& s, Frame& f) {
  using ast::StmtKind;
  switch (s.kind) {
    case StmtKind::Let: exec_let(ast::as<ast::Let>(s), f); return Flow::Normal;
    case StmtKind::Assign: exec_assign(ast::as<ast::Assign>(s), f); return Flow::Normal;
    case StmtKind::ExprStmt: {
      // A block whose result goes unused stays pending: it still runs, and its checks.
      Value v = eval_any(*ast::as<ast::ExprStmt>(s).expr, f);
      if (v.kind == Value::Kind::Future) v.future->get();  // an unawaited launch still finishes (and reports)
      return Flow::Normal;
    }
    case StmtKind::If: {
      const auto& i = ast::as<ast::If>(s);
      Value c = eval(*i.cond, f);
      std::optional<bool> t = truthy(c);
      if (!t) throw Error(i.cond->span, "a condition must be a single value, but this is " + type_name(c));
      if (*t) return exec_block(i.then_body, f);
      return exec_block(i.else_body, f);
    }
    case StmtKind::For: {
      f.scopes.emplace_back();
      Flow flow = exec_for(ast::as<ast::For>(s), 0, f);
      f.scopes.pop_back();
      return flow == Flow::Return ? flow : Flow::Normal;
    }
    case StmtKind::While: {
      const auto& w = ast::as<ast::While>(s);
      while (true) {
        Value c = eval(*w.cond, f);
        std::optional<bool> t = truthy(c);
        if (!t) throw Error(w.cond->span, "a condition must be a single value, but this is " + type_name(c));
        if (!*t) break;
        ++loop_iterations_;
        Flow flow = exec_block(w.body, f);
        if (flow == Flow::Break) break;
        if (flow == Flow::Return) return flow;
      }
      return Flow::Normal;
    }
    case StmtKind::Return: {
      const auto& r = ast::as<ast::Return>(s);
      f.return_value = r.value ? eval_any(*r.value, f) : Value::none();
      return Flow::Return;
    }
    case StmtKind::Break: return Flow::Break;
    case StmtKind::Continue: return Flow::Continue;
    case StmtKind::FuncDef: return Flow::Normal;  // bound when its block was entered
    case StmtKind::Import: exec_import(ast::as<ast::Import>(s), f); return Flow::Normal;
    case StmtKind::Config: exec_config(ast::as<ast::Config>(s), f); return Flow::Normal;
    case StmtKind::BlockStmt: return exec_block(ast::as<ast::BlockStmt>(s).block, f);
    case StmtKind::Yield:
      throw Error(s.span, "yield belongs inside a reduce kernel's compute block");
    case StmtKind::SharedVar:
      throw Error(s.span, "shared arrays belong inside compute blocks");
    case StmtKind::Annotation:
      throw Error(s.span, "annotations such as @" + ast::as<ast::AnnotationStmt>(s).annotation.name +
                              " belong inside compute blocks");
  }
  return Flow::Normal;
}

Interpreter::Flow Interpreter::exec_in_order(const ast::Stmt& s, Frame& f) {
  try {
    return exec(s, f);
  } catch (const Error&) {
    computes_->flush();  // a pending block's error comes first
    throw;
  }
}

size_t Interpreter::last_mention(const ast::Block& b, const std::string& name) {
  auto [it, fresh] = last_mentions_.try_emplace({&b, name}, 0);
  if (!fresh) return it->second;
  for (size_t k = 0; k < b.stmts.size(); ++k) {
    if (!ast::count_name_uses(*b.stmts[k], name)) continue;
    if (b.stmts[k]->kind == ast::StmtKind::FuncDef) return it->second = SIZE_MAX;
    it->second = k + 1;
  }
  return it->second;
}

void Interpreter::release_unread(const ast::Block& b, size_t i, Scope& scope) {
  for (auto& [name, binding] : scope) {
    if (binding.value.kind != Value::Kind::Pending || !binding.value.pending) continue;
    if (last_mention(b, name) <= i + 1) binding.value.pending = nullptr;
  }
}

void Interpreter::exec_let(const ast::Let& l, Frame& f) {
  Value v = l.init ? (l.destructure ? eval(*l.init, f) : eval_any(*l.init, f)) : Value::none();
  Scope& scope = f.innermost();
  if (l.type && l.init) {
    // `let x: tensor[n, m] = load(...)`: a dimension name in scope is
    // checked against the tensor, a new one is bound to its axis here.
    Scope dims;
    for (const ast::ExprPtr& d : l.type->dims)
      if (d->kind == ast::ExprKind::Name)
        if (Binding* b = f.lookup(ast::as<ast::Name>(*d).name)) dims[ast::as<ast::Name>(*d).name] = *b;
    Scope visible = dims;
    std::map<std::string, Span> sites;
    check_type(*l.type, v, l.init->span, dims, "'" + l.names[0] + "'", l.names[0], &sites);
    for (auto& [name, binding] : dims)
      if (!visible.count(name)) scope[name] = binding;
    if (l.type->name == "float" && v.kind == Value::Kind::Int) v = Value::of_float(static_cast<double>(v.i));
  }
  if (!l.destructure) {
    scope[l.names[0]] = Binding{v, l.is_mutable, l.name_spans[0], {}};
    return;
  }
  if (v.kind == Value::Kind::Future) v = v.future->get();
  if (v.kind != Value::Kind::Tuple && v.kind != Value::Kind::List)
    throw Error(l.init->span, "cannot unpack " + type_name(v) + " into " + std::to_string(l.names.size()) + " names");
  if (v.items->size() != l.names.size())
    throw Error(l.init->span, "cannot unpack " + std::to_string(v.items->size()) + " values into " +
                                  std::to_string(l.names.size()) + " names");
  for (size_t i = 0; i < l.names.size(); ++i) scope[l.names[i]] = Binding{(*v.items)[i], l.is_mutable, l.name_spans[i], {}};
}

void Interpreter::exec_assign(const ast::Assign& a, Frame& f) {
  static const ast::BinOp kOps[] = {ast::BinOp::Add, ast::BinOp::Add, ast::BinOp::Sub, ast::BinOp::Mul, ast::BinOp::Div};
  const ast::Expr& target = *a.target;
  // A name set to a value takes it as it is (a pending result, too).
  bool rebinds = target.kind == ast::ExprKind::Name && a.op == ast::AssignOp::Set;
  Value rhs = rebinds ? eval_any(*a.value, f) : eval(*a.value, f);
  auto combine = [&](const Value& current) {
    if (a.op == ast::AssignOp::Set) return rhs;
    return host_binary(kOps[static_cast<int>(a.op)], forced(current, target.span), rhs, a.span);
  };
  if (target.kind == ast::ExprKind::Name) {
    const std::string& name = ast::as<ast::Name>(target).name;
    Binding* b = f.lookup(name);
    if (!b) throw Error(Diagnostic{Severity::Error, target.span, "assignment to undeclared name '" + name + "'", {},
                                   "declare it first: `var " + name + " = ...` or `let mut " + name + " = ...`"});
    if (!b->is_mutable)
      throw Error(Diagnostic{Severity::Error, target.span, "cannot assign to '" + name + "': it was declared with let",
                             {{b->decl, "declared here"}}, "declare it with `let mut` or `var` to make it mutable"});
    b->value = combine(b->value);
    return;
  }
  if (target.kind == ast::ExprKind::Index) {
    const auto& ix = ast::as<ast::Index>(target);
    Value base = eval(*ix.base, f);
    std::vector<HostIndex> items = eval_index_items(ix, f);
    Value value = a.op == ast::AssignOp::Set ? rhs : combine(host_index(base, items, target.span));
    // A block sees its inputs as they were when it was launched: a write
    // into a tensor waits for the @async launches still running (they may
    // read it), rather than racing them.
    if (base.kind == Value::Kind::Tensor) {
      computes_->flush(target.span, "host code writes into a tensor");  // pending blocks may read it
      for (; launches_waited_ < launched_.size(); ++launches_waited_) launched_[launches_waited_]->wait();  // each once
    }
    host_index_assign(base, items, value, target.span);
    return;
  }
  const auto& fe = ast::as<ast::Field>(target);
  Value base = eval(*fe.base, f);
  if (base.kind != Value::Kind::Record) throw Error(target.span, "cannot set field '" + fe.field + "' of " + type_name(base));
  Value* slot = base.record->find(fe.field);
  if (!slot) {
    base.record->fields.push_back({fe.field, rhs});
    if (a.op != ast::AssignOp::Set) throw Error(fe.field_span, "record has no field '" + fe.field + "'");
    return;
  }
  *slot = combine(*slot);
}

Interpreter::Flow Interpreter::exec_for(const ast::For& fr, size_t range, Frame& f) {
  if (range == fr.ranges.size()) {
    Flow flow = exec_block(fr.body, f);
    return flow;
  }
  const ast::ForRange& r = fr.ranges[range];
  auto run_body = [&](Value v) {
    f.scopes.back()[r.var] = Binding{std::move(v), false, r.var_span, {}};
    return exec_for(fr, range + 1, f);
  };
  if (r.hi) {
    Value lo = eval(*r.lo, f), hi = eval(*r.hi, f);
    Value step = r.step ? eval(*r.step, f) : Value::of_int(1);
    for (const auto& [v, e] : {std::pair{&lo, r.lo.get()}, {&hi, r.hi.get()}, {&step, r.step.get()}})
      if (v->kind != Value::Kind::Int) throw Error(e ? e->span : r.span, "a range bound must be an integer, not " + type_name(*v));
    if (step.i <= 0) throw Error(r.step->span, "the loop step must be positive, got " + std::to_string(step.i));
    for (int64_t i = lo.i; i < hi.i; i += step.i) {
      ++loop_iterations_;
      Flow flow = run_body(Value::of_int(i));
      if (flow == Flow::Break) return range == 0 ? Flow::Normal : Flow::Break;
      if (flow == Flow::Return) return flow;
      if (hi.i - i < step.i) break;
    }
    return Flow::Normal;
  }
  Value it = eval(*r.iterable, f);
  std::vector<Value> items;
  if (it.kind == Value::Kind::List || it.kind == Value::Kind::Tuple) {
    items = *it.items;
  } else if (it.kind == Value::Kind::Tensor && it.tensor.rank() > 0) {
    for (int64_t i = 0; i < it.tensor.shape()[0]; ++i) items.push_back(host_index(it, {HostIndex{false, i, {}, {}, r.span}}, r.span));
  } else if (it.kind == Value::Kind::Str) {
    for (char c : it.s) items.push_back(Value::of_str(std::string(1, c)));
  } else {
    throw Error(r.iterable->span, "cannot iterate over " + type_name(it));
  }
  for (Value& v : items) {
    Flow flow = run_body(std::move(v));
    if (flow == Flow::Break) return Flow::Normal;
    if (flow == Flow::Return) return flow;
  }
  return Flow::Normal;
}

void Interpreter::exec_import(const ast::Import& imp, Frame& f) {
  computes_->flush(imp.span, "import");
  LoadedModule* from = f.module->source;
  std::string path = session_.resolve_import(imp, *from);
  LoadedModule* m = session_.load(path, imp.span);
  if (!m) throw Error(imp.span, "cannot import '" + imp.path + "'");
  auto it = instances_.find(m->path);
  if (it != instances_.end() && !it->second->executed)
    throw Error(imp.span, "import cycle: '" + imp.path + "' is still being imported");
  ModuleInstance& inst = instantiate(*m);
  Value v;
  v.kind = Value::Kind::Module;
  v.module = instances_.at(m->path);
  (void)inst;
  std::string name = imp.alias;
  if (name.empty()) {
    name = imp.path;
    size_t slash = name.find_last_of('/');
    if (slash != std::string::npos) name = name.substr(slash + 1);
    size_t dot = name.find('.');
    if (dot != std::string::npos) name = name.substr(0, dot);
  }
  f.innermost()[name] = Binding{v, false, imp.span, {}};
}

void Interpreter::exec_config(const ast::Config& c, Frame& f) {
  computes_->flush(c.span, "config");  // a new device or seed applies to what comes after
  for (const ast::RecordField& e : c.entries) {
    Value v = eval(*e.value, f);
    if (e.name == "compute_device") {
      if (v.kind != Value::Kind::Str) throw Error(e.value->span, "compute_device takes a device name in quotes");
      if (v.s.empty()) throw Error(e.value->span, "compute_device names a device: \"\" is none");
      if (!device_registry().find(v.s))
        throw Error(Diagnostic{Severity::Error, e.value->span, "device '" + v.s + "' is not available", {},
                               "available devices: " + device_registry().available() + ", or \"auto\""});
      config_device_ = v.s;
    } else if (e.name == "seed") {
      if (v.kind != Value::Kind::Int) throw Error(e.value->span, "seed takes an integer");
      rng_ = Random(static_cast<uint64_t>(v.i));
    } else {
      throw Error(Diagnostic{Severity::Error, e.name_span, "unknown config key '" + e.name + "'", {},
                             "known keys: compute_device, seed"});
    }
  }
}

// ---------------------------------------------------------------- expressions

Value Interpreter::eval(const ast::Expr& e, Frame& f) { return forced(eval_any(e, f), e.span); }

Value Interpreter::forced(Value v, Span where) {
  if (v.kind != Value::Kind::Pending) return v;
  return Value::of_tensor(computes_->force(v.pending, where));
}

Value Interpreter::eval_any(const ast::Expr& e, Frame& f) {
  using ast::ExprKind;
  if (stack_remaining() < kStackReserve)
    throw Error(e.span, "expressions and calls nested " + std::to_string(depth_) + " calls deep have used up the stack");
  switch (e.kind) {
    case ExprKind::IntLit: {
      const auto& i = ast::as<ast::IntLit>(e);
      if (i.unit.empty()) return Value::of_int(i.value);
      if (i.unit == "us" || i.unit == "ns") return Value::of_int(i.value / (i.unit == "us" ? 1000 : 1000000));
      int64_t scaled;
      if (__builtin_mul_overflow(i.value, unit_scale(i.unit), &scaled)) throw Error(e.span, "size is too large");
      return Value::of_int(scaled);
    }
    case ExprKind::FloatLit: return Value::of_float(ast::as<ast::FloatLit>(e).value);
    case ExprKind::StringLit: return Value::of_str(ast::as<ast::StringLit>(e).value);
    case ExprKind::BoolLit: return Value::of_bool(ast::as<ast::BoolLit>(e).value);
    case ExprKind::NoneLit: return Value::none();
    case ExprKind::Name: return eval_name(ast::as<ast::Name>(e), f);
    case ExprKind::Unary: {
      const auto& u = ast::as<ast::Unary>(e);
      return host_unary(u.op, eval(*u.operand, f), e.span);
    }
    case ExprKind::Binary: {
      const auto& b = ast::as<ast::Binary>(e);
      if (b.op == ast::BinOp::And || b.op == ast::BinOp::Or) {
        Value x = eval(*b.lhs, f);
        std::optional<bool> tx = truthy(x);
        if (!tx) throw Error(b.lhs->span, "'" + std::string(ast::binop_text(b.op)) + "' needs a single value, but this is " + type_name(x));
        if (b.op == ast::BinOp::And ? !*tx : *tx) return Value::of_bool(*tx);
        Value y = eval(*b.rhs, f);
        std::optional<bool> ty = truthy(y);
        if (!ty) throw Error(b.rhs->span, "'" + std::string(ast::binop_text(b.op)) + "' needs a single value, but this is " + type_name(y));
        return Value::of_bool(*ty);
      }
      Value x = eval(*b.lhs, f);
      Value y = eval(*b.rhs, f);
      return host_binary(b.op, x, y, b.op_span.valid() ? b.op_span : e.span);
    }
    case ExprKind::Call: return eval_call(ast::as<ast::Call>(e), f);
    case ExprKind::Index: return eval_index(ast::as<ast::Index>(e), f);
    case ExprKind::Field: return eval_field(ast::as<ast::Field>(e), f);
    case ExprKind::Tuple:
    case ExprKind::List: {
      const auto& elems = e.kind == ExprKind::Tuple ? ast::as<ast::Tuple>(e).elems : ast::as<ast::List>(e).elems;
      std::vector<Value> items;
      for (const ast::ExprPtr& x : elems) items.push_back(eval(*x, f));
      return e.kind == ExprKind::Tuple ? Value::of_tuple(std::move(items)) : Value::of_list(std::move(items));
    }
    case ExprKind::Record: {
      std::vector<std::pair<std::string, Value>> fields;
      for (const ast::RecordField& rf : ast::as<ast::Record>(e).fields) {
        for (const auto& existing : fields)
          if (existing.first == rf.name) throw Error(rf.name_span, "duplicate field '" + rf.name + "'");
        fields.push_back({rf.name, eval(*rf.value, f)});
      }
      return Value::of_record(std::move(fields));
    }
    case ExprKind::Compute: {
      const auto& c = ast::as<ast::Compute>(e);
      // With fusion, a block without @device/@async/@parallel in its header
      // is deferred: its inputs may be pending too.
      bool deferred = options_.fusion && c.header.empty();
      std::vector<Value> inputs;
      for (const ast::ExprPtr& x : c.inputs) {
        Value v = deferred ? eval_any(*x, f) : eval(*x, f);
        if (v.kind == Value::Kind::Future) v = v.future->get();
        inputs.push_back(std::move(v));
      }
      std::string device = !config_device_.empty() ? config_device_ : options_.device;
      if (deferred) return computes_->defer(c, f, std::move(inputs), device);
      computes_->flush(c.span, "the block there runs as written (it names its device, shares its work or is @async)");  // it runs after them
      Value result = computes_->run(c, f, inputs, device);
      if (result.kind == Value::Kind::Future) launched_.push_back(result.future);
      return result;
    }
    case ExprKind::Await: return eval_await(ast::as<ast::Await>(e), f);
  }
  throw Error(e.span, "cannot evaluate this expression");
}

Value Interpreter::eval_name(const ast::Name& n, Frame& f) {
  if (Binding* b = f.lookup(n.name)) return b->value;
  if (is_builtin(n.name)) return Value::of_builtin(n.name);
  if (auto t = parse_dtype(n.name)) return Value::of_dtype(*t);
  if (n.name == "inf") return Value::of_float(INFINITY);
  if (n.name == "nan") return Value::of_float(NAN);
  if (n.name == "pi") return Value::of_float(3.14159265358979323846);
  throw Error(n.span, "unknown name '" + n.name + "'");
}

std::string Interpreter::statement_label(const ast::Stmt& s) const {
  if (!s.span.valid()) return "statement";
  const SourceFile& file = session_.sources().file(s.span.file);
  LineCol at = file.line_col(s.span.begin);
  std::string text(file.line_text(at.line));
  size_t first = text.find_first_not_of(" \t");
  text = first == std::string::npos ? "" : text.substr(first);
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return std::to_string(at.line) + ": " + text;
}

Value Interpreter::eval_await(const ast::Await& a, Frame& f) {
  ProfileSpan wait(ProfileEvent::Kind::Wait, "await");
  // `await all(list)` / `await any(list)` wait for futures: of none, all's
  // results are none, and any has nothing to wait for.
  if (a.value->kind == ast::ExprKind::Call && !a.timeout) {
    const auto& call = ast::as<ast::Call>(*a.value);
    if (call.callee->kind == ast::ExprKind::Name && call.args.size() == 1 && call.args[0].name.empty()) {
      const std::string& fn = ast::as<ast::Name>(*call.callee).name;
      if ((fn == "all" || fn == "any") && !f.lookup(fn)) {
        Value list = eval(*call.args[0].value, f);
        if (list.kind == Value::Kind::List && list.items->empty()) {
          if (fn == "all") return Value::of_list({});
          throw Error(call.span, "await any([]): there is no future to wait for");
        }
        CallArgs args;
        args.span = call.span;
        args.positional.push_back(list);
        args.positional_spans.push_back(call.args[0].value->span);
        Value v = call_function(Value::of_builtin(fn), args);
        return v.kind == Value::Kind::Future ? v.future->get() : v;
      }
    }
  }
  Value v = eval(*a.value, f);
  if (v.kind != Value::Kind::Future) return v;  // awaiting a finished value gives it back
  if (!a.timeout) return v.future->get();
  Value t = eval(*a.timeout, f);
  if (!t.is_number()) throw Error(a.timeout->span, "a timeout is a duration such as 100ms");
  auto ms = std::chrono::milliseconds(static_cast<int64_t>(t.as_double()));
  if (v.future->wait_for(ms) == std::future_status::ready) return v.future->get();
  return eval(*a.fallback, f);
}

std::vector<HostIndex> Interpreter::eval_index_items(const ast::Index& ix, Frame& f) {
  std::vector<HostIndex> items;
  auto as_int = [&](const ast::Expr& e) {
    Value v = eval(e, f);
    if (v.kind == Value::Kind::Bool) return static_cast<int64_t>(v.b);
    if (v.kind != Value::Kind::Int) throw Error(e.span, "an index must be an integer, not " + type_name(v));
    return v.i;
  };
  for (const ast::IndexItem& it : ix.items) {
    HostIndex h;
    h.span = it.span;
    h.is_slice = it.is_slice;
    if (!it.is_slice) {
      h.index = as_int(*it.index);
    } else {
      if (it.lo) h.lo = as_int(*it.lo);
      if (it.hi) h.hi = as_int(*it.hi);
    }
    items.push_back(h);
  }
  return items;
}

Value Interpreter::eval_index(const ast::Index& ix, Frame& f) {
  Value base = eval(*ix.base, f);
  if (base.kind == Value::Kind::Future) base = base.future->get();
  if (base.kind == Value::Kind::Record) {  // model.layers["w"]
    if (ix.items.size() == 1 && !ix.items[0].is_slice) {
      Value key = eval(*ix.items[0].index, f);
      if (key.kind == Value::Kind::Str) {
        Value* v = base.record->find(key.s);
        if (!v) throw Error(ix.items[0].span, "record has no field '" + key.s + "'");
        return *v;
      }
    }
    throw Error(ix.span, "a record is indexed with a field name in quotes");
  }
  return host_index(base, eval_index_items(ix, f), ix.span);
}

Value Interpreter::eval_field(const ast::Field& fe, Frame& f) {
  Value base = eval(*fe.base, f);
  if (base.kind == Value::Kind::Future) base = base.future->get();
  switch (base.kind) {
    case Value::Kind::Record: {
      if (Value* v = base.record->find(fe.field)) return *v;
      std::string known;
      for (const auto& [k, v] : base.record->fields) known += (known.empty() ? "" : ", ") + k;
      throw Error(Diagnostic{Severity::Error, fe.field_span, "record has no field '" + fe.field + "'", {},
                             known.empty() ? "" : "its fields are: " + known});
    }
    case Value::Kind::Module: {
      auto it = base.module->globals.find(fe.field);
      if (it == base.module->globals.end())
        throw Error(fe.field_span, "module '" + base.module->source->path + "' has no '" + fe.field + "'");
      return it->second.value;
    }
    case Value::Kind::Tuple: {
      bool digits = !fe.field.empty() && fe.field.find_first_not_of("0123456789") == std::string::npos;
      if (digits && fe.field.size() < 10) {
        size_t i = std::stoul(fe.field);
        if (i < base.items->size()) return (*base.items)[i];
      }
      throw Error(fe.field_span, "tuple of " + std::to_string(base.items->size()) + " has no element ." + fe.field);
    }
    default: {
      Value out;
      if (get_attribute(base, fe.field, out)) return out;
      throw Error(fe.field_span, type_name(base) + " has no attribute '" + fe.field + "'");
    }
  }
}

Value Interpreter::eval_call(const ast::Call& c, Frame& f) {
  CallArgs args;
  args.span = c.span;
  // A user's function takes pending results as they are; builtins and methods read them.
  auto eval_args = [&](bool user) {
    for (const ast::Arg& a : c.args) {
      Value v = user ? eval_any(*a.value, f) : eval(*a.value, f);
      if (a.name.empty()) {
        if (!args.keywords.empty()) throw Error(a.value->span, "positional arguments must come before keyword arguments");
        args.positional.push_back(std::move(v));
        args.positional_spans.push_back(a.value->span);
      } else {
        for (const auto& k : args.keywords)
          if (k.first == a.name) throw Error(a.name_span, "argument '" + a.name + "' is given twice");
        args.keywords.push_back({a.name, std::move(v)});
        args.keyword_spans.push_back(a.name_span);
      }
    }
  };
  // Methods: t.to_device("cpu"), list.append(x); also fields holding functions.
  if (c.callee->kind == ast::ExprKind::Field) {
    const auto& fe = ast::as<ast::Field>(*c.callee);
    Value self = eval(*fe.base, f);
    if (self.kind == Value::Kind::Future) self = self.future->get();
    if (self.kind != Value::Kind::Record && self.kind != Value::Kind::Module && has_method(self, fe.field)) {
      eval_args(false);
      computes_->flush(c.span, "a method call");  // it may change its tensor
      BuiltinContext ctx{options_.out, &rng_};
      return call_method(self, fe.field, args, ctx);
    }
    Value fn = eval_field(fe, f);
    eval_args(fn.kind == Value::Kind::Function);
    return call_function(fn, args);
  }
  Value fn = eval(*c.callee, f);
  eval_args(fn.kind == Value::Kind::Function);
  return call_function(fn, args);
}

Value Interpreter::call_function(const Value& fn, CallArgs& args) {
  if (fn.kind == Value::Kind::Builtin) {
    BuiltinContext ctx{options_.out, &rng_};
    // all()/any() over futures wait for them.
    if (fn.s == "all" || fn.s == "any") {
      bool futures = args.positional.size() == 1 && args.positional[0].kind == Value::Kind::List;
      if (futures)
        for (const Value& v : *args.positional[0].items) futures = futures && v.kind == Value::Kind::Future;
      if (futures && !args.positional[0].items->empty()) {
        const auto& list = *args.positional[0].items;
        if (fn.s == "all") {
          std::vector<Value> out;
          for (const Value& v : list) out.push_back(v.future->get());
          return Value::of_list(std::move(out));
        }
        while (true) {
          for (size_t i = 0; i < list.size(); ++i)
            if (list[i].future->wait_for(std::chrono::milliseconds(0)) == std::future_status::ready)
              return Value::of_tuple({list[i].future->get(), Value::of_int(static_cast<int64_t>(i))});
          std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
      }
    }
    for (Value& v : args.positional)
      if (v.kind == Value::Kind::Future) v = v.future->get();
    // Builtins with an effect (print, save, time, rand, ...) come after every pending block.
    if (!is_quiet_builtin(fn.s)) computes_->flush(args.span, fn.s + "() has an effect");
    if (fn.s == "latency") return measure_latency(args);
    return call_builtin(fn.s, args, ctx);
  }
  if (fn.kind == Value::Kind::Function) return call_user(*fn.function, args);
  throw Error(args.span, type_name(fn) + " is not a function");
}

Frame Interpreter::bind_call(const FunctionData& fn, CallArgs& args) {
  const ast::FuncDef& def = *fn.def;
  if (args.positional.size() > def.params.size())
    throw Error(Diagnostic{Severity::Error, args.span,
                           "'" + def.name + "' takes " + std::to_string(def.params.size()) + " argument" +
                               (def.params.size() == 1 ? "" : "s") + ", but " + std::to_string(args.positional.size()) +
                               " were given",
                           {{def.name_span, std::string(kind_word(def.func_kind)) + " '" + def.name + "' is defined here"}}, ""});
  std::vector<std::optional<Value>> bound(def.params.size());
  for (size_t i = 0; i < args.positional.size(); ++i) bound[i] = args.positional[i];
  for (size_t k = 0; k < args.keywords.size(); ++k) {
    const auto& [name, v] = args.keywords[k];
    size_t i = 0;
    while (i < def.params.size() && def.params[i].name != name) ++i;
    if (i == def.params.size())
      throw Error(Diagnostic{Severity::Error, args.keyword_spans[k], "'" + def.name + "' has no parameter '" + name + "'",
                             {{def.name_span, "defined here"}}, ""});
    if (bound[i]) throw Error(args.keyword_spans[k], "parameter '" + name + "' is given twice");
    bound[i] = v;
  }
  Frame frame;
  frame.module = fn.module;
  frame.scopes.emplace_back();
  std::map<std::string, Span> dim_sites;
  for (size_t i = 0; i < def.params.size(); ++i) {
    const ast::Param& p = def.params[i];
    if (!bound[i]) {
      if (!p.default_value)
        throw Error(Diagnostic{Severity::Error, args.span, "missing argument '" + p.name + "' of '" + def.name + "'",
                               {{p.span, "the parameter is declared here"}}, ""});
      bound[i] = eval(*p.default_value, frame);
    }
    bind_typed_param(p, *bound[i], frame.scopes.back(), dim_sites);
  }
  return frame;
}

Value Interpreter::call_user(const FunctionData& fn, CallArgs& args) {
  const ast::FuncDef& def = *fn.def;
  if (depth_ >= kMaxCallDepth)
    throw Error(args.span, "calls nested more than " + std::to_string(kMaxCallDepth) + " deep (runaway recursion?)");
  if (stack_remaining() < kStackReserve)
    throw Error(args.span, "calls nested " + std::to_string(depth_) + " deep have used up the stack (runaway recursion?)");
  if (fn.module == instances_[main_module_->path].get() && def.name == "main") main_called_ = true;
  // The call counts from here: a default argument may call again
  // (`def f(n = f())`), and that recursion must meet the limit too.
  CallDepth nested(depth_);
  Frame frame = bind_call(fn, args);
  std::optional<ProfileSpan> span;  // --profile: the call, and its tier
  if (Profiler::global().enabled()) span.emplace(ProfileEvent::Kind::Function, def.name, "interpreted");
  Value result;
  if (std::optional<Value> compiled = call_compiled(fn, frame, args.span)) {
    result = std::move(*compiled);
    if (span) span->event().device = "compiled";
  } else {
    int64_t loops_before = loop_iterations_;
    Flow flow = exec_block(def.body, frame, /*new_scope=*/false, /*profiled=*/true);
    result = flow == Flow::Return ? frame.return_value : Value::none();
    host_tier_->count_loops(def, loop_iterations_ - loops_before);
  }
  if (def.return_type) {
    Value checked = result;
    if (checked.kind == Value::Kind::Future) checked = checked.future->get();
    check_type(*def.return_type, checked, args.span, frame.scopes.back(), "the result of '" + def.name + "'", "", nullptr);
    if (def.return_type->name == "float" && result.kind == Value::Kind::Int) result = Value::of_float(static_cast<double>(result.i));
  }
  return result;
}

const host::HostCode* Interpreter::compiled_code(const FunctionData& fn, Frame& frame, Span call, std::vector<std::string>* names_out) {
  const ast::FuncDef& def = *fn.def;
  if ((host_tier_->mode() == host::HostMode::Interp && def.annotations.empty()) || host_tier_->never_compiles(def)) return nullptr;
  // Its parameters, then the dimensions their types bound.
  const Scope& bound = frame.scopes.back();
  std::vector<std::string> names;
  for (const ast::Param& p : def.params) names.push_back(p.name);
  std::vector<std::string> dims;
  for (const auto& [name, b] : bound)
    if (std::find(names.begin(), names.end(), name) == names.end()) dims.push_back(name);
  std::sort(dims.begin(), dims.end());
  names.insert(names.end(), dims.begin(), dims.end());
  // An argument compiled code does not take: interpreted, unless the
  // function must compile.
  auto not_taken = [&](const std::string& why) -> const host::HostCode* {
    host_tier_->stays_interpreted(def, why);
    FunctionAnnotations marks = read_function_annotations(def);
    if (const ast::Annotation* a = marks.first_requirement())
      throw Error(Diagnostic{Severity::Error, call, "'" + def.name + "' must compile to native code, but its " + why,
                             {{a->span, "'" + def.name + "' is marked @" + a->name + " here"}}, ""});
    return nullptr;
  };
  std::vector<host::HostType> types;
  for (const std::string& name : names) {
    const Value& v = bound.at(name).value;
    switch (v.kind) {
      case Value::Kind::Int: types.push_back(host::HostType::of(host::HostType::Kind::Int)); break;
      case Value::Kind::Bool: types.push_back(host::HostType::of(host::HostType::Kind::Bool)); break;
      case Value::Kind::Float: types.push_back({host::HostType::Kind::Float, v.dtype, 0}); break;
      case Value::Kind::Tensor:
        if (!v.tensor.valid()) return not_taken("argument '" + name + "' is a null tensor");
        types.push_back(host::HostType::tensor(v.tensor.dtype(), static_cast<int>(v.tensor.rank())));
        break;
      case Value::Kind::Pending: {
        types.push_back(host::HostType::tensor(v.pending->dtype, static_cast<int>(v.pending->shape.size())));
        break;
      }
      case Value::Kind::Record: {
        std::vector<std::string> fields;
        std::vector<host::HostType> field_types;
        for (const auto& [field, fv] : v.record->fields) {
          if (fv.kind == Value::Kind::Int) field_types.push_back(host::HostType::of(host::HostType::Kind::Int));
          else if (fv.kind == Value::Kind::Bool) field_types.push_back(host::HostType::of(host::HostType::Kind::Bool));
          else if (fv.kind == Value::Kind::Float) field_types.push_back({host::HostType::Kind::Float, fv.dtype, 0, {}, {}});
          else
            return not_taken("argument '" + name + "' has a field '" + field + "' of type " + type_name(fv) +
                             " (compiled code takes records of numbers and bools)");
          fields.push_back(field);
        }
        types.push_back(host::HostType::record(std::move(fields), std::move(field_types)));
        break;
      }
      default:  // strings, lists, ...: only the interpreter takes them
        return not_taken("argument '" + name + "' is of type " + type_name(v) +
                         " (compiled code takes numbers, bools, tensors and records of numbers)");
    }
  }
  ModuleInstance* module = fn.module;
  const host::HostRefusal* refused = nullptr;
  const host::HostCode* code = host_tier_->code_for(
      def, names, types,
      [module] {
        std::map<std::string, const ast::FuncDef*> functions;
        for (const auto& [name, b] : module->globals)
          if (b.value.kind == Value::Kind::Function && b.value.function->module == module) functions[name] = b.value.function->def;
        return functions;
      },
      &refused);
  if (refused) {
    FunctionAnnotations marks = read_function_annotations(def);
    if (marks.no_allocation && refused->allocates)
      throw Error(Diagnostic{Severity::Error, refused->where, "'" + def.name + "' may not allocate, but " + refused->reason,
                             {{marks.no_allocation->span, "'" + def.name + "' is marked @no_allocation here"}}, ""});
    if (const ast::Annotation* a = marks.first_requirement())
      throw Error(Diagnostic{Severity::Error, refused->where.valid() ? refused->where : def.name_span,
                             "'" + def.name + "' must compile to native code, but " + refused->reason,
                             {{a->span, "'" + def.name + "' is marked @" + a->name + " here"}},
                             "run `zyntax run --explain-host` to see what compiled code takes"});
  }
  if (!code) return nullptr;
  if (code->writes_tensors) {  // as a write into a tensor by interpreted code
    computes_->flush(call, "host code writes into a tensor");
    for (; launches_waited_ < launched_.size(); ++launches_waited_) launched_[launches_waited_]->wait();
  }
  for (const std::string& name : names) {
    Binding& b = frame.scopes.back().at(name);
    if (b.value.kind == Value::Kind::Pending) b.value = forced(b.value, call);
  }
  if (names_out) *names_out = names;
  return code;
}

Value Interpreter::measure_latency(CallArgs& args) {
  const char* usage = "latency() takes a function of the program, then its arguments: latency(f, x, y, calls=10000)";
  if (args.positional.empty() || args.positional[0].kind != Value::Kind::Function) throw Error(args.span, usage);
  int64_t calls = 10000;
  for (size_t k = 0; k < args.keywords.size(); ++k) {
    const auto& [name, v] = args.keywords[k];
    if (name != "calls") throw Error(args.keyword_spans[k], std::string("latency() has no parameter '") + name + "'; " + usage);
    if (v.kind != Value::Kind::Int || v.i < 1 || v.i > 100000000)
      throw Error(args.keyword_spans[k], "calls must be an integer from 1 to 100000000");
    calls = v.i;
  }
  const FunctionData& fn = *args.positional[0].function;
  CallArgs call;
  call.span = args.span;
  call.positional.assign(args.positional.begin() + 1, args.positional.end());
  call.positional_spans.assign(args.positional_spans.begin() + 1, args.positional_spans.end());
  // The first call as any other (it compiles what must compile, and fails as it would).
  call_user(fn, call);
  CallDepth nested(depth_);
  Frame frame = bind_call(fn, call);
  std::vector<std::string> names;
  const host::HostCode* code = compiled_code(fn, frame, args.span, &names);
  // The clock's own cost, taken off every call's time.
  using Clock = std::chrono::steady_clock;
  double overhead = 1e30;
  for (int k = 0; k < 1000; ++k) {
    auto t0 = Clock::now();
    auto t1 = Clock::now();
    overhead = std::min(overhead, std::chrono::duration<double, std::nano>(t1 - t0).count());
  }
  std::vector<double> ns(static_cast<size_t>(calls));
  if (code) {
    CompiledCall compiled(*code, frame.scopes.back(), names);
    host::HostCallContext ctx;
    ctx.depth = depth_;
    ctx.max_depth = kMaxCallDepth;
    uint64_t result = 0;
    for (size_t k = 0; k < ns.size() && ctx.error_site < 0; ++k) {
      auto t0 = Clock::now();
      result = compiled.run(ctx);
      auto t1 = Clock::now();
      ns[k] = std::chrono::duration<double, std::nano>(t1 - t0).count();
    }
    compiled.finish(ctx, result, kMaxCallDepth);
  } else {
    for (double& t : ns) {
      auto t0 = Clock::now();
      call_user(fn, call);
      t = std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
    }
  }
  double total = 0;
  for (double& t : ns) {
    t = std::max(0.0, t - overhead);
    total += t;
  }
  std::sort(ns.begin(), ns.end());
  auto at = [&](double q) { return ns[std::min(ns.size() - 1, static_cast<size_t>(q * static_cast<double>(ns.size())))]; };
  FunctionAnnotations marks = read_function_annotations(*fn.def);
  std::vector<std::pair<std::string, Value>> fields = {
      {"calls", Value::of_int(calls)},
      {"p50_ns", Value::of_float(at(0.5))},
      {"p99_ns", Value::of_float(at(0.99))},
      {"mean_ns", Value::of_float(total / static_cast<double>(ns.size()))},
      {"max_ns", Value::of_float(ns.back())},
      {"tier", Value::of_str(code ? "compiled" : "interpreted")},
  };
  if (marks.target_latency_ns) {
    fields.push_back({"target_ns", Value::of_int(*marks.target_latency_ns)});
    fields.push_back({"met", Value::of_bool(at(0.99) <= static_cast<double>(*marks.target_latency_ns))});
  }
  return Value::of_record(std::move(fields));
}

std::optional<Value> Interpreter::call_compiled(const FunctionData& fn, Frame& frame, Span call) {
  std::vector<std::string> names;
  const host::HostCode* code = compiled_code(fn, frame, call, &names);
  if (!code) return std::nullopt;
  if (depth_ == 1) last_call_compiled_ = code;  // the outermost call
  CompiledCall compiled(*code, frame.scopes.back(), names);
  host::HostCallContext ctx;
  ctx.depth = depth_;
  ctx.max_depth = kMaxCallDepth;
  uint64_t result = compiled.run(ctx);
  return compiled.finish(ctx, result, kMaxCallDepth);
}

void Interpreter::bind_typed_param(const ast::Param& p, const Value& v, Scope& scope, std::map<std::string, Span>& dim_sites) {
  Value value = v;
  if (p.type) {
    check_type(*p.type, value, p.span, scope, "argument '" + p.name + "'", p.name, &dim_sites);
    if (p.type->name == "float" && value.kind == Value::Kind::Int) value = Value::of_float(static_cast<double>(value.i));
  }
  scope[p.name] = Binding{value, false, p.span, {}};
}

// Checks a value against a written type. Tensor types bind their dimension
// names in `scope` (when `dim_sites` is given) or check them against it.
void Interpreter::check_type(const ast::TypeExpr& t, const Value& v, Span where, Scope& scope, const std::string& what,
                             const std::string& param, std::map<std::string, Span>* dim_sites) {
  auto mismatch = [&](const std::string& expected) {
    throw Error(Diagnostic{Severity::Error, where, what + " must be " + expected + ", but it is " + type_name(v),
                           {{t.span, "the type is written here"}}, ""});
  };
  const std::string& n = t.name;
  if (n == "int") {
    if (v.kind != Value::Kind::Int) mismatch("an int");
  } else if (n == "float") {
    if (v.kind != Value::Kind::Float && v.kind != Value::Kind::Int) mismatch("a float");
  } else if (n == "bool") {
    if (v.kind != Value::Kind::Bool) mismatch("a bool");
  } else if (n == "str") {
    if (v.kind != Value::Kind::Str) mismatch("a str");
  } else if (n == "list") {
    if (v.kind != Value::Kind::List) mismatch("a list");
  } else if (n == "tuple") {
    if (v.kind != Value::Kind::Tuple) mismatch("a tuple");
  } else if (n == "record") {
    if (v.kind != Value::Kind::Record) mismatch("a record");
  } else if (auto scalar = parse_dtype(n)) {
    if (!v.is_number()) mismatch(std::string("a number (") + dtype_name(*scalar) + ")");
  } else if (n == "tensor") {
    if (v.kind != Value::Kind::Tensor && v.kind != Value::Kind::Pending) mismatch("a tensor");
    if (v.kind == Value::Kind::Pending && !v.pending) forced(v, where);  // reports the released value
    // A pending result's type is known before it is computed.
    const Shape& shape = v.kind == Value::Kind::Pending ? v.pending->shape : v.tensor.shape();
    DType dtype = v.kind == Value::Kind::Pending ? v.pending->dtype : v.tensor.dtype();
    if (!t.dims.empty() && shape.size() != t.dims.size())
      mismatch("a tensor of " + std::to_string(t.dims.size()) + " axes");
    if (!t.dtype.empty()) {
      auto d = parse_dtype(t.dtype);
      if (d && *d != dtype) mismatch("a tensor of " + t.dtype);
    }
    Frame dims_frame;
    ModuleInstance empty_module;
    dims_frame.module = &empty_module;
    dims_frame.scopes.push_back(scope);
    for (size_t a = 0; a < t.dims.size(); ++a) {
      const ast::Expr& d = *t.dims[a];
      int64_t actual = shape[a];
      if (d.kind == ast::ExprKind::Name) {
        const std::string& dim = ast::as<ast::Name>(d).name;
        auto it = scope.find(dim);
        if (it == scope.end() && dim_sites) {
          scope[dim] = Binding{Value::of_int(actual), false, d.span, {{param, static_cast<int>(a)}}};
          (*dim_sites)[dim] = where;
          continue;
        }
        if (it != scope.end() && it->second.value.kind == Value::Kind::Int && it->second.value.i != actual) {
          Diagnostic diag{Severity::Error, where,
                          what + " has shape " + shape_str(shape) + ": axis " + std::to_string(a) + " is " +
                              std::to_string(actual) + ", but '" + dim + "' is " + std::to_string(it->second.value.i),
                          {}, ""};
          if (dim_sites && dim_sites->count(dim)) diag.note((*dim_sites)[dim], "'" + dim + "' was bound here");
          diag.note(d.span, "the type is written here");
          throw Error(diag);
        }
        if (it != scope.end()) {
          // The same dimension in another parameter's type: that axis is it too.
          if (dim_sites && !it->second.param_axes.empty()) it->second.param_axes.push_back({param, static_cast<int>(a)});
          continue;
        }
      }
      Value expected = eval(d, dims_frame);
      if (expected.kind != Value::Kind::Int) throw Error(d.span, "a tensor dimension must be an integer");
      if (expected.i != actual)
        throw Error(Diagnostic{Severity::Error, where,
                               what + " has shape " + shape_str(shape) + ", but axis " + std::to_string(a) +
                                   " must be " + std::to_string(expected.i),
                               {{d.span, "the size is written here"}}, ""});
    }
  }
  // Other names (user record types, `any`) are not checked at run time.
}

}  // namespace zyntax
