// What a device built for a kernel under the tuning database's choice for
// it: the one way every backend finds its plan, so that a tuned record
// changes what runs everywhere alike.
#pragma once

#include <memory>
#include <stdexcept>

#include "runtime/device.hpp"
#include "runtime/kernel_cache.hpp"

namespace zyntax {

// The plan for `kernel` (hash `key`) on `device` under the database's
// choice (Device::tuned_choice), built by build(choice) once per choice; a
// choice the plans refuse (std::invalid_argument: a record of another
// build's knobs) gives the rules' plan.
template <class T, class Build>
std::shared_ptr<T> tuned_plan(Device& device, KernelCache<T>& plans, const cir::Kernel& kernel, uint64_t key, Build build) {
  TuningChoice choice = device.tuned_choice(kernel, key);
  if (!choice.empty()) {
    try {
      return plans.get(choice.keyed(key), [&] { return build(choice); });
    } catch (const std::invalid_argument&) {
    }
  }
  return plans.get(key, [&] { return build(TuningChoice{}); });
}

// The plan for a choice the tuner is timing; null where the plans refuse it.
template <class T, class Build>
std::shared_ptr<T> chosen_plan(KernelCache<T>& plans, uint64_t key, const TuningChoice& choice, Build build) {
  try {
    return plans.get(choice.keyed(key), [&] { return build(choice); });
  } catch (const std::invalid_argument&) {
    return nullptr;
  }
}

}  // namespace zyntax
