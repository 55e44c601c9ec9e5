#include "cir/register_pressure.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "cir/visitor.hpp"

namespace zyntax::cir {

namespace {

int64_t width(DType t) { return dtype_size(t) > 4 ? 2 : 1; }

// Operands (registers to evaluate, registers of the result), evaluated in
// the order that needs fewest (most needed beyond what is kept, first):
// each is computed while the results before it are held.
int64_t operands(std::vector<std::pair<int64_t, int64_t>> need, int64_t result) {
  std::sort(need.begin(), need.end(), [](const auto& a, const auto& b) { return a.first - a.second > b.first - b.second; });
  int64_t most = result, held = 0;
  for (const auto& [registers, width] : need) {
    most = std::max(most, held + registers);
    held += width;
  }
  return std::max(most, held);
}

std::pair<int64_t, int64_t> operand(const Expr& e) { return {expression_registers(e), e.defined() ? width(e->type.dtype) : 0}; }

// The locals a statement reads, at any depth.
class NamesRead : public IRVisitor {
 public:
  std::set<std::string> names;
  void visit(const Var* op) override { names.insert(op->name); }
  void visit(const Assign* op) override {
    names.insert(op->name);
    IRVisitor::visit(op);
  }
};

class Pressure {
 public:
  int64_t block(const Block& b, int64_t outside) {
    // The last statement of this block that reads each local defined in it.
    std::map<std::string, size_t> last_use;
    for (size_t i = 0; i < b.size(); ++i) {
      NamesRead r;
      r.include(b[i]);
      for (const std::string& n : r.names) last_use[n] = i;
    }
    std::map<std::string, int64_t> defined;  // local: its registers
    int64_t most = outside;
    for (size_t i = 0; i < b.size(); ++i) {
      int64_t live = outside;
      for (auto it = defined.begin(); it != defined.end();) {
        auto u = last_use.find(it->first);
        if (u == last_use.end() || u->second < i) {
          it = defined.erase(it);
        } else {
          live += it->second;
          ++it;
        }
      }
      most = std::max(most, stmt(b[i], live));
      if (auto l = b[i].as<Let>()) defined[l->name] = width(l->value->type.dtype);
      if (auto d = b[i].as<Decl>(); d && d->type.is_scalar()) defined[d->name] = width(d->type.dtype);
      if (auto r = b[i].as<BlockReduce>()) defined[r->name] = 1;
      if (auto a = b[i].as<Allocate>(); a && a->space == MemorySpace::Local) defined[a->name] = private_registers(*a);
    }
    return most;
  }

 private:
  // A thread-private array's registers: its bytes, or, in a GPU block loop
  // outside the thread loops, one row of it (its first axis the threads).
  int64_t private_registers(const Allocate& a) const {
    int64_t bytes = allocation_bytes(a);
    if (bytes < 0) return 0;  // sized at run time: in local memory whatever is fused
    if (in_block_ > 0 && in_thread_ == 0 && !a.type.shape.empty()) {
      const IntImm* rows = a.type.shape[0].as<IntImm>();
      if (rows && rows->value > 0) bytes /= rows->value;
    }
    return (bytes + 3) / 4;
  }

  int64_t stmt(const Stmt& s, int64_t live) {
    auto e = [&](const Expr& x) { return x.defined() ? live + expression_registers(x) : live; };
    switch (s->kind) {
      case StmtKind::For: {
        auto f = s.as<For>();
        bool block_loop = f->loop_kind == LoopKind::GpuBlock, thread_loop = f->loop_kind == LoopKind::GpuThread;
        in_block_ += block_loop;
        in_thread_ += thread_loop;
        int64_t inside = block(f->body, live + width(f->lo->type.dtype) + 1);  // the variable and its bound
        in_block_ -= block_loop;
        in_thread_ -= thread_loop;
        return std::max({e(f->lo), e(f->hi), inside});
      }
      case StmtKind::If: {
        auto i = s.as<If>();
        return std::max({e(i->cond), block(i->then_body, live), block(i->else_body, live)});
      }
      case StmtKind::Let: return e(s.as<Let>()->value);
      case StmtKind::Decl: return e(s.as<Decl>()->init);
      case StmtKind::Assign: return e(s.as<Assign>()->value);
      case StmtKind::Check: return e(s.as<Check>()->cond);
      case StmtKind::Store: {
        auto st = s.as<Store>();
        std::vector<std::pair<int64_t, int64_t>> need{operand(st->value)};
        for (const AxisSel& a : st->axes)
          if (!a.is_slice) need.push_back(operand(a.index));
        return live + operands(need, 0);
      }
      case StmtKind::Yield: {
        auto y = s.as<Yield>();
        std::vector<std::pair<int64_t, int64_t>> need{operand(y->value)};
        if (y->index.defined()) need.push_back(operand(y->index));
        for (const Expr& o : y->out_index) need.push_back(operand(o));
        return live + operands(need, 0);
      }
      case StmtKind::Atomic: {
        auto a = s.as<Atomic>();
        std::vector<std::pair<int64_t, int64_t>> need{operand(a->value)};
        for (const Expr& i : a->index) need.push_back(operand(i));
        return live + operands(need, 0);
      }
      case StmtKind::WarpgroupProduct: return block(s.as<WarpgroupProduct>()->epilogue, live);
      case StmtKind::WarpgroupAttention: return block(s.as<WarpgroupAttention>()->epilogue, live);
      default: return live;
    }
  }

  int in_block_ = 0, in_thread_ = 0;
};

}  // namespace

int64_t expression_registers(const Expr& e) {
  if (!e.defined()) return 0;
  const int64_t result = width(e->type.dtype);
  switch (e->kind) {
    case ExprKind::IntImm:
    case ExprKind::FloatImm:
    case ExprKind::BoolImm:
    case ExprKind::Var:
    case ExprKind::GpuIndex: return result;
    case ExprKind::Cast: return std::max(result, expression_registers(e.as<Cast>()->value));
    case ExprKind::Unary: return std::max(result, expression_registers(e.as<Unary>()->a));
    case ExprKind::Binary: {
      auto b = e.as<Binary>();
      return operands({operand(b->a), operand(b->b)}, result);
    }
    case ExprKind::Select: {
      auto s = e.as<Select>();
      return operands({operand(s->cond), operand(s->t), operand(s->f)}, result);
    }
    case ExprKind::Math: {
      std::vector<std::pair<int64_t, int64_t>> need;
      for (const Expr& a : e.as<Math>()->args) need.push_back(operand(a));
      return operands(std::move(need), result);
    }
    case ExprKind::Access: {
      std::vector<std::pair<int64_t, int64_t>> need;
      for (const AxisSel& a : e.as<Access>()->axes) {
        if (a.is_slice) {
          need.push_back(operand(a.lo));
          need.push_back(operand(a.hi));
        } else {
          need.push_back(operand(a.index));
        }
      }
      return operands(std::move(need), result);
    }
    default: return result;  // tile values: scalarized before a GPU plan
  }
}

int64_t estimated_registers(const Kernel& k) { return Pressure().block(k.body, 0); }

}  // namespace zyntax::cir
