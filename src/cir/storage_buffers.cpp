#include "cir/storage_buffers.hpp"

namespace zyntax::cir {

int gpu_storage_buffers(const Kernel& k, GpuApi api) {
  int n = 1;  // status
  for (const Param& p : k.params)
    if (p.role != ParamRole::Scalar) ++n;
  if (k.kind == KernelKind::Reduce) n += (is_arg_reduce(k.reduce_op) ? 2 : 0) + (api == GpuApi::WebGpu ? 0 : 1);
  return n;
}

int64_t gpu_parameter_bytes(const Kernel& k) {
  int64_t slots = static_cast<int64_t>(k.params.size() + k.dims.size()) + 1;  // + status
  if (k.kind == KernelKind::Reduce) slots += is_arg_reduce(k.reduce_op) ? 3 : 1;
  return 8 * slots;
}

std::string gpu_binding_excess(const Kernel& k, const GpuTarget& target) {
  int buffers = gpu_storage_buffers(k, target.api);
  if (target.max_storage_buffers > 0 && buffers > target.max_storage_buffers)
    return "bind " + std::to_string(buffers) + " storage buffers (its tensors, a reduction's accumulators, the status of its checks), more than the " +
           std::to_string(target.max_storage_buffers) + " a kernel may bind on " + gpu_api_name(target.api) + " " + target.arch;
  int64_t bytes = gpu_parameter_bytes(k);
  if (target.max_parameter_bytes > 0 && bytes > target.max_parameter_bytes)
    return "take " + std::to_string(bytes) + " bytes of parameters (a pointer per tensor, its scalars and sizes), more than the " +
           std::to_string(target.max_parameter_bytes) + " a kernel may take on " + gpu_api_name(target.api) + " " + target.arch;
  return "";
}

}  // namespace zyntax::cir
