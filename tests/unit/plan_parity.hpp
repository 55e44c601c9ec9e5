// A parity case's GPU plans for a target against the kernel they came from,
// both on the reference executor, whose race checker stands in for the
// threads running at once: the kernel's result, without a race, for any
// target description.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>

#include "backends/reference/reference_executor.hpp"
#include "parity_cases.hpp"
#include "plan/gpu_plan.hpp"
#include "runtime/launch.hpp"

namespace zyntax::testing {

// The sizes a parity variant binds, or nothing where its shapes disagree.
inline std::optional<std::map<std::string, int64_t>> variant_dims(const cir::Kernel& generic, const std::vector<Tensor>& inputs) {
  try {
    return bind_dimensions(generic, inputs, {});
  } catch (const DataError&) {
    return std::nullopt;
  }
}

inline void expect_plans_match(const Case& c, const GpuTarget& target) {
  cir::Kernel generic = kernel_of(parity_source(c));
  ASSERT_FALSE(generic.name.empty());
  CompiledCompute compiled(generic);
  Random rng(42);
  for (int variant = 0; variant < 6; ++variant) {
    std::vector<Tensor> inputs = parity_inputs(c, variant, rng);
    std::optional<std::map<std::string, int64_t>> dims = variant_dims(generic, inputs);
    if (!dims) continue;  // a variant whose shapes disagree: an error on every device
    auto s = compiled.specialize(*dims);
    GpuPlan plan = gpu_plan(s->kernel, target);
    ASSERT_TRUE(plan.kernel.has_value()) << c.name << " variant " << variant << ": " << plan.why_not;
    std::string what = std::string(c.name) + " variant " + std::to_string(variant) + " (" + gpu_schedule_name(plan.schedule) + ", " +
                       target.describe() + ")";
    Tensor want, got;
    std::string want_error, got_error;
    try {
      want = ReferenceKernel(s->kernel).run(inputs, {});
    } catch (const std::exception& e) {
      want_error = e.what();
    }
    try {
      got = ReferenceKernel(*plan.kernel).run(inputs, {});
    } catch (const std::exception& e) {
      got_error = e.what();
    }
    EXPECT_EQ(got_error.find("data race"), std::string::npos) << what << ": " << got_error;
    EXPECT_EQ(want_error.empty(), got_error.empty()) << what << ": " << want_error << " / " << got_error;
    if (!want_error.empty() || !got_error.empty()) continue;
    std::string where;
    EXPECT_TRUE(agree(want, got, true, &where)) << what << ": " << where;
  }
}

}  // namespace zyntax::testing
