#include "host/host_tier.hpp"

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <ostream>

#include "codegen/llvm/cpu/cpu_jit.hpp"
#include "sema/function_annotations.hpp"

namespace zyntax::host {

std::optional<HostMode> parse_host_mode(const std::string& word) {
  if (word == "interp") return HostMode::Interp;
  if (word == "tiered") return HostMode::Tiered;
  if (word == "compiled") return HostMode::Compiled;
  return std::nullopt;
}

namespace {

std::string signature_text(const std::vector<std::string>& names, const std::vector<HostType>& types) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i ? ", " : "") + names[i] + ": " + types[i].str();
  return s;
}

// Lowers and compiles; null code (with `why`) where the function stays interpreted.
std::shared_ptr<HostCode> compile(const ast::FuncDef* def, std::vector<std::string> names, std::vector<HostType> types,
                                  std::map<std::string, const ast::FuncDef*> functions, const SourceFile* file,
                                  std::shared_ptr<HostRefusal> why) {
  try {
    llvm::LLVMContext ctx;
    FunctionResolver resolve = [&functions](const std::string& name) -> const ast::FuncDef* {
      auto it = functions.find(name);
      return it == functions.end() ? nullptr : it->second;
    };
    HostLowering lowered = lower_host_function(*def, names, types, resolve, ctx, file);
    if (!lowered.compiled) {
      *why = {lowered.why, lowered.where, lowered.reason, lowered.allocates, lowered.whatever_the_arguments};
      return nullptr;
    }
    HostCompilation& c = *lowered.compiled;
    auto code = std::make_shared<HostCode>();
    code->names = c.names;
    code->result = c.result;
    code->sites = c.sites;
    code->writes_tensors = c.writes_tensors;
    code->writes_records = c.writes_records;
    code->calls_functions = c.calls_functions;
    std::vector<std::pair<std::string, void*>> helpers = {
        {"zyntax_rt_host_math_f64", reinterpret_cast<void*>(&zyntax_rt_host_math_f64)},
        {"zyntax_rt_host_math_i64", reinterpret_cast<void*>(&zyntax_rt_host_math_i64)},
        {"zyntax_rt_host_ipow", reinterpret_cast<void*>(&zyntax_rt_host_ipow)},
    };
    code->entry = reinterpret_cast<HostEntry>(codegen::CpuJit::instance().compile_module(*c.module, c.key, c.symbol, helpers));
    return code;
  } catch (const std::exception& e) {
    why->why = why->reason = std::string("the compiler failed: ") + e.what();
    return nullptr;
  }
}

}  // namespace

HostTier::HostTier(HostMode mode, const SourceManager* sources, std::ostream* explain) : mode_(mode), sources_(sources), explain_(explain) {}

HostTier::~HostTier() {
  for (auto& [sig, e] : entries_)
    if (e.code.valid()) e.code.wait();
}

HostTier::Entry& HostTier::start(const Signature& sig, const ast::FuncDef& def, const std::vector<std::string>& names,
                                 const std::vector<HostType>& types, std::map<std::string, const ast::FuncDef*> functions, bool wait) {
  Entry& e = entries_[sig];
  // In the background under the tiered policy; at once when asked for.
  std::launch how = wait ? std::launch::deferred : std::launch::async;
  // The file is read here: the interpreter may load others meanwhile.
  const SourceFile* file = sources_ && def.span.valid() ? &sources_->file(def.span.file) : nullptr;
  e.code = std::async(how, compile, &def, names, types, std::move(functions), file, e.why).share();
  return e;
}

const HostCode* HostTier::code_for(const ast::FuncDef& def, const std::vector<std::string>& names, const std::vector<HostType>& types,
                                   const std::function<std::map<std::string, const ast::FuncDef*>()>& functions,
                                   const HostRefusal** refused) {
  Use& use = uses_[&def];
  if (!use.must_compile) use.must_compile = read_function_annotations(def).must_compile();
  const bool must = *use.must_compile;
  if (mode_ == HostMode::Interp && !must) return nullptr;
  Signature sig{&def, signature_text(names, types)};
  auto it = entries_.find(sig);
  if (it == entries_.end()) {
    ++use.calls;
    bool ready = must || mode_ == HostMode::Compiled || use.calls >= kCallsBeforeCompiling || use.loops >= kLoopsBeforeCompiling;
    if (!ready) return nullptr;
  }
  Entry& e = it != entries_.end() ? it->second : start(sig, def, names, types, functions(), must || mode_ == HostMode::Compiled);
  if (e.code.wait_for(std::chrono::seconds(0)) == std::future_status::timeout) return nullptr;  // still compiling
  const std::shared_ptr<HostCode>& code = e.code.get();
  if (!e.explained) explain(def, sig.types, e, code);
  if (!code && refused) *refused = e.why.get();
  if (!code && e.why->whatever_the_arguments && !must) never_.insert(&def);
  if (mode_ == HostMode::Interp) return nullptr;
  if (code) ran_compiled_[&def] = true;
  return code.get();
}

std::string HostTier::heading(const ast::FuncDef& def) const {
  std::string where;
  if (sources_ && def.span.valid()) where = " (line " + std::to_string(sources_->file(def.span.file).line_col(def.span.begin).line) + ")";
  return "host: '" + def.name + "'" + where;
}

void HostTier::stays_interpreted(const ast::FuncDef& def, const std::string& why) {
  if (!explain_ || mode_ == HostMode::Interp || said_interpreted_[&def]) return;
  said_interpreted_[&def] = true;
  *explain_ << heading(def) << " stays interpreted: " << why << "\n";
}

void HostTier::count_loops(const ast::FuncDef& def, int64_t iterations) {
  if (mode_ == HostMode::Tiered) uses_[&def].loops += iterations;
}

const char* HostTier::tier_of(const ast::FuncDef& def) const {
  auto it = ran_compiled_.find(&def);
  return it != ran_compiled_.end() && it->second ? "compiled" : "interpreted";
}

void HostTier::explain(const ast::FuncDef& def, const std::string& types, Entry& e, const std::shared_ptr<HostCode>& code) {
  e.explained = true;
  if (!explain_) return;
  if (code && mode_ == HostMode::Interp) *explain_ << heading(def) << " compiles for " << types << " (run interpreted: --host=interp)\n";
  else if (code) *explain_ << heading(def) << " runs compiled for " << types << "\n";
  else *explain_ << heading(def) << " stays interpreted: " << e.why->why << "\n";
}

}  // namespace zyntax::host
