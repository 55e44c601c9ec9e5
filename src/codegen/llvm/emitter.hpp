// The shared CIR → LLVM lowering's state and steps (internal to
// codegen/llvm; ir_emitter.hpp is its public face). One Emitter lowers one
// kernel into one function; its steps live in files by concept:
//
//   emitter.cpp          the walk: entry, statements, checks, local arrays, register blocks
//   emit_values.cpp      types in registers and memory, expressions, arithmetic
//   emit_math.cpp        math functions (inline f32 exp/tanh/erf, libm or the device's library)
//   emit_loops.cpp       loops: ranges, GPU block/thread loops, bounds-check versioning, hints
//   emit_reductions.cpp  reduce kernels' yields and atomic updates
//   emit_gpu.cpp         GPU blocks: shared arrays, block reductions over subgroups
//
// What differs between targets goes through the LlvmTarget hooks
// (llvm_target.hpp); a GPU target's limits come from its GpuTarget.
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cir/ir.hpp"
#include "codegen/llvm/ir_emitter.hpp"
#include "codegen/llvm/llvm_target.hpp"

namespace zyntax::codegen {

class Emitter {
 public:
  Emitter(const cir::Kernel& k, llvm::LLVMContext& ctx, const std::string& name, const LlvmTarget& target);

  EmittedKernel run();

  // A tensor (a parameter or an array) as the lowering addresses it.
  struct Buffer {
    llvm::Value* ptr = nullptr;
    cir::Type type;
  };

  // State a target's hooks keep per kernel (tensor-core fragments' registers, ...).
  struct TargetState {
    virtual ~TargetState() = default;
  };
  template <class State>
  State& target_state() {
    if (!target_state_) target_state_ = std::make_unique<State>();
    return static_cast<State&>(*target_state_);
  }

  // ---- for the targets' entry points (LlvmTarget::emit_entry)

  const cir::Kernel& kernel() const { return k_; }
  const std::string& function_name() const { return name_; }
  llvm::LLVMContext& context() { return ctx_; }
  llvm::Module& module() { return *module_; }
  llvm::IRBuilder<>& builder() { return b_; }
  // The entry block and the exit block (every path leaves through it),
  // with the builder in the entry block.
  void start_body(llvm::Function* fn);
  // Binds the kernel's parameters, its dimensions (a generic kernel) and
  // its reduce buffers from the entry point's slots in kernel_abi.hpp's
  // order. `next(name)` gives the next slot: a pointer to the value where
  // `by_pointer` (the CPU's array of arguments), else the value itself in
  // its memory type (a GPU entry's parameters).
  void bind_parameters(const std::function<llvm::Value*(const std::string& name)>& next, bool by_pointer);
  // What the runtime promises of the buffers, on an entry point whose first
  // arguments are the kernel's parameters in order: an input is never
  // written (noalias, readonly), the output overlaps no other argument
  // (noalias; a reduce kernel's output may be its accumulator, so not there).
  void mark_distinct_buffers(llvm::Function* fn) const;
  // Where a failed check writes its id (an i32 pointer).
  void bind_status(llvm::Value* status) { status_ = status; }
  // The CPU's [begin, end) of outer iterations this call runs.
  void bind_range(llvm::Value* begin, llvm::Value* end) {
    begin_ = begin;
    end_ = end;
  }

  // ---- for the targets' hooks

  // The lowered value of an expression.
  llvm::Value* expr(const cir::Expr& e);
  const Buffer& buffer(const std::string& name);
  llvm::Value* element_ptr(const Buffer& buf, llvm::Value* offset);
  // Branches to the exit unless `ok`, the check's id in *status.
  void check(llvm::Value* ok, Span span, const std::string& what);
  llvm::AllocaInst* entry_alloca(llvm::Type* t, const std::string& name);
  llvm::Type* mem_type(DType t);
  llvm::Value* from_memory(DType t, llvm::Value* v);
  llvm::Value* gpu_coordinate(cir::GpuIndexKind kind, int axis);
  // Emits `body` with each name of `values` bound to its value (a let).
  void emit_with(const std::map<std::string, llvm::Value*>& values, const cir::Block& body);
  // The exit block every path leaves through.
  llvm::BasicBlock* exit_block() const { return exit_; }
  // The tensor-core accumulator `name` as allocated.
  const cir::Type& fragment_type(const std::string& name) const { return fragment_types_.at(name); }

