#include "plan/kernel_support.hpp"

#include <map>

#include "cir/printer.hpp"
#include "cir/storage_buffers.hpp"

namespace zyntax {

namespace {

using cir::Expr;

// Local arrays of a CPU kernel: on the stack, or from 256 KiB on the heap.
constexpr int64_t kMaxCpuLocalArrayBytes = int64_t{1} << 30;

// One walk over the kernel for both kinds of target (`gpu` null: a CPU).
class SupportCheck {
 public:
  explicit SupportCheck(const GpuTarget* gpu) : gpu_(gpu) {}

  std::optional<std::string> run(const cir::Kernel& k) {
    for (const cir::Param& p : k.params) dtypes_[p.name] = p.type.dtype;
    block(k.body);
    return reason_;
  }

  int64_t shared_bytes() const { return shared_bytes_; }

 private:
  void fail(std::string why) {
    if (!reason_) reason_ = std::move(why);
  }

  void expr(const Expr& e) {
    if (!e.defined() || reason_) return;
    if (!e->type.is_scalar()) return fail("tile values (" + cir::print(e) + ")");
    switch (e->kind) {
      case cir::ExprKind::GpuIndex: return fail("GPU thread coordinates");
      case cir::ExprKind::Dot:
      case cir::ExprKind::Reduce:
      case cir::ExprKind::MatMul:
      case cir::ExprKind::Transpose:
      case cir::ExprKind::Fill: return fail("tile operations (" + cir::print(e) + ")");
      case cir::ExprKind::Access:
        for (const cir::AxisSel& a : e.as<cir::Access>()->axes) {
          if (a.is_slice) return fail("slices");
          expr(a.index);
        }
        return;
      case cir::ExprKind::Cast: return expr(e.as<cir::Cast>()->value);
      case cir::ExprKind::Unary: return expr(e.as<cir::Unary>()->a);
      case cir::ExprKind::Binary:
        expr(e.as<cir::Binary>()->a);
        return expr(e.as<cir::Binary>()->b);
      case cir::ExprKind::Select:
        expr(e.as<cir::Select>()->cond);
        expr(e.as<cir::Select>()->t);
        return expr(e.as<cir::Select>()->f);
      case cir::ExprKind::Math:
        for (const Expr& a : e.as<cir::Math>()->args) expr(a);
        return;
      default: return;
    }
  }

  void allocate(const cir::Allocate& a) {
    dtypes_[a.name] = a.type.dtype;
    if (a.space == cir::MemorySpace::Fragment) {
      // Registers spread over the block's subgroups, not memory.
      if (!gpu_ || !gpu_->matrix_units.any()) fail("tensor-core fragments");
      return;
    }
    int64_t n = cir::allocation_bytes(a);
    if (n < 0) return fail("arrays of non-constant size");
    if (n > kMaxCpuLocalArrayBytes) return fail("local arrays larger than 1 GiB");
    bool block_shared = a.space == cir::MemorySpace::Shared && gpu_block_depth_ > 0;  // the block's, not a thread's
    if (gpu_ && !block_shared && n > gpu_->private_memory_per_thread)
      return fail("local arrays larger than " + std::to_string(gpu_->private_memory_per_thread >> 10) + " KiB per GPU thread");
    if (gpu_ && a.space == cir::MemorySpace::Shared && gpu_block_depth_ > 0) {
      // A block's shared array: a placed one where the schedule put it; else after the others.
      int64_t end = a.offset >= 0 ? a.offset + cir::shared_footprint(n) : shared_bytes_ + cir::shared_footprint(n);
      shared_bytes_ = std::max(shared_bytes_, end);
      if (shared_bytes_ > gpu_->shared_memory_max)
        fail("more than " + std::to_string(gpu_->shared_memory_max >> 10) + " KiB of shared memory per GPU block");
    }
  }

