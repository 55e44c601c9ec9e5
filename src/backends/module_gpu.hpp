// A GPU whose kernels come as modules its runtime loads and launches:
// NVIDIA's driver API (backends/cuda) and AMD's HIP module API
// (backends/rocm) alike. What the runtime does with such a GPU (memory,
// copies, streams, events, launches) is written once over this interface
// (module_gpu_memory, module_gpu_device); each backend answers it with its
// own API's calls. Handles are the API's own, opaque here. Failing calls
// throw the API's error, naming the GPU and the operation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace zyntax {

class HostMappings;
class SizeClassPool;

class ModuleGpu {
 public:
  using Address = uint64_t;
  using StreamHandle = void*;
  using EventHandle = void*;
  using FunctionHandle = void*;

  virtual ~ModuleGpu() = default;

  virtual std::string id() const = 0;  // "cuda:0", "rocm:1"
  // Makes this GPU current on the calling thread (its context, its device).
  virtual void bind() const = 0;
  // Device memory in size classes (runtime/size_class_pool.hpp).
  virtual SizeClassPool& memory() = 0;
  // Host memory this GPU's kernels read in place (to_device(copy=false)).
  virtual HostMappings& host_mappings() = 0;
  // Whether kernels can read host memory mapped into one address space with the host's.
  virtual bool maps_host_memory() const = 0;
  // The stream copies outside a run use, in order; waiting for it.
  virtual StreamHandle stream() const = 0;
  virtual void synchronize() const = 0;
  // Waits for everything queued on the GPU by this process (other libraries' streams too).
  virtual void synchronize_all() const = 0;

  // Queued on `stream`, the host not waiting.
  virtual void copy_to_device(StreamHandle stream, Address dst, const void* src, size_t bytes) const = 0;
  virtual void copy_to_host(StreamHandle stream, void* dst, Address src, size_t bytes) const = 0;
  virtual void copy_on_device(StreamHandle stream, Address dst, Address src, size_t bytes) const = 0;
  virtual void zero(StreamHandle stream, Address dst, size_t bytes) const = 0;

  virtual StreamHandle create_stream() const = 0;
  virtual void destroy_stream(StreamHandle stream) const noexcept = 0;
  virtual void synchronize_stream(StreamHandle stream) const = 0;
  virtual EventHandle create_event(bool timing) const = 0;
  virtual void destroy_event(EventHandle event) const noexcept = 0;
  virtual void record_event(EventHandle event, StreamHandle stream) const = 0;
  virtual void synchronize_event(EventHandle event) const = 0;
  virtual bool event_done(EventHandle event) const = 0;
  // Milliseconds between two recorded (and completed) events.
  virtual float elapsed_ms(EventHandle start, EventHandle end) const = 0;

  // A one-dimensional launch: `params` points at each argument's value in
  // the order of the kernel's parameters.
  virtual void launch(FunctionHandle f, unsigned grid_x, unsigned block_x, unsigned shared_bytes, StreamHandle stream,
                      void** params) const = 0;
  // The same with the blocks in clusters of `cluster` along x (grid_x a
  // multiple of it), for kernels whose blocks share tiles: only where the
  // GPU's target says it has block clusters.
  virtual void launch_clustered(FunctionHandle f, unsigned grid_x, unsigned block_x, unsigned shared_bytes, unsigned cluster,
                                StreamHandle stream, void** params) const;

  // Zeroed page-locked host memory, mapped for the GPU's kernels and
  // adopted by host_mappings(), freed with the last reference; a DataError
  // naming the sizes when there is none.
  virtual std::shared_ptr<unsigned char> allocate_pinned(size_t bytes) const = 0;
};

}  // namespace zyntax
