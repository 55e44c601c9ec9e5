#include "cir/passes/schedule_matmul.hpp"

#include <algorithm>
#include <cmath>

#include "cir/passes/simplify.hpp"
#include "cir/reads.hpp"
#include "cir/substitute.hpp"
#include "cir/verifier.hpp"

namespace zyntax::cir {

namespace {

Expr var(const std::string& name) { return Var::make(name, Type::scalar(DType::I64)); }
Expr cmp(BinaryOp op, Expr a, Expr b) { return Binary::make(op, std::move(a), std::move(b)); }
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

std::optional<int64_t> constant(const Expr& e) {
  if (auto c = e.as<IntImm>()) return c->value;
  return std::nullopt;
}

// The kernel's matrix product, taken apart.
struct Product {
  std::vector<const For*> loops;  // batch loops, then i, then j
  const Decl* sum = nullptr;
  int64_t k_lo = 0, k_extent = 0;
  std::string k;
  Expr x, y;                      // the factors: x reads i, y reads j
  const Store* store = nullptr;
  // x as a row-major f32 input that can be read in place (k steps are
  // adjacent elements): its flat index, and how far one step of i moves it
  // (set by find_in_place_a).
  std::optional<Expr> a_flat;
  int64_t a_row_stride = 0;

  const For& i() const { return *loops[loops.size() - 2]; }
  const For& j() const { return *loops.back(); }
  int64_t extent(const For& f) const { return *constant(f.hi); }
};

std::optional<Product> match(const Kernel& kernel) {
  Product m;
  const Block* body = &kernel.body;
  while (body->size() == 1) {
    auto f = (*body)[0].as<For>();
    if (!f || f->loop_kind != LoopKind::Parallel || constant(f->lo) != 0 || constant(f->step) != 1 || !constant(f->hi) ||
        *constant(f->hi) <= 0)
      return std::nullopt;
    m.loops.push_back(f);
    body = &f->body;
  }
  if (m.loops.size() < 2 || body->size() != 3) return std::nullopt;
  m.sum = (*body)[0].as<Decl>();
  auto kloop = (*body)[1].as<For>();
  m.store = (*body)[2].as<Store>();
  if (!m.sum || !kloop || !m.store) return std::nullopt;

  // var s: f32 = 0.0
  auto zero = m.sum->init.defined() ? m.sum->init.as<FloatImm>() : nullptr;
  if (!m.sum->type.is_scalar() || m.sum->type.dtype != DType::F32 || !zero || zero->value != 0.0 || std::signbit(zero->value))
    return std::nullopt;

  // for k in lo..hi: s = s + X * Y
  auto lo = constant(kloop->lo), hi = constant(kloop->hi);
  if (!lo || !hi || *hi <= *lo || constant(kloop->step) != 1 || kloop->body.size() != 1) return std::nullopt;
  m.k = kloop->var;
  m.k_lo = *lo;
  m.k_extent = *hi - *lo;
  auto assign = kloop->body[0].as<Assign>();
  if (!assign || assign->name != m.sum->name) return std::nullopt;
  auto add = assign->value.as<Binary>();
  if (!add || add->op != BinaryOp::Add) return std::nullopt;
  auto self = add->a.as<Var>();
  auto mul = add->b.as<Binary>();
  if (!self || self->name != m.sum->name || !mul || mul->op != BinaryOp::Mul) return std::nullopt;
  const std::string& i = m.i().var;
  const std::string& j = m.j().var;
  std::set<std::string> forbidden = {m.sum->name, m.store->buffer};
  if (reads_any(mul->a, forbidden) || reads_any(mul->b, forbidden)) return std::nullopt;
  if (!reads_any(mul->a, {j}) && !reads_any(mul->b, {i})) {
    m.x = mul->a;
    m.y = mul->b;
  } else if (!reads_any(mul->b, {j}) && !reads_any(mul->a, {i})) {
    m.x = mul->b;
    m.y = mul->a;
  } else {
    return std::nullopt;
  }

  // out[b.., i, j] = f(s), the output laid out as the loops.
  const Param& out = kernel.output();
  if (m.store->buffer != out.name || out.type.dtype != DType::F32 || m.store->axes.size() != m.loops.size() ||
      out.type.rank() != m.loops.size())
    return std::nullopt;
  for (size_t d = 0; d < m.loops.size(); ++d) {
    const AxisSel& a = m.store->axes[d];
    auto v = a.is_slice ? nullptr : a.index.as<Var>();
    if (!v || v->name != m.loops[d]->var || constant(out.type.shape[d]) != m.extent(*m.loops[d])) return std::nullopt;
  }
  if (reads_any(m.store->value, {out.name})) return std::nullopt;
  return m;
}

// x = A[.., i, k]: an f32 input whose last axis is k, another is i, and the
// rest read neither. Its rows can then be read in place by the micro-kernel,
// as the BLAS kernels read an operand they do not pack.
void find_in_place_a(const Kernel& kernel, Product& m) {
  auto access = m.x.as<Access>();
  if (!access) return;
  const Param* param = nullptr;
  for (const Param& p : kernel.params)
    if (p.name == access->buffer && p.role == ParamRole::Input) param = &p;
  if (!param || param->type.dtype != DType::F32 || access->axes.size() != param->type.rank()) return;
  std::vector<int64_t> strides(access->axes.size());
  int64_t stride = 1;
  for (size_t d = access->axes.size(); d-- > 0;) {
    auto extent = constant(param->type.shape[d]);
    if (!extent) return;
    strides[d] = stride;
    stride *= *extent;
  }
  int64_t rs = 0, ks = 0;
  Expr flat = i64(0);
  for (size_t d = 0; d < access->axes.size(); ++d) {
    const AxisSel& a = access->axes[d];
    if (a.is_slice) return;
    auto v = a.index.as<Var>();
    if (v && v->name == m.i().var && rs == 0) {
      rs = strides[d];
    } else if (v && v->name == m.k && ks == 0) {
      ks = strides[d];
    } else if (reads_any(a.index, {m.i().var, m.k})) {
      return;
    }
    flat = flat + a.index * i64(strides[d]);
  }
  if (rs == 0 || ks != 1) return;
  m.a_flat = flat;
  m.a_row_stride = rs;
}

class Builder {
 public:
  Builder(const Product& m, const MatMulSchedule& s) : m_(m), s_(s) {}

