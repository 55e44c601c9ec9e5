#include "codegen/llvm/amdgpu/amdgpu_compiler.hpp"

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
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
#include "codegen/llvm/amdgpu/amdgpu_llvm_target.hpp"
#include "codegen/llvm/amdgpu/code_object_link.hpp"
#include "codegen/llvm/amdgpu/ocml.hpp"
#include "codegen/llvm/optimize.hpp"
#include "codegen_fingerprint.hpp"
#include "plan/kernel_support.hpp"
#include "runtime/disk_cache.hpp"

extern "C" {
void LLVMInitializeAMDGPUTargetInfo();
void LLVMInitializeAMDGPUTarget();
void LLVMInitializeAMDGPUTargetMC();
void LLVMInitializeAMDGPUAsmPrinter();
}

namespace zyntax::codegen {

namespace {

// LLVM's errors while it compiles (a workgroup's LDS past the
// architecture's, ...), gathered instead of ending the process.
void gather_errors(const llvm::DiagnosticInfo* d, void* errors) {
  if (d->getSeverity() != llvm::DS_Error) return;
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::DiagnosticPrinterRawOStream printer(os);
  d->print(printer);
  *static_cast<std::string*>(errors) += (static_cast<std::string*>(errors)->empty() ? "" : "; ") + os.str();
}

// What a kernel would need beyond the architecture, checked before LLVM
// sees it: the planner's limits (LDS, private arrays) and the workgroup size.
void check_limits(const AmdgpuKernelSpec& spec, const GpuTarget& target) {
  std::string where = "kernel " + spec.entry + " for " + target.arch + ": ";
  if (spec.block_threads < 1 || spec.block_threads > target.max_threads_per_block)
    throw std::invalid_argument(where + std::to_string(spec.block_threads) + " work-items per workgroup (at most " +
                                std::to_string(target.max_threads_per_block) + ")");
  GpuSupport support = gpu_support(*spec.kernel, target);
  if (support.why_not) throw std::invalid_argument(where + *support.why_not);
}

// ocml's settings, which its functions read as constants: IEEE results
// (no finite-only or unsafe shortcuts, denormals kept, sqrt rounded
// correctly), and the architecture's ISA version, wave size and ABI.
void define_ocml_controls(llvm::Module& m, const AmdgpuArch& arch, int code_object_version) {
  const std::pair<const char*, int> controls[] = {
      {"__oclc_ISA_version", arch.isa_version},     {"__oclc_finite_only_opt", 0},          {"__oclc_unsafe_math_opt", 0},
      {"__oclc_daz_opt", 0},                        {"__oclc_correctly_rounded_sqrt32", 1}, {"__oclc_wavefrontsize64", arch.wave_size == 64},
      {"__oclc_ABI_version", code_object_version * 100}};
  for (const auto& [name, value] : controls) {
    llvm::GlobalVariable* g = m.getGlobalVariable(name);
    if (!g || !g->isDeclaration()) continue;
    g->setInitializer(llvm::ConstantInt::get(g->getValueType(), static_cast<uint64_t>(value)));
    g->setConstant(true);
  }
  for (llvm::GlobalVariable& g : m.globals())
    if (g.isDeclaration() && g.getName().starts_with("__oclc_"))
      throw std::logic_error("ocml reads " + g.getName().str() + ", which this compiler does not set");
}

void link_ocml(llvm::Module& m, llvm::TargetMachine& tm) {
  std::string_view bc = ocml_bitcode();
  if (bc.empty())
    throw std::runtime_error("this build has no ocml (the ROCm device libraries' ocml.bc was not found when it was built), so "
                             "kernels calling f64 math functions cannot be compiled for AMD GPUs");
  auto parsed = llvm::parseBitcodeFile(llvm::MemoryBufferRef(llvm::StringRef(bc.data(), bc.size()), "ocml"), m.getContext());
  if (!parsed) {
    llvm::consumeError(parsed.takeError());
    throw std::runtime_error("the embedded ocml does not parse");
  }
  std::unique_ptr<llvm::Module> lib = std::move(*parsed);
  lib->setTargetTriple(kAmdgpuTriple);
  lib->setDataLayout(tm.createDataLayout());
  if (llvm::Linker::linkModules(m, std::move(lib), llvm::Linker::Flags::LinkOnlyNeeded)) throw std::logic_error("linking ocml failed");
}

std::string names(const std::vector<AmdgpuKernelSpec>& kernels) {
  std::string s;
  for (const AmdgpuKernelSpec& k : kernels) s += (s.empty() ? "" : ", ") + k.entry;
  return s;
}

}  // namespace

bool have_ocml() { return ocml_bitcode().size() > 0; }

AmdgpuCompiler& AmdgpuCompiler::instance() {
  static AmdgpuCompiler* compiler = new AmdgpuCompiler();
  return *compiler;
}

AmdgpuCompiler::AmdgpuCompiler() : machines_(kAmdgpuTriple) {
  LLVMInitializeAMDGPUTargetInfo();
  LLVMInitializeAMDGPUTarget();
  LLVMInitializeAMDGPUTargetMC();
  LLVMInitializeAMDGPUAsmPrinter();
}

AmdgpuCompiler::~AmdgpuCompiler() = default;

llvm::TargetMachine& AmdgpuCompiler::machine(const AmdgpuArch& arch) {
  return machines_.get(arch.name, arch.features(), llvm::Reloc::PIC_);
}

AmdgpuModule AmdgpuCompiler::compile(const std::vector<AmdgpuKernelSpec>& kernels, const AmdgpuArch& arch, const std::string& what,
                                     int code_object_version) {
  if (code_object_version != 4 && code_object_version != 5)
    throw std::invalid_argument("code object version " + std::to_string(code_object_version) + ": 4 or 5");
  GpuTarget target = amdgpu_gpu_target(arch);
  for (const AmdgpuKernelSpec& k : kernels) check_limits(k, target);
  std::lock_guard<std::mutex> lock(mu_);
  llvm::TargetMachine& tm = machine(arch);
  llvm::LLVMContext ctx;
  std::string errors;
  ctx.setDiagnosticHandlerCallBack(gather_errors, &errors);
  auto module = std::make_unique<llvm::Module>("zyntax", ctx);
  module->setTargetTriple(kAmdgpuTriple);
  module->setDataLayout(tm.createDataLayout());
  module->addModuleFlag(llvm::Module::Error, "amdhsa_code_object_version", static_cast<uint32_t>(code_object_version * 100));
  AmdgpuModule out;
  std::string layout = tm.createDataLayout().getStringRepresentation();
  for (const AmdgpuKernelSpec& k : kernels) {
    AmdgpuLlvmTarget hooks(target, layout, code_object_version, k.block_threads);
    EmittedKernel e = emit_kernel(*k.kernel, ctx, k.entry, hooks);
    if (llvm::Linker::linkModules(*module, std::move(e.module)))
      throw std::logic_error("linking the LLVM module of kernel " + k.kernel->name + " failed");
    out.sites.push_back(std::move(e.sites));
  }

  // ocml's functions where kernels call them; the rest is dropped.
  bool calls_ocml = false;
  for (llvm::Function& f : *module)
    if (f.isDeclaration() && f.getName().starts_with("__ocml_")) calls_ocml = true;
  if (calls_ocml) {
    link_ocml(*module, tm);
    define_ocml_controls(*module, arch, code_object_version);
  }
  std::set<std::string> keep;
  for (const AmdgpuKernelSpec& k : kernels) keep.insert(k.entry);
  for (llvm::Function& f : *module) {
    if (f.isDeclaration()) continue;
    if (!keep.count(f.getName().str())) f.setLinkage(llvm::GlobalValue::InternalLinkage);
    f.addFnAttr("target-cpu", arch.name);
    f.addFnAttr("target-features", arch.features());
  }
  for (llvm::GlobalVariable& g : module->globals())
    if (!g.isDeclaration()) g.setLinkage(llvm::GlobalValue::InternalLinkage);

  optimize_o3(*module, tm, /*vectorize=*/false);  // the work-items are the vector lanes

  std::string err;
  llvm::raw_string_ostream es(err);
  if (llvm::verifyModule(*module, &es)) throw std::logic_error("the optimised AMDGPU module does not verify: " + es.str());
  if (what == "llvm") {
    llvm::raw_string_ostream os(out.bytes);
    module->print(os, nullptr);
    return out;
  }
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr, what == "asm" ? llvm::CodeGenFileType::AssemblyFile : llvm::CodeGenFileType::ObjectFile))
    throw std::runtime_error("LLVM's AMDGPU target cannot emit code for " + arch.name);
  pm.run(*module);
  if (!errors.empty()) throw std::runtime_error("kernel " + names(kernels) + " does not compile for " + arch.name + ": " + errors);
  std::string object(buffer.begin(), buffer.end());
  if (what == "asm") {
    out.bytes = std::move(object);
    return out;
  }
  try {
    out.bytes = link_code_object(object);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error("kernel " + names(kernels) + " for " + arch.name + ": " + e.what());
  }
  return out;
}

