// AMDGPU code objects for tests: LLVM's disassembler (llvm-objdump-19, or
// $LLVM_OBJDUMP) on a code object, each kernel's instructions apart, and
// what a planned kernel has that its code must show.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "cir/visitor.hpp"

namespace zyntax::testing {

inline std::string find_objdump() {
  std::vector<std::string> candidates;
  if (const char* p = std::getenv("LLVM_OBJDUMP")) candidates.push_back(p);
  candidates.push_back("/usr/bin/llvm-objdump-19");
  candidates.push_back("/usr/lib/llvm-19/bin/llvm-objdump");
  for (const std::string& c : candidates)
    if (::access(c.c_str(), X_OK) == 0) return c;
  return "";
}

// Each function's disassembly in the code object, by symbol ("" when the
// disassembler fails: then `log` says why).
inline std::map<std::string, std::string> disassemble(const std::string& objdump, const std::string& elf, const std::string& arch,
                                                      const std::string& tag, std::string* log) {
  std::string file = ::testing::TempDir() + "/" + tag + "_" + arch + ".hsaco";
  std::ofstream(file, std::ios::binary) << elf;
  std::string cmd = objdump + " -d --mcpu=" + arch + " " + file + " 2>&1";
  std::map<std::string, std::string> out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  std::string text;
  char buf[4096];
  while (fgets(buf, sizeof buf, p)) text += buf;
  int rc = pclose(p);
  std::remove(file.c_str());
  if (rc != 0) {
    *log = text;
    return {};
  }
  // "0000000000001900 <k0>:" starts a function.
  std::string* current = nullptr;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(at, end - at);
    size_t open = line.find(" <"), close = line.rfind(">:");
    if (open != std::string::npos && close != std::string::npos && close > open && line.find_first_not_of("0123456789abcdef") == open)
      current = &out[line.substr(open + 2, close - open - 2)];
    else if (current)
      *current += line + "\n";
    at = end + 1;
  }
  return out;
}

// What a planned GPU kernel does that its machine code must show: barriers
// and shared arrays in its block loops, block reductions, private arrays.
struct PlannedFeatures : cir::IRVisitor {
  bool barrier = false, shared = false, block_reduce = false, private_arrays = false;
  int block_depth = 0;
  using cir::IRVisitor::visit;
  void visit(const cir::For* op) override {
    bool block = op->loop_kind == cir::LoopKind::GpuBlock;
    block_depth += block;
    cir::IRVisitor::visit(op);
    block_depth -= block;
  }
  void visit(const cir::Barrier* op) override { barrier |= block_depth > 0; }
  void visit(const cir::Allocate* op) override {
    shared |= op->space == cir::MemorySpace::Shared && block_depth > 0;
    // A shared array outside the block loops is each thread's own.
    private_arrays |= op->space == cir::MemorySpace::Local || (op->space == cir::MemorySpace::Shared && block_depth == 0);
    cir::IRVisitor::visit(op);
  }
  void visit(const cir::BlockReduce* op) override {
    block_reduce = true;
    cir::IRVisitor::visit(op);
  }
};

inline PlannedFeatures planned_features(const cir::Kernel& k) {
  PlannedFeatures f;
  f.include(k.body);
  return f;
}

}  // namespace zyntax::testing
