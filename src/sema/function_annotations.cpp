#include "sema/function_annotations.hpp"

#include "support/nearest_name.hpp"

namespace zyntax {

const ast::Annotation* FunctionAnnotations::first_requirement() const {
  for (const ast::Annotation* a : {critical_path, no_allocation, inline_always, target_latency})
    if (a) return a;
  return nullptr;
}

namespace {

// `100ns`, `2us`, `1ms` or a plain integer (nanoseconds).
std::optional<int64_t> nanoseconds(const ast::Expr& e) {
  if (e.kind != ast::ExprKind::IntLit) return std::nullopt;
  const auto& i = ast::as<ast::IntLit>(e);
  if (i.value <= 0) return std::nullopt;
  if (i.unit.empty() || i.unit == "ns") return i.value;
  if (i.unit == "us") return i.value * 1000;
  if (i.unit == "ms") return i.value * 1000000;
  return std::nullopt;
}

}  // namespace

FunctionAnnotations read_function_annotations(const ast::FuncDef& f, DiagnosticEngine* diags) {
  FunctionAnnotations out;
  for (const ast::Annotation& a : f.annotations) {
    const ast::Annotation** slot = a.name == "critical_path"   ? &out.critical_path
                                   : a.name == "no_allocation" ? &out.no_allocation
                                   : a.name == "inline_always" ? &out.inline_always
                                   : a.name == "unchecked"     ? &out.unchecked
                                   : a.name == "target_latency" ? &out.target_latency
                                                                : nullptr;
    if (!slot) {
      if (diags) {
        std::string near = nearest_name(a.name, {"critical_path", "no_allocation", "inline_always", "unchecked", "target_latency"});
        diags->error(a.name_span, "unknown annotation @" + a.name + " on a function")
            .with_hint(near.empty() ? "a function takes @critical_path, @no_allocation, @inline_always, @unchecked and @target_latency(100ns)"
                                    : "did you mean @" + near + "?");
      }
      continue;
    }
    if (*slot && diags) diags->error(a.name_span, "@" + a.name + " is given twice").note((*slot)->name_span, "first given here");
    *slot = &a;
    bool takes_argument = slot == &out.target_latency;
    if (takes_argument) {
      std::optional<int64_t> ns = a.args.size() == 1 && a.args[0].value && a.args[0].name.empty() ? nanoseconds(*a.args[0].value) : std::nullopt;
      if (!ns && diags) diags->error(a.span, "@target_latency takes one positive duration, such as @target_latency(100ns)");
      out.target_latency_ns = ns;
    } else if (a.has_args && diags) {
      diags->error(a.span, "@" + a.name + " takes no arguments");
    }
  }
  return out;
}

}  // namespace zyntax
