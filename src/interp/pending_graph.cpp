#include "interp/pending_graph.hpp"

#include <algorithm>
#include <set>

#include "cir/rename_interface.hpp"
#include "support/diagnostics.hpp"

namespace zyntax {

size_t PendingGraph::run(std::vector<std::shared_ptr<PendingBlock>> nodes, Device& device, const Explain& explain,
                         const Fail& fail) {
  const size_t n = nodes.size();
  std::map<const PendingBlock*, size_t> index;
  for (size_t j = 0; j < n; ++j) index[nodes[j].get()] = j;
  // The results wanted: held by something other than this list and the
  // blocks in it that read them (a binding, an argument, a buffer, a value
  // on its way, a read through a view), or read by none of them.
  std::vector<long> reads(n, 0);
  for (const auto& b : nodes)
    for (const auto& [name, in] : b->inputs)
      if (in.waits() && in.view.empty() && index.count(in.pending.get())) ++reads[index.at(in.pending.get())];
  std::vector<size_t> roots;
  for (size_t j = 0; j < n; ++j)
    if (nodes[j].use_count() - 1 - reads[j] > 0 || reads[j] == 0) roots.push_back(j);

  // Each block's interface renamed apart: an earlier block's result by
  // that block ("@3"; through a view "@3~x@5", a tensor to fusion), a
  // tensor several read by one name ("t0"), the rest by name and block
  // ("x@3", "s@3"); its sizes as the numbers they are.
  std::vector<std::map<std::string, std::string>> to(n);
  std::map<std::string, Tensor> tensors;
  std::map<std::string, Shape> views;
  std::map<std::string, Scalar> scalars;
  std::vector<Tensor> groups;
  std::string key = device.info().id + "|";
  for (size_t j = 0; j < n; ++j) {
    const PendingBlock& b = *nodes[j];
    const cir::Kernel& k = b.compiled->generic();
    const std::string at = "@" + std::to_string(j);
    key += std::to_string(reinterpret_cast<uintptr_t>(b.compiled)) + (std::binary_search(roots.begin(), roots.end(), j) ? "!" : "") + "(";
    std::set<std::string> used;
    for (const cir::Param& p : k.params) {
      if (p.role == cir::ParamRole::Scalar) {
        to[j][p.name] = p.name + at;
        scalars[p.name + at] = b.scalars.at(p.name);
        continue;
      }
      if (p.role != cir::ParamRole::Input) continue;
      const PendingInput& in = b.inputs.at(p.name);
      if (in.waits()) {
        std::string producer = "@" + std::to_string(index.at(in.pending.get()));
        if (!in.view.empty()) {
          producer += "~" + p.name + at;
          views[producer] = in.view;
        }
        to[j][p.name] = producer;
        key += producer + ",";
        continue;
      }
      const Tensor t = in.value();
      size_t g = 0;
      while (g < groups.size() && !(groups[g].same_storage(t) && groups[g].dtype() == t.dtype() && groups[g].shape() == t.shape())) ++g;
      if (g == groups.size()) groups.push_back(t);
      std::string name = "t" + std::to_string(g);
      if (!used.insert(name).second) name = p.name + at;  // the same tensor as two of its inputs
      to[j][p.name] = name;
      tensors[name] = t;
      key += name + ",";
    }
    for (const auto& [d, size] : b.dims) key += d + "=" + std::to_string(size) + ",";
    key += ")";
  }

  // The plan, once per graph of these blocks, signatures and reads.
  std::shared_ptr<PlannedRun> planned;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = runs_.find(key); it != runs_.end()) planned = it->second;
  }
  if (!planned) {
    std::vector<cir::Kernel> kernels;
    kernels.reserve(n);
    std::vector<fusion::RunBlock> blocks;
    for (size_t j = 0; j < n; ++j) {
      kernels.push_back(cir::rename_interface(nodes[j]->compiled->generic(), to[j], nodes[j]->dims));
      kernels.back().name = "@" + std::to_string(j);  // its locals' prefix where it is inlined
    }
    for (size_t j = 0; j < n; ++j) blocks.push_back({&kernels[j], kernels[j].name, nodes[j]->line, false, nodes[j]->label});
    planned = std::make_shared<PlannedRun>();
    planned->plan = fusion::plan_run(blocks, roots, device.gpu_target());
    for (const fusion::PlannedKernel& k : planned->plan.launches)
      planned->compiled.push_back(k.fused() ? std::make_unique<CompiledCompute>(k.kernel) : nullptr);
    std::lock_guard<std::mutex> lock(mu_);
    runs_.emplace(key, planned);
  }
  for (const std::string& e : planned->plan.explanations) explain(e);

  // Each launch reads the blocks' inputs and the results before it. A
  // result no block wants for itself is let go after its last reader (a
  // host loop of blocks that cannot fuse holds two results at a time, not
  // one per block).
  const auto& launches = planned->plan.launches;
  std::vector<size_t> last_read(n, SIZE_MAX);
  for (size_t l = 0; l < launches.size(); ++l) {
    if (planned->compiled[l]) {
      for (const cir::Param& p : planned->compiled[l]->generic().params)
        if (p.role == cir::ParamRole::Input && p.name[0] == '@') last_read[std::stoul(p.name.substr(1))] = l;
    } else {
      for (const auto& [name, in] : nodes[launches[l].result]->inputs)
        if (in.pending && index.count(in.pending.get())) last_read[index.at(in.pending.get())] = l;
    }
  }
  try {
    for (size_t l = 0; l < launches.size(); ++l) {
      const fusion::PlannedKernel& k = launches[l];
      PendingBlock& b = *nodes[k.result];
      Tensor out;
      try {
        if (planned->compiled[l]) {
          CompiledCompute& fused = *planned->compiled[l];
          std::vector<Tensor> inputs;
          std::map<std::string, Scalar> own_scalars;
          for (const cir::Param& p : fused.generic().params) {
            if (p.role == cir::ParamRole::Input) {
              if (p.name[0] != '@') {
                inputs.push_back(tensors.at(p.name));
                continue;
              }
              const Tensor& r = nodes[std::stoul(p.name.substr(1))]->result;
              auto v = views.find(p.name);
              inputs.push_back(v == views.end() ? r : r.reshaped(v->second));
            } else if (p.role == cir::ParamRole::Scalar) {
              own_scalars[p.name] = scalars.at(p.name);
            }
          }
          out = fused.launch(device, inputs, {}, own_scalars);
        } else {
          std::vector<Tensor> inputs;
          for (const cir::Param& p : b.compiled->generic().params)
            if (p.role == cir::ParamRole::Input) inputs.push_back(b.inputs.at(p.name).value());
          out = b.compiled->launch(device, inputs, b.host_dims, b.scalars);
        }
      } catch (const DataError& e) {
        fail(b, e);
        throw;
      } catch (const Error& e) {
        fail(b, e);
        throw;
      }
      b.result = out;
      for (size_t j = 0; j < n; ++j)
        if (last_read[j] == l && !std::binary_search(roots.begin(), roots.end(), j)) nodes[j]->result = Tensor();
    }
  } catch (...) {
    run_unfused(nodes, device, fail);  // throws the first failing block's error
    throw;
  }
  // What the computed blocks read is no longer needed.
  for (const auto& b : nodes)
    if (b->computed()) b->inputs.clear();
  return launches.size();
}

void PendingGraph::run_unfused(const std::vector<std::shared_ptr<PendingBlock>>& nodes, Device& device, const Fail& fail) {
  std::map<const PendingBlock*, Tensor> done;
  for (const auto& b : nodes) {
    std::vector<Tensor> inputs;
    for (const cir::Param& p : b->compiled->generic().params) {
      if (p.role != cir::ParamRole::Input) continue;
      const PendingInput& in = b->inputs.at(p.name);
      if (!in.waits()) {
        inputs.push_back(in.value());
        continue;
      }
      const Tensor& r = done.at(in.pending.get());
      inputs.push_back(in.view.empty() ? r : r.reshaped(in.view));
    }
    try {
      done[b.get()] = b->result = b->compiled->launch(device, inputs, b->host_dims, b->scalars);  // kept: what ran, ran
    } catch (const DataError& e) {
      fail(*b, e);
      throw;
    } catch (const Error& e) {
      fail(*b, e);
      throw;
    }
  }
}

}  // namespace zyntax
