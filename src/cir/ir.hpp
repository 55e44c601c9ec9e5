// The Compute IR (CIR): the one representation every backend consumes.
//
// A Kernel has typed tensor inputs, scalar parameters, one output and a body
// of statements: loop nests, locals, stores, yields (reductions), shared
// allocations and barriers. Expressions are typed: a scalar, or a tile (a
// small tensor value such as a slice `K[b, h, kv:kv + 64]` or `zeros(64, d)`).
//
// Shapes are expressions over named dimensions (`tensor[M, K, f32]`), so a
// kernel stays generic until it is specialised on concrete sizes.
//
// Nodes are immutable and shared (Halide style): passes build new trees with
// IRMutator, which reuses every subtree it did not change.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "support/dtype.hpp"
#include "support/scalar.hpp"
#include "support/source.hpp"

namespace zyntax::cir {

// ---------------------------------------------------------------- handles

struct ExprNode;
struct StmtNode;

// A shared, immutable expression. Null when default-constructed.
class Expr {
 public:
  Expr() = default;
  Expr(std::shared_ptr<const ExprNode> p) : p_(std::move(p)) {}
  bool defined() const { return p_ != nullptr; }
  const ExprNode* get() const { return p_.get(); }
  const ExprNode* operator->() const { return p_.get(); }
  const ExprNode& operator*() const { return *p_; }
  bool same_as(const Expr& o) const { return p_ == o.p_; }
  // Null if the node is not a T. Not on a temporary: the pointer would
  // outlive the node it points into (name the expression first).
  template <class T>
  const T* as() const&;
  template <class T>
  const T* as() const&& = delete;

 private:
  std::shared_ptr<const ExprNode> p_;
};

class Stmt {
 public:
  Stmt() = default;
  Stmt(std::shared_ptr<const StmtNode> p) : p_(std::move(p)) {}
  bool defined() const { return p_ != nullptr; }
  const StmtNode* get() const { return p_.get(); }
  const StmtNode* operator->() const { return p_.get(); }
  bool same_as(const Stmt& o) const { return p_ == o.p_; }
  template <class T>
  const T* as() const&;  // as Expr::as
  template <class T>
  const T* as() const&& = delete;

 private:
  std::shared_ptr<const StmtNode> p_;
};

using Block = std::vector<Stmt>;

// ---------------------------------------------------------------- types

// A scalar (empty shape) or a tensor/tile of `dtype` with the given extents.
// Extents are i64 expressions: constants, dimension names, or arithmetic on
// them (`3 * hidden`); a tile's extents may also use loop variables.
struct Type {
  DType dtype = DType::F32;
  std::vector<Expr> shape;

  static Type scalar(DType t) { return {t, {}}; }
  static Type tensor(DType t, std::vector<Expr> shape) { return {t, std::move(shape)}; }
  bool is_scalar() const { return shape.empty(); }
  size_t rank() const { return shape.size(); }
};

// ---------------------------------------------------------------- expressions

enum class ExprKind : uint8_t {
  IntImm, FloatImm, BoolImm, Var, Cast, Unary, Binary, Select, Math,
  Access, Dot, Reduce, MatMul, Transpose, Fill, GpuIndex,
};

struct ExprNode {
  ExprKind kind;
  Type type;
  Span span;
  ExprNode(ExprKind k, Type t, Span s) : kind(k), type(std::move(t)), span(s) {}
  virtual ~ExprNode() = default;
};

template <class T>
const T* Expr::as() const& {
  return p_ && p_->kind == T::kKind ? static_cast<const T*>(p_.get()) : nullptr;
}

struct IntImm : ExprNode {
  static constexpr ExprKind kKind = ExprKind::IntImm;
  int64_t value;
  IntImm(int64_t v, DType t, Span s) : ExprNode(kKind, Type::scalar(t), s), value(v) {}
  static Expr make(int64_t v, DType t = DType::I64, Span s = {});
};

struct FloatImm : ExprNode {
  static constexpr ExprKind kKind = ExprKind::FloatImm;
  double value;  // exactly representable in the dtype
  FloatImm(double v, DType t, Span s) : ExprNode(kKind, Type::scalar(t), s), value(v) {}
  static Expr make(double v, DType t = DType::F32, Span s = {});
};

struct BoolImm : ExprNode {
  static constexpr ExprKind kKind = ExprKind::BoolImm;
  bool value;
  BoolImm(bool v, Span s) : ExprNode(kKind, Type::scalar(DType::Bool), s), value(v) {}
  static Expr make(bool v, Span s = {});
};

// A loop variable, local, scalar parameter or dimension, by name. Names are
// unique within a kernel (lowering renames shadowed ones).
struct Var : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Var;
  std::string name;
  Var(std::string n, Type t, Span s) : ExprNode(kKind, std::move(t), s), name(std::move(n)) {}
  static Expr make(std::string name, Type t, Span s = {});
};

