#include "backends/reference/reference_executor.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>

#include "cir/printer.hpp"
#include "cir/visitor.hpp"
#include "runtime/tensor_ops.hpp"
#include "support/diagnostics.hpp"

namespace zyntax {

namespace {

using cir::Expr;

[[noreturn]] void fail(Span span, const std::string& msg) { throw Error(span, msg); }

// A GPU schedule runs its thread loops one after another; on a GPU their
// iterations run at once. So that the serial run proves the parallel one,
// each element of the output and of a block's shared arrays remembers which
// thread wrote or read it since the last barrier, and an access by another
// thread where one of the two writes is a data race: an error.
// Elements are told apart by a key (RaceKey): arrays placed in one block's
// shared memory share their keys where they share bytes.
struct GpuRaces {
  static constexpr int64_t kNone = -2, kAll = -1, kMany = -3;  // kAll: code outside thread loops, run by every thread
  struct Touch {
    int64_t writer = kNone, reader = kNone;
  };
  int64_t thread = kAll;  // the thread loop iteration running now
  std::unordered_map<uint64_t, Touch> touched;
  std::unordered_map<uint64_t, int64_t> in_flight;  // elements an asynchronous copy has yet to land in, and its thread

  static std::string who(int64_t th) {
    return th == kAll ? std::string("every thread") : th == kMany ? std::string("several threads") : "thread " + std::to_string(th);
  }

  void check(bool write, uint64_t key, int64_t flat, const std::string& name, Span span) {
    if (auto it = in_flight.find(key); it != in_flight.end())
      fail(span, "the GPU schedule's " + who(thread) + (write ? " writes " : " reads ") + "element " + std::to_string(flat) + " of " + name +
                     " while an asynchronous copy into it from " + who(it->second) + " has not landed (no async_wait covers it yet)");
    Touch& t = touched[key];
    auto other = [&](int64_t who) { return who != kNone && (who != thread || who == kMany); };
    int64_t against = other(t.writer) ? t.writer : write && other(t.reader) ? t.reader : kNone;
    if (against != kNone) {
      fail(span, "data race in the GPU schedule: " + who(thread) + (write ? " writes " : " reads ") + "element " + std::to_string(flat) + " of " + name +
                     ", which " + who(against) + (against == t.writer ? " wrote" : " read") + " since the last barrier");
    }
    if (write) t.writer = thread;
    else t.reader = t.reader == kNone || t.reader == thread ? thread : kMany;
  }
  void barrier() { touched.clear(); }
};

// Asynchronous copies (cir::AsyncCopy) of each thread of a GPU block: the
// elements it started copying, then its committed groups, oldest first. An
// element lands, written by its thread, when a wait covers its group; until
// then GpuRaces::in_flight makes any access to it an error.
struct AsyncCopies {
  struct Landing {
    int slot;
    uint64_t key;
    int64_t flat;
    Scalar value;
    std::shared_ptr<const std::string> array;
    Span span;
  };
  struct Thread {
    std::vector<Landing> open;
    std::deque<std::vector<Landing>> groups;
  };
  std::map<int64_t, Thread> threads;

  bool all_landed() const {
    for (const auto& [id, t] : threads) {
      if (!t.open.empty()) return false;
      for (const std::vector<Landing>& g : t.groups)
        if (!g.empty()) return false;
    }
    return true;
  }
};

// Which element of the race record an access touches: the array's slot and
// the flat index; for an array at a byte offset in its block's shared
// memory, the region and the element's first byte.
struct RaceKey {
  static constexpr int kSharedRegion = 0xffffff;  // above every slot
  int slot = 0;
  int64_t base = 0, scale = 1;
  uint64_t at(int64_t flat) const { return static_cast<uint64_t>(slot) << 40 ^ static_cast<uint64_t>(base + flat * scale); }
};

// Running state of one launch: every local, loop variable, scalar parameter
// and buffer has a numbered slot, scalars and tiles apart.
struct Frame {
  std::vector<Scalar> scalars;
  std::vector<Tensor> tiles;
  // Reduce kernels: the accumulators of the output elements.
  Tensor acc;                 // Sum/Product/Min/Max/And/Or (floats in f64)
  Tensor best;                // ArgMin/ArgMax: the best value so far
  std::vector<bool> has_best;
  GpuRaces races;
  AsyncCopies async_copies;
  Tensor shared_region;  // bytes of a block's placed shared arrays
};

using ScalarFn = std::function<Scalar(Frame&)>;
using TileFn = std::function<Tensor(Frame&)>;
using StmtFn = std::function<void(Frame&)>;

// Runs `f`, turning data errors from the tensor library into located errors.
template <class F>
auto located(Span span, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const DataError& e) {
    fail(span, e.what());
  } catch (const ScalarError& e) {
    fail(span, e.message);
  }
}

Tensor as_tensor(const Scalar& s) { return Tensor::scalar(s); }

}  // namespace

struct ReferenceKernel::Compiled {
  std::map<std::string, int> scalar_slot;
  std::map<std::string, cir::Type> local_type;  // Decl'd locals
  std::map<std::string, DType> array_dtype;     // Allocate'd arrays
  std::set<std::string> raced_;                 // buffers whose accesses are checked for data races (GpuRaces)
  std::map<std::string, RaceKey> placed_keys_;  // race keys of the shared arrays placed at byte offsets
  int64_t shared_region_bytes = 0;              // the bytes those arrays span
  int gpu_block_depth_ = 0;                     // GPU block loops around the statement being translated
  DType yield_dtype = DType::F32;              // arg reductions compare values of this dtype
  std::map<std::string, int> tile_slot;
  std::vector<int> input_slots;
  std::vector<std::pair<std::string, int>> scalar_params;
  int out_slot = -1;
  std::vector<StmtFn> body;
  const cir::Kernel* k = nullptr;

  int slot_for(const std::string& name, const cir::Type& t) {
    auto& table = t.is_scalar() ? scalar_slot : tile_slot;
    auto it = table.find(name);
    if (it != table.end()) return it->second;
    int n = static_cast<int>(table.size());
    table[name] = n;
    return n;
  }

  int scalar_of(const std::string& name) const { return scalar_slot.at(name); }
  int tile_of(const std::string& name) const { return tile_slot.at(name); }

  // ------------------------------------------------------------ expressions

