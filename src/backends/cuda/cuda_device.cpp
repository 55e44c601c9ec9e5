#include "backends/cuda/cuda_device.hpp"

#include <algorithm>
#include <atomic>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>

#include "cir/hash.hpp"
#include "codegen/llvm/kernel_abi.hpp"
#include "codegen/llvm/kernel_operands.hpp"
#include "codegen/llvm/nvptx/nvptx_compiler.hpp"
#include "codegen/llvm/nvptx/nvptx_target.hpp"
#include "plan/gpu_plan.hpp"
#include "plan/gpu_tuning.hpp"
#include "runtime/tuned_plans.hpp"
#include "backends/cuda/gpu_mirror.hpp"
#include "backends/cuda/tensor_maps.hpp"
#include "runtime/disk_cache.hpp"
#include "runtime/kernel_cache.hpp"

namespace zyntax {

namespace {

using cuda::DeviceBuffer;

// Blocks per multiprocessor launched at most; beyond, threads loop (grid-stride).
constexpr int64_t kBlocksPerMultiprocessor = 32;

class CudaDevice : public Device {
 public:
  explicit CudaDevice(std::unique_ptr<cuda::Gpu> gpu)
      : gpu_(std::move(gpu)), arch_(codegen::nvptx_arch_for(gpu_->properties().major, gpu_->properties().minor)) {
    const cuda::GpuProperties& p = gpu_->properties();
    // sm_90a's PTX (8.0) needs a CUDA 12 driver, and its tensor copies read
    // tensor maps the driver makes: an older driver, or one without
    // cuTensorMapEncodeTiled, gets sm_90 (no tensor copies, no warpgroup products).
    const cuda::Driver& driver = gpu_->driver();
    if (arch_.name == "sm_90a" && (driver.version < 12000 || !driver.tensor_maps)) arch_ = *codegen::parse_nvptx_arch("sm_90");
    target_ = codegen::nvptx_gpu_target(arch_, {p.multiprocessors, p.shared_per_block_optin, p.max_threads_per_block, p.warp_size});
    if (!driver.tensor_maps) target_.tensor_copies = target_.warpgroup_mma = false;
    info_.id = gpu_->id();
    info_.type = "gpu";
    info_.name = p.name;
    info_.cores = p.multiprocessors;
    info_.memory_bytes = p.memory_bytes;
    info_.compute_capability = std::to_string(p.major) + "." + std::to_string(p.minor);
    int v = gpu_->driver().version;
    info_.backend = std::string("LLVM ") + ZYNTAX_LLVM_VERSION + " NVPTX (" + arch_.name + "), CUDA driver " +
                    std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
  }

  const DeviceInfo& info() const override { return info_; }
  const GpuTarget* gpu_target() const override { return &target_; }

  Tensor host_tensor(DType dtype, Shape shape, bool pinned) override {
    if (!pinned) return Device::host_tensor(dtype, std::move(shape), false);
    size_t bytes = Tensor::bytes_for(dtype, shape);
    return Tensor::in_storage(dtype, std::move(shape), gpu_->allocate_pinned(bytes));
  }

  // Mapped memory: kernels read the host's bytes over the bus, as the
  // device's own. Needs a GPU that maps host memory into one address space
  // with the host's (every GPU of a 64-bit system since CUDA 4).
  Tensor share_host(const Tensor& t) override {
    const cuda::GpuProperties& p = gpu_->properties();
    if (!p.can_map_host_memory || !p.unified_addressing)
      throw DataError(info_.id + " (" + p.name + ") cannot map host memory into its address space; use copy=true");
    if (t.nbytes() == 0) return t;
    return t.kept_with(gpu_->host_mappings().share(const_cast<void*>(t.data()), t.nbytes()));
  }

  // Uploaded at once; the host's copy is made only if the host reads it.
  Tensor copy_in(const Tensor& t) override {
    DeviceBuffer b(*gpu_, std::max<size_t>(t.nbytes(), 1));
    b.upload(t.data(), t.nbytes(), /*wait=*/true);
    Tensor c = Tensor::for_overwrite(t.dtype(), t.shape());
    c.set_mirror(std::make_shared<cuda::GpuMirror>(info_.id, std::move(b)), /*host_current=*/false);
    c.set_device(info_.id);
    return c;
  }

  double last_kernel_milliseconds() const override { return last_kernel_ms_; }
  size_t last_run_bytes_copied_in() const override { return last_copied_in_; }