// Converts to `type.dtype` (element-wise on tiles).
struct Cast : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Cast;
  Expr value;
  Cast(Expr v, Type t, Span s) : ExprNode(kKind, std::move(t), s), value(std::move(v)) {}
  static Expr make(DType to, Expr v, Span s = {});
};

struct Unary : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Unary;
  UnaryOp op;
  Expr a;
  Unary(UnaryOp o, Expr x, Type t, Span s) : ExprNode(kKind, std::move(t), s), op(o), a(std::move(x)) {}
  static Expr make(UnaryOp op, Expr a, Span s = {});
};

// Operands have the same dtype; tiles broadcast like NumPy. Comparisons
// and logical operators give bool.
struct Binary : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Binary;
  BinaryOp op;
  Expr a, b;
  Binary(BinaryOp o, Expr x, Expr y, Type t, Span s) : ExprNode(kKind, std::move(t), s), op(o), a(std::move(x)), b(std::move(y)) {}
  // `shape` is the broadcast result shape (empty for scalars).
  static Expr make(BinaryOp op, Expr a, Expr b, Span s = {});
};

struct Select : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Select;
  Expr cond, t, f;
  Select(Expr c, Expr x, Expr y, Type ty, Span s) : ExprNode(kKind, std::move(ty), s), cond(std::move(c)), t(std::move(x)), f(std::move(y)) {}
  static Expr make(Expr c, Expr t, Expr f, Span s = {});
};

struct Math : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Math;
  MathFn fn;
  std::vector<Expr> args;  // same dtype
  Math(MathFn f, std::vector<Expr> a, Type t, Span s) : ExprNode(kKind, std::move(t), s), fn(f), args(std::move(a)) {}
  static Expr make(MathFn fn, std::vector<Expr> args, Span s = {});
};

// One position of an access or store: an index, or a slice [lo, hi) that is
// clamped to the axis (an undefined hi means "to the end").
struct AxisSel {
  bool is_slice = false;
  Expr index;
  Expr lo, hi;
  static AxisSel at(Expr i) { return {false, std::move(i), {}, {}}; }
  static AxisSel slice(Expr lo, Expr hi) { return {true, {}, std::move(lo), std::move(hi)}; }
};

// Reads a buffer (input, output, shared array) or a local tile. With an index
// for every axis the result is a scalar; otherwise it is a tile made of the
// sliced and the remaining axes.
struct Access : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Access;
  std::string buffer;
  std::vector<AxisSel> axes;
  Access(std::string b, std::vector<AxisSel> a, Type t, Span s) : ExprNode(kKind, std::move(t), s), buffer(std::move(b)), axes(std::move(a)) {}
};

// Sum of products of two 1-D tiles.
struct Dot : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Dot;
  Expr a, b;
  Dot(Expr x, Expr y, Type t, Span s) : ExprNode(kKind, std::move(t), s), a(std::move(x)), b(std::move(y)) {}
};

// Reduces a tile over one axis or (axis unset) over all of them.
struct Reduce : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Reduce;
  ReduceOp op;
  Expr value;
  std::optional<int> axis;
  bool keepdims = false;
  Reduce(ReduceOp o, Expr v, std::optional<int> ax, bool keep, Type t, Span s)
      : ExprNode(kKind, std::move(t), s), op(o), value(std::move(v)), axis(ax), keepdims(keep) {}
};

// Tile matrix product (`a @ b`), NumPy semantics for 1-D and 2-D tiles.
struct MatMul : ExprNode {
  static constexpr ExprKind kKind = ExprKind::MatMul;
  Expr a, b;
  MatMul(Expr x, Expr y, Type t, Span s) : ExprNode(kKind, std::move(t), s), a(std::move(x)), b(std::move(y)) {}
};

// Reverses the axes of a tile.
struct Transpose : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Transpose;
  Expr value;
  Transpose(Expr v, Type t, Span s) : ExprNode(kKind, std::move(t), s), value(std::move(v)) {}
};

// A tile of `type.shape` filled with a scalar (`zeros(r, c)`).
struct Fill : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Fill;
  Expr value;
  Fill(Expr v, Type t, Span s) : ExprNode(kKind, std::move(t), s), value(std::move(v)) {}
};

// GPU launch coordinates, introduced by the GPU scheduling passes.
enum class GpuIndexKind : uint8_t { ThreadIdx, BlockIdx, BlockDim, GridDim };
struct GpuIndex : ExprNode {
  static constexpr ExprKind kKind = ExprKind::GpuIndex;
  GpuIndexKind index_kind;
  int axis;  // 0 = x, 1 = y, 2 = z
  GpuIndex(GpuIndexKind k, int a, Span s) : ExprNode(kKind, Type::scalar(DType::I32), s), index_kind(k), axis(a) {}
};

