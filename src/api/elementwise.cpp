// ComputeDevice::elementwise: the user's function traced once (api/trace),
// its fused kernel cached per graph and run on the device.
#include <cstring>
#include <mutex>

#include "api/api_internal.hpp"
#include "api/trace.hpp"
#include "cir/hash.hpp"
#include "zyntax/zyntax.hpp"

namespace zyntax {

using api::tensor_of;
using api::wrap;

// ------------------------------------------------------------ element-wise

namespace {

struct TracedKernel {
  cir::Kernel kernel;
  uint64_t hash = 0;
};

// Traced kernels by their graph's key, kept for the process.
const TracedKernel& traced_kernel(const Trace& trace, const std::vector<ExprId>& outputs, size_t numel,
                                  const std::vector<DType>& dtypes, const std::vector<size_t>& lengths) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<TracedKernel>> cache;
  std::string key = trace.key(outputs, numel, dtypes, lengths);
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return *it->second;
  auto k = std::make_unique<TracedKernel>();
  k->kernel = trace.kernel(outputs, numel, dtypes, lengths);
  k->hash = cir::hash_kernel(k->kernel);
  return *(cache[key] = std::move(k));
}

}  // namespace

std::vector<Buffer> ComputeDevice::elementwise_multi(const std::vector<Buffer>& inputs, size_t numel,
                                                     const ElementFnMulti& f) const {
  std::vector<Tensor> tensors;
  std::vector<DType> dtypes;
  std::vector<size_t> lengths;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string arg = "inputs[" + std::to_string(i) + "]";
    const Tensor& t = tensor_of(dev(), inputs[i], "elementwise", arg.c_str());
    size_t len = static_cast<size_t>(t.numel());
    if (len == 0 ? numel != 0 : numel % len != 0)
      throw ShapeError("elementwise: argument " + arg + " has " + std::to_string(len) +
                       " elements, which neither equals nor divides numel = " + std::to_string(numel));
    tensors.push_back(t);
    dtypes.push_back(t.dtype() == DType::U32 ? DType::U32 : t.dtype());
    lengths.push_back(len);
  }
  Trace trace;
  std::vector<ExprId> outputs = f(trace.inputs(inputs.size()));
  if (outputs.empty()) throw ShapeError("elementwise: the function returned no output");
  for (ExprId& o : outputs)
    if (o.trace() != &trace) o = trace.node(Trace::Op::Add, {o, ExprId(0.0f)});  // a constant or an input alone
  if (numel == 0) {
    std::vector<Buffer> empty;
    for (size_t i = 0; i < outputs.size(); ++i) empty.push_back(alloc(0));
    return empty;
  }
  const TracedKernel& k = traced_kernel(trace, outputs, numel, dtypes, lengths);
  Tensor result = api::run_kernel(dev(), k.kernel, k.hash, tensors);
  if (outputs.size() == 1) return {wrap(dev(), std::move(result))};
  std::vector<Buffer> out;
  for (size_t o = 0; o < outputs.size(); ++o) {
    out.push_back(wrap(dev(), result.bytes_copy(o * numel * sizeof(float), DType::F32, {static_cast<int64_t>(numel)})));
  }
  return out;
}

Buffer ComputeDevice::elementwise(const std::vector<Buffer>& inputs, size_t numel, const ElementFn& f) const {
  return elementwise_multi(inputs, numel, [&](const std::vector<ExprId>& x) { return std::vector<ExprId>{f(x)}; })[0];
}

}  // namespace zyntax
