#include "codegen/llvm/nvptx/nvptx_compiler.hpp"

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Linker/Linker.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>

#include <set>
#include <stdexcept>

#include "cir/printer.hpp"
#include "codegen/llvm/kernel_abi.hpp"
#include "codegen/llvm/nvptx/libdevice.hpp"
#include "codegen/llvm/optimize.hpp"
#include "codegen_fingerprint.hpp"
#include "runtime/disk_cache.hpp"

extern "C" {
void LLVMInitializeNVPTXTargetInfo();
void LLVMInitializeNVPTXTarget();
void LLVMInitializeNVPTXTargetMC();
void LLVMInitializeNVPTXAsmPrinter();
}

namespace zyntax::codegen {

namespace {

constexpr const char* kTriple = "nvptx64-nvidia-cuda";

// Compute capabilities LLVM 19's NVPTX target knows, from sm_60 (Pascal) on.
constexpr int kCapabilities[] = {60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90};

NvptxArch make_arch(int capability, bool accelerated) {
  NvptxArch a;
  a.capability = capability;
  a.name = "sm_" + std::to_string(capability) + (accelerated ? "a" : "");
  // PTX 7.8 (CUDA 11.8) is the first that knows sm_89/sm_90; sm_90a needs 8.0.
  a.ptx_feature = accelerated ? "+ptx80" : "+ptx78";
  return a;
}

}  // namespace

std::optional<NvptxArch> parse_nvptx_arch(const std::string& name) {
  std::string s = name;
  if (s.rfind("sm_", 0) == 0) s = s.substr(3);
  else if (s.rfind("compute_", 0) == 0) s = s.substr(8);
  bool accelerated = !s.empty() && s.back() == 'a';
  if (accelerated) s.pop_back();
  if (size_t dot = s.find('.'); dot != std::string::npos) s.erase(dot, 1);
  if (s.empty() || s.size() > 3 || s.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  int cap = std::stoi(s);
  for (int c : kCapabilities)
    if (c == cap && (!accelerated || c == 90)) return make_arch(cap, accelerated);
  return std::nullopt;
}

NvptxArch nvptx_arch_for(int major, int minor) {
  int cap = major * 10 + minor, best = kCapabilities[0];
  for (int c : kCapabilities)
    if (c <= cap && c / 10 <= major) best = c;  // PTX for an older architecture runs on newer ones
  return make_arch(best, false);
}

int64_t nvptx_max_shared_bytes(const NvptxArch& arch) {
  switch (arch.capability) {
    case 70: case 72: return 96 << 10;
    case 75: return 64 << 10;
    case 80: case 87: return 163 << 10;
    case 86: case 89: return 99 << 10;
    default: return arch.capability >= 90 ? kGpuMaxSharedBytes : kGpuStaticSharedBytes;
  }
}

std::string nvptx_arch_list() {
  std::string s;
  for (int c : kCapabilities) s += (s.empty() ? "sm_" : ", sm_") + std::to_string(c);
  return s + ", sm_90a";
}

bool have_libdevice() { return libdevice_bitcode().size() > 0; }

NvptxCompiler& NvptxCompiler::instance() {
  static NvptxCompiler* compiler = new NvptxCompiler();
  return *compiler;
}

NvptxCompiler::NvptxCompiler() {
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetMC();
  LLVMInitializeNVPTXAsmPrinter();
}

NvptxCompiler::~NvptxCompiler() = default;

llvm::TargetMachine& NvptxCompiler::machine(const NvptxArch& arch) {
  auto it = machines_.find(arch.name);
  if (it != machines_.end()) return *it->second;
  std::string err;
  const llvm::Target* t = llvm::TargetRegistry::lookupTarget(kTriple, err);
  if (!t) throw std::runtime_error(std::string("no LLVM target for ") + kTriple + ": " + err);
  // IEEE semantics as on the CPU: no fast-math, no contraction of a*b+c
  // into FMA (only the polynomials' explicit fmuladd fuse).
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> tm(t->createTargetMachine(kTriple, arch.name, arch.ptx_feature, options, std::nullopt,
                                                                 std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!tm) throw std::runtime_error("LLVM cannot target " + arch.name);
  return *(machines_[arch.name] = std::move(tm));
}

std::string NvptxCompiler::cached_ptx(const cir::Kernel& kernel, const std::string& entry, const NvptxArch& arch, const DiskCache& cache,
                                      bool* from_disk) {
  std::string key = std::string("ptx\nzyntax ") + ZYNTAX_VERSION + ", LLVM " + ZYNTAX_LLVM_VERSION + ", codegen " +
                    ZYNTAX_CODEGEN_FINGERPRINT + "\n" + arch.name + " " + arch.ptx_feature + " " + entry + "\n" + cir::print(kernel);
  std::optional<std::string> cached = cache.load(key);
  if (from_disk) *from_disk = cached.has_value();
  if (cached) return *cached;
  std::string ptx = compile({&kernel}, {entry}, arch).ptx;
  cache.store(key, ptx);
  return ptx;
}

PtxModule NvptxCompiler::compile(const std::vector<const cir::Kernel*>& kernels, const std::vector<std::string>& entries,
                                 const NvptxArch& arch, const std::string& what) {
  std::lock_guard<std::mutex> lock(mu_);
  llvm::TargetMachine& tm = machine(arch);
  llvm::LLVMContext ctx;
  auto module = std::make_unique<llvm::Module>("zyntax", ctx);
  module->setTargetTriple(kTriple);
  module->setDataLayout(tm.createDataLayout());
  PtxModule out;
  for (size_t i = 0; i < kernels.size(); ++i) {
    EmittedKernel e = emit_kernel(*kernels[i], ctx, entries[i], EmitTarget::Nvptx);
    e.module->setTargetTriple(kTriple);
    e.module->setDataLayout(tm.createDataLayout());
    if (llvm::Linker::linkModules(*module, std::move(e.module)))
      throw std::logic_error("linking the LLVM module of kernel " + kernels[i]->name + " failed");
    out.kernels.push_back({entries[i], std::move(e.sites)});
  }

  // libdevice's functions where kernels call them; the rest is dropped.
  bool calls_libdevice = false;
  for (llvm::Function& f : *module)
    if (f.isDeclaration() && f.getName().starts_with("__nv_")) calls_libdevice = true;
  if (calls_libdevice) {
    std::string_view bc = libdevice_bitcode();
    if (bc.empty())
      throw std::runtime_error("this build has no libdevice (the CUDA toolkit's nvvm/libdevice/libdevice.10.bc was not found "
                               "when it was built), so kernels calling f64 math functions cannot be compiled for the GPU");
    auto parsed = llvm::parseBitcodeFile(llvm::MemoryBufferRef(llvm::StringRef(bc.data(), bc.size()), "libdevice"), ctx);
    if (!parsed) {
      llvm::consumeError(parsed.takeError());
      throw std::runtime_error("the embedded libdevice does not parse");
    }
    std::unique_ptr<llvm::Module> lib = std::move(*parsed);
    lib->setTargetTriple(kTriple);
    lib->setDataLayout(tm.createDataLayout());
    if (llvm::Linker::linkModules(*module, std::move(lib), llvm::Linker::Flags::LinkOnlyNeeded))
      throw std::logic_error("linking libdevice failed");
  }
  // libdevice asks whether denormals flush to zero: they do not, as on the CPU.
  module->addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz", uint32_t{0});
  std::set<std::string> keep(entries.begin(), entries.end());
  for (llvm::Function& f : *module) {
    if (f.isDeclaration()) continue;
    if (!keep.count(f.getName().str())) f.setLinkage(llvm::GlobalValue::InternalLinkage);
    f.addFnAttr("target-cpu", arch.name);
    f.addFnAttr("target-features", arch.ptx_feature);
  }
  for (llvm::GlobalVariable& g : module->globals())
    if (!g.isDeclaration()) g.setLinkage(llvm::GlobalValue::InternalLinkage);

  optimize_o3(*module, tm, /*vectorize=*/false);  // the threads are the vector lanes

  std::string err;
  llvm::raw_string_ostream es(err);
  if (llvm::verifyModule(*module, &es)) throw std::logic_error("the optimised GPU module does not verify: " + es.str());
  if (what == "llvm") {
    llvm::raw_string_ostream os(out.ptx);
    module->print(os, nullptr);
    return out;
  }
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::AssemblyFile))
    throw std::runtime_error("LLVM's NVPTX target cannot emit PTX");
  pm.run(*module);
  out.ptx.assign(buffer.begin(), buffer.end());
  return out;
}

}  // namespace zyntax::codegen
