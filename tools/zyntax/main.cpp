// The `zyntax` command: run, check and compile ZynML programs, list devices.
// Exit codes: 0 success, 1 an error in the program, 2 a usage error.

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdlib>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <mutex>
#include <set>
#include <sstream>

#include "backends/registry.hpp"
#include "cir/pass_manager.hpp"
#include "plan/cpu_plan.hpp"
#include "cir/passes/specialize.hpp"
#include "codegen/llvm/cpu/cpu_jit.hpp"
#include "codegen/llvm/ir_emitter.hpp"
#include "backends/cuda/cuda_device.hpp"
#include "codegen/llvm/nvptx/nvptx_compiler.hpp"
#include "codegen/llvm/amdgpu/amdgpu_compiler.hpp"
#include "codegen/llvm/amdgpu/amdgpu_target.hpp"
#include "codegen/glsl/glsl_emitter.hpp"
#include "codegen/glsl/spirv_compiler.hpp"
#include "codegen/msl/msl_emitter.hpp"
#include "codegen/wgsl/wgsl_emitter.hpp"
#include "codegen/wgsl/wgsl_module.hpp"
#include "codegen/llvm/nvptx/nvptx_target.hpp"
#include "cir/printer.hpp"
#include "driver/session.hpp"
#include "interp/host_interpreter.hpp"
#include "interp/fusion_chains.hpp"
#include "fusion/run_plan.hpp"
#include "plan/gpu_plan.hpp"
#include "runtime/device.hpp"
#include "runtime/launch.hpp"
#include "runtime/profile_report.hpp"
#include "runtime/profiler.hpp"
#include "runtime/thread_pool.hpp"
#include "lower/check_program.hpp"
#include "support/nearest_name.hpp"
#include "support/stack.hpp"
#include "syntax/ast_printer.hpp"
#include "tools/zyntax/load_program.hpp"
#include "runtime/tuning_database.hpp"
#include "tools/zyntax/tune_command.hpp"

namespace {

using namespace zyntax;

constexpr int kOk = 0;
constexpr int kProgramError = 1;
constexpr int kUsageError = 2;

using cli::load_and_check;

struct ProfileOptions {
  bool table = false;  // --profile
  std::string trace;   // --trace FILE
};

int run_command(const std::string& path, const std::string& device, uint64_t seed, bool verbose, const ProfileOptions& profile,
                const std::string& fusion, bool explain_fusion, const std::string& host_tier, bool explain_host) {
  if (verbose) {
    if (Device* d = device_registry().find(device)) {
      std::cerr << "zyntax: device " << device;
      if (d->info().id != device) std::cerr << " -> " << d->info().id;
      std::cerr << " (" << d->info().name << "; " << d->info().backend << ")";
      if (device == "auto" && d->info().type != "gpu")
        std::cerr << "; " << device_registry().unavailable_reason("cuda");
      std::cerr << "\n";
    }
  }
  // "auto" always names a device; checking it would open every GPU driver
  // before the program is even read.
  if (device != "auto" && !device_registry().find(device)) {
    std::cerr << "zyntax: error: " << device_registry().not_available_message(device) << "; auto picks one\n";
    return kUsageError;
  }
  Session session;
  LoadedModule* m = load_and_check(session, path, nullptr);
  if (!m) return kProgramError;
  RunOptions options;
  options.device = device;
  options.seed = seed;
  options.out = &std::cout;
  options.fusion = fusion == "on";
  if (explain_fusion) options.explain_fusion = &std::cerr;
  options.host = *host::parse_host_mode(host_tier);
  if (explain_host) options.explain_host = &std::cerr;
  Interpreter interp(session, options);
  size_t before = session.diags().diagnostics().size();
  if (profile.table || !profile.trace.empty()) Profiler::global().enable();
  bool ok = interp.run(*m);
  std::cout.flush();
  if (profile.table || !profile.trace.empty()) {
    std::vector<ProfileEvent> events = Profiler::global().events();
    if (profile.table) print_profile(events, Profiler::global().now_ns(), std::cerr);
    if (!profile.trace.empty()) {
      std::ofstream trace(profile.trace);
      write_chrome_trace(events, trace);
      trace.flush();
      if (!trace) {
        std::cerr << "zyntax: error: cannot write the trace to " << profile.trace << "\n";
        return kProgramError;
      }
    }
  }
  if (!ok) {
    DiagnosticEngine runtime_errors(session.sources());
    for (size_t i = before; i < session.diags().diagnostics().size(); ++i)
      runtime_errors.report(session.diags().diagnostics()[i]);
    runtime_errors.print(std::cerr);
    return kProgramError;
  }
  return kOk;
}

int check_command(const std::string& path) {
  Session session;
  return load_and_check(session, path, nullptr) ? kOk : kProgramError;
}

struct CompileOptions {
  std::string emit, output, kernel;
  std::vector<std::string> dims;  // NAME=VALUE
  std::string backend = "cir";    // cir, llvm (the CPU), nvptx, cuda, rocm, vulkan, metal, webgpu
  std::string arch;               // nvptx: sm_80, ...; rocm: gfx90a, gfx942, gfx1100
  bool sizes_from_run = false;
  int code_object_version = 5;    // rocm: the HSA code object's version (4 for older runtimes)
};

// The kernel specialised on the sizes given with --dim, or left generic
// (its dimensions become arguments) when none are given.
cir::Kernel with_dims(const cir::Kernel& k, const std::vector<std::string>& given) {
  if (given.empty()) return k;
  std::map<std::string, int64_t> dims;
  for (const std::string& g : given) {
    size_t eq = g.find('=');
    if (eq == std::string::npos || eq == 0) throw std::invalid_argument("--dim takes NAME=VALUE, got '" + g + "'");
    std::string text = g.substr(eq + 1);
    int64_t value = -1;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < 0)
      throw std::invalid_argument("--dim " + g + ": '" + text + "' is not a size (a whole number, 0 or more, below 2^63)");
    dims[g.substr(0, eq)] = value;
  }
  std::string missing;
  for (const cir::DimParam& d : k.dims)
    if (!dims.count(d.name)) missing += (missing.empty() ? "" : ", ") + d.name;
  if (!missing.empty()) throw std::invalid_argument("kernel " + k.name + " also needs --dim for: " + missing);
  return cir::specialize(k, dims);
}