  Block build(const std::string& out) {
    const int64_t M = m_.extent(m_.i()), N = m_.extent(m_.j()), K = m_.k_extent;
    const int64_t MR = s_.mr, NR = s_.nr, KC = std::min(s_.kc, K);
    const int64_t PM = ceil_div(M, MR), PN = ceil_div(N, NR);
    const int64_t MC = std::min(std::max<int64_t>(s_.mc / MR, 1), PM) * MR;
    const int64_t NC = std::min(std::max<int64_t>(s_.nc / NR, 1), PN) * NR;

    // Tasks: every batch element, its rows split into groups and, when that
    // is not enough work for the threads, its columns too.
    int64_t batch = 1;
    for (size_t d = 0; d + 2 < m_.loops.size(); ++d) batch *= m_.extent(*m_.loops[d]);
    int64_t T = std::max(s_.threads, 1);
    int64_t gm = 1, gn = 1;
    // Too few products for the threads: the tasks split each product. With A
    // read in place (whole row blocks only) they split the columns, so each
    // packs only its own part of B and nothing of A; otherwise they split the
    // rows, and each packs all of B and its rows of A. Rows of A more than
    // 4 KiB apart fall into the same few L1 sets, so such an A is packed.
    bool split = batch % T != 0 && batch < 4 * T;
    in_place_a_ = split && m_.a_flat && M % MR == 0 && m_.a_row_stride * 4 <= 4096 && PN >= ceil_div(T, batch);
    if (in_place_a_) {
      gn = ceil_div(T, batch);
    } else if (split) {
      gm = std::min(PM, ceil_div(T, batch));
      if (batch * gm < T) gn = std::min(PN, ceil_div(T, batch * gm));
    }
    Expr t = var("t%mm");
    Block task;
    task.push_back(make_let("bt%mm", t / i64(gm * gn)));
    task.push_back(make_let("gm%mm", (t / i64(gn)) - (t / i64(gm * gn)) * i64(gm)));
    task.push_back(make_let("gn%mm", t - (t / i64(gn)) * i64(gn)));
    int64_t stride = batch;
    for (size_t d = 0; d + 2 < m_.loops.size(); ++d) {
      int64_t ext = m_.extent(*m_.loops[d]);
      stride /= ext;
      Expr q = var("bt%mm") / i64(stride);
      task.push_back(make_let(m_.loops[d]->var, q - (q / i64(ext)) * i64(ext)));
    }
    Expr g = var("gm%mm"), h = var("gn%mm");
    task.push_back(make_let("i0%mm", (g * i64(PM) / i64(gm)) * i64(MR)));
    task.push_back(make_let("i1%mm", min(((g + i64(1)) * i64(PM) / i64(gm)) * i64(MR), i64(M))));
    task.push_back(make_let("j0%mm", (h * i64(PN) / i64(gn)) * i64(NR)));
    task.push_back(make_let("j1%mm", min(((h + i64(1)) * i64(PN) / i64(gn)) * i64(NR), i64(N))));
    if (!in_place_a_) task.push_back(make_allocate("ap%mm", Type::tensor(DType::F32, {i64(MC * KC)}), MemorySpace::Local));
    task.push_back(make_allocate("bp%mm", Type::tensor(DType::F32, {i64(NC * KC)}), MemorySpace::Local));

    // One NC-wide column block of the task.
    Block column;
    column.push_back(make_let("jn%mm", min(i64(NC), var("j1%mm") - var("jc%mm"))));
    Block depth;
    depth.push_back(make_let("kcv%mm", min(i64(KC), i64(K) - var("pc%mm"))));
    pack(depth, "bp%mm", m_.y, m_.j().var, NR, KC, "jc%mm", "jn%mm", "jb%mm");
    Block rows;
    rows.push_back(make_let("mn%mm", min(i64(MC), var("i1%mm") - var("ic%mm"))));
    if (!in_place_a_) pack(rows, "ap%mm", m_.x, m_.i().var, MR, KC, "ic%mm", "mn%mm", "ib%mm");
    Block block_row;
    std::vector<Expr> at;
    for (size_t d = 0; d + 2 < m_.loops.size(); ++d) at.push_back(var(m_.loops[d]->var));
    Expr row0 = var("ic%mm") + var("ip%mm") * i64(MR);
    at.push_back(row0);
    at.push_back(var("jc%mm") + var("jp%mm") * i64(NR));
    // A in place: rows a_row_stride apart, k steps adjacent; packed: the reverse, MR apart.
    std::string a_name = in_place_a_ ? m_.x.as<Access>()->buffer : std::string("ap%mm");
    Expr a_offset = in_place_a_ ? substitute(*m_.a_flat, {{m_.i().var, row0}, {m_.k, k_at_start()}}) : var("ip%mm") * i64(KC * MR);
    Expr a_rs = in_place_a_ ? i64(m_.a_row_stride) : i64(1), a_ks = in_place_a_ ? i64(1) : i64(MR);
    block_row.push_back(make_matmul_block(
        static_cast<int>(MR), static_cast<int>(NR), a_name, a_offset, a_rs, a_ks, "bp%mm", var("jp%mm") * i64(KC * NR), i64(NR),
        var("kcv%mm"), out, at, i64(N), min(i64(MR), var("mn%mm") - var("ip%mm") * i64(MR)),
        min(i64(NR), var("jn%mm") - var("jp%mm") * i64(NR)), cmp(BinaryOp::Gt, var("pc%mm"), i64(0)), m_.store->span));
    Block panels = {make_for("ip%mm", i64(0), (var("mn%mm") + i64(MR - 1)) / i64(MR), i64(1), block_row)};
    rows.push_back(make_for("jp%mm", i64(0), (var("jn%mm") + i64(NR - 1)) / i64(NR), i64(1), panels));
    depth.push_back(make_for("ic%mm", var("i0%mm"), var("i1%mm"), i64(MC), rows));
    column.push_back(make_for("pc%mm", i64(0), i64(K), i64(KC), depth));
    epilogue(column, out);
    task.push_back(make_for("jc%mm", var("j0%mm"), var("j1%mm"), i64(NC), column));
    return {make_for("t%mm", i64(0), i64(batch * gm * gn), i64(1), task, LoopKind::Parallel, 0, m_.loops[0]->span)};
  }

