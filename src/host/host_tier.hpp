// Which tier runs a host function, and the compiled code for those that
// compile (host_compiler). Interpreted first; under the tiered policy a
// function is compiled in the background once it has been called twice or
// its loops have run kLoopsBeforeCompiling iterations, and later calls run
// the compiled code. `--host=compiled` compiles at the first call, waiting
// for it; `--host=interp` never compiles. A function that cannot be
// compiled runs interpreted, and `--explain-host` says why.
#pragma once

#include <atomic>
#include <functional>
#include <future>
#include <iosfwd>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "host/host_abi.hpp"
#include "host/host_compiler.hpp"

namespace zyntax::host {

enum class HostMode { Interp, Tiered, Compiled };
// "interp", "tiered", "compiled"; nullopt for another word.
std::optional<HostMode> parse_host_mode(const std::string& word);

inline constexpr int64_t kLoopsBeforeCompiling = 1000;
inline constexpr int64_t kCallsBeforeCompiling = 2;

// A host value as compiled code takes it: its type and its 64-bit word.
struct HostArgument {
  HostType type;
  uint64_t word = 0;
  TensorArg tensor{};  // Tensor: its bytes and extents (word points here)
};

// Why a function for one signature stays interpreted.
struct HostRefusal {
  std::string why;     // "line 7: ..."
  Span where;
  std::string reason;  // without the line
  bool allocates = false;
  bool whatever_the_arguments = false;
};

// A compiled function for one signature, ready to call.
struct HostCode {
  HostEntry entry = nullptr;
  std::vector<std::string> names;
  HostType result;
  std::vector<ErrorSite> sites;
  bool writes_tensors = false;
  bool writes_records = false;
  bool calls_functions = false;  // its stack may grow with the depth limit
};

class HostTier {
 public:
  HostTier(HostMode mode, const SourceManager* sources, std::ostream* explain);
  ~HostTier();  // waits for the compiles still running

  HostMode mode() const { return mode_; }

  // The compiled code for `def` at these argument types, where there is
  // some: compiling it first under --host=compiled, or once the function
  // has been used enough (calls, `loops` iterations since the last call)
  // under the tiered policy. `functions` maps the module's names to its
  // functions (read now: compiling may go on in the background).
  // A function that must compile (sema/function_annotations) is compiled
  // at its first call whatever the tier (under --host=interp too, where it
  // still runs interpreted); where it cannot be, `refused` says why.
  const HostCode* code_for(const ast::FuncDef& def, const std::vector<std::string>& names, const std::vector<HostType>& types,
                           const std::function<std::map<std::string, const ast::FuncDef*>()>& functions,
                           const HostRefusal** refused = nullptr);
  // Whether `def` was refused for what its code does, whatever the types
  // of its arguments: its calls need not be looked at again (a cheap test
  // for the interpreter's every call).
  bool never_compiles(const ast::FuncDef& def) const { return never_.count(&def) > 0; }
  // Says (once per function, under --explain-host) that `def` runs
  // interpreted because of what it was called with.
  void stays_interpreted(const ast::FuncDef& def, const std::string& why);
  // Counts loop iterations of the function running interpreted.
  void count_loops(const ast::FuncDef& def, int64_t iterations);

  // Which functions ran compiled, for --profile: "compiled" or "interpreted".
  const char* tier_of(const ast::FuncDef& def) const;

 private:
  struct Signature {
    const ast::FuncDef* def;
    std::string types;
    bool operator<(const Signature& o) const { return def != o.def ? def < o.def : types < o.types; }
  };
  struct Entry {
    std::shared_future<std::shared_ptr<HostCode>> code;  // null inside: not compiled (why in `why`)
    std::shared_ptr<HostRefusal> why = std::make_shared<HostRefusal>();
    bool explained = false;
  };
  struct Use {
    int64_t calls = 0;
    int64_t loops = 0;
    std::optional<bool> must_compile;  // read from its annotations once
  };

  Entry& start(const Signature& sig, const ast::FuncDef& def, const std::vector<std::string>& names, const std::vector<HostType>& types,
               std::map<std::string, const ast::FuncDef*> functions, bool wait);
  void explain(const ast::FuncDef& def, const std::string& types, Entry& e, const std::shared_ptr<HostCode>& code);
  // "host: 'f' (line 3)", how --explain-host names a function.
  std::string heading(const ast::FuncDef& def) const;

  HostMode mode_;
  const SourceManager* sources_;
  std::ostream* explain_;
  std::map<Signature, Entry> entries_;
  std::map<const ast::FuncDef*, Use> uses_;
  std::map<const ast::FuncDef*, bool> ran_compiled_;
  std::map<const ast::FuncDef*, bool> said_interpreted_;
  std::set<const ast::FuncDef*> never_;
};

}  // namespace zyntax::host