// LLVM IR, assembly or an object file of each kernel, from the CPU backend.
int emit_native(Session& session, const std::vector<CheckedKernel>& kernels, const CompileOptions& o, std::string& text) {
  int emitted = 0;
  for (const CheckedKernel& ck : kernels) {
    std::string name = session.kernel_name(ck.node);
    if (!o.kernel.empty() && name != o.kernel) continue;
    if (!ck.deferred.empty()) {
      text += "; kernel " + name + ": lowered when it runs (" + ck.deferred + ")\n";
      continue;
    }
    CpuPlan plan = plan_cpu_kernel(with_dims(ck.kernel, o.dims), ThreadPool::global().size(), codegen::CpuJit::instance().target().vector_bits);
    if (!plan.kernel) {
      std::string reason = !ck.kernel.dims.empty() && o.dims.empty() ? "give every size with --dim to compile its tiles" : plan.why_not;
      text += "; kernel " + name + ": runs on the reference executor (" + reason + ")\n";
      continue;
    }
    const cir::Kernel& k = *plan.kernel;
    if (o.emit == "obj" && emitted > 0)
      throw std::invalid_argument("an object file holds one kernel: choose it with --kernel NAME");
    text += codegen::CpuJit::instance().emit(k, o.emit);
    ++emitted;
  }
  if (o.emit == "obj" && emitted == 0) throw std::invalid_argument("no kernel was compiled, so there is no object file");
  return kOk;
}

// The specialised kernels a run of the program launches, each once, named
// by its block (name, name_2, ... for further sizes). The program runs on
// the CPU with its printing discarded.
// An error of the program itself (exit status 1), not of the command line.
struct ProgramFailed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::vector<std::pair<std::string, cir::Kernel>> kernels_from_run(Session& session, LoadedModule& m) {
  std::mutex mu;
  std::set<uint64_t> seen;
  std::map<std::string, int> count;
  std::vector<std::pair<std::string, cir::Kernel>> out;
  set_launch_observer([&](const cir::Kernel& k, uint64_t hash) {
    std::lock_guard<std::mutex> lock(mu);
    if (!seen.insert(hash).second) return;
    int n = ++count[k.name];
    out.emplace_back(n == 1 ? k.name : k.name + "_" + std::to_string(n), k);
  });
  std::ostringstream discarded;
  RunOptions options;
  options.device = "cpu";
  options.out = &discarded;
  options.fusion = false;  // the blocks as written: a module exports each by its name
  Interpreter interp(session, options);
  bool ok = interp.run(m);
  set_launch_observer(nullptr);
  if (!ok) {
    session.diags().print(std::cerr);
    throw ProgramFailed("the program failed while running to learn its kernels' sizes");
  }
  return out;
}

// The kernels a GPU backend compiles: the program's, specialised with --dim
// (or generic), or each at the sizes a run launches it with.
std::vector<std::pair<std::string, cir::Kernel>> kernels_to_compile(Session& session, LoadedModule& m, const std::vector<CheckedKernel>& kernels,
                                                                    const CompileOptions& o, std::string& text) {
  std::vector<std::pair<std::string, cir::Kernel>> named;
  if (o.sizes_from_run) return kernels_from_run(session, m);
  for (const CheckedKernel& ck : kernels) {
    std::string name = session.kernel_name(ck.node);
    if (!o.kernel.empty() && name != o.kernel) continue;
    if (!ck.deferred.empty()) {
      text += "// kernel " + name + ": lowered when it runs (" + ck.deferred + "); try --sizes-from-run\n";
      continue;
    }
    named.emplace_back(name, with_dims(ck.kernel, o.dims));
  }
  return named;
}

// Every kernel (or the one --kernel names) planned for a shader target:
// `write` gets those the dialect writes (`why_not` says why not for the
// others, which a comment names).
void each_shader_kernel(Session& session, LoadedModule& m, const std::vector<CheckedKernel>& kernels, const CompileOptions& o, std::string& text,
                        const GpuTarget& target, const char* api, const std::function<std::string(const GpuPlan&)>& why_not,
                        const std::function<void(const std::string&, const GpuPlan&)>& write) {
  std::vector<std::pair<std::string, cir::Kernel>> named = kernels_to_compile(session, m, kernels, o, text);
  for (auto& [name, k] : named) {
    if (!o.kernel.empty() && name != o.kernel && k.name != o.kernel) continue;
    GpuPlan plan = gpu_plan(k, target);
    std::string why = plan.kernel ? why_not(plan) : plan.why_not;
    if (!plan.kernel || !why.empty()) {
      if (!k.dims.empty() && why.find("once every size") != std::string::npos)
        why = "give every size with --dim, or use --sizes-from-run, to compile its tiles";
      text += "// kernel " + name + ": not compiled for " + api + " (" + why + ")\n";
      continue;
    }
    write(name, plan);
  }
}

std::string shader_banner(const std::string& name, const GpuPlan& plan, int threads) {
  return "// kernel " + name + " (" + gpu_schedule_name(plan.schedule) + ", workgroups of " + std::to_string(threads) + ")\n";
}

