// Builtins about where tensors live: compute_devices, to_device, allocate.
#include "backends/registry.hpp"
#include "interp/builtins_args.hpp"
#include "runtime/device.hpp"

namespace zyntax {

namespace {

Value compute_devices(const Invocation& inv) {
  Args a(inv, {});
  std::vector<Value> out;
  for (const auto& d : device_registry().devices()) {
    const DeviceInfo& info = d->info();
    out.push_back(Value::of_record({
        {"id", Value::of_str(info.id)},
        {"type", Value::of_str(info.type)},
        {"name", Value::of_str(info.name)},
        {"cores", Value::of_int(info.cores)},
        {"memory", Value::of_int(static_cast<int64_t>(info.memory_bytes))},
    }));
  }
  return Value::of_list(std::move(out));
}

Value to_device(const Invocation& inv) {
  Args a(inv, {{"tensor"}, {"device"}, {"copy", kOptional}});
  const Tensor& t = a.tensor(0);
  Device& d = a.device(1);
  bool copy = a.boolean_or(2, true);
  Tensor moved;
  try {
    moved = copy ? d.copy_in(t) : d.share_host(t);
  } catch (const std::runtime_error& e) {  // the device cannot map it, or the driver failed
    throw Error(a.span(2), std::string("to_device(copy=false): ") + e.what());
  }
  moved.set_device(d.info().id);
  return Value::of_tensor(std::move(moved));
}

// Pinned (page-locked) host memory is for copies to a GPU: the named
// device's, or for a tensor of the CPU the first GPU's. Without a GPU all
// memory is the CPU's own, and the flag changes nothing.
Value allocate(const Invocation& inv) {
  Args a(inv, {{"shape"}, {"dtype", kOptional}, {"device", kOptional}, {"pinned", kOptional}});
  DType t = a.dtype_or(1, DType::F32);
  Shape shape = a.shape(0, t);
  DeviceRegistry& registry = device_registry();
  Device* d = a.has(2) ? &a.device(2) : registry.find("cpu");
  bool pinned = a.boolean_or(3, false);
  Device* host = pinned && d->info().type != "gpu" ? registry.find("auto") : d;  // "auto": the first GPU, else the CPU
  Tensor out = host->host_tensor(t, std::move(shape), pinned);
  out.set_device(d->info().id);
  return Value::of_tensor(std::move(out));
}

const BuiltinEntry kEntries[] = {
    {"compute_devices", compute_devices},
    {"to_device", to_device},
    {"allocate", allocate},
};

}  // namespace

std::span<const BuiltinEntry> device_builtins() { return kEntries; }

}  // namespace zyntax