// ---------------------------------------------------------------- statements

enum class StmtKind : uint8_t { For, If, Let, Decl, Assign, Store, Yield, Allocate, Barrier, Atomic, Check, MatMulBlock, BlockReduce, TileMma, AsyncCopy, WarpgroupProduct, WarpgroupAttention };

struct StmtNode {
  StmtKind kind;
  Span span;
  StmtNode(StmtKind k, Span s) : kind(k), span(s) {}
  virtual ~StmtNode() = default;
};

template <class T>
const T* Stmt::as() const& {
  return p_ && p_->kind == T::kKind ? static_cast<const T*>(p_.get()) : nullptr;
}

// How a backend may run a loop. Serial is always correct; the others are
// promises made by lowering (iterations independent) or by schedules.
enum class LoopKind : uint8_t { Serial, Parallel, Vectorized, Unrolled, GpuBlock, GpuThread };
const char* loop_kind_name(LoopKind k);

// for var in lo..hi step step (hi exclusive, step > 0).
struct For : StmtNode {
  static constexpr StmtKind kKind = StmtKind::For;
  std::string var;
  Expr lo, hi, step;
  LoopKind loop_kind = LoopKind::Serial;
  int factor = 0;  // vector width, unroll factor, or GPU axis (0 = x)
  Block body;
  For(std::string v, Expr l, Expr h, Expr st, LoopKind k, int f, Block b, Span s)
      : StmtNode(kKind, s), var(std::move(v)), lo(std::move(l)), hi(std::move(h)), step(std::move(st)), loop_kind(k), factor(f), body(std::move(b)) {}
};

struct If : StmtNode {
  static constexpr StmtKind kKind = StmtKind::If;
  Expr cond;
  Block then_body, else_body;
  If(Expr c, Block t, Block e, Span s) : StmtNode(kKind, s), cond(std::move(c)), then_body(std::move(t)), else_body(std::move(e)) {}
};

// An immutable local, visible to the end of the enclosing block.
struct Let : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Let;
  std::string name;
  Expr value;
  Let(std::string n, Expr v, Span s) : StmtNode(kKind, s), name(std::move(n)), value(std::move(v)) {}
};

// A mutable local (scalar or tile), visible to the end of the enclosing block.
struct Decl : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Decl;
  std::string name;
  Type type;
  Expr init;
  Decl(std::string n, Type t, Expr i, Span s) : StmtNode(kKind, s), name(std::move(n)), type(std::move(t)), init(std::move(i)) {}
};

// Replaces the value of a Decl'd local (a tile may change shape).
struct Assign : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Assign;
  std::string name;
  Expr value;
  Assign(std::string n, Expr v, Span s) : StmtNode(kKind, s), name(std::move(n)), value(std::move(v)) {}
};

// Writes an element or a region (the value broadcasts to it) of the output,
// a shared array or a local tile.
struct Store : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Store;
  std::string buffer;
  std::vector<AxisSel> axes;
  Expr value;
  Store(std::string b, std::vector<AxisSel> a, Expr v, Span s) : StmtNode(kKind, s), buffer(std::move(b)), axes(std::move(a)), value(std::move(v)) {}
};

// Contributes `value` to the output element at `out_index` of a reduce
// kernel; arg reductions also carry the candidate's `index`.
struct Yield : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Yield;
  Expr value;
  Expr index;
  std::vector<Expr> out_index;
  Yield(Expr v, Expr i, std::vector<Expr> o, Span s) : StmtNode(kKind, s), value(std::move(v)), index(std::move(i)), out_index(std::move(o)) {}
};

enum class MemorySpace : uint8_t { Shared, Local, Fragment };

// An array visible to the end of the enclosing block. Shared arrays are
// visible to all threads of a GPU block. Arrays start zero-filled, except
// shared arrays inside a GPU block loop, whose contents start undefined (the
// GPU schedules write them before reading; the reference executor fills them
// with NaN so that a read before a write shows). A local array in a GPU
// block loop but outside its thread loops is thread-private: its first axis
// is the block's threads, and each access is inside a thread loop whose
// variable is its first index (each thread keeps its row, in registers).
// A fragment array is a GPU block's matrix accumulator, spread over its
// warps' registers; only tile_mma statements touch it (see TileMma).
// `type.shape` may use values computed at run time (a tile whose size changes
// from one iteration to the next); `capacity` then bounds its element count.
// A GPU block's shared array may be placed: `offset` is its first byte in
// the block's shared memory, and arrays whose lives a barrier separates
// share bytes (see passes/place_shared_arrays). A kernel places all its
// block's shared arrays or none.
struct Allocate : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Allocate;
  std::string name;
  Type type;
  MemorySpace space;
  int64_t capacity = 0;  // elements to reserve; 0: the type's (constant) shape
  int64_t offset = -1;   // placed shared arrays: byte offset in the block's shared memory
  Allocate(std::string n, Type t, MemorySpace m, int64_t cap, int64_t off, Span s)
      : StmtNode(kKind, s), name(std::move(n)), type(std::move(t)), space(m), capacity(cap), offset(off) {}
};

