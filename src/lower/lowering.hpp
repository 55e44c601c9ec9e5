// The lowering of one compute block to CIR (internal to lower/;
// kernel_lowering.hpp is its public face). One Lowering walks the block's
// body, resolving names, typing expressions and recording how loops index
// the inputs; its steps live in files by concept:
//
//   kernel_lowering.cpp    the walk to a fixpoint, dimensions bound, the kernel assembled
//   lower_names.cpp        symbols, scopes, the inputs' and output's types, type inference
//   lower_statements.cpp   let, assignments, stores, loops, yields, shared arrays
//   lower_expressions.cpp  names, host values, operators, indexing
//   lower_calls.cpp        math functions, casts, reductions, fills
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cir/ir.hpp"
#include "cir/substitute.hpp"
#include "lower/kernel_lowering.hpp"

namespace zyntax::lowering {

using cir::Expr;

// A lowered expression. `weak` marks literals and host numbers: they take the
// type of whatever they are combined with (`x[i] * 0.5` stays f32).
struct Value {
  Expr e;
  bool weak = false;
  bool ok() const { return e.defined(); }
  DType dtype() const { return e->type.dtype; }
  bool is_tile() const { return !e->type.is_scalar(); }
  size_t rank() const { return e->type.rank(); }
};

enum class SymKind { Local, Loop, Shared };

struct Symbol {
  std::string name;      // as written
  std::string cir_name;  // unique in the kernel
  SymKind kind = SymKind::Local;
  bool is_mutable = false;
  Span decl;
  const Symbol* shadows = nullptr;  // the symbol of the same name it hides
  const void* key = nullptr;        // the declaring AST node: the key of its inferred type
  cir::Type type;
  bool weak = false;
  // Loop variables: the range, and the bare name of the upper bound if it has one.
  Expr lo, hi, step;
  std::string bound_name;
};

// What is inferred about a variable across iterations (see run()).
struct Inferred {
  DType dtype = DType::F64;
  bool weak = true;
  std::vector<Expr> shape;  // from the first tile assigned
  bool tile = false;

  bool same(const Inferred& o) const {
    return dtype == o.dtype && weak == o.weak && tile == o.tile && shape.size() == o.shape.size();
  }
};

struct IndexSite {
  size_t input;
  int axis;
  const Symbol* loop;
  Span span;
};

inline const char* kKernelFunctions =
    "math functions (exp, log, sqrt, rsqrt, tanh, relu, gelu, sigmoid, silu, min, max, pow, ...), dot, reduce, "
    "row_max, row_min, row_sum, transpose, zeros, ones, full, where, barrier, and casts such as f32(x)";

inline std::string axes_text(size_t n) { return std::to_string(n) + (n == 1 ? " axis" : " axes"); }

inline DType default_of(DType t) { return is_float(t) ? DType::F32 : DType::I64; }

class Lowering {
 public:
  Lowering(const ast::Compute& c, std::string name, const std::vector<InputSignature>& sigs, const HostEnv& host)
      : node_(c), name_(std::move(name)), sigs_(sigs), host_(host) {}

  std::optional<LoweredCompute> run(DiagnosticEngine& diags);

 private:

  // An input axis named during this iteration (`q.d1` became `seq`): shapes
  // inferred under the old name take the new one, or a `var` typed from the
  // previous iteration would keep naming a dimension the kernel no longer has.
  void rename_inferred_dims(const std::vector<std::vector<std::string>>& names_before);

  bool check_inputs(DiagnosticEngine& diags);
  std::optional<size_t> reduced_loop(size_t loops) const;

  int implied_rank(const std::string& path);

  template <class F>
  static void visit_exprs(const ast::Block& b, F&& f);

  void reset();

  void lower_body(DiagnosticEngine& diags, bool final);

  void error_if_final(Span s, const std::string& msg) {
    if (final_) diags_->error(s, msg);
  }

  std::string fresh_name(const std::string& base);

  Symbol* declare(const std::string& name, SymKind kind, Span decl, const void* key);

  Symbol* lookup_local(const std::string& name) const;

  int input_index(const std::string& path) const;

  // The CIR type of input i: its dims are named by how the kernel binds them.
  cir::Type input_type(size_t i) const;

  std::string axis_name(size_t i, size_t a) const { return axis_name_in(axis_names_, i, a); }

  // An axis the body has not named is `input.dN`.
  std::string axis_name_in(const std::vector<std::vector<std::string>>& names, size_t i, size_t a) const {
    return names[i][a].empty() ? sigs_[i].path + ".d" + std::to_string(a) : names[i][a];
  }

  cir::Type out_type() const;

  // A read of `out` (`out[k] += x[i]`): before any store has typed it, a
  // weak integer, which takes the type of what it meets, so that the read
  // does not decide the type the stores give; a weak type stays weak.
  Value out_read(std::vector<cir::AxisSel> axes, Span span) const;

  bool same_inferred() const;

  // What the previous iteration inferred for a variable, `out` or a shared array.
  const Inferred* previous(const void* key) const;

  static DType resolved(const Inferred& inf) { return inf.weak ? default_of(inf.dtype) : inf.dtype; }

  // Records a value assigned to a variable (or to `out`, or a shared array):
  // its type joins what this iteration saw before.
  void record(const void* key, const Value& v);

  static Value cast_to(const Value& v, DType t);

  static Expr literal(const Scalar& s, Span span);

