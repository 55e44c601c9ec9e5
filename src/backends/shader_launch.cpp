#include "backends/shader_launch.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace zyntax {

ShaderLaunch::ShaderLaunch(const cir::Kernel& kernel, const std::vector<Tensor>& inputs, const std::map<std::string, Scalar>& scalars,
                           bool writes_whole_output, const std::vector<DType>& reduce_dtypes)
    : kernel_(kernel), scalars_(scalars), ops_(codegen::prepare_operands(kernel, inputs, scalars, !writes_whole_output)) {
  for (const codegen::KernelOperands::Operand& o : ops_.params) {
    const Tensor* t = ops_.tensor(o);
    if (!t) continue;
    bool is_out = o.role == cir::ParamRole::Output;
    buffers_.push_back({t->nbytes(), !is_out || !writes_whole_output ? t->data() : nullptr, is_out, is_out ? ops_.out.data() : nullptr});
  }
  reduce_ = ops_.reduce_tensors();
  if (!reduce_dtypes.empty() && reduce_dtypes.size() != reduce_.size())
    throw std::logic_error("kernel " + kernel.name + ": the shader holds " + std::to_string(reduce_dtypes.size()) + " reduce buffers, the host " +
                           std::to_string(reduce_.size()));
  shader_reduce_.resize(reduce_.size());
  for (size_t i = 0; i < reduce_.size(); ++i) {
    Tensor* t = reduce_[i];
    if (!reduce_dtypes.empty() && reduce_dtypes[i] != t->dtype()) {
      shader_reduce_[i] = t->astype(reduce_dtypes[i]);
      t = &shader_reduce_[i];
    }
    buffers_.push_back({t->nbytes(), t->data(), true, t->data()});
  }
  status_ = buffers_.size();
  buffers_.push_back({sizeof no_failure_, &no_failure_, true, nullptr});
}

size_t ShaderLaunch::largest_tensor_bytes() const {
  size_t most = 0;
  for (const codegen::KernelOperands::Operand& o : ops_.params)
    if (const Tensor* t = ops_.tensor(o)) most = std::max(most, t->nbytes());
  return most;
}

std::vector<uint8_t> ShaderLaunch::argument_bytes(const std::vector<ShaderArgument>& fields, uint32_t bytes, const std::string& api) const {
  std::vector<uint8_t> block(bytes, 0);
  for (const ShaderArgument& f : fields) {
    if (f.dimension) throw std::logic_error(api + ": kernel " + kernel_.name + " is not specialised (it takes dimensions)");
    const cir::Param& p = kernel_.params[f.index];
    Tensor v = Tensor::scalar(cast(cast(scalars_.at(p.name), p.type.dtype), f.as));
    if (f.offset + v.nbytes() > block.size())
      throw std::logic_error(api + ": kernel " + kernel_.name + "'s scalar " + p.name + " lies past its argument block");
    std::memcpy(block.data() + f.offset, v.data(), v.nbytes());
  }
  return block;
}

bool ShaderLaunch::check_failed(const void* status) {
  uint32_t failed = 0;
  std::memcpy(&failed, status, sizeof failed);
  return failed != 0;
}

Tensor ShaderLaunch::finish() {
  for (size_t i = 0; i < reduce_.size(); ++i) {
    if (!shader_reduce_[i].valid()) continue;
    Tensor back = shader_reduce_[i].astype(reduce_[i]->dtype());
    if (back.nbytes()) std::memcpy(reduce_[i]->data(), back.data(), back.nbytes());
  }
  return codegen::finish_operands(kernel_, ops_);
}

}  // namespace zyntax