// GLSL, SPIR-V assembly or a SPIR-V binary of every kernel, as the Vulkan
// device vulkan:0 would run it (or, without one, a generic Vulkan device:
// codegen::generic_vulkan_target).
int emit_vulkan(Session& session, LoadedModule& m, const std::vector<CheckedKernel>& kernels, const CompileOptions& o, std::string& text) {
  Device* device = device_registry().find("vulkan:0");
  GpuTarget target = device && device->gpu_target() ? *device->gpu_target() : codegen::generic_vulkan_target();
  int emitted = 0;
  auto why_not = [&](const GpuPlan& p) { return codegen::glsl_unsupported_reason(*p.kernel, target, p.block_threads).value_or(""); };
  each_shader_kernel(session, m, kernels, o, text, target, "Vulkan", why_not, [&](const std::string& name, const GpuPlan& plan) {
    codegen::GlslKernel g = codegen::emit_glsl(*plan.kernel, target, plan.block_threads);
    if (o.emit == "spirv") {
      if (emitted > 0) throw std::invalid_argument("a SPIR-V binary holds one kernel: choose it with --kernel NAME");
      codegen::SpirvModule spv = codegen::compile_glsl(g.source, name);
      if (!spv.error.empty()) throw std::logic_error("the GLSL of kernel " + name + " does not compile: " + spv.error);
      text.append(reinterpret_cast<const char*>(spv.words.data()), spv.words.size() * 4);
    } else if (o.emit == "spirv-asm") {
      text += "; kernel " + name + "\n" + codegen::compile_glsl_to_assembly(g.source, name);
    } else {
      text += shader_banner(name, plan, g.local_size) + g.source;
    }
    ++emitted;
  });
  if (o.emit == "spirv" && emitted == 0) throw std::invalid_argument("no kernel was compiled, so there is no SPIR-V binary");
  return kOk;
}

// MSL of every kernel, as the Metal device metal:0 would run it (or,
// without one, an Apple GPU of family Apple7: codegen::apple_gpu_target).
int emit_metal(Session& session, LoadedModule& m, const std::vector<CheckedKernel>& kernels, const CompileOptions& o, std::string& text) {
  Device* device = device_registry().find("metal:0");
  GpuTarget target = device && device->gpu_target() ? *device->gpu_target() : codegen::apple_gpu_target();
  auto why_not = [&](const GpuPlan& p) { return codegen::msl_unsupported_reason(*p.kernel, target, p.block_threads).value_or(""); };
  each_shader_kernel(session, m, kernels, o, text, target, "Metal", why_not, [&](const std::string& name, const GpuPlan& plan) {
    codegen::MslKernel k = codegen::emit_msl(*plan.kernel, target, plan.block_threads);
    text += shader_banner(name, plan, k.threads_per_group) + k.source;
  });
  return kOk;
}

// WGSL of every kernel, as planned for what every WebGPU adapter offers
// (codegen::webgpu_target); with --emit js, an ES module of them all
// (codegen::wgsl_js_module) and the runtime it imports, in the folder -o
// names.
int emit_webgpu(Session& session, LoadedModule& m, const std::vector<CheckedKernel>& kernels, const CompileOptions& o, const std::string& path,
                std::string& text) {
  GpuTarget target = codegen::webgpu_target();
  std::vector<codegen::WgslModuleKernel> module;
  auto why_not = [&](const GpuPlan& p) {
    std::string why = codegen::wgsl_unsupported_reason(*p.kernel, target, p.block_threads).value_or("");
    if (why.empty() && o.emit == "js") why = codegen::js_shape_problem(*p.kernel).value_or("");
    return why;
  };
  each_shader_kernel(session, m, kernels, o, text, target, "WebGPU", why_not, [&](const std::string& name, const GpuPlan& plan) {
    codegen::WgslKernel w = codegen::emit_wgsl(*plan.kernel, target, plan.block_threads);
    if (o.emit == "js") module.push_back({name, *plan.kernel, std::move(w)});
    else text += shader_banner(name, plan, w.workgroup_size) + w.source;
  });
  if (o.emit != "js") return kOk;
  // The module and its runtime, in the folder -o names; what was left out on standard error.
  std::cerr << text;
  text.clear();
  if (module.empty()) throw std::invalid_argument("no kernel was compiled for WebGPU, so there is no module");
  std::filesystem::path dir(o.output);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::string stem = std::filesystem::path(path).stem().string();
  const char* runtime = "zyntax_webgpu.mjs";
  std::ofstream js(dir / (stem + ".mjs"), std::ios::binary), rt(dir / runtime, std::ios::binary);
  if (!(js << codegen::wgsl_js_module(module, std::filesystem::path(path).filename().string(), runtime)) || !(rt << codegen::webgpu_runtime_source()))
    throw std::runtime_error("cannot write the module into '" + o.output + "'");
  std::cerr << "zyntax: wrote " << (dir / (stem + ".mjs")).string() << " (" << module.size() << " kernel" << (module.size() == 1 ? "" : "s")
            << ") and " << (dir / runtime).string() << "\n";
  return kOk;
}

// The kernels a GPU module holds, each planned for `target` under a unique
// entry name; those the planner refuses are comments in `text`. Throws
// std::invalid_argument where kernels were found and none could be
// planned (a module without them would look like success).
struct PlannedModule {
  std::vector<GpuPlan> plans;
  std::vector<std::string> entries;
  bool nothing_to_compile = false;  // a program without compute blocks
};

