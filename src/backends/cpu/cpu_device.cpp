#include "backends/cpu/cpu_device.hpp"

#include <array>
#include <atomic>
#include <mutex>
#include <cstring>

#include "cir/hash.hpp"
#include "codegen/llvm/cpu/cpu_jit.hpp"
#include "codegen/llvm/kernel_abi.hpp"
#include "codegen/llvm/kernel_operands.hpp"
#include "plan/cpu_plan.hpp"
#include "plan/cpu_tuning.hpp"
#include "runtime/kernel_cache.hpp"
#include "runtime/tuned_plans.hpp"
#include "runtime/thread_pool.hpp"
#include "support/diagnostics.hpp"

namespace zyntax {

namespace {

using codegen::CpuJit;

class LlvmCpuDevice : public Device {
  // The kernel as it is compiled (see cpu_plan.hpp) and its machine code;
  // none when it runs on the reference executor.
  struct Plan {
    std::optional<cir::Kernel> kernel;
    const CpuJit::Compiled* compiled = nullptr;  // the JIT keeps it for the process
    uint64_t hash = 0;
    bool writes_whole_output = false;
    bool one_thread = false;  // too little work to share
    std::optional<codegen::OuterLoop> outer;  // the loop shared over the pool
  };

 public:
  // threads == 0: the process's pool; else a pool of its own, made when first used.
  LlvmCpuDevice(const std::string& id, int threads) : threads_(threads) {
    int n = threads ? threads : ThreadPool::global().size();
    info_ = host_cpu_info(id, std::string("LLVM ") + ZYNTAX_LLVM_VERSION + " JIT, " + CpuJit::instance().target().simd + ", " +
                                  std::to_string(n) + " threads");
    if (threads) info_.cores = threads;
  }

  const DeviceInfo& info() const override { return info_; }

  Attempt execute(const cir::Kernel& kernel, uint64_t key, const std::vector<Tensor>& inputs,
                  const std::map<std::string, Scalar>& scalars) override {
    return execute_plan(kernel, plan_for(kernel, key), inputs, scalars);
  }

  std::vector<TuningCandidate> tuning_candidates(const cir::Kernel& kernel) override {
    // The cost model's best few dozen, of which the tuner times fewer.
    return cpu_tuning_space(kernel, pool().size(), CpuJit::instance().target().vector_bits, 64);
  }

  Attempt execute_choice(const cir::Kernel& kernel, uint64_t key, const TuningChoice& choice, const std::vector<Tensor>& inputs,
                         const std::map<std::string, Scalar>& scalars) override {
    std::shared_ptr<Plan> plan = chosen_plan(plans_, key, choice, [&](const TuningChoice& c) { return make_plan(kernel, c); });
    if (!plan) return Attempt::unsupported();  // a choice these plans do not take
    return execute_plan(kernel, plan, inputs, scalars);
  }

  std::unique_ptr<HostLaunch> prepare_host_launch(const cir::Kernel& kernel, uint64_t key,
                                                  const std::map<std::string, Scalar>& scalars) override {
    std::shared_ptr<Plan> plan = plan_for(kernel, key);
    // Reduce kernels finish on the host after the call (codegen::finish_operands): the general path.
    if (!plan->kernel || kernel.kind == cir::KernelKind::Reduce) return nullptr;
    return std::make_unique<Launch>(kernel, std::move(plan), scalars, pool());
  }

  Share run_share(const cir::Kernel& kernel, uint64_t key, const std::vector<Tensor>& inputs,
                  const std::map<std::string, Scalar>& scalars, int part, int parts, Tensor& out) override {
    std::shared_ptr<Plan> plan = plan_for(kernel, key);
    if (!plan->kernel || kernel.kind == cir::KernelKind::Reduce) return Share::Unsupported;
    const std::optional<codegen::OuterLoop>& outer = plan->outer;
    if (!outer) return Share::Unsupported;
    const CpuJit::Compiled& c = *plan->compiled;
    codegen::KernelOperands ops = codegen::prepare_operands_into(kernel, inputs, scalars, out);
    std::vector<void*> args;
    for (const codegen::KernelOperands::Operand& o : ops.params)
      args.push_back(const_cast<void*>(ops.tensor(o) ? ops.tensor(o)->data() : o.scalar));
    int64_t first = outer->trips * part / parts, end = outer->trips * (part + 1) / parts;
    std::atomic<int32_t> failed{0};
    pool().parallel_for(end - first, [&](int64_t b, int64_t e) {
      int32_t status = 0;
      c.fn(args.data(), first + b, first + e, &status);
      if (status) failed.store(status);
    });
    return failed.load() ? Share::RunWhole : Share::Done;
  }

 private:
  // The kernel's plan: the tuning database's choice for it, else the rules.
  std::shared_ptr<Plan> plan_for(const cir::Kernel& kernel, uint64_t key) {
    return tuned_plan(*this, plans_, kernel, key, [&](const TuningChoice& c) { return make_plan(kernel, c); });
  }

