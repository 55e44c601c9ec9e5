// memory_pool(device=, size=) and the pool's methods: allocate, free, reset.
#include "backends/registry.hpp"
#include "interp/builtins_args.hpp"
#include "runtime/device.hpp"

namespace zyntax {

namespace {

Value memory_pool(const Invocation& inv) {
  Args a(inv, {{"device", kOptional}, {"size"}});
  std::string id = "cpu";
  if (a.has(0)) id = a.device(0).info().id;
  int64_t size = a.integer(1);
  if (size < 0) a.fail(1, "size must not be negative");
  Value v;
  v.kind = Value::Kind::Pool;
  v.pool = std::make_shared<MemoryPool>(id, size);
  return v;
}

const BuiltinEntry kEntries[] = {
    {"memory_pool", memory_pool},
};

}  // namespace

Value pool_allocate(const Invocation& inv) {
  Args a(inv, {{"pool"}, {"shape"}, {"dtype", kOptional}});
  DType t = a.dtype_or(2, DType::F32);
  Shape shape = a.shape(1, t);
  try {
    return Value::of_tensor(a[0].pool->allocate(t, shape));
  } catch (const DataError& e) {
    a.fail_call(e.what());
  }
}

Value pool_free(const Invocation& inv) {
  Args a(inv, {{"pool"}, {"tensor"}});
  try {
    a[0].pool->free(a.tensor(1));
  } catch (const DataError& e) {
    a.fail(1, e.what());
  }
  return Value::none();
}

Value pool_reset(const Invocation& inv) {
  Args a(inv, {{"pool"}});
  a[0].pool->reset();
  return Value::none();
}

std::span<const BuiltinEntry> memory_builtins() { return kEntries; }

}  // namespace zyntax
