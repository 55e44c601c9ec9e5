#include "cir/passes/schedule_gpu_attention.hpp"

#include <cmath>
#include <map>

#include "cir/affine.hpp"
#include "cir/equal_everywhere.hpp"
#include "cir/passes/gpu_loops.hpp"
#include "cir/passes/simplify.hpp"
#include "cir/verifier.hpp"

namespace zyntax::cir {

namespace {

constexpr int kTileRows = 128, kTileKeys = 128, kStages = 2, kConsumers = 2;

// What the matcher found, by the program's own names.
struct AttentionForm {
  const For* batch = nullptr;
  const For* queries = nullptr;
  const For* keys = nullptr;
  std::string q, k, v;  // the inputs
  int64_t block = 0, key_block = 0;
  double scale = 1.0;
  bool causal = false;
  const Store* store = nullptr;
};

class Matcher {
 public:
  explicit Matcher(const Kernel& k) : k_(k) {}

  std::optional<AttentionForm> run(std::string* why) {
    why_ = why;
    if (k_.body.size() != 1) return fail("a kernel of more than one loop nest");
    f_.batch = k_.body[0].as<For>();
    if (!f_.batch || !from_zero(*f_.batch, 1)) return fail("no batch loop from 0");
    if (f_.batch->body.size() != 1 || !(f_.queries = f_.batch->body[0].as<For>()) || !from_zero(*f_.queries, 0))
      return fail("no query-block loop inside the batch loop");
    f_.block = *constant_value(f_.queries->step);
    if (!query_block(f_.queries->body)) return std::nullopt;
    return f_;
  }

 private:
  std::nullopt_t fail(const std::string& w) {
    if (why_ && why_->empty()) *why_ = w;
    return std::nullopt;
  }
  bool no(const std::string& w) {
    fail(w);
    return false;
  }

  // for v in 0..constant step constant (step 1 where `step_one`).
  static bool from_zero(const For& f, bool step_one) {
    std::optional<int64_t> lo = constant_value(f.lo), hi = constant_value(f.hi), step = constant_value(f.step);
    return lo && *lo == 0 && hi && step && *step > 0 && (!step_one || *step == 1);
  }

  static bool is_var(const Expr& e, const std::string& name) {
    const Var* v = e.as<Var>();
    return v && v->name == name;
  }
  static bool is_float(const Expr& e, double value) {
    const FloatImm* f = e.as<FloatImm>();
    return f && f->value == value;
  }
  // The value of a let by name, else the expression itself.
  const Expr& resolved(const Expr& e) const {
    if (const Var* v = e.as<Var>())
      if (auto it = lets_.find(v->name); it != lets_.end()) return it->second;
    return e;
  }
  static const Expr& uncast(const Expr& e) {
    const Cast* c = e.as<Cast>();
    return c ? c->value : e;
  }

  // X[h, v0:v0 + n] of an input of rank 3: its name; n where `n` is given.
  std::optional<std::string> block_read(const Expr& e, const std::string& start, int64_t* n) {
    const Cast* c = e.as<Cast>();
    if (!c || c->type.dtype != DType::F32) return std::nullopt;
    const Access* a = c->value.as<Access>();
    const Param* p = a ? k_.find_param(a->buffer) : nullptr;
    if (!p || p->role != ParamRole::Input || p->type.rank() != 3 || a->axes.size() != 2) return std::nullopt;
    if (a->axes[0].is_slice || !is_var(a->axes[0].index, f_.batch->var)) return std::nullopt;
    const AxisSel& s = a->axes[1];
    if (!s.is_slice || !is_var(s.lo, start) || !s.hi.defined()) return std::nullopt;
    std::optional<int64_t> len = constant_value(simplify(s.hi - s.lo));
    if (!len || *len <= 0) return std::nullopt;
    if (n) *n = *len;
    return a->buffer;
  }