PlannedModule plan_gpu_module(Session& session, LoadedModule& m, const std::vector<CheckedKernel>& kernels, const CompileOptions& o,
                              std::string& text, const GpuTarget& target) {
  PlannedModule out;
  std::vector<std::pair<std::string, cir::Kernel>> named = kernels_to_compile(session, m, kernels, o, text);
  std::set<std::string> used;
  for (auto& [name, k] : named) {
    if (!o.kernel.empty() && name != o.kernel && k.name != o.kernel) continue;
    GpuPlan plan = gpu_plan(k, target);
    if (!plan.kernel) {
      std::string reason = !k.dims.empty() && plan.why_not.find("once every size") != std::string::npos
                               ? "give every size with --dim, or use --sizes-from-run, to compile its tiles"
                               : plan.why_not;
      text += "// kernel " + name + ": not compiled for the GPU (" + reason + ")\n";
      continue;
    }
    std::string entry = name;
    for (int n = 2; !used.insert(entry).second; ++n) entry = name + "_" + std::to_string(n);
    out.plans.push_back(std::move(plan));
    out.entries.push_back(entry);
  }
  if (out.plans.empty() && named.empty()) {
    text += "// no kernel to compile for the GPU\n";
    out.nothing_to_compile = true;
    return out;
  }
  if (out.plans.empty()) {
    std::cerr << text;
    text.clear();
    throw std::invalid_argument("no kernel was compiled for the GPU, so there is no module");
  }
  return out;
}

// --emit cir of a GPU module: the GPU schedules themselves, as the emitter receives them.
std::string planned_module_cir(const PlannedModule& p) {
  std::string text;
  for (size_t i = 0; i < p.plans.size(); ++i) text += (i ? "\n// entry " : "// entry ") + p.entries[i] + "\n" + cir::print(*p.plans[i].kernel);
  return text;
}

// PTX (or the NVPTX backend's LLVM IR) of every kernel, in one module.
// --backend cuda compiles for the GPU present and has its driver load the
// module, which compiles the PTX to the GPU's machine code.
int emit_gpu(Session& session, LoadedModule& m, const std::vector<CheckedKernel>& kernels, const CompileOptions& o,
             std::string& text) {
  std::optional<codegen::NvptxArch> arch;
  Device* gpu = nullptr;
  if (o.backend == "cuda") {
    gpu = device_registry().find("cuda:0");
    if (!gpu) throw std::invalid_argument("--backend cuda needs a GPU: " + device_registry().unavailable_reason("cuda:0"));
    cuda::Gpu* g = cuda_gpu_of(*gpu);
    arch = codegen::nvptx_arch_for(g->properties().major, g->properties().minor);
  } else {
    arch = codegen::parse_nvptx_arch(o.arch.empty() ? "sm_80" : o.arch);
  }
  if (!arch)
    throw std::invalid_argument("unknown GPU architecture '" + o.arch + "' (known: " + codegen::nvptx_arch_list() + ")");
  // What the planner may use: the GPU's own description, else the architecture's.
  GpuTarget target = gpu ? *gpu->gpu_target() : codegen::nvptx_gpu_target(*arch);
  PlannedModule planned = plan_gpu_module(session, m, kernels, o, text, target);
  if (planned.nothing_to_compile) return kOk;
  if (o.emit == "cir") {
    text += planned_module_cir(planned);
    return kOk;
  }
  std::vector<const cir::Kernel*> ptrs;
  for (const GpuPlan& p : planned.plans) ptrs.push_back(&*p.kernel);
  const std::vector<std::string>& entries = planned.entries;
  std::string what = o.emit == "llvm" ? "llvm" : "ptx";
  std::string code = codegen::NvptxCompiler::instance().compile(ptrs, entries, *arch, what).ptx;
  if (gpu) {
    cuda::Gpu* g = cuda_gpu_of(*gpu);
    std::string ptx = what == "ptx" ? code : codegen::NvptxCompiler::instance().compile(ptrs, entries, *arch, "ptx").ptx;
    cuda::CUmodule module = g->load_module(ptx);
    for (const std::string& e : entries) g->function(module, e);
    text += "// loaded by the CUDA driver on " + gpu->info().id + " (" + gpu->info().name + "): " +
            std::to_string(entries.size()) + " kernel(s)\n";
  }
  text += code;
  return kOk;
}

// An HSA code object (or its assembly, or the AMDGPU backend's LLVM IR) of
// every kernel, for the architecture --arch names (gfx90a by default): what
// the HIP runtime loads on an AMD GPU. Needs neither a GPU nor ROCm.
int emit_rocm(Session& session, LoadedModule& m, const std::vector<CheckedKernel>& kernels, const CompileOptions& o, std::string& text) {
  std::optional<codegen::AmdgpuArch> arch = codegen::parse_amdgpu_arch(o.arch.empty() ? "gfx90a" : o.arch);
  if (!arch) throw std::invalid_argument("unknown AMD GPU architecture '" + o.arch + "' (known: " + codegen::amdgpu_arch_list() + ")");
  PlannedModule planned = plan_gpu_module(session, m, kernels, o, text, codegen::amdgpu_gpu_target(*arch));
  if (planned.nothing_to_compile) {
    if (o.emit == "hsaco") throw std::invalid_argument("the program has no compute blocks, so there is no code object");
    return kOk;
  }
  if (o.emit == "cir") {
    text += planned_module_cir(planned);
    return kOk;
  }
  std::vector<codegen::AmdgpuKernelSpec> specs;
  for (size_t i = 0; i < planned.plans.size(); ++i)
    specs.push_back({&*planned.plans[i].kernel, planned.entries[i], static_cast<int>(planned.plans[i].block_threads)});
  codegen::AmdgpuModule module = codegen::AmdgpuCompiler::instance().compile(specs, *arch, o.emit, o.code_object_version);
  if (o.emit == "hsaco") {
    // A binary: what was left out goes to standard error, not into the file.
    std::cerr << text;
    text = std::move(module.bytes);
    return kOk;
  }
  text += module.bytes;
  return kOk;
}

