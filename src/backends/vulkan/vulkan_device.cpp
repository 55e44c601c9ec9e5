#include "backends/vulkan/vulkan_device.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>

#include "backends/shader_device.hpp"
#include "backends/shader_launch.hpp"
#include "cir/hash.hpp"
#include "codegen/glsl/glsl_emitter.hpp"
#include "codegen/glsl/spirv_compiler.hpp"
#include "plan/gpu_plan.hpp"
#include "plan/gpu_tuning.hpp"
#include "runtime/tuned_plans.hpp"
#include "runtime/disk_cache.hpp"
#include "runtime/kernel_cache.hpp"
#include "runtime/size_class_pool.hpp"

namespace zyntax {

namespace {

using vulkan::Gpu;

// Workgroups launched at most; the shaders' loops stride over the rest.
constexpr int64_t kMostGroups = int64_t{65535} * 65535;

using Plan = ShaderPlan<codegen::GlslKernel, Gpu::Pipeline>;

class VulkanDevice : public ShaderDevice<Plan> {
 public:
  explicit VulkanDevice(std::unique_ptr<Gpu> gpu)
      : gpu_(std::move(gpu)),
        // Buffers kept for the next run in size classes (vkAllocateMemory is
        // slow, and a device allows only so many allocations).
        pool_(gpu_->id(), make_buffers(gpu_->stages() ? Gpu::Memory::Device : Gpu::Memory::Shared), free_buffer),
        staging_(gpu_->id() + " staging", make_buffers(Gpu::Memory::Staging), free_buffer) {
    info_.id = gpu_->id();
    info_.type = gpu_->is_cpu() ? "cpu" : "gpu";
    info_.name = gpu_->name();
    info_.cores = gpu_->target().multiprocessors;
    info_.memory_bytes = gpu_->memory_bytes();
    info_.backend = "GLSL → SPIR-V (shaderc), " + gpu_->driver_text() + (gpu_->stages() ? ", device-local buffers through staging" : "");
  }

  const DeviceInfo& info() const override { return info_; }
  const GpuTarget* gpu_target() const override { return &gpu_->target(); }
  double last_kernel_milliseconds() const override { return gpu_->last_dispatch_milliseconds(); }

 private:
  Attempt execute_plan(const cir::Kernel& kernel, const Plan& plan, const std::vector<Tensor>& inputs,
                       const std::map<std::string, Scalar>& scalars) override {
    if (!plan.pipeline) return Attempt::unsupported();
    ShaderLaunch launch(kernel, inputs, scalars, plan.writes_whole_output);
    if (launch.largest_tensor_bytes() > gpu_->max_buffer_bytes()) return Attempt::unsupported();

    // The shader's storage buffers from the pools, and back to them when the
    // run ends, an error included. Where the device stages, each has a
    // host-visible twin the host fills and reads, copied to and from it
    // around the dispatch; elsewhere the device reads the host-visible
    // buffer itself.
    PooledBuffers<Gpu::Buffer> lease(pool_), staging_lease(staging_);
    const bool stages = gpu_->stages();
    std::vector<Gpu::Buffer*> bound, host;  // host[i]: what the host reads and writes for bound[i]
    std::vector<Gpu::Copy> before, after;
    for (const ShaderLaunch::Buffer& b : launch.buffers()) {
      bound.push_back(lease.take(b.bytes));
      host.push_back(stages ? staging_lease.take(b.bytes) : bound.back());
      if (b.fill && b.bytes) std::memcpy(host.back()->data(), b.fill, b.bytes);
      if (stages && b.fill) before.push_back({host.back(), bound.back(), b.bytes});
      if (stages && b.read_back) after.push_back({bound.back(), host.back(), b.bytes});
    }
    std::vector<uint8_t> push = launch.argument_bytes(shader_arguments(plan.shader.push_constants), plan.shader.push_constant_bytes, "Vulkan");
    gpu_->dispatch(*plan.pipeline, bound, push, plan.groups_x, plan.groups_y, before, after);
    if (vulkan::Instance* instance = vulkan::Instance::get(); instance && instance->validating()) {
      std::vector<std::string> messages = instance->take_messages();
      if (!messages.empty()) throw std::logic_error("Vulkan validation on " + info_.id + " running " + kernel.name + ": " + messages.front());
    }
    if (ShaderLaunch::check_failed(host[launch.status_buffer()]->data())) return Attempt::check_failed();
    for (size_t i = 0; i < bound.size(); ++i) {
      const ShaderLaunch::Buffer& b = launch.buffers()[i];
      if (b.result && b.bytes) std::memcpy(b.result, host[i]->data(), b.bytes);
    }
    return Attempt::done(launch.finish());
  }

