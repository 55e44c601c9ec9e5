// Builtins of programs that run on several processes (`mpirun -np N zyntax
// run prog.zynml`): rank, world_size, all_reduce, broadcast, all_gather over
// every rank of the job (dist/communicator). A program not started by
// mpirun, or a build without MPI, is rank 0 of 1: the collectives return
// their tensor as it is.
#include "interp/builtins_args.hpp"

#ifdef ZYNTAX_HAVE_MPI
#include "dist/communicator.hpp"
#endif

namespace zyntax {

namespace {

enum class Combine { Sum, Max, Min, Mean };

// op="+" (the default), "sum", "max", "min" or "mean".
Combine combine_of(const Args& a, size_t i) {
  if (!a.has(i)) return Combine::Sum;
  const std::string& op = a.str(i);
  if (op == "+" || op == "sum") return Combine::Sum;
  if (op == "max") return Combine::Max;
  if (op == "min") return Combine::Min;
  if (op == "mean") return Combine::Mean;
  throw Error(a.span(i), "all_reduce: unknown op '" + op + "'; use \"+\" (or \"sum\"), \"max\", \"min\" or \"mean\"");
}

#ifdef ZYNTAX_HAVE_MPI
// The job's ranks where this process is one of them; nullptr for a lone
// process (MPI is then never started).
dist::Communicator* job() { return dist::Communicator::job(); }

dist::ReduceOp reduce_op(Combine c) {
  switch (c) {
    case Combine::Sum: return dist::ReduceOp::Sum;
    case Combine::Max: return dist::ReduceOp::Max;
    case Combine::Min: return dist::ReduceOp::Min;
    case Combine::Mean: return dist::ReduceOp::Mean;
  }
  return dist::ReduceOp::Sum;
}

// A collective's failure (a rank gone, ranks that disagree) at the call.
template <class F>
auto collective(const Args& a, F&& f) {
  try {
    return f();
  } catch (const dist::DistError& e) {
    throw Error(a.call_span(), e.what());
  }
}
#endif

Value rank(const Invocation& inv) {
  Args a(inv, {});
#ifdef ZYNTAX_HAVE_MPI
  if (dist::Communicator* w = job()) return Value::of_int(w->rank());
#endif
  return Value::of_int(0);
}

Value world_size(const Invocation& inv) {
  Args a(inv, {});
#ifdef ZYNTAX_HAVE_MPI
  if (dist::Communicator* w = job()) return Value::of_int(w->size());
#endif
  return Value::of_int(1);
}

// A new tensor: the argument itself is left as it was.
Value all_reduce(const Invocation& inv) {
  Args a(inv, {{"tensor"}, {"op", kOptional}});
  Combine c = combine_of(a, 1);
  Tensor t = a.tensor(0).clone();
  if (c == Combine::Mean && t.dtype() == DType::Bool)
    throw Error(a.span(0), "all_reduce: op \"mean\" of a bool tensor has no meaning; use \"max\" (any) or \"min\" (all)");
#ifdef ZYNTAX_HAVE_MPI
  if (dist::Communicator* w = job())
    collective(a, [&] {
      w->all_reduce(t, reduce_op(c));
      return 0;
    });
#endif
  return Value::of_tensor(std::move(t));
}

Value broadcast(const Invocation& inv) {
  Args a(inv, {{"tensor"}, {"root", kOptional}});
  int64_t root = a.integer_or(1, 0);
  int size = 1;
#ifdef ZYNTAX_HAVE_MPI
  dist::Communicator* w = job();
  if (w) size = w->size();
#endif
  if (root < 0 || root >= size)
    throw Error(a.span(1), "broadcast: root " + std::to_string(root) + " is not a rank (ranks are 0 to " + std::to_string(size - 1) + ")");
  Tensor t = a.tensor(0).clone();
#ifdef ZYNTAX_HAVE_MPI
  if (w)
    collective(a, [&] {
      w->broadcast(t, static_cast<int>(root));
      return 0;
    });
#endif
  return Value::of_tensor(std::move(t));
}

Value all_gather(const Invocation& inv) {
  Args a(inv, {{"tensor"}, {"axis", kOptional}});
  const Tensor& t = a.tensor(0);
  int64_t axis = a.integer_or(1, 0);
  int64_t rank = static_cast<int64_t>(t.shape().size());
  if (rank == 0) throw Error(a.span(0), "all_gather: a 0-d tensor has no axis to gather along");
  if (axis < -rank || axis >= rank)
    throw Error(a.span(1), "all_gather: axis " + std::to_string(axis) + " is out of range for a tensor of " + std::to_string(rank) + " axes");
#ifdef ZYNTAX_HAVE_MPI
  if (dist::Communicator* w = job())
    return Value::of_tensor(collective(a, [&] { return w->all_gather(t, static_cast<int>(axis)); }));
#endif
  return Value::of_tensor(t.clone());
}

const BuiltinEntry kEntries[] = {
    {"rank", rank}, {"world_size", world_size}, {"all_reduce", all_reduce}, {"broadcast", broadcast}, {"all_gather", all_gather},
};

}  // namespace

std::span<const BuiltinEntry> dist_builtins() { return kEntries; }

}  // namespace zyntax
