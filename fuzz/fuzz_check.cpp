// Feeds arbitrary bytes to the parser and the checker (which lowers every
// compute block to CIR and verifies it). Nothing may crash, hang or leak.
#include <cstddef>
#include <cstdint>
#include <string>

#include "driver/session.hpp"
#include "lower/check_program.hpp"
#include "support/stack.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // As the CLI does: the phases run on a deep stack.
  zyntax::with_deep_stack([&] {
    zyntax::Session session;
    zyntax::LoadedModule* m = session.load_text("fuzz.zynml", std::string(reinterpret_cast<const char*>(data), size));
    if (!session.diags().has_errors()) zyntax::check_program(session, *m);
    (void)session.diags().render_all();
  });
  return 0;
}