// Each shared array of a GPU block starts at a multiple of this many bytes
// (tensor-core loads read pieces at 32-byte boundaries; 128 keeps a warp's
// row of accesses in one line).
constexpr int64_t kSharedArrayAlignment = 128;
// The bytes an allocation reserves (its capacity or its constant shape),
// or -1 when that is not a constant.
int64_t allocation_bytes(const Allocate& a);
// The bytes a shared array takes in a block's shared memory: rounded up to
// the next array's alignment.
int64_t shared_footprint(int64_t bytes);

enum class FenceScope : uint8_t { Block, Device, System };

// Every thread of the scope reaches this point before any goes on, and sees
// the others' writes made before it.
struct Barrier : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Barrier;
  FenceScope scope;
  Barrier(FenceScope sc, Span s) : StmtNode(kKind, s), scope(sc) {}
};

enum class AtomicOp : uint8_t { Add, Min, Max, And, Or, Exchange };
struct Atomic : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Atomic;
  AtomicOp op;
  std::string buffer;
  std::vector<Expr> index;
  Expr value;
  FenceScope scope;
  Atomic(AtomicOp o, std::string b, std::vector<Expr> i, Expr v, FenceScope sc, Span s)
      : StmtNode(kKind, s), op(o), buffer(std::move(b)), index(std::move(i)), value(std::move(v)), scope(sc) {}
};

// Binds `name` (a scalar of the array's dtype) to the fold with `op` (sum,
// product, min or max) of the shared array's elements [0, count). Every
// thread of the GPU block takes part, so it stands in a GPU block loop but
// outside its thread loops, where barriers may stand; the fold's order is
// unspecified (a GPU reduces within warps by shuffles, then across warps).
struct BlockReduce : StmtNode {
  static constexpr StmtKind kKind = StmtKind::BlockReduce;
  std::string name;
  ReduceOp op;
  std::string array;
  Expr count;
  BlockReduce(std::string n, ReduceOp o, std::string a, Expr c, Span s)
      : StmtNode(kKind, s), name(std::move(n)), op(o), array(std::move(a)), count(std::move(c)) {}
};

// A GPU block's tile product on tensor cores, in steps on one accumulator
// `acc`: a fragment array of f32 [rows, cols] whose parts live in the
// registers of the block's warps, laid out as a warp_rows x warp_cols grid
// over the tile (each warp holds a (rows / warp_rows) x (cols / warp_cols)
// part, in 16 x 16 pieces).
//   Zero:        acc = 0
//   Accumulate:  acc[r, c] += sum over p < depth of a[r * lda + p] * b[p * ldb + c]
//                (b_transposed: b[c * ldb + p], b's rows the columns of the
//                product, as attention's K in Q K^T); a and b are shared arrays of f16 or bf16, or of f32 read as
//                TF32 (each factor rounded to 10 mantissa bits, to nearest,
//                ties away from zero); products are exact and sums are in f32
//                in an unspecified order. a_exact / b_exact: the factor's
//                values are exact in TF32 (widened f16 or bf16 values, as
//                the scheduler proved), so they are read without rounding.
//   Store:       d[r * ldd + c] = acc[row0 + r, c] for r < count (d a shared f32 array)
// Every warp of the block takes part, so it stands in a GPU block loop outside
// its thread loops, where barriers may stand; the shared arrays it reads or
// writes are separated from the threads' accesses by barriers.
struct TileMma : StmtNode {
  static constexpr StmtKind kKind = StmtKind::TileMma;
  enum class Step : uint8_t { Zero, Accumulate, Store };
  Step step;
  std::string acc;
  int warp_rows = 1, warp_cols = 1;
  std::string a, b;                   // Accumulate
  int depth = 0, lda = 0, ldb = 0;
  bool b_transposed = false;
  bool a_exact = false, b_exact = false;
  std::string d;                      // Store
  int row0 = 0, count = 0, ldd = 0;
  TileMma(Step st, std::string acc_, int wr, int wc, Span s) : StmtNode(kKind, s), step(st), acc(std::move(acc_)), warp_rows(wr), warp_cols(wc) {}
};