  bool query_block(const Block& body) {
    // var m = fill(-inf), var l = fill(0), var o = fill(0), lets, then the key loop and the store.
    size_t i = 0;
    for (; i < body.size() && !body[i].as<For>(); ++i) {
      if (const Decl* d = body[i].as<Decl>()) {
        const Fill* fill = d->init.as<Fill>();
        if (!fill) return no("a local that is not a filled tile before the key loop");
        // l is the zero-filled tile of one column, o the other.
        bool one_column = d->type.rank() == 2 && constant_value(d->type.shape[1]) == 1;
        if (is_float(fill->value, -INFINITY) && m_.empty()) m_ = d->name;
        else if (is_float(fill->value, 0.0) && one_column && l_.empty()) l_ = d->name;
        else if (is_float(fill->value, 0.0) && !one_column && o_.empty()) o_ = d->name;
        else return no("a local before the key loop that is not the running max, sum or output");
      } else if (const Let* l = body[i].as<Let>()) {
        lets_[l->name] = l->value;
      } else {
        return no("a statement before the key loop that is not a local");
      }
    }
    if (m_.empty() || l_.empty() || o_.empty()) return no("no running max, sum and output tiles");
    if (i + 2 != body.size()) return no("other than a key loop and a store after the locals");
    f_.keys = body[i].as<For>();
    f_.store = body[i + 1].as<Store>();
    if (!f_.keys || !f_.store) return no("other than a key loop and a store after the locals");
    if (!key_loop()) return false;
    return output_store();
  }

  bool key_loop() {
    const For& kl = *f_.keys;
    std::optional<int64_t> lo = constant_value(kl.lo), step = constant_value(kl.step);
    if (!lo || *lo != 0 || !step || *step <= 0) return no("a key loop not from 0 by a constant step");
    f_.key_block = *step;
    const Block& b = kl.body;
    size_t i = 0;
    // S = Qb @ transpose(f32(K[h, k0:k0 + Bk])) / c
    std::string s_name;
    Expr s_value;
    if (i < b.size()) {
      if (const Decl* d = b[i].as<Decl>()) s_name = d->name, s_value = d->init;
      else if (const Let* l = b[i].as<Let>()) s_name = l->name, s_value = l->value;
    }
    if (s_name.empty()) return no("no scores tile first in the key loop");
    ++i;
    if (!scores(s_value)) return false;
    // The causal mask, where there is one.
    if (i < b.size() && (b[i].as<If>() || b[i].as<For>())) {
      if (!causal_mask(b[i], s_name)) return false;
      f_.causal = true;
      ++i;
    }
    // Then exactly the online softmax's five statements.
    if (i + 5 != b.size()) return no("other than the online softmax after the scores");
    const Let* mnew = b[i].as<Let>();
    const Let* p = b[i + 1].as<Let>();
    const Assign* l = b[i + 2].as<Assign>();
    const Assign* o = b[i + 3].as<Assign>();
    const Assign* m = b[i + 4].as<Assign>();
    if (!mnew || !p || !l || !o || !m) return no("other than the online softmax after the scores");
    // m_new = max(m, row_max(S))
    auto row_fold = [&](const Expr& e, ReduceOp op, const std::string& of) {
      const Reduce* r = e.as<Reduce>();
      return r && r->op == op && r->axis == 1 && r->keepdims && is_var(r->value, of);
    };
    // max(m, x) is a binary max or the math function.
    Expr mx_a, mx_b;
    if (const Binary* mx = mnew->value.as<Binary>(); mx && mx->op == BinaryOp::Max) mx_a = mx->a, mx_b = mx->b;
    if (const Math* mx = mnew->value.as<Math>(); mx && mx->fn == MathFn::Max && mx->args.size() == 2) mx_a = mx->args[0], mx_b = mx->args[1];
    if (!mx_a.defined() || !is_var(mx_a, m_) || !row_fold(mx_b, ReduceOp::Max, s_name))
      return no("a running max that is not max(m, row_max(S))");
    // p = exp(S - m_new)
    auto exp_of_difference = [&](const Expr& e, const std::string& a, const std::string& bname) {
      const Math* x = e.as<Math>();
      if (!x || x->fn != MathFn::Exp || x->args.size() != 1) return false;
      const Binary* d = x->args[0].as<Binary>();
      return d && d->op == BinaryOp::Sub && is_var(d->a, a) && is_var(d->b, bname);
    };
    if (!exp_of_difference(p->value, s_name, mnew->name)) return no("weights that are not exp(S - m_new)");
    // l = exp(m - m_new) * l + row_sum(p)
    auto rescaled = [&](const Expr& e, const std::string& acc) {
      const Binary* mul = e.as<Binary>();
      return mul && mul->op == BinaryOp::Mul && exp_of_difference(mul->a, m_, mnew->name) && is_var(mul->b, acc);
    };
    const Binary* ladd = l->value.as<Binary>();
    if (l->name != l_ || !ladd || ladd->op != BinaryOp::Add || !rescaled(ladd->a, l_) || !row_fold(ladd->b, ReduceOp::Sum, p->name))
      return no("a running sum that is not exp(m - m_new) * l + row_sum(p)");
    // o = exp(m - m_new) * o + p @ f32(V[h, k0:k0 + Bk])
    const Binary* oadd = o->value.as<Binary>();
    const MatMul* pv = oadd ? oadd->b.as<MatMul>() : nullptr;
    if (o->name != o_ || !oadd || oadd->op != BinaryOp::Add || !rescaled(oadd->a, o_) || !pv || !is_var(pv->a, p->name))
      return no("a running output that is not exp(m - m_new) * o + p @ V");
    int64_t n = 0;
    std::optional<std::string> v = block_read(pv->b, kl.var, &n);
    if (!v || n != f_.key_block) return no("values not read as f32(V[h, k0:k0 + step])");
    f_.v = *v;
    if (m->name != m_ || !is_var(m->value, mnew->name)) return no("a running max not replaced by m_new");
    return keys_bound();
  }

