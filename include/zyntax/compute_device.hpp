// A compute device and every operation it offers, for C++ programs: buffers,
// fused element-wise kernels traced from C++ expressions, and the ML op
// library (forward, backward, AdamW). Each op's kernel is written in ZynML
// (stdlib/ in the source tree) and compiled by the zyntax compiler for the
// device, once per shape; the data never leaves the device between ops.
// Shapes are checked before anything runs: a mismatch is a ShapeError
// naming the op, the argument and both shapes.
//
//   zyntax::ComputeDevice dev = zyntax::ComputeDevice::open("auto");
//   zyntax::Buffer a = dev.upload({1, 2, 3, 4, 5, 6});
//   zyntax::Buffer b = dev.upload({1, 0, 0, 1, 1, 1});
//   zyntax::Buffer c = dev.matmul(a, b, 2, 3, 2);              // [2,3] @ [3,2]
//   zyntax::Buffer y = dev.elementwise({c}, 4, [](auto& x) { return zyntax::gelu(x[0]) * 0.5f; });
//   std::vector<float> host = y.to_vector();
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "zyntax/buffer.hpp"
#include "zyntax/errors.hpp"
#include "zyntax/expr.hpp"
#include "zyntax/export.hpp"
#include "zyntax/future.hpp"

namespace zyntax {

// A device as compute_devices() lists it.
struct DeviceDescription {
  std::string id;       // "cpu", "cpu:reference", "cuda:0"
  std::string type;     // "cpu" or "gpu"
  std::string name;     // the processor's name
  std::string backend;  // what compiles and runs kernels there
  uint64_t memory = 0;  // bytes
  int cores = 0;        // cores, or a GPU's multiprocessors
};

ZYNTAX_API std::vector<DeviceDescription> compute_devices();

// The sizes of a 2-D convolution over NCHW data: the input is
// [batch, in_channels, height, width], the weights [out_channels,
// in_channels, kernel_h, kernel_w], the output [batch, out_channels,
// out_height(), out_width()]. Reads outside the input (the padding) are zero.
struct Conv2dShape {
  size_t batch = 0, in_channels = 0, height = 0, width = 0;
  size_t out_channels = 0, kernel_h = 0, kernel_w = 0;
  size_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;

  size_t out_height() const { return (height + 2 * pad_h - kernel_h) / stride_h + 1; }
  size_t out_width() const { return (width + 2 * pad_w - kernel_w) / stride_w + 1; }
};

class DeviceImpl;
class PoolImpl;

// A budget of device memory: buffers allocated from it count against its
// capacity until freed or until reset(); asking for more than is left is a
// ComputeError saying how much was asked and how much is left.
class ZYNTAX_API BufferPool {
 public:
  Buffer alloc(size_t n, ElementType type = ElementType::F32);
  void free(const Buffer& b);  // ComputeError if b is not a live buffer of this pool
  void reset();                // every buffer of the pool counts as freed
  size_t capacity() const;     // bytes
  size_t used() const;

  explicit BufferPool(std::shared_ptr<PoolImpl> impl);

 private:
  std::shared_ptr<PoolImpl> impl_;
};

// How a group of devices shares each op (ComputeDevice::open of a list):
// Data splits the outermost parallel loop (rows), Model the loop over the
// output's last axis (a matrix product's columns, the weights' output
// dimension). Results are exactly what one device gives.
enum class Parallel { Data, Model };

class ZYNTAX_API ComputeDevice {
 public:
  // "auto" (a GPU when one is usable, else the CPU), "cpu", "cpu:reference"
  // (the reference executor: slow, the ground truth), "cpu:0", "cuda:0", ...
  // ComputeError when the id names no device here, saying why.
  static ComputeDevice open(const std::string& id = "auto");
  // Several devices as one: every op is shared out over them (its id is
  // the ids joined with '+', e.g. "cpu:0+cpu:1").
  static ComputeDevice open(const std::vector<std::string>& ids, Parallel mode);

  const DeviceDescription& description() const;
  const std::string& id() const { return description().id; }

