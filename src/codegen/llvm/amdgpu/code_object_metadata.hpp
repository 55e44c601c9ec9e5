// What an HSA code object says of its kernels (its NT_AMDGPU_METADATA
// note, MessagePack): what a launcher needs (the kernel arguments' layout,
// LDS, wave size, workgroup bound) and what tests compare with the plan.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace zyntax::codegen {

struct AmdgpuKernelArgument {
  std::string name;        // "" for the runtime's hidden arguments
  std::string value_kind;  // "global_buffer", "by_value", "hidden_block_count_x", ...
  uint64_t offset = 0, size = 0;
};

struct AmdgpuKernelMetadata {
  std::string name, symbol;  // "k", "k.kd" (its descriptor)
  uint64_t group_segment_fixed_size = 0;    // LDS bytes
  uint64_t private_segment_fixed_size = 0;  // scratch bytes per work-item
  uint64_t kernarg_segment_size = 0;
  int wavefront_size = 0;
  int max_flat_workgroup_size = 0;
  int sgpr_count = 0, vgpr_count = 0;
  std::vector<AmdgpuKernelArgument> args;
};

struct AmdgpuCodeObjectMetadata {
  int version_major = 0, version_minor = 0;  // amdhsa.version: 1.1 in code object v4, 1.2 in v5
  std::vector<AmdgpuKernelMetadata> kernels;
  // The kernel named `name`, or null.
  const AmdgpuKernelMetadata* find(const std::string& name) const;
};

// Throws std::runtime_error where `elf` is not an AMDGPU code object with metadata.
AmdgpuCodeObjectMetadata read_code_object_metadata(std::string_view elf);

}  // namespace zyntax::codegen
