#include "cir/passes/schedule_matmul.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>

#include "cir/affine.hpp"
#include "cir/passes/guard_range.hpp"
#include "cir/passes/product_form.hpp"
#include "cir/passes/simplify.hpp"
#include "cir/passes/sliding_window.hpp"
#include "cir/reads.hpp"
#include "cir/substitute.hpp"
#include "cir/verifier.hpp"

namespace zyntax::cir {

namespace {

Expr var(const std::string& name) { return Var::make(name, Type::scalar(DType::I64)); }
Expr cmp(BinaryOp op, Expr a, Expr b) { return Binary::make(op, std::move(a), std::move(b)); }
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Where the micro-kernel can read a factor in place: an f32 input indexed
// by the factor's two loop groups alone, whose `inner` group steps through
// adjacent elements in order and whose `outer` group steps by one common
// stride. A = X[.., i.., k..] has the reduction inner and the rows outer;
// B = Y[.., k.., j..] the columns inner and the reduction outer (the BLAS
// kernels read an operand they do not pack the same way).
struct InPlace {
  std::string buffer;
  Expr base;               // the flat index at the groups' first elements
  int64_t outer_stride = 0;
};

std::optional<InPlace> find_in_place(const Kernel& kernel, const Expr& factor, bool guarded, const LoopGroup& inner, const LoopGroup& outer) {
  if (guarded) return std::nullopt;
  auto access = factor.as<Access>();
  if (!access) return std::nullopt;
  const Param* param = kernel.find_param(access->buffer);
  if (!param || param->role != ParamRole::Input || param->type.dtype != DType::F32 || access->axes.size() != param->type.rank()) return std::nullopt;
  std::vector<int64_t> strides(access->axes.size());
  int64_t stride = 1;
  for (size_t d = access->axes.size(); d-- > 0;) {
    auto extent = constant_value(param->type.shape[d]);
    if (!extent) return std::nullopt;
    strides[d] = stride;
    stride *= *extent;
  }
  std::set<std::string> grouped = outer.names();
  for (const std::string& k : inner.names()) grouped.insert(k);
  std::map<std::string, int64_t> coeff;
  Expr flat = i64(0);
  for (size_t d = 0; d < access->axes.size(); ++d) {
    const AxisSel& a = access->axes[d];
    if (a.is_slice) return std::nullopt;
    auto v = a.index.as<Var>();
    if (v && grouped.count(v->name)) {
      if (coeff.count(v->name)) return std::nullopt;
      coeff[v->name] = strides[d];
    } else if (reads_any(a.index, grouped)) {
      return std::nullopt;
    }
    flat = flat + a.index * i64(strides[d]);
  }
  auto c = [&](const std::string& v) { return coeff.count(v) ? coeff.at(v) : 0; };
  for (size_t t = 0; t < inner.loops.size(); ++t)
    if (c(inner.loops[t].var) != inner.weight(t)) return std::nullopt;
  int64_t os = c(outer.loops.back().var);
  if (os == 0) return std::nullopt;
  for (size_t t = 0; t < outer.loops.size(); ++t)
    if (c(outer.loops[t].var) != os * outer.weight(t)) return std::nullopt;
  Substitution origin;
  for (const LoopGroup::Loop& l : outer.loops) origin[l.var] = i64(l.lo);
  for (const LoopGroup::Loop& l : inner.loops) origin[l.var] = i64(l.lo);
  return InPlace{access->buffer, simplify(substitute(flat, origin)), os};
}

// The blocking: block sizes, how tasks split each product, and which
// factors are read in place (`a`, `b` reset where they are not).
MatMulBlocking decide(const ProductForm& m, std::optional<InPlace>& a, std::optional<InPlace>& b,
                      const std::optional<SlidingWindow>& window, const MatMulSchedule& s, bool narrow) {
  MatMulBlocking z;
  // With a sliding window, the columns are its virtual pixels.
  const int64_t M = m.rows.size(), N = window ? window->columns(m) : m.cols.size(), K = m.depth.size();
  // Depth blocks of equal size: 576 = 2 x 288 rather than 512 + 64, whose
  // short second block would cost a whole pass over C for little work.
  const int64_t MR = s.mr, NR = s.nr, KC = ceil_div(K, ceil_div(K, s.kc));
  const int64_t PM = ceil_div(M, MR), PN = ceil_div(N, NR);
  const int64_t MC = std::min(std::max<int64_t>(s.mc / MR, 1), PM) * MR;
  int64_t NC = std::min(std::max<int64_t>(s.nc / NR, 1), PN) * NR;

  // Tasks: every batch element, its rows split into groups and, when that
  // is not enough work for the threads, its columns too.
  int64_t batch = m.batch();
  int64_t T = std::max(s.threads, 1);
  int64_t gm = 1, gn = 1;
  // Too few products for the threads: the tasks split each product. With A
  // read in place (whole row blocks only) they split the columns, so each
  // packs only its own part of B and nothing of A; otherwise into a grid of
  // row and column groups, the one that packs least per task (a task packs
  // its columns of B once and its rows of A once per NC block of them: a
  // short, wide product splits its columns, a square one both ways on many
  // threads). With a product per task, A is read in place when the task's
  // columns are one block of B (each packed A would be used once). Rows of
  // a factor two or more whole 4 KiB pages apart fall into the same few L1
  // sets, so such a factor is packed. A sliding window packs no B, and its A (the
  // weights) is read in place wherever it fits: its tasks split into the
  // grid whose tasks' blocks are smallest (balanced), on a tie the one that
  // reads least: a task reads its rows of A and the part of the padded
  // image under its columns. The schedule's knobs may force a factor to be
  // packed, or read in place wherever that is legal, and the row groups.
  auto page_aliased = [](int64_t stride) { return stride * 4 > 4096 && (stride * 4) % 4096 == 0; };
  // B's micro-panel is a column of short rows. Rows a multiple of 1 KiB
  // apart start at no more than four offsets in their pages, so the panel
  // falls into a few sets of L1 and of L2 and is fetched from L3 anew for
  // every row panel: read in place, 128x4096x1024 (rows a page apart) ran
  // at a third of its packed speed, 256x2048x768 and 128x4096x1536 (3 and
  // 6 KiB) 15-30% slower. A's rows are each read from start to end, MR of
  // them at a time: one page apart they still fit L1's ways.
  auto rows_share_sets = [](int64_t stride) { return stride * 4 >= 1024 && std::gcd(stride * 4, int64_t{4096}) >= 1024; };
  bool split = batch % T != 0 && batch < 4 * T;
  bool a_fits = a && M % MR == 0 && !page_aliased(a->outer_stride);
  bool one_column_block = N <= NC;
  bool a_rule = a_fits && (window || (split && PN >= ceil_div(T, batch)) || (!split && one_column_block));
  if (s.a_in_place == 0 || (s.a_in_place < 0 && !a_rule) || (s.a_in_place > 0 && !(a && M % MR == 0))) a.reset();
  if (s.row_groups > 0 && split) {
    int64_t need = ceil_div(T, batch);
    gm = std::min(s.row_groups, PM);
    gn = std::min(PN, ceil_div(need, gm));
  } else if (a && split && !window) {
    gn = ceil_div(T, batch);
  } else if (split) {
    // The grid of the least cost: a window's (its task's block, then what
    // it reads), else what a task packs.
    int64_t need = ceil_div(T, batch);
    auto cost = [&](int64_t rows, int64_t cols) -> std::pair<int64_t, int64_t> {
      int64_t mm = ceil_div(PM, rows) * MR, n = ceil_div(PN, cols) * NR;
      if (window) return {mm * n, mm * K + window->channel_group(m).size() * window->plane() / cols};
      return {K * n + mm * K * ceil_div(n, NC), 0};
    };
    std::pair<int64_t, int64_t> best = {-1, -1};
    for (int64_t r = 1; r <= std::min(PM, need); ++r) {
      int64_t c = std::min(PN, ceil_div(need, r));
      if (r * c < need && r < std::min(PM, need)) continue;  // too few tasks while more row groups remain
      if (best.first < 0 || cost(r, c) < best) best = cost(r, c), gm = r, gn = c;
    }
  }
  // B read in place where its panels are whole and each task's rows are
  // one block of A: then each element of B is fetched once and used by
  // every row panel while in cache, and packing it would only copy it.
  bool b_legal = b && N % NR == 0 && ceil_div(PM, gm) * MR <= MC;
  bool b_rule = b_legal && !rows_share_sets(b->outer_stride);
  if (s.b_in_place == 0 || (s.b_in_place < 0 && !b_rule) || (s.b_in_place > 0 && !b_legal)) b.reset();
  // A window's sums go to a block of the task's rows by NC virtual pixels,
  // kept to 512 KiB, from which the epilogue takes the real ones; a narrow
  // output's sums likewise go to a task's block.
  const int64_t task_rows = ceil_div(PM, gm) * MR;
  if (window || narrow) NC = std::clamp<int64_t>((int64_t{128} << 10) / task_rows / NR * NR, NR, NC);
  z.M = M, z.N = N, z.K = K, z.batch = batch;
  z.MR = MR, z.NR = NR, z.KC = KC, z.MC = MC, z.NC = NC, z.gm = gm, z.gn = gn;
  z.lanes = std::max(s.lanes, 1);
  // The last panel's few columns as vectors along A's packed rows, where
  // that is fewer multiply-adds (at most 8 of them: their accumulators
  // stay in registers beside A's vector).
  if (!a && !window && NR % 2 == 0 && N % NR != 0) {
    const int64_t E = N % NR, H = NR / 2, full = E >= H ? H : 0, R = E - full;
    auto vectors = [&](int64_t n) { return ceil_div(n, z.lanes); };
    int64_t columns_way = MR * vectors(E <= H ? H : NR), rows_way = (full ? MR * vectors(H) : 0) + R * vectors(MR);
    if (R >= 1 && R <= 8 && rows_way < columns_way) z.row_vector_edge = R;
  }
  z.a_in_place = a.has_value(), z.b_in_place = b.has_value(), z.window = window.has_value(), z.narrow = narrow;
  z.a_aliased = a && page_aliased(a->outer_stride);
  z.b_aliased = b && rows_share_sets(b->outer_stride);
  return z;
}

}  // namespace

double MatMulBlocking::last_panel_share() const {
  if (N % NR == 0) return 1;
  auto vectors = [&](int64_t n) { return static_cast<double>(ceil_div(n, std::max<int64_t>(lanes, 1))); };
  const double whole = MR * vectors(NR);
  const int64_t H = NR / 2;
  if (row_vector_edge > 0) return ((N % NR > row_vector_edge ? MR * vectors(H) : 0) + row_vector_edge * vectors(MR)) / whole;
  if (half_edge()) return MR * vectors(H) / whole;
  return 1;
}

namespace {

class Builder {
 public:
  Builder(const ProductForm& m, std::optional<InPlace> a, std::optional<InPlace> b, std::optional<SlidingWindow> window,
          const MatMulSchedule& s, bool narrow)
      : m_(m), a_(std::move(a)), b_(std::move(b)), window_(std::move(window)), s_(s), narrow_(narrow),
        z_(decide(m_, a_, b_, window_, s_, narrow_)) {}

