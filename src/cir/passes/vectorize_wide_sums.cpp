#include "cir/passes/vectorize_wide_sums.hpp"

#include "cir/mutator.hpp"

namespace zyntax::cir {

namespace {

// `acc = acc + f64(v)` with v of a narrower float type: v's width in bits.
int narrow_sum_bits(const Stmt& s) {
  const Assign* a = s.as<Assign>();
  const Binary* add = a ? a->value.as<Binary>() : nullptr;
  if (!add || add->op != BinaryOp::Add || add->type.dtype != DType::F64) return 0;
  const Var* self = add->a.as<Var>();
  const Cast* wide = add->b.as<Cast>();
  if (!self || self->name != a->name || !wide || !is_float(wide->value->type.dtype)) return 0;
  int bits = static_cast<int>(dtype_size(wide->value->type.dtype)) * 8;
  return bits < 64 ? bits : 0;
}

class Widen : public IRMutator {
 public:
  explicit Widen(int vector_bits) : vector_bits_(vector_bits) {}
  using IRMutator::visit;
  Stmt visit(const For* op) override {
    Stmt s = IRMutator::visit(op);
    const For* f = s.as<For>();
    if (f->loop_kind != LoopKind::Serial) return s;
    int bits = 0;
    for (const Stmt& st : f->body) {
      if (st.as<For>()) return s;  // innermost loops only
      if (int b = narrow_sum_bits(st)) bits = b;
    }
    if (!bits) return s;
    return make_for(f->var, f->lo, f->hi, f->step, f->body, LoopKind::Vectorized, 2 * vector_bits_ / bits, f->span);
  }

 private:
  int vector_bits_;
};

}  // namespace

Kernel vectorize_wide_sums(const Kernel& k, int vector_bits) {
  if (vector_bits < 64) return k;
  Kernel out = k;
  out.body = Widen(vector_bits).mutate(k.body);
  return out;
}

}  // namespace zyntax::cir
