// The benchmarks' kernels, written in ZynML, shared by the CPU and GPU
// benchmarks so both measure the same programs.
#pragma once

#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "driver/session.hpp"
#include "runtime/launch.hpp"
#include "runtime/tensor_ops.hpp"
#include "lower/check_program.hpp"

namespace zyntax::bench {

// ------------------------------------------------------------ the kernels

inline const char* kMatmul = R"(
def f(A: tensor[M, K, f32], B: tensor[K, N, f32]) {
    return compute(A, B) {
        @kernel matmul
        for i in 0..M, j in 0..N:
            var sum = 0.0
            for k in 0..K:
                sum += A[i, k] * B[k, j]
            out[i, j] = sum
    }
})";

// The same product on tensor cores: f32 factors read as TF32, and bf16
// factors (exact products, f32 sums).
inline const char* kMatmulTf32 = R"(
def f(A: tensor[M, K, f32], B: tensor[K, N, f32]) {
    return compute(A, B) {
        @kernel matmul
        @precision(tf32)
        for i in 0..M, j in 0..N:
            var sum = 0.0
            for k in 0..K:
                sum += A[i, k] * B[k, j]
            out[i, j] = sum
    }
})";

// TF32 with the second factor's depth as its fast axis (x @ w.T, as a
// linear layer stores w): both factors as Hopper's warpgroup units take TF32.
inline const char* kMatmulTf32Bt = R"(
def f(A: tensor[M, K, f32], B: tensor[N, K, f32]) {
    return compute(A, B) {
        @kernel matmul
        @precision(tf32)
        for i in 0..M, j in 0..N:
            var sum = 0.0
            for k in 0..K:
                sum += A[i, k] * B[j, k]
            out[i, j] = sum
    }
})";

// A product of f16 or bf16 factors widened to f32 sums (exact products),
// its result stored as `result`: the sum itself (an f32 result) or rounded
// to a narrower type once, at the store.
inline std::string widened_matmul_source(const std::string& factors, const std::string& result) {
  return "\ndef f(A: tensor[M, K, " + factors + "], B: tensor[K, N, " + factors + "]) {\n"
         "    return compute(A, B) {\n"
         "        @kernel matmul\n"
         "        for i in 0..M, j in 0..N:\n"
         "            var sum: f32 = 0.0\n"
         "            for k in 0..K:\n"
         "                sum += f32(A[i, k]) * f32(B[k, j])\n"
         "            out[i, j] = " + result + "\n"
         "    }\n"
         "}";
}
inline const std::string kMatmulBf16Source = widened_matmul_source("bf16", "sum");
inline const std::string kMatmulBf16OutSource = widened_matmul_source("bf16", "bf16(sum)");  // as torch.mm of bf16 writes it
inline const std::string kMatmulF16Source = widened_matmul_source("f16", "sum");
inline const char* kMatmulBf16 = kMatmulBf16Source.c_str();
inline const char* kMatmulBf16Out = kMatmulBf16OutSource.c_str();
inline const char* kMatmulF16 = kMatmulF16Source.c_str();

// The erf form through the builtin, as PyTorch's default F.gelu.
inline const char* kGeluErf = R"(
def f(x: tensor[n, f32]) {
    return compute(x) {
        @kernel elementwise
        for i in 0..n:
            out[i] = gelu(x[i])
    }
})";

// A whole-tensor reduction: one pass over memory, partials per task.
inline const char* kSumOfSquares = R"(
def f(x: tensor[n, f32]) {
    return compute(x) {
        @kernel reduce(+)
        for i in 0..n:
            yield x[i] * x[i]
    }
})";

inline const char* kGelu = R"(
def f(x: tensor[n, f32]) {
    return compute(x) {
        @kernel elementwise
        for i in 0..n:
            let v = x[i]
            out[i] = v * 0.5 * (1.0 + tanh(0.7978845608 * (v + 0.044715 * v * v * v)))
    }
})";

inline const char* kCopy = R"(
def f(x: tensor[n, f32]) {
    return compute(x) {
        @kernel elementwise
        for i in 0..n:
            out[i] = x[i]
    }
})";

inline const char* kSoftmax = R"(
def f(x: tensor[r, c, f32]) {
    return compute(x) {
        @kernel fused
        for i in 0..r:
            var m = -inf
            for j in 0..c:
                m = max(m, x[i, j])
            var s = 0.0
            for j in 0..c:
                s += exp(x[i, j] - m)
            let inv = 1.0 / s
            for j in 0..c:
                out[i, j] = exp(x[i, j] - m) * inv
    }
})";

