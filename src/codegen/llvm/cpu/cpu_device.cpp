#include "codegen/llvm/cpu/cpu_device.hpp"

#include <atomic>
#include <cstring>

#include "cir/hash.hpp"
#include "codegen/llvm/cpu/cpu_jit.hpp"
#include "codegen/llvm/cpu/cpu_plan.hpp"
#include "codegen/llvm/ir_emitter.hpp"
#include "codegen/llvm/kernel_abi.hpp"
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
    std::vector<void*> args;
    std::vector<Scalar> scalar_values;
    std::vector<std::array<unsigned char, 8>> scalar_bytes;
    scalar_bytes.reserve(kernel.params.size());
    const cir::Param& outp = kernel.output();
    Shape out_shape;
    for (const cir::Expr& d : outp.type.shape) out_shape.push_back(d.as<cir::IntImm>()->value);
    Tensor out = plan->writes_whole_output ? Tensor::for_overwrite(outp.type.dtype, out_shape)
                                           : Tensor::zeros(outp.type.dtype, out_shape);
    size_t next_input = 0;
    for (const cir::Param& p : kernel.params) {
      if (p.role == cir::ParamRole::Input) {
        args.push_back(const_cast<void*>(inputs.at(next_input++).data()));
      } else if (p.role == cir::ParamRole::Output) {
        args.push_back(out.data());
      } else {
        Tensor v = Tensor::scalar(cast(scalars.at(p.name), p.type.dtype));
        scalar_bytes.emplace_back();
        std::memcpy(scalar_bytes.back().data(), v.data(), v.nbytes());
        args.push_back(scalar_bytes.back().data());
      }
    }
    Tensor acc, best, has;
    bool reduce = kernel.kind == cir::KernelKind::Reduce;
    codegen::ReduceBuffers rb;
    if (reduce) {
      rb = codegen::reduce_buffers(kernel);
      acc = rb.arg ? out : Tensor::full(rb.acc_dtype, out_shape, reduce_identity(kernel.reduce_op, rb.acc_dtype));
      args.push_back(acc.data());
      if (rb.arg) {
        best = Tensor::zeros(rb.best_dtype, out_shape);
        has = Tensor::zeros(DType::Bool, out_shape);
        args.push_back(best.data());
        args.push_back(has.data());
      }
    }

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
    if (reduce && rb.arg) {
      for (int64_t i = 0; i < has.numel(); ++i)
        if (!has.get(i).truthy())
          throw Error(kernel.span, std::string(reduce_op_name(kernel.reduce_op)) + " of an empty range has no index");
    } else if (reduce) {
      for (int64_t i = 0; i < out.numel(); ++i) out.set(i, acc.get(i));  // f64 sums rounded once, as the reference
    }
    return out;
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
