// The annotations of a compute block: `@kernel`, `@workgroup`, `@shared`,
// `@broadcast`, `@tile`, `@device`, `@parallel`, `@precision`, `@async`, read from the
// header and from the top of the body, and checked.
#pragma once

#include <array>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cir/ir.hpp"
#include "support/diagnostics.hpp"
#include "syntax/ast.hpp"

namespace zyntax {

struct KernelAnnotations {
  cir::KernelKind kind = cir::KernelKind::Fused;
  Span kind_span;
  ReduceOp reduce_op = ReduceOp::Sum;
  std::optional<int> reduce_axis;
  std::optional<std::array<int64_t, 3>> workgroup;
  const ast::Expr* shared_bytes = nullptr;  // lowered with the body's names
  std::map<std::string, int64_t> tile;
  struct Broadcast {
    std::string input;
    int axis;
    Span span;
  };
  std::vector<Broadcast> broadcast;
  std::vector<std::string> devices;  // @device("cuda:0") or a list
  Span device_span;
  std::string parallel;
  bool over_ranks = false;  // @parallel(data, ranks): shared out over the ranks of an mpirun job
  bool tf32 = false;  // @precision(tf32), or bf16
  bool bf16 = false;  // @precision(bf16)
  bool is_async = false;
};

// Reads every annotation of `c`; reports unknown, duplicate or malformed ones.
KernelAnnotations read_kernel_annotations(const ast::Compute& c, DiagnosticEngine& diags);

// The value of an integer constant expression (literals and + - * / %), if it is one.
std::optional<int64_t> constant_int(const ast::Expr& e);

}  // namespace zyntax
