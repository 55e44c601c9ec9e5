// Arrays and device memory held by other libraries (zyntax/device_memory.hpp),
// through the Device interface: a GPU's own memory taken in as a tensor
// that lives there, and where a device holds an array's elements.
#include "zyntax/device_memory.hpp"

#include <stdexcept>
#include <string>
#include <utility>

#include "api/api_internal.hpp"
#include "api/deferred_ops.hpp"
#include "backends/registry.hpp"

namespace zyntax {

namespace {

Device& single_device(const ComputeDevice& device, const std::string& op) {
  if (!device.impl()) throw ComputeError(op + ": the device was moved from");
  const DeviceImpl& dev = *device.impl();
  if (dev.devices.size() != 1) throw ComputeError(op + ": " + dev.description.id + " is a group of devices; name one");
  return *dev.device;
}

}  // namespace

Array array_from_device_memory(const ComputeDevice& device, uint64_t address, ElementType type, std::vector<size_t> shape) {
  const std::string op = "array_from_device_memory";
  Device& d = single_device(device, op);
  size_t n = api::product(shape);  // ShapeError past 63 bits
  if (shape.size() > 64) throw ShapeError(op + ": " + std::to_string(shape.size()) + " axes; tensors have at most 64");
  Tensor t;
  try {
    t = d.copy_in_device_memory(address, api::dtype_of(type), {static_cast<int64_t>(n)});
  } catch (const std::runtime_error& e) {  // no memory of its own, out of memory, a failed copy (the driver's error)
    throw ComputeError(op + ": " + e.what());
  }
  return Array(api::wrap(*device.impl(), std::move(t)), std::move(shape));
}

DeviceMemory device_memory_of(const Array& a) {
  DeviceMemory mem;
  if (!a.buffer().impl()) return mem;
  const std::string id = a.buffer().device();
  Device* d = id.empty() ? nullptr : device_registry().find(id);
  if (!d) return mem;
  api::DeferredOps::flush_all();  // what waits may read it, and the application may write it
  std::optional<Device::HeldMemory> held = d->held_memory(a.buffer().impl()->value());
  a.buffer().impl()->expose();
  if (!held) return mem;
  mem.address = held->address;
  size_t colon = id.find(':');
  mem.ordinal = colon == std::string::npos ? 0 : std::stoi(id.substr(colon + 1));
  mem.keep = std::move(held->keep);
  return mem;
}

size_t last_run_bytes_copied_in(const ComputeDevice& device) {
  if (!device.impl() || device.impl()->devices.size() != 1) return 0;
  return device.impl()->device->last_run_bytes_copied_in();
}

}  // namespace zyntax
