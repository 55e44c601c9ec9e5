#include "zyntax/program.hpp"

#include <cctype>
#include <cmath>
#include <mutex>
#include <utility>

#include "api/api_internal.hpp"
#include "api/bound_kernel_state.hpp"
#include "api/deferred_ops.hpp"
#include "cir/printer.hpp"
#include "driver/session.hpp"
#include "interp/direct_call.hpp"
#include "interp/host_interpreter.hpp"
#include "lower/check_program.hpp"
#include "runtime/launch.hpp"
#include "runtime/tuning_database.hpp"
#include "support/nearest_name.hpp"
#include "support/stack.hpp"

namespace zyntax {

// One compute block of the program.
struct KernelEntry {
  std::string name;
  std::unique_ptr<CompiledCompute> compiled;  // null when it cannot be lowered alone
  std::string deferred;                       // then: why
  std::vector<Kernel::Param> params;
  std::vector<Kernel::HostValue> host_values;
  // Kernel::bind's bindings, the newest last.
  struct Binding {
    const DeviceImpl* device;
    std::vector<Kernel::ArraySpec> inputs;
    std::map<std::string, HostNumber> host_values;
    std::shared_ptr<const BoundKernel> bound;
  };
  static constexpr size_t kMostBindings = 16;
  std::mutex bound_mu;
  std::vector<Binding> bound;
};

class ProgramImpl {
 public:
  explicit ProgramImpl(ComputeDevice d) : device(std::move(d)) {}
  Session session;
  ComputeDevice device;
  std::vector<std::unique_ptr<KernelEntry>> kernels;  // in source order
  LoadedModule* module = nullptr;
  // Functions run on one interpreter, one call at a time: its caches of
  // lowered blocks and fused runs last as long as the program.
  std::mutex call_mu;
  std::unique_ptr<Interpreter> interpreter;
  // Per function: its compiled code for the argument types it has run
  // compiled with, called without the interpreter (under call_mu; an entry
  // once made stays, its code lives as long as the interpreter).
  std::map<const void*, std::vector<std::unique_ptr<DirectCall>>> direct;
  std::map<const void*, const char*> last_tier;  // Function::last_tier
};

namespace {

// Runs `fn`; what goes wrong becomes a ComputeError naming `what`, an error
// located in the program's source shown as `zyntax run` shows it.
template <class F>
void located_errors(Session& session, const std::string& what, const F& fn) {
  try {
    fn();
  } catch (const Error& e) {
    DiagnosticEngine rendered(session.sources());
    rendered.report(e.diagnostic());
    throw ComputeError(what + ": " + rendered.render_all());
  } catch (const DataError& e) {
    throw ComputeError(what + ": " + e.what());
  }
}

std::unique_ptr<KernelEntry> entry_for(Session& session, CheckedKernel& k) {
  auto e = std::make_unique<KernelEntry>();
  e->name = session.kernel_name(k.node);
  if (!k.deferred.empty()) {
    e->deferred = k.deferred;
    return e;
  }
  for (const cir::Param& p : k.kernel.params) {
    if (p.role == cir::ParamRole::Input) {
      Kernel::Param param{p.name, api::element_type_of(p.type.dtype), {}};
      for (const cir::Expr& d : p.type.shape) param.shape.push_back(cir::print(d));
      e->params.push_back(std::move(param));
    } else if (p.role == cir::ParamRole::Scalar) {
      e->host_values.push_back({p.name, is_int(p.type.dtype) || p.type.dtype == DType::Bool});
    }
  }
  for (const cir::DimParam& d : k.kernel.dims)
    if (d.source == cir::DimSource::Host) e->host_values.push_back({d.name, true});
  e->compiled = std::make_unique<CompiledCompute>(std::move(k.kernel));
  return e;
}

Program compile(std::shared_ptr<ProgramImpl> impl, const std::function<LoadedModule*(Session&)>& read) {
  with_deep_stack([&] {
    Session& session = impl->session;
    LoadedModule* m = read(session);
    std::vector<CheckedKernel> kernels;
    if (!m || session.diags().has_errors() || !check_program(session, *m, &kernels))
      throw ProgramError(session.diags().render_all());
    for (CheckedKernel& k : kernels) impl->kernels.push_back(entry_for(session, k));
    impl->module = m;
  });
  return Program(std::move(impl));
}

// "the program has no kernel 'x' (did you mean 'y'?); its kernels: y, z".
ProgramError no_such(const std::string& what, const std::string& name, const std::vector<std::string>& names, const char* none) {
  std::string message = "the program has no " + what + " '" + name + "'";
  std::string near = nearest_name(name, names);
  if (!near.empty()) message += " (did you mean '" + near + "'?)";
  if (names.empty()) return ProgramError(message + "; " + none);
  message += "; its " + what + "s: ";
  for (size_t i = 0; i < names.size(); ++i) message += (i ? ", " : "") + names[i];
  return ProgramError(message);
}

std::string type_text(const Kernel::Param& p) {
  std::string s = "tensor[";
  for (const std::string& d : p.shape) s += d + ", ";
  return s + element_type_name(p.type) + "]";
}

}  // namespace

// ------------------------------------------------------------ Program

Program::Program(std::shared_ptr<ProgramImpl> impl) : impl_(std::move(impl)) {}

Program Program::load(const std::string& path, const ComputeDevice& device) {
  return compile(std::make_shared<ProgramImpl>(device), [&](Session& s) { return s.load(path, {}); });
}

Program Program::from_source(const std::string& source, const std::string& name, const ComputeDevice& device) {
  return compile(std::make_shared<ProgramImpl>(device), [&](Session& s) { return s.load_text(name, source); });
}

std::vector<std::string> Program::kernel_names() const {
  std::vector<std::string> names;
  for (const auto& k : impl_->kernels) names.push_back(k->name);
  return names;
}

Kernel Program::kernel(const std::string& name) const {
  for (const auto& k : impl_->kernels) {
    if (k->name != name) continue;
    if (!k->compiled)
      throw ProgramError("kernel '" + name + "' cannot be called alone: " + k->deferred +
                         " (declare its inputs' types: return it from a function such as `def " + name +
                         "(x: tensor[n, f32]) { return compute(x) { ... } }`)");
    return Kernel(impl_, k.get());
  }
  throw no_such("kernel", name, kernel_names(), "it has no compute blocks");
}

const ComputeDevice& Program::device() const { return impl_->device; }

std::vector<std::string> Program::function_names() const {
  std::vector<std::string> names;
  for (const ast::StmtPtr& s : impl_->module->ast.body.stmts)
    if (s->kind == ast::StmtKind::FuncDef) names.push_back(ast::as<ast::FuncDef>(*s).name);
  return names;
}

Function Program::function(const std::string& name) const {
  for (const ast::StmtPtr& s : impl_->module->ast.body.stmts)
    if (s->kind == ast::StmtKind::FuncDef && ast::as<ast::FuncDef>(*s).name == name) return Function(impl_, s.get());
  throw no_such("function", name, function_names(), "it defines no functions");
}

// ------------------------------------------------------------ Function

Function::Function(std::shared_ptr<ProgramImpl> program, const void* def) : program_(std::move(program)), def_(def) {
  const auto& d = *static_cast<const ast::FuncDef*>(def);
  name_ = d.name;
  // The parameters as the source spells them, from `name(` to its closing
  // parenthesis, each run of white space one space.
  const std::string& text = program_->session.sources().file(d.span.file).text();
  size_t open = text.find(name_ + "(", d.span.begin);
  for (size_t at = open, depth = 0; open != std::string::npos && at < text.size(); ++at) {
    char c = text[at];
    depth += c == '(' ? 1 : 0;
    if (c == ')' && --depth == 0) break;
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!signature_.empty() && signature_.back() != ' ') signature_ += ' ';
      continue;
    }
    signature_ += c;
  }
  if (open == std::string::npos)
    for (const ast::Param& p : d.params) signature_ += (signature_.empty() ? name_ + "(" : ", ") + p.name;
  signature_ += signature_.empty() ? name_ + "()" : ")";
  for (const ast::Param& p : d.params) {
    Param param;
    param.name = p.name;
    param.tensor = p.type && p.type->name == "tensor";
    if (param.tensor && !p.type->dtype.empty())
      if (std::optional<DType> t = parse_dtype(p.type->dtype)) {
        param.has_type = true;
        param.type = api::element_type_of(*t);
      }
    params_.push_back(std::move(param));
  }
}

