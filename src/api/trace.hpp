// The expression graph ComputeDevice::elementwise records while the user's
// function runs, and the fused kernel made from it: one parallel loop over
// the elements, each shared subexpression computed once (a let), inputs
// read at i % length (broadcast), several outputs as rows of one result.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "cir/ir.hpp"
#include "zyntax/expr.hpp"

namespace zyntax {

class Trace {
 public:
  enum class Op : uint8_t {
    Input, Constant, Add, Sub, Mul, Div, Neg, Lt, Gt, Le, Ge,
    Exp, Log, Sqrt, Rsqrt, Tanh, Sin, Cos, Abs, Sigmoid, Silu, Gelu, Relu, Pow, Min, Max, Where,
  };

  // One ExprId per input.
  std::vector<ExprId> inputs(size_t n);
  ExprId node(Op op, std::vector<ExprId> args);

  // The fused kernel computing `outputs` over `numel` elements, from inputs
  // of these dtypes and lengths (each dividing numel).
  cir::Kernel kernel(const std::vector<ExprId>& outputs, size_t numel, const std::vector<DType>& dtypes,
                     const std::vector<size_t>& lengths) const;
  // What identifies that kernel: the graph, the outputs, dtypes and sizes.
  std::string key(const std::vector<ExprId>& outputs, size_t numel, const std::vector<DType>& dtypes,
                  const std::vector<size_t>& lengths) const;

  // The trace an operation's arguments belong to (null: all constants).
  static Trace* of(std::initializer_list<ExprId> args);
  // A ComputeError unless `e` is a node of this trace.
  void check(const ExprId& e) const;

 private:
  struct Node {
    Op op;
    std::vector<uint32_t> args;
    float constant = 0;
    uint32_t input = 0;
  };
  uint32_t intern(Node n);
  uint32_t index_in_graph(const ExprId& e);

  std::vector<Node> nodes_;
  std::map<std::tuple<Op, std::vector<uint32_t>, uint32_t, uint32_t>, uint32_t> interned_;  // CSE
};

}  // namespace zyntax
