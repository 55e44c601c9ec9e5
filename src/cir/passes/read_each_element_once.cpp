#include "cir/passes/read_each_element_once.hpp"

#include <string>
#include <vector>

#include "cir/equal.hpp"
#include "cir/mutator.hpp"

namespace zyntax::cir {

namespace {

bool same_read(const Access& a, const Access& b) { return a.buffer == b.buffer && equal(a.axes, b.axes); }

// Appends the scalar reads of `e` in evaluation order (an access's indices
// before the access); false where the expression is not straight (see the
// header) or reads a slice.
bool collect_reads(const Expr& e, std::vector<Expr>& reads) {
  switch (e->kind) {
    case ExprKind::IntImm:
    case ExprKind::FloatImm:
    case ExprKind::BoolImm:
    case ExprKind::Var:
    case ExprKind::GpuIndex: return true;
    case ExprKind::Cast: return collect_reads(e.as<Cast>()->value, reads);
    case ExprKind::Unary: return collect_reads(e.as<Unary>()->a, reads);
    case ExprKind::Binary: {
      const Binary* b = e.as<Binary>();
      if (b->op == BinaryOp::And || b->op == BinaryOp::Or) return false;
      if (!is_float(b->a->type.dtype) && (b->op == BinaryOp::Div || b->op == BinaryOp::Mod || b->op == BinaryOp::Pow)) return false;
      return collect_reads(b->a, reads) && collect_reads(b->b, reads);
    }
    case ExprKind::Math:
      for (const Expr& a : e.as<Math>()->args)
        if (!collect_reads(a, reads)) return false;
      return true;
    case ExprKind::Access: {
      const Access* a = e.as<Access>();
      if (a->type.rank() != 0) return false;
      for (const AxisSel& s : a->axes)
        if (s.is_slice || !collect_reads(s.index, reads)) return false;
      reads.push_back(e);
      return true;
    }
    default: return false;  // select, reductions, products, fills: parts may be skipped or looped over
  }
}

// Replaces each read equal to one of `reads` by its let.
class ReadsToLets : public IRMutator {
 public:
  ReadsToLets(const std::vector<Expr>& reads, const std::vector<std::string>& names) : reads_(reads), names_(names) {}
  using IRMutator::visit;
  Expr visit(const Access* op) override {
    for (size_t i = 0; i < reads_.size(); ++i)
      if (same_read(*op, *reads_[i].as<Access>())) return Var::make(names_[i], op->type, op->span);
    return IRMutator::visit(op);
  }

 private:
  const std::vector<Expr>& reads_;
  const std::vector<std::string>& names_;
};

class ReadOnce : public IRMutator {
 public:
  using IRMutator::visit;
  using IRMutator::mutate;

  Block mutate(const Block& b) override {
    Block out;
    for (const Stmt& s : b) {
      Stmt m = mutate(s);
      if (!m.defined()) continue;
      // A store's indices are evaluated before its value: they must read
      // nothing and be unable to fail, so that the lets may come first.
      auto quiet = [](const Expr& e) {
        std::vector<Expr> none;
        return collect_reads(e, none) && none.empty();
      };
      const Expr* value = nullptr;
      if (auto st = m.as<Store>()) {
        bool indices_quiet = true;
        for (const AxisSel& a : st->axes) indices_quiet &= !a.is_slice && quiet(a.index);
        if (indices_quiet) value = &st->value;
      } else if (auto as = m.as<Assign>()) {
        value = &as->value;
      } else if (auto let = m.as<Let>()) {
        value = &let->value;
      } else if (auto y = m.as<Yield>(); y && !y->index.defined()) {
        bool indices_quiet = true;
        for (const Expr& o : y->out_index) indices_quiet &= quiet(o);
        if (indices_quiet) value = &y->value;
      }
      std::vector<Expr> reads;
      if (!value || !value->defined() || !collect_reads(*value, reads) || !repeats(reads)) {
        out.push_back(m);
        continue;
      }
      // The distinct reads, each a let in the order first read; a read's
      // indices use the lets of the reads before it.
      std::vector<Expr> distinct;
      std::vector<std::string> names;
      for (const Expr& r : reads) {
        bool seen = false;
        for (const Expr& d : distinct) seen |= same_read(*r.as<Access>(), *d.as<Access>());
        if (seen) continue;
        std::string name = "read." + std::to_string(counter_++);
        out.push_back(make_let(name, ReadsToLets(distinct, names).mutate(r), r->span));
        distinct.push_back(r);
        names.push_back(name);
      }
      ReadsToLets replace(distinct, names);
      Expr v = replace.mutate(*value);
      if (auto st = m.as<Store>()) out.push_back(make_store(st->buffer, st->axes, v, st->span));
      else if (auto as = m.as<Assign>()) out.push_back(make_assign(as->name, v, as->span));
      else if (auto let = m.as<Let>()) out.push_back(make_let(let->name, v, let->span));
      else if (auto y = m.as<Yield>()) out.push_back(make_yield(v, y->index, y->out_index, y->span));
    }
    return out;
  }

 private:
  int counter_ = 0;

  static bool repeats(const std::vector<Expr>& reads) {
    for (size_t i = 0; i < reads.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (same_read(*reads[i].as<Access>(), *reads[j].as<Access>())) return true;
    return false;
  }
};

}  // namespace

Kernel read_each_element_once(const Kernel& k) { return ReadOnce().mutate(k); }

}  // namespace zyntax::cir
