#include "backends/module_gpu.hpp"

#include <stdexcept>
#include <string>

namespace zyntax {

void ModuleGpu::launch_clustered(FunctionHandle, unsigned, unsigned, unsigned, unsigned cluster, StreamHandle, void**) const {
  throw std::logic_error("a kernel planned for clusters of " + std::to_string(cluster) + " blocks, on a GPU that launches none");
}

}  // namespace zyntax