const std::string& Function::name() const { return name_; }

std::string Function::last_tier() const {
  std::lock_guard<std::mutex> lock(program_->call_mu);
  auto it = program_->last_tier.find(def_);
  return it == program_->last_tier.end() ? "" : it->second;
}
const std::vector<Function::Param>& Function::params() const { return params_; }

const std::string& Function::signature() const { return signature_; }

namespace {

// Argument types a function keeps direct calls for (each kind of call a
// program makes is one; more go through the interpreter).
constexpr size_t kMostDirectCalls = 8;

Value host_value(const HostNumber& n) {
  return n.is_integer() ? Value::of_int(static_cast<int64_t>(n.integer())) : Value::of_float(n.value());
}

// A function's result: an array per tensor; numbers as numbers (or, for
// operator(), as 0-d arrays); bools as 0-d bool arrays.
void results_of(const DeviceImpl& dev, const Value& v, const std::string& what, bool numbers_as_arrays, std::vector<Argument>& out) {
  auto array = [&](Tensor t) {
    std::vector<size_t> shape;
    for (int64_t d : t.shape()) shape.push_back(static_cast<size_t>(d));
    out.emplace_back(Array(api::wrap(dev, t.reshaped({t.numel()})), std::move(shape)));
  };
  switch (v.kind) {
    case Value::Kind::None: return;
    case Value::Kind::Tensor: return array(v.tensor);
    case Value::Kind::Int:
      if (!numbers_as_arrays) return out.emplace_back(HostNumber(static_cast<long long>(v.i))), void();
      return array(Tensor::scalar(Scalar::of_int(v.i)));
    case Value::Kind::Bool: return array(Tensor::scalar(Scalar::of_bool(v.b)));
    case Value::Kind::Float:
      if (!numbers_as_arrays) return out.emplace_back(HostNumber(v.f)), void();
      return array(Tensor::scalar(Scalar::of_float(v.f, DType::F64)));
    case Value::Kind::List:
    case Value::Kind::Tuple:
      for (const Value& item : *v.items) {
        if (item.kind != Value::Kind::Tensor && !item.is_number())
          throw ComputeError(what + " returns a " + type_name(v) + " holding a " + type_name(item) + "; only tensors and numbers come back as arrays");
        results_of(dev, item, what, numbers_as_arrays, out);
      }
      return;
    default: throw ComputeError(what + " returns a " + type_name(v) + "; only tensors, numbers and tuples of them come back as arrays");
  }
}

}  // namespace

