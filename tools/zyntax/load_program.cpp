#include "tools/zyntax/load_program.hpp"

#include <iostream>

namespace zyntax::cli {

LoadedModule* load_and_check(Session& session, const std::string& path, std::vector<CheckedKernel>* kernels) {
  LoadedModule* m = session.load(path, {});
  if (m && !session.diags().has_errors()) check_program(session, *m, kernels);
  if (session.diags().has_errors() || !m) {
    session.diags().print(std::cerr);
    return nullptr;
  }
  session.diags().print(std::cerr);  // warnings
  return m;
}

}  // namespace zyntax::cli
