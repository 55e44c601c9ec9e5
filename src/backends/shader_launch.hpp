// The host's side of one launch of a shader (Vulkan's GLSL, Metal's MSL),
// shared by the backends whose kernels are shaders: the buffers in the
// order the shader emitters bind them (the tensor params in order, inputs
// and the output; the reduce buffers; the status word), what each holds
// before the dispatch and where its bytes go after it; the scalars laid out
// in the shader's argument block (push constants, an argument struct); the
// status word read; and the result. A backend only places the buffers in
// its memory, dispatches and copies.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cir/ir.hpp"
#include "codegen/llvm/kernel_operands.hpp"
#include "runtime/size_class_pool.hpp"
#include "runtime/tensor.hpp"

namespace zyntax {

// One value of a shader's argument block: a scalar param's value (or a
// dimension's, which specialised kernels do not have) stored as `as` at
// `offset` bytes.
struct ShaderArgument {
  bool dimension = false;
  size_t index = 0;  // the kernel's param (or dim) index
  DType as = DType::I64;
  uint32_t offset = 0;
};

// The argument block an emitter describes (GlslPushConstant, MslArgument).
template <class Field>
std::vector<ShaderArgument> shader_arguments(const std::vector<Field>& fields) {
  std::vector<ShaderArgument> out;
  out.reserve(fields.size());
  for (const Field& f : fields) out.push_back({f.source != Field::Source::Scalar, f.index, f.as, f.offset});
  return out;
}

class ShaderLaunch {
 public:
  // One buffer the shader binds.
  struct Buffer {
    size_t bytes = 0;            // as the shader holds it
    const void* fill = nullptr;  // its bytes before the dispatch; null: any (an output the shader writes whole)
    bool read_back = false;      // the host reads it after the dispatch (the output, reduce buffers, status)
    void* result = nullptr;      // where its bytes go after a run whose checks passed; null: nowhere
  };

  // `writes_whole_output`: the plan writes every element of the output, so
  // it need not start zeroed. `reduce_dtypes`: the reduce buffers' element
  // types as the shader holds them, where they are not the host's (empty:
  // the host's); they are converted before the dispatch and back after.
  ShaderLaunch(const cir::Kernel& kernel, const std::vector<Tensor>& inputs, const std::map<std::string, Scalar>& scalars,
               bool writes_whole_output, const std::vector<DType>& reduce_dtypes = {});
  ShaderLaunch(const ShaderLaunch&) = delete;
  ShaderLaunch& operator=(const ShaderLaunch&) = delete;

  const std::vector<Buffer>& buffers() const { return buffers_; }
  size_t status_buffer() const { return status_; }
  // The bytes of the largest tensor param (a device limits one buffer's size).
  size_t largest_tensor_bytes() const;

  // The argument block of `bytes` bytes holding `fields`; `api` names the
  // backend where the kernel is not specialised.
  std::vector<uint8_t> argument_bytes(const std::vector<ShaderArgument>& fields, uint32_t bytes, const std::string& api) const;

  // Whether the status word (the status buffer's bytes after the dispatch)
  // records a failed check.
  static bool check_failed(const void* status);
  // The result, once every buffer's bytes are at its `result`.
  Tensor finish();

 private:
  const cir::Kernel& kernel_;
  const std::map<std::string, Scalar>& scalars_;
  codegen::KernelOperands ops_;
  std::vector<Tensor*> reduce_;        // the host's reduce buffers
  std::vector<Tensor> shader_reduce_;  // their copies in the shader's types, where they differ (else null tensors)
  const uint32_t no_failure_ = 0;
  std::vector<Buffer> buffers_;
  size_t status_ = 0;
};

// The buffers one launch takes from a device's pool (blocks that are the
// addresses of the device's buffer objects), given back when it ends, an
// error included.
template <class B>
class PooledBuffers {
 public:
  explicit PooledBuffers(SizeClassPool& pool) : pool_(pool) {}
  ~PooledBuffers() {
    for (uint64_t b : held_) pool_.release(b);
  }
  PooledBuffers(const PooledBuffers&) = delete;
  PooledBuffers& operator=(const PooledBuffers&) = delete;
  B* take(size_t bytes) {
    held_.push_back(pool_.allocate(bytes));
    return reinterpret_cast<B*>(held_.back());
  }

 private:
  SizeClassPool& pool_;
  std::vector<uint64_t> held_;
};

}  // namespace zyntax