  // Brings two operands to one dtype. Weak operands adopt the other's type;
  // a weak float meeting an integer gives f32.
  static DType unify(const Value& a, const Value& b, bool& weak);

  Value to_bool(const Value& v, Span span);

  Value binary(BinaryOp op, Value a, Value b, Span span);

  cir::Block lower_block(const ast::Block& b);

  void lower_stmt(const ast::Stmt& s, cir::Block& out);

  void lower_let(const ast::Let& l, cir::Block& out);

  // The shape a tile variable is declared with, from a later assignment's
  // tile, with lets replaced by their values. Null if it needs a name not
  // visible at the declaration (declared later, or a variable of an inner loop).
  std::optional<std::vector<Expr>> visible_shape(const std::vector<Expr>& shape);

  bool names_visible(const Expr& e) const;

  void lower_assign(const ast::Assign& a, cir::Block& out);

  Value read_out_whole(Span span) { return out_read({}, span); }

  Value read_buffer(const std::string& name, const cir::Type& type, const std::vector<cir::AxisSel>& axes, Span span);

  void store_out(std::vector<cir::AxisSel> axes, const Value& v, Span span, cir::Block& out);

  void lower_expr_stmt(const ast::ExprStmt& s, cir::Block& out);

  void lower_for(const ast::For& f, size_t range_index, cir::Block& out);

  Value int_operand(const ast::Expr& e, const char* what);

  static std::string describe(const Value& v);

  void lower_yield(const ast::Yield& y, cir::Block& out);

  // (v - lo) / step: the position of loop variable v's iteration.
  static Expr normalized_index(const Symbol& loop);

  static Expr trip_count(const Symbol& loop);

  void lower_shared(const ast::SharedVar& s, cir::Block& out);

  // Errors that follow from others (a kernel "never writes" when its store
  // failed, a bound left unbound by a broken index) are not reported again.
  bool other_errors() const { return diags_->error_count() > errors_at_start_; }

  void check_kernel_shape();

  // Names that nothing in scope binds are dimensions if a loop `v in 0..N`
  // indexes an input with `v` directly: then N is that input's extent.
  void bind_dimensions();

  std::optional<int64_t> static_extent(size_t input, int axis) const;

  void report_unbound(const std::string& name);

  Value lower(const ast::Expr& e);

  Value whole_input(size_t i, Span span);

  Value lower_name(const ast::Name& n);

  Value host_value(const std::string& name, const HostBinding& h, Span span);

  Value lower_binary(const ast::Binary& b);

  Value matmul(Value x, Value y, const ast::Binary& b);

  static std::string rank_text(const Value& v);

  std::vector<cir::AxisSel> lower_items(const ast::Index& idx, int input);

  void report_bad_index(const ast::Expr& index, const Value& v);

  Value lower_index(const ast::Index& idx);

  Value lower_call(const ast::Call& c);

  static std::optional<DType> cast_target(const std::string& fn);

  bool arity(const ast::Call& c, size_t n);

  Value lower_math(const ast::Call& c, MathFn fn);

  Value lower_reduce(const ast::Call& c);

  Value lower_fill(const ast::Call& c, const std::string& fn);

  cir::Kernel assemble(DiagnosticEngine& diags);

  // `out = zeros(M, N)` before anything else touches out only gives its
  // shape (for updates at indices read from data, `out[ids[i], j] += ...`):
  // outputs start zeroed. Without it the body is one loop nest, which
  // devices share out.
  static void drop_shape_only_fill(cir::Block& body);

  // The @shared(...) size: host sizes and the kernel's dimensions only.
  Expr shared_bytes(DiagnosticEngine& diags);

  const ast::Compute& node_;

  std::string name_;

  const std::vector<InputSignature>& sigs_;

  const HostEnv& host_;

  SourceManager dummy_sources_;

  KernelAnnotations annotations_;

  std::vector<int> ranks_;

  // Persist across iterations.
  std::map<const void*, Inferred> inferred_, previous_;

  std::vector<std::vector<std::string>> axis_names_;

  std::map<std::string, std::pair<size_t, int>> bound_dims_;

  // Per iteration.
  DiagnosticEngine* diags_ = nullptr;

  size_t errors_at_start_ = 0;

  bool final_ = false;

  std::vector<std::unique_ptr<Symbol>> symbols_;

  std::vector<std::map<std::string, Symbol*>> scopes_;

  std::set<const Symbol*> poisoned_;

  // Scalar lets by CIR name, for tile shapes; kept across iterations, whose
  // names are the same, so a shape can use a let declared further down.
  cir::Substitution let_values_;

  std::set<std::string> local_names_;  // every local's CIR name, in any iteration

  std::map<std::string, std::vector<Span>> unresolved_;
  std::set<std::string> header_vars_;  // while lowering a loop range: its header's variables not yet defined

  std::vector<std::string> unresolved_order_;

  std::set<std::string> range_bounds_;  // bare names used as loop bounds

  std::vector<IndexSite> sites_;

  std::set<std::string> host_dims_;

  std::vector<std::string> host_dims_order_;

  std::map<std::string, DType> scalars_;

  std::vector<std::string> scalars_order_;

  std::set<std::string> used_names_;

  std::vector<const Symbol*> loops_;

  std::optional<std::vector<const Symbol*>> yield_loops_;

  Span yield_span_;

  bool saw_yield_ = false;

  bool saw_out_store_ = false;

  bool saw_statement_ = false;

  cir::Block body_;
};

}  // namespace zyntax::lowering