  ScalarFn scalar(const Expr& e) {
    if (!e->type.is_scalar()) throw std::logic_error("reference executor: tile where a scalar is needed: " + cir::print(e));
    Span span = e->span;
    switch (e->kind) {
      case cir::ExprKind::IntImm: {
        Scalar s = Scalar::from_int(e.as<cir::IntImm>()->value, e->type.dtype);
        return [s](Frame&) { return s; };
      }
      case cir::ExprKind::FloatImm: {
        Scalar s = Scalar::of_float(e.as<cir::FloatImm>()->value, e->type.dtype);
        return [s](Frame&) { return s; };
      }
      case cir::ExprKind::BoolImm: {
        Scalar s = Scalar::of_bool(e.as<cir::BoolImm>()->value);
        return [s](Frame&) { return s; };
      }
      case cir::ExprKind::Var: {
        int slot = scalar_of(e.as<cir::Var>()->name);
        return [slot](Frame& f) { return f.scalars[static_cast<size_t>(slot)]; };
      }
      case cir::ExprKind::Cast: {
        ScalarFn v = scalar(e.as<cir::Cast>()->value);
        DType to = e->type.dtype;
        return [v, to](Frame& f) { return cast(v(f), to); };
      }
      case cir::ExprKind::Unary: {
        ScalarFn v = scalar(e.as<cir::Unary>()->a);
        UnaryOp op = e.as<cir::Unary>()->op;
        return [v, op](Frame& f) { return eval_unary(op, v(f)); };
      }
      case cir::ExprKind::Binary: {
        const auto* b = e.as<cir::Binary>();
        ScalarFn x = scalar(b->a), y = scalar(b->b);
        BinaryOp op = b->op;
        if (op == BinaryOp::And)  // short-circuit, as written: `i < n and x[i] > 0`
          return [x, y](Frame& f) { return Scalar::of_bool(x(f).truthy() && y(f).truthy()); };
        if (op == BinaryOp::Or)
          return [x, y](Frame& f) { return Scalar::of_bool(x(f).truthy() || y(f).truthy()); };
        return [x, y, op, span](Frame& f) {
          Scalar a = x(f), c = y(f);
          try {
            return eval_binary(op, a, c);
          } catch (const ScalarError& err) {
            fail(span, err.message);
          }
        };
      }
      case cir::ExprKind::Select: {
        const auto* s = e.as<cir::Select>();
        ScalarFn c = scalar(s->cond), t = scalar(s->t), fl = scalar(s->f);
        return [c, t, fl](Frame& f) { return c(f).truthy() ? t(f) : fl(f); };
      }
      case cir::ExprKind::Math: {
        const auto* m = e.as<cir::Math>();
        std::vector<ScalarFn> args;
        for (const Expr& a : m->args) args.push_back(scalar(a));
        MathFn fn = m->fn;
        return [args, fn](Frame& f) {
          Scalar v[3];
          for (size_t i = 0; i < args.size(); ++i) v[i] = args[i](f);
          return eval_math(fn, std::span<const Scalar>(v, args.size()));
        };
      }
      case cir::ExprKind::Access: return element_read(*e.as<cir::Access>());
      case cir::ExprKind::Dot: {
        const auto* d = e.as<cir::Dot>();
        TileFn a = tile(d->a), b = tile(d->b);
        return [a, b, span](Frame& f) {
          Tensor x = a(f), y = b(f);
          return located(span, [&] { return zyntax::dot(x, y); });
        };
      }
      case cir::ExprKind::Reduce: {
        const auto* r = e.as<cir::Reduce>();
        TileFn v = tile(r->value);
        ReduceOp op = r->op;
        return [v, op, span](Frame& f) {
          Tensor x = v(f);
          return located(span, [&] { return zyntax::reduce(op, x, std::nullopt, false).get(0); });
        };
      }
      case cir::ExprKind::MatMul: {
        const auto* m = e.as<cir::MatMul>();
        TileFn a = tile(m->a), b = tile(m->b);
        return [a, b, span](Frame& f) {
          Tensor x = a(f), y = b(f);
          return located(span, [&] { return zyntax::matmul(x, y).get(0); });
        };
      }
      case cir::ExprKind::GpuIndex:
        return [span](Frame&) -> Scalar { fail(span, "GPU thread coordinates have no meaning on the reference executor"); };
      default: throw std::logic_error("reference executor: unexpected scalar expression " + cir::print(e));
    }
  }

  TileFn tile(const Expr& e) {
    Span span = e->span;
    if (e->type.is_scalar()) {
      ScalarFn s = scalar(e);
      return [s](Frame& f) { return as_tensor(s(f)); };
    }
    switch (e->kind) {
      case cir::ExprKind::Var: {
        int slot = tile_of(e.as<cir::Var>()->name);
        return [slot](Frame& f) { return f.tiles[static_cast<size_t>(slot)]; };
      }
      case cir::ExprKind::Cast: {
        TileFn v = tile(e.as<cir::Cast>()->value);
        DType to = e->type.dtype;
        return [v, to](Frame& f) { return v(f).astype(to); };
      }
      case cir::ExprKind::Unary: {
        TileFn v = tile(e.as<cir::Unary>()->a);
        UnaryOp op = e.as<cir::Unary>()->op;
        return [v, op, span](Frame& f) {
          Tensor x = v(f);
          return located(span, [&] { return zyntax::unary(op, x); });
        };
      }
      case cir::ExprKind::Binary: {
        const auto* b = e.as<cir::Binary>();
        TileFn x = tile(b->a), y = tile(b->b);
        BinaryOp op = b->op;
        return [x, y, op, span](Frame& f) {
          Tensor a = x(f), c = y(f);
          return located(span, [&] { return zyntax::binary(op, a, c); });
        };
      }
      case cir::ExprKind::Select: {
        const auto* s = e.as<cir::Select>();
        TileFn c = tile(s->cond), t = tile(s->t), fl = tile(s->f);
        return [c, t, fl, span](Frame& f) {
          Tensor cond = c(f), a = t(f), b = fl(f);
          return located(span, [&] { return zyntax::where(cond, a, b); });
        };
      }
      case cir::ExprKind::Math: {
        const auto* m = e.as<cir::Math>();
        std::vector<TileFn> args;
        for (const Expr& a : m->args) args.push_back(tile(a));
        MathFn fn = m->fn;
        return [args, fn, span](Frame& f) {
          std::vector<Tensor> v;
          for (const TileFn& a : args) v.push_back(a(f));
          return located(span, [&] { return zyntax::math(fn, v); });
        };
      }
      case cir::ExprKind::Access: return region_read(*e.as<cir::Access>());
      case cir::ExprKind::Reduce: {
        const auto* r = e.as<cir::Reduce>();
        TileFn v = tile(r->value);
        ReduceOp op = r->op;
        std::optional<int64_t> axis;
        if (r->axis) axis = *r->axis;
        bool keep = r->keepdims;
        return [v, op, axis, keep, span](Frame& f) {
          Tensor x = v(f);
          return located(span, [&] { return zyntax::reduce(op, x, axis, keep); });
        };
      }
      case cir::ExprKind::MatMul: {
        const auto* m = e.as<cir::MatMul>();
        TileFn a = tile(m->a), b = tile(m->b);
        return [a, b, span](Frame& f) {
          Tensor x = a(f), y = b(f);
          return located(span, [&] { return zyntax::matmul(x, y); });
        };
      }
      case cir::ExprKind::Transpose: {
        TileFn v = tile(e.as<cir::Transpose>()->value);
        return [v, span](Frame& f) {
          Tensor x = v(f);
          return located(span, [&] { return zyntax::transpose(x); });
        };
      }
      case cir::ExprKind::Fill: {
        ScalarFn v = scalar(e.as<cir::Fill>()->value);
        std::vector<ScalarFn> dims;
        for (const Expr& d : e->type.shape) dims.push_back(scalar(d));
        DType t = e->type.dtype;
        return [v, dims, t, span](Frame& f) {
          Shape shape;
          for (const ScalarFn& d : dims) {
            int64_t n = d(f).as_int64();
            if (n < 0) fail(span, "a tile size is negative (" + std::to_string(n) + ")");
            shape.push_back(n);
          }
          return located(span, [&] { return Tensor::full(t, shape, cast(v(f), t)); });
        };
      }
      default: throw std::logic_error("reference executor: unexpected tile expression " + cir::print(e));
    }
  }