  void block(const cir::Block& b) {
    for (const cir::Stmt& s : b) {
      if (reason_) return;
      switch (s->kind) {
        case cir::StmtKind::For: {
          auto f = s.as<cir::For>();
          expr(f->lo);
          expr(f->hi);
          expr(f->step);
          bool gpu_block = f->loop_kind == cir::LoopKind::GpuBlock;
          gpu_block_depth_ += gpu_block;
          block(f->body);
          gpu_block_depth_ -= gpu_block;
          break;
        }
        case cir::StmtKind::If:
          expr(s.as<cir::If>()->cond);
          block(s.as<cir::If>()->then_body);
          block(s.as<cir::If>()->else_body);
          break;
        case cir::StmtKind::Let: expr(s.as<cir::Let>()->value); break;
        case cir::StmtKind::Decl:
          if (!s.as<cir::Decl>()->type.is_scalar()) fail("tile variables");
          expr(s.as<cir::Decl>()->init);
          break;
        case cir::StmtKind::Assign: expr(s.as<cir::Assign>()->value); break;
        case cir::StmtKind::Store: {
          auto st = s.as<cir::Store>();
          if (st->axes.empty()) fail("whole-tile stores");
          for (const cir::AxisSel& a : st->axes) {
            if (a.is_slice) fail("slices");
            expr(a.index);
          }
          expr(st->value);
          break;
        }
        case cir::StmtKind::Yield:
          expr(s.as<cir::Yield>()->value);
          expr(s.as<cir::Yield>()->index);
          for (const Expr& e : s.as<cir::Yield>()->out_index) expr(e);
          break;
        case cir::StmtKind::Allocate: allocate(*s.as<cir::Allocate>()); break;
        case cir::StmtKind::Barrier: break;
        case cir::StmtKind::Check: expr(s.as<cir::Check>()->cond); break;
        case cir::StmtKind::BlockReduce:
          if (!gpu_) return fail("GPU block reductions");
          expr(s.as<cir::BlockReduce>()->count);
          break;
        case cir::StmtKind::TileMma:
          if (!gpu_ || !gpu_->matrix_units.any()) return fail("tensor-core tile products");
          break;
        case cir::StmtKind::WarpgroupProduct: {
          if (!gpu_ || !gpu_->warpgroup_mma || !gpu_->tensor_copies) return fail("warpgroup matrix products with tensor copies");
          auto p = s.as<cir::WarpgroupProduct>();
          expr(p->first_tile);
          expr(p->tile_stride);
          block(p->epilogue);
          break;
        }
        case cir::StmtKind::WarpgroupAttention: {
          if (!gpu_ || !gpu_->warpgroup_mma || !gpu_->tensor_copies) return fail("warpgroup attention with tensor copies");
          auto a = s.as<cir::WarpgroupAttention>();
          expr(a->first_tile);
          expr(a->tile_stride);
          block(a->epilogue);
          break;
        }
        case cir::StmtKind::AsyncCopy: {
          if (!gpu_ || !gpu_->async_copy) return fail("asynchronous copies");
          auto c = s.as<cir::AsyncCopy>();
          if (c->step != cir::AsyncCopy::Step::Start) break;
          expr(c->dst_index);
          expr(c->valid);
          for (const Expr& e : c->src_index) expr(e);
          break;
        }
        case cir::StmtKind::Atomic: {
          auto a = s.as<cir::Atomic>();
          auto it = dtypes_.find(a->buffer);
          if (gpu_ && a->scope == cir::FenceScope::System) {
            if (!gpu_->atomics.system_scope) return fail("system-scope atomics");
            if (it != dtypes_.end() && static_cast<int>(dtype_size(it->second)) < gpu_->atomics.system_scope_min_bytes)
              return fail("system-scope atomics on elements of fewer than " + std::to_string(gpu_->atomics.system_scope_min_bytes) +
                          " bytes");
          }
          for (const Expr& e : a->index) expr(e);
          expr(a->value);
          break;
        }
        case cir::StmtKind::MatMulBlock: {
          if (gpu_) return fail("CPU register blocks");
          auto m = s.as<cir::MatMulBlock>();
          if (m->rows > 32 || m->cols > 256) return fail("register blocks larger than 32x256");
          for (const Expr& e : {m->a_offset, m->a_row_stride, m->a_k_stride, m->b_offset, m->ldb, m->kc, m->ldc, m->m_valid, m->n_valid,
                                m->accumulate})
            expr(e);
          for (const Expr& e : m->c_index) expr(e);
          break;
        }
      }
    }
  }

  const GpuTarget* gpu_;
  int gpu_block_depth_ = 0;
  int64_t shared_bytes_ = 0;
  std::map<std::string, DType> dtypes_;  // of the kernel's buffers and arrays
  std::optional<std::string> reason_;
};

// The shared arrays of GPU blocks, laid out as the emitters lay them out.
void add_shared_bytes(const cir::Block& b, int block_depth, int64_t& bytes) {
  for (const cir::Stmt& s : b) {
    if (auto f = s.as<cir::For>()) {
      add_shared_bytes(f->body, block_depth + (f->loop_kind == cir::LoopKind::GpuBlock), bytes);
    } else if (auto i = s.as<cir::If>()) {
      add_shared_bytes(i->then_body, block_depth, bytes);
      add_shared_bytes(i->else_body, block_depth, bytes);
    } else if (auto a = s.as<cir::Allocate>(); a && a->space == cir::MemorySpace::Shared && block_depth > 0) {
      int64_t n = cir::allocation_bytes(*a);
      if (n < 0) continue;
      bytes = std::max(bytes, (a->offset >= 0 ? a->offset : bytes) + cir::shared_footprint(n));
    }
  }
}

}  // namespace

std::optional<std::string> cpu_unsupported_reason(const cir::Kernel& k) { return SupportCheck(nullptr).run(k); }

GpuSupport gpu_support(const cir::Kernel& k, const GpuTarget& target) {
  SupportCheck c(&target);
  GpuSupport s;
  s.why_not = c.run(k);
  s.shared_bytes = c.shared_bytes();
  if (!s.why_not) {
    std::string excess = cir::gpu_binding_excess(k, target);
    if (!excess.empty()) s.why_not = "it would " + excess;
  }
  return s;
}

int64_t gpu_shared_bytes(const cir::Kernel& k) {
  int64_t bytes = 0;
  add_shared_bytes(k.body, 0, bytes);
  return bytes;
}

}  // namespace zyntax