  // ------------------------------------------------------------ buffers
  Buffer upload(const std::vector<float>& data) const;
  Buffer upload(const float* data, size_t n) const;
  Buffer upload_u32(const std::vector<uint32_t>& data) const;
  // Stored as f16 or bf16 (rounded to nearest even); read as f32 by every op.
  Buffer upload_as(const std::vector<float>& data, ElementType storage) const;
  // `n` f32 elements, zero.
  Buffer alloc(size_t n) const;
  std::vector<float> download(const Buffer& b) const;
  Buffer copy_buffer(const Buffer& src) const;
  void zero_buffer(Buffer& b) const;
  // Computes every op waiting on this device (an error of one is raised
  // here, naming the op) and waits for it.
  void sync() const;
  // Ops whose result is a new buffer return at once with the buffer
  // pending; the ops waiting on a device run when a value is needed (a read
  // of a pending buffer, an op that writes a buffer in place, sync()), as
  // few kernels as fusion allows: a product and the bias added to it are
  // one kernel. An op's error is raised where its values are needed.
  // set_fusion(false): on this handle, each op runs when it is called.
  void set_fusion(bool on);
  bool fusion() const;
  // Kernels the op library has launched on this device (fused ones count
  // once) since the process started; 0 for a group of devices.
  uint64_t kernel_launches() const;
  // The buffer on this device: a copy, or with copy = false a view of the
  // same storage that the device's kernels read in place (host memory mapped
  // into a GPU's address space while the view lives); ComputeError where the
  // device cannot map host memory.
  Buffer to_device(const Buffer& b, bool copy = true) const;
  // A pool of `bytes` of this device's memory.
  BufferPool memory_pool(size_t bytes) const;

  // ------------------------------------------------------------ asynchronous work
  // Runs f(*this) on another thread and returns at once; several may run at
  // the same time, from any number of threads.
  template <class F>
  auto async(F f) const -> Future<decltype(f(std::declval<const ComputeDevice&>()))> {
    using T = decltype(f(std::declval<const ComputeDevice&>()));
    // f's ops run there, each when called (no op waits for a later read on
    // the caller's thread).
    ComputeDevice self = without_fusion();
    return Future<T>(std::async(std::launch::async, [self, f = std::move(f)]() { return f(self); }).share());
  }

  // ------------------------------------------------------------ fused element-wise
  // out[i] = f(inputs[0][i], inputs[1][i], ...) for i < numel, as one kernel.
  // An input shorter than numel whose length divides it is repeated
  // (broadcast along the trailing dimensions: a bias of `dim` over rows).
  using ElementFn = std::function<ExprId(const std::vector<ExprId>&)>;
  using ElementFnMulti = std::function<std::vector<ExprId>(const std::vector<ExprId>&)>;
  Buffer elementwise(const std::vector<Buffer>& inputs, size_t numel, const ElementFn& f) const;
  // Several outputs computed by one kernel.
  std::vector<Buffer> elementwise_multi(const std::vector<Buffer>& inputs, size_t numel, const ElementFnMulti& f) const;

  // ------------------------------------------------------------ linear algebra
  // C[m, n] = A[m, k] @ B[k, n], row-major.
  Buffer matmul(const Buffer& a, const Buffer& b, size_t m, size_t k, size_t n) const;
  // C[m, n] = A^T @ B with A stored [k, m].
  Buffer matmul_transposed_a(const Buffer& a, const Buffer& b, size_t m, size_t k, size_t n) const;
  // C[m, n] = A @ B^T with B stored [n, k].
  Buffer matmul_transposed_b(const Buffer& a, const Buffer& b, size_t m, size_t k, size_t n) const;
  // C += A[m, k] @ B[k, n], in place.
  void matmul_accumulate(Buffer& c, const Buffer& a, const Buffer& b, size_t m, size_t k, size_t n) const;
  Buffer transpose_2d(const Buffer& x, size_t rows, size_t cols) const;

  // ------------------------------------------------------------ convolution
  // out = conv(x, weight) + bias[out_channel], with the sizes of `shape`;
  // the form without a bias adds none.
  Buffer conv2d(const Buffer& x, const Buffer& weight, const Buffer& bias, const Conv2dShape& shape) const;
  Buffer conv2d(const Buffer& x, const Buffer& weight, const Conv2dShape& shape) const;

  // ------------------------------------------------------------ element-wise ops
  // out[i] = matrix[i] + bias[i % dim]
  Buffer bias_add(const Buffer& matrix, const Buffer& bias, size_t numel, size_t dim) const;
  // dst[i] += src[i], in place.
  void add_assign(Buffer& dst, const Buffer& src) const;

  // ------------------------------------------------------------ rows
  Buffer softmax(const Buffer& x, size_t n_rows, size_t row_len) const;
  Buffer rms_norm(const Buffer& x, const Buffer& weight, size_t n_groups, size_t dim, float eps) const;
  Buffer layer_norm(const Buffer& x, const Buffer& gamma, const Buffer& beta, size_t n_rows, size_t dim, float eps) const;
  // Sum along `axis` of a tensor of `shape`: the result has that axis removed.
  Buffer reduce_sum(const Buffer& x, const std::vector<size_t>& shape, size_t axis) const;
  // weight[ids[t]] for each of seq_len ids: [seq_len, dim].
  Buffer embedding(const Buffer& weight, const Buffer& ids, size_t seq_len, size_t dim) const;

