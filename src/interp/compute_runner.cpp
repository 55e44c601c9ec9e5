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
  if (v.kind != Value::Kind::Tensor)
    throw Error(e.span, "compute inputs must be tensors, but '" + ast::path_text(e) + "' is " + type_name(v));
  InputSignature s;
  s.path = ast::path_text(e);
  s.span = e.span;
  s.rank = static_cast<int>(v.tensor.rank());
  s.dtype = v.tensor.dtype();
  return s;
}

// The launch of one kernel on one device, its inputs picked by name.
Tensor launch_named(CompiledCompute& compiled, Device& device, const std::map<std::string, Tensor>& named, Frame& frame, Span span) {
  const cir::Kernel& k = compiled.generic();
  std::vector<Tensor> tensors;
  for (const cir::Param& p : k.params)
    if (p.role == cir::ParamRole::Input) tensors.push_back(named.at(p.name));
  auto [host_dims, scalars] = host_arguments(k, frame, span);
  try {
    return compiled.launch(device, tensors, host_dims, scalars);
  } catch (const DataError& e) {
    throw Error(span, e.what());
  }
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

void ComputeRunner::explain(const std::string& what) {
  if (!explain_) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (explained_.insert(what).second) *explain_ << "zyntax: fusion: " << what << "\n";
}

Value ComputeRunner::run_chain(const std::vector<ChainBlock>& chain, Frame& frame, const std::string& default_device) {
  Device* device = find_device(default_device, chain[0].block->span);
  auto line_of = [&](size_t j) {
    const ast::Compute& c = *chain[j].block;
    return static_cast<int>(session_.sources().file(c.span.file).line_col(c.span.begin).line);
  };
  // Lower every block, in order: a block's input that is an earlier block
  // has that block's output type.
  std::map<std::string, size_t> index_of;
  std::vector<Member> members(chain.size());
  std::string run_key = device->info().id + "|";  // its limits decide what fuses
  for (size_t j = 0; j < chain.size(); ++j) {
    const ast::Compute& c = *chain[j].block;
    std::vector<InputSignature> sigs;
    std::string sig_key;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      const ast::Expr& e = *c.inputs[i];
      InputSignature s;
      auto earlier = e.kind == ast::ExprKind::Name ? index_of.find(ast::as<ast::Name>(e).name) : index_of.end();
      if (earlier != index_of.end()) {
        const cir::Param& out = members[earlier->second].entry->compiled->generic().output();
        s.path = ast::path_text(e);
        s.span = e.span;
        s.rank = static_cast<int>(out.type.rank());
        s.dtype = out.type.dtype;
      } else {
        s = tensor_signature(e, chain[j].inputs[i]);
        members[j].inputs[s.path] = chain[j].inputs[i].tensor;
      }
      sig_key += s.path + ":" + std::to_string(*s.rank) + ":" + dtype_name(*s.dtype) + ";";
      sigs.push_back(std::move(s));
    }
    members[j].entry = &lowered(c, frame, sigs);
    members[j].span = c.span;
    const KernelAnnotations& a = members[j].entry->annotations;
    members[j].standalone = !a.devices.empty() || !a.parallel.empty();
    index_of[chain[j].name] = j;
    run_key += std::to_string(reinterpret_cast<uintptr_t>(&c)) + "#" + sig_key + "|";
  }

  // The plan, once per run and signatures.
  std::shared_ptr<PlannedRun> planned;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = runs_.find(run_key); it != runs_.end()) planned = it->second;
  }
  if (!planned) {
    std::vector<fusion::RunBlock> blocks;
    for (size_t j = 0; j < chain.size(); ++j)
      blocks.push_back({&members[j].entry->compiled->generic(), chain[j].name, line_of(j), members[j].standalone});
    planned = std::make_shared<PlannedRun>();
    planned->plan = fusion::plan_run(blocks, device->gpu_target());
    for (const fusion::PlannedKernel& k : planned->plan.launches)
      planned->compiled.push_back(k.fused() ? std::make_unique<CompiledCompute>(k.kernel) : nullptr);
    for (const std::string& e : planned->plan.explanations) explain(e);
    std::lock_guard<std::mutex> lock(mu_);
    runs_.emplace(run_key, planned);
  }
  // Each launch reads the blocks' own inputs and the results before it.
  std::map<std::string, Tensor> done;
  try {
    Tensor last;
    for (size_t l = 0; l < planned->plan.launches.size(); ++l) {
      const fusion::PlannedKernel& k = planned->plan.launches[l];
      std::map<std::string, Tensor> tensors = done;
      for (size_t b : k.blocks)
        for (const auto& [name, t] : members[b].inputs) tensors.emplace(name, t);
      CompiledCompute& compiled = planned->compiled[l] ? *planned->compiled[l] : *members[k.result].entry->compiled;
      last = launch_named(compiled, *device, tensors, frame, members[k.result].span);
      done[chain[k.result].name] = last;
    }
    return Value::of_tensor(last);
  } catch (const Error&) {
    run_unfused(chain, members, *device, frame);  // throws the first failing block's error
    throw;
  }
}

Tensor ComputeRunner::run_unfused(const std::vector<ChainBlock>& chain, const std::vector<Member>& members, Device& device, Frame& frame) {
  std::map<std::string, Tensor> done;
  Tensor last;
  for (size_t j = 0; j < chain.size(); ++j) {
    std::map<std::string, Tensor> inputs = members[j].inputs;
    for (const auto& [name, t] : done) inputs.emplace(name, t);
    last = launch_named(*members[j].entry->compiled, device, inputs, frame, members[j].span);
    done[chain[j].name] = last;
  }
  return last;
}

}  // namespace zyntax
