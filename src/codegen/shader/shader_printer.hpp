// The shader printer: one walk over a kernel planned for a GPU target
// (plan/gpu_plan) that writes it as a compute shader, shared by the GLSL,
// WGSL and MSL backends. The walk owns what every shading language does
// alike: statements and expressions in order, each intermediate value a
// named temporary; runtime checks that record a failed check's id in the
// status word and never leave an invocation early (every barrier is then
// reached by the whole workgroup); bounds-checked element offsets; loops
// over the grid, the block's threads or serially; block reductions over
// subgroup shuffles or halving strides in workgroup memory.
//
// A dialect (a subclass) says how its language spells what differs:
// types and declarations, constants, conversions, arithmetic and math
// functions, how elements are loaded from and stored to bound buffers,
// builtins, barriers, atomics, and the module around the body. Models:
// Halide's CodeGen_GPU_C and tinygrad's C-style renderers.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cir/ir.hpp"
#include "cir/visitor.hpp"
#include "codegen/llvm/ir_emitter.hpp"

namespace zyntax::codegen {

// One value the host writes into a shader's scalar block (GLSL's push
// constants, MSL's argument struct): a scalar param's or a dimension's.
struct ShaderScalar {
  enum class Source { Scalar, Dim } source;
  size_t index = 0;       // the kernel's param (Scalar) or dim (Dim) index
  DType as = DType::I64;  // how it is stored
  uint32_t offset = 0;    // bytes
};

// A CIR name as a shader identifier (CIR names hold '%' and '.').
std::string shader_identifier(const std::string& name);

// What no shader backend writes (tile values, tensor-core and CPU
// schedules): the shared part of each dialect's "why not" visitor.
class ShaderSupport : public cir::IRVisitor {
 public:
  const std::optional<std::string>& why() const { return why_; }

 protected:
  void fail(std::string why) {
    if (!why_) why_ = std::move(why);
  }

  using IRVisitor::visit;
  void visit(const cir::GpuIndex*) override { fail("GPU thread coordinates"); }
  void visit(const cir::Dot*) override { fail("tile operations"); }
  void visit(const cir::Reduce*) override { fail("tile operations"); }
  void visit(const cir::MatMul*) override { fail("tile operations"); }
  void visit(const cir::Transpose*) override { fail("tile operations"); }
  void visit(const cir::Fill*) override { fail("tile operations"); }
  void visit(const cir::TileMma*) override { fail("tensor-core tile products"); }
  void visit(const cir::WarpgroupProduct*) override { fail("warpgroup matrix products"); }
  void visit(const cir::WarpgroupAttention*) override { fail("warpgroup attention"); }
  void visit(const cir::AsyncCopy*) override { fail("asynchronous copies"); }
  void visit(const cir::MatMulBlock*) override { fail("CPU register blocks"); }
  void visit(const cir::Access* op) override;
  void visit(const cir::Store* op) override;
  void visit(const cir::For* op) override;
  // A GPU block's shared array of `bytes`, each its own (shading languages'
  // arrays cannot share bytes): fails once they take more than `limit`.
  void count_shared(const cir::Allocate* op, int64_t bytes, int64_t limit, const std::string& language);

  int block_depth_ = 0;  // GPU block loops around
  int64_t shared_bytes_ = 0;

 private:
  std::optional<std::string> why_;
};

class ShaderPrinter {
 public:
  ShaderPrinter(const cir::Kernel& k, int threads) : k_(k), threads_(threads) {}
  virtual ~ShaderPrinter() = default;

 protected:
  // An array the shader indexes: a bound tensor (or reduce buffer), a
  // workgroup array or an invocation's own.
  struct Buffer {
    std::string name;  // the array to index
    cir::Type type;
    bool tensor = false;          // bound by the host: elements in their memory form
    bool output = false;          // written by the kernel (WGSL: words of atomic<u32>)
    bool thread_private = false;  // a GPU block's local array: each invocation its own row
    std::string bits;             // the same memory as unsigned words, for atomics (GLSL, MSL)
  };
  struct Value {
    std::string text;
    DType dtype;
  };
  enum class Stride { Serial, Grid, Block, Thread };
  // How a name is declared: a value never assigned again or a variable;
  // "plain" ones are the printer's own bookkeeping (GLSL: never `precise`).
  enum class Declare { Value, Variable, PlainValue, PlainVariable };

  // ---------------------------------------------------------- the walk

