// GPU benchmarks, one JSON object per line on standard output for
// bench/compare_gpu.py, which runs PyTorch and Triton beside it:
//   {"name": "launch_latency", "value": 2.1, "unit": "us"}
// On cuda:0 (the default): runtime costs (launch, round trip, module
// lookup, transfers) and zyntax kernels written in ZynML, each timed on the
// GPU with CUDA events around the kernel alone (the inputs' copies
// excluded), median of several runs. On another device (`zyntax_gpu_bench
// vulkan:0`, or `vulkan` for the first Vulkan GPU): the same kernels, timed by that device (Vulkan: the queue's
// timestamps around the dispatch). `--small` shrinks every shape by 16 or
// more (for slow software devices). Exit status 77 without the device.
// Timings belong here, never in tests.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "backends/registry.hpp"
#include "bench_kernels.hpp"
#include "backends/cuda/cuda_device.hpp"
#include "backends/cuda/cuda_gpu.hpp"
#include "runtime/kernel_cache.hpp"
#include "runtime/tuner.hpp"
#include "runtime/tuning_database.hpp"

namespace {

using namespace zyntax;
using namespace zyntax::bench;
using Clock = std::chrono::steady_clock;

void report(const std::string& name, double value, const char* unit, const std::string& note = "") {
  std::printf("{\"name\": \"%s\", \"value\": %.6g, \"unit\": \"%s\"%s}\n", name.c_str(), value, unit,
              note.empty() ? "" : (", \"note\": \"" + note + "\"").c_str());
  std::fflush(stdout);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// An empty kernel, for what launching costs by itself.
const char* kEmptyPtx = R"(
.version 7.8
.target sm_80
.address_size 64
.visible .entry empty()
{
  ret;
}
)";

void runtime_costs(cuda::Gpu& gpu) {
  const cuda::Driver& d = gpu.driver();
  gpu.bind();
  cuda::CUfunction empty = gpu.function(gpu.load_module(kEmptyPtx), "empty");
  for (int i = 0; i < 100; ++i) gpu.launch(empty, 1, 1, 0, gpu.stream(), nullptr);
  gpu.synchronize();
  // Launch latency: the host's cost of one asynchronous launch.
  constexpr int kLaunches = 20000;
  auto t0 = Clock::now();
  for (int i = 0; i < kLaunches; ++i) gpu.launch(empty, 1, 1, 0, gpu.stream(), nullptr);
  double launch_s = seconds_since(t0);
  gpu.synchronize();
  report("launch_latency", launch_s / kLaunches * 1e6, "us");
  // Round trip: launch, then wait for it.
  std::vector<double> trips;
  for (int i = 0; i < 2000; ++i) {
    auto t = Clock::now();
    gpu.launch(empty, 1, 1, 0, gpu.stream(), nullptr);
    gpu.synchronize();
    trips.push_back(seconds_since(t));
  }
  report("empty_kernel_round_trip", median(trips) * 1e6, "us");
  // Cached module lookup: the device's kernel cache, hit.
  KernelCache<int> cache;
  for (uint64_t k = 0; k < 256; ++k) cache.get(k, [] { return std::make_shared<int>(1); });
  constexpr int kLookups = 1000000;
  t0 = Clock::now();
  int64_t sum = 0;
  for (int i = 0; i < kLookups; ++i) sum += *cache.get(static_cast<uint64_t>(i & 255), [] { return std::make_shared<int>(0); });
  report("cached_module_lookup", seconds_since(t0) / kLookups * 1e6, "us", sum > 0 ? "" : "?");

  // Transfers: pinned host memory to and from the device, and on the device.
  constexpr size_t kBytes = size_t{256} << 20;
  cuda::PinnedBuffer host(gpu, kBytes);
  std::fill_n(static_cast<char*>(host.data()), kBytes, 1);
  cuda::DeviceBuffer a(gpu, kBytes), b(gpu, kBytes);
  cuda::Event start(gpu), stop(gpu);
  auto timed = [&](auto&& op, int reps) {
    op();
    gpu.synchronize();
    start.record(gpu.stream());
    for (int i = 0; i < reps; ++i) op();
    stop.record(gpu.stream());
    stop.synchronize();
    return cuda::Event::elapsed_ms(start, stop) / 1e3 / reps;
  };
  double h2d = timed([&] { a.upload(host.data(), kBytes, false); }, 10);
  report("pinned_h2d", kBytes / h2d / 1e9, "GB/s");
  double d2h = timed([&] { a.download(host.data(), kBytes, false); }, 10);
  report("pinned_d2h", kBytes / d2h / 1e9, "GB/s");
  double d2d = timed([&] { d.check(d.cuMemcpyDtoDAsync(b.address(), a.address(), kBytes, static_cast<cuda::CUstream>(gpu.stream())), "cuMemcpyDtoDAsync"); }, 20);
  report("device_copy_driver", 2.0 * kBytes / d2d / 1e9, "GB/s", "bytes read and written");
}

// Median GPU time of a zyntax kernel (events around the kernel), after a warm-up.
double kernel_ms(Device& dev, const char* source, const std::vector<Tensor>& in, int reps,
                 const std::map<std::string, int64_t>& host_dims = {}) {
  CompiledCompute& k = kernel(source);
  k.launch(dev, in, host_dims, {});
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    auto t0 = Clock::now();
    k.launch(dev, in, host_dims, {});
    double device_ms = dev.last_kernel_milliseconds();
    ms.push_back(device_ms >= 0 ? device_ms : seconds_since(t0) * 1e3);  // wall time where the device keeps none
  }
  return median(ms);
}

