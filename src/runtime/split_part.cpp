#include "runtime/split_part.hpp"

#include "cir/hash.hpp"

namespace zyntax {

LaunchPart launch_part(CompiledCompute& compiled, Device& device, SplitMode mode, const std::vector<Tensor>& inputs,
                       const std::map<std::string, int64_t>& host_dims, const std::map<std::string, Scalar>& scalars, int part,
                       int parts) {
  std::map<std::string, int64_t> dims = bind_dimensions(compiled.generic(), inputs, host_dims);
  std::shared_ptr<const CompiledCompute::Specialized> s = compiled.specialize(dims);
  LaunchPart r;
  r.whole_shape = specialized_output_shape(s->kernel);
  auto whole = [&] {
    r.out = device.run(s->kernel, s->hash, inputs, scalars);
    r.slab = Slab{};
    return r;
  };
  std::optional<SplitPlan> plan = plan_split(s->kernel, mode);
  if (!plan || plan->trips < 2 || parts < 2) return whole();
  // Part d runs iterations [trips * d / parts, trips * (d + 1) / parts) and
  // owns the output from its first iteration's index to the next part's
  // (the last, to the end of the axis): what a stepped loop skips is zero
  // in every part alike.
  auto first_iteration = [&](int64_t d) { return plan->trips * d / parts; };
  auto start_index = [&](int64_t d) { return plan->lo + first_iteration(d) * plan->step; };
  int64_t extent = r.whole_shape[static_cast<size_t>(plan->axis)];
  int64_t owned_end = part + 1 < parts ? start_index(part + 1) : extent;
  int64_t a = first_iteration(part), b = first_iteration(part + 1);
  // Whether a share scatters is the kernel's property, not the range's:
  // every part decides alike.
  std::optional<ScatteredShare> share = scatter_share(s->kernel, *plan, a, b, owned_end);
  if (!share) return whole();
  r.slab = share->out;
  r.first = start_index(0);
  if (a == b) {  // more parts than iterations: this one has none
    Shape shape = r.whole_shape;
    shape[static_cast<size_t>(r.slab.axis)] = r.slab.hi - r.slab.lo;
    r.out = Tensor::zeros(s->kernel.output().type.dtype, shape);
    return r;
  }
  std::vector<Tensor> slabs;
  for (size_t i = 0; i < inputs.size(); ++i) slabs.push_back(take_slab(inputs[i], share->inputs[i]));
  r.out = device.run(share->kernel, cir::hash_kernel(share->kernel), slabs, scalars);
  return r;
}

}  // namespace zyntax