  // The kernel's body: the parallel loop shared over the grid's
  // invocations, the scheduled block and thread loops as they stand, or
  // one invocation running it all.
  void body();
  void block(const cir::Block& blk);
  void stmt(const cir::Stmt& s);
  std::string expr(const cir::Expr& e);
  std::string binary(const cir::Binary& bin);
  std::string compare(BinaryOp op, DType t, const std::string& a, const std::string& c);
  std::string min_max(bool is_min, DType t, const std::string& a, const std::string& c);
  std::string truthy(const std::string& v, DType t);
  std::string scalar_constant(const Scalar& s, DType t);
  // An f32 value rounded to f16 or bf16 (to nearest, ties to even), as the
  // reference rounds after every operation; the helpers say how.
  std::string round_to(DType t, const std::string& v);
  virtual std::string rounded_f16(const std::string& v) { return "zy_f16(" + v + ")"; }
  virtual std::string rounded_bf16(const std::string& v) { return "zy_bf16(" + v + ")"; }

  // Row-major offset of an element, each index checked against its axis;
  // where one is out of bounds, the offset of element 0 (harmless) and
  // `*ok_out` false.
  std::string element_offset(const Buffer& b, const std::vector<cir::AxisSel>& axes, Span span, const std::string& name, bool write,
                             std::string* ok_out = nullptr);
  // The same over `indices` of `b` from axis `first`, the check's message given.
  std::string flat_offset(const Buffer& b, const std::vector<cir::Expr>& indices, size_t first, Span span, const std::string& message,
                          std::string* ok_out);

  void emit_for(const cir::For& f, Stride how);
  void emit_yield(const cir::Yield& y);
  void emit_atomic(const cir::Atomic& a);
  // What an atomic update leaves in an element that held `cur`.
  std::string atomic_combine(const cir::Atomic& a, DType t, const std::string& cur, const std::string& x);
  // `both` (a bool: the operands' truth and-ed or or-ed) as a value of dtype t.
  virtual std::string logical(DType t, const std::string& both, Span span) { return convert(both, DType::Bool, t, span); }
  void emit_block_reduce(const cir::BlockReduce& r);
  void allocate(const cir::Allocate& a);

  // ---------------------------------------------------------- the shader's interface

  // A reduce kernel's buffers after its tensors, in order: the accumulator
  // (argmin/argmax: the index), then the best value and whether there was
  // one; nothing for other kernels.
  void each_reduce_buffer(const std::function<void(const char* key, DType t)>& bind);
  // The scalars, then the sizes, in one block, each aligned to its size (as
  // C lays out a struct) and stored as `as_of` says; `declare` writes each
  // field. Their values read it (`args.<name>`). Returns the bytes taken.
  uint32_t scalar_block(std::vector<ShaderScalar>& fields, const std::function<DType(DType)>& as_of,
                        const std::function<void(const ShaderScalar&, const std::string& name)>& declare);

  // ---------------------------------------------------------- output

  void line(const std::string& s);
  // A new temporary holding `value` (of dtype t); its name.
  std::string temp(DType t, const std::string& value);
  std::string fresh(const std::string& base) { return base + std::to_string(temp_++); }
  // Records a runtime check's failure site; `ok` is the expression that holds when it passes.
  void check(const std::string& ok, Span span, const std::string& what);
  const Buffer& buffer(const std::string& name);
  [[noreturn]] void unsupported(const std::string& what) const;

  // ---------------------------------------------------------- the dialect

  virtual const char* language() const = 0;  // for internal errors: "GLSL"
  virtual std::string type_name(DType t) const = 0;  // of a value in registers
  virtual std::string local_name(const std::string& cir_name) { return shader_identifier(cir_name); }
  virtual std::string declaration(DType t, const std::string& name, const std::string& value, Declare how) = 0;
  // `statement` run where `cond` holds.
  virtual std::string guarded(const std::string& cond, const std::string& statement) = 0;
  virtual std::string fail_call(int id) { return "zy_fail(" + std::to_string(id) + "u);"; }  // records check `id` failed
  virtual std::string first_invocation() = 0;  // the grid's first invocation
  virtual std::string barrier() = 0;           // the workgroup meets, its memory writes seen
  virtual std::string shared_barrier() = 0;    // the same for workgroup memory alone
  virtual std::string local_id() = 0;          // the invocation's index in its workgroup
  virtual std::string workgroup_size() = 0;

  virtual std::string int_constant(int64_t v, DType t) = 0;
  virtual std::string float_constant(double v, DType t) = 0;
  virtual std::string zero(DType t) = 0;
  virtual std::string convert(const std::string& v, DType from, DType to, Span span) = 0;
  virtual std::string select(const std::string& cond, const std::string& t, const std::string& f) = 0;
  virtual std::string negate(DType t, const std::string& a, Span span) = 0;  // a temporary
  virtual std::string bool_to_int(const std::string& v) = 0;
  virtual std::string float_min_max(bool is_min, DType t, const std::string& a, const std::string& c) = 0;
  // `a op c` in dtype t: an expression (GLSL, MSL) or a temporary (WGSL);
  // arith_value makes it a temporary either way.
  virtual std::string arith(BinaryOp op, DType t, const std::string& a, const std::string& c, Span span) = 0;
  virtual std::string arith_value(BinaryOp op, DType t, const std::string& a, const std::string& c, Span span) {
    return temp(t, arith(op, t, a, c, span));
  }
  virtual std::string math(const cir::Math& m) = 0;  // a temporary