 private:
  // Loop variables are named once each: the two ways of packing a panel
  // (whole, or at the edge) each get their own.
  std::string fresh(const std::string& base) { return base + "%mm" + std::to_string(counter_++); }

  // The reduction index of packed step p, and of the depth block's first step.
  Expr k_at(const std::string& p) const { return i64(m_.k_lo) + var("pc%mm") + var(p); }
  Expr k_at_start() const { return i64(m_.k_lo) + var("pc%mm"); }

  // dst[panel, p, e] = v[k, along := first + e] for every W-wide panel of the
  // block [start, start + count), zero past its end. The element e is
  // innermost: LLVM unrolls it and vectorises over p, copying rows of B and
  // interleaving W rows of A into whole-vector stores (no scatters).
  void pack(Block& out, const std::string& dst, const Expr& v, const std::string& along, int64_t W, int64_t KC,
            const std::string& start, const std::string& count, const std::string& first) {
    std::string panel = fresh("panel");
    Expr end = var(start) + var(count);
    auto copy = [&](bool edge) {
      std::string p = fresh("p"), e = fresh("e");
      Expr at_e = var(first) + var(e);
      Expr value = substitute(v, {{m_.k, k_at(p)}, {along, at_e}});
      std::vector<AxisSel> at = {AxisSel::at(var(panel) * i64(KC * W) + var(p) * i64(W) + var(e))};
      Stmt store = make_store(dst, at, value);
      if (edge) store = make_if(cmp(BinaryOp::Lt, at_e, end), {store}, {make_store(dst, at, FloatImm::make(0.0))});
      return Block{make_for(p, i64(0), var("kcv%mm"), i64(1), {make_for(e, i64(0), i64(W), i64(1), {store})})};
    };
    Block body = {make_let(first, var(start) + var(panel) * i64(W)),
                  make_if(cmp(BinaryOp::Le, var(first) + i64(W), end), copy(false), copy(true))};
    out.push_back(make_for(panel, i64(0), (var(count) + i64(W - 1)) / i64(W), i64(1), body));
  }

