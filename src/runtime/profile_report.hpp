// What `zyntax run --profile` prints and `--trace` writes, from the
// profiler's events: a table per kernel and device (launches, compile time,
// cache hits, total and mean time, GB/s, GFLOP/s), and a Chrome/Perfetto
// trace of every event (chrome://tracing, ui.perfetto.dev).
#pragma once

#include <ostream>
#include <vector>

#include "runtime/profiler.hpp"

namespace zyntax {

void print_profile(const std::vector<ProfileEvent>& events, int64_t wall_ns, std::ostream& out);

void write_chrome_trace(const std::vector<ProfileEvent>& events, std::ostream& out);

}  // namespace zyntax
