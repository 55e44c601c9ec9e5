#include "backends/metal/metal_device.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>

#include "backends/shader_device.hpp"
#include "backends/shader_launch.hpp"
#include "cir/hash.hpp"
#include "codegen/msl/msl_emitter.hpp"
#include "plan/gpu_plan.hpp"
#include "plan/gpu_tuning.hpp"
#include "runtime/disk_cache.hpp"
#include "runtime/kernel_cache.hpp"
#include "runtime/size_class_pool.hpp"
#include "runtime/tuned_plans.hpp"

namespace zyntax {

namespace {

using metal::Gpu;

// Threadgroups launched at most; the kernels' loops stride over the rest.
constexpr int64_t kMostGroups = int64_t{65535} * 65535;

// The disk cache's key for a kernel's MSL. Metal hands out no binary of a
// library compiled from source, but the system's shader cache keeps it: a
// source found here compiled in an earlier run and compiles fast again, so
// its build counts as loaded from disk in the profile.
std::string msl_key(const std::string& source) { return std::string("msl\nzyntax ") + ZYNTAX_VERSION + "\n" + source; }

using Plan = ShaderPlan<codegen::MslKernel, Gpu::Pipeline>;

class MetalDevice : public ShaderDevice<Plan> {
 public:
  explicit MetalDevice(std::unique_ptr<Gpu> gpu)
      : gpu_(std::move(gpu)),
        // Buffers kept for the next run in size classes (a new buffer
        // costs the driver a mapping of fresh pages).
        pool_(gpu_->id(), make_buffers(), free_buffer) {
    info_.id = gpu_->id();
    info_.type = "gpu";
    info_.name = gpu_->name();
    info_.cores = gpu_->target().multiprocessors;
    info_.memory_bytes = gpu_->memory_bytes();
    info_.backend = "MSL → Metal library, " + gpu_->driver_text() + (gpu_->unified_memory() ? ", unified memory" : ", buffers in system memory");
  }

  const DeviceInfo& info() const override { return info_; }
  const GpuTarget* gpu_target() const override { return &gpu_->target(); }
  double last_kernel_milliseconds() const override { return gpu_->last_dispatch_milliseconds(); }

 private:
  Attempt execute_plan(const cir::Kernel& kernel, const Plan& plan, const std::vector<Tensor>& inputs,
                       const std::map<std::string, Scalar>& scalars) override {
    if (!plan.pipeline) return Attempt::unsupported();
    const codegen::MslKernel& shader = plan.shader;
    // The reduce buffers in the kernel's types (f32 sums where the host keeps f64).
    ShaderLaunch launch(kernel, inputs, scalars, plan.writes_whole_output, shader.reduce_buffer_dtypes);
    if (launch.largest_tensor_bytes() > gpu_->max_buffer_bytes()) return Attempt::unsupported();
    if (launch.status_buffer() != static_cast<size_t>(shader.status_buffer))
      throw std::logic_error("Metal: kernel " + kernel.name + " binds its status word at buffer " + std::to_string(shader.status_buffer) +
                             ", the host at " + std::to_string(launch.status_buffer()));

    // The buffers from the pool, and back to it when the run ends, an error
    // included. Shared storage: the host fills and reads the memory the GPU
    // reads and writes.
    PooledBuffers<Gpu::Buffer> lease(pool_);
    std::vector<Gpu::Buffer*> bound;
    for (const ShaderLaunch::Buffer& b : launch.buffers()) {
      bound.push_back(lease.take(b.bytes));
      if (b.fill && b.bytes) std::memcpy(bound.back()->data(), b.fill, b.bytes);
    }
    std::vector<uint8_t> arguments = launch.argument_bytes(shader_arguments(shader.arguments), shader.argument_bytes, "Metal");
    gpu_->dispatch(*plan.pipeline, bound, arguments, shader.arguments_buffer, shader.threadgroup_memory_bytes, plan.groups_x, plan.groups_y,
                   static_cast<uint32_t>(shader.threads_per_group));
    if (ShaderLaunch::check_failed(bound[launch.status_buffer()]->data())) return Attempt::check_failed();
    for (size_t i = 0; i < bound.size(); ++i) {
      const ShaderLaunch::Buffer& b = launch.buffers()[i];
      if (b.result && b.bytes) std::memcpy(b.result, bound[i]->data(), b.bytes);
    }
    return Attempt::done(launch.finish());
  }

