// f64 expressions of a kernel's scalars alone, computed by the host.
//
// A shader language without f64 (WGSL) computes f64 values in f32. Most
// are sums a schedule keeps wider, where f32 only rounds more often; but
// an expression of literals and host numbers (weak, so f64: `3e38 % s`)
// can come out altogether different in f32. Such an expression has one
// value per launch: the host computes it in f64, as the reference does, and
// the shader reads the result (rounded once to f32) as a uniform.
#pragma once

#include <string>
#include <vector>

#include "cir/ir.hpp"

namespace zyntax::codegen {

struct HostScalarExpressions {
  cir::Kernel kernel;  // each expression replaced by a Var named in `names`
  std::vector<std::string> names;
  std::vector<cir::Expr> expressions;  // over the kernel's f64 scalar params and literals
};

// The largest such expressions (one operation at least; structurally equal
// ones share a name). Only operations whose f64 results a JavaScript host
// computes as the reference does, or within an ulp of f64: arithmetic, the
// elementary functions, fma (exact), not erf and the activations.
HostScalarExpressions hoist_host_scalar_expressions(const cir::Kernel& k);

// An expression as JSON for the JavaScript runtime (js/src/runtime.mjs):
// {"op": "param", "index": I} (the kernel's param I), {"op": "const",
// "value": V} (V a number, or "inf", "-inf", "nan"), or {"op": NAME,
// "args": [...]} with NAME an operation's or a function's name (add, mod,
// neg, pow, exp2, rsqrt, fma, ...).
std::string host_scalar_expression_json(const cir::Expr& e, const cir::Kernel& k);

}  // namespace zyntax::codegen