  // out[b.., i, j] = f(out[b.., i, j]) over the column block, unless f is the sum itself.
  void epilogue(Block& out, const std::string& buffer) {
    const Expr& f = m_.store->value;
    if (auto v = f.as<Var>(); v && v->name == m_.sum->name) return;
    std::vector<AxisSel> axes = m_.store->axes;  // b.., i, j by their own names
    Block body = {make_let(m_.sum->name, make_access(buffer, output_type(buffer), axes)), make_store(buffer, axes, f, m_.store->span)};
    Block over_j = {make_for(m_.j().var, var("jc%mm"), var("jc%mm") + var("jn%mm"), i64(1), body)};
    out.push_back(make_for(m_.i().var, var("i0%mm"), var("i1%mm"), i64(1), over_j));
  }

  Type output_type(const std::string&) const {
    std::vector<Expr> shape;
    for (const For* f : m_.loops) shape.push_back(f->hi);
    return Type::tensor(DType::F32, shape);
  }

  const Product& m_;
  const MatMulSchedule& s_;
  int counter_ = 0;
  bool in_place_a_ = false;
};

}  // namespace

MatMulSchedule cpu_matmul_schedule(int vector_bits, int threads) {
  MatMulSchedule s;
  s.threads = threads;
  if (vector_bits >= 512) {
    s.mr = 8, s.nr = 32;   // 16 zmm accumulators, 2 for B (measured ahead of 12x32, 10x32, 4x64)
    s.kc = 512;
  } else if (vector_bits >= 256) {
    s.mr = 6, s.nr = 16;   // 12 ymm accumulators, 2 for B, 1 broadcast
    s.mc = 120;
  } else {
    s.mr = 6, s.nr = 8;    // 12 of 16 xmm (NEON has 32; this leaves room)
    s.mc = 120;
  }
  return s;
}

std::optional<Kernel> schedule_matmul(const Kernel& k, const MatMulSchedule& s) {
  if (!k.dims.empty()) return std::nullopt;
  std::optional<Product> m = match(k);
  if (!m) return std::nullopt;
  find_in_place_a(k, *m);
  int64_t M = m->extent(m->i()), N = m->extent(m->j());
  if (M < 4 || N < 4 || static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(m->k_extent) < s.min_flops)
    return std::nullopt;
  Kernel out = k;
  out.body = Builder(*m, s).build(k.output().name);
  out = simplify(out);
  verify_or_throw(out, "schedule_matmul");
  return out;
}

}  // namespace zyntax::cir
