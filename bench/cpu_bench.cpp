// CPU benchmarks: zyntax kernels, written in ZynML and run on the `cpu`
// device, next to the anchors measured in the same process — OpenBLAS and
// oneDNN sgemm, and memory bandwidth (memcpy of buffers larger than the
// caches). bench/compare_cpu.py runs this with PyTorch and NumPy beside it
// and writes docs/performance.md. Timings belong here, never in tests.
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <dnnl.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "api/op_library.hpp"
#include "backends/registry.hpp"
#include "cir/hash.hpp"
#include "cir/passes/specialize.hpp"
#include "codegen/llvm/cpu/cpu_jit.hpp"
#include "driver/session.hpp"
#include "runtime/device.hpp"
#include "runtime/launch.hpp"
#include "runtime/tensor_ops.hpp"
#include "runtime/thread_pool.hpp"
#include "lower/check_program.hpp"
#include "bench_kernels.hpp"

namespace {

using namespace zyntax;
using namespace zyntax::bench;

Device& cpu() { return *device_registry().find("cpu"); }

Tensor run(const char* source, const std::vector<Tensor>& inputs) { return kernel(source).launch(cpu(), inputs, {}, {}); }

// ------------------------------------------------------------ matmul

// A product of (m x k) and (k x n): square ones, and short, wide ones as a
// convolution's im2col product or a small batch of tokens gives.
struct GemmShape {
  int64_t m, k, n;
  explicit GemmShape(const benchmark::State& state) : m(state.range(0)), k(state.range(1)), n(state.range(2)) {}
  double gflop() const { return 2.0 * static_cast<double>(m) * static_cast<double>(k) * static_cast<double>(n) / 1e9; }
};

void gflops_counter(benchmark::State& state, const GemmShape& g) {
  state.counters["GFLOPS"] = benchmark::Counter(g.gflop(), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_zyntax_sgemm(benchmark::State& state) {
  GemmShape g(state);
  std::vector<Tensor> in = {random({g.m, g.k}, 1), random({g.k, g.n}, 2)};
  run(kMatmul, in);  // compile outside the timing
  for (auto _ : state) benchmark::DoNotOptimize(run(kMatmul, in).data());
  gflops_counter(state, g);
}

void BM_openblas_sgemm(benchmark::State& state) {
  GemmShape g(state);
  int m = static_cast<int>(g.m), k = static_cast<int>(g.k), n = static_cast<int>(g.n);
  Tensor a = random({g.m, g.k}, 1), b = random({g.k, g.n}, 2), c = Tensor::zeros(DType::F32, {g.m, g.n});
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a.data_as<float>(), k, b.data_as<float>(), n,
                0.0f, c.data_as<float>(), n);
    benchmark::DoNotOptimize(c.data());
  }
  gflops_counter(state, g);
}

void BM_onednn_sgemm(benchmark::State& state) {
  GemmShape g(state);
  Tensor a = random({g.m, g.k}, 1), b = random({g.k, g.n}, 2), c = Tensor::zeros(DType::F32, {g.m, g.n});
  for (auto _ : state) {
    dnnl_sgemm('N', 'N', g.m, g.n, g.k, 1.0f, a.data_as<float>(), g.k, b.data_as<float>(), g.n, 0.0f, c.data_as<float>(), g.n);
    benchmark::DoNotOptimize(c.data());
  }
  gflops_counter(state, g);
}

// ------------------------------------------------------------ memory-bound

constexpr int64_t kLarge = int64_t{1} << 24;  // 64 MiB of f32: larger than each core's caches

void bytes_counter(benchmark::State& state, double bytes_per_iteration) {
  state.counters["GBps"] = benchmark::Counter(bytes_per_iteration / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

// The machine's copy bandwidth: memcpy on all cores, each copying its part.
void BM_memcpy_bandwidth(benchmark::State& state) {
  std::vector<float> src(kLarge, 1.0f), dst(kLarge);
  int64_t parts = ThreadPool::global().size();
  int64_t part = (kLarge + parts - 1) / parts;
  auto copy = [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      int64_t lo = p * part, hi = std::min<int64_t>(kLarge, lo + part);
      std::memcpy(dst.data() + lo, src.data() + lo, static_cast<size_t>(hi - lo) * sizeof(float));
    }
  };
  for (auto _ : state) {
    ThreadPool::global().parallel_for(parts, copy);
    benchmark::DoNotOptimize(dst.data());
  }
  bytes_counter(state, 2.0 * kLarge * sizeof(float));  // read + write
}

void BM_zyntax_copy(benchmark::State& state) {
  std::vector<Tensor> in = {random({kLarge}, 3)};
  run(kCopy, in);
  for (auto _ : state) benchmark::DoNotOptimize(run(kCopy, in).data());
  bytes_counter(state, 2.0 * kLarge * sizeof(float));
}

void BM_zyntax_gelu(benchmark::State& state) {
  std::vector<Tensor> in = {random({kLarge}, 4)};
  run(kGelu, in);
  for (auto _ : state) benchmark::DoNotOptimize(run(kGelu, in).data());
  bytes_counter(state, 2.0 * kLarge * sizeof(float));
}

void BM_zyntax_gelu_erf(benchmark::State& state) {
  std::vector<Tensor> in = {random({kLarge}, 4)};
  run(kGeluErf, in);
  for (auto _ : state) benchmark::DoNotOptimize(run(kGeluErf, in).data());
  bytes_counter(state, 2.0 * kLarge * sizeof(float));
}

void BM_zyntax_sum_of_squares(benchmark::State& state) {
  std::vector<Tensor> in = {random({kLarge}, 5)};
  run(kSumOfSquares, in);
  for (auto _ : state) benchmark::DoNotOptimize(run(kSumOfSquares, in).data());
  bytes_counter(state, 1.0 * kLarge * sizeof(float));  // read only
}

// The same chain on 256 KiB, which stays in each core's L2: its throughput
// here is the arithmetic's own, so the large run shows how close the
// arithmetic comes to memory speed.
void BM_zyntax_gelu_in_cache(benchmark::State& state) {
  constexpr int64_t n = int64_t{1} << 16;
  std::vector<Tensor> in = {random({n}, 4)};
  run(kGelu, in);
  for (auto _ : state) benchmark::DoNotOptimize(run(kGelu, in).data());
  bytes_counter(state, 2.0 * n * sizeof(float));
}

// ------------------------------------------------------------ rows

void BM_zyntax_softmax(benchmark::State& state) {
  int64_t rows = state.range(0), cols = state.range(1);
  std::vector<Tensor> in = {random({rows, cols}, 5)};
  run(kSoftmax, in);
  for (auto _ : state) benchmark::DoNotOptimize(run(kSoftmax, in).data());
  bytes_counter(state, 2.0 * rows * cols * sizeof(float));
}

void BM_zyntax_layernorm(benchmark::State& state) {
  int64_t rows = state.range(0), cols = state.range(1);
  std::vector<Tensor> in = {random({rows, cols}, 6), random({cols}, 7), random({cols}, 8)};
  run(kLayerNorm, in);
  for (auto _ : state) benchmark::DoNotOptimize(run(kLayerNorm, in).data());
  bytes_counter(state, 2.0 * rows * cols * sizeof(float));
}

void BM_zyntax_attention(benchmark::State& state) {
  int64_t bh = state.range(0), s = state.range(1), d = state.range(2);
  std::vector<Tensor> in = {random({bh, s, d}, 9), random({bh, s, d}, 10), random({bh, s, d}, 11)};
  run(kAttention, in);
  for (auto _ : state) benchmark::DoNotOptimize(run(kAttention, in).data());
  state.counters["GFLOPS"] = benchmark::Counter(4.0 * bh * s * s * d / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

// Scatter-add of BERT-base's embedding gradient: 4096 tokens of 768 into
// 30522 rows (zeroing the table included, as in PyTorch's dense backward).
void BM_zyntax_embedding_grad(benchmark::State& state) {
  std::vector<Tensor> in = {random({4096, 768}, 18), random_ids(4096, 30522, 19)};
  auto go = [&] { return kernel(kEmbeddingGrad).launch(cpu(), in, {{"vocab", 30522}}, {}); };
  go();
  for (auto _ : state) benchmark::DoNotOptimize(go().data());
}

// ------------------------------------------------------------ convolution

void BM_zyntax_conv2d(benchmark::State& state) {
  int64_t b = state.range(0), c = state.range(1), hw = state.range(2), oc = state.range(3);
  std::vector<Tensor> in = {random({b, c, hw, hw}, 13), random({oc, c, 3, 3}, 14), random({oc}, 15)};
  run(kConv2d, in);
  for (auto _ : state) benchmark::DoNotOptimize(run(kConv2d, in).data());
  state.counters["GFLOPS"] =
      benchmark::Counter(2.0 * b * oc * c * 9 * hw * hw / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_zyntax_depthwise(benchmark::State& state) {
  int64_t b = state.range(0), c = state.range(1), hw = state.range(2);
  std::vector<Tensor> in = {random({b, c, hw, hw}, 16), random({c, 3, 3}, 17)};
  run(kDepthwise, in);
  for (auto _ : state) benchmark::DoNotOptimize(run(kDepthwise, in).data());
  bytes_counter(state, 2.0 * b * c * hw * hw * sizeof(float));
}

// ------------------------------------------------------------ training steps (the op library's backward kernels)

Tensor run_op(const std::string& name, const std::vector<Tensor>& inputs, const std::map<std::string, int64_t>& dims = {},
              const std::map<std::string, Scalar>& scalars = {}) {
  return api::OpLibrary::instance().op(name).launch(cpu(), inputs, dims, scalars);
}

// The gradients of a 3x3 convolution with stride 1 and padding 1 with
// respect to its input, weights and bias (ComputeDevice::conv2d_backward).
void BM_zyntax_conv2d_backward(benchmark::State& state) {
  int64_t b = state.range(0), c = state.range(1), hw = state.range(2), oc = state.range(3);
  Tensor x = random({b, c, hw, hw}, 20), w = random({oc, c, 3, 3}, 21), g = random({b, oc, hw, hw}, 22);
  std::map<std::string, int64_t> steps = {{"sh", 1}, {"sw", 1}, {"ph", 1}, {"pw", 1}};
  std::map<std::string, int64_t> input_dims = steps, weight_dims = steps;
  input_dims.insert({{"h", hw}, {"w", hw}});
  weight_dims.insert({{"kh", 3}, {"kw", 3}});
  auto go = [&] {
    benchmark::DoNotOptimize(run_op("conv2d_backward_input", {g, w}, input_dims).data());
    Tensor dw = run_op("conv2d_backward_weight", {x, g}, weight_dims);
    benchmark::DoNotOptimize(run_op("transpose_2d", {dw.reshaped({c * 9, oc})}).data());
    Tensor per_image = run_op("conv2d_backward_bias", {g.reshaped({b, oc, hw * hw})});
    benchmark::DoNotOptimize(run_op("reduce_sum_axis", {per_image.reshaped({1, b, oc})}).data());
  };
  go();
  for (auto _ : state) go();
  state.counters["GFLOPS"] =
      benchmark::Counter(4.0 * b * oc * c * 9 * hw * hw / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

// The gradients of layer_norm with respect to its input, gamma and beta
// (ComputeDevice::layer_norm_backward).
void BM_zyntax_layernorm_backward(benchmark::State& state) {
  int64_t rows = state.range(0), cols = state.range(1);
  Tensor x = random({rows, cols}, 23), gamma = random({cols}, 24), g = random({rows, cols}, 25);
  std::map<std::string, Scalar> eps = {{"eps", Scalar::of_float(1e-5, DType::F32)}};
  auto go = [&] {
    benchmark::DoNotOptimize(run_op("layer_norm_backward_input", {x, gamma, g}, {}, eps).data());
    Tensor stats = run_op("layer_norm_stats", {x}, {}, eps);
    int64_t chunk = (rows + 63) / 64, chunks = (rows + chunk - 1) / chunk;
    Tensor partial = run_op("layer_norm_backward_params", {x, g, stats}, {{"chunk", chunk}, {"chunks", chunks}});
    benchmark::DoNotOptimize(run_op("reduce_sum_axis", {partial.reshaped({1, chunks, 2 * cols})}).data());
  };
  go();
  for (auto _ : state) go();
  // x read three times (the input's gradient, the statistics, the
  // parameters'), grad twice, dx written.
  bytes_counter(state, 6.0 * rows * cols * sizeof(float));
}

// ------------------------------------------------------------ launch and compile

void BM_zyntax_launch_tiny(benchmark::State& state) {
  std::vector<Tensor> in = {random({8}, 12)};
  run(kCopy, in);
  for (auto _ : state) benchmark::DoNotOptimize(run(kCopy, in).data());
}

// Cold: a kernel never seen (a fresh size, no disk cache); warm: the same
// kernel's object code loaded from the disk cache into a fresh JIT entry.
void BM_compile_cold_and_warm(benchmark::State& state) {
  // Sizes no earlier run has used, so the disk cache cannot have them.
  int64_t size = 1000 + std::chrono::duration_cast<std::chrono::microseconds>(
                            std::chrono::system_clock::now().time_since_epoch()).count() % 100000000;
  double cold = 0, warm = 0;
  int64_t runs = 0;
  for (auto _ : state) {
    ++size;
    cir::Kernel k = cir::specialize(kernel(kGelu).generic(), {{"n", size}});
    uint64_t h = cir::hash_kernel(k);
    codegen::CpuJit::instance().compile(k, h);
    cold += codegen::CpuJit::instance().last_compile().milliseconds;
    // Same kernel again under another in-memory key: found on disk.
    codegen::CpuJit::instance().compile(k, h ^ 0x9e3779b97f4a7c15ull);
    if (codegen::CpuJit::instance().last_compile().from_disk) warm += codegen::CpuJit::instance().last_compile().milliseconds;
    ++runs;
  }
  state.counters["cold_ms"] = cold / static_cast<double>(runs);
  state.counters["warm_ms"] = warm / static_cast<double>(runs);
}

// The shapes bench/compare_cpu.py reports (GEMM_SHAPES there).
void gemm_shapes(benchmark::internal::Benchmark* b) {
  for (int64_t n : {256, 512, 1024, 2048, 4096}) b->Args({n, n, n});
  b->Args({128, 1152, 6272})->Args({64, 576, 3136});
}

BENCHMARK(BM_zyntax_sgemm)->Apply(gemm_shapes)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_openblas_sgemm)->Apply(gemm_shapes)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_onednn_sgemm)->Apply(gemm_shapes)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_memcpy_bandwidth)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_zyntax_copy)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_zyntax_gelu)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_zyntax_gelu_in_cache)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_zyntax_gelu_erf)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_zyntax_sum_of_squares)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_zyntax_softmax)->Args({4096, 1024})->Args({1024, 4096})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_zyntax_layernorm)->Args({4096, 1024})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_zyntax_attention)->Args({12, 128, 64})->Args({4, 512, 64})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_zyntax_embedding_grad)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_zyntax_conv2d)->Args({1, 64, 56, 64})->Args({8, 128, 28, 128})->Args({1, 256, 14, 256})->Args({1, 512, 7, 512})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_zyntax_depthwise)->Args({1, 256, 56})->Args({8, 128, 28})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_zyntax_conv2d_backward)->Args({1, 64, 56, 64})->Args({8, 128, 28, 128})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_zyntax_layernorm_backward)->Args({4096, 1024})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_zyntax_launch_tiny)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_compile_cold_and_warm)->Iterations(5)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