  std::shared_ptr<Plan> make_plan(const cir::Kernel& kernel, const TuningChoice& choice) override {
    auto plan = std::make_shared<Plan>();
    const GpuTarget& target = gpu_->target();
    GpuPlan p = gpu_plan(kernel, target, choice);
    if (!p.kernel) {
      plan->why_not = p.why_not;
      return plan;
    }
    if (std::optional<std::string> why = codegen::msl_unsupported_reason(*p.kernel, target, p.block_threads)) {
      plan->why_not = "its MSL would need " + *why;
      return plan;
    }
    plan->shader = codegen::emit_msl(*p.kernel, target, p.block_threads);
    const codegen::MslKernel& shader = plan->shader;
    int buffers = std::max(shader.status_buffer, shader.arguments_buffer) + 1;
    if (buffers > metal::kMostBufferArguments) {
      plan->why_not = "it takes " + std::to_string(buffers) + " buffer arguments, more than Metal's " + std::to_string(metal::kMostBufferArguments);
      return plan;
    }
    if (shader.argument_bytes > metal::kMostInlineArgumentBytes) {
      plan->why_not = "its scalars take " + std::to_string(shader.argument_bytes) + " bytes, more than the " +
                      std::to_string(metal::kMostInlineArgumentBytes) + " Metal passes inline";
      return plan;
    }
    if (shader.threadgroup_memory_bytes > target.shared_memory_max) {
      plan->why_not = "it takes " + std::to_string(shader.threadgroup_memory_bytes) + " bytes of threadgroup memory, more than the device's " +
                      std::to_string(target.shared_memory_max);
      return plan;
    }
    // The MSL in the disk cache once it compiled; a compile error throws,
    // naming the kernel, with Metal's log.
    const DiskCache& cache = DiskCache::global();
    std::string key = msl_key(shader.source);
    bool cached = cache.load(key).has_value();
    {
      std::lock_guard<std::mutex> lock(mu_);
      plan->pipeline = std::make_unique<Gpu::Pipeline>(*gpu_, shader.source, shader.entry, kernel.name);
    }
    if (!cached) cache.store(key, shader.source);
    // The compiled function may hold fewer threads than the plan's
    // threadgroups (its registers decide).
    if (plan->pipeline->max_threads() < static_cast<uint32_t>(shader.threads_per_group)) {
      plan->why_not = "its pipeline takes " + std::to_string(plan->pipeline->max_threads()) + " threads per threadgroup, fewer than its plan's " +
                      std::to_string(shader.threads_per_group);
      plan->pipeline.reset();
      return plan;
    }
    plan->source = shader.source;
    plan->launch_blocks(p, target, kMostGroups);
    return plan;
  }

  // A block that cannot be had is 0: the pool gives its cached blocks back
  // and tries once more before it reports the device out of memory.
  SizeClassPool::RawAllocate make_buffers() {
    return [this](size_t bytes) -> uint64_t {
      try {
        return reinterpret_cast<uint64_t>(new Gpu::Buffer(*gpu_, bytes));
      } catch (const metal::MetalError&) {
        return 0;
      }
    };
  }
  static void free_buffer(uint64_t buffer) { delete reinterpret_cast<Gpu::Buffer*>(buffer); }

  std::unique_ptr<Gpu> gpu_;
  SizeClassPool pool_;  // the kernels' buffers (Gpu::Buffer, by address)
  DeviceInfo info_;
  std::mutex mu_;  // making pipelines
};

}  // namespace

std::unique_ptr<Device> make_metal_device(std::unique_ptr<metal::Gpu> gpu) { return std::make_unique<MetalDevice>(std::move(gpu)); }

std::string metal_msl_of(Device& device, const cir::Kernel& kernel, std::string* why_not) {
  return shader_source_of<MetalDevice>(device, kernel, why_not, "Metal");
}

}  // namespace zyntax
