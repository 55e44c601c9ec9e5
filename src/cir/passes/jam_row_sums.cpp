#include "cir/passes/jam_row_sums.hpp"

#include "cir/affine.hpp"
#include "cir/passes/simplify.hpp"
#include "cir/reads.hpp"
#include "cir/substitute.hpp"
#include "cir/verifier.hpp"

#include <optional>

namespace zyntax::cir {

namespace {

// Shorter rows stay in cache or leave too little to overlap.
constexpr int64_t kMinRowLength = 256;

// The row's statements `var s = init; for k { s = s op term }; store`,
// or nothing.
bool is_row_sum(const Block& b, const std::string& i) {
  if (b.size() != 3) return false;
  auto decl = b[0].as<Decl>();
  auto loop = b[1].as<For>();
  auto store = b[2].as<Store>();
  if (!decl || !loop || !store || loop->loop_kind != LoopKind::Serial || loop->body.size() != 1) return false;
  auto lo = constant_value(loop->lo), hi = constant_value(loop->hi), step = constant_value(loop->step);
  if (!lo || !hi || step != 1 || *hi - *lo < kMinRowLength) return false;
  auto assign = loop->body[0].as<Assign>();
  auto op = assign ? assign->value.as<Binary>() : nullptr;
  auto self = op ? op->a.as<Var>() : nullptr;
  if (!assign || assign->name != decl->name || !self || self->name != decl->name) return false;
  if (reads_any(op->b, {decl->name}) || !reads_any(op->b, {i})) return false;
  return reads_any(store->value, {decl->name});
}

std::optional<Block> jam(const For& f, int rows) {
  auto lo = constant_value(f.lo), hi = constant_value(f.hi), step = constant_value(f.step);
  if (f.loop_kind != LoopKind::Parallel || !lo || !hi || step != 1 || *hi - *lo < 2 * rows) return std::nullopt;
  // The row, possibly inside a one-iteration loop over the columns.
  const For* cols = f.body.size() == 1 ? f.body[0].as<For>() : nullptr;
  const Block* row = &f.body;
  if (cols) {
    auto clo = constant_value(cols->lo), chi = constant_value(cols->hi);
    if (!clo || !chi || *chi - *clo != 1) return std::nullopt;
    row = &cols->body;
  }
  if (!is_row_sum(*row, f.var)) return std::nullopt;
  const auto& decl = *(*row)[0].as<Decl>();
  const auto& loop = *(*row)[1].as<For>();
  const auto& assign = *loop.body[0].as<Assign>();
  const auto& op = *assign.value.as<Binary>();
  // `count` rows from `first` on, in one k loop. Names are unique in a
  // kernel: each copy's loops and sums carry `suffix`.
  auto rows_from = [&](const Expr& first, int count, const std::string& suffix) {
    std::string k = loop.var + suffix, j = cols ? cols->var + suffix : "";
    Substitution loops{{loop.var, Var::make(k, Type::scalar(DType::I64))}};
    if (cols) loops[cols->var] = Var::make(j, Type::scalar(DType::I64));
    Block decls, updates, stores;
    for (int u = 0; u < count; ++u) {
      std::string s = decl.name + suffix + "%" + std::to_string(u);
      Substitution at = loops;
      at[f.var] = simplify(Binary::make(BinaryOp::Add, first, i64(u)));
      decls.push_back(make_decl(s, decl.type, substitute(decl.init, at), decl.span));
      updates.push_back(make_assign(s, Binary::make(op.op, Var::make(s, decl.type), substitute(op.b, at)), assign.span));
      at[decl.name] = Var::make(s, decl.type);
      for (const Stmt& st : substitute(Block{(*row)[2]}, at)) stores.push_back(st);
    }
    Block body = decls;
    body.push_back(make_for(k, loop.lo, loop.hi, loop.step, updates, LoopKind::Serial, 0, loop.span));
    body.insert(body.end(), stores.begin(), stores.end());
    if (cols) body = {make_for(j, cols->lo, cols->hi, cols->step, body, cols->loop_kind, cols->factor, cols->span)};
    return body;
  };
  int64_t groups = (*hi - *lo) / rows, rest = *lo + groups * rows;
  std::string g = f.var + "%rows", r = f.var + "%rest";
  Expr first = Binary::make(BinaryOp::Add, f.lo, Binary::make(BinaryOp::Mul, Var::make(g, Type::scalar(DType::I64)), i64(rows)));
  Block out{make_for(g, i64(0), i64(groups), i64(1), rows_from(first, rows, ""), LoopKind::Parallel, 0, f.span)};
  // The rows past the last whole group, one at a time.
  if (rest < *hi)
    out.push_back(make_for(r, i64(rest), f.hi, f.step, rows_from(Var::make(r, Type::scalar(DType::I64)), 1, "%rest"), LoopKind::Parallel,
                           f.factor, f.span));
  return out;
}

}  // namespace

Kernel jam_row_sums(const Kernel& k, int rows) {
  if (rows < 2) return k;
  Kernel out = k;
  Block body;
  bool changed = false;
  for (const Stmt& s : k.body) {
    auto f = s.as<For>();
    std::optional<Block> jammed = f ? jam(*f, rows) : std::nullopt;
    if (!jammed) {
      body.push_back(s);
      continue;
    }
    changed = true;
    body.insert(body.end(), jammed->begin(), jammed->end());
  }
  if (!changed) return k;
  out.body = std::move(body);
  verify_or_throw(out, "jam_row_sums");
  return out;
}

}  // namespace zyntax::cir