  // ------------------------------------------------------------ buffers

  // The slot holding a buffer (input, out, shared array or local tile).
  int buffer_slot(const std::string& name) const { return tile_of(name); }
  RaceKey race_key(const std::string& name, int slot) const {
    auto it = placed_keys_.find(name);
    return it != placed_keys_.end() ? it->second : RaceKey{slot};
  }

  // Flat offset of an element, every index checked against its axis.
  static int64_t flat_index(const Tensor& t, const std::vector<int64_t>& idx, const std::string& name, Span span) {
    if (static_cast<int64_t>(idx.size()) != t.rank())
      fail(span, "'" + name + "' has " + std::to_string(t.rank()) + " axes but is indexed with " + std::to_string(idx.size()));
    int64_t flat = 0;
    for (size_t a = 0; a < idx.size(); ++a) {
      int64_t n = t.shape()[a];
      if (idx[a] < 0 || idx[a] >= n) {
        std::string where = name + "[";
        for (size_t k = 0; k < idx.size(); ++k) where += (k ? ", " : "") + std::to_string(idx[k]);
        fail(span, "index out of bounds: " + where + "]: axis " + std::to_string(a) + " has size " + std::to_string(n));
      }
      flat = flat * n + idx[a];
    }
    return flat;
  }

  ScalarFn element_read(const cir::Access& a) {
    int slot = buffer_slot(a.buffer);
    std::vector<ScalarFn> idx;
    for (const cir::AxisSel& s : a.axes) idx.push_back(scalar(s.index));
    std::string name = a.buffer;
    Span span = a.span;
    bool track = raced_.count(name) > 0;
    RaceKey key = race_key(name, slot);
    return [slot, idx, name, span, track, key](Frame& f) {
      const Tensor& t = f.tiles[static_cast<size_t>(slot)];
      std::vector<int64_t> at(idx.size());
      for (size_t i = 0; i < idx.size(); ++i) at[i] = idx[i](f).as_int64();
      int64_t flat = flat_index(t, at, name, span);
      if (track) f.races.check(false, key.at(flat), flat, name, span);
      return t.get(flat);
    };
  }

  // Index/slice selections evaluated for one access; out of range indices
  // and negative slice starts are errors (kernels never wrap around).
  using SelFn = std::function<std::vector<AxisSelect>(Frame&, const Tensor&)>;

  SelFn selection(const std::vector<cir::AxisSel>& axes, const std::string& name, Span span) {
    struct Part {
      bool slice;
      ScalarFn index, lo, hi;
    };
    std::vector<Part> parts;
    for (const cir::AxisSel& s : axes) {
      Part p{s.is_slice, {}, {}, {}};
      if (s.is_slice) {
        if (s.lo.defined()) p.lo = scalar(s.lo);
        if (s.hi.defined()) p.hi = scalar(s.hi);
      } else {
        p.index = scalar(s.index);
      }
      parts.push_back(std::move(p));
    }
    return [parts, name, span](Frame& f, const Tensor& t) {
      if (parts.size() > static_cast<size_t>(t.rank()))
        fail(span, "'" + name + "' has " + std::to_string(t.rank()) + " axes but is indexed with " + std::to_string(parts.size()));
      std::vector<AxisSelect> sel;
      for (size_t a = 0; a < parts.size(); ++a) {
        const Part& p = parts[a];
        int64_t n = t.shape()[a];
        AxisSelect s;
        if (!p.slice) {
          s.kind = AxisSelect::Index;
          s.index = p.index(f).as_int64();
          if (s.index < 0 || s.index >= n)
            fail(span, "index out of bounds: " + name + " axis " + std::to_string(a) + " has size " + std::to_string(n) +
                           ", index is " + std::to_string(s.index));
        } else {
          s.kind = AxisSelect::Slice;
          int64_t lo = p.lo ? p.lo(f).as_int64() : 0;
          int64_t hi = p.hi ? p.hi(f).as_int64() : n;
          if (lo < 0) fail(span, "slice of " + name + " axis " + std::to_string(a) + " starts at " + std::to_string(lo));
          s.begin = std::min(lo, n);
          s.end = std::max(std::min(hi, n), std::min(lo, n));
        }
        sel.push_back(s);
      }
      return sel;
    };
  }

  TileFn region_read(const cir::Access& a) {
    int slot = buffer_slot(a.buffer);
    SelFn sel = selection(a.axes, a.buffer, a.span);
    Span span = a.span;
    return [slot, sel, span](Frame& f) {
      const Tensor& t = f.tiles[static_cast<size_t>(slot)];
      std::vector<AxisSelect> s = sel(f, t);
      return located(span, [&] { return zyntax::select(t, s).clone(); });
    };
  }

  // ------------------------------------------------------------ statements

  std::vector<StmtFn> block(const cir::Block& b) {
    std::vector<StmtFn> out;
    for (const cir::Stmt& s : b) out.push_back(stmt(s));
    return out;
  }

  static void run_block(const std::vector<StmtFn>& b, Frame& f) {
    for (const StmtFn& s : b) s(f);
  }

