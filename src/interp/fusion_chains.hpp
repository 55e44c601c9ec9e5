// Which adjacent statements of a host block may run as one group of fused
// kernels: a run of `let NAME = compute(..) {..}` statements, nothing in
// between (so no host code sees or changes anything mid-run), every input a
// name or a field path (reading it has no effect), where every result but
// the last is read by later blocks of the run and by nothing else. Decided
// from the syntax alone, once per statement; which kernels fuse is then
// fusion/block_fusion's call at run time.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "syntax/ast.hpp"

namespace zyntax {

struct BlockChain {
  size_t length = 1;               // statements from the first
  std::vector<std::string> names;  // the name each binds
  std::vector<std::string> not_continued;  // why the statements after the last do not join
};

// The chain starting at statement `first` of `b`; length 1 where none does.
BlockChain block_chain(const ast::Block& b, size_t first);

// The block of `let NAME = compute(...) {...}`, or null.
const ast::Compute* let_compute(const ast::Stmt& s);

}  // namespace zyntax
