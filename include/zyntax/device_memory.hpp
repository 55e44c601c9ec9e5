// Arrays and GPU memory held by other libraries (PyTorch's CUDA tensors,
// exchanged through DLPack): taken in without going through host memory,
// and handed back as the GPU memory holding an array's elements.
//
//   zyntax::Array x = zyntax::array_from_device_memory(dev, ptr, zyntax::ElementType::F32, {n, m});
//   zyntax::Array y = prog.kernel("f")({x});            // runs on the GPU; y stays there
//   zyntax::DeviceMemory mem = zyntax::device_memory_of(y);  // mem.address: y's elements on the GPU
//
// Only devices of the CUDA backend ("cuda:N") have such memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "zyntax/array.hpp"
#include "zyntax/compute_device.hpp"
#include "zyntax/export.hpp"

namespace zyntax {

// An Array on `device` (one "cuda:N" device) holding the elements of `type`
// and `shape` (row-major, contiguous) found at `address`: memory of that
// GPU in its primary context (where the CUDA runtime, and so PyTorch,
// allocates). The device first waits for all the work queued on the GPU
// (a producer's kernels still writing the memory), then copies the bytes on
// the GPU into memory of its own (device to device, never through host
// memory); `address` is not read after the call returns. The Array lives
// on the device like a kernel's output there: kernels read it in place, the
// host copies it back only when it reads it. ComputeError where `device` is
// not a GPU of the CUDA backend or the copy fails; ShapeError for a shape no
// array can have.
ZYNTAX_API Array array_from_device_memory(const ComputeDevice& device, uint64_t address, ElementType type,
                                          std::vector<size_t> shape);

// The GPU memory holding an array's current elements.
struct DeviceMemory {
  uint64_t address = 0;  // 0: none (the array is in host memory, or the host has written it since)
  int ordinal = -1;      // N of "cuda:N"
  // Keeps the memory allocated, even after the array itself lets it go (a
  // host write, the array destroyed): hold it as long as `address` is used.
  std::shared_ptr<const void> keep;
};

// Where a GPU holds `a`'s elements: an array on a "cuda:N" device whose
// current bytes are in its memory (a kernel's output, an upload,
// array_from_device_memory); else address 0. The work that wrote them has
// finished. Writes through `address` are seen by later kernels on the GPU,
// not by a host copy of the array made before them.
ZYNTAX_API DeviceMemory device_memory_of(const Array& a);

// Bytes of input arrays that the last kernel run on `device` copied from
// host memory to its GPU (0: every input was already there); 0 for devices
// other than the CUDA backend's. For tests that check data stays on the GPU.
ZYNTAX_API size_t last_run_bytes_copied_in(const ComputeDevice& device);

}  // namespace zyntax