// Copies from an input into a GPU block's shared array that run while the
// thread goes on (cp.async on NVIDIA GPUs), in steps a thread takes:
//   Start:   dst[dst_index + i] = src[src_index with its last index + i] for
//            i < count: a run along the input's last axis. Only the first
//            `valid` (0..count) elements are read, and the rest are zero; an
//            element not read need not be in bounds. count elements take 4,
//            8 or 16 bytes, and dst_index and the run's first element are
//            multiples of count (the bytes are aligned to their size).
//   Commit:  the thread's copies started since its last commit form a group.
//   Wait:    the thread waits until at most `pending` of its groups (those
//            committed last) have not landed.
// A copy lands at some time between its start and the wait that covers it:
// until then nothing may read or write its elements, and other threads see
// them after a barrier that follows the wait. Every copy has landed by the
// end of its GPU block. Each step stands in a GPU thread loop with one
// iteration per thread of the block (a thread's copies and groups are its own).
struct AsyncCopy : StmtNode {
  static constexpr StmtKind kKind = StmtKind::AsyncCopy;
  enum class Step : uint8_t { Start, Commit, Wait };
  Step step;
  std::string dst;           // Start
  Expr dst_index;
  std::string src;
  std::vector<Expr> src_index;
  int count = 0;
  Expr valid;
  int pending = 0;           // Wait
  AsyncCopy(Step st, Span s) : StmtNode(kKind, s), step(st) {}
};

// One factor of a WarpgroupProduct as the tensor copy engine reads it: an
// input viewed as a tensor of up to three axes, the fastest first, element
// (i0, i1, i2) at flat index i0 + i1 * strides[0] + i2 * strides[1] of the
// input. `k_major`: axis 0 is the product's depth and axis 1 its rows (for
// the first factor) or columns (for the second); otherwise axis 0 is the
// rows or columns and axis 1 the depth. Axis 2, where rank is 3, is the
// batch; a factor of rank 2 is the same for every batch element. Elements
// at indices past an axis' extent read as zero.
struct ProductOperand {
  std::string buffer;
  DType dtype = DType::BF16;
  bool k_major = true;
  int rank = 2;
  std::array<int64_t, 3> dims = {1, 1, 1};
  std::array<int64_t, 2> strides = {0, 0};

  // The input's flat index of the factor at (side index, depth index, batch element).
  int64_t flat_index(int64_t side, int64_t depth, int64_t batch) const {
    int64_t i0 = k_major ? depth : side, i1 = k_major ? side : depth;
    return i0 + i1 * strides[0] + (rank == 3 ? batch * strides[1] : 0);
  }
  // Whether (side, depth) is inside the view (else the factor is zero).
  bool inside(int64_t side, int64_t depth) const {
    return (k_major ? depth : side) < dims[0] && (k_major ? side : depth) < dims[1];
  }
};

// The tile a persistent GPU block takes at its `n`-th turn: tiles are
// numbered batch element first, then in groups of `group` row tiles, in
// which tiles go down a column of the group before moving right (so that
// blocks running at once share factor tiles in the L2 cache).
struct ProductTile {
  int64_t batch = 0, row_tile = 0, col_tile = 0;
};
inline ProductTile product_tile(int64_t tile, int64_t row_tiles, int64_t col_tiles, int64_t group) {
  int64_t per_batch = row_tiles * col_tiles, t = tile % per_batch, per_group = group * col_tiles;
  int64_t first_row = t / per_group * group, rows_here = std::min(group, row_tiles - first_row);
  int64_t in_group = t % per_group;
  return {tile / per_batch, first_row + in_group % rows_here, in_group / rows_here};
}

// A persistent GPU block's whole share of a matrix product on warpgroup
// matrix units (Hopper's wgmma), with the factors' tiles brought into the
// shared array `stage` by the tensor copy engine. The block takes output
// tiles first_tile, first_tile + tile_stride, ... below
// batches * row_tiles * col_tiles (tiles of tile_rows x tile_cols, numbered
// by product_tile with `group`), and for each computes
//   value(b, r, c) = sum over d < depth of a(b, r, d) * b(b, d, c)
// (f16/bf16 factors, exact products; f32 factors as TF32, each rounded to 10
// mantissa bits; sums in f32 in an unspecified order), then runs `epilogue`
// for every element of the tile (row r < rows and column c < cols are the
// epilogue's own tests), with `batch_var`, `row`, `col` (i64) and `value`
// (f32) bound. The epilogue may store but not read the output.
//
// Every thread of the block takes part (it stands in a GPU block loop
// outside thread loops, alone with the allocation of `stage`): one
// warpgroup (128 threads) issues the copies, `consumers` warpgroups each
// compute tile_rows / consumers rows of the tile, over a ring of `stages`
// shared buffers of tile_depth steps.
//
// With `cluster` = 2 the blocks run in pairs (a thread block cluster of
// two along x), and the pair's two blocks take tiles in the same column,
// one above the other: the turns then number pairs of row tiles
// (product_tile over pair_row_tiles()), and the block of `cluster_rank`
// (0 or 1) takes row tile cluster * pair row + cluster_rank of each. The
// column tile of B that both need is brought once for the two (half by
// each block, copied into both).
struct WarpgroupProduct : StmtNode {
  static constexpr StmtKind kKind = StmtKind::WarpgroupProduct;
  ProductOperand a, b;
  int64_t rows = 0, cols = 0, depth = 0, batches = 1;
  int tile_rows = 128, tile_cols = 256, tile_depth = 64, stages = 4, consumers = 2, group = 8;
  int cluster = 1;               // blocks per cluster: 1 or 2
  Expr first_tile, tile_stride;  // i64: the turns
  Expr cluster_rank;             // i64: the block's place in its cluster (0 where cluster is 1)
  std::string stage;             // a shared u8 array of stage_bytes()
  std::string batch_var, row, col, value;
  Block epilogue;
  WarpgroupProduct(Span s) : StmtNode(kKind, s) {}