int compile_to(Session& session, LoadedModule& mod, const std::vector<CheckedKernel>& kernels, const CompileOptions& o, const std::string& path,
               std::string& text);

int compile_command(const std::string& path, const CompileOptions& o) {
  Session session;
  std::vector<CheckedKernel> kernels;
  LoadedModule* m = load_and_check(session, path, &kernels);
  if (!m) return kProgramError;
  if (!o.kernel.empty() && !o.sizes_from_run) {
    std::string names;
    bool found = false;
    for (const CheckedKernel& k : kernels) {
      std::string name = session.kernel_name(k.node);
      found = found || name == o.kernel || k.kernel.name == o.kernel;
      names += (names.empty() ? "" : ", ") + name;
    }
    if (!found) {
      std::cerr << "zyntax: error: " << path << " has no kernel named '" << o.kernel << "'"
                << (names.empty() ? std::string(" (it has no compute blocks)") : " (its kernels: " + names + ")") << "\n";
      return kUsageError;
    }
  }
  std::string text;
  try {
    return compile_to(session, *m, kernels, o, path, text);
  } catch (const ProgramFailed& e) {
    std::cerr << "zyntax: error: " << e.what() << "\n";
    return kProgramError;
  }
}

// The kernels fusion makes of the program's runs of blocks (interp/
// fusion_chains, fusion/run_plan), from the blocks as the checker lowered
// them, each after a comment naming its blocks; what does not fuse, as
// comments.
std::string fused_kernels_text(Session& session, LoadedModule& m, const std::vector<CheckedKernel>& kernels, const std::vector<std::string>& dims) {
  std::map<const ast::Compute*, const CheckedKernel*> of;
  for (const CheckedKernel& k : kernels) of[k.node] = &k;
  std::string text;
  std::function<void(const ast::Block&)> visit = [&](const ast::Block& b) {
    for (size_t i = 0; i < b.stmts.size(); ++i) {
      const ast::Stmt& s = *b.stmts[i];
      if (s.kind == ast::StmtKind::FuncDef) visit(ast::as<ast::FuncDef>(s).body);
      if (s.kind == ast::StmtKind::For) visit(ast::as<ast::For>(s).body);
      if (s.kind == ast::StmtKind::While) visit(ast::as<ast::While>(s).body);
      if (s.kind == ast::StmtKind::BlockStmt) visit(ast::as<ast::BlockStmt>(s).block);
      if (s.kind == ast::StmtKind::If) visit(ast::as<ast::If>(s).then_body), visit(ast::as<ast::If>(s).else_body);
      BlockChain chain = block_chain(b, i);
      if (chain.length < 2) continue;
      std::vector<fusion::RunBlock> blocks;
      for (size_t j = 0; j < chain.blocks.size(); ++j) {
        const ast::Compute* c = let_compute(*b.stmts[i + chain.blocks[j]]);
        auto it = of.find(c);
        if (it == of.end() || !it->second->deferred.empty()) break;  // lowered only at run time
        int line = static_cast<int>(session.sources().file(c->span.file).line_col(c->span.begin).line);
        blocks.push_back({&it->second->kernel, chain.names[j], line, false, {}});
      }
      if (blocks.size() == chain.blocks.size()) {
        fusion::RunPlan plan = fusion::plan_run(blocks);
        for (const std::string& e : plan.explanations) text += "\n// fusion: " + e;
        for (const fusion::PlannedKernel& k : plan.launches)
          if (k.fused()) text += "\n\n" + cir::print(with_dims(k.kernel, dims));
      }
      i += chain.length - 1;
    }
  };
  visit(m.ast.body);
  return text;
}