std::vector<Array> Function::operator()(const std::vector<Argument>& args, const std::map<std::string, HostNumber>& keywords) const {
  std::vector<Array> arrays;
  for (Argument& r : run(args, keywords, /*numbers_as_arrays=*/true)) arrays.push_back(r.array());
  return arrays;
}

std::vector<Argument> Function::call(const std::vector<Argument>& args, const std::map<std::string, HostNumber>& keywords) const {
  return run(args, keywords, /*numbers_as_arrays=*/false);
}

std::vector<Argument> Function::run(const std::vector<Argument>& args, const std::map<std::string, HostNumber>& keywords,
                                    bool numbers_as_arrays) const {
  ProgramImpl& p = *program_;
  if (!p.device.impl()) throw ComputeError("function " + name_ + ": the device was moved from");
  const DeviceImpl& dev = *p.device.impl();
  std::string what = "function " + name_;
  if (args.size() > params_.size())
    throw ProgramError(what + " takes " + std::to_string(params_.size()) + " argument" + (params_.size() == 1 ? "" : "s") + ", got " +
                       std::to_string(args.size()) + ": " + signature());
  std::vector<Value> values;
  for (size_t i = 0; i < args.size(); ++i) {
    const Param& param = params_[i];
    if (args[i].is_array()) {
      const Array& a = args[i].array();
      if (!a.buffer().impl()) throw ShapeError(what + ": argument " + param.name + " is an empty array");
      const Tensor& t = api::tensor_of(dev, a.buffer(), what.c_str(), param.name.c_str());
      values.push_back(Value::of_tensor(t.reshaped(api::to_shape(a.shape()))));
    } else {
      values.push_back(host_value(args[i].number()));
    }
  }
  auto located = [&](const auto& run) { located_errors(p.session, what, run); };
  std::vector<Argument> out;
  if (keywords.empty()) {
    const DirectCall* direct = nullptr;
    {
      std::lock_guard<std::mutex> lock(p.call_mu);
      for (const auto& d : p.direct[def_])
        if (d->takes(values)) direct = d.get();
      if (direct) p.last_tier[def_] = "direct";
    }
    if (direct) {
      located([&] { results_of(dev, direct->run(values, Interpreter::max_call_depth()), what, numbers_as_arrays, out); });
      return out;
    }
  }
  CallArgs call;
  call.positional = values;
  call.positional_spans.resize(values.size());
  for (const auto& [name, n] : keywords) {
    call.keywords.push_back({name, host_value(n)});
    call.keyword_spans.push_back({});
  }
  std::lock_guard<std::mutex> lock(p.call_mu);
  if (!p.interpreter) {
    RunOptions options;
    options.device = p.device.id();
    p.interpreter = std::make_unique<Interpreter>(p.session, options);
  }
  // Compiled now (whether the call returned or failed a check): the next
  // calls like this one need no interpreter.
  auto remember = [&] {
    const host::HostCode* code = p.interpreter->last_call_compiled();
    p.last_tier[def_] = code ? "compiled" : "interpreted";
    std::vector<std::unique_ptr<DirectCall>>& known = p.direct[def_];
    if (code && keywords.empty() && known.size() < kMostDirectCalls)
      if (std::unique_ptr<DirectCall> d = DirectCall::make(*static_cast<const ast::FuncDef*>(def_), values, *code))
        known.push_back(std::move(d));
  };
  try {
    located([&] {
      Value result = p.interpreter->call(*p.module, name_, std::move(call));
      results_of(dev, result, what, numbers_as_arrays, out);
    });
  } catch (...) {
    remember();
    throw;
  }
  remember();
  return out;
}

