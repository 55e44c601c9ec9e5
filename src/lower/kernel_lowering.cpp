#include "lower/kernel_lowering.hpp"

#include <algorithm>
#include <cmath>

#include "cir/pass_manager.hpp"
#include "cir/passes/simplify.hpp"
#include "cir/reads.hpp"
#include "lower/lowering.hpp"
#include "lower/output_shape.hpp"
#include "lower/parallel_loops.hpp"

namespace zyntax::lowering {

std::optional<LoweredCompute> Lowering::run(DiagnosticEngine& diags) {
  // Counted before the annotations: a block whose annotations are wrong is
  // not compiled, whatever its body (a misspelt reduction must not sum).
  size_t errors_before = diags.error_count();
  annotations_ = read_kernel_annotations(node_, diags);
  if (!check_inputs(diags)) return std::nullopt;
  // Types of `var`s and of `out` depend on later assignments, and input
  // dimension names on how the body indexes them: iterate quietly until
  // nothing changes, then lower once more, reporting.
  for (int iter = 0; iter < 6; ++iter) {
    DiagnosticEngine scratch(dummy_sources_);
    auto names_before = axis_names_;
    lower_body(scratch, /*final=*/false);
    rename_inferred_dims(names_before);
    if (iter > 0 && names_before == axis_names_ && same_inferred()) break;
  }
  lower_body(diags, /*final=*/true);
  if (diags.error_count() > errors_before) return std::nullopt;
  LoweredCompute out;
  out.annotations = annotations_;
  out.kernel = assemble(diags);
  if (diags.error_count() > errors_before) return std::nullopt;
  return out;
}

// The loop `@kernel reduce(op, axis=k)` reduces among `loops` around the
// yield: k counts from the outermost, a negative k from the innermost.
std::optional<size_t> Lowering::reduced_loop(size_t loops) const {
  int64_t k = *annotations_.reduce_axis;
  if (k < 0) k += static_cast<int64_t>(loops);
  if (k < 0 || k >= static_cast<int64_t>(loops)) return std::nullopt;
  return static_cast<size_t>(k);
}

// An input axis named during this iteration (`q.d1` became `seq`): shapes
// inferred under the old name take the new one, or a `var` typed from the
// previous iteration would keep naming a dimension the kernel no longer has.
void Lowering::rename_inferred_dims(const std::vector<std::vector<std::string>>& names_before) {
  cir::Substitution renamed;
  for (size_t i = 0; i < axis_names_.size(); ++i)
    for (size_t a = 0; a < axis_names_[i].size(); ++a) {
      std::string old_name = axis_name_in(names_before, i, a), new_name = axis_name(i, a);
      if (old_name != new_name) renamed[old_name] = cir::Var::make(new_name, cir::Type::scalar(DType::I64));
    }
  if (renamed.empty()) return;
  for (auto& [key, inf] : inferred_)
    for (Expr& d : inf.shape) d = cir::substitute(d, renamed);
}

bool Lowering::check_inputs(DiagnosticEngine& diags) {
  bool ok = true;
  std::map<std::string, Span> seen;
  for (size_t i = 0; i < node_.inputs.size(); ++i) {
    const ast::Expr& e = *node_.inputs[i];
    std::string path = ast::path_text(e);
    if (path.empty()) {
      diags.error(e.span, "a compute input must be a name or a field path such as weights.w")
          .with_hint("bind the value first: `let t = ...` and pass `t`");
      ok = false;
      continue;
    }
    if (auto it = seen.find(path); it != seen.end()) {
      diags.error(e.span, "'" + path + "' is passed to compute twice").note(it->second, "first passed here");
      ok = false;
    }
    seen[path] = e.span;
    if (path == "out") {
      diags.error(e.span, "'out' names the kernel's result and cannot be an input");
      ok = false;
    }
  }
  if (sigs_.size() != node_.inputs.size()) ok = false;
  // Inputs whose rank the host does not know (`load(...)` at check time)
  // get the rank their deepest indexing implies.
  ranks_.resize(sigs_.size());
  for (size_t i = 0; i < sigs_.size() && ok; ++i)
    ranks_[i] = sigs_[i].rank ? *sigs_[i].rank : implied_rank(sigs_[i].path) + sigs_[i].rank_guess_extra;
  axis_names_.resize(sigs_.size());
  for (size_t i = 0; i < sigs_.size() && ok; ++i) axis_names_[i].resize(static_cast<size_t>(ranks_[i]));
  return ok;
}

int Lowering::implied_rank(const std::string& path) {
  int best = 1;
  visit_exprs(*node_.body, [&](const ast::Expr& e) {
    if (e.kind == ast::ExprKind::Index && ast::path_text(*ast::as<ast::Index>(e).base) == path)
      best = std::max(best, static_cast<int>(ast::as<ast::Index>(e).items.size()));
  });
  return best;
}

void Lowering::reset() {
  symbols_.clear();
  scopes_.clear();
  scopes_.emplace_back();
  unresolved_.clear();
  unresolved_order_.clear();
  range_bounds_.clear();
  sites_.clear();
  host_dims_.clear();
  host_dims_order_.clear();
  scalars_.clear();
  scalars_order_.clear();
  used_names_.clear();
  loops_.clear();
  yield_loops_.reset();
  yield_span_ = {};
  saw_yield_ = false;
  saw_out_store_ = false;
  saw_statement_ = false;
  poisoned_.clear();
  for (const InputSignature& s : sigs_) used_names_.insert(s.path);
  used_names_.insert("out");
}

void Lowering::lower_body(DiagnosticEngine& diags, bool final) {
  diags_ = &diags;
  final_ = final;
  errors_at_start_ = diags.error_count();
  previous_ = std::move(inferred_);
  inferred_.clear();
  reset();
  body_ = lower_block(*node_.body);
  check_kernel_shape();
  bind_dimensions();
}

void Lowering::check_kernel_shape() {
  if (!final_ || other_errors()) return;
  bool reduce = annotations_.kind == cir::KernelKind::Reduce;
  if (reduce && !saw_yield_) {
    diags_->error(annotations_.kind_span.valid() ? annotations_.kind_span : node_.span,
                  "a reduce kernel must yield the values it reduces")
        .with_hint("write `yield x[i]` inside the loops");
  }
  if (!reduce && !saw_out_store_) {
    diags_->error(node_.span, "the kernel never writes its result")
        .with_hint("assign to `out[...]` (or to `out` as a whole tile)");
  }
}

// Names that nothing in scope binds are dimensions if a loop `v in 0..N`
// indexes an input with `v` directly: then N is that input's extent.
void Lowering::bind_dimensions() {
  for (const std::string& name : unresolved_order_) {
    std::vector<const IndexSite*> found;
    for (const IndexSite& s : sites_)
      if (s.loop->bound_name == name) found.push_back(&s);
    if (found.empty()) {
      if (final_ && (!other_errors() || !range_bounds_.count(name))) report_unbound(name);
      continue;
    }
    for (const IndexSite* s : found) {
      std::string& n = axis_names_[s->input][static_cast<size_t>(s->axis)];
      if (n.empty()) n = name;
    }
    bound_dims_[name] = {found[0]->input, found[0]->axis};
    if (!final_) continue;
    // Static sizes that disagree are an error now, not at run time.
    for (const IndexSite* s : found) {
      auto a = static_extent(found[0]->input, found[0]->axis), b = static_extent(s->input, s->axis);
      if (a && b && *a != *b) {
        diags_->error(s->span, "dimension '" + name + "' is " + std::to_string(*b) + " here (" + sigs_[s->input].path +
                                   " axis " + std::to_string(s->axis) + ")")
            .note(found[0]->span, "but " + std::to_string(*a) + " here (" + sigs_[found[0]->input].path + " axis " +
                                      std::to_string(found[0]->axis) + ")");
        break;
      }
    }
  }
}

void Lowering::report_unbound(const std::string& name) {
  const auto& uses = unresolved_.at(name);
  if (!range_bounds_.count(name)) {  // never a loop bound: just an unknown name
    diags_->error(uses.front(), "unknown name '" + name + "'")
        .with_hint("kernels see their inputs, their own variables, and numbers defined on the host");
    return;
  }
  Diagnostic& d = diags_->error(uses.front(), "unbound dimension '" + name + "'");
  d.with_hint("bind it with a host variable (`let " + name + " = 128`), a parameter type (`x: tensor[" + name +
              ", ...]`), or index an input with a loop over it (`for i in 0.." + name + ": ... x[i]`)");
  for (size_t i = 1; i < uses.size() && i < 3; ++i) d.note(uses[i], "also used here");
}

cir::Kernel Lowering::assemble(DiagnosticEngine& diags) {
  cir::Kernel k;
  k.name = name_;
  k.kind = annotations_.kind;
  k.reduce_op = annotations_.reduce_op;
  if (annotations_.reduce_axis && yield_loops_)
    if (std::optional<size_t> axis = reduced_loop(yield_loops_->size())) k.reduce_axis = static_cast<int>(*axis);
  k.span = node_.span;
  // First, so that host sizes it names become dimensions of the kernel.
  if (annotations_.shared_bytes) k.hints.shared_bytes = shared_bytes(diags);
  std::set<std::string> dim_names;
  for (size_t i = 0; i < sigs_.size(); ++i) {
    cir::Param p;
    p.role = cir::ParamRole::Input;
    p.name = sigs_[i].path;
    p.type = input_type(i);
    k.params.push_back(p);
    for (size_t a = 0; a < axis_names_[i].size(); ++a) {
      std::string n = axis_name(i, a);
      if (dim_names.insert(n).second) k.dims.push_back({n, cir::DimSource::Input, sigs_[i].path, static_cast<int>(a)});
    }
  }
  // Names bound to an axis that already carries another name.
  for (const auto& [name, where] : bound_dims_)
    if (dim_names.insert(name).second)
      k.dims.push_back({name, cir::DimSource::Input, sigs_[where.first].path, where.second});
  for (const std::string& n : host_dims_order_)
    if (dim_names.insert(n).second) k.dims.push_back({n, cir::DimSource::Host, "", -1});
  for (const std::string& n : scalars_order_) {
    cir::Param p;
    p.role = cir::ParamRole::Scalar;
    p.name = n;
    p.type = cir::Type::scalar(scalars_.at(n));
    k.params.push_back(p);
  }
  k.body = body_;
  // The output's shape: the reduce loops that remain, or what the stores cover.
  cir::Param out;
  out.role = cir::ParamRole::Output;
  out.name = "out";
  out.type = out_type();
  if (annotations_.kind == cir::KernelKind::Reduce) {
    out.type.shape.clear();
    if (yield_loops_ && k.reduce_axis)
      for (size_t i = 0; i < yield_loops_->size(); ++i)
        if (static_cast<int>(i) != *k.reduce_axis) out.type.shape.push_back(trip_count(*(*yield_loops_)[i]));
    if (is_arg_reduce(annotations_.reduce_op))
      out.type.dtype = DType::I64;
  } else {
    std::optional<std::vector<Expr>> shape = infer_output_shape(k.body, diags);
    if (!shape) return k;
    out.type.shape = *shape;
    check_whole_out_reads(k.body, out.type.rank(), diags);
    drop_shape_only_fill(k.body);
  }
  k.params.push_back(out);
  k.hints.workgroup = annotations_.workgroup;
  k.hints.tile = annotations_.tile;
  for (const auto& b : annotations_.broadcast) {
    int i = input_index(b.input);
    if (i < 0) {
      diags.error(b.span, "@broadcast names '" + b.input + "', which is not an input of this compute block");
      continue;
    }
    if (b.axis >= static_cast<int>(out.type.rank()))
      diags.error(b.span, "@broadcast axis " + std::to_string(b.axis) + " is past the output's " +
                              std::to_string(out.type.rank()) + " axes");
    k.hints.broadcast.push_back({b.input, b.axis});
  }
  if (!annotations_.devices.empty()) {
    k.hints.device = annotations_.devices[0];
    for (size_t i = 1; i < annotations_.devices.size(); ++i) k.hints.device += "," + annotations_.devices[i];
  }
  k.hints.parallel = annotations_.parallel;
  k.hints.tf32 = annotations_.tf32;
  k.hints.bf16 = annotations_.bf16;
  return cir::run_passes(std::move(k), "lowering",
                         {{"mark_parallel_loops", [](const cir::Kernel& in) {
                             cir::Kernel out = in;
                             mark_parallel_loops(out);
                             return out;
                           }},
                          {"simplify", [](const cir::Kernel& in) { return cir::simplify(in); }}});
}

// `out = zeros(M, N)` before anything else touches out only gives its
// shape (for updates at indices read from data, `out[ids[i], j] += ...`):
// outputs start zeroed. Without it the body is one loop nest, which
// devices share out.
void Lowering::drop_shape_only_fill(cir::Block& body) {
  for (auto it = body.begin(); it != body.end(); ++it) {
    auto st = it->as<cir::Store>();
    if (st && st->buffer == "out" && st->axes.empty()) {
      auto fill = st->value.as<cir::Fill>();
      auto f = fill ? fill->value.as<cir::FloatImm>() : nullptr;
      auto i = fill ? fill->value.as<cir::IntImm>() : nullptr;
      if ((f && f->value == 0.0 && !std::signbit(f->value)) || (i && i->value == 0)) body.erase(it);
      return;
    }
    if (cir::reads(*it).count("out") || cir::writes(*it).count("out")) return;
  }
}

// The @shared(...) size: host sizes and the kernel's dimensions only.
Expr Lowering::shared_bytes(DiagnosticEngine& diags) {
  diags_ = &diags;
  final_ = true;
  scopes_.clear();
  scopes_.emplace_back();
  size_t known = unresolved_order_.size();
  Value v = int_operand(*annotations_.shared_bytes, "@shared size");
  bool ok = v.ok();
  for (size_t i = known; i < unresolved_order_.size(); ++i) {
    const std::string& name = unresolved_order_[i];
    if (bound_dims_.count(name)) continue;
    diags.error(unresolved_.at(name).front(), "unknown name '" + name + "' in the @shared size")
        .with_hint("it may use host integers and the kernel's dimensions");
    ok = false;
  }
  return ok ? cir::simplify(v.e) : Expr();
}

template <class F>
void Lowering::visit_exprs(const ast::Block& b, F&& f) {
  struct Walker {
    F& f;
    void expr(const ast::Expr* e) {
      if (!e) return;
      f(*e);
      using ast::ExprKind;
      switch (e->kind) {
        case ExprKind::Unary: expr(ast::as<ast::Unary>(*e).operand.get()); break;
        case ExprKind::Binary:
          expr(ast::as<ast::Binary>(*e).lhs.get());
          expr(ast::as<ast::Binary>(*e).rhs.get());
          break;
        case ExprKind::Call:
          for (const ast::Arg& a : ast::as<ast::Call>(*e).args) expr(a.value.get());
          break;
        case ExprKind::Index:
          expr(ast::as<ast::Index>(*e).base.get());
          for (const ast::IndexItem& it : ast::as<ast::Index>(*e).items) {
            expr(it.index.get());
            expr(it.lo.get());
            expr(it.hi.get());
          }
          break;
        case ExprKind::Tuple:
          for (const ast::ExprPtr& x : ast::as<ast::Tuple>(*e).elems) expr(x.get());
          break;
        default: break;
      }
    }
    void block(const ast::Block& blk) {
      for (const ast::StmtPtr& s : blk.stmts) stmt(*s);
    }
    void stmt(const ast::Stmt& s) {
      using ast::StmtKind;
      switch (s.kind) {
        case StmtKind::Let: expr(ast::as<ast::Let>(s).init.get()); break;
        case StmtKind::Assign:
          expr(ast::as<ast::Assign>(s).target.get());
          expr(ast::as<ast::Assign>(s).value.get());
          break;
        case StmtKind::ExprStmt: expr(ast::as<ast::ExprStmt>(s).expr.get()); break;
        case StmtKind::If:
          expr(ast::as<ast::If>(s).cond.get());
          block(ast::as<ast::If>(s).then_body);
          block(ast::as<ast::If>(s).else_body);
          break;
        case StmtKind::For:
          for (const ast::ForRange& r : ast::as<ast::For>(s).ranges) {
            expr(r.lo.get());
            expr(r.hi.get());
            expr(r.step.get());
          }
          block(ast::as<ast::For>(s).body);
          break;
        case StmtKind::Yield: expr(ast::as<ast::Yield>(s).value.get()); break;
        case StmtKind::BlockStmt: block(ast::as<ast::BlockStmt>(s).block); break;
        default: break;
      }
    }
  };
  Walker w{f};
  w.block(b);
}

}  // namespace zyntax::lowering

namespace zyntax {

std::optional<LoweredCompute> lower_compute(const ast::Compute& c, const std::string& name,
                                            const std::vector<InputSignature>& inputs, const HostEnv& host,
                                            DiagnosticEngine& diags) {
  return lowering::Lowering(c, name, inputs, host).run(diags);
}

}  // namespace zyntax