// compile_command's work once the program is loaded and checked.
int compile_to(Session& session, LoadedModule& mod, const std::vector<CheckedKernel>& kernels, const CompileOptions& o, const std::string& path,
               std::string& text) {
  LoadedModule* m = &mod;
  const std::string& emit = o.emit;
  const std::string& output = o.output;
  if (!o.sizes_from_run) {
    // Every --dim names a dimension of a kernel compiled here (n, m as the
    // program's types name them; a.d0 for an input whose type it does not give).
    std::vector<std::string> known;
    for (const CheckedKernel& k : kernels)
      if (k.deferred.empty() && (o.kernel.empty() || session.kernel_name(k.node) == o.kernel))
        for (const cir::DimParam& d : k.kernel.dims) known.push_back(d.name);
    for (const std::string& g : o.dims) {
      std::string name = g.substr(0, g.find('='));
      if (std::find(known.begin(), known.end(), name) != known.end()) continue;
      std::string near = nearest_name(name, known), list;
      for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
      std::cerr << "zyntax: error: --dim " << g << ": no kernel " << (o.kernel.empty() ? "" : "'" + o.kernel + "' ")
                << "has a dimension '" << name << "'" << (near.empty() ? "" : " (did you mean '" + near + "'?)")
                << (list.empty() ? std::string("; its kernels have none") : "; dimensions: " + list) << "\n";
      return kUsageError;
    }
  }
  if (o.backend == "vulkan") {
    if (o.emit == "spirv" && (output.empty() || output == "-")) {
      std::cerr << "zyntax: error: --emit spirv needs -o FILE\n";
      return kUsageError;
    }
    try {
      emit_vulkan(session, *m, kernels, o, text);
    } catch (const std::invalid_argument& e) {
      std::cerr << "zyntax: error: " << e.what() << "\n";
      return kUsageError;
    }
  } else if (o.backend == "metal") {
    try {
      emit_metal(session, *m, kernels, o, text);
    } catch (const std::invalid_argument& e) {
      std::cerr << "zyntax: error: " << e.what() << "\n";
      return kUsageError;
    }
  } else if (o.backend == "webgpu") {
    if (o.emit == "js" && (output.empty() || output == "-")) {
      std::cerr << "zyntax: error: --emit js writes a module and its runtime into a folder: give -o DIR\n";
      return kUsageError;
    }
    try {
      emit_webgpu(session, *m, kernels, o, path, text);
    } catch (const std::invalid_argument& e) {
      std::cerr << "zyntax: error: " << e.what() << "\n";
      return kUsageError;
    } catch (const std::runtime_error& e) {
      std::cerr << "zyntax: error: " << e.what() << "\n";
      return kProgramError;
    }
    if (o.emit == "js") return kOk;
  } else if (o.backend == "nvptx" || o.backend == "cuda") {
    try {
      emit_gpu(session, *m, kernels, o, text);
    } catch (const std::invalid_argument& e) {
      std::cerr << "zyntax: error: " << e.what() << "\n";
      return kUsageError;
    }
  } else if (o.backend == "rocm") {
    if (o.emit == "hsaco" && (output.empty() || output == "-")) {
      std::cerr << "zyntax: error: --emit hsaco needs -o FILE\n";
      return kUsageError;
    }
    try {
      emit_rocm(session, *m, kernels, o, text);
    } catch (const std::invalid_argument& e) {
      std::cerr << "zyntax: error: " << e.what() << "\n";
      return kUsageError;
    }
  } else if (emit == "ast") {
    text = print_ast(m->ast);
  } else if (emit == "llvm" || emit == "asm" || emit == "obj") {
    if (emit == "obj" && (output.empty() || output == "-")) {
      std::cerr << "zyntax: error: --emit obj needs -o FILE\n";
      return kUsageError;
    }
    try {
      emit_native(session, kernels, o, text);
    } catch (const std::invalid_argument& e) {
      std::cerr << "zyntax: error: " << e.what() << "\n";
      return kUsageError;
    }
  } else {
    if (kernels.empty()) text = "// " + path + " has no compute blocks\n";
    try {
      bool first = true;
      for (const CheckedKernel& k : kernels) {
        if (!o.kernel.empty() && session.kernel_name(k.node) != o.kernel) continue;
        if (!first) text += "\n";
        first = false;
        if (!k.deferred.empty())
          text += "// kernel " + session.kernel_name(k.node) + ": lowered when it runs (" + k.deferred + ")\n";
        else
          text += cir::print(with_dims(k.kernel, o.dims));  // specialised where --dim gives sizes
      }
      if (o.kernel.empty()) text += fused_kernels_text(session, *m, kernels, o.dims);
    } catch (const std::invalid_argument& e) {
      std::cerr << "zyntax: error: " << e.what() << "\n";
      return kUsageError;
    }
  }
  if (output.empty() || output == "-") {
    std::cout << text << std::flush;
    if (!std::cout) {
      std::cerr << "zyntax: error: cannot write to standard output\n";
      return kProgramError;
    }
    return kOk;
  }
  std::ofstream out(output, std::ios::binary);
  out << text;
  out.close();  // a full disk shows when the data is written out, not before
  if (!out) {
    std::cerr << "zyntax: error: cannot write '" << output << "'\n";
    return kProgramError;
  }
  return kOk;
}

