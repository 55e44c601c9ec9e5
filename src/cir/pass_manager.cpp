#include "cir/pass_manager.hpp"

#include <atomic>
#include <mutex>
#include <ostream>

#include "cir/printer.hpp"
#include "cir/verifier.hpp"

namespace zyntax::cir {

namespace {

std::atomic<std::ostream*> g_log{nullptr};
std::mutex g_log_mu;  // kernels may be lowered on several threads

void after(const Kernel& k, const std::string& pass) {
  verify_or_throw(k, pass);
  std::ostream* log = g_log.load();
  if (!log) return;
  std::lock_guard<std::mutex> lock(g_log_mu);
  *log << "// ---- " << k.name << " after " << pass << "\n" << print(k) << "\n";
}

}  // namespace

Kernel run_passes(Kernel k, const std::string& first, const std::vector<Pass>& passes) {
  after(k, first);
  for (const Pass& p : passes) {
    k = p.run(k);
    after(k, p.name);
  }
  return k;
}

void set_pass_log(std::ostream* log) { g_log.store(log); }

}  // namespace zyntax::cir
