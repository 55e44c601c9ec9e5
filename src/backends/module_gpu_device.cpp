#include "backends/module_gpu_device.hpp"

#include <algorithm>
#include <deque>
#include <optional>
#include <stdexcept>

#include "backends/host_mappings.hpp"
#include "cir/hash.hpp"
#include "codegen/llvm/kernel_operands.hpp"
#include "plan/gpu_tuning.hpp"
#include "runtime/tuned_plans.hpp"

namespace zyntax {

// An idle RunStream (or a new one) for the life of a run; on the way out,
// an error included, the stream is done before it is lent again.
class ModuleGpuDevice::StreamLease {
 public:
  explicit StreamLease(ModuleGpuDevice& d) : d_(d) {
    std::lock_guard<std::mutex> lock(d.streams_mu_);
    if (d.idle_streams_.empty()) {
      s_ = std::make_unique<RunStream>(d.gpu_);
    } else {
      s_ = std::move(d.idle_streams_.back());
      d.idle_streams_.pop_back();
    }
  }
  ~StreamLease() {
    try {
      s_->stream.synchronize();  // a no-op after a run that finished
    } catch (...) {
      return;  // a stream in error is not lent again
    }
    std::lock_guard<std::mutex> lock(d_.streams_mu_);
    d_.idle_streams_.push_back(std::move(s_));
  }
  StreamLease(const StreamLease&) = delete;
  StreamLease& operator=(const StreamLease&) = delete;
  ModuleGpu::StreamHandle get() const { return s_->stream.get(); }
  const GpuEvent& started() const { return s_->started; }
  const GpuEvent& finished() const { return s_->finished; }
  void synchronize() const { s_->stream.synchronize(); }

