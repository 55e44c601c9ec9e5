// Where NVIDIA's PTX assembler is: $PTXAS, PATH, or /usr/local/cuda/bin;
// "" when none (the tests that need it are skipped). And planned kernels
// compiled to PTX and assembled with it.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "codegen/llvm/nvptx/nvptx_compiler.hpp"

namespace zyntax::testing {

inline std::string find_ptxas() {
  std::vector<std::string> candidates;
  if (const char* p = std::getenv("PTXAS")) candidates.push_back(p);
  if (const char* path = std::getenv("PATH")) {
    std::string s = path;
    for (size_t at = 0; at <= s.size();) {
      size_t colon = s.find(':', at);
      if (colon == std::string::npos) colon = s.size();
      candidates.push_back(s.substr(at, colon - at) + "/ptxas");
      at = colon + 1;
    }
  }
  candidates.push_back("/usr/local/cuda/bin/ptxas");
  for (const std::string& c : candidates)
    if (!c.empty() && ::access(c.c_str(), X_OK) == 0) return c;
  return "";
}

// Runs ptxas on a PTX file for `arch`; its exit status and output.
inline int run_ptxas(const std::string& ptxas, const std::string& file, const std::string& arch, std::string* log) {
  std::string cmd = ptxas + " -arch=" + arch + " " + file + " -o /dev/null 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return -1;
  char buf[512];
  while (fgets(buf, sizeof buf, p)) *log += buf;
  return pclose(p);
}

// The kernels in one PTX module per architecture (sm_80 and sm_90): each
// module's text to `check`, then to ptxas where there is one.
template <class Check>
void expect_ptx_assembles(const std::vector<cir::Kernel>& kernels, const std::vector<std::string>& names, const std::string& tag, Check check) {
  std::vector<const cir::Kernel*> ptrs;
  for (const cir::Kernel& k : kernels) ptrs.push_back(&k);
  std::string ptxas = find_ptxas();
  for (const char* arch : {"sm_80", "sm_90"}) {
    codegen::PtxModule m = codegen::NvptxCompiler::instance().compile(ptrs, names, *codegen::parse_nvptx_arch(arch));
    check(m.ptx);
    if (ptxas.empty()) continue;
    std::string file = ::testing::TempDir() + "/" + tag + "_" + arch + ".ptx";
    std::ofstream(file) << m.ptx;
    std::string log;
    EXPECT_EQ(run_ptxas(ptxas, file, arch, &log), 0) << tag << " " << arch << ":\n" << log;
  }
}

// A module of `kernels` kernels through `ptxas -v` for `arch`: it assembles
// with no warning (C7515: wgmma serialised, C7508: setmaxnreg ignored, any
// "Potential Performance Loss"), and no kernel has a stack frame or spills.
// Skips the test where there is no ptxas.
inline void expect_ptxas_clean(const std::string& ptx, const std::string& arch, const std::string& tag, size_t kernels) {
  std::string ptxas = find_ptxas();
  if (ptxas.empty()) GTEST_SKIP() << "no ptxas";
  std::string file = ::testing::TempDir() + "/" + tag + "_" + arch + ".ptx";
  std::ofstream(file) << ptx;
  std::string log;
  ASSERT_EQ(run_ptxas(ptxas + " -v", file, arch, &log), 0) << log;
  EXPECT_EQ(log.find("Potential Performance Loss"), std::string::npos) << log;
  EXPECT_EQ(log.find("C7515"), std::string::npos) << log;
  EXPECT_EQ(log.find("C7508"), std::string::npos) << log;
  EXPECT_EQ(log.find("warning"), std::string::npos) << log;
  size_t at = 0, seen = 0;
  while ((at = log.find("bytes spill stores", at)) != std::string::npos) {
    size_t line = log.rfind('\n', at), end = log.find('\n', at);
    std::string text = log.substr(line + 1, end == std::string::npos ? std::string::npos : end - line - 1);
    EXPECT_NE(text.find(" 0 bytes stack frame, 0 bytes spill stores"), std::string::npos) << text;
    ++at;
    ++seen;
  }
  EXPECT_EQ(seen, kernels) << log;
}

}  // namespace zyntax::testing