 private:
  std::shared_ptr<Plan> make_plan(const cir::Kernel& kernel, const TuningChoice& choice) override {
    auto plan = std::make_shared<Plan>();
    const GpuTarget& target = gpu_->target();
    GpuPlan p = gpu_plan(kernel, target, choice);
    if (!p.kernel) {
      plan->why_not = p.why_not;
      return plan;
    }
    if (std::optional<std::string> why = codegen::glsl_unsupported_reason(*p.kernel, target, p.block_threads)) {
      plan->why_not = "its GLSL would need " + *why;
      return plan;
    }
    plan->shader = codegen::emit_glsl(*p.kernel, target, p.block_threads);
    // Where the driver's compile time would run away, the host's (about
    // linear in the kernel's size) instead.
    if (target.max_shader_helper_calls && plan->shader.helper_calls > target.max_shader_helper_calls) {
      plan->why_not = "its shader calls math functions " + std::to_string(plan->shader.helper_calls) +
                      " times, which this driver would take minutes to compile (at most " +
                      std::to_string(target.max_shader_helper_calls) + ")";
      return plan;
    }
    plan->source = plan->shader.source;
    int bindings = plan->shader.status_binding + 1;
    if (plan->shader.push_constant_bytes > gpu_->push_constant_limit()) {
      plan->why_not = "its scalars take " + std::to_string(plan->shader.push_constant_bytes) + " bytes of push constants, more than the device's " +
                      std::to_string(gpu_->push_constant_limit());
      return plan;
    }
    // SPIR-V from an earlier run where there is one (the disk cache).
    codegen::SpirvModule m = codegen::cached_spirv(plan->shader.source, kernel.name, DiskCache::global());
    if (!m.error.empty()) throw std::logic_error("the GLSL of kernel " + kernel.name + " does not compile: " + m.error);
    std::lock_guard<std::mutex> lock(mu_);
    plan->pipeline = std::make_unique<Gpu::Pipeline>(*gpu_, m.words, bindings, plan->shader.push_constant_bytes);
    plan->launch_blocks(p, target, kMostGroups);
    return plan;
  }

  SizeClassPool::RawAllocate make_buffers(Gpu::Memory memory) {
    return [this, memory](size_t bytes) { return reinterpret_cast<uint64_t>(new Gpu::Buffer(*gpu_, bytes, memory)); };
  }
  static void free_buffer(uint64_t buffer) { delete reinterpret_cast<Gpu::Buffer*>(buffer); }

  std::unique_ptr<Gpu> gpu_;
  SizeClassPool pool_;     // the kernels' buffers (Gpu::Buffer, by address)
  SizeClassPool staging_;  // their host-visible twins, where the device stages
  DeviceInfo info_;
  std::mutex mu_;  // making pipelines
};

}  // namespace

std::unique_ptr<Device> make_vulkan_device(std::unique_ptr<vulkan::Gpu> gpu) { return std::make_unique<VulkanDevice>(std::move(gpu)); }

std::string vulkan_glsl_of(Device& device, const cir::Kernel& kernel, std::string* why_not) {
  return shader_source_of<VulkanDevice>(device, kernel, why_not, "Vulkan");
}

}  // namespace zyntax