  // Qb @ transpose(f32(K[h, k0:k0 + Bk])) / c (or * c).
  bool scores(const Expr& e) {
    const Binary* scaled = e.as<Binary>();
    const FloatImm* c = scaled ? scaled->b.as<FloatImm>() : nullptr;
    if (!scaled || !c || (scaled->op != BinaryOp::Div && scaled->op != BinaryOp::Mul) || c->value == 0 || !std::isfinite(c->value))
      return no("scores not scaled by a constant");
    f_.scale = scaled->op == BinaryOp::Div ? 1.0 / c->value : c->value;
    // The row max of the scaled scores is the scaled row max only for a positive scale.
    if (f_.scale <= 0) return no("scores scaled by a constant that is not positive");
    const MatMul* qk = scaled->a.as<MatMul>();
    if (!qk) return no("scores that are not a tile product");
    int64_t n = 0;
    std::optional<std::string> q = block_read(resolved(qk->a), f_.queries->var, &n);
    if (!q || n != f_.block) return no("queries not read as f32(Q[h, q0:q0 + step])");
    const Transpose* t = qk->b.as<Transpose>();
    std::optional<std::string> k = t ? block_read(t->value, f_.keys->var, &n) : std::nullopt;
    if (!k || n != f_.key_block) return no("keys not read as transpose(f32(K[h, k0:k0 + step]))");
    f_.q = *q;
    f_.k = *k;
    return true;
  }

  // [if k0 + Bk > q0:] for r in 0..rows, c in 0..cols: if k0 + c > q0 + r: S[r, c] = -inf
  bool causal_mask(const Stmt& stmt, const std::string& s_name) {
    const For* r = stmt.as<For>();
    if (const If* outer = stmt.as<If>()) {
      // The guard may only skip blocks with nothing to mask: k0 + Bk > q0 exactly.
      Expr first_past = index_var(f_.keys->var) + i64(f_.key_block) - index_var(f_.queries->var);
      if (!outer->else_body.empty() || outer->then_body.size() != 1 || !greater(outer->cond, first_past))
        return no("a causal mask under a condition other than k0 + step > q0");
      r = outer->then_body[0].as<For>();
    }
    if (!r) return no("a statement between the scores and the softmax that is not a causal mask");
    const For* c = r->body.size() == 1 ? r->body[0].as<For>() : nullptr;
    auto zero_one = [](const For& f) {
      std::optional<int64_t> lo = constant_value(f.lo), st = constant_value(f.step);
      return lo && *lo == 0 && st && *st == 1;
    };
    if (!c || !zero_one(*r) || !zero_one(*c)) return no("a causal mask not over the scores' rows and columns from 0");
    // The mask loops cover the scores tile: its rows and columns at every block.
    Expr rows = min(index_var(f_.queries->var) + i64(f_.block), queries_extent()) - index_var(f_.queries->var);
    Expr cols = min(index_var(f_.keys->var) + i64(f_.key_block), keys_extent()) - index_var(f_.keys->var);
    std::vector<const For*> around = loops();
    around.push_back(f_.keys);
    if (!equal_everywhere(r->hi, rows, around, {}) || !equal_everywhere(c->hi, cols, around, {}))
      return no("a causal mask over other than the whole scores tile");
    const If* inner = c->body.size() == 1 ? c->body[0].as<If>() : nullptr;
    const Store* st = inner && inner->else_body.empty() && inner->then_body.size() == 1 ? inner->then_body[0].as<Store>() : nullptr;
    if (!st || st->buffer != s_name || st->axes.size() != 2 || st->axes[0].is_slice || st->axes[1].is_slice ||
        !is_var(st->axes[0].index, r->var) || !is_var(st->axes[1].index, c->var) || !is_float(st->value, -INFINITY))
      return no("a causal mask that does not set S[r, c] to -inf");
    // key k0 + c past query q0 + r: (k0 + c) - (q0 + r) > 0.
    Expr key = index_var(f_.keys->var) + index_var(c->var), query = index_var(f_.queries->var) + index_var(r->var);
    if (!greater(inner->cond, key - query)) return no("a mask other than the causal one (key past query)");
    return true;
  }

