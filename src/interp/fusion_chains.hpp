// Which adjacent statements of a host block may run as one group of fused
// kernels: `let a = compute(..) {..}` followed by `let b = compute(.., a, ..) {..}`
// and so on, where each result is read by the next block only, nothing in
// between (so no host code sees or changes anything mid-chain), and every
// input is a name or a field path (reading it has no effect). Decided from
// the syntax alone, once per statement; whether the kernels fuse is then
// fusion/block_fusion's call at run time.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "syntax/ast.hpp"

namespace zyntax {

struct BlockChain {
  size_t length = 1;               // statements from the first
  std::vector<std::string> links;  // links[j]: the name statement j binds, which statement j + 1 reads
  std::vector<std::string> not_continued;  // why the statement after the last does not join, where it reads it
};

// The chain starting at statement `first` of `b`; length 1 where none does.
BlockChain block_chain(const ast::Block& b, size_t first);

// The block of `let NAME = compute(...) {...}`, or null.
const ast::Compute* let_compute(const ast::Stmt& s);

}  // namespace zyntax
