#include "codegen/llvm/cpu/cpu_jit.hpp"

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "cir/hash.hpp"
#include "codegen_fingerprint.hpp"
#include "codegen/llvm/cpu/cpu_llvm_target.hpp"
#include "codegen/llvm/cpu/perf_map.hpp"
#include "codegen/llvm/optimize.hpp"
#include "cir/printer.hpp"
#include "runtime/disk_cache.hpp"

namespace zyntax::codegen {

namespace {

// LLVM's warnings and remarks while it compiles a kernel (a loop a schedule
// marked for vectors that the vectoriser left scalar: the code is still
// right) are not for a kernel's author to act on, so they are dropped; an
// error ends the process as LLVM's own handler would, after printing it.
void drop_hints(const llvm::DiagnosticInfo* d, void*) {
  if (d->getSeverity() != llvm::DS_Error) return;
  llvm::DiagnosticPrinterRawOStream printer(llvm::errs());
  llvm::errs() << "LLVM error: ";
  d->print(printer);
  llvm::errs() << "\n";
  std::exit(1);
}

std::string error_text(llvm::Error e) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << e;
  return os.str();
}

template <class T>
T unwrap(llvm::Expected<T> v, const char* what) {
  if (!v) throw std::runtime_error(std::string(what) + ": " + error_text(v.takeError()));
  return std::move(*v);
}

}  // namespace

CpuJit& CpuJit::instance() {
  static CpuJit* jit = new CpuJit();  // lives as long as the code it made may run
  return *jit;
}

CpuJit::CpuJit() {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::InitializeNativeTargetAsmParser();
  target_ = detect_host_cpu(forced_simd_level());

  std::string err;
  const llvm::Target* t = llvm::TargetRegistry::lookupTarget(target_.triple, err);
  if (!t) throw std::runtime_error("no LLVM target for " + target_.triple + ": " + err);
  llvm::TargetOptions options;  // IEEE semantics: no fast-math, no FMA contraction
  machine_.reset(t->createTargetMachine(target_.triple, target_.cpu, target_.features, options, llvm::Reloc::PIC_,
                                        std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  quick_machine_.reset(t->createTargetMachine(target_.triple, target_.cpu, target_.features, options, llvm::Reloc::PIC_,
                                              std::nullopt, llvm::CodeGenOptLevel::None));

  llvm::orc::JITTargetMachineBuilder jtmb{llvm::Triple(target_.triple)};
  jtmb.setCPU(target_.cpu);
  llvm::SmallVector<llvm::StringRef, 64> features;
  llvm::StringRef(target_.features).split(features, ',', -1, false);
  for (llvm::StringRef f : features) jtmb.getFeatures().AddFeature(f.drop_front(), f.front() == '+');
  jtmb.setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  jit_ = unwrap(llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(jtmb)).create(), "creating the JIT");
  // libm for the math functions, and the runtime helpers.
  jit_->getMainJITDylib().addGenerator(unwrap(llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
                                                  jit_->getDataLayout().getGlobalPrefix()),
                                              "finding libm"));
  llvm::orc::SymbolMap helpers;
  helpers[jit_->mangleAndIntern("zyntax_rt_ipow")] = {llvm::orc::ExecutorAddr::fromPtr(&zyntax_rt_ipow),
                                                       llvm::JITSymbolFlags::Exported};
  if (auto e = jit_->getMainJITDylib().define(llvm::orc::absoluteSymbols(std::move(helpers))))
    throw std::runtime_error("defining runtime helpers: " + error_text(std::move(e)));
}

CpuJit::~CpuJit() = default;

std::unique_ptr<llvm::Module> CpuJit::build(const cir::Kernel& k, llvm::LLVMContext& ctx, const std::string& name) {
  ctx.setDiagnosticHandlerCallBack(drop_hints, nullptr);
  EmittedKernel e = emit_kernel(k, ctx, name, CpuLlvmTarget::instance());
  prepare(*e.module);
  return std::move(e.module);
}

void CpuJit::prepare(llvm::Module& m) {
  m.setTargetTriple(target_.triple);
  m.setDataLayout(machine_->createDataLayout());
  for (llvm::Function& f : m) {
    if (f.isDeclaration()) continue;
    f.addFnAttr("target-cpu", target_.cpu);
    f.addFnAttr("target-features", target_.features);
    // Use the full width of the detected vector unit (LLVM prefers 256 bits on AVX-512 otherwise).
    if (target_.vector_bits > 0) f.addFnAttr("prefer-vector-width", std::to_string(target_.vector_bits));
  }
  // LLVM's O3 pipeline; vectorizers off when scalar code is asked for.
  optimize_o3(m, *machine_, target_.simd != "scalar");
}

std::string CpuJit::cache_key(const cir::Kernel& k) const {
  return std::string("zyntax ") + ZYNTAX_VERSION + ", LLVM " + ZYNTAX_LLVM_VERSION + ", codegen " +
         ZYNTAX_CODEGEN_FINGERPRINT + "\n" + target_.triple + " " + target_.cpu + " " + target_.simd + " " +
         target_.features + "\n" + cir::print(k);
}

