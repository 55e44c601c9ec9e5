// One call of a host function's compiled code (host/host_tier) from the
// interpreter: the bound arguments as compiled code takes them (numbers as
// 64-bit words, tensors as their host bytes and extents, a record's fields
// as an array of words, written back after the call), then the result as a
// value, or the interpreter's error for a failed check, at its source.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "host/host_tier.hpp"
#include "interp/environment.hpp"
#include "interp/value.hpp"

namespace zyntax {

class CompiledCall {
 public:
  // The values bound in `scope` under `names` (computed already, none
  // pending), for `code`.
  CompiledCall(const host::HostCode& code, Scope& scope, const std::vector<std::string>& names);
  // The values of `code.names`, in order (as a direct call binds them).
  CompiledCall(const host::HostCode& code, const std::vector<Value*>& values);
  CompiledCall(const CompiledCall&) = delete;
  CompiledCall& operator=(const CompiledCall&) = delete;

  // Runs the code once; `ctx.error_site` says whether a check failed.
  uint64_t run(host::HostCallContext& ctx) {
    uint64_t result = 0;
    code_.entry(&ctx, words_.data(), &result);
    return result;
  }

  // The fields the code wrote, back into the records; then the result, or
  // the error a failed check raises in the interpreter (`max_depth`: its
  // limit on nested calls, for that message).
  Value finish(const host::HostCallContext& ctx, uint64_t result, int max_depth);

 private:
  static std::vector<Value*> bound(Scope& scope, const std::vector<std::string>& names);

  const host::HostCode& code_;
  std::vector<host::TensorArg> tensors_;
  std::vector<uint64_t> words_;
  std::vector<std::pair<RecordData*, std::vector<uint64_t>>> records_;
};

}  // namespace zyntax
