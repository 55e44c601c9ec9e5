#include "interp/compute_runner.hpp"

#include "interp/ranks_launch.hpp"

#include <algorithm>

#include "backends/registry.hpp"
#include "runtime/device.hpp"
#include "runtime/split_launch.hpp"

namespace zyntax {

namespace {

// Answers a kernel's questions about host names from the running frame.
class FrameHostEnv : public HostEnv {
 public:
  explicit FrameHostEnv(Frame& f) : frame_(f) {}

  std::optional<HostBinding> lookup(std::string_view name) const override {
    Binding* b = frame_.lookup(std::string(name));
    if (!b) return std::nullopt;
    HostBinding h;
    h.decl = b->decl;
    h.param_axes = b->param_axes;
    switch (b->value.kind) {
      case Value::Kind::Int: h.kind = HostBinding::Kind::Int; break;
      case Value::Kind::Float: h.kind = HostBinding::Kind::Float; break;
      case Value::Kind::Bool: h.kind = HostBinding::Kind::Bool; break;
      case Value::Kind::Tensor:
      case Value::Kind::Pending: h.kind = HostBinding::Kind::Tensor; break;
      default: h.kind = HostBinding::Kind::Other; break;
    }
    return h;
  }

 private:
  Frame& frame_;
};

// Host integers a kernel's dimensions come from, and host numbers it reads.
std::pair<std::map<std::string, int64_t>, std::map<std::string, Scalar>> host_arguments(const cir::Kernel& k, Frame& frame, Span span) {
  std::map<std::string, int64_t> host_dims;
  for (const cir::DimParam& d : k.dims) {
    if (d.source != cir::DimSource::Host) continue;
    Binding* b = frame.lookup(d.name);
    if (!b || b->value.kind != Value::Kind::Int)
      throw Error(span, "compute '" + k.name + "': dimension '" + d.name + "' must be an integer on the host, but it is " +
                            (b ? type_name(b->value) : std::string("undefined")));
    host_dims[d.name] = b->value.i;
  }
  std::map<std::string, Scalar> scalars;
  for (const cir::Param& p : k.params) {
    if (p.role != cir::ParamRole::Scalar) continue;
    Binding* b = frame.lookup(p.name);
    if (!b || !b->value.is_number())
      throw Error(span, "compute '" + k.name + "' reads host value '" + p.name + "', which is not a number");
    scalars[p.name] = b->value.as_scalar();
  }
  return {host_dims, scalars};
}

Device* find_device(const std::string& id, Span span) {
  Device* d = device_registry().find(id);
  if (!d) {
    std::string why = device_registry().unavailable_reason(id);
    throw Error(Diagnostic{Severity::Error, span, "device '" + id + "' is not available", {},
                           "available devices: " + device_registry().available() + (why.empty() ? "" : "; " + why)});
  }
  return d;
}

// The signature of input `e`, whose value is `v`: its rank and dtype (sizes
// are not part of it: they are bound at launch).
InputSignature tensor_signature(const ast::Expr& e, const Value& v) {
  if (v.kind != Value::Kind::Tensor && v.kind != Value::Kind::Pending)
    throw Error(e.span, "compute inputs must be tensors, but '" + ast::path_text(e) + "' is " + type_name(v));
  InputSignature s;
  s.path = ast::path_text(e);
  s.span = e.span;
  // A pending result's rank and dtype are known before it is computed.
  s.rank = static_cast<int>(v.kind == Value::Kind::Pending ? v.pending->shape.size() : v.tensor.shape().size());
  s.dtype = v.kind == Value::Kind::Pending ? v.pending->dtype : v.tensor.dtype();
  return s;
}

}  // namespace

ComputeRunner::Entry& ComputeRunner::lowered(const ast::Compute& c, Frame& frame, const std::vector<InputSignature>& sigs) {
  std::string key;
  for (const InputSignature& s : sigs) key += s.path + ":" + std::to_string(*s.rank) + ":" + dtype_name(*s.dtype) + ";";
  std::lock_guard<std::mutex> lock(mu_);
  auto it = cache_.find({&c, key});
  if (it != cache_.end()) return *it->second;
  DiagnosticEngine diags(session_.sources());
  FrameHostEnv env(frame);
  std::optional<LoweredCompute> lc = lower_compute(c, session_.kernel_name(&c), sigs, env, diags);
  if (!lc) {
    // Errors the checker could not see without the data (ranks, dtypes).
    for (const Diagnostic& d : diags.diagnostics()) {
      if (d.severity != Severity::Error) continue;
      throw Error(d);
    }
    throw Error(c.span, "compute block could not be compiled");
  }
  auto entry = std::make_unique<Entry>();
  entry->compiled = std::make_unique<CompiledCompute>(std::move(lc->kernel));
  entry->annotations = std::move(lc->annotations);
  Entry& ref = *entry;
  cache_[{&c, key}] = std::move(entry);
  return ref;
}

Value ComputeRunner::run(const ast::Compute& c, Frame& frame, const std::vector<Value>& inputs,
                         const std::string& default_device) {
  std::vector<InputSignature> sigs;
  std::vector<Tensor> tensors;
  for (size_t i = 0; i < inputs.size(); ++i) {
    sigs.push_back(tensor_signature(*c.inputs[i], inputs[i]));
    tensors.push_back(inputs[i].tensor);
  }
  Entry& entry = lowered(c, frame, sigs);
  const cir::Kernel& k = entry.compiled->generic();

  auto [host_dims, scalars] = host_arguments(k, frame, c.span);

  // The devices: the block's own @device (one, or a list to share the work
  // with @parallel), else the configured default.
  std::vector<std::string> ids = entry.annotations.devices;
  if (ids.empty()) ids.push_back(default_device);
  Span device_span = entry.annotations.devices.empty() ? c.span : entry.annotations.device_span;
  std::vector<Device*> devices;
  for (const std::string& id : ids) devices.push_back(find_device(id, device_span));
  const std::string& parallel = entry.annotations.parallel;
  if (parallel.empty()) devices.resize(1);  // a list without @parallel: its first device
  SplitMode mode = parallel == "model" ? SplitMode::Model : SplitMode::Data;

  CompiledCompute* compiled = entry.compiled.get();
  Span span = c.span;
  bool over_ranks = entry.annotations.over_ranks;
  if (over_ranks) devices.resize(1);  // each rank its part on its one device
  auto launch = [compiled, devices, mode, tensors, host_dims, scalars, span, over_ranks]() {
    try {
      if (over_ranks) return Value::of_tensor(launch_over_ranks(*compiled, *devices[0], mode, tensors, host_dims, scalars));
      if (devices.size() > 1) return Value::of_tensor(launch_split(*compiled, devices, mode, tensors, host_dims, scalars));
      return Value::of_tensor(compiled->launch(*devices[0], tensors, host_dims, scalars));
    } catch (const DataError& e) {
      throw Error(span, e.what());
    }
  };
  if (!entry.annotations.is_async) return launch();
  Value f;
  f.kind = Value::Kind::Future;
  f.future = std::make_shared<std::shared_future<Value>>(std::async(std::launch::async, launch).share());
  return f;
}

int ComputeRunner::line_of(const ast::Compute& c) const {
  return static_cast<int>(session_.sources().file(c.span.file).line_col(c.span.begin).line);
}

void ComputeRunner::explain(const std::string& what) {
  if (!explain_) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (explained_.insert(what).second) *explain_ << "zyntax: fusion: " << what << "\n";
}

namespace {

// At most this many blocks wait: then they run (a host loop that never
// reads its results still computes them as it goes).
constexpr size_t kMaxPending = 128;


}  // namespace

Value ComputeRunner::defer(const ast::Compute& c, Frame& frame, std::vector<Value> inputs, const std::string& default_device) {
  std::vector<InputSignature> sigs;
  for (size_t i = 0; i < inputs.size(); ++i) sigs.push_back(tensor_signature(*c.inputs[i], inputs[i]));
  Entry& entry = lowered(c, frame, sigs);
  const KernelAnnotations& a = entry.annotations;
  // Launched as written, after what is pending.
  auto run_now = [&](const std::string& why) {
    flush(c.span, why);
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i].kind == Value::Kind::Pending) inputs[i] = Value::of_tensor(force(inputs[i].pending, c.inputs[i]->span));
    return run(c, frame, inputs, default_device);
  };
  if (!a.devices.empty() || !a.parallel.empty() || a.is_async)
    return run_now("the block there runs as written (it names its device, shares its work or is @async)");
  const cir::Kernel& k = entry.compiled->generic();
  auto block = std::make_shared<PendingBlock>();
  block->span = c.span;
  block->compiled = entry.compiled.get();
  block->label = k.name;
  block->line = line_of(c);
  std::tie(block->host_dims, block->scalars) = host_arguments(k, frame, c.span);
  // The result's shape now, from its inputs' (errors in them reported here, as unfused).
  std::vector<TensorSpec> specs;
  for (const cir::Param& p : k.params) {
    if (p.role != cir::ParamRole::Input) continue;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (ast::path_text(*c.inputs[i]) != p.name) continue;
      const Value& v = inputs[i];
      PendingInput in;
      if (v.kind == Value::Kind::Pending) in.pending = v.pending;
      else in.tensor = v.tensor;
      block->inputs[p.name] = in;
      specs.push_back(v.kind == Value::Kind::Pending ? TensorSpec{v.pending->dtype, v.pending->shape}
                                                      : TensorSpec{v.tensor.dtype(), v.tensor.shape()});
      break;
    }
  }
  std::optional<Shape> shape;
  try {
    block->dims = bind_dimensions(k, specs, block->host_dims);
    shape = output_shape(k, block->dims);
  } catch (const DataError& e) {
    throw Error(c.span, e.what());
  }
  if (!shape) return run_now("the size of the block's result there is known only once it runs");
  block->shape = *shape;
  block->dtype = k.output().type.dtype;
  if (!pending_.empty() && (pending_device_ != default_device || pending_.size() >= kMaxPending)) flush();
  pending_device_ = default_device;
  block->seq = next_seq_++;
  pending_.push_back(block);
  return Value::of_pending(std::move(block));
}