  // Bound tensors: the element at `off` as a register value; a register
  // value stored there where `ok`.
  virtual std::string load(const Buffer& b, const std::string& off, Span span) = 0;
  virtual void store(const Buffer& b, const std::string& off, const std::string& ok, const std::string& v) = 0;

  // Index arithmetic: an index value of CIR (i64) in the dialect's index
  // type, an axis's extent and index, the bounds test, the first offset
  // and the offset used where a check failed.
  virtual std::string index_value(const std::string& v) = 0;
  virtual std::string index_literal(int64_t v) = 0;
  virtual std::string axis_extent(const std::string& v) = 0;
  virtual std::string axis_index(const std::string& v) = 0;
  virtual std::string in_bounds(const std::string& index, const std::string& extent) = 0;
  virtual std::string offset_origin() = 0;
  virtual std::string guarded_offset(const std::string& ok, const std::string& offset) = 0;

  // Loops: the trip count (a temporary), where an invocation starts and its
  // stride, the loop header(s) over k (returning k and the loops opened),
  // and the loop variable's value.
  struct LoopHeader {
    std::string k;
    int opened = 1;
  };
  virtual std::string trip_count(const std::string& lo, const std::string& hi, const std::string& step, const std::string& runs) = 0;
  virtual std::pair<std::string, std::string> loop_start(Stride how) = 0;
  virtual LoopHeader loop_header(const cir::For& f, Stride how, const std::string& trips, const std::string& first, const std::string& stride) = 0;
  virtual std::string loop_variable(const std::string& lo, const std::string& k, const std::string& step) = 0;

  // Arrays: workgroup memory (at module scope), an invocation's own, and
  // the zero fill of an invocation's copy of a shared array.
  // Returns the array's view as atomic words where the dialect needs one ("" otherwise).
  virtual std::string shared_array(DType t, const std::string& name, uint64_t n) = 0;
  virtual std::string local_array(DType t, const std::string& name, uint64_t n) = 0;
  virtual void zero_fill(DType, const std::string&, uint64_t) {}

  // Reductions and atomics.
  virtual void yield_arg(const cir::Yield& y, const std::string& off, const std::string& v) = 0;
  virtual void yield_fold(const cir::Yield& y, const std::string& off, const std::string& v) = 0;
  virtual void atomic_update(const cir::Atomic& a, const Buffer& b, const std::string& off, const std::string& x) = 0;
  // Block reductions: the invocation's elements folded (for over `i` below `count`),
  // then either subgroup shuffles (where the target has them) or halving strides.
  virtual std::string block_count(const std::string& count) = 0;
  virtual std::string block_loop(const std::string& i, const std::string& count) = 0;
  virtual std::string array_at(const std::string& array, const std::string& i) = 0;
  virtual std::string halving_loop(const std::string& s, int half) = 0;
  // Without subgroup shuffles: the workgroup array the halving strides fold.
  virtual std::string tree_scratch(DType t, const std::string& scratch) = 0;
  // With them (`subgroup_shuffles` of the target): halving offsets within
  // a subgroup, the value of the lane whose index differs in `offset`'s
  // bit, the lane's and the subgroup's index, and a loop over the subgroups.
  virtual bool has_shuffles() const = 0;
  virtual std::string subgroup_halving_loop(const std::string&) { unsupported("subgroup shuffles"); }
  virtual std::string shuffle_xor(const std::string&, DType, const std::string&) { unsupported("subgroup shuffles"); }
  virtual std::string subgroup_lane() { unsupported("subgroup shuffles"); }
  virtual std::string subgroup_index() { unsupported("subgroup shuffles"); }
  virtual std::string subgroup_loop(const std::string&) { unsupported("subgroup shuffles"); }

  const cir::Kernel& k_;
  int threads_;
  std::ostringstream body_, shared_;
  int indent_ = 1;
  int temp_ = 0;
  int block_depth_ = 0, thread_depth_ = 0;
  std::string task_var_;  // a reduce kernel's grid-stride loop variable
  std::map<std::string, Buffer> bufs_;
  std::map<std::string, Value> values_;
  std::set<std::string> helpers_;   // the dialect's own helper functions the shader calls
  std::set<std::string> library_;   // helpers of codegen/shader/f32_math the shader calls
  int helper_calls_ = 0;
  std::vector<CheckSite> sites_;
};

}  // namespace zyntax::codegen