  // Another library's memory of this GPU (in its primary context, where the
  // CUDA runtime and so PyTorch allocate): every queued kernel finished
  // first (the producer's own streams), then a device-to-device copy.
  Tensor copy_in_device_memory(uint64_t address, DType dtype, Shape shape) override {
    Tensor t = Tensor::for_overwrite(dtype, std::move(shape));
    if (t.nbytes() > 0 && address == 0) throw DataError(info_.id + ": no memory at address 0 for " + std::to_string(t.nbytes()) + " bytes");
    DeviceBuffer b(*gpu_, std::max<size_t>(t.nbytes(), 1));
    if (t.nbytes() > 0) {
      const cuda::Driver& d = gpu_->driver();
      gpu_->bind();
      d.check(d.cuCtxSynchronize(), "waiting for the work queued on " + gpu_->id());
      d.check(d.cuMemcpyDtoDAsync(b.address(), address, t.nbytes(), gpu_->stream()),
              "copying " + std::to_string(t.nbytes()) + " bytes on " + gpu_->id());
      gpu_->synchronize();
    }
    // As a kernel's output: the host's bytes filled only when the host reads them.
    t.set_mirror(std::make_shared<cuda::GpuMirror>(info_.id, std::move(b)), /*host_current=*/false);
    t.set_device(info_.id);
    return t;
  }

  std::optional<HeldMemory> held_memory(const Tensor& t) const override {
    std::shared_ptr<const cuda::GpuMirror> m = cuda::gpu_mirror_of(t, info_.id);
    if (!m) return std::nullopt;
    return HeldMemory{m->address(), std::move(m)};
  }
  cuda::Gpu& gpu() { return *gpu_; }

  Attempt execute(const cir::Kernel& kernel, uint64_t key, const std::vector<Tensor>& inputs,
                  const std::map<std::string, Scalar>& scalars) override {
    return execute_plan(kernel, tuned_plan(*this, plans_, kernel, key, [&](const TuningChoice& c) { return make_plan(kernel, c); }),
                        inputs, scalars);
  }

  std::vector<TuningCandidate> tuning_candidates(const cir::Kernel& kernel) override { return gpu_tuning_space(kernel, target_); }

  Attempt execute_choice(const cir::Kernel& kernel, uint64_t key, const TuningChoice& choice, const std::vector<Tensor>& inputs,
                         const std::map<std::string, Scalar>& scalars) override {
    auto plan = chosen_plan(plans_, key, choice, [&](const TuningChoice& c) { return make_plan(kernel, c); });
    if (!plan) return Attempt::unsupported();
    return execute_plan(kernel, plan, inputs, scalars);
  }