  // Rotary position embedding of x: [seq_len, n_heads * head_dim] (head_dim
  // even), positions position_offset + t; rope_backward turns the gradient back.
  Buffer rope(const Buffer& x, size_t seq_len, size_t n_heads, size_t head_dim, size_t position_offset = 0) const;
  Buffer rope_backward(const Buffer& grad, size_t seq_len, size_t n_heads, size_t head_dim, size_t position_offset = 0) const;

  // ------------------------------------------------------------ attention
  // Causal self-attention with grouped-query heads (n_heads a multiple of
  // n_kv_heads). q: [seq, n_heads * head_dim]; k, v: [seq, n_kv_heads * head_dim].
  // Returns [seq, n_heads * head_dim].
  Buffer causal_attention(const Buffer& q, const Buffer& k, const Buffer& v, size_t seq_len, size_t n_heads,
                          size_t n_kv_heads, size_t head_dim) const;
  // Decode and batched prefill over a KV cache: q: [q_len, n_heads * head_dim];
  // k_cache, v_cache: [cache_start + q_len, n_kv_heads * head_dim]; query i
  // attends to positions 0..cache_start + i. Returns [q_len, n_heads * head_dim].
  Buffer kv_attention(const Buffer& q, const Buffer& k_cache, const Buffer& v_cache, size_t cache_start, size_t q_len,
                      size_t n_heads, size_t n_kv_heads, size_t head_dim) const;

  // ------------------------------------------------------------ backward
  // grad_in = y * (grad - rowsum(y * grad)), y the softmax's output.
  Buffer softmax_backward(const Buffer& softmax_out, const Buffer& grad_output, size_t n_rows, size_t row_len) const;
  // (grad_input, grad_weight)
  std::pair<Buffer, Buffer> rms_norm_backward(const Buffer& input, const Buffer& weight, const Buffer& grad_output,
                                              size_t n_groups, size_t dim, float eps) const;
  // (grad_input, grad_gamma, grad_beta)
  std::tuple<Buffer, Buffer, Buffer> layer_norm_backward(const Buffer& input, const Buffer& gamma, const Buffer& grad_output,
                                                         size_t n_rows, size_t dim, float eps) const;
  // (grad_input, grad_weight, grad_bias) of conv2d, given the gradient of its output.
  std::tuple<Buffer, Buffer, Buffer> conv2d_backward(const Buffer& grad_output, const Buffer& x, const Buffer& weight,
                                                     const Conv2dShape& shape) const;
  // grad_weight[ids[t]] += grad_output[t]: [vocab_size, dim].
  Buffer embedding_backward(const Buffer& grad_output, const Buffer& ids, size_t vocab_size, size_t seq_len,
                            size_t dim) const;

  // (grad_q, grad_k, grad_v) of causal_attention, recomputing the scores.
  std::tuple<Buffer, Buffer, Buffer> causal_attention_backward(const Buffer& grad_output, const Buffer& q, const Buffer& k,
                                                               const Buffer& v, size_t seq_len, size_t n_heads,
                                                               size_t n_kv_heads, size_t head_dim) const;
  // Mean cross-entropy of softmax(logits) against targets, and its gradient
  // (softmax - one_hot) / count; positions whose target is pad_id count for
  // nothing and get a zero gradient. logits: [n_positions, vocab_size].
  std::pair<float, Buffer> cross_entropy_forward_backward(const Buffer& logits, const Buffer& targets, size_t n_positions,
                                                          size_t vocab_size, uint32_t pad_id) const;

  // ------------------------------------------------------------ optimiser
  // One AdamW step, in place on param, m and v; weight decay decoupled
  // (param -= lr * weight_decay * param before the Adam update); step_t from 1.
  void adamw_step(Buffer& param, const Buffer& grad, Buffer& m, Buffer& v, float lr, float beta1, float beta2,
                  float eps, float weight_decay, size_t step_t) const;

  // For the library itself.
  explicit ComputeDevice(std::shared_ptr<DeviceImpl> impl);
  const std::shared_ptr<DeviceImpl>& impl() const { return impl_; }

 private:
  // The device; a ComputeError for a moved-from one.
  DeviceImpl& dev() const;
  // A handle to the same device whose ops run when called (async's).
  ComputeDevice without_fusion() const;
  std::shared_ptr<DeviceImpl> impl_;
};

}  // namespace zyntax
