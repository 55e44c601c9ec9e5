// Runs host code: a tree-walking interpreter over the syntax tree. Each
// compute block it meets is lowered to CIR for the input types at hand
// (cached), specialised on the input sizes (cached) and run on a device.
#pragma once

#include <iosfwd>
#include <map>
#include <memory>
#include <string>

#include "driver/session.hpp"
#include "interp/builtins.hpp"
#include "interp/environment.hpp"
#include "interp/fusion_chains.hpp"
#include "host/host_tier.hpp"
#include "interp/host_ops.hpp"
#include "interp/value.hpp"
#include "runtime/tensor_ops.hpp"

namespace zyntax {

struct RunOptions {
  std::string device = "auto";  // --device: the default for compute blocks
  std::ostream* out = nullptr;  // where print() writes
  uint64_t seed = 0;            // the generator behind rand()/randn() without a seed
  bool fusion = true;           // adjacent blocks run as fused kernels where they can (--fusion=off)
  std::ostream* explain_fusion = nullptr;  // --explain-fusion: which blocks fused, and why others did not
  host::HostMode host = host::HostMode::Tiered;  // --host: which tier runs host functions
  std::ostream* explain_host = nullptr;  // --explain-host: which functions run compiled, and why others do not
};

class ComputeRunner;

class Interpreter {
 public:
  Interpreter(Session& session, RunOptions options);
  ~Interpreter();

  // Runs the module's top level, then `main()` if it defines one that was
  // not called. Returns false after a runtime error (reported to the
  // session's diagnostics). Runs on a deep stack (support/stack.hpp).
  bool run(LoadedModule& m);

  // Calls function `name` of `m` as the program's own code would (its
  // blocks fuse as under run()), for programs used as libraries from the
  // C++ and Python APIs: the module's functions, imports and config are
  // bound, its other top-level statements never run. Positional arguments,
  // then keywords; a future in the result is awaited. Throws Error,
  // located in the source, for what goes wrong; on a deep stack.
  Value call(LoadedModule& m, const std::string& name, CallArgs args);
  // The compiled code the last call() ran its function with, where it ran
  // compiled (for direct calls: interp/direct_call); null otherwise.
  const host::HostCode* last_call_compiled() const { return last_call_compiled_; }
  // How deep calls may nest (deeper is "runaway recursion").
  static int max_call_depth();

 private:
  bool run_here(LoadedModule& m);
  enum class Flow { Normal, Return, Break, Continue };

  ModuleInstance& instantiate(LoadedModule& m, bool definitions_only = false);
  void execute_module(ModuleInstance& inst, bool definitions_only);
  void finish_launches();
  void hoist_functions(const ast::Block& b, Frame& f);

  // `profiled`: each statement a host span under --profile (a function's
  // body; the main module's statements are spans in execute_module).
  Flow exec_block(const ast::Block& b, Frame& f, bool new_scope = true, bool profiled = false);
  Flow exec_profiled(const ast::Stmt& s, Frame& f);  // one statement as a host span
  Flow exec(const ast::Stmt& s, Frame& f);
  // A statement; where it fails, the blocks pending before it report
  // first (as they would have run first).
  Flow exec_in_order(const ast::Stmt& s, Frame& f);
  // After statement `i` of `b`: the bindings of `scope` holding a pending
  // result that no later statement of `b` reads let it go, so that fusion
  // may compute it inside the blocks that read it instead of storing it.
  void release_unread(const ast::Block& b, size_t i, Scope& scope);
  // One past the last statement of `b` that mentions `name` (0: none), or
  // SIZE_MAX where a function defined in `b` does (it may run later).
  size_t last_mention(const ast::Block& b, const std::string& name);
  void exec_let(const ast::Let& l, Frame& f);
  void exec_assign(const ast::Assign& a, Frame& f);
  Flow exec_for(const ast::For& fr, size_t range, Frame& f);
  void exec_import(const ast::Import& imp, Frame& f);
  void exec_config(const ast::Config& c, Frame& f);

  // eval() computes a pending result it would give; eval_any() gives it
  // as it is, where a value is only passed on (bound to a name, passed to
  // or returned from a user's function, read by a block).
  Value eval(const ast::Expr& e, Frame& f);
  Value eval_any(const ast::Expr& e, Frame& f);
  Value forced(Value v, Span where);
  Value eval_name(const ast::Name& n, Frame& f);
  Value eval_call(const ast::Call& c, Frame& f);
  Value eval_field(const ast::Field& fe, Frame& f);
  Value eval_index(const ast::Index& ix, Frame& f);
  Value eval_await(const ast::Await& a, Frame& f);
  // "12: let y = compute(x) {", for the profiler.
  std::string statement_label(const ast::Stmt& s) const;
  Value call_function(const Value& fn, CallArgs& args);
  Value call_user(const FunctionData& fn, CallArgs& args);
  // A frame with the call's arguments bound to the function's parameters
  // (defaults evaluated, types checked, dimensions bound).
  Frame bind_call(const FunctionData& fn, CallArgs& args);
  // latency(f, args..., calls=N): f called N times, each call timed.
  Value measure_latency(CallArgs& args);
  // The call run by the function's compiled code, where the host tier has
  // some for its arguments (bound in `frame`); nullopt to interpret it.
  std::optional<Value> call_compiled(const FunctionData& fn, Frame& frame, Span call);
  // The compiled code for the call with the arguments bound in `frame`
  // (computed, where pending), and the names it takes them by; or null.
  // Errors where a function that must compile cannot.
  const host::HostCode* compiled_code(const FunctionData& fn, Frame& frame, Span call, std::vector<std::string>* names);
  void bind_typed_param(const ast::Param& p, const Value& v, Scope& scope, std::map<std::string, Span>& dim_sites);
  void check_type(const ast::TypeExpr& t, const Value& v, Span where, Scope& scope, const std::string& what,
                  const std::string& param, std::map<std::string, Span>* dim_sites);
  std::vector<HostIndex> eval_index_items(const ast::Index& ix, Frame& f);

  Session& session_;
  RunOptions options_;
  Random rng_;
  std::string config_device_;
  std::map<std::string, std::shared_ptr<ModuleInstance>> instances_;
  std::unique_ptr<ComputeRunner> computes_;
  std::unique_ptr<host::HostTier> host_tier_;
  const host::HostCode* last_call_compiled_ = nullptr;
  int64_t loop_iterations_ = 0;  // every loop's, for the host tier's counts
  std::map<std::pair<const ast::Block*, std::string>, size_t> last_mentions_;
  std::vector<std::shared_ptr<std::shared_future<Value>>> launched_;  // @async launches
  size_t launches_waited_ = 0;  // launched_[0..this) are finished: a host tensor write waited for them
  size_t launches_finished_ = 0;  // launched_[0..this) are finished and their errors reported
  int depth_ = 0;
  bool main_called_ = false;
  LoadedModule* main_module_ = nullptr;

  friend class ComputeRunner;
};

}  // namespace zyntax