 private:
  using Site = std::pair<const std::vector<cir::AxisSel>*, std::string>;  // an access: its indices and its buffer
  struct Var {
    llvm::AllocaInst* slot;
    DType dtype;
  };

  // emitter.cpp
  void bind_reduce_buffers(llvm::Value* acc, llvm::Value* best, llvm::Value* has);
  void run_body_if(llvm::Value* runs);
  llvm::Value* element_offset(const Buffer& buf, const std::vector<cir::AxisSel>& axes, Span span, const std::string& name, bool write);
  void block(const cir::Block& blk);
  void stmt(const cir::Stmt& s);
  void allocate_heap_arrays();
  void emit_matmul_block(const cir::MatMulBlock& m);
  llvm::Value* accumulation(const cir::Assign& a);

  // emit_values.cpp
  llvm::Type* reg_type(DType t);
  llvm::Value* load_scalar(DType t, llvm::Value* ptr);
  llvm::Value* to_memory(DType t, llvm::Value* v);
  llvm::Value* bf16_bits(llvm::Value* f);
  llvm::Value* round_to(DType t, llvm::Value* v);
  llvm::Value* scalar_constant(const Scalar& s, DType t);
  llvm::Value* logical(bool is_and, llvm::Value* a, llvm::Value* b, DType t);
  llvm::Value* truthy(llvm::Value* v, DType t);
  llvm::Value* convert(llvm::Value* v, DType from, DType to);
  llvm::Value* binary(const cir::Binary& bin);
  llvm::Value* logical(const cir::Binary& bin);
  llvm::Value* compare(BinaryOp op, DType t, llvm::Value* a, llvm::Value* c);
  llvm::Value* arith(BinaryOp op, DType t, llvm::Value* a, llvm::Value* c, Span span);
  llvm::Value* int_pow(DType t, llvm::Value* a, llvm::Value* c, Span span);

  // emit_math.cpp
  llvm::Value* to_f64(llvm::Value* v) { return v->getType()->isDoubleTy() ? v : b_.CreateFPExt(v, b_.getDoubleTy()); }
  llvm::Value* f64(double x) { return llvm::ConstantFP::get(b_.getDoubleTy(), x); }
  llvm::Value* f32c(double v) { return llvm::ConstantFP::get(b_.getFloatTy(), v); }
  llvm::Value* i32c(int32_t v) { return b_.getInt32(static_cast<uint32_t>(v)); }
  llvm::Value* as_int(llvm::Value* f) { return b_.CreateBitCast(f, b_.getInt32Ty()); }
  llvm::Value* as_float(llvm::Value* i) { return b_.CreateBitCast(i, b_.getFloatTy()); }
  llvm::Value* libm1(const char* name, llvm::Value* x);
  llvm::Value* libm2(const char* name, llvm::Value* a, llvm::Value* c);
  llvm::Value* madd(llvm::Value* a, llvm::Value* b, llvm::Value* c);
  llvm::Value* exp_reduced(llvm::Value* r);
  llvm::Value* clamp_keeping_nan(llvm::Value* x, double lo, double hi);
  llvm::Value* reduce_ln2(llvm::Value* x, llvm::Value* n);
  llvm::Value* fast_exp(llvm::Value* x);
  llvm::Value* expm1_reduced(llvm::Value* r);
  llvm::Value* fast_tanh(llvm::Value* x);
  llvm::Value* erf_rational(llvm::Value* d);
  llvm::Value* math(const cir::Math& m);
  llvm::Value* int_math(MathFn fn, DType t, const std::vector<llvm::Value*>& args);