  const MatMulBlocking& blocking() const { return z_; }

  Block build(const std::string& out) {
    const int64_t M = z_.M, N = z_.N, K = z_.K, MR = z_.MR, NR = z_.NR, KC = z_.KC, MC = z_.MC, NC = z_.NC;
    const int64_t PM = ceil_div(M, MR), PN = ceil_div(N, NR), batch = z_.batch, gm = z_.gm, gn = z_.gn;
    const int64_t task_rows = z_.task_rows();
    Expr t = var("t%mm");
    Block task;
    task.push_back(make_let("bt%mm", t / i64(gm * gn)));
    task.push_back(make_let("gm%mm", (t / i64(gn)) - (t / i64(gm * gn)) * i64(gm)));
    task.push_back(make_let("gn%mm", t - (t / i64(gn)) * i64(gn)));
    int64_t stride = batch;
    for (size_t d = 0; d < m_.rows_at; ++d) {
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
    if (!a_) task.push_back(make_allocate("ap%mm", Type::tensor(DType::F32, {i64(MC * KC)}), MemorySpace::Local));
    // A panel's rows, each a run of the depth, before they are interleaved (pack_along_depth).
    run_rows_ = std::max(!a_ && packs_along_depth(m_.rows) ? MR : 0, !b_ && !window_ && packs_along_depth(m_.cols) ? NR : 0);
    if (run_rows_) task.push_back(make_allocate("rt%mm", Type::tensor(DType::F32, {i64(run_rows_ * KC)}), MemorySpace::Local));
    if (window_) {
      task.push_back(make_allocate("xp%mm", Type::tensor(DType::F32, {i64(image_size())}), MemorySpace::Local));
      task.push_back(make_allocate("ko%mm", Type::tensor(DType::I64, {i64(K)}), MemorySpace::Local));
      task.push_back(make_allocate("ct%mm", Type::tensor(DType::F32, {i64(task_rows * NC)}), MemorySpace::Local));
    } else if (!b_) {
      task.push_back(make_allocate("bp%mm", Type::tensor(DType::F32, {i64(NC * KC)}), MemorySpace::Local));
    }
    if (narrow_) task.push_back(make_allocate("cs%mm", Type::tensor(DType::F32, {i64(task_rows * NC)}), MemorySpace::Local));
    if (z_.row_vector_edge > 0)
      task.push_back(make_allocate("ce%mm", Type::tensor(DType::F32, {i64(z_.row_vector_edge * MR)}), MemorySpace::Local));

    // One NC-wide column block of the task.
    Block column;
    column.push_back(make_let("jn%mm", min(i64(NC), var("j1%mm") - var("jc%mm"))));
    Block depth;
    depth.push_back(make_let("kcv%mm", min(i64(KC), i64(K) - var("pc%mm"))));
    // B's panels are two vectors wide: its runs are copied a vector at a time.
    if (!b_ && !window_) pack(depth, "bp%mm", m_.y, !m_.guard_on_x, m_.cols, NR, KC, "jc%mm", "jn%mm", "jb%mm", static_cast<int>(NR / 2));
    Block rows;
    rows.push_back(make_let("mn%mm", min(i64(MC), var("i1%mm") - var("ic%mm"))));
    if (!a_) pack(rows, "ap%mm", m_.x, m_.guard_on_x, m_.rows, MR, KC, "ic%mm", "mn%mm", "ib%mm", 0);
    Block block_row;
    // The output's indices at flat row `row`, flat column `col`.
    auto out_index = [&](const Expr& row, const Expr& col) {
      std::vector<Expr> index;
      for (size_t d = 0; d < m_.rows_at; ++d) index.push_back(var(m_.loops[d]->var));
      for (const auto& group : {std::pair{&m_.rows, row}, std::pair{&m_.cols, col}}) {
        Substitution s = group.first->at(group.second);
        for (const LoopGroup::Loop& l : group.first->loops) index.push_back(s.at(l.var));
      }
      return index;
    };
    Expr row0 = var("ic%mm") + var("ip%mm") * i64(MR), col0 = var("jc%mm") + var("jp%mm") * i64(NR);
    std::vector<Expr> at = out_index(row0, col0);
    std::string c_name = out;
    Expr ldc = i64(N);
    RowTable b_rows;
    if (window_ || narrow_) {
      c_name = window_ ? "ct%mm" : "cs%mm";
      at = {(row0 - var("i0%mm")) * i64(NC) + var("jp%mm") * i64(NR)};
      ldc = i64(NC);
    }
    // C's element (row0 + r, col0 + c) as the store's indices.
    auto c_at = [&](const Expr& r, const Expr& c) {
      std::vector<AxisSel> to;
      if (window_ || narrow_) return std::vector<AxisSel>{AxisSel::at(at[0] + r * ldc + c)};
      for (const Expr& i : out_index(row0 + r, col0 + c)) to.push_back(AxisSel::at(i));
      return to;
    };
    if (window_) b_rows = {"ko%mm", var("pc%mm"), window_->max_offset(m_)};
    // A in place: rows row_stride apart, k steps adjacent; packed: the reverse, MR apart.
    std::string a_name = a_ ? a_->buffer : std::string("ap%mm");
    Expr a_offset = a_ ? a_->base + row0 * i64(a_->outer_stride) + var("pc%mm") : var("ip%mm") * i64(KC * MR);
    Expr a_rs = a_ ? i64(a_->outer_stride) : i64(1), a_ks = a_ ? i64(1) : i64(MR);
    // B in place: k steps ldb apart, columns adjacent; packed: NR-wide panels.
    // A window: B's rows are the padded image at the table's offsets.
    std::string b_name = window_ ? std::string("xp%mm") : b_ ? b_->buffer : std::string("bp%mm");
    Expr b_offset = window_ ? col0 : b_ ? b_->base + var("pc%mm") * i64(b_->outer_stride) + col0 : var("jp%mm") * i64(KC * NR);
    Expr ldb = b_ ? i64(b_->outer_stride) : i64(NR);
    auto micro_block = [&](int64_t cols) {
      return make_matmul_block(static_cast<int>(MR), static_cast<int>(cols), a_name, a_offset, a_rs, a_ks, b_name, b_offset, ldb,
                               var("kcv%mm"), c_name, at, ldc, min(i64(MR), var("mn%mm") - var("ip%mm") * i64(MR)),
                               min(i64(cols), var("jn%mm") - var("jp%mm") * i64(NR)), cmp(BinaryOp::Gt, var("pc%mm"), i64(0)),
                               m_.store->span, b_rows);
    };
    // The product's last column panel, when no more than half of it is
    // real, takes a block half as wide: it reads the first half of each
    // row of its (zero-padded) panel, and does half the work.
    if (z_.row_vector_edge > 0) {
      block_row.push_back(make_if(cmp(BinaryOp::Gt, col0 + i64(NR), i64(N)), row_vector_edge(micro_block, c_name, c_at), {micro_block(NR)}));
    } else if (z_.half_edge()) {
      block_row.push_back(make_if(cmp(BinaryOp::Ge, col0 + i64(NR / 2), i64(N)), {micro_block(NR / 2)}, {micro_block(NR)}));
    } else {
      block_row.push_back(micro_block(NR));
    }
    Block panels = {make_for("ip%mm", i64(0), (var("mn%mm") + i64(MR - 1)) / i64(MR), i64(1), block_row)};
    rows.push_back(make_for("jp%mm", i64(0), (var("jn%mm") + i64(NR - 1)) / i64(NR), i64(1), panels));
    depth.push_back(make_for("ic%mm", var("i0%mm"), var("i1%mm"), i64(MC), rows));
    column.push_back(make_for("pc%mm", i64(0), i64(K), i64(KC), depth));
    Block blocked;
    if (window_) {
      window_epilogue(column, out, NC, task_rows * NC);
      fill_window(blocked, static_cast<int>(NR / 2));
    } else if (narrow_) {
      narrow_epilogue(column, out, NC, task_rows * NC);
    } else {
      epilogue(column, out);
    }
    blocked.push_back(make_for("jc%mm", var("j0%mm"), var("j1%mm"), i64(NC), column));
    if (m_.guard.defined()) {
      checked(task, blocked);
    } else {
      task.insert(task.end(), blocked.begin(), blocked.end());
    }
    return {make_for("t%mm", i64(0), i64(batch * gm * gn), i64(1), task, LoopKind::Parallel, 0, m_.loops[0]->span)};
  }

 private:
  // The product's last column panel with row_vector_edge set: its first
  // half (if real) as a block of column vectors, then its last R columns
  // as a block whose vectors run along the MR rows of A's packed panel
  // (the roles of A and B swapped: each k step loads MR adjacent packed
  // elements of A and broadcasts one of B's per column), its R x MR sums
  // put in ce%mm and from there added to C's column-strided elements.
  template <class MicroBlock, class At>
  Block row_vector_edge(const MicroBlock& micro_block, const std::string& c_name, const At& c_at) {
    const int64_t NR = z_.NR, MR = z_.MR, KC = z_.KC, H = NR / 2, R = z_.row_vector_edge;
    const int64_t full = z_.N % NR - R;  // 0 or H
    Block edge;
    if (full > 0) edge.push_back(micro_block(H));
    edge.push_back(make_matmul_block(static_cast<int>(R), static_cast<int>(MR), "bp%mm", var("jp%mm") * i64(KC * NR) + i64(full), i64(1),
                                     i64(compact_edge() ? R : NR), "ap%mm", var("ip%mm") * i64(KC * MR), i64(MR), var("kcv%mm"), "ce%mm", {i64(0)}, i64(MR),
                                     i64(R), i64(MR), BoolImm::make(false), m_.store->span));
    std::string r = fresh("er"), c = fresh("ec");
    std::vector<AxisSel> to = c_at(var(r), i64(full) + var(c));
    Expr sum = make_access("ce%mm", Type::tensor(DType::F32, {i64(R * MR)}), {AxisSel::at(var(c) * i64(MR) + var(r))});
    Type c_type = narrow_ ? Type::tensor(DType::F32, {i64(z_.task_rows() * z_.NC)}) : output_type(c_name);
    Expr old = make_access(c_name, c_type, to);
    Stmt add = make_if(cmp(BinaryOp::Gt, var("pc%mm"), i64(0)), {make_store(c_name, to, old + sum)}, {make_store(c_name, to, sum)});
    Expr rows = min(i64(MR), var("mn%mm") - var("ip%mm") * i64(MR));
    edge.push_back(make_for(r, i64(0), rows, i64(1), {make_for(c, i64(0), i64(R), i64(1), {add})}));
    return edge;
  }

  // Whether B's last panel is packed R columns wide (pack()'s plain form,
  // with no half-panel block to read it NR wide).
  bool compact_edge() const { return z_.row_vector_edge > 0 && z_.N % z_.NR == z_.row_vector_edge && m_.cols.loops.size() == 1; }

  // Loop variables are named once each: the two ways of packing a panel
  // (whole, or at the edge) each get their own.
  std::string fresh(const std::string& base) { return base + "%mm" + std::to_string(counter_++); }

  // The group's variables at flat index `flat`. The schedule's own loops are
  // named apart from the original ones (the fallback keeps those), so the
  // group's variables are substituted, not bound.
  static Substitution over(const LoopGroup& group, const std::string& flat) { return group.at(var(flat)); }

  // dst[panel, p, e] = v at (reduction step pc + p, flat index first + e of
  // `along`) for every W-wide panel of the block [start, start + count),
  // zero past its end and, for the guarded factor, where the guard fails.
  // The element e is innermost. A factor whose rows run along `along`
  // (row-major B) is read eight rows at a time, every panel's part of them
  // in turn, e's run copied in whole vectors: its rows are read from start
  // to end, which the hardware prefetches, where one panel after another
  // would read a short piece of every row (one page each) at a time. Otherwise
  // (row-major A) a panel at a time: LLVM unrolls e and vectorises over p,
  // interleaving W rows into whole-vector stores.
  static constexpr int64_t kPackRowsAtOnce = 8;
  void pack(Block& out, const std::string& dst, const Expr& v, bool guarded, const LoopGroup& along, int64_t W, int64_t KC,
            const std::string& start, const std::string& count, const std::string& first, int lanes) {
    if (packs_along_depth(along)) return pack_along_depth(out, dst, v, guarded, along, W, KC, start, count, first, lanes);
    if (along.loops.size() > 1) return pack_by_runs(out, dst, v, guarded, along, W, KC, start, count, first, lanes);
    std::string panel = fresh("panel"), p = fresh("p");
    Expr end = var(start) + var(count);
    // B's last panel of a product whose last columns are vectors along the
    // rows holds only its real columns, adjacent: the edge block's k steps
    // then read one short run each, in L1, not a line of a zero-padded panel.
    const int64_t edge_width = &along == &m_.cols && compact_edge() ? z_.row_vector_edge : W;
    // Element e of the panel's row for reduction step `step` (a loop variable).
    auto element = [&](bool edge, const std::string& step, const Expr& e) {
      const int64_t width = edge ? edge_width : W;
      Expr at_e = var(first) + e;
      Substitution at = m_.depth.at(var("pc%mm") + var(step));
      for (auto& [name, value] : along.at(at_e)) at[name] = value;
      std::vector<AxisSel> to = {AxisSel::at(var(panel) * i64(KC * W) + var(step) * i64(width) + e)};
      Stmt store = make_store(dst, to, substitute(v, at));
      Stmt zero = make_store(dst, to, FloatImm::make(0.0));
      if (guarded && m_.guard.defined()) store = make_if(substitute(m_.guard, at), {store}, {zero});
      if (edge) store = make_if(cmp(BinaryOp::Lt, at_e, end), {store}, {zero});
      return store;
    };
    auto copy = [&](bool edge) {
      std::string e = fresh("e");
      return Block{make_for(e, i64(0), i64(edge ? edge_width : W), i64(1), {element(edge, p, var(e))})};
    };
    Block body = {make_let(first, var(start) + var(panel) * i64(W)),
                  make_if(cmp(BinaryOp::Le, var(first) + i64(W), end), copy(false), copy(true))};
    Expr panels = (var(count) + i64(W - 1)) / i64(W);
    if (rows_along(v, along)) {
      // A block as wide as the factor's rows reads them as one stream, a
      // row at a time. A narrower block reads a piece of each row: then
      // eight rows at once, eight streams the hardware prefetches together
      // where one row at a time started each row's page cold, each panel
      // written 8 rows (1 KiB of a 32-wide panel) at a time. Products
      // measured 10% faster at 128x4096x1024, 2-5% at 128x4096x4096 and
      // 768x768x3072 than with one row at a time.
      const bool whole_rows = &along == &m_.cols ? z_.gn == 1 && z_.NC >= z_.N : z_.gm == 1 && z_.MC >= z_.M;
      if (whole_rows) {
        out.push_back(make_for(p, i64(0), var("kcv%mm"), i64(1), {make_for(panel, i64(0), panels, i64(1), body)}));
        return;
      }
      std::string p0 = fresh("p0"), r = fresh("r");
      Block row = {make_let(p, var(p0) + var(r))};
      row.insert(row.end(), body.begin(), body.end());
      Stmt rows = make_for(r, i64(0), min(i64(kPackRowsAtOnce), var("kcv%mm") - var(p0)), i64(1), row);
      out.push_back(make_for(p0, i64(0), var("kcv%mm"), i64(kPackRowsAtOnce), {make_for(panel, i64(0), panels, i64(1), {rows})}));
    } else if (&along == &m_.cols) {
      // A transposed B: LLVM's own unroll of the panel's 32 or 64 columns
      // measured 3% faster than the form A's panels take below.
      out.push_back(make_for(panel, i64(0), panels, i64(1), {make_for(p, i64(0), var("kcv%mm"), i64(1), body)}));
    } else {
      // A's panel: its MR rows read along the depth together, vectors of
      // `lanes` steps of each row interleaved into the panel by shuffles
      // (LLVM's cost model left the copy scalar, one load and one store per
      // element: 12% of 4095x4097x257's time).
      auto over_depth = [&](bool edge) {
        return Block{interleaving_loop(W, edge ? LoopKind::Serial : LoopKind::Vectorized, static_cast<int>(z_.lanes),
                                       [&](const std::string& step, int64_t e) { return element(edge, step, i64(e)); })};
      };
      Block panel_body = {make_let(first, var(start) + var(panel) * i64(W)),
                          make_if(cmp(BinaryOp::Le, var(first) + i64(W), end), over_depth(false), over_depth(true))};
      out.push_back(make_for(panel, i64(0), panels, i64(1), panel_body));
    }
  }

  // A loop over the depth block's steps whose W stores into a panel, one
  // per row, are written out (`store(step, row)`), so that it is innermost:
  // its bounds are checked once, at its ends, and, vectorised, LLVM
  // interleaves a vector of steps of each row into the panel by shuffles.
  template <class Store>
  Stmt interleaving_loop(int64_t W, LoopKind kind, int factor, const Store& store) {
    std::string step = fresh("p");  // each loop its own variable
    Block rows;
    for (int64_t r = 0; r < W; ++r) rows.push_back(store(step, r));
    return make_for(step, i64(0), var("kcv%mm"), i64(1), rows, kind, factor);
  }

  // Whether a factor packed along `along` is packed by pack_along_depth.
  bool packs_along_depth(const LoopGroup& along) const {
    return along.loops.size() > 1 && m_.depth.loops.size() > 1 && along.loops.back().extent < m_.depth.loops.back().extent;
  }

  // Whether `factor` reads a tensor whose last axis is `along`'s one loop:
  // its rows run along the panels' width.
  static bool rows_along(const Expr& factor, const LoopGroup& along) {
    auto access = factor.as<Access>();
    if (!access || access->axes.empty() || along.loops.size() != 1) return false;
    auto last = access->axes.back().index.as<Var>();
    return last && last->name == along.loops[0].var;
  }

  // pack() where the depth's runs are the longer ones (a convolution's
  // weight gradient: the rows are window taps, a short run each, and the
  // depth is the image's pixels, read along its rows): each row of the
  // panel is copied a run of the depth's last loop at a time, that loop
  // innermost and free of tests (the padding guard becomes its range), into
  // a row of rt%mm zeroed first where the guard may skip terms or rows are
  // missing; then the W rows are interleaved into the k-major panel, a
  // vector of `lanes` steps of each row at a time. (Copied into the panel
  // directly, each run's stores lie W elements apart: LLVM vectorised them
  // as scatters, 36% of 1x64x56²→64's weight gradient on AMD's Zen 5.)
  void pack_along_depth(Block& out, const std::string& dst, const Expr& v, bool guarded, const LoopGroup& along, int64_t W,
                        int64_t KC, const std::string& start, const std::string& count, const std::string& first, int lanes) {
    std::string panel = fresh("panel"), e = fresh("e"), row = fresh("dr"), d = fresh("dv"), stop = fresh("stop"), z = fresh("z");
    const LoopGroup::Loop& last = m_.depth.loops.back();
    LoopGroup outer = m_.depth;
    outer.loops.pop_back();
    const int64_t E = last.extent;
    Expr pc = var("pc%mm"), pe = var("pc%mm") + var("kcv%mm"), run0 = var(row) * i64(E);

    Substitution at = outer.at(var(row));
    at[last.var] = var(d) + i64(last.lo);
    for (auto& [name, value] : along.at(var(first) + var(e))) at[name] = value;
    Expr lo = max(pc, run0) - run0, hi = min(pe, run0 + i64(E)) - run0;
    bool tested = guarded && m_.guard.defined();
    std::optional<GuardRange> range;
    if (tested) range = guard_range(simplify(substitute(m_.guard, at)), d);
    if (range) {
      for (const Expr& l : range->lower) lo = max(lo, l);
      for (const Expr& u : range->upper) hi = min(hi, u);
    }
    Stmt copy = make_store("rt%mm", {AxisSel::at(var(e) * i64(KC) + (run0 + var(d) - pc))}, substitute(v, at));
    if (tested && !range) copy = make_if(substitute(m_.guard, at), {copy}, {});
    Stmt run = make_for(d, lo, hi, i64(1), {copy});
    if (range) run = make_if(range->uniform, {run}, {});
    Stmt over_rows = make_for(row, pc / i64(E), (pe - i64(1)) / i64(E) + i64(1), i64(1), {run});

    Stmt zeros = make_for(z, i64(0), i64(W * KC), i64(1), {make_store("rt%mm", {AxisSel::at(var(z))}, FloatImm::make(0.0))});
    Block body = {make_let(first, var(start) + var(panel) * i64(W)),
                  make_let(stop, min(var(first) + i64(W), var(start) + var(count)))};
    body.push_back(tested ? zeros : make_if(cmp(BinaryOp::Lt, var(stop) - var(first), i64(W)), {zeros}, {}));
    body.push_back(make_for(e, i64(0), var(stop) - var(first), i64(1), {over_rows}));
    const Type rows_type = Type::tensor(DType::F32, {i64(run_rows_ * KC)});
    body.push_back(interleaving_loop(W, LoopKind::Vectorized, lanes, [&](const std::string& step, int64_t r) {
      return make_store(dst, {AxisSel::at(var(panel) * i64(KC * W) + var(step) * i64(W) + i64(r))},
                        make_access("rt%mm", rows_type, {AxisSel::at(i64(r * KC) + var(step))}));
    }));
    out.push_back(make_for(panel, i64(0), (var(count) + i64(W - 1)) / i64(W), i64(1), body));
  }

  // pack() for a group of several loops (the pixels of a convolution): each
  // panel is copied a run of its last loop at a time, where the flat index
  // and that loop's variable step together, so that a row-major operand is
  // read contiguously. The first reduction loop (a convolution's input
  // channel) runs innermost, so a run's copy range, which depends on the
  // window position and not on the channel, is worked out once for all
  // channels: the padding guard becomes that range (guard_range), and the
  // copy has no test left and vectorises. A guard of another form is tested
  // per element.
  void pack_by_runs(Block& out, const std::string& dst, const Expr& v, bool guarded, const LoopGroup& along, int64_t W,
                    int64_t KC, const std::string& start, const std::string& count, const std::string& first, int lanes) {
    std::string panel = fresh("panel"), row = fresh("row"), s = fresh("s"), c = fresh("c"), e = fresh("e");
    std::string stop = fresh("stop"), e0 = fresh("e0"), e1 = fresh("e1"), a = fresh("a"), b = fresh("b");
    const LoopGroup::Loop& last = along.loops.back();
    LoopGroup outer = along, window = m_.depth;
    outer.loops.pop_back();
    window.loops.erase(window.loops.begin());
    const LoopGroup::Loop& channel = m_.depth.loops.front();
    const int64_t E = last.extent, S = window.size(), C = channel.extent;

    // Reduction step p = c * S + s - pc of this depth block.
    Substitution at = window.at(var(s));
    at[channel.var] = var(c) + i64(channel.lo);
    for (auto& [name, value] : outer.at(var(row))) at[name] = value;
    at[last.var] = var(first) + var(e) - var(row) * i64(E) + i64(last.lo);
    bool tested = guarded && m_.guard.defined();
    std::optional<GuardRange> range;
    if (tested) range = guard_range(simplify(substitute(m_.guard, at)), e);
    tested = tested && !range;
    Expr p = var(c) * i64(S) + var(s) - var("pc%mm");
    Expr zero = FloatImm::make(0.0);
    std::vector<AxisSel> to = {AxisSel::at(var(panel) * i64(KC * W) + p * i64(W) + var(e))};
    Block copy = {make_store(dst, to, substitute(v, at))};
    if (tested) copy = {make_if(substitute(m_.guard, at), copy, {make_store(dst, to, zero)})};
    Expr lo = var(e0), hi = var(e1);
    if (range) {
      for (const Expr& l : range->lower) lo = max(lo, l);
      for (const Expr& u : range->upper) hi = min(hi, u);
    }
    LoopKind kind = lanes && !tested ? LoopKind::Vectorized : LoopKind::Serial;
    Stmt over_e = make_for(e, var(a), var(b), i64(1), copy, kind, kind == LoopKind::Vectorized ? lanes : 0);
    Block per_channel = {over_e};
    Block per_window = {make_let(a, lo), make_let(b, hi)};
    Expr c_lo = max(i64(0), (var("pc%mm") - var(s) + i64(S - 1)) / i64(S));
    Expr c_hi = min(i64(C), (var("pc%mm") + var("kcv%mm") - var(s) + i64(S - 1)) / i64(S));
    Stmt over_c = make_for(c, c_lo, c_hi, i64(1), per_channel);
    // A guard that reads the channel is worked out per channel.
    bool per_c = range && (reads_any(range->uniform, {c}) || reads_any(lo, {c}) || reads_any(hi, {c}));
    if (per_c) {
      per_channel = {make_let(a, lo), make_let(b, hi), make_if(range->uniform, {over_e})};
      per_window = {make_for(c, c_lo, c_hi, i64(1), per_channel)};
    } else if (range) {
      per_window.push_back(make_if(range->uniform, {over_c}));
    } else {
      per_window.push_back(over_c);
    }
    // Window positions the depth block reaches: where it lies within one
    // channel, its part of the window (a batch's pixels, when the window is
    // the output image), else the whole window.
    Expr s_lo = max(i64(0), var("pc%mm") - (var("pc%mm") + var("kcv%mm") - i64(1)) / i64(S) * i64(S));
    Expr s_hi = min(i64(S), var("pc%mm") + var("kcv%mm") - var("pc%mm") / i64(S) * i64(S));
    Block run = {make_let(e0, max(var(row) * i64(E), var(first)) - var(first)),
                 make_let(e1, min(var(row) * i64(E) + i64(E), var(stop)) - var(first)),
                 make_for(s, s_lo, s_hi, i64(1), per_window)};
    // Zeros first: where the guard fails, past the block's end.
    std::string z = fresh("z");
    Stmt zeros = make_for(z, i64(0), var("kcv%mm") * i64(W), i64(1),
                          {make_store(dst, {AxisSel::at(var(panel) * i64(KC * W) + var(z))}, zero)});
    Block body = {make_let(first, var(start) + var(panel) * i64(W)),
                  make_let(stop, min(var(first) + i64(W), var(start) + var(count)))};
    if (range) {
      body.push_back(zeros);
    } else {
      body.push_back(make_if(cmp(BinaryOp::Lt, var(stop) - var(first), i64(W)), {zeros}));
    }
    body.push_back(make_for(row, var(first) / i64(E), (var(stop) - i64(1)) / i64(E) + i64(1), i64(1), run));
    out.push_back(make_for(panel, i64(0), (var(count) + i64(W - 1)) / i64(W), i64(1), body));
  }

  // out[b.., i.., j..] = f(out[b.., i.., j..] + init) over the column block,
  // unless that is the sum itself.
  void epilogue(Block& out, const std::string& buffer) {
    const Expr& f = m_.store->value;
    auto v = f.as<Var>();
    if (v && v->name == m_.sum->name && !m_.init.defined()) return;
    Substitution rows = over(m_.rows, "ie%mm");
    Stmt over_j = runs(m_.cols, "je%mm", var("jc%mm"), var("jc%mm") + var("jn%mm"), [&](const Substitution& cols) {
      Substitution at = rows;
      for (auto& [name, value] : cols) at[name] = value;
      std::vector<AxisSel> axes;
      for (const AxisSel& a : m_.store->axes) axes.push_back(AxisSel::at(substitute(a.index, at)));
      Expr sum = make_access(buffer, output_type(buffer), axes);
      if (m_.init.defined()) sum = sum + substitute(m_.init, at);
      at[m_.sum->name] = var_f32("sum%mm");
      return Block{make_let("sum%mm", sum), make_store(buffer, axes, substitute(f, at), m_.store->span)};
    });
    out.push_back(make_for("ie%mm", var("i0%mm"), var("i1%mm"), i64(1), {over_j}));
  }

  // out[b.., i.., j..] = f(sums + init) over the column block, the sums
  // taken from the task's block of them in cs%mm (`sums` long): an output
  // narrower than f32, rounded once, at its store.
  void narrow_epilogue(Block& out, const std::string& buffer, int64_t NC, int64_t sums) {
    Substitution at = over(m_.rows, "ie%mm");
    for (auto& [name, value] : over(m_.cols, "je%mm")) at[name] = value;
    std::vector<AxisSel> axes;
    for (const AxisSel& a : m_.store->axes) axes.push_back(AxisSel::at(substitute(a.index, at)));
    Expr sum = make_access("cs%mm", Type::tensor(DType::F32, {i64(sums)}),
                           {AxisSel::at((var("ie%mm") - var("i0%mm")) * i64(NC) + var("je%mm") - var("jc%mm"))});
    if (m_.init.defined()) sum = sum + substitute(m_.init, at);
    at[m_.sum->name] = var_f32("sum%mm");
    Block body = {make_let("sum%mm", sum), make_store(buffer, axes, substitute(m_.store->value, at), m_.store->span)};
    Stmt over_j = make_for("je%mm", var("jc%mm"), var("jc%mm") + var("jn%mm"), i64(1), body);
    out.push_back(make_for("ie%mm", var("i0%mm"), var("i1%mm"), i64(1), {over_j}));
  }

  // for flat in lo..hi over a loop group, as runs of its last loop: in each
  // run the flat index and the last loop's variable step together, so the
  // body's addresses are affine in the run's loop (they vectorise) and the
  // other variables are fixed for the run. `body` gets the group's
  // variables; the runs' loops are named from `name`.
  template <class Body>
  Stmt runs(const LoopGroup& group, const std::string& name, Expr lo, Expr hi, Body body) {
    if (group.loops.size() == 1) return make_for(name, lo, hi, i64(1), body(over(group, name)));
    const LoopGroup::Loop& last = group.loops.back();
    LoopGroup outer = group;
    outer.loops.pop_back();
    const int64_t E = last.extent;
    std::string row = name + "r", v = name + "v";
    Substitution at = outer.at(var(row));
    at[last.var] = var(v) + i64(last.lo);
    Expr start = var(row) * i64(E);
    Block run = {make_for(v, max(lo, start) - start, min(hi, start + i64(E)) - start, i64(1), body(at))};
    return make_for(row, lo / i64(E), (hi - i64(1)) / i64(E) + i64(1), i64(1), run);
  }

  // The packed guarded factor holds zeros where the original skipped a term,
  // which is exact only while the other factor is finite (inf * 0 is NaN).
  // So a task first sums that factor times zero over its part (NaN if any
  // element is infinite or NaN) and, if it is not zero, runs the original
  // loops over its tile instead of the blocked product.
  void checked(Block& task, const Block& blocked) {
    const LoopGroup& side = m_.guard_on_x ? m_.cols : m_.rows;
    Expr lo = var(m_.guard_on_x ? "j0%mm" : "i0%mm"), hi = var(m_.guard_on_x ? "j1%mm" : "i1%mm");
    Expr zero = FloatImm::make(0.0);
    task.push_back(make_decl("fin%mm", Type::scalar(DType::F32), zero));
    task.push_back(runs(side, "sf%mm", lo, hi, [&](const Substitution& side_at) {
      // The reduction loops as they were (renamed), innermost last.
      Substitution at = side_at;
      for (size_t t = 0; t < m_.depth.loops.size(); ++t) at[m_.depth.loops[t].var] = var("kf%mm" + std::to_string(t));
      Block body = {make_assign("fin%mm", var_f32("fin%mm") + substitute(m_.unguarded(), at) * zero)};
      for (size_t t = m_.depth.loops.size(); t-- > 0;) {
        const LoopGroup::Loop& l = m_.depth.loops[t];
        body = {make_for("kf%mm" + std::to_string(t), i64(l.lo), i64(l.lo + l.extent), i64(1), body)};
      }
      return body;
    }));
    Substitution point = over(m_.rows, "if%mm");
    // A window's tasks split its virtual pixels: the real ones among them.
    LoopGroup pixels = window_ ? window_->virtual_pixels(m_) : m_.cols;
    for (auto& [name, value] : over(pixels, "jf%mm")) point[name] = value;
    Block original = substitute(Block{m_.sum_decl, m_.reduction, m_.store_stmt}, point);
    if (window_) original = {make_if(real_pixel(point, m_.cols.loops.size()), original)};
    Block over_j = {make_for("jf%mm", var("j0%mm"), var("j1%mm"), i64(1), original)};
    Block fallback = {make_for("if%mm", var("i0%mm"), var("i1%mm"), i64(1), over_j)};
    task.push_back(make_if(cmp(BinaryOp::Eq, var_f32("fin%mm"), zero), blocked, fallback));
  }

  static Expr var_f32(const std::string& name) { return Var::make(name, Type::scalar(DType::F32)); }

  // The padded image, its slack past the last channel for the columns read
  // past the end (virtual pixels, the last panel's whole width).
  int64_t image_size() const { return window_->max_offset(m_) + window_->columns(m_) + s_.nr; }

  // Whether the column loops' values in `at` are a real pixel: each below
  // its extent (the first always is), of the first `loops` of them.
  Expr real_pixel(const Substitution& at, size_t loops) const {
    Expr real = BoolImm::make(true);
    for (size_t t = 1; t < loops; ++t)
      real = cmp(BinaryOp::And, real, cmp(BinaryOp::Lt, at.at(m_.cols.loops[t].var), i64(m_.cols.loops[t].extent)));
    return simplify(real);
  }

  // The window's offset table, and the padded image over the part of it the
  // task's virtual pixels [j0, j1) read: P[c.., y..] = guard ? Y : 0 at the
  // window's first position (last, mirrored). Each row of P is copied as one loop; the
  // padding guard becomes that loop's range (guard_range), so the copy
  // vectorises. Pixels past a row's end read into the next row or the slack;
  // what they read only reaches columns that are dropped.
  void fill_window(Block& out, int lanes) {
    const SlidingWindow& w = *window_;
    const int64_t plane = w.plane(), X = w.row_width();
    const int64_t reach = w.max_offset(m_) - (w.channel_group(m_).size() - 1) * plane;
    out.push_back(make_for("kt%mm", i64(0), i64(m_.depth.size()), i64(1),
                           {make_store("ko%mm", {AxisSel::at(var("kt%mm"))}, simplify(substitute(w.offset(m_), m_.depth.at(var("kt%mm")))))}));
    int64_t used = w.channel_group(m_).size() * plane;
    out.push_back(make_for("kz%mm", i64(used), i64(image_size()), i64(1), {make_store("xp%mm", {AxisSel::at(var("kz%mm"))}, FloatImm::make(0.0))}));

    std::string cf = "cf%mm", row = "yr%mm", v = "yv%mm";
    LoopGroup outer = w.image(m_);
    outer.loops.pop_back();
    Substitution at = outer.at(var(row));
    for (auto& [name, value] : w.channel_group(m_).at(var(cf))) at[name] = value;
    at[m_.cols.loops.back().var] = var(v);
    for (size_t t = 0; t < w.partner.size(); ++t) at[m_.depth.loops[w.partner[t]].var] = i64(w.partner_at(m_, t));
    Expr lo = var("j0%mm"), hi = min(i64(plane), var("j1%mm") + i64(reach));
    Expr start = var(row) * i64(X);
    std::vector<AxisSel> to = {AxisSel::at(var(cf) * i64(plane) + start + var(v))};
    Stmt copy = make_store("xp%mm", to, simplify(substitute(m_.y, at)));
    Stmt zero = make_store("xp%mm", to, FloatImm::make(0.0));
    Expr a = max(lo, start) - start, b = min(hi, start + i64(X)) - start;
    auto over_v = [&](Expr from, Expr to_, Stmt body, bool vector) {
      LoopKind kind = vector && lanes ? LoopKind::Vectorized : LoopKind::Serial;
      return make_for(v, std::move(from), std::move(to_), i64(1), {std::move(body)}, kind, kind == LoopKind::Vectorized ? lanes : 0);
    };
    auto zeros = [&](Expr from, Expr to_) {  // its own loop variable: names are bound once
      return make_for("yz%mm", std::move(from), std::move(to_), i64(1),
                      {make_store("xp%mm", {AxisSel::at(var(cf) * i64(plane) + start + var("yz%mm"))}, FloatImm::make(0.0))},
                      lanes ? LoopKind::Vectorized : LoopKind::Serial, lanes);
    };
    Block run;
    if (!m_.guard.defined()) {
      run = {over_v(a, b, copy, true)};
    } else {
      Expr guard = simplify(substitute(m_.guard, at));
      if (std::optional<GuardRange> range = guard_range(guard, v)) {
        Expr from = a, until = b;
        for (const Expr& l : range->lower) from = max(from, l);
        for (const Expr& u : range->upper) until = min(until, u);
        run = {zeros(a, b), make_if(range->uniform, {over_v(from, until, copy, true)})};
      } else {
        run = {over_v(a, b, make_if(guard, {copy}, {zero}), false)};
      }
    }
    Stmt rows = make_for(row, lo / i64(X), (hi - i64(1)) / i64(X) + i64(1), i64(1), run);
    Block per_channel = {rows};
    // Rows stored narrower (w.shared): the last pixels of a channel's last
    // row read its first columns on into the next channel's, which are
    // zero whatever part of it the task fills.
    if (w.shared > 0)
      per_channel.insert(per_channel.begin(),
                         make_for("ys%mm", i64(0), i64(w.shared), i64(1),
                                  {make_store("xp%mm", {AxisSel::at(var(cf) * i64(plane) + var("ys%mm"))}, FloatImm::make(0.0))}));
    out.push_back(make_for(cf, i64(0), i64(w.channel_group(m_).size()), i64(1), per_channel));
  }

  // out[b.., i.., j..] = f(sum + init) for the real pixels of the column
  // block, the sums taken from the block's NC virtual pixels in ct%mm (`sums` long).
  void window_epilogue(Block& out, const std::string& buffer, int64_t NC, int64_t sums) {
    const SlidingWindow& w = *window_;
    const int64_t X = w.row_width(), E = m_.cols.loops.back().extent;
    std::string row = "er%mm", v = "ev%mm";
    LoopGroup outer = w.virtual_pixels(m_);
    outer.loops.pop_back();
    Substitution at = over(m_.rows, "ie%mm");
    for (auto& [name, value] : outer.at(var(row))) at[name] = value;
    at[m_.cols.loops.back().var] = var(v);
    Expr start = var(row) * i64(X);
    std::vector<AxisSel> axes;
    for (const AxisSel& a : m_.store->axes) axes.push_back(AxisSel::at(substitute(a.index, at)));
    Expr sum = make_access("ct%mm", Type::tensor(DType::F32, {i64(sums)}),
                           {AxisSel::at((var("ie%mm") - var("i0%mm")) * i64(NC) + start + var(v) - var("jc%mm"))});
    if (m_.init.defined()) sum = sum + substitute(m_.init, at);
    Substitution value = at;
    value[m_.sum->name] = var_f32("sum%mm");
    Block body = {make_let("sum%mm", sum), make_store(buffer, axes, substitute(m_.store->value, value), m_.store->span)};
    Expr jc = var("jc%mm"), jend = var("jc%mm") + var("jn%mm");
    Stmt over_v = make_for(v, max(jc, start) - start, min(jend, start + i64(E)) - start, i64(1), body);
    Block per_row = {over_v};
    Expr real = real_pixel(at, m_.cols.loops.size() - 1);  // the run stops at the last loop's extent
    if (!constant_value(real)) per_row = {make_if(real, per_row)};
    Stmt rows = make_for(row, jc / i64(X), (jend - i64(1)) / i64(X) + i64(1), i64(1), per_row);
    out.push_back(make_for("ie%mm", var("i0%mm"), var("i1%mm"), i64(1), {rows}));
  }

  Type output_type(const std::string&) const {
    std::vector<Expr> shape;
    for (const For* f : m_.loops) shape.push_back(f->hi);
    return Type::tensor(DType::F32, shape);
  }

  const ProductForm& m_;
  std::optional<InPlace> a_, b_;
  std::optional<SlidingWindow> window_;
  const MatMulSchedule& s_;
  bool narrow_;  // an output narrower than f32: its sums in a task's block of f32 (cs%mm)
  MatMulBlocking z_;
  int64_t run_rows_ = 0;  // rows of rt%mm (pack_along_depth's runs), 0 where none
  int counter_ = 0;
};

}  // namespace

MatMulSchedule cpu_matmul_schedule(int vector_bits, int threads) {
  MatMulSchedule s;
  s.threads = threads;
  s.lanes = std::max(vector_bits / 32, 1);
  if (vector_bits >= 512) {
    s.mr = 8, s.nr = 32;   // 16 zmm accumulators, 2 for B (measured ahead of 12x32, 10x32, 4x64)
    s.kc = 640;            // K = 1152 in two blocks of 576, not three of 384 (measured 5-10% ahead); K = 1024 in two of 512
    s.mc = 256;            // a 256-row block is one block of A (240 left 16 rows for a second pass over B: 10% slower)
  } else if (vector_bits >= 256) {
    s.mr = 6, s.nr = 16;   // 12 ymm accumulators, 2 for B, 1 broadcast
    s.mc = 120;
  } else {
    s.mr = 6, s.nr = 8;    // 12 of 16 xmm (NEON has 32; this leaves room)
    s.mc = 120;
  }
  return s;
}

namespace {

// The parts of a product this schedule takes: its form, the factors it may
// read in place, its sliding window; none when it takes no product here.
struct Matched {
  ProductForm m;
  std::optional<InPlace> a, b;
  std::optional<SlidingWindow> window;
  bool narrow = false;
};

std::optional<Matched> match(const Kernel& k, const MatMulSchedule& s) {
  std::optional<ProductForm> m = match_product(k);
  if (!m) return std::nullopt;
  int64_t M = m->rows.size(), N = m->cols.size();
  if (M < 4 || N < 4 || static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(m->depth.size()) < s.min_flops)
    return std::nullopt;
  Matched r{*m, std::nullopt, std::nullopt, std::nullopt, false};
  // The blocks sum into an f32 output itself; for a narrower one, into a
  // task's block of f32 sums that the epilogue rounds into the output (B
  // packed: not read as a sliding window).
  r.narrow = k.output().type.dtype != DType::F32;
  r.a = find_in_place(k, m->x, m->guard.defined() && m->guard_on_x, m->depth, m->rows);
  r.b = find_in_place(k, m->y, m->guard.defined() && !m->guard_on_x, m->cols, m->depth);
  // A sliding window is read in place unless too many of its virtual pixels
  // are not real (7 of every 9 for a 7x7 image and a 3x3 window still gains:
  // 1x512x7^2 from 1.5 to 1.0-1.15 ms, packing nothing).
  r.window = find_sliding_window(*m);
  if (r.window && (r.narrow || r.window->useful(*m) < s.min_window_use)) r.window.reset();
  return r;
}

}  // namespace

std::vector<MatMulBlocking> matmul_blockings(const Kernel& k, const std::vector<MatMulSchedule>& schedules) {
  if (schedules.empty()) return {};
  std::optional<Matched> r = match(k, schedules.front());
  if (!r) return {};
  std::vector<MatMulBlocking> out;
  for (const MatMulSchedule& s : schedules) {
    std::optional<InPlace> a = r->a, b = r->b;
    out.push_back(decide(r->m, a, b, r->window, s, r->narrow));
  }
  return out;
}

std::optional<Kernel> schedule_matmul(const Kernel& k, const MatMulSchedule& s) {
  std::optional<Matched> r = match(k, s);
  if (!r) return std::nullopt;
  Kernel out = k;
  out.body = Builder(r->m, std::move(r->a), std::move(r->b), std::move(r->window), s, r->narrow).build(k.output().name);
  out = simplify(out);
  verify_or_throw(out, "schedule_matmul");
  return out;
}

}  // namespace zyntax::cir
