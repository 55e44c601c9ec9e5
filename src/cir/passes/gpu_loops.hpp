// What the GPU schedules share: the pieces a loop is rewritten with when
// the threads of a block, or of the whole grid, take its iterations.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cir/ir.hpp"

namespace zyntax::cir {

// Index arithmetic the GPU schedules build with: an i64 variable, a < b,
// a and b, and a mod m for a >= 0 (written a - a / m * m, so that linear
// forms see through it).
Expr index_var(const std::string& name);
Expr less_than(Expr a, Expr b);
Expr both(Expr a, Expr b);
Expr mod(const Expr& a, int64_t m);

// The names a loop declares: its variable, and its lets, vars, loops and
// arrays at any depth.
std::set<std::string> declared_in(const For& loop);

// index = k * var + (terms reading nothing in `inside`): k; nothing when
// another term reads a name in `inside` (a loop's declared names: then two
// iterations with different `var` reach different indices when k != 0).
std::optional<uint64_t> loop_coefficient(const Expr& index, const std::string& var, const std::set<std::string>& inside);

// Names not yet used in a kernel: `base`, else `base2`, `base3`, ...
class FreshNames {
 public:
  explicit FreshNames(const Kernel& k);
  std::string operator()(const std::string& base);

 private:
  std::set<std::string> taken_;
};

// gpu_thread for t in 0..threads { for v in lo + (first + t) * step..hi step stride * step { body } }:
// thread t of `threads` takes iterations first + t, first + t + stride, ...
Stmt strided_thread_loop(const For& f, Block body, const std::string& thread_var, int64_t threads, const Expr& first, const Expr& stride);

// The ops a fold may use (+ * min max), as reductions (the inverse of
// reduce_binary_op), and their identities.
ReduceOp reduce_op_of(BinaryOp op);
Expr fold_identity(BinaryOp op, DType t);

// A value each thread folds its iterations into, and the shared array
// (one element per thread) it leaves the value in.
struct Partial {
  std::string name, part;
  BinaryOp op;
  DType dtype;
};

// A loop as a block's fold: the shared arrays, the thread loop (thread t
// starts its partials at their identities, runs its iterations of `body`,
// which assigns them, as in strided_thread_loop, and leaves them in
// part[t]) and one block_reduce per partial, binding `totals`.
struct BlockFold {
  Block arrays;
  Stmt threads;
  Block reductions;
};
BlockFold block_fold(const For& f, Block body, const std::vector<Partial>& partials, const std::vector<std::string>& totals,
                     const std::string& thread_var, int64_t threads, const Expr& first, const Expr& stride);

// A reduce(argmax | argmin) loop folded by the threads of one block, thread
// t taking iterations t, t + threads, ...: each keeps the first best value
// it meets (NaN first, as the reference), where in the loop it met it (the
// loop variable) and the yielded index, in shared arrays; the block takes
// the best value (block_reduce max | min), then the earliest place holding
// it (block_reduce min), and its first thread yields that value with its
// index to `target`, once (nothing when the loop ran no iteration). f16 and
// bf16 values are compared in f32, which orders them alike. Nothing when the
// yields carry no index or yield what is not a number.
std::optional<Block> arg_block_fold(const For& f, ReduceOp op, const std::vector<Expr>& target, int64_t threads, FreshNames& fresh);

// The yields in a block, at any depth.
std::vector<const Yield*> yields_in(const Block& b);

// The output element every yield of a reduce kernel's loop goes to, when
// it is one (the same indices, reading nothing the loop declares) and the
// yields carry no index (not an arg reduction), or, with `indexed`, all
// carry one.
std::optional<std::vector<Expr>> single_yield_target(const For& loop, bool indexed = false);

// Whether a reduce kernel's loop does nothing but yield: no stores, no
// statements of GPU schedules, assignments only to its own vars.
bool only_yields(const For& loop);

// What the CPU and GPU whole-tensor reductions both start from: a reduce
// kernel's one serial loop (a nest merged into one, collapse_parallel_loops'
// merge_loop_nest) that does nothing but yield to one output element (with
// an index where `indexed`), and that element. None, with why, otherwise.
struct SingleElementFold {
  Stmt loop;  // a For
  std::vector<Expr> target;
};
std::optional<SingleElementFold> single_element_fold(const Kernel& k, bool indexed, std::string* why_not);

// The loop's body with every `yield v` made `partial = partial op v` (v
// converted to the partial's dtype, as the accumulator converts it).
Block yields_into(const Block& body, const std::string& partial, BinaryOp op, DType partial_dtype);

}  // namespace zyntax::cir
