#include "api/op_library.hpp"

#include <stdexcept>

#include "driver/session.hpp"
#include "driver/stdlib.hpp"
#include "lower/check_program.hpp"

namespace zyntax::api {

OpLibrary& OpLibrary::instance() {
  static OpLibrary* library = new OpLibrary();  // kernels live as long as the process
  return *library;
}

OpLibrary::OpLibrary() {
  for (const auto& [file, text] : stdlib_sources()) {
    Session session;
    std::vector<CheckedKernel> kernels;
    LoadedModule* m = session.load_text(file, text);
    if (session.diags().has_errors() || !check_program(session, *m, &kernels))
      throw std::logic_error("the op library " + file + " does not compile:\n" + session.diags().render_all());
    for (CheckedKernel& k : kernels) {
      if (!k.deferred.empty()) throw std::logic_error("op library kernel " + k.kernel.name + " is not typed: " + k.deferred);
      std::string name = session.kernel_name(k.node);
      ops_[name] = std::make_unique<CompiledCompute>(std::move(k.kernel));
    }
  }
}

CompiledCompute& OpLibrary::op(const std::string& name) {
  auto it = ops_.find(name);
  if (it == ops_.end()) throw std::logic_error("the op library has no kernel " + name);
  return *it->second;
}

}  // namespace zyntax::api