  StmtFn stmt(const cir::Stmt& s) {
    Span span = s->span;
    switch (s->kind) {
      case cir::StmtKind::For: {
        const auto* fr = s.as<cir::For>();
        ScalarFn lo = scalar(fr->lo), hi = scalar(fr->hi), step = scalar(fr->step);
        int var = slot_for(fr->var, cir::Type::scalar(DType::I64));
        // GPU loops run as serial loops: a block's thread loops one after
        // another, which is what the barriers between them promise.
        bool gpu_block = fr->loop_kind == cir::LoopKind::GpuBlock, gpu_thread = fr->loop_kind == cir::LoopKind::GpuThread;
        gpu_block_depth_ += gpu_block;
        auto body = std::make_shared<std::vector<StmtFn>>(block(fr->body));
        gpu_block_depth_ -= gpu_block;
        return [lo, hi, step, var, body, gpu_block, gpu_thread, span](Frame& f) {
          int64_t l = lo(f).as_int64(), h = hi(f).as_int64(), st = step(f).as_int64();
          if (st <= 0) fail(span, "loop step must be positive, got " + std::to_string(st));
          int64_t outer_thread = f.races.thread;
          for (int64_t i = l; i < h; i += st) {
            f.scalars[static_cast<size_t>(var)] = Scalar::of_int(i);
            if (gpu_block) f.races.barrier();  // blocks share nothing but the output, which rows split
            if (gpu_thread) f.races.thread = (i - l) / st;
            run_block(*body, f);
            if (gpu_block && !f.async_copies.all_landed())
              fail(span, "a GPU block ends with asynchronous copies that no async_wait covers");
            if (gpu_block) f.async_copies.threads.clear();
            if (h - i < st) break;  // no overflow past the end
          }
          f.races.thread = outer_thread;
        };
      }
      case cir::StmtKind::If: {
        const auto* i = s.as<cir::If>();
        ScalarFn c = scalar(i->cond);
        auto t = std::make_shared<std::vector<StmtFn>>(block(i->then_body));
        auto e = std::make_shared<std::vector<StmtFn>>(block(i->else_body));
        return [c, t, e](Frame& f) { run_block(c(f).truthy() ? *t : *e, f); };
      }
      case cir::StmtKind::Let: {
        const auto* l = s.as<cir::Let>();
        return set_local(l->name, l->value->type, l->value);
      }
      case cir::StmtKind::Decl: {
        const auto* d = s.as<cir::Decl>();
        local_type[d->name] = d->type;
        return set_local(d->name, d->type, d->init);
      }
      case cir::StmtKind::Assign: {
        // An assignment keeps the variable's declared kind and dtype.
        const auto* a = s.as<cir::Assign>();
        return set_local(a->name, local_type.at(a->name), a->value);
      }
      case cir::StmtKind::Store: return store(*s.as<cir::Store>());
      case cir::StmtKind::Yield: return yield(*s.as<cir::Yield>());
      case cir::StmtKind::Allocate: {
        const auto* a = s.as<cir::Allocate>();
        int slot = slot_for(a->name, a->type);
        array_dtype[a->name] = a->type.dtype;
        std::vector<ScalarFn> dims;
        for (const Expr& d : a->type.shape) dims.push_back(scalar(d));
        DType t = a->type.dtype;
        // A GPU block's shared array starts undefined: NaN here, so that a
        // schedule reading an element before writing it gives a wrong result.
        bool poisoned = ((a->space == cir::MemorySpace::Shared && gpu_block_depth_ > 0) || a->space == cir::MemorySpace::Fragment) && is_float(t);
        if (a->space == cir::MemorySpace::Shared && gpu_block_depth_ > 0) raced_.insert(a->name);
        Scalar fill = poisoned ? Scalar::of_float(std::numeric_limits<double>::quiet_NaN(), t) : Scalar::of_int(0);
        // A placed array is a view of the bytes of the block's shared
        // memory, which other arrays share: a schedule whose lives overlap
        // reads what another array wrote (or NaN) or races with it.
        int64_t offset = a->offset, reserved = cir::allocation_bytes(*a);
        if (offset >= 0) {
          placed_keys_[a->name] = RaceKey{RaceKey::kSharedRegion, offset, static_cast<int64_t>(dtype_size(t))};
          shared_region_bytes = std::max(shared_region_bytes, offset + cir::shared_footprint(reserved));
        }
        std::string name = a->name;
        return [slot, dims, t, poisoned, fill, offset, reserved, name, span](Frame& f) {
          Shape shape;
          for (const ScalarFn& d : dims) {
            int64_t n = d(f).as_int64();
            if (n < 0) fail(span, "array size is negative (" + std::to_string(n) + ")");
            shape.push_back(n);
          }
          Tensor& array = f.tiles[static_cast<size_t>(slot)];
          if (offset < 0) {
            array = poisoned ? Tensor::full(t, shape, fill) : Tensor::zeros(t, shape);
            return;
          }
          size_t bytes = located(span, [&] { return Tensor::bytes_for(t, shape); });
          if (static_cast<int64_t>(bytes) > reserved)
            fail(span, "shared array '" + name + "' of shape " + shape_str(shape) + " needs " + std::to_string(bytes) + " bytes, more than the " +
                           std::to_string(reserved) + " its schedule placed");
          array = f.shared_region.bytes_view(static_cast<size_t>(offset), t, shape);
          for (int64_t i = 0; i < array.numel(); ++i) array.set(i, fill);
        };
      }
      case cir::StmtKind::Check: {
        ScalarFn c = scalar(s.as<cir::Check>()->cond);
        std::string message = s.as<cir::Check>()->message;
        return [c, message, span](Frame& f) {
          if (!c(f).truthy()) fail(span, message);
        };
      }
      case cir::StmtKind::Barrier:
        // One thread runs every iteration in order: all writes before the
        // barrier are already visible after it; only the race record ends.
        return [](Frame& f) { f.races.barrier(); };
      case cir::StmtKind::Atomic: {
        const auto* a = s.as<cir::Atomic>();
        int slot = buffer_slot(a->buffer);
        std::vector<ScalarFn> idx;
        for (const Expr& e : a->index) idx.push_back(scalar(e));
        ScalarFn v = scalar(a->value);
        cir::AtomicOp op = a->op;
        std::string name = a->buffer;
        return [slot, idx, v, op, name, span](Frame& f) {
          Tensor& t = f.tiles[static_cast<size_t>(slot)];
          std::vector<int64_t> at(idx.size());
          for (size_t i = 0; i < idx.size(); ++i) at[i] = idx[i](f).as_int64();
          int64_t flat = flat_index(t, at, name, span);
          Scalar cur = t.get(flat), x = cast(v(f), t.dtype());
          Scalar r = x;
          switch (op) {
            case cir::AtomicOp::Add: r = eval_binary(BinaryOp::Add, cur, x); break;
            case cir::AtomicOp::Min: r = eval_binary(BinaryOp::Min, cur, x); break;
            case cir::AtomicOp::Max: r = eval_binary(BinaryOp::Max, cur, x); break;
            case cir::AtomicOp::And: r = eval_binary(BinaryOp::And, cur, x); break;
            case cir::AtomicOp::Or: r = eval_binary(BinaryOp::Or, cur, x); break;
            case cir::AtomicOp::Exchange: break;
          }
          t.set(flat, r);
        };
      }
      case cir::StmtKind::MatMulBlock: return matmul_block(*s.as<cir::MatMulBlock>());
      case cir::StmtKind::TileMma: return tile_mma(*s.as<cir::TileMma>());
      case cir::StmtKind::AsyncCopy: return async_copy(*s.as<cir::AsyncCopy>());
      case cir::StmtKind::WarpgroupProduct: return warpgroup_product(*s.as<cir::WarpgroupProduct>());
      case cir::StmtKind::WarpgroupAttention: return warpgroup_attention(*s.as<cir::WarpgroupAttention>());
      case cir::StmtKind::BlockReduce: {
        // In element order; a GPU's order differs only by rounding.
        const auto* r = s.as<cir::BlockReduce>();
        int array = buffer_slot(r->array);
        ScalarFn count = scalar(r->count);
        ReduceOp op = r->op;
        std::string name = r->array;
        int slot = slot_for(r->name, cir::Type::scalar(array_dtype.at(r->array)));
        return [array, count, op, slot, name, span](Frame& f) {
          f.races.barrier();  // a block reduction begins and ends with barriers
          const Tensor& t = f.tiles[static_cast<size_t>(array)];
          int64_t n = count(f).as_int64();
          if (n < 0 || n > t.numel()) fail(span, "block_reduce over " + std::to_string(n) + " elements of " + name + ", which has " + std::to_string(t.numel()));
          Scalar acc = reduce_identity(op, t.dtype());
          for (int64_t i = 0; i < n; ++i) acc = reduce_combine(op, acc, t.get(i));
          f.scalars[static_cast<size_t>(slot)] = cast(acc, t.dtype());
        };
      }
    }
    throw std::logic_error("reference executor: unknown statement");
  }

