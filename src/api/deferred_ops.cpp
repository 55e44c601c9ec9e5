#include "api/deferred_ops.hpp"

#include <atomic>
#include <cstdio>

#include "api/api_internal.hpp"
#include "api/op_library.hpp"
#include "zyntax/zyntax.hpp"

namespace zyntax::api {

namespace {

// At most this many ops wait: then they run (a loop that never reads its
// results still computes them as it goes).
constexpr size_t kMaxPending = 128;

struct Queues {
  std::mutex mu;
  std::map<Device*, std::unique_ptr<DeferredOps>> by_device;
};

Queues& queues() {
  static Queues* q = new Queues();  // as long as the process: buffers may outlive every device handle
  return *q;
}

// Ops waiting in every queue together: flush_all() with none waiting (a
// read of a result, at every call from Python) costs one load.
std::atomic<int64_t> waiting_everywhere{0};

TensorSpec spec_of(const PendingInput& in) {
  if (!in.pending) return {in.tensor.dtype(), in.tensor.shape()};
  return {in.pending->dtype, in.view.empty() ? in.pending->shape : in.view};
}

}  // namespace

DeferredOps& DeferredOps::of(Device& device) {
  Queues& q = queues();
  std::lock_guard<std::mutex> lock(q.mu);
  std::unique_ptr<DeferredOps>& ops = q.by_device[&device];
  if (!ops) ops.reset(new DeferredOps(device));
  return *ops;
}

void DeferredOps::flush_all() {
  if (waiting_everywhere.load(std::memory_order_acquire) == 0) return;
  std::vector<DeferredOps*> all;
  {
    Queues& q = queues();
    std::lock_guard<std::mutex> lock(q.mu);
    for (auto& [device, ops] : q.by_device) all.push_back(ops.get());
  }
  for (DeferredOps* ops : all) ops->flush();
}

void DeferredOps::add(std::shared_ptr<PendingBlock> b) {
  std::lock_guard<std::mutex> lock(mu_);
  if (pending_.size() >= kMaxPending) flush_locked();
  b->seq = next_seq_++;
  pending_.push_back(std::move(b));
  waiting_everywhere.fetch_add(1, std::memory_order_release);
}

void DeferredOps::flush() {
  std::lock_guard<std::mutex> lock(mu_);
  flush_locked();
}

void DeferredOps::flush_locked() {
  if (pending_.empty()) return;
  std::vector<std::shared_ptr<PendingBlock>> nodes = std::move(pending_);
  pending_.clear();
  waiting_everywhere.fetch_sub(static_cast<int64_t>(nodes.size()), std::memory_order_release);
  launches_ += graph_.run(
      std::move(nodes), device_, [](const std::string&) {},
      [](const PendingBlock& b, const std::exception& e) { throw ComputeError(b.label + ": " + e.what()); });
}

uint64_t DeferredOps::launches() const {
  std::lock_guard<std::mutex> lock(mu_);
  return launches_;
}

void DeferredOps::count_launch() {
  std::lock_guard<std::mutex> lock(mu_);
  ++launches_;
}

void DeferredOps::attach() {
  std::lock_guard<std::mutex> lock(mu_);
  ++handles_;
}

size_t DeferredOps::detach() {
  std::lock_guard<std::mutex> lock(mu_);
  return handles_ > 0 ? --handles_ : 0;
}

void flush_deferred(const DeviceImpl& dev) {
  if (dev.devices.size() == 1) DeferredOps::of(*dev.device).flush();
}

OpInput op_input(const DeviceImpl& dev, const Buffer& b, const char* op, const char* arg, const std::vector<size_t>& shape,
                 const char* names) {
  check_device(dev, b, op, arg);
  check_size(op, arg, b, shape, names);
  OpInput in;
  Shape s = to_shape(shape);
  if (std::shared_ptr<PendingBlock> p = b.impl()->waiting()) {
    in.input.pending = std::move(p);
    if (in.input.pending->shape != s) in.input.view = s;
    return in;
  }
  in.input.tensor = b.impl()->value().reshaped(s);
  in.exposed = b.impl()->exposed();
  return in;
}

Buffer deferred_op(const DeviceImpl& dev, const std::string& op, const std::vector<OpInput>& inputs,
                   const std::map<std::string, int64_t>& host_dims, const std::map<std::string, Scalar>& scalars) {
  CompiledCompute& compiled = OpLibrary::instance().op(op);
  auto run_now = [&] {
    std::vector<Tensor> tensors;
    for (const OpInput& arg : inputs) {
      const PendingInput& in = arg.input;
      if (in.pending) {
        DeferredOps::of(*dev.device).flush();
        if (!in.pending->computed()) throw ComputeError(op + ": an input is the result of an op that failed");
      }
      tensors.push_back(in.value());
    }
    return wrap(dev, run_op(dev, op, tensors, host_dims, scalars));
  };
  bool exposed = false;
  for (const OpInput& arg : inputs) exposed = exposed || arg.exposed;
  if (!dev.fusion || dev.devices.size() != 1 || exposed) return run_now();
  const cir::Kernel& k = compiled.generic();
  auto block = std::make_shared<PendingBlock>();
  block->compiled = &compiled;
  block->label = op;
  block->host_dims = host_dims;
  block->scalars = scalars;
  std::vector<TensorSpec> specs;
  size_t i = 0;
  for (const cir::Param& p : k.params) {
    if (p.role != cir::ParamRole::Input) continue;
    if (i == inputs.size()) throw std::logic_error(op + ": fewer inputs than its kernel reads");
    block->inputs[p.name] = inputs[i].input;
    specs.push_back(spec_of(inputs[i++].input));
  }
  std::optional<Shape> shape;
  try {
    block->dims = bind_dimensions(k, specs, host_dims);
    shape = output_shape(k, block->dims);
  } catch (const DataError& e) {
    throw ComputeError(op + ": " + e.what());
  }
  if (!shape) return run_now();  // its size is known only once it runs
  block->shape = *shape;
  block->dtype = k.output().type.dtype;
  DeferredOps& queue = DeferredOps::of(*dev.device);
  auto impl = std::make_shared<BufferImpl>(block, &queue, dev.description.id);
  queue.add(std::move(block));
  return Buffer(std::move(impl));
}

}  // namespace zyntax::api
