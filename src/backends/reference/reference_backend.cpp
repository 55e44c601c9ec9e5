// The reference backend: "cpu:reference", whose kernels run on the
// reference executor, the ground truth every backend is tested against and
// where the others send what they cannot run (runtime/device.hpp). Always built.
#include "backends/reference/reference_device.hpp"

namespace zyntax {

void register_reference_backend(DeviceRegistry& registry) { registry.add(make_reference_device("cpu:reference")); }

}  // namespace zyntax