// The same under a tuning choice (the kernel specialised to the inputs'
// sizes, run by the device's plan for that choice); -1 where it refuses it.
double kernel_ms_choice(Device& dev, const char* source, const std::vector<Tensor>& in, int reps, const TuningChoice& choice) {
  CompiledCompute& k = kernel(source);
  auto spec = k.specialize(bind_dimensions(k.generic(), in, {}));
  std::vector<double> ms;
  for (int i = 0; i <= reps; ++i) {
    Device::Attempt a = dev.execute_choice(spec->kernel, spec->hash, choice, in, {});
    if (a.outcome != Device::Outcome::Done) return -1;
    if (i > 0) ms.push_back(dev.last_kernel_milliseconds());  // the first warms up
  }
  return median(ms);
}

// A product benchmarked at 4096: its rows' key, its source, its factors' dtype.
struct Product {
  const char* key;
  const char* source;
  DType dtype;
};
// The products on matrix units (TF32 by permission, bf16, f16).
const std::vector<Product>& unit_products() {
  static const std::vector<Product> p = {{"bf16", kMatmulBf16, DType::BF16}, {"bf16_out", kMatmulBf16Out, DType::BF16},
                                         {"f16", kMatmulF16, DType::F16},     {"tf32", kMatmulTf32, DType::F32},
                                         {"tf32_bt", kMatmulTf32Bt, DType::F32}};
  return p;
}