  // Whether `cond` is a > b (or b < a) with a - b equal to `difference`.
  static bool greater(const Expr& cond, const Expr& difference) {
    const Binary* x = cond.as<Binary>();
    if (!x || (x->op != BinaryOp::Gt && x->op != BinaryOp::Lt)) return false;
    Expr d = x->op == BinaryOp::Gt ? x->a - x->b : x->b - x->a;
    return is_zero(simplify(d - difference));
  }

  static bool is_zero(const Expr& e) {
    std::optional<int64_t> v = constant_value(e);
    return v && *v == 0;
  }

  std::vector<const For*> loops() const { return {f_.batch, f_.queries}; }
  Expr queries_extent() const { return f_.queries->hi; }
  Expr keys_extent() const {
    const Param* p = k_.find_param(f_.k);
    return p->type.shape[1];
  }

  // Every key without a mask; up to the block's last query under one.
  bool keys_bound() {
    const Param* k = k_.find_param(f_.k);
    if (!f_.causal) {
      if (!equal_everywhere(f_.keys->hi, k->type.shape[1], loops(), {})) return no("a key loop over other than every key");
      return true;
    }
    Expr diagonal = min(index_var(f_.queries->var) + i64(f_.block), k->type.shape[1]);
    if (!equal_everywhere(f_.keys->hi, diagonal, loops(), {}) && !equal_everywhere(f_.keys->hi, k->type.shape[1], loops(), {}))
      return no("a causal key loop that stops before the query block's last row");
    return true;
  }

  // out[h, q0:q0 + B] = o / l (converted to the output's type).
  bool output_store() {
    const Store& s = *f_.store;
    const Param& out = k_.output();
    if (s.buffer != out.name || out.type.rank() != 3 || s.axes.size() != 2) return no("a store other than out[h, q0:q0 + step]");
    if (s.axes[0].is_slice || !is_var(s.axes[0].index, f_.batch->var) || !s.axes[1].is_slice || !is_var(s.axes[1].lo, f_.queries->var) ||
        !s.axes[1].hi.defined() || constant_value(simplify(s.axes[1].hi - s.axes[1].lo)) != f_.block)
      return no("a store other than out[h, q0:q0 + step]");
    const Binary* div = uncast(s.value).as<Binary>();
    if (!div || div->op != BinaryOp::Div || !is_var(div->a, o_) || !is_var(div->b, l_)) return no("an output other than o / l");
    return true;
  }