 private:
  ModuleGpuDevice& d_;
  std::unique_ptr<RunStream> s_;
};

Tensor ModuleGpuDevice::host_tensor(DType dtype, Shape shape, bool pinned) {
  if (!pinned) return Device::host_tensor(dtype, std::move(shape), false);
  size_t bytes = Tensor::bytes_for(dtype, shape);
  return Tensor::in_storage(dtype, std::move(shape), gpu_.allocate_pinned(bytes));
}

// Mapped memory: kernels read the host's bytes over the bus, as the
// device's own. Needs a GPU that maps host memory into one address space
// with the host's.
Tensor ModuleGpuDevice::share_host(const Tensor& t) {
  if (!gpu_.maps_host_memory())
    throw DataError(info_.id + " (" + info_.name + ") cannot map host memory into its address space; use copy=true");
  if (t.nbytes() == 0) return t;
  return t.kept_with(gpu_.host_mappings().share(const_cast<void*>(t.data()), t.nbytes()));
}

// Uploaded at once; the host's copy is made only if the host reads it.
Tensor ModuleGpuDevice::copy_in(const Tensor& t) {
  GpuBuffer b(gpu_, std::max<size_t>(t.nbytes(), 1));
  b.upload(t.data(), t.nbytes(), /*wait=*/true);
  Tensor c = Tensor::for_overwrite(t.dtype(), t.shape());
  c.set_mirror(std::make_shared<GpuBufferMirror>(info_.id, std::move(b)), /*host_current=*/false);
  c.set_device(info_.id);
  return c;
}

// Another library's memory of this GPU (where the CUDA or HIP runtime, and
// so PyTorch, allocate): every queued kernel finished first (the producer's
// own streams), then a device-to-device copy.
Tensor ModuleGpuDevice::copy_in_device_memory(uint64_t address, DType dtype, Shape shape) {
  Tensor t = Tensor::for_overwrite(dtype, std::move(shape));
  if (t.nbytes() > 0 && address == 0) throw DataError(info_.id + ": no memory at address 0 for " + std::to_string(t.nbytes()) + " bytes");
  GpuBuffer b(gpu_, std::max<size_t>(t.nbytes(), 1));
  if (t.nbytes() > 0) {
    gpu_.bind();
    gpu_.synchronize_all();
    gpu_.copy_on_device(gpu_.stream(), b.address(), address, t.nbytes());
    gpu_.synchronize();
  }
  // As a kernel's output: the host's bytes filled only when the host reads them.
  t.set_mirror(std::make_shared<GpuBufferMirror>(info_.id, std::move(b)), /*host_current=*/false);
  t.set_device(info_.id);
  return t;
}

std::optional<Device::HeldMemory> ModuleGpuDevice::held_memory(const Tensor& t) const {
  std::shared_ptr<const GpuBufferMirror> m = gpu_buffer_mirror_of(t, info_.id);
  if (!m) return std::nullopt;
  return HeldMemory{m->address(), std::move(m)};
}

Device::Attempt ModuleGpuDevice::execute(const cir::Kernel& kernel, uint64_t key, const std::vector<Tensor>& inputs,
                                 const std::map<std::string, Scalar>& scalars) {
  std::shared_ptr<Plan> plan = tuned_plan(*this, plans_, kernel, key, [&](const TuningChoice& c) { return make_plan(kernel, c); });
  return execute_plan(kernel, *plan, inputs, scalars);
}

std::vector<TuningCandidate> ModuleGpuDevice::tuning_candidates(const cir::Kernel& kernel) { return gpu_tuning_space(kernel, target_); }

Device::Attempt ModuleGpuDevice::execute_choice(const cir::Kernel& kernel, uint64_t key, const TuningChoice& choice,
                                        const std::vector<Tensor>& inputs, const std::map<std::string, Scalar>& scalars) {
  std::shared_ptr<Plan> plan = chosen_plan(plans_, key, choice, [&](const TuningChoice& c) { return make_plan(kernel, c); });
  if (!plan) return Attempt::unsupported();
  return execute_plan(kernel, *plan, inputs, scalars);
}

void ModuleGpuDevice::allow_dynamic_shared(ModuleGpu::FunctionHandle, unsigned bytes) {
  throw std::logic_error(info_.id + ": a kernel asks for " + std::to_string(bytes) + " bytes of shared memory, more than its target offers");
}

ModuleGpuDevice::TensorMapValue ModuleGpuDevice::encode_tensor_map(const codegen::TensorMapParam& m, ModuleGpu::Address) {
  throw std::logic_error(info_.id + " makes no tensor maps, yet a kernel planned for it reads '" + m.operand.buffer + "' through one");
}

std::shared_ptr<ModuleGpuDevice::Plan> ModuleGpuDevice::make_plan(const cir::Kernel& kernel, const TuningChoice& choice) {
  auto plan = std::make_shared<Plan>();
  GpuPlan p = gpu_plan(kernel, target_, choice);
  if (!p.kernel) {
    plan->why_not = p.why_not;
    return plan;
  }
  plan->writes_whole_output = p.writes_whole_output;
  plan->tensor_maps = codegen::tensor_map_params(*p.kernel);
  std::string entry = "zyntax_kernel_" + cir::hash_hex(cir::hash_kernel(*p.kernel));
  std::lock_guard<std::mutex> lock(load_mu_);
  plan->function = load_kernel(p, entry);  // kept for the life of the process
  if (p.shared_bytes > target_.shared_memory_static) {
    plan->dynamic_shared = static_cast<unsigned>(p.shared_bytes);
    allow_dynamic_shared(plan->function, plan->dynamic_shared);
  }
  // A block per row or an iteration per thread, up to a few waves.
  plan->blocks = gpu_launch_blocks(p, std::max<int64_t>(1, blocks_per_launch_));
  plan->threads = static_cast<unsigned>(p.block_threads);
  plan->cluster = static_cast<unsigned>(p.cluster);
  return plan;
}

Device::Attempt ModuleGpuDevice::execute_plan(const cir::Kernel& kernel, const Plan& plan, const std::vector<Tensor>& inputs,
                                      const std::map<std::string, Scalar>& scalars) {
  if (!plan.function) return Attempt::unsupported();
  ModuleGpu& gpu = gpu_;
  gpu.bind();
  codegen::KernelOperands ops = codegen::prepare_operands(kernel, inputs, scalars, /*zeroed_output=*/false);

  // Device copies of every tensor, then the parameters as kernel_abi.hpp
  // lays them out: device addresses for tensors, values for scalars.
  // (deques: params point at addresses, which stay where they are)
  std::deque<GpuBuffer> buffers;
  std::deque<ModuleGpu::Address> addresses;
  std::vector<void*> params;
  std::vector<std::shared_ptr<void>> mapped;  // views' host memory kernels read in place
  std::vector<std::shared_ptr<const GpuBufferMirror>> mirrors;  // inputs already here
  // Inputs placed on this GPU but not (or no longer) held here: their
  // uploads become their mirrors, for the next kernel to read.
  std::vector<std::pair<const Tensor*, GpuBuffer*>> to_keep;
  size_t copied_in = 0;
  // After the buffers: on the way out, an error included, the stream is
  // done with them before they go back to the pool.
  StreamLease stream(*this);
  auto add_buffer = [&](size_t bytes) -> GpuBuffer& {
    buffers.emplace_back(gpu, std::max<size_t>(bytes, 1));
    addresses.push_back(buffers.back().address());
    params.push_back(&addresses.back());
    return buffers.back();
  };
  auto add_address = [&](ModuleGpu::Address a) {
    addresses.push_back(a);
    params.push_back(&addresses.back());
  };
  GpuBuffer* out = nullptr;
  // Each input's device address by parameter name (the tensor maps' factors).
  std::map<std::string, ModuleGpu::Address> input_addresses;
  for (size_t i = 0; i < ops.params.size(); ++i) {
    const codegen::KernelOperands::Operand& o = ops.params[i];
    const Tensor* t = ops.tensor(o);
    if (!t) {
      params.push_back(const_cast<void*>(o.scalar));
      continue;
    }
    if (o.role == cir::ParamRole::Input && t->nbytes() > 0) {
      if (std::shared_ptr<const GpuBufferMirror> m = gpu_buffer_mirror_of(*t, info_.id)) {
        add_address(m->address());
        input_addresses[kernel.params[i].name] = m->address();
        mirrors.push_back(std::move(m));
        continue;
      }
      // Read in place where aligned as kernels expect (kernel_abi.hpp); else copied.
      std::optional<HostMappings::Found> m = gpu.host_mappings().find(t->data(), t->nbytes());
      if (m && m->address % codegen::kGpuTensorAlignment == 0) {
        add_address(m->address);
        input_addresses[kernel.params[i].name] = m->address;
        mapped.push_back(std::move(m->hold));
        continue;
      }
    }
    GpuBuffer& b = add_buffer(t->nbytes());
    if (o.role == cir::ParamRole::Input) {
      input_addresses[kernel.params[i].name] = b.address();
      b.upload_on(stream.get(), t->data(), t->nbytes());
      copied_in += t->nbytes();
      if (t->device() == info_.id) to_keep.emplace_back(t, &b);
    } else {
      out = &b;
      if (!plan.writes_whole_output) b.zero_on(stream.get());
    }
  }
  std::vector<Tensor*> reduce = ops.reduce_tensors();
  std::vector<GpuBuffer*> reduce_buffers;
  for (Tensor* t : reduce) {
    if (t->data() == ops.out.data()) {  // argmin/argmax accumulate into the output itself
      add_address(out->address());
      reduce_buffers.push_back(out);
      continue;
    }
    // A reduction's starting values: the run's own scratch, not an input
    // (a few bytes; not counted in copied_in).
    GpuBuffer& b = add_buffer(t->nbytes());
    b.upload_on(stream.get(), t->data(), t->nbytes());
    reduce_buffers.push_back(&b);
  }
  int32_t status = 0;
  GpuBuffer& status_buffer = add_buffer(sizeof status);
  status_buffer.zero_on(stream.get());
  // After the status pointer, a tensor map per factor of each warpgroup
  // product (kernel_abi.hpp), passed by value, kept until the launch has
  // read them (reserved: never moved).
  std::vector<TensorMapValue> tensor_maps;
  tensor_maps.reserve(plan.tensor_maps.size());
  for (const codegen::TensorMapParam& m : plan.tensor_maps) {
    auto found = input_addresses.find(m.operand.buffer);
    if (found == input_addresses.end())
      throw std::logic_error("a warpgroup product's factor '" + m.operand.buffer + "' is not an input of the kernel");
    tensor_maps.push_back(encode_tensor_map(m, found->second));
    params.push_back(&tensor_maps.back());
  }

  // Events around the launch time the kernel alone (last_kernel_milliseconds).
  stream.started().record(stream.get());
  if (plan.cluster > 1) gpu.launch_clustered(plan.function, plan.blocks, plan.threads, plan.dynamic_shared, plan.cluster, stream.get(), params.data());
  else gpu.launch(plan.function, plan.blocks, plan.threads, plan.dynamic_shared, stream.get(), params.data());
  stream.finished().record(stream.get());
  status_buffer.download_on(stream.get(), &status, sizeof status);
  // A reduction's result is finished on the host (finish_operands); any
  // other output stays here, and the host copies it back when it reads it.
  bool keep_output = !ops.reduce;
  if (!keep_output) {
    out->download_on(stream.get(), ops.out.data(), ops.out.nbytes());
    for (size_t i = 0; i < reduce.size(); ++i)
      if (reduce[i]->data() != ops.out.data()) reduce_buffers[i]->download_on(stream.get(), reduce[i]->data(), reduce[i]->nbytes());
  }
  // The buffers go back to the pool only once the stream is done with them.
  stream.synchronize();
  last_kernel_ms_ = GpuEvent::elapsed_ms(stream.started(), stream.finished());
  last_copied_in_ = copied_in;
  for (auto& [t, b] : to_keep) t->set_mirror(std::make_shared<GpuBufferMirror>(info_.id, std::move(*b)), /*host_current=*/true);
  if (status) return Attempt::check_failed();
  Tensor result = codegen::finish_operands(kernel, ops);
  if (keep_output) {
    result.set_mirror(std::make_shared<GpuBufferMirror>(info_.id, std::move(*out)), /*host_current=*/false);
    result.set_device(info_.id);
  }
  return Attempt::done(std::move(result));
}

}  // namespace zyntax
