#include "fusion/run_plan.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "fusion/block_fusion.hpp"

namespace zyntax::fusion {

RunPlan plan_run(const std::vector<RunBlock>& blocks, const GpuTarget* target) {
  return plan_run(blocks, {blocks.size() - 1}, target);
}

RunPlan plan_run(const std::vector<RunBlock>& blocks, const std::vector<size_t>& roots, const GpuTarget* target) {
  RunPlan plan;
  std::map<std::string, size_t> index_of;
  for (size_t j = 0; j < blocks.size(); ++j) index_of[blocks[j].name] = j;
  std::set<std::string> done;
  auto line = [&](size_t j) { return std::to_string(blocks[j].line); };
  std::function<void(size_t)> compute = [&](size_t j) {
    if (done.count(blocks[j].name)) return;
    for (;;) {
      Pending pending;
      for (size_t i = 0; i < j; ++i)
        if (!done.count(blocks[i].name) && !blocks[i].standalone && !blocks[j].standalone) pending.emplace(blocks[i].name, *blocks[i].kernel);
      Inlined r = inline_producers(*blocks[j].kernel, pending, target);
      if (!r.kernel) {
        size_t i = index_of.at(r.refused);
        plan.explanations.push_back("not fused: line " + line(i) + " into line " + line(j) + ": " + r.why);
        compute(i);
        continue;
      }
      // A block the kernel still takes as a tensor (for its sizes alone, or
      // where either names its device) is computed first.
      std::optional<size_t> first;
      for (const cir::Param& p : r.kernel->params)
        if (p.role == cir::ParamRole::Input && index_of.count(p.name) && index_of.at(p.name) < j && !done.count(p.name)) first = index_of.at(p.name);
      if (first) {
        bool device = blocks[*first].standalone || blocks[j].standalone;
        plan.explanations.push_back("not fused: line " + line(*first) + " into line " + line(j) + ": " +
                                    (device ? "it names its device" : "the consumer only takes its sizes"));
        compute(*first);
        continue;
      }
      PlannedKernel k;
      for (const std::string& p : r.producers) k.blocks.push_back(index_of.at(p));
      k.blocks.push_back(j);
      std::sort(k.blocks.begin(), k.blocks.end());
      k.result = j;
      k.kernel = std::move(*r.kernel);
      if (k.fused()) {
        std::string name, lines;
        for (size_t b : k.blocks) {
          name += (name.empty() ? "" : "+") + blocks[b].shown();
          lines += (lines.empty() ? "" : ", ") + line(b);
        }
        k.kernel.name = name;
        plan.explanations.push_back("the blocks at lines " + lines + " run as one kernel, " + name);
      }
      plan.launches.push_back(std::move(k));
      done.insert(blocks[j].name);
      return;
    }
  };
  // A root read by later blocks is computed once, as a tensor they read.
  for (size_t r = 0; r < roots.size(); ++r) {
    for (size_t j = roots[r] + 1; j < blocks.size(); ++j)
      if (blocks[j].kernel->find_param(blocks[roots[r]].name))
        plan.explanations.push_back("not fused: line " + line(roots[r]) + " into line " + line(j) + ": '" + blocks[roots[r]].shown() +
                                    "' is also read by host code");
    compute(roots[r]);
  }
  return plan;
}

}  // namespace zyntax::fusion