  int64_t row_tiles() const { return (rows + tile_rows - 1) / tile_rows; }
  int64_t col_tiles() const { return (cols + tile_cols - 1) / tile_cols; }
  int64_t tiles() const { return batches * row_tiles() * col_tiles(); }
  // Row tiles in units of a cluster's, and the turns the blocks share out.
  int64_t pair_row_tiles() const { return (row_tiles() + cluster - 1) / cluster; }
  int64_t turns() const { return batches * pair_row_tiles() * col_tiles(); }
  int threads() const { return 128 * (1 + consumers); }
  // Bytes of one stage's two factor tiles, and of the shared array: the
  // stages (each at a multiple of 1024 bytes, as the 128-byte swizzle
  // needs), their two barriers each, and room to align the first.
  int64_t stage_tile_bytes() const {
    return int64_t{tile_depth} * (tile_rows + tile_cols) * static_cast<int64_t>(dtype_size(a.dtype));
  }
  int64_t stage_bytes() const { return 1024 + stages * stage_tile_bytes() + 16 * stages; }
};

// The tile a persistent GPU block takes at its `n`-th turn of a warpgroup
// attention: the query-row tiles from the last to the first (under a causal
// mask the last see the most keys: they go first), each over every batch
// element before the next.
struct AttentionTile {
  int64_t batch = 0, row_tile = 0;
};
inline AttentionTile attention_tile(int64_t tile, int64_t batches, int64_t row_tiles) {
  return {tile % batches, row_tiles - 1 - tile / batches};
}

// A persistent GPU block's whole share of attention on warpgroup matrix
// units (Hopper's wgmma), the flash-attention way: queries, keys and values
// brought into the shared array `stage` by the tensor copy engine, scores
// and the running softmax kept in registers. The block takes query-row
// tiles first_tile, first_tile + tile_stride, ... below batches * row_tiles
// (tiles of tile_rows rows, numbered by attention_tile), and for each row r
// of a tile of batch element b computes, for c < head_dim,
//   s_j = scale * sum over d < head_dim of q(b, r, d) * k(b, j, d)
//       (f32 sums of exact products), for keys j < keys, and j <= r where `causal`;
//   value(b, r, c) = sum_j round(p_j) * v(b, j, c) / sum_j p_j,
//       p_j = exp(s_j - max over j of s_j)
// where round(p) is p in v's dtype (each p_j relative to the largest score
// seen so far, which only moves the rounding), all sums in f32 in an
// unspecified order; then runs `epilogue` for every (r, c) of the tile
// (r < queries is the epilogue's own test), with `batch_var`, `row`, `col`
// (i64) and `value` (f32) bound. The epilogue may store but not read the
// output. q and k are K-major factors (ProductOperand: axis 0 the head
// dimension, axis 1 the query or key rows); v is MN-major (axis 0 the head
// dimension, axis 1 the key rows). Elements past an operand's extents read
// as zero.
//
// Every thread of the block takes part (it stands in a GPU block loop
// outside thread loops, alone with the allocation of `stage`): one
// warpgroup (128 threads) issues the copies, `consumers` warpgroups each
// take tile_rows / consumers rows of the tile, over a ring of `stages`
// shared key and value tiles of tile_keys rows.
struct WarpgroupAttention : StmtNode {
  static constexpr StmtKind kKind = StmtKind::WarpgroupAttention;
  // Head-dimension elements per copy and per swizzled shared row (128
  // bytes of 16-bit values): tiles are chunks of this many columns.
  static constexpr int kHeadStep = 64;
  ProductOperand q, k, v;
  int64_t queries = 0, keys = 0, head_dim = 0, batches = 1;
  double scale = 1.0;
  bool causal = false;
  int tile_rows = 128, tile_keys = 128, stages = 2, consumers = 2;
  Expr first_tile, tile_stride;  // i64
  std::string stage;             // a shared u8 array of stage_bytes()
  std::string batch_var, row, col, value;
  Block epilogue;
  WarpgroupAttention(Span s) : StmtNode(kKind, s) {}