  // A tensor-core tile product, element by element: each factor rounded to
  // the precision it is read in (TF32 for f32), products exact, sums in f32
  // in p order (a GPU's order differs, and so its result, by rounding). The
  // block's warps run it together: its shared reads and writes are checked
  // for races against the threads' accesses like code outside thread loops.
  StmtFn tile_mma(const cir::TileMma& m) {
    using Step = cir::TileMma::Step;
    int acc = buffer_slot(m.acc);
    int sa = m.step == Step::Accumulate ? buffer_slot(m.a) : -1, sb = m.step == Step::Accumulate ? buffer_slot(m.b) : -1;
    int sd = m.step == Step::Store ? buffer_slot(m.d) : -1;
    bool track_a = raced_.count(m.a) > 0, track_b = raced_.count(m.b) > 0, track_d = raced_.count(m.d) > 0;
    RaceKey key_a = race_key(m.a, sa), key_b = race_key(m.b, sb), key_d = race_key(m.d, sd);
    Step step = m.step;
    int64_t depth = m.depth, lda = m.lda, ldb = m.ldb, row0 = m.row0, count = m.count, ldd = m.ldd;
    bool b_transposed = m.b_transposed, a_exact = m.a_exact, b_exact = m.b_exact;
    std::string a_name = m.a, b_name = m.b, d_name = m.d;
    Span span = m.span;
    return [=](Frame& f) {
      Tensor& c = f.tiles[static_cast<size_t>(acc)];
      int64_t rows = c.shape()[0], cols = c.shape()[1];
      float* cv = c.data_as<float>();
      if (step == Step::Zero) {
        std::fill(cv, cv + rows * cols, 0.0f);
        return;
      }
      if (step == Step::Store) {
        Tensor& d = f.tiles[static_cast<size_t>(sd)];
        for (int64_t r = 0; r < count; ++r)
          for (int64_t j = 0; j < cols; ++j) {
            if (track_d) f.races.check(true, key_d.at(r * ldd + j), r * ldd + j, d_name, span);
            d.set(r * ldd + j, Scalar::of_float(cv[(row0 + r) * cols + j], DType::F32));
          }
        return;
      }
      const Tensor& a = f.tiles[static_cast<size_t>(sa)];
      const Tensor& b = f.tiles[static_cast<size_t>(sb)];
      bool tf32 = a.dtype() == DType::F32;
      // An exact factor is read as the units read an unrounded one: its low
      // 13 mantissa bits dropped (nothing, for values that are exact).
      auto factor = [&](const Tensor& t, const RaceKey& key, bool track, int64_t flat, const std::string& name, bool exact) {
        if (track) f.races.check(false, key.at(flat), flat, name, span);
        auto v = static_cast<float>(t.get_f64(flat));
        if (!tf32) return v;
        return exact ? std::bit_cast<float>(std::bit_cast<uint32_t>(v) & 0xffffe000u) : round_to_tf32(v);
      };
      std::vector<float> av(static_cast<size_t>(rows * depth)), bv(static_cast<size_t>(depth * cols));
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t p = 0; p < depth; ++p) av[static_cast<size_t>(r * depth + p)] = factor(a, key_a, track_a, r * lda + p, a_name, a_exact);
      for (int64_t p = 0; p < depth; ++p)
        for (int64_t j = 0; j < cols; ++j) {
          int64_t at = b_transposed ? j * ldb + p : p * ldb + j;
          bv[static_cast<size_t>(p * cols + j)] = factor(b, key_b, track_b, at, b_name, b_exact);
        }
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < cols; ++j) {
          float s = cv[r * cols + j];
          for (int64_t p = 0; p < depth; ++p) s += av[static_cast<size_t>(r * depth + p)] * bv[static_cast<size_t>(p * cols + j)];  // exact products
          cv[r * cols + j] = s;
        }
    };
  }

  // A block's share of a warpgroup product (ir.hpp's WarpgroupProduct), as
  // its comment defines it: tile after tile in the grouped order, each
  // element a sum in f32 in depth order of exact products of its factors
  // (TF32 for f32 ones), then the epilogue with the element bound. The
  // block's threads run it together, like a tile_mma: the epilogue's writes
  // are checked for races as code outside thread loops. The stages are the
  // copy engine's and the matrix units' alone: nothing here touches them.
  StmtFn warpgroup_product(const cir::WarpgroupProduct& p) {
    ScalarFn first = scalar(p.first_tile), stride = scalar(p.tile_stride);
    std::optional<ScalarFn> rank_of;
    if (p.cluster_rank.defined()) rank_of = scalar(p.cluster_rank);
    int sa = buffer_slot(p.a.buffer), sb = buffer_slot(p.b.buffer);
    int batch_var = slot_for(p.batch_var, cir::Type::scalar(DType::I64)), row = slot_for(p.row, cir::Type::scalar(DType::I64));
    int col = slot_for(p.col, cir::Type::scalar(DType::I64)), value = slot_for(p.value, cir::Type::scalar(DType::F32));
    auto epilogue = std::make_shared<std::vector<StmtFn>>(block(p.epilogue));
    cir::ProductOperand a = p.a, b = p.b;
    int64_t turns = p.turns(), pair_row_tiles = p.pair_row_tiles(), col_tiles = p.col_tiles(), group = p.group, depth = p.depth;
    int64_t tile_rows = p.tile_rows, tile_cols = p.tile_cols, cluster = p.cluster;
    Span span = p.span;
    return [=](Frame& f) {
      int64_t t0 = first(f).as_int64(), st = stride(f).as_int64();
      if (st <= 0) fail(span, "warpgroup_product takes every " + std::to_string(st) + "th tile");
      if (t0 < 0) fail(span, "warpgroup_product starts at tile " + std::to_string(t0));
      int64_t rank = rank_of ? (*rank_of)(f).as_int64() : 0;
      if (rank < 0 || rank >= cluster)
        fail(span, "warpgroup_product's block is at place " + std::to_string(rank) + " of a cluster of " + std::to_string(cluster));
      const Tensor& ta = f.tiles[static_cast<size_t>(sa)];
      const Tensor& tb = f.tiles[static_cast<size_t>(sb)];
      // A factor tile, side by depth, zero outside the view.
      auto gather = [&](const Tensor& t, const cir::ProductOperand& o, int64_t side0, int64_t sides, int64_t batch, std::vector<float>& out) {
        bool tf32 = o.dtype == DType::F32;
        out.assign(static_cast<size_t>(sides * depth), 0.0f);
        for (int64_t i = 0; i < sides; ++i)
          for (int64_t d = 0; d < depth; ++d) {
            if (!o.inside(side0 + i, d)) continue;
            int64_t flat = o.flat_index(side0 + i, d, batch);
            if (flat < 0 || flat >= t.numel())
              fail(span, "warpgroup_product reads element " + std::to_string(flat) + " of " + o.buffer + ", which has " + std::to_string(t.numel()));
            auto v = static_cast<float>(t.get_f64(flat));
            out[static_cast<size_t>(i * depth + d)] = tf32 ? round_to_tf32(v) : v;
          }
      };
      std::vector<float> av, bv;
      for (int64_t turn = t0; turn < turns; turn += st) {
        cir::ProductTile pt = cir::product_tile(turn, pair_row_tiles, col_tiles, group);
        int64_t r0 = (pt.row_tile * cluster + rank) * tile_rows, c0 = pt.col_tile * tile_cols;
        gather(ta, a, r0, tile_rows, pt.batch, av);
        gather(tb, b, c0, tile_cols, pt.batch, bv);
        for (int64_t r = 0; r < tile_rows; ++r)
          for (int64_t c = 0; c < tile_cols; ++c) {
            float sum = 0.0f;
            for (int64_t d = 0; d < depth; ++d) sum += av[static_cast<size_t>(r * depth + d)] * bv[static_cast<size_t>(c * depth + d)];
            f.scalars[static_cast<size_t>(batch_var)] = Scalar::of_int(pt.batch);
            f.scalars[static_cast<size_t>(row)] = Scalar::of_int(r0 + r);
            f.scalars[static_cast<size_t>(col)] = Scalar::of_int(c0 + c);
            f.scalars[static_cast<size_t>(value)] = Scalar::of_float(sum, DType::F32);
            run_block(*epilogue, f);
          }
        if (turns - turn <= st) break;  // no overflow past the end
      }
    };
  }

  // A block's share of a warpgroup attention (ir.hpp's WarpgroupAttention),
  // as its comment defines it: query-row tile after tile in attention_tile's
  // order; for each row the scores are f32 sums in head-dimension order of
  // exact products, the softmax is taken against the row's largest score,
  // and the weights, rounded to the values' dtype as the matrix units read
  // them, multiply the values in key order with f32 sums; then the epilogue
  // runs for each element of the tile. Like warpgroup_product, the block's
  // threads run it together (the epilogue's writes are checked for races as
  // code outside thread loops) and nothing here touches the stages.
  StmtFn warpgroup_attention(const cir::WarpgroupAttention& a) {
    ScalarFn first = scalar(a.first_tile), stride = scalar(a.tile_stride);
    int sq = buffer_slot(a.q.buffer), sk = buffer_slot(a.k.buffer), sv = buffer_slot(a.v.buffer);
    int batch_var = slot_for(a.batch_var, cir::Type::scalar(DType::I64)), row = slot_for(a.row, cir::Type::scalar(DType::I64));
    int col = slot_for(a.col, cir::Type::scalar(DType::I64)), value = slot_for(a.value, cir::Type::scalar(DType::F32));
    auto epilogue = std::make_shared<std::vector<StmtFn>>(block(a.epilogue));
    cir::ProductOperand q = a.q, k = a.k, v = a.v;
    int64_t tiles = a.tiles(), row_tiles = a.row_tiles(), batches = a.batches, keys = a.keys, head_dim = a.head_dim, tile_rows = a.tile_rows;
    auto scale = static_cast<float>(a.scale);
    bool causal = a.causal;
    DType weight = a.v.dtype;
    Span span = a.span;
    return [=](Frame& f) {
      int64_t t0 = first(f).as_int64(), st = stride(f).as_int64();
      if (st <= 0) fail(span, "warpgroup_attention takes every " + std::to_string(st) + "th tile");
      if (t0 < 0) fail(span, "warpgroup_attention starts at tile " + std::to_string(t0));
      const Tensor& tq = f.tiles[static_cast<size_t>(sq)];
      const Tensor& tk = f.tiles[static_cast<size_t>(sk)];
      const Tensor& tv = f.tiles[static_cast<size_t>(sv)];
      // An operand's element (side, depth) of a batch element, zero outside the view.
      auto read = [&](const Tensor& t, const cir::ProductOperand& o, int64_t side, int64_t depth, int64_t batch) {
        if (!o.inside(side, depth)) return 0.0f;
        int64_t flat = o.flat_index(side, depth, batch);
        if (flat < 0 || flat >= t.numel())
          fail(span, "warpgroup_attention reads element " + std::to_string(flat) + " of " + o.buffer + ", which has " + std::to_string(t.numel()));
        return static_cast<float>(t.get_f64(flat));
      };
      // P V reads the weights in the values' dtype.
      auto rounded = [weight](float p) {
        if (weight == DType::BF16) return bf16_to_f32(f32_to_bf16(p));
        if (weight == DType::F16) return f16_to_f32(f32_to_f16(p));
        return p;
      };
      std::vector<float> kv, vv, qv, scores, out;
      for (int64_t tile = t0; tile < tiles; tile += st) {
        cir::AttentionTile at = cir::attention_tile(tile, batches, row_tiles);
        int64_t b = at.batch, r0 = at.row_tile * tile_rows;
        // The batch element's keys and values, key by head dimension.
        kv.assign(static_cast<size_t>(keys * head_dim), 0.0f);
        vv.assign(static_cast<size_t>(keys * head_dim), 0.0f);
        for (int64_t j = 0; j < keys; ++j)
          for (int64_t d = 0; d < head_dim; ++d) {
            kv[static_cast<size_t>(j * head_dim + d)] = read(tk, k, j, d, b);
            vv[static_cast<size_t>(j * head_dim + d)] = read(tv, v, d, j, b);  // MN-major: the head dimension is the side
          }
        qv.resize(static_cast<size_t>(head_dim));
        out.resize(static_cast<size_t>(head_dim));
        for (int64_t r = r0; r < r0 + tile_rows; ++r) {
          for (int64_t d = 0; d < head_dim; ++d) qv[static_cast<size_t>(d)] = read(tq, q, r, d, b);
          int64_t seen = causal ? std::min(keys, r + 1) : keys;
          scores.resize(static_cast<size_t>(seen));
          float m = -std::numeric_limits<float>::infinity();
          for (int64_t j = 0; j < seen; ++j) {
            float sum = 0.0f;
            for (int64_t d = 0; d < head_dim; ++d) sum += qv[static_cast<size_t>(d)] * kv[static_cast<size_t>(j * head_dim + d)];  // exact products
            scores[static_cast<size_t>(j)] = scale * sum;
            m = std::max(m, scores[static_cast<size_t>(j)]);
          }
          std::fill(out.begin(), out.end(), 0.0f);
          float l = 0.0f;
          for (int64_t j = 0; j < seen; ++j) {
            float p = std::exp(scores[static_cast<size_t>(j)] - m);
            l += p;
            float w = rounded(p);
            for (int64_t c = 0; c < head_dim; ++c) out[static_cast<size_t>(c)] += w * vv[static_cast<size_t>(j * head_dim + c)];
          }
          for (int64_t c = 0; c < head_dim; ++c) {
            f.scalars[static_cast<size_t>(batch_var)] = Scalar::of_int(b);
            f.scalars[static_cast<size_t>(row)] = Scalar::of_int(r);
            f.scalars[static_cast<size_t>(col)] = Scalar::of_int(c);
            // With no keys there is nothing to weigh.
            f.scalars[static_cast<size_t>(value)] = Scalar::of_float(seen > 0 ? out[static_cast<size_t>(c)] / l : 0.0f, DType::F32);
            run_block(*epilogue, f);
          }
        }
        if (tiles - tile <= st) break;  // no overflow past the end
      }
    };
  }

  // A step of a thread's asynchronous copies (AsyncCopies). A copy is
  // checked as its thread's write both when it starts and when it lands,
  // since on a GPU it may land at any time between.
  StmtFn async_copy(const cir::AsyncCopy& c) {
    using Step = cir::AsyncCopy::Step;
    Span span = c.span;
    if (c.step == Step::Commit)
      return [](Frame& f) {
        AsyncCopies::Thread& t = f.async_copies.threads[f.races.thread];
        t.groups.push_back(std::move(t.open));
        t.open.clear();
      };
    if (c.step == Step::Wait) {
      size_t pending = static_cast<size_t>(c.pending);
      return [pending](Frame& f) {
        AsyncCopies::Thread& t = f.async_copies.threads[f.races.thread];
        while (t.groups.size() > pending) {
          for (const AsyncCopies::Landing& l : t.groups.front()) {
            f.races.in_flight.erase(l.key);
            f.races.check(true, l.key, l.flat, *l.array, l.span);
            f.tiles[static_cast<size_t>(l.slot)].set(l.flat, l.value);
          }
          t.groups.pop_front();
        }
      };
    }
    int dst = buffer_slot(c.dst), src = buffer_slot(c.src);
    RaceKey key = race_key(c.dst, dst);
    ScalarFn dst_index = scalar(c.dst_index), valid = scalar(c.valid);
    std::vector<ScalarFn> src_index;
    for (const Expr& e : c.src_index) src_index.push_back(scalar(e));
    int64_t count = c.count;
    std::string dst_name = c.dst, src_name = c.src;
    auto array = std::make_shared<const std::string>(c.dst);
    return [=](Frame& f) {
      Tensor& d = f.tiles[static_cast<size_t>(dst)];
      const Tensor& from = f.tiles[static_cast<size_t>(src)];
      int64_t at = dst_index(f).as_int64(), n = valid(f).as_int64();
      if (at < 0 || at + count > d.numel() || at % count)
        fail(span, "async_copy of " + std::to_string(count) + " elements into " + dst_name + " at element " + std::to_string(at) + ", which has " +
                       std::to_string(d.numel()) + " (the run must lie inside it, at a multiple of its length)");
      if (n < 0 || n > count) fail(span, "async_copy reads " + std::to_string(n) + " elements of a run of " + std::to_string(count));
      int64_t first = 0;
      if (n > 0) {
        std::vector<int64_t> idx(src_index.size());
        for (size_t i = 0; i < idx.size(); ++i) idx[i] = src_index[i](f).as_int64();
        first = flat_index(from, idx, src_name, span);
        idx.back() += n - 1;
        flat_index(from, idx, src_name, span);  // the run's last element read is on the same axis
        if (first % count) fail(span, "async_copy from " + src_name + " at element " + std::to_string(first) + ", not a multiple of its run of " + std::to_string(count));
      }
      std::vector<AsyncCopies::Landing>& open = f.async_copies.threads[f.races.thread].open;
      for (int64_t i = 0; i < count; ++i) {
        uint64_t k = key.at(at + i);
        f.races.check(true, k, at + i, dst_name, span);
        f.races.in_flight[k] = f.races.thread;
        open.push_back({dst, k, at + i, i < n ? from.get(first + i) : Scalar::from_int(0, d.dtype()), array, span});
      }
    };
  }

  // A register block of a packed product, element by element, with the fused
  // multiply-adds in k order that the vector micro-kernels use.
  StmtFn matmul_block(const cir::MatMulBlock& m) {
    int sa = buffer_slot(m.a), sb = buffer_slot(m.b), sc = buffer_slot(m.c);
    std::vector<ScalarFn> ci;
    for (const Expr& e : m.c_index) ci.push_back(scalar(e));
    ScalarFn ars = scalar(m.a_row_stride), aks = scalar(m.a_k_stride);
    ScalarFn ao = scalar(m.a_offset), bo = scalar(m.b_offset), ldb = scalar(m.ldb), kc = scalar(m.kc), ldc = scalar(m.ldc);
    ScalarFn mv = scalar(m.m_valid), nv = scalar(m.n_valid), acc = scalar(m.accumulate);
    int64_t rows = m.rows, cols = m.cols;
    std::string name = m.c;
    Span span = m.span;
    // A table of row offsets: each row is checked against the table's bound
    // and the bound against B, as the native code checks only the bound.
    bool table = !m.b_rows.empty();
    int st = table ? buffer_slot(m.b_rows) : -1;
    ScalarFn rows_at = table ? scalar(m.b_rows_at) : ScalarFn();
    int64_t rows_max = m.b_rows_max;
    return [=](Frame& f) {
      const Tensor& a = f.tiles[static_cast<size_t>(sa)];
      const Tensor& b = f.tiles[static_cast<size_t>(sb)];
      Tensor& c = f.tiles[static_cast<size_t>(sc)];
      std::vector<int64_t> at(ci.size());
      for (size_t i = 0; i < ci.size(); ++i) at[i] = ci[i](f).as_int64();
      int64_t base = flat_index(c, at, name, span);
      int64_t a0 = ao(f).as_int64(), b0 = bo(f).as_int64(), lb = ldb(f).as_int64(), k = kc(f).as_int64(), ld = ldc(f).as_int64();
      int64_t mr = mv(f).as_int64(), nr = nv(f).as_int64();
      int64_t rs = ars(f).as_int64(), ks = aks(f).as_int64();
      bool add = acc(f).truthy();
      std::vector<int64_t> b_row(static_cast<size_t>(std::max<int64_t>(k, 0)));
      bool rows_ok = true;
      if (table) {
        const Tensor& t = f.tiles[static_cast<size_t>(st)];
        int64_t t0 = rows_at(f).as_int64();
        rows_ok = t0 >= 0 && t0 + k <= t.numel() && b0 + rows_max + cols <= b.numel();
        for (int64_t p = 0; rows_ok && p < k; ++p) {
          b_row[static_cast<size_t>(p)] = t.data_as<int64_t>()[t0 + p];
          rows_ok = b_row[static_cast<size_t>(p)] >= 0 && b_row[static_cast<size_t>(p)] <= rows_max;
        }
      } else {
        rows_ok = lb >= cols && (k == 0 || b0 + (k - 1) * lb + cols <= b.numel());
        for (int64_t p = 0; p < k; ++p) b_row[static_cast<size_t>(p)] = p * lb;
      }
      if (k < 0 || a0 < 0 || b0 < 0 || rs < 0 || ks < 0 || (k > 0 && a0 + (rows - 1) * rs + (k - 1) * ks >= a.numel()) || !rows_ok || mr > rows || nr > cols ||
          (mr > 0 && nr > 0 && base + (mr - 1) * ld + nr > c.numel()))
        fail(span, "matmul_block out of the bounds of its buffers");
      const float* pa = a.data_as<float>();
      const float* pb = b.data_as<float>();
      float* pc = c.data_as<float>();
      for (int64_t r = 0; r < mr; ++r)
        for (int64_t j = 0; j < nr; ++j) {
          float sum = 0.0f;
          for (int64_t p = 0; p < k; ++p) sum = std::fma(pa[a0 + r * rs + p * ks], pb[b0 + b_row[static_cast<size_t>(p)] + j], sum);
          float& out = pc[base + r * ld + j];
          out = add ? out + sum : sum;
        }
    };
  }

  // Sets a scalar or tile local. Tiles have value semantics: the local gets a
  // copy, so later writes to it never reach where the value came from.
  StmtFn set_local(const std::string& name, const cir::Type& type, const Expr& value) {
    DType t = type.dtype;
    int slot = slot_for(name, type);
    if (type.is_scalar()) {
      if (!value.defined()) return [slot, t](Frame& f) { f.scalars[static_cast<size_t>(slot)] = Scalar::from_int(0, t); };
      ScalarFn v = scalar(value);
      return [slot, v, t](Frame& f) { f.scalars[static_cast<size_t>(slot)] = cast(v(f), t); };
    }
    if (!value.defined()) return [slot, t](Frame& f) { f.tiles[static_cast<size_t>(slot)] = Tensor::zeros(t, {}); };
    TileFn v = tile(value);
    return [slot, v, t](Frame& f) { f.tiles[static_cast<size_t>(slot)] = v(f).astype(t).clone(); };
  }

  StmtFn store(const cir::Store& st) {
    int slot = buffer_slot(st.buffer);
    std::string name = st.buffer;
    Span span = st.span;
    bool element = !st.axes.empty() && st.value->type.is_scalar();
    for (const cir::AxisSel& a : st.axes) element = element && !a.is_slice;
    if (element) {
      std::vector<ScalarFn> idx;
      for (const cir::AxisSel& a : st.axes) idx.push_back(scalar(a.index));
      ScalarFn v = scalar(st.value);
      bool track = raced_.count(name) > 0;
      RaceKey key = race_key(name, slot);
      return [slot, idx, v, name, span, track, key](Frame& f) {
        Tensor& t = f.tiles[static_cast<size_t>(slot)];
        std::vector<int64_t> at(idx.size());
        for (size_t i = 0; i < idx.size(); ++i) at[i] = idx[i](f).as_int64();
        if (at.size() == static_cast<size_t>(t.rank())) {
          Scalar x = v(f);
          int64_t flat = flat_index(t, at, name, span);
          if (track) f.races.check(true, key.at(flat), flat, name, span);
          t.set(flat, x);
          return;
        }
        // Fewer indices than axes: the scalar fills the sub-array.
        std::vector<AxisSelect> sel;
        for (size_t a = 0; a < at.size(); ++a) {
          if (a >= static_cast<size_t>(t.rank()) || at[a] < 0 || at[a] >= t.shape()[a])
            fail(span, "index out of bounds writing " + name);
          AxisSelect s;
          s.index = at[a];
          sel.push_back(s);
        }
        Tensor value = Tensor::scalar(v(f));
        located(span, [&] { zyntax::assign(t, sel, value); });
      };
    }
    SelFn sel = selection(st.axes, st.buffer, st.span);
    TileFn v = tile(st.value);
    return [slot, sel, v, span](Frame& f) {
      Tensor& t = f.tiles[static_cast<size_t>(slot)];
      std::vector<AxisSelect> s = sel(f, t);
      Tensor value = v(f);
      located(span, [&] { zyntax::assign(t, s, value); });
    };
  }

  StmtFn yield(const cir::Yield& y) {
    yield_dtype = y.value->type.dtype;
    ScalarFn v = scalar(y.value);
    ScalarFn index = y.index.defined() ? scalar(y.index) : ScalarFn();
    std::vector<ScalarFn> at;
    for (const Expr& e : y.out_index) at.push_back(scalar(e));
    ReduceOp op = k->reduce_op;
    Span span = y.span;
    return [v, index, at, op, span](Frame& f) {
      int64_t flat = 0;
      for (size_t a = 0; a < at.size(); ++a) {
        int64_t i = at[a](f).as_int64();
        int64_t n = f.acc.shape()[a];
        if (i < 0 || i >= n) fail(span, "yield to output element " + std::to_string(i) + " of an axis of size " + std::to_string(n));
        flat = flat * n + i;
      }
      Scalar x = v(f);
      if (is_arg_reduce(op)) {
        size_t u = static_cast<size_t>(flat);
        if (!f.has_best[u] || arg_better(op, f.best.get(flat), x)) {
          f.has_best[u] = true;
          f.best.set(flat, x);
          f.acc.set(flat, index(f));
        }
        return;
      }
      Scalar acc = f.acc.get(flat);
      f.acc.set(flat, reduce_combine(op, acc, cast(x, acc.dtype)));
    };
  }
};

