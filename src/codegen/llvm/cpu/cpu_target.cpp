#include "codegen/llvm/cpu/cpu_target.hpp"

#include <llvm/ADT/StringMap.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

#include <cstdlib>
#include <stdexcept>
#include <vector>

namespace zyntax::codegen {

namespace {

// Features dropped to stay at or below each level on x86.
const std::vector<std::string>& features_above(const std::string& level) {
  static const std::vector<std::string> kAvx512 = {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl",
                                                   "avx512vnni", "avx512bf16", "avx512fp16", "avx512vbmi",
                                                   "avx512vbmi2", "avx512bitalg", "avx512ifma", "avx512vpopcntdq",
                                                   "evex512", "amx-tile", "amx-int8", "amx-bf16"};
  static const std::vector<std::string> kAvx2 = [] {
    std::vector<std::string> v = kAvx512;
    for (const char* f : {"avx2", "avx", "fma", "f16c", "vaes", "vpclmulqdq", "avxvnni"}) v.push_back(f);
    return v;
  }();
  static const std::vector<std::string> kNone;
  if (level == "avx2") return kAvx512;
  if (level == "sse4.1" || level == "scalar") return kAvx2;
  return kNone;
}

}  // namespace

std::string forced_simd_level() {
  const char* env = std::getenv("ZYNTAX_CPU_SIMD");
  return env ? std::string(env) : std::string();
}

CpuTarget detect_host_cpu(const std::string& force) {
  if (!force.empty() && force != "avx512" && force != "avx2" && force != "sse4.1" && force != "neon" && force != "scalar")
    throw std::invalid_argument("unknown SIMD level '" + force + "' (use avx512, avx2, sse4.1, neon or scalar)");
  CpuTarget t;
  t.triple = llvm::sys::getProcessTriple();
  t.cpu = llvm::sys::getHostCPUName().str();
  llvm::StringMap<bool> host = llvm::sys::getHostCPUFeatures();
  const auto& drop = features_above(force);
  auto has = [&](const char* f) { return host.lookup(f) && std::find(drop.begin(), drop.end(), f) == drop.end(); };
  for (const auto& [name, on] : host) {
    bool keep = on && std::find(drop.begin(), drop.end(), name.str()) == drop.end();
    t.features += (t.features.empty() ? "" : ",") + std::string(keep ? "+" : "-") + name.str();
  }
  llvm::Triple triple(t.triple);
  if (triple.isAArch64()) {
    t.simd = force == "scalar" ? "scalar" : "neon";
    t.vector_bits = force == "scalar" ? 0 : 128;
  } else if (has("avx512f") && force != "avx2" && force != "sse4.1" && force != "scalar") {
    t.simd = "avx512";
    t.vector_bits = 512;
  } else if (has("avx2") && force != "sse4.1" && force != "scalar") {
    t.simd = "avx2";
    t.vector_bits = 256;
  } else if (has("sse4.1") && force != "scalar") {
    t.simd = "sse4.1";
    t.vector_bits = 128;
  } else {
    t.simd = "scalar";
  }
  if (!force.empty() && force != t.simd && force != "scalar")
    throw std::invalid_argument("this CPU has no " + force + " (best: " + t.simd + ")");
  // A generic CPU name keeps the model from re-enabling what was dropped.
  if (!force.empty() && triple.isX86()) t.cpu = "x86-64";
  return t;
}

}  // namespace zyntax::codegen
