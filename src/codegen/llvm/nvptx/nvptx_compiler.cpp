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
#include "codegen/llvm/nvptx/nvptx_llvm_target.hpp"
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

}  // namespace

bool have_libdevice() { return libdevice_bitcode().size() > 0; }

NvptxCompiler& NvptxCompiler::instance() {
  static NvptxCompiler* compiler = new NvptxCompiler();
  return *compiler;
}

NvptxCompiler::NvptxCompiler() : machines_(kTriple) {
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetMC();
  LLVMInitializeNVPTXAsmPrinter();
}

NvptxCompiler::~NvptxCompiler() = default;

llvm::TargetMachine& NvptxCompiler::machine(const NvptxArch& arch) {
  return machines_.get(arch.name, arch.ptx_feature, std::nullopt);
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
  NvptxLlvmTarget target(nvptx_gpu_target(arch));
  for (size_t i = 0; i < kernels.size(); ++i) {
    EmittedKernel e = emit_kernel(*kernels[i], ctx, entries[i], target);
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