ReferenceKernel::ReferenceKernel(const cir::Kernel& k) : kernel_(k), compiled_(std::make_unique<Compiled>()) {
  if (!k.dims.empty()) throw std::logic_error("reference executor: kernel " + k.name + " is not specialised");
  Compiled& c = *compiled_;
  c.k = &kernel_;
  for (const cir::Param& p : kernel_.params) {
    if (p.role == cir::ParamRole::Scalar) {
      c.scalar_params.push_back({p.name, c.slot_for(p.name, p.type)});
    } else {
      int slot = c.slot_for(p.name, cir::Type::tensor(p.type.dtype, {cir::i64(1)}));
      if (p.role == cir::ParamRole::Input) c.input_slots.push_back(slot);
      else c.out_slot = slot;
    }
  }
  // The output of a kernel with GPU thread loops is checked for races.
  struct Threads : cir::IRVisitor {
    bool found = false;
    using cir::IRVisitor::visit;
    void visit(const cir::For* op) override {
      found = found || op->loop_kind == cir::LoopKind::GpuThread;
      cir::IRVisitor::visit(op);
    }
  } threads;
  threads.include(kernel_.body);
  if (threads.found) c.raced_.insert(kernel_.output().name);
  c.body = c.block(kernel_.body);
}

ReferenceKernel::~ReferenceKernel() = default;