// `small`: every shape shrunk (a slow software device); the names say so.
void kernels(Device& dev, bool small) {
  const int64_t n = int64_t{1} << (small ? 20 : 26);  // 256 MiB of f32
  double copy = kernel_ms(dev, kCopy, {random({n}, 1)}, 10);
  report("zyntax_copy", 2.0 * n * 4 / (copy / 1e3) / 1e9, "GB/s", "bytes read and written");
  double fused = kernel_ms(dev, kFusedChain, {random({n}, 2), random({n}, 3)}, 10);
  report("zyntax_fused_chain_ms", fused, "ms", small ? "n=2^20" : "n=2^26");
  if (small) {
    double mm = kernel_ms(dev, kMatmul, {random({256, 256}, 4), random({256, 256}, 5)}, 3);
    report("zyntax_matmul_f32_256", 2.0 * 256 * 256 * 256 / (mm / 1e3) / 1e12, "TFLOP/s");
    double sm = kernel_ms(dev, kSoftmax, {random({1024, 2048}, 6)}, 3);
    report("zyntax_softmax_1024x2048_ms", sm, "ms");
    return;
  }
  for (int64_t size : {4096}) {
    double mm = kernel_ms(dev, kMatmul, {random({size, size}, 4), random({size, size}, 5)}, 3);
    report("zyntax_matmul_f32_" + std::to_string(size), 2.0 * size * size * size / (mm / 1e3) / 1e12, "TFLOP/s");
    double tf = kernel_ms(dev, kMatmulTf32, {random({size, size}, 4), random({size, size}, 5)}, 3);
    report("zyntax_matmul_tf32_" + std::to_string(size), 2.0 * size * size * size / (tf / 1e3) / 1e12, "TFLOP/s");
    double tt = kernel_ms(dev, kMatmulTf32Bt, {random({size, size}, 4), random({size, size}, 5)}, 3);
    report("zyntax_matmul_tf32_bt_" + std::to_string(size), 2.0 * size * size * size / (tt / 1e3) / 1e12, "TFLOP/s", "B as [N, K]");
    double bf = kernel_ms(dev, kMatmulBf16, {random({size, size}, 4, DType::BF16), random({size, size}, 5, DType::BF16)}, 3);
    report("zyntax_matmul_bf16_" + std::to_string(size), 2.0 * size * size * size / (bf / 1e3) / 1e12, "TFLOP/s", "f32 output");
    double bo = kernel_ms(dev, kMatmulBf16Out, {random({size, size}, 4, DType::BF16), random({size, size}, 5, DType::BF16)}, 3);
    report("zyntax_matmul_bf16_out_" + std::to_string(size), 2.0 * size * size * size / (bo / 1e3) / 1e12, "TFLOP/s", "bf16 output");
    double hf = kernel_ms(dev, kMatmulF16, {random({size, size}, 4, DType::F16), random({size, size}, 5, DType::F16)}, 3);
    report("zyntax_matmul_f16_" + std::to_string(size), 2.0 * size * size * size / (hf / 1e3) / 1e12, "TFLOP/s", "f32 output");
    // Warpgroup products in pairs of blocks sharing B's tiles (the tuner's
    // cluster=2), each beside the rules' plan timed again in turn.
    if (dev.gpu_target() && dev.gpu_target()->warpgroup_mma && dev.gpu_target()->block_clusters) {
      const TuningChoice pairs{{{"cluster", 2}}}, alone{{{"cluster", 1}}};
      for (const Product& r : unit_products()) {
        std::vector<Tensor> in = {random({size, size}, 4, r.dtype), random({size, size}, 5, r.dtype)};
        std::vector<double> one, two;
        for (int round = 0; round < 3; ++round) {
          one.push_back(kernel_ms_choice(dev, r.source, in, 5, alone));
          two.push_back(kernel_ms_choice(dev, r.source, in, 5, pairs));
        }
        if (*std::min_element(one.begin(), one.end()) < 0 || *std::min_element(two.begin(), two.end()) < 0) continue;  // a plan refused
        double flop = 2.0 * size * size * size;
        report(std::string("zyntax_matmul_") + r.key + "_cluster1_" + std::to_string(size), flop / (median(one) / 1e3) / 1e12, "TFLOP/s",
               "one block per cluster, timed in turns with the pairs");
        report(std::string("zyntax_matmul_") + r.key + "_cluster2_" + std::to_string(size), flop / (median(two) / 1e3) / 1e12, "TFLOP/s",
               "pairs of blocks sharing B's tiles");
      }
    }
  }
  // Softmax at seq 2048: 16 heads x 2048 query rows of 2048 scores.
  double sm = kernel_ms(dev, kSoftmax, {random({16 * 2048, 2048}, 6)}, 10);
  report("zyntax_softmax_2048_ms", sm, "ms", "32768x2048");
  // LayerNorm of BERT-base activations: 8 x 512 tokens of 768.
  double ln = kernel_ms(dev, kLayerNorm, {random({4096, 768}, 7), random({768}, 8), random({768}, 9)}, 10);
  report("zyntax_layernorm_4096x768_ms", ln, "ms");
  // Embedding gradient of BERT-base: 8 x 512 tokens of 768 into 30522 rows.
  double eg = kernel_ms(dev, kEmbeddingGrad, {random({4096, 768}, 13), random_ids(4096, 30522, 14)}, 10, {{"vocab", 30522}});
  report("zyntax_embedding_grad_ms", eg, "ms", "4096x768 into 30522 rows");
  // Attention: BERT-base (batch 8, 12 heads, seq 128, d 64) and seq 4096 (12 heads).
  for (auto [bh, s] : std::vector<std::pair<int64_t, int64_t>>{{96, 128}, {12, 4096}}) {
    std::vector<Tensor> in = {random({bh, s, 64}, 10), random({bh, s, 64}, 11), random({bh, s, 64}, 12)};
    std::string shape = std::to_string(bh) + "x" + std::to_string(s);
    report("zyntax_attention_" + shape + "_ms", kernel_ms(dev, kAttention, in, 3), "ms", "blocks of 32 rows");
    report("zyntax_attention64_" + shape + "_ms", kernel_ms(dev, kAttention64, in, 3), "ms", "blocks of 64 rows");
  }
  // bf16 flash attention at seq 4096 (12 heads), head dims 64 and 128, with
  // and without the causal mask: bf16 reads, f32 arithmetic and output.
  for (int64_t d : {64, 128}) {
    std::vector<Tensor> in = {random({12, 4096, d}, 15, DType::BF16), random({12, 4096, d}, 16, DType::BF16),
                              random({12, 4096, d}, 17, DType::BF16)};
    for (bool causal : {false, true}) {
      std::string key = "12x4096_d" + std::to_string(d) + (causal ? "_causal" : "") + "_ms";
      report("zyntax_attention_bf16_" + key, kernel_ms(dev, causal ? kAttentionBf16Causal : kAttentionBf16, in, 3), "ms",
             "blocks of 64 rows, f32 output");
      report("zyntax_attention_bf16_tf32_" + key, kernel_ms(dev, causal ? kAttentionBf16Tf32Causal : kAttentionBf16Tf32, in, 3), "ms",
             "@precision(tf32): P V on tensor cores too");
      report("zyntax_attention_bf16_wg_" + key, kernel_ms(dev, causal ? kAttentionBf16WgCausal : kAttentionBf16Wg, in, 5), "ms",
             "@precision(bf16): one warpgroup attention kernel on Hopper");
    }
  }
}

