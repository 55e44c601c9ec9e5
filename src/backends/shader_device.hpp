// What the devices whose kernels run as shaders (Vulkan's GLSL, Metal's
// MSL) do alike around their API calls: a plan per kernel (the tuning
// database's choice, or one the tuner asks for), cached, holding the
// shader, its pipeline (none where the device cannot run the kernel, and
// why) and the workgroups to launch; execute() and the tuner's runs on it.
// A backend makes the plan (plans, writes, compiles) and runs it.
#pragma once

#include <algorithm>
#include <memory>
#include <string>

#include "cir/hash.hpp"
#include "plan/gpu_plan.hpp"
#include "plan/gpu_tuning.hpp"
#include "runtime/device.hpp"
#include "runtime/kernel_cache.hpp"
#include "runtime/tuned_plans.hpp"

namespace zyntax {

template <class Shader, class Pipeline>
struct ShaderPlan {
  std::string why_not;  // where there is no pipeline: why the device cannot run the kernel
  std::string source;   // the shader's text
  Shader shader;
  std::unique_ptr<Pipeline> pipeline;
  uint32_t groups_x = 1, groups_y = 1;
  bool writes_whole_output = false;

  // A workgroup per block of the plan, in rows of at most the target's
  // max_blocks (so that the grid's and the blocks' loops run once per
  // invocation); at most `most`, the shaders' loops striding over the rest.
  void launch_blocks(const GpuPlan& p, const GpuTarget& target, int64_t most) {
    int64_t blocks = gpu_launch_blocks(p, most);
    groups_x = static_cast<uint32_t>(std::min<int64_t>(blocks, target.max_blocks));
    groups_y = static_cast<uint32_t>((blocks + groups_x - 1) / groups_x);
    writes_whole_output = p.writes_whole_output;
  }
};

template <class Plan>
class ShaderDevice : public Device {
 public:
  std::shared_ptr<Plan> plan_of(const cir::Kernel& kernel, uint64_t key) {
    return tuned_plan(*this, plans_, kernel, key, [&](const TuningChoice& c) { return make_plan(kernel, c); });
  }

  std::vector<TuningCandidate> tuning_candidates(const cir::Kernel& kernel) override { return gpu_tuning_space(kernel, *gpu_target()); }

  Attempt execute_choice(const cir::Kernel& kernel, uint64_t key, const TuningChoice& choice, const std::vector<Tensor>& inputs,
                         const std::map<std::string, Scalar>& scalars) override {
    std::shared_ptr<Plan> plan = chosen_plan(plans_, key, choice, [&](const TuningChoice& c) { return make_plan(kernel, c); });
    if (!plan) return Attempt::unsupported();
    return execute_plan(kernel, *plan, inputs, scalars);
  }

 protected:
  Attempt execute(const cir::Kernel& kernel, uint64_t key, const std::vector<Tensor>& inputs,
                  const std::map<std::string, Scalar>& scalars) override {
    return execute_plan(kernel, *plan_of(kernel, key), inputs, scalars);
  }

  virtual std::shared_ptr<Plan> make_plan(const cir::Kernel& kernel, const TuningChoice& choice) = 0;
  // Unsupported where the plan has no pipeline or the data exceeds a limit of the device.
  virtual Attempt execute_plan(const cir::Kernel& kernel, const Plan& plan, const std::vector<Tensor>& inputs,
                               const std::map<std::string, Scalar>& scalars) = 0;

 private:
  KernelCache<Plan> plans_;
};

// The shader a device of type D would run for a specialised kernel, and why
// not where it would not (for `zyntax compile --backend vulkan|metal`).
template <class D>
std::string shader_source_of(Device& device, const cir::Kernel& kernel, std::string* why_not, const char* api) {
  auto* d = dynamic_cast<D*>(&device);
  if (!d) {
    if (why_not) *why_not = device.info().id + " is not a " + api + " device";
    return "";
  }
  auto plan = d->plan_of(kernel, cir::hash_kernel(kernel));
  if (why_not) *why_not = plan->why_not;
  return plan->source;
}

}  // namespace zyntax
