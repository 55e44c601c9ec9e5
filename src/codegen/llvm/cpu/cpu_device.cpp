#include "codegen/llvm/cpu/cpu_device.hpp"

#include <atomic>
#include <cstring>

#include "cir/hash.hpp"
#include "codegen/llvm/cpu/cpu_jit.hpp"
#include "codegen/llvm/cpu/cpu_plan.hpp"
#include "codegen/llvm/ir_emitter.hpp"
#include "codegen/llvm/kernel_abi.hpp"
#include "codegen/llvm/kernel_operands.hpp"
#include "interp/reference_executor.hpp"
#include "runtime/kernel_cache.hpp"
#include "runtime/thread_pool.hpp"
#include "support/diagnostics.hpp"

namespace zyntax {

namespace {

using codegen::CpuJit;

class LlvmCpuDevice : public Device {
 public:
  explicit LlvmCpuDevice(const std::string& id)
      : info_(host_cpu_info(id, std::string("LLVM ") + ZYNTAX_LLVM_VERSION + " JIT, " + CpuJit::instance().target().simd +
                                    ", " + std::to_string(ThreadPool::global().size()) + " threads")) {}

  const DeviceInfo& info() const override { return info_; }

  Tensor run(const cir::Kernel& kernel, uint64_t key, const std::vector<Tensor>& inputs,
             const std::map<std::string, Scalar>& scalars) override {
    std::shared_ptr<Plan> plan = plans_.get(key, [&] { return make_plan(kernel); });
    if (!plan->kernel) return reference(kernel, key).run(inputs, scalars);
    const cir::Kernel* native = &*plan->kernel;
    const CpuJit::Compiled& c = CpuJit::instance().compile(*native, plan->hash);

    // One pointer per parameter: tensor data, or the scalar's value in its dtype.
    codegen::KernelOperands ops = codegen::prepare_operands(kernel, inputs, scalars, !plan->writes_whole_output);
    std::vector<void*> args;
    for (const codegen::KernelOperands::Operand& o : ops.params)
      args.push_back(const_cast<void*>(ops.tensor(o) ? ops.tensor(o)->data() : o.scalar));
    for (Tensor* t : ops.reduce_tensors()) args.push_back(t->data());

    std::atomic<int32_t> failed{0};
    auto call = [&](int64_t begin, int64_t end) {
      int32_t status = 0;
      c.fn(args.data(), begin, end, &status);
      int32_t none = 0;
      if (status) failed.compare_exchange_strong(none, status);
    };
    if (std::optional<codegen::OuterLoop> outer = codegen::outer_parallel_loop(*native))
      ThreadPool::global().parallel_for(outer->trips, call);
    else
      call(0, 1);
    if (failed.load()) {
      // A check failed: the reference executor reports the error with the
      // source's words and place (or, for a conservative check such as a
      // tile outgrowing its array, simply computes the result).
      return reference(kernel, key).run(inputs, scalars);
    }
    return codegen::finish_operands(kernel, ops);
  }

 private:
  ReferenceKernel& reference(const cir::Kernel& kernel, uint64_t key) {
    return *references_.get(key, [&] { return std::make_shared<ReferenceKernel>(kernel); });
  }

  // The kernel as it is compiled (see cpu_plan.hpp); none when it runs on
  // the reference executor.
  struct Plan {
    std::optional<cir::Kernel> kernel;
    uint64_t hash = 0;
    bool writes_whole_output = false;
  };

  static std::shared_ptr<Plan> make_plan(const cir::Kernel& kernel) {
    auto plan = std::make_shared<Plan>();
    codegen::CpuPlan p = codegen::plan_cpu_kernel(kernel, ThreadPool::global().size());
    plan->kernel = std::move(p.kernel);
    plan->writes_whole_output = p.writes_whole_output;
    if (plan->kernel) plan->hash = cir::hash_kernel(*plan->kernel);
    return plan;
  }

  DeviceInfo info_;
  KernelCache<ReferenceKernel> references_;
  KernelCache<Plan> plans_;
};

}  // namespace

std::unique_ptr<Device> make_llvm_cpu_device(const std::string& id) { return std::make_unique<LlvmCpuDevice>(id); }

}  // namespace zyntax
