#include "runtime/split_launch.hpp"

#include <algorithm>
#include <future>

#include "cir/hash.hpp"
#include "cir/visitor.hpp"
#include "runtime/split_scatter.hpp"

namespace zyntax {

namespace {

// The parallel loops with constant bounds, outermost first, and every store
// to the output.
class SplitCandidates : public cir::IRVisitor {
 public:
  explicit SplitCandidates(std::string out) : out_(std::move(out)) {}
  std::vector<const cir::For*> loops;
  std::vector<const cir::Store*> stores;
  bool yields = false, atomics = false;
  using IRVisitor::visit;

 protected:
  void visit(const cir::For* op) override {
    if (op->loop_kind == cir::LoopKind::Parallel && op->lo.as<cir::IntImm>() && op->hi.as<cir::IntImm>() &&
        op->step.as<cir::IntImm>() && op->step.as<cir::IntImm>()->value > 0)
      loops.push_back(op);
    IRVisitor::visit(op);
  }
  void visit(const cir::Store* op) override {
    if (op->buffer == out_) stores.push_back(op);
    IRVisitor::visit(op);
  }
  void visit(const cir::Yield* op) override {
    yields = true;
    IRVisitor::visit(op);
  }
  void visit(const cir::Atomic* op) override {
    atomics = true;  // updates anywhere in the output: not owned by a range
    IRVisitor::visit(op);
  }