// ------------------------------------------------------------ Kernel

Kernel::Kernel(std::shared_ptr<ProgramImpl> program, KernelEntry* entry) : program_(std::move(program)), entry_(entry) {}

const std::string& Kernel::name() const { return entry_->name; }
const std::vector<Kernel::Param>& Kernel::params() const { return entry_->params; }
const std::vector<Kernel::HostValue>& Kernel::host_values() const { return entry_->host_values; }

std::string Kernel::signature() const {
  std::string s = entry_->name + "(";
  for (size_t i = 0; i < entry_->params.size(); ++i)
    s += (i ? ", " : "") + entry_->params[i].name + ": " + type_text(entry_->params[i]);
  for (const HostValue& h : entry_->host_values) s += std::string(", ") + h.name + ": " + (h.integer ? "int" : "float");
  return s + ")";
}

Array Kernel::operator()(const std::vector<Array>& inputs, const std::map<std::string, HostNumber>& host_values) const {
  return run(program_->device, inputs, host_values);
}

namespace {

// What a call binds: the dims and scalars of the kernel for its arguments'
// element types and shapes, every check made (the messages built only when
// one fails: this runs at every call).
struct BoundCall {
  std::map<std::string, int64_t> host_dims;
  std::map<std::string, Scalar> scalars;
};

BoundCall bind_call(const Kernel& kernel, const KernelEntry& entry, const std::vector<Kernel::ArraySpec>& args,
                    const std::map<std::string, HostNumber>& host_values) {
  const std::string& name = entry.name;
  const std::vector<Kernel::Param>& params = entry.params;
  if (args.size() != params.size())
    throw ShapeError("kernel " + name + " takes " + std::to_string(params.size()) + " array" +
                     (params.size() == 1 ? "" : "s") + ", got " + std::to_string(args.size()) + ": " + kernel.signature());
  for (size_t i = 0; i < args.size(); ++i) {
    const Kernel::ArraySpec& a = args[i];
    const Kernel::Param& p = params[i];
    auto arg = [&] { return "kernel " + name + ": argument " + p.name; };
    if (a.type != p.type)
      throw ShapeError(arg() + " is " + element_type_name(a.type) + " " + api::shape_text(a.shape) +
                       ", but the kernel takes " + type_text(p));
    if (a.shape.size() != p.shape.size())
      throw ShapeError(arg() + " has shape " + api::shape_text(a.shape) + " (" + std::to_string(a.shape.size()) +
                       " axes), but the kernel takes " + type_text(p));
  }
  BoundCall bound;
  const cir::Kernel& k = entry.compiled->generic();
  for (const auto& [given, value] : host_values) {
    const Kernel::HostValue* h = nullptr;
    for (const Kernel::HostValue& v : entry.host_values)
      if (v.name == given) h = &v;
    if (!h) {
      std::string reads;
      for (const Kernel::HostValue& v : entry.host_values) reads += (reads.empty() ? "" : ", ") + v.name;
      throw ShapeError("kernel " + name + " reads no host value '" + given + "' (" +
                       (reads.empty() ? std::string("it reads none") : "it reads " + reads) + ")");
    }
    // A float standing for an integer must be one, and within 2^53, where
    // every integer is a double; an integer given as one is exact.
    double v = value.value();
    if (h->integer && !value.is_integer() && (v != std::floor(v) || std::fabs(v) > 9.007199254740992e15))
      throw ShapeError("kernel " + name + ": host value '" + given + "' is an integer, not " + Scalar::of_float(v, DType::F64).str() +
                       (std::fabs(v) > 9.007199254740992e15 && v == std::floor(v) ? " (a float past 2^53: give it as an integer)" : ""));
  }
  for (const Kernel::HostValue& h : entry.host_values) {
    auto it = host_values.find(h.name);
    if (it == host_values.end())
      throw ShapeError("kernel " + name + " needs the host value '" + h.name + "' (" + (h.integer ? "an integer" : "a number") +
                       "), given by name: " + kernel.signature());
    bool dim = false;
    for (const cir::DimParam& d : k.dims) dim = dim || (d.source == cir::DimSource::Host && d.name == h.name);
    const HostNumber& n = it->second;
    // Integral and within 2^53 when not given as an integer (checked above).
    auto as_int = [&] { return n.is_integer() ? static_cast<int64_t>(n.integer()) : static_cast<int64_t>(n.value()); };
    if (dim) bound.host_dims[h.name] = as_int();
    else bound.scalars[h.name] = h.integer ? Scalar::of_int(as_int()) : Scalar::of_float(n.value(), DType::F64);
  }
  return bound;
}

}  // namespace

