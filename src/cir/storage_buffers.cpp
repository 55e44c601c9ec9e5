#include "cir/storage_buffers.hpp"

namespace zyntax::cir {

int gpu_storage_buffers(const Kernel& k, GpuApi api) {
  int n = 1;  // status
  for (const Param& p : k.params)
    if (p.role != ParamRole::Scalar) ++n;
  if (k.kind == KernelKind::Reduce) n += (is_arg_reduce(k.reduce_op) ? 2 : 0) + (api == GpuApi::WebGpu ? 0 : 1);
  return n;
}

}  // namespace zyntax::cir