 private:
  std::string out_;
};

// Every store indexes `axis` of the output with exactly `var`.
bool stores_index(const std::vector<const cir::Store*>& stores, const std::string& var, int axis, int rank) {
  if (stores.empty()) return false;
  for (const cir::Store* s : stores) {
    if (static_cast<int>(s->axes.size()) != rank) return false;
    const cir::AxisSel& a = s->axes[axis];
    auto v = a.is_slice ? nullptr : a.index.as<cir::Var>();
    if (!v || v->name != var) return false;
  }
  return true;
}

}  // namespace

Shape specialized_output_shape(const cir::Kernel& k) {
  Shape shape;
  for (const cir::Expr& d : k.output().type.shape) shape.push_back(d.as<cir::IntImm>()->value);
  return shape;
}

std::optional<SplitPlan> plan_split(const cir::Kernel& k, SplitMode mode) {
  if (k.kind == cir::KernelKind::Reduce || !k.dims.empty()) return std::nullopt;
  const cir::Param& out = k.output();
  int rank = static_cast<int>(out.type.shape.size());
  if (rank == 0) return std::nullopt;
  SplitCandidates c(out.name);
  for (const cir::Stmt& s : k.body) c.include(s);
  if (c.yields || c.atomics || c.loops.empty()) return std::nullopt;
  int axis = mode == SplitMode::Data ? 0 : rank - 1;
  // Data: the outermost parallel loop only; model: any parallel loop over the last axis.
  std::vector<const cir::For*> loops = c.loops;
  if (mode == SplitMode::Data) loops.resize(1);
  for (const cir::For* f : loops) {
    if (!stores_index(c.stores, f->var, axis, rank)) continue;
    SplitPlan p;
    p.var = f->var;
    p.axis = axis;
    p.lo = f->lo.as<cir::IntImm>()->value;
    p.step = f->step.as<cir::IntImm>()->value;
    int64_t hi = f->hi.as<cir::IntImm>()->value;
    p.trips = hi > p.lo ? (hi - p.lo + p.step - 1) / p.step : 0;
    // Written indices must stay inside the output's axis for the slabs to be its own.
    auto extent = out.type.shape[axis].as<cir::IntImm>();
    if (!extent || p.lo < 0 || (p.trips > 0 && p.lo + (p.trips - 1) * p.step >= extent->value)) continue;
    return p;
  }
  return std::nullopt;
}

Tensor launch_split(CompiledCompute& compiled, const std::vector<Device*>& devices, SplitMode mode,
                    const std::vector<Tensor>& inputs, const std::map<std::string, int64_t>& host_dims,
                    const std::map<std::string, Scalar>& scalars, std::string* how) {
  std::map<std::string, int64_t> dims = bind_dimensions(compiled.generic(), inputs, host_dims);
  std::shared_ptr<const CompiledCompute::Specialized> s = compiled.specialize(dims);
  // Devices that write into host memory share the kernel as they compile
  // it (the ranges of its outer parallel loop, as their own threads do), so
  // each element is computed exactly as on one device.
  if (devices.size() > 1 && s->kernel.kind != cir::KernelKind::Reduce) {
    Tensor out = Tensor::zeros(s->kernel.output().type.dtype, specialized_output_shape(s->kernel));
    int parts = static_cast<int>(devices.size());
    std::vector<std::future<Device::Share>> shares;
    for (int d = 0; d < parts; ++d)
      shares.push_back(std::async(std::launch::async, [&, d] {
        return devices[d]->run_share(s->kernel, s->hash, inputs, scalars, d, parts, out);
      }));
    std::vector<Device::Share> results;
    for (auto& f : shares) results.push_back(f.get());
    bool done = std::all_of(results.begin(), results.end(), [](Device::Share r) { return r == Device::Share::Done; });
    bool whole = std::any_of(results.begin(), results.end(), [](Device::Share r) { return r == Device::Share::RunWhole; });
    if (done) {
      if (how) *how = "shared " + std::to_string(parts) + " ways by the compiled kernel's parallel loop";
      return out;
    }
    if (whole) {  // a runtime check failed in a share: one device reports the error exactly
      if (how) *how = "ran whole on " + devices[0]->info().id + " (a runtime check failed)";
      return devices[0]->run(s->kernel, s->hash, inputs, scalars);
    }
  }
  std::optional<SplitPlan> plan = devices.size() > 1 ? plan_split(s->kernel, mode) : std::nullopt;
  if (!plan || plan->trips < 2) {
    if (how) *how = "ran whole on " + devices[0]->info().id + " (its output is not indexed by a parallel loop it could share out)";
    return devices[0]->run(s->kernel, s->hash, inputs, scalars);
  }
  size_t parts = std::min<size_t>(devices.size(), static_cast<size_t>(plan->trips));
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (size_t d = 0; d < parts; ++d)
    ranges.emplace_back(plan->trips * static_cast<int64_t>(d) / static_cast<int64_t>(parts),
                        plan->trips * static_cast<int64_t>(d + 1) / static_cast<int64_t>(parts));
  // Each part owns the indices from its first iteration's to the next
  // part's (the last to the end of the axis): what a stepped loop skips is
  // zero in every output alike.
  int64_t axis_extent = specialized_output_shape(s->kernel)[static_cast<size_t>(plan->axis)];
  auto owned_end = [&](size_t d) { return d + 1 < parts ? plan->lo + ranges[d + 1].first * plan->step : axis_extent; };

  // Each device given only the slabs of the tensors its part reads and writes.
  std::vector<ScatteredShare> scattered;
  for (size_t d = 0; d < parts; ++d)
    if (std::optional<ScatteredShare> sc = scatter_share(s->kernel, *plan, ranges[d].first, ranges[d].second, owned_end(d)))
      scattered.push_back(std::move(*sc));
  if (scattered.size() < parts) {
    if (how) *how = "ran whole on " + devices[0]->info().id + " (the kernel reads its output other than at " + plan->var + ")";
    return devices[0]->run(s->kernel, s->hash, inputs, scalars);
  }
  std::vector<std::future<Tensor>> runs;
  for (size_t d = 0; d < parts; ++d) {
    runs.push_back(std::async(std::launch::async, [&, d] {
      const ScatteredShare& share = scattered[d];
      std::vector<Tensor> slabs;
      for (size_t i = 0; i < inputs.size(); ++i) slabs.push_back(take_slab(inputs[i], share.inputs[i]));
      return devices[d]->run(share.kernel, cir::hash_kernel(share.kernel), slabs, scalars);
    }));
  }
  std::vector<Tensor> outs;
  for (auto& r : runs) outs.push_back(r.get());  // rethrows the first device's error
  Tensor result = Tensor::zeros(s->kernel.output().type.dtype, specialized_output_shape(s->kernel));
  for (size_t d = 0; d < parts; ++d) put_slab(outs[d], result, scattered[d].out);
  if (how) {
    std::string sliced;
    for (size_t i = 0; i < inputs.size(); ++i)
      if (!scattered[0].inputs[i].whole()) sliced += std::string(sliced.empty() ? "" : ", ") + s->kernel.params[i].name;
    *how = "split " + std::to_string(parts) + " ways along " + plan->var + ", each device given its slabs of " +
           (sliced.empty() ? "" : sliced + " and ") + "the output";
  }
  return result;
}

}  // namespace zyntax
