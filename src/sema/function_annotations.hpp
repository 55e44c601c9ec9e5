// What a function's annotations ask of it: `@critical_path`,
// `@no_allocation`, `@inline_always`, `@unchecked`, `@target_latency(100ns)`.
// A function with any of the first three, or a latency target, is compiled
// before its first call (host/host_tier) and must compile; `@no_allocation`
// also forbids what allocates; `@unchecked` drops the bounds checks of its
// tensor indexing in compiled code.
#pragma once

#include <optional>
#include <string>

#include "support/diagnostics.hpp"
#include "syntax/ast.hpp"

namespace zyntax {

struct FunctionAnnotations {
  const ast::Annotation* critical_path = nullptr;
  const ast::Annotation* no_allocation = nullptr;
  const ast::Annotation* inline_always = nullptr;
  const ast::Annotation* unchecked = nullptr;
  const ast::Annotation* target_latency = nullptr;
  std::optional<int64_t> target_latency_ns;

  // Compiled before the first call, and an error where it cannot be.
  bool must_compile() const { return critical_path || no_allocation || inline_always || target_latency; }
  // The annotation that makes it so, for the note of such an error.
  const ast::Annotation* first_requirement() const;
};

// Reads `f`'s annotations; what is wrong with them (an unknown name, a
// latency that is not a positive duration) goes to `diags` when given.
FunctionAnnotations read_function_annotations(const ast::FuncDef& f, DiagnosticEngine* diags = nullptr);

}  // namespace zyntax