  // emit_activations.cpp
  llvm::Value* horner_f64(llvm::Value* x, const double* c, size_t n);
  llvm::Value* exp_f64(llvm::Value* x);
  llvm::Value* twice_normal_cdf_f64(llvm::Value* d);
  llvm::Value* activation_f32(MathFn fn, llvm::Value* x);
  llvm::Value* zero_at_minus_inf(llvm::Value* x, llvm::Value* g);

  // emit_loops.cpp
  void emit_for(const cir::For& f, bool outer);
  // `checked`: the copy with bounds checks of a versioned loop (its exits keep it scalar: no vectoriser hint).
  void emit_loop(const cir::For& f, llvm::Value* lo, llvm::Value* step, llvm::Value* first, llvm::Value* trips, llvm::Value* stride,
                 bool checked = false);
  llvm::MDNode* no_vectorize_hint();
  llvm::MDNode* vectorize_hint(int width);
  std::vector<Site> provable_sites(const cir::For& f);
  llvm::Value* in_bounds_at_ends(const cir::For& f, const std::vector<Site>& sites, llvm::Value* lo, llvm::Value* step, llvm::Value* first,
                                 llvm::Value* trips);

  // emit_reductions.cpp
  void emit_yield(const cir::Yield& y);
  template <class Update>
  void atomic_update(DType t, llvm::Value* ptr, Update update, cir::FenceScope scope = cir::FenceScope::Device);
  void emit_atomic(const cir::Atomic& a);

  // emit_gpu.cpp
  void check_fragment_threads(const std::string& acc);
  llvm::Value* block_shared_array(llvm::Type* elem, int64_t bytes, const std::string& name, int64_t offset);
  llvm::Value* shared_array(llvm::Type* elem, uint64_t n, const std::string& name);
  void emit_block_reduce(const cir::BlockReduce& r);
  template <class Step>
  llvm::Value* counted_fold(llvm::Value* first, llvm::Value* end, llvm::Value* stride, llvm::Value* identity, Step step);
  llvm::Value* shuffle_xor(llvm::Value* v, DType t, int offset, llvm::Value* lanes);

  const cir::Kernel& k_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  std::unique_ptr<llvm::Module> module_;
  std::string name_;
  const LlvmTarget& target_;
  const GpuTarget* gpu_;  // target_.gpu(): null on a CPU
  llvm::Function* fn_ = nullptr;
  llvm::BasicBlock* entry_ = nullptr;
  llvm::BasicBlock* exit_ = nullptr;
  llvm::Value* begin_ = nullptr;  // CPU: the range of outer iterations to run
  llvm::Value* end_ = nullptr;
  llvm::Value* global_thread_ = nullptr;  // GPU: this thread's index in the grid, and the grid's size
  llvm::Value* thread_count_ = nullptr;
  int gpu_block_depth_ = 0;               // GPU block loops around the statement being emitted
  int gpu_thread_depth_ = 0;              // and GPU thread loops
  std::optional<int64_t> shared_bytes_;   // the kernel's gpu_shared_bytes, once asked
  llvm::Value* shared_region_ = nullptr;  // the block's shared memory, when its arrays are at offsets in one region
  int64_t next_shared_offset_ = 0;        // where the next array not placed goes in it
  std::string task_var_;                  // a CPU reduce kernel's outer parallel loop variable
  std::set<std::string> thread_private_;  // local arrays of a GPU block, one row per thread
  std::map<std::string, cir::Type> fragment_types_;  // tensor-core accumulators, as allocated
  std::unique_ptr<TargetState> target_state_;
  llvm::Value* status_ = nullptr;
  std::map<std::string, Buffer> buffers_;
  std::map<std::string, llvm::Value*> heap_arrays_;
  // Accesses proven in bounds for the loop being emitted: no check.
  std::set<const std::vector<cir::AxisSel>*> proven_;
  std::map<std::string, llvm::Value*> values_;
  std::map<std::string, Var> vars_;
  Buffer acc_, best_, has_;
  std::vector<CheckSite> sites_;
};

}  // namespace zyntax::codegen
