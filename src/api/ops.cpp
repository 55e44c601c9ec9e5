// The ML ops: typed wrappers that check the sizes they are given, view the
// flat buffers with the shapes their kernel (stdlib/nn.zynml) declares, and
// launch it on the device: an op of one result later (api/deferred_ops),
// fused with the ops around it, the others at once.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "api/api_internal.hpp"
#include "api/deferred_ops.hpp"
#include "zyntax/zyntax.hpp"

namespace zyntax {


using api::check_ids;
using api::check_size;
using api::run_op;
using api::tensor_of;
using api::deferred_op;
using api::op_input;
using api::wrap;

// ------------------------------------------------------------ the op library

namespace {

// The buffer as a tensor of `shape`, checked: a view, no copy.
Tensor shaped(const DeviceImpl& dev, const Buffer& b, const char* op, const char* arg, const std::vector<size_t>& shape,
              const char* names) {
  const Tensor& t = tensor_of(dev, b, op, arg);
  check_size(op, arg, b, shape, names);
  return t.reshaped(api::to_shape(shape));
}

Scalar f32(float v) { return Scalar::of_float(v, DType::F32); }

// Column sums over many rows (a norm's parameter gradients): `op` sums each
// of some 64 blocks of rows, reading along the rows with a share for every
// core, into [chunks, width]; reduce_sum_axis then adds the blocks.
Tensor sum_over_row_blocks(const DeviceImpl& dev, const char* op, const std::vector<Tensor>& inputs, size_t rows, size_t width) {
  size_t chunk = std::max<size_t>(1, (rows + 63) / 64), chunks = (rows + chunk - 1) / chunk;
  Tensor partial = run_op(dev, op, inputs, {{"chunk", static_cast<int64_t>(chunk)}, {"chunks", static_cast<int64_t>(chunks)}});
  return run_op(dev, "reduce_sum_axis", {partial.reshaped({1, static_cast<int64_t>(chunks), static_cast<int64_t>(width)})});
}

}  // namespace

Buffer ComputeDevice::matmul(const Buffer& a, const Buffer& b, size_t m, size_t k, size_t n) const {
  return deferred_op(dev(), "matmul", {op_input(dev(), a, "matmul", "a", {m, k}, "[m, k]"), op_input(dev(), b, "matmul", "b", {k, n}, "[k, n]")});
}

Buffer ComputeDevice::matmul_transposed_a(const Buffer& a, const Buffer& b, size_t m, size_t k, size_t n) const {
  const char* op = "matmul_transposed_a";
  return deferred_op(dev(), "matmul_at", {op_input(dev(), a, op, "a", {k, m}, "[k, m]"), op_input(dev(), b, op, "b", {k, n}, "[k, n]")});
}

Buffer ComputeDevice::matmul_transposed_b(const Buffer& a, const Buffer& b, size_t m, size_t k, size_t n) const {
  const char* op = "matmul_transposed_b";
  return deferred_op(dev(), "matmul_bt", {op_input(dev(), a, op, "a", {m, k}, "[m, k]"), op_input(dev(), b, op, "b", {n, k}, "[n, k]")});
}

void ComputeDevice::matmul_accumulate(Buffer& c, const Buffer& a, const Buffer& b, size_t m, size_t k, size_t n) const {
  const char* op = "matmul_accumulate";
  Tensor r = run_op(dev(), "matmul_acc", {shaped(dev(), a, op, "a", {m, k}, "[m, k]"), shaped(dev(), b, op, "b", {k, n}, "[k, n]"),
                                            shaped(dev(), c, op, "c", {m, n}, "[m, n]")});
  api::write_into(c, r);
}

Buffer ComputeDevice::transpose_2d(const Buffer& x, size_t rows, size_t cols) const {
  return deferred_op(dev(), "transpose_2d", {op_input(dev(), x, "transpose_2d", "x", {rows, cols}, "[rows, cols]")});
}

Buffer ComputeDevice::bias_add(const Buffer& matrix, const Buffer& bias, size_t numel, size_t dim) const {
  if (dim == 0 || numel % dim != 0)
    throw ShapeError("bias_add: numel = " + std::to_string(numel) + " is not a multiple of dim = " + std::to_string(dim));
  return deferred_op(dev(), "bias_add", {op_input(dev(), matrix, "bias_add", "matrix", {numel / dim, dim}, "[numel / dim, dim]"),
                                          op_input(dev(), bias, "bias_add", "bias", {dim}, "[dim]")});
}

void ComputeDevice::add_assign(Buffer& dst, const Buffer& src) const {
  size_t n = dst.size();
  Tensor r = run_op(dev(), "add", {shaped(dev(), dst, "add_assign", "dst", {n}, "[n]"), shaped(dev(), src, "add_assign", "src", {n}, "[n] (dst's size)")});
  api::write_into(dst, r);
}

Buffer ComputeDevice::softmax(const Buffer& x, size_t n_rows, size_t row_len) const {
  return deferred_op(dev(), "softmax", {op_input(dev(), x, "softmax", "data", {n_rows, row_len}, "[n_rows, row_len]")});
}

Buffer ComputeDevice::rms_norm(const Buffer& x, const Buffer& weight, size_t n_groups, size_t dim, float eps) const {
  return deferred_op(dev(), "rms_norm",
                     {op_input(dev(), x, "rms_norm", "data", {n_groups, dim}, "[n_groups, dim]"),
                      op_input(dev(), weight, "rms_norm", "weight", {dim}, "[dim]")},
                     {}, {{"eps", f32(eps)}});
}

Buffer ComputeDevice::layer_norm(const Buffer& x, const Buffer& gamma, const Buffer& beta, size_t n_rows, size_t dim,
                                 float eps) const {
  const char* op = "layer_norm";
  return deferred_op(dev(), op,
                     {op_input(dev(), x, op, "data", {n_rows, dim}, "[n_rows, dim]"), op_input(dev(), gamma, op, "gamma", {dim}, "[dim]"),
                      op_input(dev(), beta, op, "beta", {dim}, "[dim]")},
                     {}, {{"eps", f32(eps)}});
}

std::tuple<Buffer, Buffer, Buffer> ComputeDevice::layer_norm_backward(const Buffer& input, const Buffer& gamma,
                                                                      const Buffer& grad_output, size_t n_rows, size_t dim,
                                                                      float eps) const {
  const char* op = "layer_norm_backward";
  Tensor x = shaped(dev(), input, op, "input", {n_rows, dim}, "[n_rows, dim]");
  Tensor g = shaped(dev(), gamma, op, "gamma", {dim}, "[dim]");
  Tensor dy = shaped(dev(), grad_output, op, "grad_output", {n_rows, dim}, "[n_rows, dim]");
  Buffer dx = wrap(dev(), run_op(dev(), "layer_norm_backward_input", {x, g, dy}, {}, {{"eps", f32(eps)}}));
  Tensor stats = run_op(dev(), "layer_norm_stats", {x}, {}, {{"eps", f32(eps)}});  // [n_rows, 2]: mean, 1 / std
  Tensor params = sum_over_row_blocks(dev(), "layer_norm_backward_params", {x, dy, stats}, n_rows, 2 * dim);  // [2, dim]
  Buffer dgamma = alloc(dim), dbeta = alloc(dim);
  api::write_into(dgamma, params);
  api::write_into(dbeta, params, dim * sizeof(float));
  return {dx, dgamma, dbeta};
}

Buffer ComputeDevice::reduce_sum(const Buffer& x, const std::vector<size_t>& shape, size_t axis) const {
  if (axis >= shape.size())
    throw ShapeError("reduce_sum: axis " + std::to_string(axis) + " is out of range for shape " + api::shape_text(shape));
  size_t outer = 1, inner = 1;
  for (size_t i = 0; i < axis; ++i) outer *= shape[i];
  for (size_t i = axis + 1; i < shape.size(); ++i) inner *= shape[i];
  api::check_device(dev(), x, "reduce_sum", "data");
  check_size("reduce_sum", "data", x, shape, "shape");
  return deferred_op(dev(), "reduce_sum_axis", {op_input(dev(), x, "reduce_sum", "data", {outer, shape[axis], inner}, "shape")});
}

Buffer ComputeDevice::embedding(const Buffer& weight, const Buffer& ids, size_t seq_len, size_t dim) const {
  check_ids("embedding", "ids", ids);
  if (dim == 0 || weight.size() % dim != 0)
    throw ShapeError("embedding: argument weight has " + std::to_string(weight.size()) + " elements, not a multiple of dim = " +
                     std::to_string(dim));
  size_t vocab = weight.size() / dim;
  return deferred_op(dev(), "embedding", {op_input(dev(), weight, "embedding", "weight", {vocab, dim}, "[vocab, dim]"),
                                           op_input(dev(), ids, "embedding", "ids", {seq_len}, "[seq_len]")});
}

Buffer ComputeDevice::softmax_backward(const Buffer& y, const Buffer& grad, size_t n_rows, size_t row_len) const {
  const char* op = "softmax_backward";
  return deferred_op(dev(), op, {op_input(dev(), y, op, "softmax_out", {n_rows, row_len}, "[n_rows, row_len]"),
                                  op_input(dev(), grad, op, "grad_output", {n_rows, row_len}, "[n_rows, row_len]")});
}

std::pair<Buffer, Buffer> ComputeDevice::rms_norm_backward(const Buffer& input, const Buffer& weight, const Buffer& grad_output,
                                                           size_t n_groups, size_t dim, float eps) const {
  const char* op = "rms_norm_backward";
  Tensor x = shaped(dev(), input, op, "input", {n_groups, dim}, "[n_groups, dim]");
  Tensor w = shaped(dev(), weight, op, "weight", {dim}, "[dim]");
  Tensor g = shaped(dev(), grad_output, op, "grad_output", {n_groups, dim}, "[n_groups, dim]");
  Buffer dx = wrap(dev(), run_op(dev(), "rms_norm_backward_input", {x, w, g}, {}, {{"eps", f32(eps)}}));
  Tensor inv = run_op(dev(), "rms_norm_inverse", {x}, {}, {{"eps", f32(eps)}});
  Buffer dw = wrap(dev(), sum_over_row_blocks(dev(), "rms_norm_backward_weight", {x, g, inv}, n_groups, dim));
  return {dx, dw};
}

Buffer ComputeDevice::embedding_backward(const Buffer& grad_output, const Buffer& ids, size_t vocab_size, size_t seq_len,
                                         size_t dim) const {
  const char* op = "embedding_backward";
  check_ids(op, "ids", ids);
  return deferred_op(dev(), op,
                     {op_input(dev(), grad_output, op, "grad_output", {seq_len, dim}, "[seq_len, dim]"),
                      op_input(dev(), ids, op, "ids", {seq_len}, "[seq_len]")},
                     {{"vocab", static_cast<int64_t>(vocab_size)}});
}

namespace {

// A convolution's sizes, checked: every size non-zero, strides of at least
// one, and the kernel within the padded input.
void check_conv(const char* op, const Conv2dShape& s) {
  const std::pair<const char*, size_t> sizes[] = {{"batch", s.batch},       {"in_channels", s.in_channels},
                                                  {"height", s.height},     {"width", s.width},
                                                  {"out_channels", s.out_channels}, {"kernel_h", s.kernel_h},
                                                  {"kernel_w", s.kernel_w}, {"stride_h", s.stride_h},
                                                  {"stride_w", s.stride_w}};
  for (const auto& [name, v] : sizes)
    if (v == 0) throw ShapeError(std::string(op) + ": " + name + " is 0");
  if (s.kernel_h > s.height + 2 * s.pad_h)
    throw ShapeError(std::string(op) + ": kernel_h = " + std::to_string(s.kernel_h) + " is larger than height + 2 * pad_h = " +
                     std::to_string(s.height + 2 * s.pad_h));
  if (s.kernel_w > s.width + 2 * s.pad_w)
    throw ShapeError(std::string(op) + ": kernel_w = " + std::to_string(s.kernel_w) + " is larger than width + 2 * pad_w = " +
                     std::to_string(s.width + 2 * s.pad_w));
}

const char* kInputShape = "[batch, in_channels, height, width]";
const char* kWeightShape = "[out_channels, in_channels, kernel_h, kernel_w]";
const char* kOutputShape = "[batch, out_channels, out_height, out_width]";

std::map<std::string, int64_t> conv_steps(const Conv2dShape& s) {
  return {{"sh", static_cast<int64_t>(s.stride_h)}, {"sw", static_cast<int64_t>(s.stride_w)},
          {"ph", static_cast<int64_t>(s.pad_h)},    {"pw", static_cast<int64_t>(s.pad_w)}};
}

}  // namespace

Buffer ComputeDevice::conv2d(const Buffer& x, const Buffer& weight, const Buffer& bias, const Conv2dShape& s) const {
  const char* op = "conv2d";
  check_conv(op, s);
  std::map<std::string, int64_t> dims = conv_steps(s);
  dims["oh"] = static_cast<int64_t>(s.out_height());
  dims["ow"] = static_cast<int64_t>(s.out_width());
  return deferred_op(dev(), op,
                     {op_input(dev(), x, op, "x", {s.batch, s.in_channels, s.height, s.width}, kInputShape),
                      op_input(dev(), weight, op, "weight", {s.out_channels, s.in_channels, s.kernel_h, s.kernel_w}, kWeightShape),
                      op_input(dev(), bias, op, "bias", {s.out_channels}, "[out_channels]")},
                     dims);
}

Buffer ComputeDevice::conv2d(const Buffer& x, const Buffer& weight, const Conv2dShape& s) const {
  check_conv("conv2d", s);
  return conv2d(x, weight, alloc(s.out_channels), s);
}

std::tuple<Buffer, Buffer, Buffer> ComputeDevice::conv2d_backward(const Buffer& grad_output, const Buffer& x,
                                                                  const Buffer& weight, const Conv2dShape& s) const {
  const char* op = "conv2d_backward";
  check_conv(op, s);
  Tensor X = shaped(dev(), x, op, "x", {s.batch, s.in_channels, s.height, s.width}, kInputShape);
  Tensor W = shaped(dev(), weight, op, "weight", {s.out_channels, s.in_channels, s.kernel_h, s.kernel_w}, kWeightShape);
  Tensor G = shaped(dev(), grad_output, op, "grad_output", {s.batch, s.out_channels, s.out_height(), s.out_width()}, kOutputShape);
  std::map<std::string, int64_t> input_dims = conv_steps(s), weight_dims = conv_steps(s);
  input_dims["h"] = static_cast<int64_t>(s.height);
  input_dims["w"] = static_cast<int64_t>(s.width);
  weight_dims["kh"] = static_cast<int64_t>(s.kernel_h);
  weight_dims["kw"] = static_cast<int64_t>(s.kernel_w);
  Buffer dx = wrap(dev(), run_op(dev(), "conv2d_backward_input", {G, W}, input_dims));
  Tensor dw_t = run_op(dev(), "conv2d_backward_weight", {X, G}, weight_dims);  // [in_channels, kernel_h, kernel_w, out_channels]
  int64_t taps = static_cast<int64_t>(s.in_channels * s.kernel_h * s.kernel_w);
  Buffer dw = wrap(dev(), run_op(dev(), "transpose_2d", {dw_t.reshaped({taps, static_cast<int64_t>(s.out_channels)})}));
  int64_t batch = static_cast<int64_t>(s.batch), oc = static_cast<int64_t>(s.out_channels);
  Tensor per_image = run_op(dev(), "conv2d_backward_bias", {G.reshaped({batch, oc, static_cast<int64_t>(s.out_height() * s.out_width())})});
  Buffer db = wrap(dev(), run_op(dev(), "reduce_sum_axis", {per_image.reshaped({1, batch, oc})}));
  return {dx, dw, db};
}

namespace {

// The heads' shapes of an attention call, checked: n_heads a multiple of n_kv_heads.
void check_heads(const char* op, size_t n_heads, size_t n_kv_heads, size_t head_dim) {
  if (n_kv_heads == 0 || n_heads % n_kv_heads != 0)
    throw ShapeError(std::string(op) + ": n_heads = " + std::to_string(n_heads) + " is not a multiple of n_kv_heads = " +
                     std::to_string(n_kv_heads));
  if (head_dim == 0) throw ShapeError(std::string(op) + ": head_dim is 0");
}

}  // namespace

namespace {

Buffer rotate(const DeviceImpl& dev, const char* op, const Buffer& x, size_t seq, size_t nh, size_t hd, size_t offset,
              float sign) {
  if (hd % 2 != 0) throw ShapeError(std::string(op) + ": head_dim = " + std::to_string(hd) + " is odd (rotary pairs need it even)");
  return deferred_op(dev, "rope", {op_input(dev, x, op, "x", {seq, nh, hd}, "[seq_len, n_heads, head_dim]")},
                     {{"offset", static_cast<int64_t>(offset)}}, {{"sign", f32(sign)}});
}

}  // namespace

Buffer ComputeDevice::rope(const Buffer& x, size_t seq, size_t nh, size_t hd, size_t offset) const {
  return rotate(dev(), "rope", x, seq, nh, hd, offset, 1.0f);
}

Buffer ComputeDevice::rope_backward(const Buffer& grad, size_t seq, size_t nh, size_t hd, size_t offset) const {
  return rotate(dev(), "rope_backward", grad, seq, nh, hd, offset, -1.0f);
}

Buffer ComputeDevice::causal_attention(const Buffer& q, const Buffer& k, const Buffer& v, size_t seq, size_t nh, size_t nkv,
                                       size_t hd) const {
  const char* op = "causal_attention";
  check_heads(op, nh, nkv, hd);
  return deferred_op(dev(), op,
                     {op_input(dev(), q, op, "q", {seq, nh, hd}, "[seq_len, n_heads, head_dim]"),
                      op_input(dev(), k, op, "k", {seq, nkv, hd}, "[seq_len, n_kv_heads, head_dim]"),
                      op_input(dev(), v, op, "v", {seq, nkv, hd}, "[seq_len, n_kv_heads, head_dim]")},
                     {{"group", static_cast<int64_t>(nh / nkv)}});
}

Buffer ComputeDevice::kv_attention(const Buffer& q, const Buffer& k_cache, const Buffer& v_cache, size_t cache_start,
                                   size_t q_len, size_t nh, size_t nkv, size_t hd) const {
  const char* op = "kv_attention";
  check_heads(op, nh, nkv, hd);
  size_t total = cache_start + q_len;
  return deferred_op(dev(), op,
                     {op_input(dev(), q, op, "q", {q_len, nh, hd}, "[q_len, n_heads, head_dim]"),
                      op_input(dev(), k_cache, op, "k_cache", {total, nkv, hd}, "[cache_start + q_len, n_kv_heads, head_dim]"),
                      op_input(dev(), v_cache, op, "v_cache", {total, nkv, hd}, "[cache_start + q_len, n_kv_heads, head_dim]")},
                     {{"group", static_cast<int64_t>(nh / nkv)}, {"cache_start", static_cast<int64_t>(cache_start)}});
}

std::tuple<Buffer, Buffer, Buffer> ComputeDevice::causal_attention_backward(const Buffer& grad_output, const Buffer& q,
                                                                            const Buffer& k, const Buffer& v, size_t seq,
                                                                            size_t nh, size_t nkv, size_t hd) const {
  const char* op = "causal_attention_backward";
  check_heads(op, nh, nkv, hd);
  Tensor Q = shaped(dev(), q, op, "q", {seq, nh, hd}, "[seq_len, n_heads, head_dim]");
  Tensor K = shaped(dev(), k, op, "k", {seq, nkv, hd}, "[seq_len, n_kv_heads, head_dim]");
  Tensor V = shaped(dev(), v, op, "v", {seq, nkv, hd}, "[seq_len, n_kv_heads, head_dim]");
  Tensor dO = shaped(dev(), grad_output, op, "grad_output", {seq, nh, hd}, "[seq_len, n_heads, head_dim]");
  std::map<std::string, int64_t> group = {{"group", static_cast<int64_t>(nh / nkv)}};
  Tensor O = run_op(dev(), "causal_attention", {Q, K, V}, group);
  Tensor lse = run_op(dev(), "attention_logsumexp", {Q, K}, group);
  Tensor delta = run_op(dev(), "attention_delta", {O, dO});
  Buffer dq = wrap(dev(), run_op(dev(), "attention_backward_q", {Q, K, V, dO, lse, delta}, group));
  Buffer dk = wrap(dev(), run_op(dev(), "attention_backward_k", {Q, K, V, dO, lse, delta}, group));
  Buffer dv = wrap(dev(), run_op(dev(), "attention_backward_v", {Q, K, dO, lse}, group));
  return {dq, dk, dv};
}

std::pair<float, Buffer> ComputeDevice::cross_entropy_forward_backward(const Buffer& logits, const Buffer& targets, size_t n,
                                                                       size_t vocab, uint32_t pad_id) const {
  const char* op = "cross_entropy_forward_backward";
  check_ids(op, "targets", targets);
  Tensor L = shaped(dev(), logits, op, "logits", {n, vocab}, "[n_positions, vocab_size]");
  Tensor T = shaped(dev(), targets, op, "targets", {n}, "[n_positions]");
  std::map<std::string, int64_t> pad = {{"pad_id", static_cast<int64_t>(pad_id)}};
  Tensor count = run_op(dev(), "cross_entropy_count", {T}, pad);
  Tensor rows = run_op(dev(), "cross_entropy_rows", {L, T}, pad);
  Tensor mean = run_op(dev(), "cross_entropy_mean", {rows, count});
  Buffer grad = wrap(dev(), run_op(dev(), "cross_entropy_grad", {L, T, count}, pad));
  return {static_cast<const float*>(mean.data())[0], grad};
}

void ComputeDevice::adamw_step(Buffer& param, const Buffer& grad, Buffer& m, Buffer& v, float lr, float beta1, float beta2,
                               float eps, float weight_decay, size_t step_t) const {
  const char* op = "adamw_step";
  if (step_t == 0) throw ShapeError("adamw_step: step_t counts from 1");
  size_t n = param.size();
  std::vector<Tensor> in = {shaped(dev(), param, op, "param", {n}, "[n]"), shaped(dev(), grad, op, "grad", {n}, "[n] (param's size)"),
                            shaped(dev(), m, op, "m", {n}, "[n] (param's size)"), shaped(dev(), v, op, "v", {n}, "[n] (param's size)")};
  double t = static_cast<double>(step_t);
  std::map<std::string, Scalar> s = {{"lr", f32(lr)},
                                     {"beta1", f32(beta1)},
                                     {"beta2", f32(beta2)},
                                     {"eps", f32(eps)},
                                     {"weight_decay", f32(weight_decay)},
                                     {"bc1", f32(static_cast<float>(1.0 - std::pow(static_cast<double>(beta1), t)))},
                                     {"bc2", f32(static_cast<float>(1.0 - std::pow(static_cast<double>(beta2), t)))}};
  Tensor r = run_op(dev(), op, in, {}, s);
  api::write_into(param, r);
  api::write_into(m, r, n * sizeof(float));
  api::write_into(v, r, 2 * n * sizeof(float));
}

}  // namespace zyntax
