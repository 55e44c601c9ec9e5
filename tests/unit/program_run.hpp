// A ZynML program checked and run by the interpreter, for the unit tests:
// what it printed, what it explained (--explain-fusion, --explain-host) and
// its diagnostics.
#pragma once

#include <memory>
#include <sstream>
#include <string>

#include "driver/session.hpp"
#include "interp/host_interpreter.hpp"
#include "lower/check_program.hpp"

namespace zyntax::testing {

struct ProgramRun {
  Session session;
  std::ostringstream out, explain;
  bool ok = false;
  std::string errors() { return session.diags().render_all(); }
};

// `options` as given, but for where the program prints and explains.
inline std::unique_ptr<ProgramRun> run_program(const std::string& src, RunOptions options) {
  auto r = std::make_unique<ProgramRun>();
  LoadedModule* m = r->session.load_text("p.zynml", src);
  if (r->session.diags().has_errors() || !check_program(r->session, *m)) return r;
  options.out = &r->out;
  if (options.explain_fusion) options.explain_fusion = &r->explain;
  if (options.explain_host) options.explain_host = &r->explain;
  Interpreter interp(r->session, options);
  r->ok = interp.run(*m);
  return r;
}

}  // namespace zyntax::testing