int devices_command() {
  bool gpu = false;
  for (const auto& d : device_registry().devices()) {
    const DeviceInfo& i = d->info();
    std::cout << i.id << "\t" << i.type << "\t" << i.name << "\t";
    if (i.type == "gpu") {
      gpu = true;
      std::cout << "compute capability " << i.compute_capability << "\t" << i.cores << " multiprocessors\t";
    } else {
      std::cout << i.cores << " cores\t";
    }
    std::cout << (i.memory_bytes >> 20) << " MiB\t" << i.backend << "\n";
    if (const GpuTarget* t = d->gpu_target()) std::cout << "#   planned for: " << t->describe() << "\n";
  }
  if (!gpu) std::cout << "# " << device_registry().unavailable_reason("gpu") << "\n";
  return kOk;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"zyntax: write a compute kernel once in ZynML, run it on any device"};
  app.set_version_flag("--version", std::string("zyntax ") + ZYNTAX_VERSION);
  app.require_subcommand(1);

  std::string path, device = "auto", emit, output, backend = "cir", kernel_filter;
  std::vector<std::string> dim_values;
  uint64_t seed = 0;
  bool print_passes = false;

  CLI::App* run = app.add_subcommand("run", "Run a program: its host code and every compute block in it");
  run->add_option("file", path, "The .zynml program")->required();
  run->add_option("--device", device, "Where compute blocks run by default: auto, cpu, cpu:reference, cpu:N (N threads), cuda:N, metal:N, vulkan:N (`zyntax devices` lists this machine's)")
      ->capture_default_str();
  run->add_option("--seed", seed, "Seed of rand()/randn() calls that give none")->capture_default_str();
  run->add_flag("--print-passes", print_passes, "Print each kernel's CIR after every pass to standard error");
  ProfileOptions profile;
  run->add_flag("--profile", profile.table,
                "After the run, print per kernel and device to standard error: launches, compile time, cache hits, total and "
                "mean time, GB/s, GFLOP/s");
  run->add_option("--trace", profile.trace,
                  "Write a Chrome/Perfetto trace (JSON) of host statements, compiles, kernels, copies and waits to this file");
  bool verbose = false;
  run->add_flag("-v,--verbose", verbose, "Say which device the default (auto) is, and why not a GPU");
  std::string fusion = "on";
  run->add_option("--fusion", fusion, "on: adjacent compute blocks run as fused kernels where they can; off: one kernel per block")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  bool explain_fusion = false;
  run->add_flag("--explain-fusion", explain_fusion,
                "Say on standard error which blocks ran as one kernel, and why adjacent blocks did not");
  std::string host_tier = "tiered";
  run->add_option("--host", host_tier,
                  "Which tier runs host functions: interp (the interpreter), tiered (compiled once used enough), compiled (compiled "
                  "at the first call, where they can be)")
      ->check(CLI::IsMember({"interp", "tiered", "compiled"}))
      ->capture_default_str();
  bool explain_host = false;
  run->add_flag("--explain-host", explain_host,
                "Say on standard error which host functions run compiled, and why others stay interpreted (per function and line)");
  int threads = 0;
  std::string simd;
  run->add_option("--threads", threads, "Threads of the cpu device (default: one per core)")->check(CLI::Range(1, 1024));
  run->add_option("--simd", simd, "Compile for a lower SIMD level: avx512, avx2, sse4.1, neon, scalar")
      ->check(CLI::IsMember({"avx512", "avx2", "sse4.1", "neon", "scalar"}));
  std::string tune_mode_text;
  run->add_option("--tune", tune_mode_text,
                  "Schedule tuning: off (the rules alone), cached (the tuning database's choices where it has them; the default, "
                  "or ZYNTAX_TUNE), on (kernels with no record are tuned when first launched, and recorded)")
      ->check(CLI::IsMember({"off", "cached", "on"}));

  cli::TuneCommandOptions tune_options;
  CLI::App* tune = app.add_subcommand(
      "tune", "Tune every kernel a run of the program launches (schedule choices timed, the winners kept in the tuning database); print a table");
  tune->add_option("file", tune_options.path, "The .zynml program (optional with --import / --export)");
  tune->add_option("--device", tune_options.device, "Where compute blocks run by default, as for run")->capture_default_str();
  tune->add_option("--budget", tune_options.budget, "The whole search's time: 60s, 2m, 90 (seconds); kernels past it stay untuned");
  tune->add_option("--max-timed", tune_options.max_timed, "Candidates timed per kernel besides the default")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  tune->add_flag("--compare-exhaustive", tune_options.compare_exhaustive,
                 "Also time every candidate of each kernel's space, and report how close the search came and in what share of the time");
  tune->add_flag("-v,--verbose", tune_options.verbose, "Also list each kernel's candidates timed: choice, the cost model's estimate, time, outcome");
  tune->add_option("--import", tune_options.import_file, "Add the tuning records in this file (JSON lines, as --export writes them)");
  tune->add_option("--export", tune_options.export_file, "Write the database's records for this compiler to this file");
  tune->add_option("--seed", tune_options.seed, "Seed of rand()/randn() calls that give none")->capture_default_str();
  tune->add_option("--threads", threads, "Threads of the cpu device (default: one per core)")->check(CLI::Range(1, 1024));

  CLI::App* check = app.add_subcommand("check", "Parse and type-check a program without running it");
  check->add_option("file", path, "The .zynml program")->required();

  CLI::App* compile = app.add_subcommand("compile", "Print the parsed program or the Compute IR of each kernel");
  compile->add_option("file", path, "The .zynml program")->required();
  std::string arch;
  bool sizes_from_run = false;
  compile->add_option("--emit", emit,
                      "What to print: ast, cir; from the CPU backend llvm, asm, obj; from the nvptx backend ptx (its "
                      "default), llvm or cir (each kernel as the GPU schedules made it); from the vulkan backend glsl (its "
                      "default), spirv-asm or spirv (a binary: one kernel, with -o); from the metal backend msl; from the webgpu backend wgsl (its "
                      "default) or js (an ES module of the kernels and the runtime it imports, into the folder -o names); from the rocm "
                      "backend hsaco (the HSA code object, with -o; its default then), asm (its default otherwise), llvm or cir")
      ->check(CLI::IsMember({"ast", "cir", "llvm", "asm", "obj", "ptx", "glsl", "spirv-asm", "spirv", "msl", "wgsl", "js", "hsaco"}));
  compile->add_option("--backend", backend,
                      "cir (the IR itself, the default), llvm (the CPU backend; implied by llvm/asm/obj), nvptx "
                      "(PTX for NVIDIA GPUs), cuda (PTX for this machine's GPU, loaded by its driver) or vulkan (GLSL and SPIR-V "
                      "for vulkan:0, or a generic Vulkan device), metal (MSL for metal:0, or an Apple GPU of family Apple7), webgpu "
                      "(WGSL for any WebGPU adapter) or rocm (HSA code objects for AMD GPUs)")
      ->check(CLI::IsMember({"cir", "llvm", "nvptx", "cuda", "vulkan", "metal", "webgpu", "rocm"}));
  compile->add_option("--arch", arch,
                      "GPU architecture: for --backend nvptx sm_80 (default), sm_86, sm_89, sm_90, sm_90a, ...; for --backend rocm "
                      "gfx90a (default), gfx942 or gfx1100");
  int code_object_version = 5;
  compile->add_option("--code-object", code_object_version, "HSA code object version for --backend rocm: 5 (default) or 4")
      ->check(CLI::IsMember({4, 5}));
  compile->add_flag("--sizes-from-run", sizes_from_run,
                    "Run the program (kernels on the CPU, output discarded) and compile each kernel at the sizes it "
                    "is launched with");
  compile->add_option("--dim", dim_values, "NAME=VALUE: specialise kernels on these sizes (else they stay generic)");
  compile->add_option("--kernel", kernel_filter, "Only this kernel (by name)");
  compile->add_option("-o,--output", output, "Write to this file instead of standard output");
  compile->add_flag("--print-passes", print_passes, "Print each kernel's CIR after every pass to standard error");

  CLI::App* devices = app.add_subcommand("devices", "List the devices compute blocks can run on");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? kOk : kUsageError;
  }
  if (print_passes) cir::set_pass_log(&std::cerr);
  // Read when the cpu device first starts, which is after this.
  if (threads > 0) setenv("ZYNTAX_NUM_THREADS", std::to_string(threads).c_str(), 1);
  if (!simd.empty()) {
    try {
      codegen::detect_host_cpu(simd);
    } catch (const std::invalid_argument& e) {
      std::cerr << "zyntax: error: " << e.what() << "\n";
      return kUsageError;
    }
    setenv("ZYNTAX_CPU_SIMD", simd.c_str(), 1);
  }
  if (!tune_mode_text.empty()) set_tune_mode(*parse_tune_mode(tune_mode_text));
  try {
    if (tune->parsed()) return with_deep_stack([&] { return cli::tune_command(tune_options); });
    if (run->parsed()) return with_deep_stack([&] { return run_command(path, device, seed, verbose, profile, fusion, explain_fusion, host_tier, explain_host); });
    if (check->parsed()) return with_deep_stack([&] { return check_command(path); });
    if (compile->parsed()) {
      bool gpu = backend == "nvptx" || backend == "cuda";
      bool vulkan = backend == "vulkan";
      bool rocm = backend == "rocm";
      if (emit == "hsaco" && (backend == "cir" || rocm)) backend = "rocm", rocm = true;
      if (rocm && emit.empty()) emit = output.empty() || output == "-" ? "asm" : "hsaco";
      if (rocm && emit != "hsaco" && emit != "asm" && emit != "llvm" && emit != "cir") {
        std::cerr << "zyntax: error: --backend rocm emits hsaco, asm, llvm or cir (its schedules), not " << emit << "\n";
        return kUsageError;
      }
      if (!rocm && emit == "hsaco") {
        std::cerr << "zyntax: error: --emit hsaco is for --backend rocm, not " << backend << "\n";
        return kUsageError;
      }
      if (rocm && !arch.empty() && !codegen::parse_amdgpu_arch(arch)) {
        std::cerr << "zyntax: error: unknown AMD GPU architecture '" << arch << "' (known: " << codegen::amdgpu_arch_list() << ")\n";
        return kUsageError;
      }
      if (code_object_version != 5 && !rocm) {
        std::cerr << "zyntax: error: --code-object is for --backend rocm\n";
        return kUsageError;
      }
      if (emit.empty()) emit = gpu ? "ptx" : vulkan ? "glsl" : backend == "metal" ? "msl" : backend == "webgpu" ? "wgsl" : backend == "llvm" ? "llvm" : "cir";
      if (emit == "msl" && backend == "cir") backend = "metal";
      if ((emit == "msl") != (backend == "metal")) {
        std::cerr << "zyntax: error: --backend metal emits msl" << (backend == "metal" ? ", not " + emit : ", and msl comes from --backend metal") << "\n";
        return kUsageError;
      }
      bool web_emit = emit == "wgsl" || emit == "js";
      if (backend == "webgpu" && !web_emit) {
        std::cerr << "zyntax: error: --backend webgpu emits wgsl or js, not " << emit << "\n";
        return kUsageError;
      }
      if (web_emit && backend != "webgpu" && backend != "cir") {
        std::cerr << "zyntax: error: --emit " << emit << " is for --backend webgpu, not " << backend << "\n";
        return kUsageError;
      }
      if (web_emit) backend = "webgpu";
      if ((emit == "glsl" || emit == "spirv-asm" || emit == "spirv") && !vulkan) backend = "vulkan", vulkan = true;
      if (vulkan && emit != "glsl" && emit != "spirv-asm" && emit != "spirv") {
        std::cerr << "zyntax: error: --backend vulkan emits glsl, spirv-asm or spirv, not " << emit << "\n";
        return kUsageError;
      }
      if (backend == "llvm" && (emit == "ast" || emit == "cir")) emit = "llvm";
      if (emit == "ptx" && !gpu) backend = "nvptx", gpu = true;
      if (gpu && emit != "ptx" && emit != "llvm" && emit != "cir") {
        std::cerr << "zyntax: error: --backend " << backend << " emits ptx, llvm or cir (its schedules), not " << emit << "\n";
        return kUsageError;
      }
      if (!arch.empty() && backend != "nvptx" && !rocm) {
        std::cerr << "zyntax: error: --arch is for --backend nvptx or rocm (cuda compiles for the GPU present)\n";
        return kUsageError;
      }
      if (sizes_from_run && !gpu && !vulkan && !rocm && backend != "webgpu" && backend != "metal") {
        std::cerr << "zyntax: error: --sizes-from-run is for --backend nvptx, cuda, rocm, vulkan, metal or webgpu\n";
        return kUsageError;
      }
      CompileOptions options{emit, output, kernel_filter, dim_values, backend, arch, sizes_from_run, code_object_version};
      return with_deep_stack([&] { return compile_command(path, options); });
    }
    if (devices->parsed()) return devices_command();
  } catch (const std::bad_alloc&) {
    std::cerr << "zyntax: error: out of memory\n";
    return kProgramError;
  } catch (const std::exception& e) {
    // A bug in zyntax, not in the program: say so plainly.
    std::cerr << "zyntax: internal compiler error: " << e.what() << "\n";
    return kProgramError;
  }
  return kUsageError;
}
