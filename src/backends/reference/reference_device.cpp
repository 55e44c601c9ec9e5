#include "backends/reference/reference_device.hpp"

#include "backends/reference/reference_executor.hpp"
#include "runtime/kernel_cache.hpp"

namespace zyntax {

namespace {

class ReferenceDevice : public Device {
 public:
  explicit ReferenceDevice(const std::string& id) : info_(host_cpu_info(id, "reference executor")) {}

  const DeviceInfo& info() const override { return info_; }

  // Runs everything (it is where the others fall back to); errors of the
  // program throw with the source's words and place.
  Attempt execute(const cir::Kernel& kernel, uint64_t key, const std::vector<Tensor>& inputs,
                  const std::map<std::string, Scalar>& scalars) override {
    std::shared_ptr<ReferenceKernel> k =
        cache_.get(key, [&] { return std::make_shared<ReferenceKernel>(kernel); });
    return Attempt::done(k->run(inputs, scalars));
  }

 private:
  DeviceInfo info_;
  KernelCache<ReferenceKernel> cache_;
};

}  // namespace

std::unique_ptr<Device> make_reference_device(const std::string& id) { return std::make_unique<ReferenceDevice>(id); }

}  // namespace zyntax
