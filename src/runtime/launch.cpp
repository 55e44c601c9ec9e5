#include "runtime/launch.hpp"

#include "cir/hash.hpp"
#include "cir/pass_manager.hpp"
#include "cir/passes/simplify.hpp"
#include "cir/passes/specialize.hpp"
#include "support/stack.hpp"
#include "cir/printer.hpp"
#include "cir/substitute.hpp"

namespace zyntax {

namespace {

std::string where_bound(const cir::Kernel& k, const cir::DimParam& d, const std::vector<TensorSpec>& inputs,
                        const std::vector<const cir::Param*>& params) {
  if (d.source == cir::DimSource::Host) return d.name + " is the host variable '" + d.name + "'";
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i]->name == d.input)
      return d.name + " is axis " + std::to_string(d.axis) + " of input '" + d.input + "', shape " +
             shape_str(inputs[i].shape);
  return d.name;
}

}  // namespace

std::map<std::string, int64_t> bind_dimensions(const cir::Kernel& k, const std::vector<Tensor>& inputs,
                                               const std::map<std::string, int64_t>& host_dims) {
  std::vector<TensorSpec> specs;
  specs.reserve(inputs.size());
  for (const Tensor& t : inputs) specs.push_back({t.dtype(), t.shape()});
  return bind_dimensions(k, specs, host_dims);
}

std::optional<Shape> output_shape(const cir::Kernel& k, const std::map<std::string, int64_t>& dims) {
  std::map<std::string, cir::Expr> values;
  for (const auto& [name, v] : dims) values[name] = cir::i64(v);
  Shape shape;
  for (const cir::Expr& extent : k.output().type.shape) {
    cir::Expr e = cir::simplify(cir::substitute(extent, values));
    auto n = e.as<cir::IntImm>();
    if (!n) return std::nullopt;
    shape.push_back(n->value);
  }
  return shape;
}

std::map<std::string, int64_t> bind_dimensions(const cir::Kernel& k, const std::vector<TensorSpec>& inputs,
                                               const std::map<std::string, int64_t>& host_dims) {
  std::vector<const cir::Param*> params;
  for (const cir::Param& p : k.params)
    if (p.role == cir::ParamRole::Input) params.push_back(&p);
  if (params.size() != inputs.size())
    throw DataError("compute '" + k.name + "' takes " + std::to_string(params.size()) + " inputs, got " +
                    std::to_string(inputs.size()));
  for (size_t i = 0; i < params.size(); ++i) {
    if (inputs[i].dtype != params[i]->type.dtype)
      throw DataError("compute '" + k.name + "': input '" + params[i]->name + "' is " + dtype_name(inputs[i].dtype) +
                      ", but the kernel was compiled for " + dtype_name(params[i]->type.dtype));
    if (static_cast<size_t>(inputs[i].shape.size()) != params[i]->type.rank())
      throw DataError("compute '" + k.name + "': input '" + params[i]->name + "' has " + std::to_string(inputs[i].shape.size()) +
                      " axes (shape " + shape_str(inputs[i].shape) + ") but the kernel uses it with " +
                      std::to_string(params[i]->type.rank()));
  }
  std::map<std::string, int64_t> dims;
  for (const cir::DimParam& d : k.dims) {
    if (d.source == cir::DimSource::Host) {
      auto it = host_dims.find(d.name);
      if (it == host_dims.end()) throw DataError("compute '" + k.name + "': no value for host dimension '" + d.name + "'");
      dims[d.name] = it->second;
      continue;
    }
    for (size_t i = 0; i < params.size(); ++i)
      if (params[i]->name == d.input) dims[d.name] = inputs[i].shape[static_cast<size_t>(d.axis)];
  }
  // Every input extent must agree with the dimension its type names. A
  // number or a dimension's name (nearly every extent) is compared as it
  // is: this runs at every launch.
  std::map<std::string, cir::Expr> values;
  for (size_t i = 0; i < params.size(); ++i) {
    for (size_t a = 0; a < params[i]->type.rank(); ++a) {
      const cir::Expr& extent = params[i]->type.shape[a];
      if (auto imm = extent.as<cir::IntImm>(); imm && imm->value == inputs[i].shape[a]) continue;
      if (auto var = extent.as<cir::Var>()) {
        auto it = dims.find(var->name);
        if (it != dims.end() && it->second == inputs[i].shape[a]) continue;
      }
      if (values.empty())
        for (const auto& [name, v] : dims) values[name] = cir::i64(v);
      cir::Expr v = cir::simplify(cir::substitute(extent, values));
      auto n = v.as<cir::IntImm>();
      int64_t actual = inputs[i].shape[a];
      if (n && n->value == actual) continue;
      std::string msg = "compute '" + k.name + "': input '" + params[i]->name + "' has shape " +
                        shape_str(inputs[i].shape) + ", but its axis " + std::to_string(a) + " must be " +
                        cir::print(extent);
      if (n) msg += " = " + std::to_string(n->value);
      if (auto var = extent.as<cir::Var>())
        for (const cir::DimParam& d : k.dims)
          if (d.name == var->name) msg += " (" + where_bound(k, d, inputs, params) + ")";
      throw DataError(msg);
    }
  }
  return dims;
}

namespace {

LaunchObserver& launch_observer() {
  static LaunchObserver observer;
  return observer;
}

}  // namespace

std::shared_ptr<const CompiledCompute::Specialized> CompiledCompute::specialize(const std::map<std::string, int64_t>& dims) {
  std::vector<int64_t> key;
  for (const cir::DimParam& d : generic_.dims) key.push_back(dims.at(d.name));
  std::lock_guard<std::mutex> lock(mu_);
  auto it = specialized_.find(key);
  if (it != specialized_.end()) return it->second;
  auto s = std::make_shared<Specialized>();
  with_deep_stack([&] {
    s->kernel = cir::run_passes(generic_, "generic kernel",
                                {{"specialize", [&](const cir::Kernel& k) { return cir::specialize(k, dims); }}});
    s->hash = cir::hash_kernel(s->kernel);
  });
  specialized_[key] = s;
  return s;
}

Tensor CompiledCompute::launch(Device& device, const std::vector<Tensor>& inputs,
                               const std::map<std::string, int64_t>& host_dims,
                               const std::map<std::string, Scalar>& scalars) {
  return launch_bound(device, inputs, bind_dimensions(generic_, inputs, host_dims), scalars);
}

Tensor CompiledCompute::launch_bound(Device& device, const std::vector<Tensor>& inputs,
                                     const std::map<std::string, int64_t>& dims,
                                     const std::map<std::string, Scalar>& scalars) {
  std::shared_ptr<const Specialized> s = specialize(dims);
  if (launch_observer()) launch_observer()(s->kernel, s->hash);
  return device.run(s->kernel, s->hash, inputs, scalars);
}

void set_launch_observer(LaunchObserver observer) { launch_observer() = std::move(observer); }

bool launches_observed() { return static_cast<bool>(launch_observer()); }

}  // namespace zyntax