Kernel::ArraySpec Kernel::result_spec(const std::vector<ArraySpec>& inputs,
                                      const std::map<std::string, HostNumber>& host_values) const {
  BoundCall bound = bind_call(*this, *entry_, inputs, host_values);
  const cir::Kernel& k = entry_->compiled->generic();
  std::vector<TensorSpec> specs;
  for (const ArraySpec& a : inputs) specs.push_back({api::dtype_of(a.type), api::to_shape(a.shape)});
  std::map<std::string, int64_t> dims;
  try {
    dims = bind_dimensions(k, specs, bound.host_dims);
  } catch (const DataError& e) {
    throw ShapeError("kernel " + entry_->name + ": " + e.what());
  }
  std::optional<Shape> shape = output_shape(k, dims);
  if (!shape)
    throw ShapeError("kernel " + entry_->name + ": the size of its result is known only once it runs (" +
                     signature() + ")");
  ArraySpec out;
  out.type = api::element_type_of(k.output().type.dtype);
  for (int64_t d : *shape) out.shape.push_back(static_cast<size_t>(d));
  return out;
}

Array Kernel::run(const ComputeDevice& device, const std::vector<Array>& inputs,
                  const std::map<std::string, HostNumber>& host_values) const {
  if (!device.impl()) throw ComputeError("kernel " + entry_->name + ": the device was moved from");
  const std::vector<Param>& params = entry_->params;
  std::vector<ArraySpec> specs;
  specs.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Array& a = inputs[i];
    if (!a.buffer().impl())
      throw ShapeError("kernel " + entry_->name + ": argument " + (i < params.size() ? params[i].name : std::to_string(i)) +
                       " is an empty array");
    specs.push_back({a.element_type(), a.shape()});
  }
  return bind(device, specs, host_values)->run(inputs);
}

namespace {

bool same_numbers(const std::map<std::string, HostNumber>& a, const std::map<std::string, HostNumber>& b) {
  if (a.size() != b.size()) return false;
  for (auto i = a.begin(), j = b.begin(); i != a.end(); ++i, ++j)
    if (i->first != j->first || i->second.is_integer() != j->second.is_integer() ||
        (i->second.is_integer() ? i->second.integer() != j->second.integer() : i->second.value() != j->second.value()))
      return false;
  return true;
}

bool same_specs(const std::vector<Kernel::ArraySpec>& a, const std::vector<Kernel::ArraySpec>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].type != b[i].type || a[i].shape != b[i].shape) return false;
  return true;
}

}  // namespace