namespace {

// A block this long (a sum of some 300 tanh(exp(...)) terms, scalar already:
// the vectoriser stops at 12,000 instructions) takes LLVM's optimising code
// generator 4 s, and twice the block four times as long (its register
// allocator and machine scheduler); without its optimisations, a quarter of
// that, growing linearly. The code is slower (values go through the stack),
// on the largest bodies only.
constexpr size_t kMostInstructionsPerOptimizedBlock = 16000;

size_t largest_block(const llvm::Module& m) {
  size_t most = 0;
  for (const llvm::Function& f : m)
    for (const llvm::BasicBlock& b : f) most = std::max(most, b.size());
  return most;
}

}  // namespace

llvm::TargetMachine& CpuJit::code_generator(const llvm::Module& m) {
  return largest_block(m) > kMostInstructionsPerOptimizedBlock ? *quick_machine_ : *machine_;
}

std::string CpuJit::object_code(llvm::Module& m) {
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream out(buffer);
  llvm::legacy::PassManager pm;
  if (code_generator(m).addPassesToEmitFile(pm, out, nullptr, llvm::CodeGenFileType::ObjectFile))
    throw std::runtime_error("this target cannot emit object code");
  pm.run(m);
  return std::string(buffer.begin(), buffer.end());
}

const CpuJit::Compiled& CpuJit::compile(const cir::Kernel& k, uint64_t hash) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = compiled_.find(hash);
  if (it != compiled_.end()) return *it->second;
  auto t0 = std::chrono::steady_clock::now();
  auto out = std::make_unique<Compiled>();
  std::string key = cache_key(k);
  // Named by what the code is, so a cached object always matches its name.
  std::string name = "zyntax_kernel_" + cir::hash_hex(cir::hash_text(key));
  std::optional<std::string> cached = DiskCache::global().load(key);
  last_.from_disk = cached && (out->fn = reinterpret_cast<KernelFn>(load(*cached, name, {})));
  if (!out->fn) {  // build, and keep the object code for the next run
    llvm::LLVMContext ctx;
    std::unique_ptr<llvm::Module> m = build(k, ctx, name);
    std::string object = object_code(*m);
    DiskCache::global().store(key, object);
    out->fn = reinterpret_cast<KernelFn>(load(object, name, {}));
    if (!out->fn) throw std::runtime_error("the JIT could not load kernel " + k.name);
  }
  last_.milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return *(compiled_[hash] = std::move(out));
}

// Each piece of code in its own library, which sees libm and the helpers.
void* CpuJit::load(const std::string& object, const std::string& symbol, const std::vector<std::pair<std::string, void*>>& helpers) {
  auto created = jit_->createJITDylib("code" + std::to_string(libraries_++));
  if (!created) throw std::runtime_error("creating a JIT library: " + error_text(created.takeError()));
  llvm::orc::JITDylib& lib = *created;
  lib.addToLinkOrder(jit_->getMainJITDylib());
  if (!helpers.empty()) {
    llvm::orc::SymbolMap symbols;
    for (const auto& [name, address] : helpers)
      symbols[jit_->mangleAndIntern(name)] = {llvm::orc::ExecutorAddr::fromPtr(address), llvm::JITSymbolFlags::Exported};
    if (auto e = lib.define(llvm::orc::absoluteSymbols(std::move(symbols)))) throw std::runtime_error("defining helpers: " + error_text(std::move(e)));
  }
  if (auto e = jit_->addObjectFile(lib, llvm::MemoryBuffer::getMemBufferCopy(object, symbol))) {
    llvm::consumeError(std::move(e));
    return nullptr;
  }
  auto addr = jit_->lookup(lib, symbol);
  if (!addr) {
    llvm::consumeError(addr.takeError());
    return nullptr;
  }
  add_to_perf_map(object, symbol, addr->toPtr<void*>());
  return addr->toPtr<void*>();
}

void* CpuJit::compile_module(llvm::Module& m, const std::string& key, const std::string& symbol,
                             const std::vector<std::pair<std::string, void*>>& helpers) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string full_key = key.empty() ? "" : std::string("zyntax ") + ZYNTAX_VERSION + ", LLVM " + ZYNTAX_LLVM_VERSION + ", codegen " +
                                                ZYNTAX_CODEGEN_FINGERPRINT + "\n" + target_.triple + " " + target_.cpu + " " +
                                                target_.features + "\n" + key;
  if (!full_key.empty())
    if (std::optional<std::string> cached = DiskCache::global().load(full_key))
      if (void* p = load(*cached, symbol, helpers)) return p;
  prepare(m);
  std::string object = object_code(m);
  if (!full_key.empty()) DiskCache::global().store(full_key, object);
  void* p = load(object, symbol, helpers);
  if (!p) throw std::runtime_error("the JIT could not load " + symbol);
  return p;
}

std::string CpuJit::emit(const cir::Kernel& k, const std::string& what) {
  std::lock_guard<std::mutex> lock(mu_);
  llvm::LLVMContext ctx;
  std::unique_ptr<llvm::Module> m = build(k, ctx, "zyntax_kernel_" + k.name);
  std::string text;
  llvm::raw_string_ostream os(text);
  if (what == "llvm") {
    m->print(os, nullptr);
    return os.str();
  }
  if (what == "obj") return object_code(*m);
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream out(buffer);
  llvm::legacy::PassManager pm;
  if (code_generator(*m).addPassesToEmitFile(pm, out, nullptr, llvm::CodeGenFileType::AssemblyFile))
    throw std::runtime_error("this target cannot emit assembly");
  pm.run(*m);
  return std::string(buffer.begin(), buffer.end());
}

}  // namespace zyntax::codegen