AmdgpuCodeObject compile_amdgpu(const cir::Kernel& planned, const std::string& entry, const AmdgpuArch& arch, int code_object_version,
                                int block_threads) {
  AmdgpuCodeObject out;
  out.entry = entry;
  try {
    out.elf = AmdgpuCompiler::instance().compile({{&planned, entry, block_threads}}, arch, "hsaco", code_object_version).bytes;
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  return out;
}

AmdgpuCodeObject cached_amdgpu(const cir::Kernel& planned, const std::string& entry, const AmdgpuArch& arch, const DiskCache& cache,
                               int code_object_version, int block_threads, bool* from_disk) {
  std::string key = std::string("hsaco\nzyntax ") + ZYNTAX_VERSION + ", LLVM " + ZYNTAX_LLVM_VERSION + ", codegen " + ZYNTAX_CODEGEN_FINGERPRINT +
                    "\n" + arch.name + " v" + std::to_string(code_object_version) + " " + std::to_string(block_threads) + " " + entry +
                    "\n" + cir::print(planned);
  std::optional<std::string> cached = cache.load(key);
  if (from_disk) *from_disk = cached.has_value();
  if (cached) return {*cached, entry, ""};
  AmdgpuCodeObject out = compile_amdgpu(planned, entry, arch, code_object_version, block_threads);
  if (out.error.empty()) cache.store(key, out.elf);
  return out;
}

}  // namespace zyntax::codegen
