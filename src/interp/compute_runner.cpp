#include "interp/compute_runner.hpp"

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
      case Value::Kind::Tensor: h.kind = HostBinding::Kind::Tensor; break;
      default: h.kind = HostBinding::Kind::Other; break;
    }
    return h;
  }

 private:
  Frame& frame_;
};

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
    const Value& v = inputs[i];
    const ast::Expr& e = *c.inputs[i];
    if (v.kind != Value::Kind::Tensor)
      throw Error(e.span, "compute inputs must be tensors, but '" + ast::path_text(e) + "' is " + type_name(v));
    InputSignature s;
    s.path = ast::path_text(e);
    s.span = e.span;
    s.rank = static_cast<int>(v.tensor.rank());
    s.dtype = v.tensor.dtype();  // sizes are not part of it: they are bound at launch
    sigs.push_back(std::move(s));
    tensors.push_back(v.tensor);
  }
  Entry& entry = lowered(c, frame, sigs);
  const cir::Kernel& k = entry.compiled->generic();

  // Host integers the kernel's dimensions come from, and host numbers it reads.
  std::map<std::string, int64_t> host_dims;
  for (const cir::DimParam& d : k.dims) {
    if (d.source != cir::DimSource::Host) continue;
    Binding* b = frame.lookup(d.name);
    if (!b || b->value.kind != Value::Kind::Int)
      throw Error(c.span, "compute '" + k.name + "': dimension '" + d.name + "' must be an integer on the host, but it is " +
                              (b ? type_name(b->value) : std::string("undefined")));
    host_dims[d.name] = b->value.i;
  }
  std::map<std::string, Scalar> scalars;
  for (const cir::Param& p : k.params) {
    if (p.role != cir::ParamRole::Scalar) continue;
    Binding* b = frame.lookup(p.name);
    if (!b || !b->value.is_number())
      throw Error(c.span, "compute '" + k.name + "' reads host value '" + p.name + "', which is not a number");
    scalars[p.name] = b->value.as_scalar();
  }

  // The devices: the block's own @device (one, or a list to share the work
  // with @parallel), else the configured default.
  std::vector<std::string> ids = entry.annotations.devices;
  if (ids.empty()) ids.push_back(default_device);
  Span device_span = entry.annotations.devices.empty() ? c.span : entry.annotations.device_span;
  std::vector<Device*> devices;
  for (const std::string& id : ids) {
    Device* d = device_registry().find(id);
    if (!d) {
      std::string why = device_registry().unavailable_reason(id);
      throw Error(Diagnostic{Severity::Error, device_span, "device '" + id + "' is not available", {},
                             "available devices: " + device_registry().available() + (why.empty() ? "" : "; " + why)});
    }
    devices.push_back(d);
  }
  const std::string& parallel = entry.annotations.parallel;
  if (parallel.empty()) devices.resize(1);  // a list without @parallel: its first device
  SplitMode mode = parallel == "model" ? SplitMode::Model : SplitMode::Data;

  CompiledCompute* compiled = entry.compiled.get();
  Span span = c.span;
  auto launch = [compiled, devices, mode, tensors, host_dims, scalars, span]() {
    try {
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

}  // namespace zyntax
