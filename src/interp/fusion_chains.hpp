// Which statements of a host block may run as one group of fused kernels:
// a run of `let NAME = compute(..) {..}` statements, every input a name or
// a field path (reading it has no effect), where every result but the last
// is read by later blocks of the run and by nothing else; between the
// blocks, quiet host statements, which the run executes first and whose
// values the blocks after them see: a `let`, `var` or assignment of a name
// computed from names, literals, operators, attributes, indexing and pure
// math builtins (nothing that prints, saves, times, draws random numbers,
// waits or calls a user's function), reading no result of the run and
// writing no name a block before it reads. Decided from the syntax alone,
// for `zyntax compile --emit cir`'s listing of fused kernels (at run time
// the interpreter defers blocks, interp/pending_block, and fusion reaches
// across functions and loops). is_quiet_builtin also tells the interpreter
// which builtins need not wait for pending blocks.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "syntax/ast.hpp"

namespace zyntax {

struct BlockChain {
  size_t length = 1;               // statements from the first: the blocks and the host statements between them
  std::vector<size_t> blocks;      // the blocks' offsets from the first statement, in order
  std::vector<std::string> names;  // the name each block binds
  std::vector<size_t> host;        // the host statements' offsets, in order
  std::vector<std::string> calls;  // the functions they call, by name (builtins, unless something in scope shadows them)
  std::vector<std::string> not_continued;  // why the statements after the last do not join
};

// The chain starting at statement `first` of `b`; length 1 where none does.
BlockChain block_chain(const ast::Block& b, size_t first);

// The block of `let NAME = compute(...) {...}`, or null.
const ast::Compute* let_compute(const ast::Stmt& s);

// The functions a quiet host statement may call (the builtins of these
// names, where nothing in scope shadows them).
bool is_quiet_builtin(const std::string& name);

}  // namespace zyntax
