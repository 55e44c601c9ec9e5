#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "api/api_internal.hpp"
#include "api/bound_kernel_state.hpp"
#include "api/deferred_ops.hpp"
#include "runtime/launch.hpp"
#include "runtime/profiler.hpp"

namespace zyntax {

BoundKernel::BoundKernel(std::unique_ptr<State> state) : state_(std::move(state)) {
  state_->bytes = state_->result_bytes;
  for (const Kernel::ArraySpec& a : state_->inputs) state_->bytes += api::product(a.shape) * dtype_size(api::dtype_of(a.type));
}
BoundKernel::~BoundKernel() = default;

const std::string& BoundKernel::name() const { return state_->name; }
const std::vector<Kernel::ArraySpec>& BoundKernel::inputs() const { return state_->inputs; }
const Kernel::ArraySpec& BoundKernel::result() const { return state_->result; }
size_t BoundKernel::result_bytes() const { return state_->result_bytes; }
size_t BoundKernel::bytes() const { return state_->bytes; }

namespace {

// Whether a run may take the device's launch on host memory: not while the
// profiler records or a tool watches launches, which see the device's run().
bool fast(const BoundKernel::State& s) { return s.launch && !Profiler::global().enabled() && !launches_observed(); }

std::string spec_text(const Kernel::ArraySpec& a) { return std::string(element_type_name(a.type)) + " " + api::shape_text(a.shape); }

// Whether the result's bytes at `out` overlap an input's: kernels are
// compiled on the promise that their output shares memory with nothing
// else they read (codegen/llvm/cpu/cpu_llvm_target.cpp).
bool overlaps_an_input(const BoundKernel::State& s, const void* const* inputs, const void* out) {
  auto at = [](const void* p) { return reinterpret_cast<uintptr_t>(p); };
  for (size_t i = 0; i < s.inputs.size(); ++i) {
    size_t bytes = api::product(s.inputs[i].shape) * dtype_size(api::dtype_of(s.inputs[i].type));
    if (bytes && s.result_bytes && at(inputs[i]) < at(out) + s.result_bytes && at(out) < at(inputs[i]) + bytes) return true;
  }
  return false;
}

}  // namespace

void BoundKernel::run_host(const void* const* inputs, void* out) const {
  const State& s = *state_;
  if (!s.sized)
    throw ComputeError("kernel " + s.name + ": the size of its result is known only once it runs: call run() on arrays");
  if (overlaps_an_input(s, inputs, out)) {  // written in place over an input: into fresh memory first
    std::vector<unsigned char> result(s.result_bytes);
    run_host(inputs, result.data());
    std::memcpy(out, result.data(), s.result_bytes);
    return;
  }
  if (fast(s)) {
    s.queue->count_launch();
    if (s.launch->run(inputs, out)) return;
  }
  // Arrays over the caller's memory (copies on a device that cannot read it
  // in place), run as Kernel::run runs them, the result copied back.
  const DeviceImpl& dev = *s.device.impl();
  const bool in_place = dev.devices.size() == 1 && dev.device->info().type == "cpu";
  std::vector<Array> arrays;
  arrays.reserve(s.inputs.size());
  for (size_t i = 0; i < s.inputs.size(); ++i)
    arrays.push_back(Array::from_host(s.device, inputs[i], s.inputs[i].type, s.inputs[i].shape, /*copy=*/!in_place));
  Array r = s.general(arrays);
  if (r.shape() != s.result.shape || r.element_type() != s.result.type)
    throw std::logic_error("kernel " + s.name + " returned " + element_type_name(r.element_type()) + " " +
                           api::shape_text(r.shape()) + ", bound for " + spec_text(s.result));
  if (s.result_bytes) r.copy_to_host(out, s.result_bytes);
}

Array BoundKernel::run(const std::vector<Array>& inputs) const {
  const State& s = *state_;
  if (inputs.size() != s.inputs.size())
    throw ShapeError("kernel " + s.name + " is bound for " + std::to_string(s.inputs.size()) + " arrays, got " +
                     std::to_string(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].buffer().impl() || inputs[i].element_type() != s.inputs[i].type || inputs[i].shape() != s.inputs[i].shape)
      throw ShapeError("kernel " + s.name + ": argument " + std::to_string(i) + " is " +
                       (inputs[i].buffer().impl() ? spec_text({inputs[i].element_type(), inputs[i].shape()}) : "an empty array") +
                       ", but the kernel is bound for " + spec_text(s.inputs[i]));
  const DeviceImpl& dev = *s.device.impl();
  bool here = fast(s) && s.sized;
  for (const Array& a : inputs) here = here && a.buffer().impl()->device == dev.description.id;
  if (here) {
    constexpr size_t kOnStack = 16;
    const void* on_stack[kOnStack];
    std::vector<const void*> on_heap(inputs.size() > kOnStack ? inputs.size() : 0);
    const void** data = on_heap.empty() ? on_stack : on_heap.data();
    for (size_t i = 0; i < inputs.size(); ++i) data[i] = std::as_const(inputs[i].buffer().impl()->value()).data();
    Tensor out = Tensor::for_overwrite(api::dtype_of(s.result.type), {static_cast<int64_t>(api::product(s.result.shape))});
    s.queue->count_launch();
    if (s.launch->run(data, out.data_for_overwrite())) return Array(api::wrap(dev, std::move(out)), s.result.shape);
  }
  return s.general(inputs);
}

}  // namespace zyntax