Tensor ComputeRunner::force(const std::shared_ptr<PendingBlock>& p, Span where) {
  if (!p) throw Error(where, "internal error: a block's result was released before its last read");
  if (p->computed()) return p->result;
  // A block fusion computed inside another kernel, wanted after all: it
  // runs again with what it reads.
  if (std::find(pending_.begin(), pending_.end(), p) == pending_.end()) {
    std::vector<std::shared_ptr<PendingBlock>> missing = {p};
    for (size_t i = 0; i < missing.size(); ++i)
      for (const auto& [name, in] : missing[i]->inputs)
        if (in.waits() && std::find(pending_.begin(), pending_.end(), in.pending) == pending_.end() &&
            std::find(missing.begin(), missing.end(), in.pending) == missing.end())
          missing.push_back(in.pending);
    pending_.insert(pending_.end(), missing.begin(), missing.end());
    std::sort(pending_.begin(), pending_.end(), [](const auto& a, const auto& b) { return a->seq < b->seq; });
  }
  flush(where, "host code reads '" + p->label + "'");
  return p->result;
}

void ComputeRunner::flush(Span where, const std::string& why) {
  if (pending_.empty()) return;
  if (!why.empty() && where.valid())
    explain("pending blocks computed at line " + std::to_string(session_.sources().file(where.file).line_col(where.begin).line) + ": " + why);
  std::vector<std::shared_ptr<PendingBlock>> nodes = std::move(pending_);
  pending_.clear();
  Device* device = find_device(pending_device_, nodes[0]->span);
  graph_.run(
      std::move(nodes), *device, [this](const std::string& e) { explain(e); },
      [](const PendingBlock& b, const std::exception& e) {
        if (dynamic_cast<const DataError*>(&e)) throw Error(b.span, e.what());  // a failed check's Error has its own place
      });
}

}  // namespace zyntax