std::shared_ptr<const BoundKernel> Kernel::bind(const ComputeDevice& device, const std::vector<ArraySpec>& inputs,
                                                const std::map<std::string, HostNumber>& host_values) const {
  if (!device.impl()) throw ComputeError("kernel " + entry_->name + ": the device was moved from");
  const DeviceImpl* dev = device.impl().get();
  {
    std::lock_guard<std::mutex> lock(entry_->bound_mu);
    for (const KernelEntry::Binding& b : entry_->bound)
      if (b.device == dev && same_specs(b.inputs, inputs) && same_numbers(b.host_values, host_values)) return b.bound;
  }
  auto state = std::make_unique<BoundKernel::State>(device);
  state->name = entry_->name;
  state->inputs = inputs;
  BoundCall bound = bind_call(*this, *entry_, inputs, host_values);
  std::vector<TensorSpec> specs;
  specs.reserve(inputs.size());
  for (const ArraySpec& a : inputs) specs.push_back({api::dtype_of(a.type), api::to_shape(a.shape)});
  std::map<std::string, int64_t> dims;
  try {
    dims = bind_dimensions(entry_->compiled->generic(), specs, bound.host_dims);  // sizes that disagree: before anything runs
  } catch (const DataError& e) {
    throw ShapeError("kernel " + entry_->name + ": " + e.what());
  }
  std::shared_ptr<const CompiledCompute::Specialized> special;
  located_errors(program_->session, "kernel " + entry_->name, [&] { special = entry_->compiled->specialize(dims); });
  const cir::Param& out = special->kernel.output();
  state->result.type = api::element_type_of(out.type.dtype);
  bool sized = true;
  for (const cir::Expr& d : out.type.shape)
    if (const auto* n = d.as<cir::IntImm>()) state->result.shape.push_back(static_cast<size_t>(n->value));
    else sized = false;
  state->sized = sized;
  state->result_bytes = sized ? api::product(state->result.shape) * dtype_size(out.type.dtype) : 0;
  const DeviceImpl& impl = *device.impl();
  // With tuning on, calls take the general path: its first run of each
  // kernel is the one the tuner times (runtime/tuner).
  if (sized && impl.devices.size() == 1 && tune_mode() != TuneMode::On) {
    state->queue = &api::DeferredOps::of(*impl.device);
    located_errors(program_->session, "kernel " + entry_->name,
                   [&] { state->launch = impl.device->prepare_host_launch(special->kernel, special->hash, bound.scalars); });
  }
  // The general path: the device's run() with its fallbacks, the profiler
  // and errors located in the source.
  // The program is held weakly: the binding is kept in the program's own
  // kernel entry, which must not keep the program alive.
  state->general = [weak = std::weak_ptr<ProgramImpl>(program_), entry = entry_, device, bound = std::move(bound),
                    dims = std::move(dims), name = entry_->name](const std::vector<Array>& inputs) {
    std::shared_ptr<ProgramImpl> program = weak.lock();
    if (!program) throw ComputeError("kernel " + name + ": its program is gone");
    const DeviceImpl& dev = *device.impl();
    std::vector<Tensor> tensors;
    tensors.reserve(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Array& a = inputs[i];
      const Tensor& t = a.buffer().impl()->device == dev.description.id
                            ? a.buffer().impl()->value()
                            : api::tensor_of(dev, a.buffer(), ("kernel " + name).c_str(), entry->params[i].name.c_str());
      tensors.push_back(t.reshaped(api::to_shape(a.shape())));
    }
    Tensor out;
    located_errors(program->session, "kernel " + name,
                   [&] { out = api::launch_compiled(dev, *entry->compiled, tensors, bound.host_dims, bound.scalars, &dims); });
    std::vector<size_t> shape;
    for (int64_t d : out.shape()) shape.push_back(static_cast<size_t>(d));
    return Array(api::wrap(dev, std::move(out)), std::move(shape));
  };
  auto made = std::make_shared<const BoundKernel>(std::move(state));
  std::lock_guard<std::mutex> lock(entry_->bound_mu);
  std::vector<KernelEntry::Binding>& kept = entry_->bound;
  if (kept.size() >= KernelEntry::kMostBindings) kept.erase(kept.begin());  // the oldest goes
  kept.push_back({dev, inputs, host_values, made});
  return made;
}

}  // namespace zyntax