inline const char* kLayerNorm = R"(
def f(x: tensor[r, c, f32], g: tensor[c, f32], b: tensor[c, f32]) {
    return compute(x, g, b) {
        @kernel fused
        for i in 0..r:
            var mean = 0.0
            for j in 0..c:
                mean += x[i, j]
            mean /= c
            var var = 0.0
            for j in 0..c:
                let d = x[i, j] - mean
                var += d * d
            var /= c
            let inv = rsqrt(var + 1e-5)
            for j in 0..c:
                out[i, j] = (x[i, j] - mean) * inv * g[j] + b[j]
    }
})";

// Flash attention over query and key blocks of `block` rows, as a user
// writes it.
inline std::string flash_attention_source(int block) {
  std::string b = std::to_string(block);
  return "def f(Q: tensor[bh, s, d, f32], K: tensor[bh, s, d, f32], V: tensor[bh, s, d, f32]) {\n"
         "    return compute(Q, K, V) {\n"
         "        @kernel flash_attention\n"
         "        for h in 0..bh:\n"
         "            for q0 in 0..s step " + b + ":\n"
         "                var m = -inf\n"
         "                var l = 0.0\n"
         "                var o = zeros(min(" + b + ", s - q0), d)\n"
         "                let Qb = Q[h, q0:q0 + " + b + "]\n"
         "                for k0 in 0..s step " + b + ":\n"
         "                    let S = Qb @ transpose(K[h, k0:k0 + " + b + "]) / sqrt(d)\n"
         "                    let m_new = max(m, row_max(S))\n"
         "                    let p = exp(S - m_new)\n"
         "                    l = exp(m - m_new) * l + row_sum(p)\n"
         "                    o = exp(m - m_new) * o + p @ V[h, k0:k0 + " + b + "]\n"
         "                    m = m_new\n"
         "                out[h, q0:q0 + " + b + "] = o / l\n"
         "    }\n"
         "}\n";
}
inline const std::string kAttention32Source = flash_attention_source(32);
inline const std::string kAttention64Source = flash_attention_source(64);
inline const char* kAttention = kAttention32Source.c_str();
// Blocks of 64 query and key rows: each key and value element loaded into
// shared memory serves twice the query rows.
inline const char* kAttention64 = kAttention64Source.c_str();

// Flash attention over f16 or bf16 (`type`) queries, keys and values,
// computed in f32 (each tile widened where it is read; an f32 output), as
// flash_attention_source writes it. `causal`: query row i sees keys 0..i
// only, so the key blocks stop at the query block's diagonal, where the
// scores past it are masked. `precision`: the block's @precision, if any:
// tf32 lets P V round P to TF32 on tensor cores (Q K^T takes them either
// way: its factors are exact); bf16 lets it round P to bf16, and on Hopper
// the whole block runs as one warpgroup attention kernel.
inline std::string flash_attention_typed_source(const std::string& type, int block, bool causal, const std::string& precision) {
  std::string b = std::to_string(block);
  std::string keys = causal ? "min(q0 + " + b + ", s)" : "s";
  std::string mask = !causal ? ""
      : "                    if k0 + " + b + " > q0:\n"
        "                        for r in 0..min(" + b + ", s - q0), c in 0..min(" + b + ", s - k0):\n"
        "                            if k0 + c > q0 + r:\n"
        "                                S[r, c] = -inf\n";
  return "def f(Q: tensor[bh, s, d, " + type + "], K: tensor[bh, s, d, " + type + "], V: tensor[bh, s, d, " + type + "]) {\n"
         "    return compute(Q, K, V) {\n"
         "        @kernel flash_attention\n" + (precision.empty() ? std::string() : "        @precision(" + precision + ")\n") +
         "        for h in 0..bh:\n"
         "            for q0 in 0..s step " + b + ":\n"
         "                var m = -inf\n"
         "                var l = 0.0\n"
         "                var o = zeros(min(" + b + ", s - q0), d)\n"
         "                let Qb = f32(Q[h, q0:q0 + " + b + "])\n"
         "                for k0 in 0.." + keys + " step " + b + ":\n"
         "                    var S = Qb @ transpose(f32(K[h, k0:k0 + " + b + "])) / sqrt(d)\n" + mask +
         "                    let m_new = max(m, row_max(S))\n"
         "                    let p = exp(S - m_new)\n"
         "                    l = exp(m - m_new) * l + row_sum(p)\n"
         "                    o = exp(m - m_new) * o + p @ f32(V[h, k0:k0 + " + b + "])\n"
         "                    m = m_new\n"
         "                out[h, q0:q0 + " + b + "] = o / l\n"
         "    }\n"
         "}\n";
}
inline std::string flash_attention_bf16_source(int block, bool causal, bool tf32 = false) {
  return flash_attention_typed_source("bf16", block, causal, tf32 ? "tf32" : "");
}
inline const std::string kAttentionBf16Source = flash_attention_bf16_source(64, false);
inline const std::string kAttentionBf16CausalSource = flash_attention_bf16_source(64, true);
inline const char* kAttentionBf16 = kAttentionBf16Source.c_str();
inline const char* kAttentionBf16Causal = kAttentionBf16CausalSource.c_str();
inline const std::string kAttentionBf16Tf32Source = flash_attention_bf16_source(64, false, true);
inline const std::string kAttentionBf16Tf32CausalSource = flash_attention_bf16_source(64, true, true);
inline const char* kAttentionBf16Tf32 = kAttentionBf16Tf32Source.c_str();
inline const char* kAttentionBf16Tf32Causal = kAttentionBf16Tf32CausalSource.c_str();
// @precision(bf16): on Hopper, one warpgroup attention kernel.
inline const std::string kAttentionBf16WgSource = flash_attention_typed_source("bf16", 64, false, "bf16");
inline const std::string kAttentionBf16WgCausalSource = flash_attention_typed_source("bf16", 64, true, "bf16");
inline const char* kAttentionBf16Wg = kAttentionBf16WgSource.c_str();
inline const char* kAttentionBf16WgCausal = kAttentionBf16WgCausalSource.c_str();