  Attempt execute_plan(const cir::Kernel& kernel, const std::shared_ptr<Plan>& plan, const std::vector<Tensor>& inputs,
                       const std::map<std::string, Scalar>& scalars) {
    if (!plan->kernel) return Attempt::unsupported();

    // One pointer per parameter: tensor data, or the scalar's value in its dtype.
    codegen::KernelOperands ops = codegen::prepare_operands(kernel, inputs, scalars, !plan->writes_whole_output);
    std::vector<void*> args;
    for (const codegen::KernelOperands::Operand& o : ops.params)
      args.push_back(const_cast<void*>(ops.tensor(o) ? ops.tensor(o)->data() : o.scalar));
    for (Tensor* t : ops.reduce_tensors()) args.push_back(t->data());

    if (!run_plan(*plan, args.data(), pool())) return Attempt::check_failed();
    return Attempt::done(codegen::finish_operands(kernel, ops));
  }

  // Runs the plan's code with `args` over its outer loop (on the calling
  // thread where there is too little work to share); false where a runtime
  // check failed.
  static bool run_plan(const Plan& plan, void* const* args, ThreadPool& pool) {
    codegen::KernelFn fn = plan.compiled->fn;
    std::atomic<int32_t> failed{0};
    auto call = [&](int64_t begin, int64_t end) {
      int32_t status = 0;
      fn(args, begin, end, &status);
      int32_t none = 0;
      if (status) failed.compare_exchange_strong(none, status);
    };
    if (plan.outer && plan.one_thread) call(0, plan.outer->trips);
    else if (plan.outer) pool.parallel_for(plan.outer->trips, call);
    else call(0, 1);
    return failed.load() == 0;
  }

  // prepare_host_launch's launch: the parameters' order and the scalars'
  // bytes laid out once; a run fills in the data pointers and calls the code.
  class Launch : public HostLaunch {
   public:
    Launch(const cir::Kernel& kernel, std::shared_ptr<Plan> plan, const std::map<std::string, Scalar>& scalars, ThreadPool& pool)
        : plan_(std::move(plan)), pool_(pool) {
      const cir::Param& out = kernel.output();
      out_bytes_ = dtype_size(out.type.dtype);
      for (const cir::Expr& d : out.type.shape) out_bytes_ *= static_cast<size_t>(d.as<cir::IntImm>()->value);
      scalar_storage_.reserve(kernel.params.size());
      int next_input = 0;
      for (const cir::Param& p : kernel.params) {
        Slot slot;
        if (p.role == cir::ParamRole::Input) {
          slot.input = next_input++;
        } else if (p.role == cir::ParamRole::Output) {
          slot.output = true;
        } else {
          scalar_storage_.push_back(codegen::scalar_operand(scalars.at(p.name), p.type.dtype).bytes);
          slot.scalar = scalar_storage_.back().data();
        }
        slots_.push_back(slot);
      }
    }

    bool run(const void* const* inputs, void* out) const override {
      if (!plan_->writes_whole_output && out_bytes_) std::memset(out, 0, out_bytes_);
      constexpr size_t kOnStack = 16;
      void* on_stack[kOnStack];
      std::vector<void*> on_heap(slots_.size() > kOnStack ? slots_.size() : 0);
      void** args = on_heap.empty() ? on_stack : on_heap.data();
      for (size_t i = 0; i < slots_.size(); ++i) {
        const Slot& s = slots_[i];
        args[i] = s.output ? out : s.input >= 0 ? const_cast<void*>(inputs[s.input]) : const_cast<unsigned char*>(s.scalar);
      }
      return run_plan(*plan_, args, pool_);
    }

   private:
    struct Slot {
      int input = -1;  // an input's index
      bool output = false;
      const unsigned char* scalar = nullptr;
    };
    std::shared_ptr<Plan> plan_;
    ThreadPool& pool_;
    std::vector<Slot> slots_;
    std::vector<std::array<unsigned char, 8>> scalar_storage_;  // reserved up front: slots point into it
    size_t out_bytes_ = 0;
  };

  ThreadPool& pool() {
    if (!threads_) return ThreadPool::global();
    std::call_once(pool_made_, [&] { pool_ = std::make_unique<ThreadPool>(threads_); });
    return *pool_;
  }

  std::shared_ptr<Plan> make_plan(const cir::Kernel& kernel, const TuningChoice& choice) {
    auto plan = std::make_shared<Plan>();
    CpuPlan p = plan_cpu_kernel(kernel, pool().size(), CpuJit::instance().target().vector_bits, choice);
    plan->kernel = std::move(p.kernel);
    plan->writes_whole_output = p.writes_whole_output;
    plan->one_thread = p.one_thread;
    if (plan->kernel) {
      plan->hash = cir::hash_kernel(*plan->kernel);
      plan->compiled = &CpuJit::instance().compile(*plan->kernel, plan->hash);
      plan->outer = codegen::outer_parallel_loop(*plan->kernel);
    }
    return plan;
  }

  int threads_;
  std::once_flag pool_made_;
  std::unique_ptr<ThreadPool> pool_;
  DeviceInfo info_;
  KernelCache<Plan> plans_;
};

}  // namespace

std::unique_ptr<Device> make_llvm_cpu_device(const std::string& id, int threads) {
  return std::make_unique<LlvmCpuDevice>(id, threads);
}

}  // namespace zyntax