  int64_t row_tiles() const { return (queries + tile_rows - 1) / tile_rows; }
  int64_t tiles() const { return batches * row_tiles(); }
  int threads() const { return 128 * (1 + consumers); }
  // The key tiles the query rows [row0, row0 + tile_rows) go through.
  int64_t key_tiles(int64_t row0) const {
    int64_t seen = causal ? std::min(keys, row0 + tile_rows) : keys;
    return (seen + tile_keys - 1) / tile_keys;
  }
  // Bytes of the query tile, of one key (or value) tile, and of the shared
  // array: the query tile, then the stages (key tile, value tile), each at
  // a multiple of 1024 bytes as the 128-byte swizzle needs, then the
  // barriers (query full and empty, each stage's key and value full and
  // empty), and room to align the first.
  int64_t q_tile_bytes() const { return int64_t{tile_rows} * head_dim * static_cast<int64_t>(dtype_size(q.dtype)); }
  int64_t kv_tile_bytes() const { return int64_t{tile_keys} * head_dim * static_cast<int64_t>(dtype_size(k.dtype)); }
  int64_t stage_bytes() const { return 1024 + q_tile_bytes() + 2 * stages * kv_tile_bytes() + 8 * (2 + 4 * stages); }
};

// Stops the kernel with an error unless `cond` holds. Passes insert checks
// where the source's semantics has an error they cannot otherwise keep
// (shapes that must agree, a reduction that must not be empty).
struct Check : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Check;
  Expr cond;
  std::string message;
  Check(Expr c, std::string m, Span s) : StmtNode(kKind, s), cond(std::move(c)), message(std::move(m)) {}
};

// One register block of a packed matrix product (the micro-kernel of a
// BLIS-style schedule): C[m_valid x n_valid] = (C +) A . B, where
//   A is rows x kc: element (r, p) at a[a_offset + r * a_row_stride + p * a_k_stride]
//   (packed k-major when the strides are 1 and rows, or a row-major operand
//   read in place with strides lda and 1),
//   B is kc x cols with rows `ldb` apart: b[b_offset + p * ldb + c] (packed
//   k-major when ldb = cols, or a row-major operand read in place), or, when
//   `b_rows` names an i64 array, with row p at b[b_offset + b_rows[b_rows_at + p] + c]
//   (a convolution's input read in place: each reduction step a window
//   offset into the padded image); every such entry lies in [0, b_rows_max],
//   C starts at c[c_index...] and its rows are `ldc` elements apart.
// Rows from m_valid and columns from n_valid are computed but not stored, so
// packed panels are padded to whole blocks. With `accumulate` false C is
// overwritten. Sums use fused multiply-adds in k order. Introduced by the
// schedule_matmul pass for backends that lower it to a vector micro-kernel.
struct MatMulBlock : StmtNode {
  static constexpr StmtKind kKind = StmtKind::MatMulBlock;
  int rows, cols;
  std::string a, b, c;
  Expr a_offset, a_row_stride, a_k_stride, b_offset, ldb, kc;
  std::vector<Expr> c_index;
  Expr ldc, m_valid, n_valid, accumulate;
  std::string b_rows;  // empty: B's rows are ldb apart
  Expr b_rows_at;
  int64_t b_rows_max = 0;
  MatMulBlock(int r, int co, std::string a_, Expr ao, Expr ars, Expr aks, std::string b_, Expr bo, Expr lb, Expr k, std::string c_,
              std::vector<Expr> ci, Expr ld, Expr mv, Expr nv, Expr acc, Span s)
      : StmtNode(kKind, s), rows(r), cols(co), a(std::move(a_)), b(std::move(b_)), c(std::move(c_)), a_offset(std::move(ao)),
        a_row_stride(std::move(ars)), a_k_stride(std::move(aks)), b_offset(std::move(bo)), ldb(std::move(lb)), kc(std::move(k)),
        c_index(std::move(ci)), ldc(std::move(ld)), m_valid(std::move(mv)), n_valid(std::move(nv)), accumulate(std::move(acc)) {}
};

// Where a matmul_block finds the rows of B when they are not evenly spaced:
// row p at b_offset + table[at + p], each entry in [0, max].
struct RowTable {
  std::string table;
  Expr at;
  int64_t max = 0;
};

