#include "cir/passes/group_thread_elements.hpp"

#include <algorithm>

#include "cir/passes/gpu_loops.hpp"
#include "cir/verifier.hpp"
#include "cir/visitor.hpp"

namespace zyntax::cir {

namespace {

// Whether a loop body is plain element code: no loops, arrays, yields or
// statements of GPU schedules.
bool plain_elements(const Block& body) {
  struct Check : IRVisitor {
    bool ok = true;
    using IRVisitor::visit;
    void visit(const For*) override { ok = false; }
    void visit(const Allocate*) override { ok = false; }
    void visit(const Yield*) override { ok = false; }
    void visit(const Barrier*) override { ok = false; }
    void visit(const Atomic*) override { ok = false; }
    void visit(const BlockReduce*) override { ok = false; }
    void visit(const TileMma*) override { ok = false; }
    void visit(const AsyncCopy*) override { ok = false; }
    void visit(const MatMulBlock*) override { ok = false; }
  } check;
  check.include(body);
  return check.ok;
}

}  // namespace

int thread_element_width(const Kernel& k, int vector_bytes) {
  size_t widest = 1;
  for (const Param& p : k.params)
    if (p.role != ParamRole::Scalar) widest = std::max(widest, dtype_size(p.type.dtype));
  return static_cast<int>(std::max<size_t>(1, static_cast<size_t>(vector_bytes) / widest));
}

Kernel group_thread_elements(const Kernel& k, int width) {
  const For* loop = k.body.size() == 1 ? k.body[0].as<For>() : nullptr;
  if (width <= 1 || k.kind == KernelKind::Reduce || !loop || loop->loop_kind != LoopKind::Parallel) return k;
  const IntImm* lo = loop->lo.as<IntImm>();
  const IntImm* hi = loop->hi.as<IntImm>();
  const IntImm* step = loop->step.as<IntImm>();
  if (!lo || !hi || !step || lo->value != 0 || step->value != 1 || hi->value < width || hi->value % width) return k;
  if (!plain_elements(loop->body)) return k;
  FreshNames fresh(k);
  std::string q = fresh(loop->var + "%g"), u = fresh(loop->var + "%u");
  Block body = {make_let(loop->var, index_var(q) * i64(width) + index_var(u), loop->span)};
  body.insert(body.end(), loop->body.begin(), loop->body.end());
  Stmt group = make_for(u, i64(0), i64(width), i64(1), std::move(body), LoopKind::Unrolled, width, loop->span);
  Kernel out = k;
  out.body = {make_for(q, i64(0), i64(hi->value / width), i64(1), {group}, LoopKind::Parallel, 0, loop->span)};
  verify_or_throw(out, "group_thread_elements");
  return out;
}

}  // namespace zyntax::cir
