#include "interp/compute_runner.hpp"

#include "backends/registry.hpp"
#include "fusion/block_fusion.hpp"
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
  auto line_of = [&](const ast::Compute& c) {
    return std::to_string(session_.sources().file(c.span.file).line_col(c.span.begin).line);
  };
  std::vector<Member> members;            // the group being fused
  cir::Kernel group;                      // their kernel
  std::map<std::string, Tensor> tensors;  // its inputs by name
  std::string key;                        // its members and their signatures
  Tensor carried;                         // a finished group's result
  auto finish = [&]() {
    if (members.size() > 1) {
      std::string lines;
      for (const Member& m : members) lines += (lines.empty() ? "" : ", ") + line_of(*chain[m.index].block);
      explain("the blocks at lines " + lines + " run as one kernel, " + group.name);
    }
    return launch_group(members, group, key, tensors, *device, frame);
  };
  for (size_t j = 0; j < chain.size(); ++j) {
    const ChainBlock& cb = chain[j];
    const ast::Compute& c = *cb.block;
    Member m;
    m.index = j;
    m.span = c.span;
    std::vector<InputSignature> sigs;
    std::string sig_key;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      const ast::Expr& e = *c.inputs[i];
      InputSignature s;
      s.path = ast::path_text(e);
      s.span = e.span;
      bool link = j > 0 && e.kind == ast::ExprKind::Name && ast::as<ast::Name>(e).name == cb.link;
      if (link && !members.empty()) {
        s.rank = static_cast<int>(group.output().type.rank());
        s.dtype = group.output().type.dtype;
        m.link_path = s.path;
      } else {
        const Value& v = link ? Value::of_tensor(carried) : cb.inputs[i];
        if (v.kind != Value::Kind::Tensor)
          throw Error(e.span, "compute inputs must be tensors, but '" + s.path + "' is " + type_name(v));
        s.rank = static_cast<int>(v.tensor.rank());
        s.dtype = v.tensor.dtype();
        m.inputs[s.path] = v.tensor;
      }
      sig_key += s.path + ":" + std::to_string(*s.rank) + ":" + dtype_name(*s.dtype) + ";";
      sigs.push_back(std::move(s));
    }
    m.entry = &lowered(c, frame, sigs);
    const KernelAnnotations& a = m.entry->annotations;
    std::string why;
    if (!a.devices.empty() || !a.parallel.empty()) why = "it names its device";
    if (!members.empty()) {
      std::string pair = "line " + line_of(c) + " and the block before it (line " + line_of(*chain[j - 1].block) + ")";
      if (why.empty()) {
        auto fused = fusion::fuse_producer(group, m.entry->compiled->generic(), m.link_path);
        if (cir::Kernel* k = std::get_if<cir::Kernel>(&fused)) {
          group = std::move(*k);
          for (const auto& [name, t] : m.inputs) tensors.emplace(name, t);
          key += "|" + std::to_string(reinterpret_cast<uintptr_t>(&c)) + "#" + sig_key;
          members.push_back(std::move(m));
          continue;
        }
        why = std::get<std::string>(fused);
      }
      explain("not fused: " + pair + ": " + why);
      carried = finish();
      m.inputs[m.link_path] = carried;
      m.link_path.clear();
    }
    group = m.entry->compiled->generic();
    tensors = m.inputs;
    key = std::to_string(reinterpret_cast<uintptr_t>(&c)) + "#" + sig_key;
    members = {std::move(m)};
  }
  return Value::of_tensor(finish());
}

Tensor ComputeRunner::launch_group(const std::vector<Member>& members, const cir::Kernel& fused, const std::string& key,
                                   const std::map<std::string, Tensor>& tensors, Device& device, Frame& frame) {
  if (members.size() == 1)
    return launch_named(*members[0].entry->compiled, device, tensors, frame, members[0].span);
  CompiledCompute* compiled = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::unique_ptr<CompiledCompute>& slot = fused_[key];
    if (!slot) slot = std::make_unique<CompiledCompute>(fused);
    compiled = slot.get();
  }
  try {
    return launch_named(*compiled, device, tensors, frame, members.back().span);
  } catch (const Error&) {
    // Block by block, as unfused: the first to fail reports itself.
    Tensor last;
    for (const Member& m : members) {
      std::map<std::string, Tensor> inputs = m.inputs;
      if (!m.link_path.empty()) inputs[m.link_path] = last;
      last = launch_named(*m.entry->compiled, device, inputs, frame, m.span);
    }
    throw;
  }
}

}  // namespace zyntax
