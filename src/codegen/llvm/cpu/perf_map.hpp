// Names the JIT's code for Linux perf. With ZYNTAX_PERF_MAP set, each
// object the CPU JIT loads adds a line per function to /tmp/perf-<pid>.map
// (perf's convention for code it cannot find in a file: `start size name`),
// so `perf record` / `perf report` attribute samples to kernels, not to an
// anonymous mapping. With ZYNTAX_PERF_MAP naming a directory, the objects
// are also written there as <symbol>.o, so that `objdump -d` of one shows
// the instructions at the offsets perf reports.
#pragma once

#include <string>

namespace zyntax::codegen {

bool perf_map_wanted();

// `object` is the ELF object just loaded; `symbol` one of its functions,
// found at `address`. Its other functions lie at the same distances from
// it as in the object's text section.
void add_to_perf_map(const std::string& object, const std::string& symbol, const void* address);

}  // namespace zyntax::codegen
