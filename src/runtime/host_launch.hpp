// A specialised kernel made ready once to run many times on host memory:
// the plan found, the machine code compiled, the scalars laid out in the
// kernel's order. What is left at each run is the kernel itself, as with a
// framework's launcher for a repeated call (zyntax::BoundKernel's fast
// path). Devices that compute in host memory make them (Device::
// prepare_host_launch); others run every kernel through Device::run.
#pragma once

namespace zyntax {

class HostLaunch {
 public:
  virtual ~HostLaunch() = default;
  // Runs the kernel with inputs[i] the elements of its i-th input (of the
  // dtype and shape it was specialised for, row-major) and its result
  // written to `out` (the output's dtype and shape). Safe to call from
  // several threads at once. false where a runtime check failed (an index
  // out of bounds, a division by zero): the caller then runs the kernel
  // through Device::run, which reports the failure in the source's words.
  virtual bool run(const void* const* inputs, void* out) const = 0;
};

}  // namespace zyntax