  const Kernel& k_;
  std::string* why_ = nullptr;
  AttentionForm f_;
  std::string m_, l_, o_;
  std::map<std::string, Expr> lets_;
};

// An input [batches, rows, head_dim] as a factor view: K-major (the head
// dimension fast) for queries and keys, MN-major for values.
ProductOperand attention_operand(const Param& p, bool k_major) {
  ProductOperand o;
  o.buffer = p.name;
  o.dtype = p.type.dtype;
  o.k_major = k_major;
  o.rank = 3;
  int64_t batches = *constant_value(p.type.shape[0]), rows = *constant_value(p.type.shape[1]), dim = *constant_value(p.type.shape[2]);
  o.dims = {dim, rows, batches};
  o.strides = {dim, rows * dim};
  return o;
}

}  // namespace

std::optional<Kernel> schedule_gpu_attention(const Kernel& k, const GpuTarget& target, std::string* why_not) {
  auto fail = [&](std::string w) -> std::optional<Kernel> {
    if (why_not) *why_not = std::move(w);
    return std::nullopt;
  };
  if (!target.warpgroup_mma || !target.tensor_copies) return fail("no warpgroup matrix units or tensor copies on " + target.arch);
  if (target.max_threads_per_block < kWarpgroupAttentionThreads) return fail("blocks of fewer than 384 threads");
  if (!k.dims.empty()) return fail("sizes not known");
  std::string why;
  std::optional<AttentionForm> f = Matcher(k).run(&why);
  if (!f) return fail("not flash attention: " + why);
  const Param *q = k.find_param(f->q), *kk = k.find_param(f->k), *v = k.find_param(f->v);
  DType t = q->type.dtype;
  if ((t != DType::BF16 && t != DType::F16) || kk->type.dtype != t || v->type.dtype != t)
    return fail("queries, keys and values not all bf16 or all f16");
  if (!k.hints.bf16) return fail("P V rounds the weights to " + std::string(dtype_name(t)) + ": the block needs @precision(bf16)");
  for (const Param* p : {q, kk, v, &k.output()})
    for (const Expr& x : p->type.shape)
      if (!constant_value(x)) return fail("a shape not known");
  auto dim = [](const Param* p, int a) { return *constant_value(p->type.shape[static_cast<size_t>(a)]); };
  int64_t batches = dim(q, 0), queries = dim(q, 1), head_dim = dim(q, 2), keys = dim(kk, 1);
  if (dim(kk, 0) != batches || dim(v, 0) != batches || dim(kk, 2) != head_dim || dim(v, 2) != head_dim || dim(v, 1) != keys)
    return fail("queries, keys and values of shapes that do not agree");
  if (dim(&k.output(), 0) != batches || dim(&k.output(), 1) != queries || dim(&k.output(), 2) != head_dim)
    return fail("an output of another shape than the queries");
  if (head_dim != 64 && head_dim != 128) return fail("a head dimension other than 64 or 128");
  if (*constant_value(f->batch->hi) != batches || *constant_value(f->queries->hi) != queries)
    return fail("loops over other than every head and query");
  if (f->causal && keys != queries) return fail("a causal mask over queries and keys of different lengths");
  if (keys < 1 || queries < 1) return fail("no queries or keys");

  FreshNames fresh(k);
  Span span = f->store->span;
  WarpgroupAttention a(span);
  a.q = attention_operand(*q, true);
  a.k = attention_operand(*kk, true);
  a.v = attention_operand(*v, false);
  a.queries = queries;
  a.keys = keys;
  a.head_dim = head_dim;
  a.batches = batches;
  a.scale = f->scale;
  a.causal = f->causal;
  a.tile_rows = kTileRows;
  a.tile_keys = kTileKeys;
  a.stages = kStages;
  a.consumers = kConsumers;
  if (a.stage_bytes() > target.shared_memory_max) return fail("the tiles need more shared memory than a block may have");
  int64_t blocks = std::max<int64_t>(1, std::min<int64_t>(a.tiles(), target.multiprocessors));
  std::string blk = fresh("blk%wa");
  a.stage = fresh("stage%wa");
  a.batch_var = fresh("b%wa");
  a.row = fresh("row%wa");
  a.col = fresh("col%wa");
  a.value = fresh("value%wa");
  a.first_tile = index_var(blk);
  a.tile_stride = i64(blocks);
  // out[b, row, col] = value, in the output's type.
  Expr value = Var::make(a.value, Type::scalar(DType::F32));
  DType out = k.output().type.dtype;
  if (out != DType::F32) value = Cast::make(out, value);
  a.epilogue = {make_if(less_than(index_var(a.row), i64(queries)),
                        {make_store(k.output().name,
                                    {AxisSel::at(index_var(a.batch_var)), AxisSel::at(index_var(a.row)), AxisSel::at(index_var(a.col))},
                                    value, span)})};
  Block body = {make_allocate(a.stage, Type::tensor(DType::U8, {i64(a.stage_bytes())}), MemorySpace::Shared, span),
                make_warpgroup_attention(a)};
  Kernel result = k;
  result.body = {make_for(blk, i64(0), i64(blocks), i64(1), std::move(body), LoopKind::GpuBlock, 0, span)};
  verify_or_throw(result, "schedule_gpu_attention");
  return result;
}

}  // namespace zyntax::cir