  template <class PlanPtr>
  Attempt execute_plan(const cir::Kernel& kernel, const PlanPtr& plan, const std::vector<Tensor>& inputs,
                       const std::map<std::string, Scalar>& scalars) {
    if (!plan->function) return Attempt::unsupported();
    // Each run on a stream of its own: runs from several host threads (async
    // compute blocks) copy and compute at the same time.
    cuda::Gpu& gpu = *gpu_;
    gpu.bind();
    codegen::KernelOperands ops = codegen::prepare_operands(kernel, inputs, scalars, /*zeroed_output=*/false);

    // Device copies of every tensor, then the parameters as kernel_abi.hpp
    // lays them out: device addresses for tensors, values for scalars.
    // (deques: params point at addresses, which stay where they are)
    std::deque<DeviceBuffer> buffers;
    std::deque<cuda::CUdeviceptr> addresses;
    std::vector<void*> params;
    std::vector<std::shared_ptr<void>> mapped;  // views' host memory kernels read in place
    std::vector<std::shared_ptr<const cuda::GpuMirror>> mirrors;  // inputs already here
    // Inputs placed on this GPU but not (or no longer) held here: their
    // uploads become their mirrors, for the next kernel to read.
    std::vector<std::pair<const Tensor*, DeviceBuffer*>> to_keep;
    size_t copied_in = 0;
    // After the buffers: on the way out, an error included, the stream is
    // done with them before they go back to the pool.
    StreamLease stream(*this);
    auto add_buffer = [&](size_t bytes) -> DeviceBuffer& {
      buffers.emplace_back(gpu, std::max<size_t>(bytes, 1));
      addresses.push_back(buffers.back().address());
      params.push_back(&addresses.back());
      return buffers.back();
    };
    DeviceBuffer* out = nullptr;
    // Each input's device address by parameter name (the tensor maps' factors).
    std::map<std::string, cuda::CUdeviceptr> input_addresses;
    for (size_t i = 0; i < ops.params.size(); ++i) {
      const codegen::KernelOperands::Operand& o = ops.params[i];
      const Tensor* t = ops.tensor(o);
      if (!t) {
        params.push_back(const_cast<void*>(o.scalar));
        continue;
      }
      if (o.role == cir::ParamRole::Input && t->nbytes() > 0) {
        if (std::shared_ptr<const cuda::GpuMirror> m = cuda::gpu_mirror_of(*t, info_.id)) {
          addresses.push_back(m->address());
          params.push_back(&addresses.back());
          input_addresses[kernel.params[i].name] = addresses.back();
          mirrors.push_back(std::move(m));
          continue;
        }
        // Read in place where aligned as kernels expect (kernel_abi.hpp); else copied.
        std::optional<cuda::HostMappings::Found> m = gpu.host_mappings().find(t->data(), t->nbytes());
        if (m && m->address % codegen::kGpuTensorAlignment == 0) {
          addresses.push_back(m->address);
          params.push_back(&addresses.back());
          input_addresses[kernel.params[i].name] = addresses.back();
          mapped.push_back(std::move(m->hold));
          continue;
        }
      }
      DeviceBuffer& b = add_buffer(t->nbytes());
      if (o.role == cir::ParamRole::Input) {
        input_addresses[kernel.params[i].name] = b.address();
        b.upload_on(stream.get(), t->data(), t->nbytes());
        copied_in += t->nbytes();
        if (t->device() == info_.id) to_keep.emplace_back(t, &b);
      } else {
        out = &b;
        if (!plan->writes_whole_output) b.zero_on(stream.get());
      }
    }
    std::vector<Tensor*> reduce = ops.reduce_tensors();
    std::vector<DeviceBuffer*> reduce_buffers;
    for (Tensor* t : reduce) {
      if (t->data() == ops.out.data()) {  // argmin/argmax accumulate into the output itself
        addresses.push_back(out->address());
        params.push_back(&addresses.back());
        reduce_buffers.push_back(out);
        continue;
      }
      // A reduction's starting values: the run's own scratch, not an input
      // (a few bytes; not counted in copied_in).
      DeviceBuffer& b = add_buffer(t->nbytes());
      b.upload_on(stream.get(), t->data(), t->nbytes());
      reduce_buffers.push_back(&b);
    }
    int32_t status = 0;
    DeviceBuffer& status_buffer = add_buffer(sizeof status);
    status_buffer.zero_on(stream.get());
    // After the status pointer, a tensor map per factor of each warpgroup
    // product (kernel_abi.hpp), passed by value: 128 bytes, 64-byte aligned,
    // kept until the launch has read them (reserved: never moved).
    std::vector<cuda::CUtensorMap> tensor_maps;
    tensor_maps.reserve(plan->tensor_maps.size());
    for (const codegen::TensorMapParam& m : plan->tensor_maps) {
      auto found = input_addresses.find(m.operand.buffer);
      if (found == input_addresses.end())
        throw std::logic_error("a warpgroup product's factor '" + m.operand.buffer + "' is not an input of the kernel");
      tensor_maps.push_back(cuda::encode_tensor_map(gpu.driver(), m, found->second));
      params.push_back(&tensor_maps.back());
    }

    // Events around the launch time the kernel alone (last_kernel_milliseconds).
    stream.started().record(stream.get());
    gpu.launch(plan->function, plan->blocks, plan->threads, plan->dynamic_shared, stream.get(), params.data());
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
    last_kernel_ms_ = cuda::Event::elapsed_ms(stream.started(), stream.finished());
    last_copied_in_ = copied_in;
    for (auto& [t, b] : to_keep) t->set_mirror(std::make_shared<cuda::GpuMirror>(info_.id, std::move(*b)), /*host_current=*/true);
    if (status) return Attempt::check_failed();
    Tensor result = codegen::finish_operands(kernel, ops);
    if (keep_output) {
      result.set_mirror(std::make_shared<cuda::GpuMirror>(info_.id, std::move(*out)), /*host_current=*/false);
      result.set_device(info_.id);
    }
    return Attempt::done(std::move(result));
  }

 private:
  // A stream and the events that time a kernel on it, made once and reused
  // by one run at a time.
  struct RunStream {
    cuda::Stream stream;
    cuda::Event started, finished;
    explicit RunStream(cuda::Gpu& gpu) : stream(gpu), started(gpu), finished(gpu) {}
  };

