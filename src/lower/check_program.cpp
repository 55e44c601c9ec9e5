#include "lower/check_program.hpp"

#include <algorithm>

#include "lower/kernel_lowering.hpp"
#include "sema/kernel_annotations.hpp"
#include "sema/host_checker.hpp"

namespace zyntax {

namespace {

// Lowers each block the host checker meets, and keeps its CIR.
class LoweringBlockChecker : public ComputeBlockChecker {
 public:
  LoweringBlockChecker(Session& session, std::vector<CheckedKernel>* kernels) : session_(session), kernels_(kernels) {}

  std::optional<CheckedBlock> check(const ast::Compute& c, std::vector<InputSignature> sigs, const HostEnv& env,
                                    DiagnosticEngine& diags) override {
    // Without every input's rank (an untyped parameter, load() without a type)
    // the block is checked when it runs, with the real tensors; here it is
    // only lowered as far as a guess allows, for --emit cir.
    std::vector<size_t> unknown;
    for (size_t i = 0; i < sigs.size(); ++i)
      if (!sigs[i].rank) unknown.push_back(i);
    std::optional<LoweredCompute> lc;
    if (unknown.empty()) {
      lc = lower_compute(c, session_.kernel_name(&c), sigs, env, diags);
    } else {
      // Annotations do not depend on the inputs: check them now, located,
      // rather than when the block first runs.
      size_t errors_before = diags.error_count();
      read_kernel_annotations(c, diags);
      if (diags.error_count() > errors_before) return std::nullopt;
      // Guess: each unknown input has as many axes as its indexing shows or
      // one more, and is f32, or i64 (it may be used as an index).
      size_t n = std::min<size_t>(unknown.size(), 3);
      std::vector<bool> dtype_known;
      for (size_t i : unknown) dtype_known.push_back(sigs[i].dtype.has_value());
      for (unsigned guess = 0; guess < (1u << (2 * n)) && !lc; ++guess) {
        for (size_t k = 0; k < n; ++k) {
          InputSignature& s = sigs[unknown[k]];
          s.rank_guess_extra = (guess >> (2 * k)) & 1;
          if (!dtype_known[k]) s.dtype = ((guess >> (2 * k + 1)) & 1) ? DType::I64 : DType::F32;
        }
        DiagnosticEngine scratch(session_.sources());
        lc = lower_compute(c, session_.kernel_name(&c), sigs, env, scratch);
      }
      if (!lc && kernels_) {
        std::string names;
        for (size_t i : unknown) names += (names.empty() ? "" : ", ") + sigs[i].path;
        kernels_->push_back({&c, {}, "the ranks of its inputs " + names + " are known only when it runs"});
      }
    }
    if (!lc) return std::nullopt;
    const cir::Param& out = lc->kernel.output();
    if (kernels_) kernels_->push_back({&c, lc->kernel, ""});
    return CheckedBlock{static_cast<int>(out.type.rank()), out.type.dtype, lc->annotations.is_async};
  }

 private:
  Session& session_;
  std::vector<CheckedKernel>* kernels_;
};

}  // namespace

bool check_program(Session& session, LoadedModule& main, std::vector<CheckedKernel>* kernels) {
  LoweringBlockChecker blocks(session, kernels);
  return check_host_program(session, main, blocks);
}

}  // namespace zyntax