// Statement constructors.
Stmt make_for(std::string var, Expr lo, Expr hi, Expr step, Block body, LoopKind kind = LoopKind::Serial, int factor = 0, Span s = {});
Stmt make_if(Expr cond, Block then_body, Block else_body = {}, Span s = {});
Stmt make_let(std::string name, Expr value, Span s = {});
Stmt make_decl(std::string name, Type type, Expr init, Span s = {});
Stmt make_assign(std::string name, Expr value, Span s = {});
Stmt make_store(std::string buffer, std::vector<AxisSel> axes, Expr value, Span s = {});
Stmt make_yield(Expr value, Expr index, std::vector<Expr> out_index, Span s = {});
Stmt make_allocate(std::string name, Type type, MemorySpace space, Span s = {}, int64_t capacity = 0, int64_t offset = -1);
Stmt make_barrier(FenceScope scope = FenceScope::Block, Span s = {});
Stmt make_atomic(AtomicOp op, std::string buffer, std::vector<Expr> index, Expr value, FenceScope scope = FenceScope::Device, Span s = {});
Stmt make_check(Expr cond, std::string message, Span s = {});
Stmt make_block_reduce(std::string name, ReduceOp op, std::string array, Expr count, Span s = {});
Stmt make_mma_zero(std::string acc, int warp_rows, int warp_cols, Span s = {});
Stmt make_mma_accumulate(std::string acc, int warp_rows, int warp_cols, std::string a, int lda, std::string b, int ldb, int depth, Span s = {},
                         bool b_transposed = false, bool a_exact = false, bool b_exact = false);
Stmt make_mma_store(std::string d, int ldd, std::string acc, int warp_rows, int warp_cols, int row0, int count, Span s = {});
Stmt make_async_copy(std::string dst, Expr dst_index, std::string src, std::vector<Expr> src_index, int count, Expr valid, Span s = {});
Stmt make_async_commit(Span s = {});
Stmt make_async_wait(int pending, Span s = {});
Stmt make_warpgroup_product(const WarpgroupProduct& p);
Stmt make_warpgroup_attention(const WarpgroupAttention& a);
Stmt make_matmul_block(int rows, int cols, std::string a, Expr a_offset, Expr a_row_stride, Expr a_k_stride, std::string b, Expr b_offset,
                       Expr ldb, Expr kc, std::string c, std::vector<Expr> c_index, Expr ldc, Expr m_valid, Expr n_valid, Expr accumulate,
                       Span s = {}, RowTable b_rows = {});

// ---------------------------------------------------------------- kernels

enum class KernelKind : uint8_t {
  Elementwise, Reduce, MatMul, BatchedMatMul, Conv2d, Conv2dDepthwise, Attention, FlashAttention, Fused,
};
const char* kernel_kind_name(KernelKind k);
std::optional<KernelKind> parse_kernel_kind(std::string_view name);

enum class ParamRole : uint8_t { Input, Scalar, Output };

struct Param {
  ParamRole role = ParamRole::Input;
  std::string name;  // as written: `x`, `weights.qkv_proj`
  Type type;         // tensors: shape over the kernel's dims
};

// Where a dimension's value comes from at launch.
enum class DimSource : uint8_t {
  Input,  // an input's extent (its type names the dim)
  Host,   // a host integer passed with the launch
};

struct DimParam {
  std::string name;
  DimSource source = DimSource::Input;
  std::string input;  // DimSource::Input: the input whose extent it is
  int axis = -1;      // and the axis
};

// Launch hints from annotations; backends may use or ignore them.
struct KernelHints {
  std::optional<std::array<int64_t, 3>> workgroup;
  Expr shared_bytes;
  std::map<std::string, int64_t> tile;
  std::vector<std::pair<std::string, int>> broadcast;  // (input, axis)
  std::string device;    // @device(...), "" if unset
  std::string parallel;  // @parallel(...), "" if unset
  bool tf32 = false;     // @precision(tf32): f32 products may round their factors to TF32
  bool bf16 = false;     // @precision(bf16): or to bf16 (tf32 is set too)
};

struct Kernel {
  std::string name;
  KernelKind kind = KernelKind::Fused;
  ReduceOp reduce_op = ReduceOp::Sum;   // Reduce kernels
  std::optional<int> reduce_axis;       // Reduce kernels: loop axis reduced; unset = all
  std::vector<DimParam> dims;           // empty once specialised
  std::vector<Param> params;            // inputs, then scalars, then the output
  Block body;
  KernelHints hints;
  Span span;

  const Param* find_param(const std::string& name) const;
  const Param& output() const;  // the Output param
};

// Expression constructors that compute the result type.
Expr make_access(std::string buffer, const Type& buffer_type, std::vector<AxisSel> axes, Span s = {});
Expr make_dot(Expr a, Expr b, Span s = {});
Expr make_reduce(ReduceOp op, Expr value, std::optional<int> axis, bool keepdims, Span s = {});
Expr make_matmul(Expr a, Expr b, Span s = {});
Expr make_transpose(Expr v, Span s = {});
Expr make_fill(Expr value, std::vector<Expr> shape, Span s = {});

// i64 helpers for shape arithmetic.
Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator*(Expr a, Expr b);
Expr operator/(Expr a, Expr b);
Expr min(Expr a, Expr b);
Expr max(Expr a, Expr b);
// The operands of a chain of one associative op: max(a, max(b, c)) -> a, b, c.
std::vector<Expr> chain_operands(const Expr& e, BinaryOp op);
inline Expr i64(int64_t v) { return IntImm::make(v); }

}  // namespace zyntax::cir