Tensor ReferenceKernel::run(const std::vector<Tensor>& inputs, const std::map<std::string, Scalar>& scalars) const {
  const Compiled& c = *compiled_;
  Frame f;
  f.scalars.resize(c.scalar_slot.size());
  f.tiles.resize(c.tile_slot.size());
  if (c.shared_region_bytes > 0) f.shared_region = Tensor::empty(DType::U8, {c.shared_region_bytes});
  if (inputs.size() != c.input_slots.size())
    throw std::logic_error("kernel " + kernel_.name + " takes " + std::to_string(c.input_slots.size()) + " inputs");
  for (size_t i = 0; i < inputs.size(); ++i) f.tiles[static_cast<size_t>(c.input_slots[i])] = inputs[i];
  for (const auto& [name, slot] : c.scalar_params) {
    auto it = scalars.find(name);
    if (it == scalars.end()) throw std::logic_error("kernel " + kernel_.name + ": no value for scalar " + name);
    f.scalars[static_cast<size_t>(slot)] = cast(it->second, kernel_.find_param(name)->type.dtype);
  }
  const cir::Param& outp = kernel_.output();
  Shape shape;
  for (const Expr& d : outp.type.shape) {
    auto n = d.as<cir::IntImm>();
    if (!n) throw std::logic_error("reference executor: output extent is not constant: " + cir::print(d));
    if (n->value < 0) fail(kernel_.span, "the output would have a negative size (" + std::to_string(n->value) + ")");
    shape.push_back(n->value);
  }
  bool reduce = kernel_.kind == cir::KernelKind::Reduce;
  Tensor out = Tensor::zeros(outp.type.dtype, shape);
  f.tiles[static_cast<size_t>(c.out_slot)] = out;
  if (reduce) {
    ReduceOp op = kernel_.reduce_op;
    bool arg = is_arg_reduce(op);
    DType acc_type = reduce_accumulator_dtype(op, outp.type.dtype);
    f.acc = arg ? out : Tensor::full(acc_type, shape, reduce_identity(op, acc_type));
    if (arg) {
      f.has_best.assign(static_cast<size_t>(out.numel()), false);
      f.best = Tensor::zeros(c.yield_dtype, shape);
    }
  }
  Compiled::run_block(c.body, f);
  if (reduce) {
    ReduceOp op = kernel_.reduce_op;
    if (is_arg_reduce(op)) {
      for (size_t i = 0; i < f.has_best.size(); ++i)
        if (!f.has_best[i]) fail(kernel_.span, std::string(reduce_op_name(op)) + " of an empty range has no index");
    } else {
      for (int64_t i = 0; i < out.numel(); ++i) out.set(i, f.acc.get(i));  // rounds f64 sums once
    }
  }
  return out;
}

}  // namespace zyntax