// The products' schedules tuned on this device (the tuner's search, its
// record kept in memory only), then the rules' plan and the tuned one timed
// in turns: the rows the benchmark's anchors (cuBLAS through PyTorch) are
// measured against. `small`: the f32 product at 256 alone (a slow software
// device).
void tuned_products(Device& dev, bool small) {
  std::vector<Product> rows = {{"f32", kMatmul, DType::F32}};
  if (!small) rows.insert(rows.end(), unit_products().begin(), unit_products().end());
  const int64_t size = small ? 256 : 4096;
  TuningDatabase scratch("", tuning_compiler_version());
  TuneOptions options;
  options.budget_seconds = small ? 60 : 30;
  for (const Product& r : rows) {
    std::vector<Tensor> in = {random({size, size}, 4, r.dtype), random({size, size}, 5, r.dtype)};
    CompiledCompute& k = kernel(r.source);
    auto spec = k.specialize(bind_dimensions(k.generic(), in, {}));
    TuneResult t = tune_kernel(dev, spec->kernel, spec->hash, in, {}, options, scratch);
    std::vector<double> rules, tuned;
    for (int round = 0; round < 3; ++round) {
      rules.push_back(kernel_ms_choice(dev, r.source, in, 5, TuningChoice{}));
      tuned.push_back(kernel_ms_choice(dev, r.source, in, 5, t.record.choice));
    }
    if (*std::min_element(rules.begin(), rules.end()) < 0 || *std::min_element(tuned.begin(), tuned.end()) < 0) continue;
    double flop = 2.0 * size * size * size;
    std::string choice = t.record.choice.knobs.empty() ? "the rules' plan" : t.record.choice.text();
    report(std::string("zyntax_matmul_") + r.key + "_rules_" + std::to_string(size), flop / (median(rules) / 1e3) / 1e12, "TFLOP/s",
           "the rules' plan, timed in turns with the tuned one");
    report(std::string("zyntax_matmul_") + r.key + "_tuned_" + std::to_string(size), flop / (median(tuned) / 1e3) / 1e12, "TFLOP/s",
           choice + " (" + std::to_string(t.record.timed) + " candidates timed in " + std::to_string(static_cast<int>(t.seconds)) + " s)");
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string id = "cuda:0";
  bool small = false, tune = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--small") small = true;
    else if (a == "--tune") tune = true;
    else if (!a.empty() && a[0] != '-') id = a;
    else {
      std::fprintf(stderr, "usage: zyntax_gpu_bench [DEVICE] [--small] [--tune]\n");
      return 2;
    }
  }
  Device* dev = nullptr;
  if (id == "vulkan") {  // the first Vulkan device that is a GPU (not a software one)
    for (const auto& d : device_registry().devices())
      if (!dev && d->info().id.rfind("vulkan:", 0) == 0 && d->info().type == "gpu") dev = d.get();
  } else {
    dev = device_registry().find(id);
  }
  if (!dev) {
    std::string why = id != "vulkan"                             ? device_registry().unavailable_reason(id)
                      : device_registry().find("vulkan:0") ? "the Vulkan devices here are software ones"
                                                           : device_registry().unavailable_reason("vulkan:0");
    std::fprintf(stderr, "no device %s: %s\n", id == "vulkan" ? "Vulkan GPU" : id.c_str(), why.c_str());
    return 77;
  }
  const DeviceInfo& info = dev->info();
  std::printf("{\"device\": \"%s\", \"id\": \"%s\", \"backend\": \"%s\"}\n", info.name.c_str(), info.id.c_str(), info.backend.c_str());
  if (cuda::Gpu* gpu = cuda_gpu_of(*dev)) runtime_costs(*gpu);
  if (tune) {  // the products' tuned plans alone
    tuned_products(*dev, small);
    return 0;
  }
  kernels(*dev, small);
  return 0;
}