  // An idle RunStream (or a new one) for the life of a run.
  class StreamLease {
   public:
    explicit StreamLease(CudaDevice& d) : d_(d) {
      std::lock_guard<std::mutex> lock(d.streams_mu_);
      if (d.idle_streams_.empty()) {
        s_ = std::make_unique<RunStream>(*d.gpu_);
      } else {
        s_ = std::move(d.idle_streams_.back());
        d.idle_streams_.pop_back();
      }
    }
    ~StreamLease() {
      d_.gpu_->driver().cuStreamSynchronize(s_->stream.get());  // a no-op after a run that finished
      std::lock_guard<std::mutex> lock(d_.streams_mu_);
      d_.idle_streams_.push_back(std::move(s_));
    }
    StreamLease(const StreamLease&) = delete;
    StreamLease& operator=(const StreamLease&) = delete;
    cuda::CUstream get() const { return s_->stream.get(); }
    const cuda::Event& started() const { return s_->started; }
    const cuda::Event& finished() const { return s_->finished; }
    void synchronize() const { s_->stream.synchronize(); }

   private:
    CudaDevice& d_;
    std::unique_ptr<RunStream> s_;
  };

  // The kernel as it runs here: planned, compiled, loaded. No function: the
  // GPU cannot run it (execute says so, and the runtime's policy takes it).
  struct Plan {
    std::string why_not;
    cuda::CUfunction function = nullptr;
    unsigned blocks = 1;
    unsigned threads = kGpuBlockThreads;
    unsigned dynamic_shared = 0;  // bytes of dynamic shared memory per block
    bool writes_whole_output = false;
    // The planned kernel's tensor maps (kernel_abi.hpp), in its entry's order.
    std::vector<codegen::TensorMapParam> tensor_maps;
  };

  std::shared_ptr<Plan> make_plan(const cir::Kernel& kernel, const TuningChoice& choice) {
    auto plan = std::make_shared<Plan>();
    GpuPlan p = gpu_plan(kernel, target_, choice);
    if (!p.kernel) {
      plan->why_not = p.why_not;
      return plan;
    }
    plan->writes_whole_output = p.writes_whole_output;
    const cir::Kernel& k = *p.kernel;
    plan->tensor_maps = codegen::tensor_map_params(k);
    std::string entry = "zyntax_kernel_" + cir::hash_hex(cir::hash_kernel(k));
    // PTX from an earlier run where there is one (the driver keeps its own
    // cache of the machine code it makes from PTX).
    std::string ptx = codegen::NvptxCompiler::instance().cached_ptx(k, entry, arch_, DiskCache::global());
    std::lock_guard<std::mutex> lock(mu_);
    cuda::CUmodule module = gpu_->load_module(ptx);  // kept for the life of the process
    plan->function = gpu_->function(module, entry);
    if (p.shared_bytes > target_.shared_memory_static) {
      plan->dynamic_shared = static_cast<unsigned>(p.shared_bytes);
      gpu_->allow_dynamic_shared(plan->function, plan->dynamic_shared);
    }
    // A block per row or an iteration per thread, up to a few waves.
    int64_t most = std::max<int64_t>(1, gpu_->properties().multiprocessors) * kBlocksPerMultiprocessor;
    plan->blocks = gpu_launch_blocks(p, most);
    plan->threads = static_cast<unsigned>(p.block_threads);
    return plan;
  }

  std::unique_ptr<cuda::Gpu> gpu_;
  codegen::NvptxArch arch_;
  GpuTarget target_;  // what the planner may use of this GPU
  DeviceInfo info_;
  std::atomic<double> last_kernel_ms_ = 0;
  std::atomic<size_t> last_copied_in_ = 0;
  std::mutex mu_;  // loading modules
  std::mutex streams_mu_;
  std::vector<std::unique_ptr<RunStream>> idle_streams_;
  KernelCache<Plan> plans_;
};

}  // namespace

std::unique_ptr<Device> make_cuda_device(std::unique_ptr<cuda::Gpu> gpu) { return std::make_unique<CudaDevice>(std::move(gpu)); }


cuda::Gpu* cuda_gpu_of(Device& device) {
  auto* d = dynamic_cast<CudaDevice*>(&device);
  return d ? &d->gpu() : nullptr;
}

}  // namespace zyntax