// Same-size 3x3 convolution (stride 1, padding 1), as in ResNet's blocks.
inline const char* kConv2d = R"(
def f(x: tensor[b, ic, h, w, f32], wt: tensor[oc, ic, kh, kw, f32], bias: tensor[oc, f32]) {
    return compute(x, wt, bias) {
        @kernel conv2d
        for n in 0..b, o in 0..oc:
            for y in 0..h, z in 0..w:
                var sum = bias[o]
                for c in 0..ic:
                    for dy in 0..kh, dz in 0..kw:
                        let iy = y + dy - 1
                        let iz = z + dz - 1
                        if iy >= 0 and iy < h and iz >= 0 and iz < w:
                            sum += x[n, c, iy, iz] * wt[o, c, dy, dz]
                out[n, o, y, z] = sum
    }
})";

inline const char* kDepthwise = R"(
def f(x: tensor[b, c, h, w, f32], wt: tensor[c, kh, kw, f32]) {
    return compute(x, wt) {
        @kernel conv2d_depthwise
        for n in 0..b, ch in 0..c:
            for y in 0..h, z in 0..w:
                var sum = 0.0
                for dy in 0..kh, dz in 0..kw:
                    let iy = y + dy - 1
                    let iz = z + dz - 1
                    if iy >= 0 and iy < h and iz >= 0 and iz < w:
                        sum += x[n, ch, iy, iz] * wt[ch, dy, dz]
                out[n, ch, y, z] = sum
    }
})";

// A kernel lowered once per source, kept for the whole run.
inline CompiledCompute& kernel(const char* source) {
  static std::map<const char*, std::unique_ptr<CompiledCompute>> cache;
  auto it = cache.find(source);
  if (it != cache.end()) return *it->second;
  Session session;
  std::vector<CheckedKernel> kernels;
  LoadedModule* m = session.load_text("bench.zynml", source);
  if (session.diags().has_errors() || !check_program(session, *m, &kernels) || kernels.empty())
    throw std::runtime_error("benchmark kernel does not compile:\n" + session.diags().render_all());
  return *(cache[source] = std::make_unique<CompiledCompute>(kernels[0].kernel));
}

inline Tensor random(const Shape& s, uint64_t seed, DType dtype = DType::F32) {
  Random rng(seed);
  return rand_normal(rng, dtype, s);
}

// The gradient of an embedding lookup: each token's gradient row added into
// the table row its id names (PyTorch's index_add_), many tokens meeting at
// one row, so the updates are atomic.
inline const char* kEmbeddingGrad = R"(
def f(g: tensor[n, dim, f32], ids: tensor[n, i64], vocab: int) {
    return compute(g, ids) {
        @kernel fused
        out = zeros(vocab, dim)
        for i in 0..n, j in 0..dim:
            out[ids[i], j] += g[i, j]
    }
})";

// `n` ids drawn uniformly from [0, vocab).
inline Tensor random_ids(int64_t n, int64_t vocab, uint64_t seed) {
  Random rng(seed);
  Tensor ids = Tensor::zeros(DType::I64, {n});
  for (int64_t i = 0; i < n; ++i) ids.data_as<int64_t>()[i] = static_cast<int64_t>(rng.next_u64() % static_cast<uint64_t>(vocab));
  return ids;
}

// A custom fused chain (scale, shift, GELU, gate), against the same chain
// of eager operations in PyTorch.
inline const char* kFusedChain = R"(
def f(x: tensor[n, f32], y: tensor[n, f32]) {
    return compute(x, y) {
        @kernel fused
        for i in 0..n:
            let v = x[i] * 1.702 + 0.5
            out[i] = v * sigmoid(v) * tanh(y[i])
    }
})";

}  // namespace zyntax::bench
