#include "tools/zyntax/tune_command.hpp"

#include <cmath>
#include <fstream>
#include <iostream>
#include <sstream>

#include "backends/registry.hpp"
#include "driver/session.hpp"
#include "interp/host_interpreter.hpp"
#include "tools/zyntax/load_program.hpp"
#include "runtime/device.hpp"
#include "runtime/tuner.hpp"
#include "runtime/tuning_database.hpp"
#include "support/bounded_read.hpp"
#include "support/diagnostics.hpp"

namespace zyntax::cli {

namespace {

std::string fixed(double v, int digits) {
  if (v < 0) return "-";
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(digits);
  os << v;
  return os.str();
}

// "60s", "2m", "90" (seconds); none for anything else.
std::optional<double> parse_budget(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  std::string unit(end);
  if (end == text.c_str() || !(v > 0) || !std::isfinite(v)) return std::nullopt;
  if (unit.empty() || unit == "s") return v;
  if (unit == "m" || unit == "min") return v * 60;
  if (unit == "ms") return v / 1000;
  return std::nullopt;
}

void print_table(const std::vector<std::vector<std::string>>& rows, std::ostream& out) {
  std::vector<size_t> width;
  for (const auto& r : rows)
    for (size_t c = 0; c < r.size(); ++c) {
      if (width.size() <= c) width.push_back(0);
      width[c] = std::max(width[c], r[c].size());
    }
  for (const auto& r : rows) {
    std::string line;
    for (size_t c = 0; c < r.size(); ++c) line += r[c] + std::string(width[c] - r[c].size() + 2, ' ');
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  }
}

int run_and_tune(const TuneCommandOptions& o) {
  if (o.device != "auto" && !device_registry().find(o.device)) {
    std::cerr << "zyntax: error: " << device_registry().not_available_message(o.device) << "\n";
    return 2;
  }
  TuneOptions options;
  options.max_timed = static_cast<size_t>(std::max(o.max_timed, 1));
  options.compare_exhaustive = o.compare_exhaustive;
  if (!o.budget.empty()) options.total_budget_seconds = *parse_budget(o.budget);
  set_tune_options(options);
  set_tune_mode(TuneMode::On);
  clear_tuned_launches();

  Session session;
  LoadedModule* m = load_and_check(session, o.path, nullptr);
  if (!m) return 1;
  RunOptions run;
  run.device = o.device;
  run.seed = o.seed;
  std::ostringstream discarded;  // the program's own output is not the point here
  run.out = &discarded;
  Interpreter interp(session, run);
  size_t before = session.diags().diagnostics().size();
  bool ok = interp.run(*m);
  if (!ok) {
    DiagnosticEngine errors(session.sources());
    for (size_t i = before; i < session.diags().diagnostics().size(); ++i) errors.report(session.diags().diagnostics()[i]);
    errors.print(std::cerr);
    return 1;
  }

  std::vector<TunedLaunch> launches = tuned_launches();
  std::vector<std::vector<std::string>> rows = {{"kernel", "device", "shape", "default ms", "tuned ms", "speedup", "choice", "search"}};
  if (o.compare_exhaustive) {
    rows[0].push_back("exhaustive best ms");
    rows[0].push_back("choice there ms");
    rows[0].push_back("of best");
    rows[0].push_back("search time share");
  }
  for (const TunedLaunch& l : launches) {
    const TuningRecord& r = l.record;
    std::string search = !l.skipped.empty() ? l.skipped
                         : l.searched       ? std::to_string(r.timed) + " of " + std::to_string(l.candidates) + " timed, " +
                                            fixed(l.seconds, 1) + " s"
                                            : "from the database";
    bool known = l.searched || !r.key.empty();
    std::vector<std::string> row = {l.kernel, l.device, l.shapes, known ? fixed(r.default_ms, 3) : "-",
                                    known ? fixed(r.tuned_ms, 3) : "-",
                                    known && r.tuned_ms > 0 ? fixed(r.default_ms / r.tuned_ms, 2) + "x" : "-",
                                    known ? r.choice.text() : "-", search};
    if (o.compare_exhaustive) {
      row.push_back(fixed(l.exhaustive_ms, 3));
      row.push_back(fixed(l.exhaustive_chosen_ms, 3));
      row.push_back(l.exhaustive_ms > 0 && l.exhaustive_chosen_ms > 0 ? fixed(l.exhaustive_chosen_ms / l.exhaustive_ms, 3) : "-");
      row.push_back(l.exhaustive_seconds > 0 ? fixed(l.seconds / l.exhaustive_seconds, 2) : "-");
    }
    rows.push_back(std::move(row));
  }
  if (launches.empty()) std::cout << "no kernel had a schedule choice to tune\n";
  else print_table(rows, std::cout);
  if (o.verbose)
    for (const TunedLaunch& l : launches) {
      if (l.timings.empty()) continue;
      std::cout << "\n" << l.kernel << " on " << l.device << ", " << l.shapes << ": the candidates timed, in the cost model's order\n";
      std::vector<std::vector<std::string>> t = {{"choice", "model cost", "ms", "outcome"}};
      for (const CandidateTiming& c : l.timings) t.push_back({c.choice.text(), fixed(c.cost, 0), fixed(c.ms, 3), c.outcome});
      for (const CandidateTiming& c : l.final) t.push_back({c.choice.text(), fixed(c.cost, 0), fixed(c.ms, 3), "final, in turns"});
      print_table(t, std::cout);
    }
  if (!TuningDatabase::global().directory().empty())
    std::cout << "records: " << TuningDatabase::global().file() << "\n";
  else
    std::cout << "records: kept in memory only (the kernel cache is off: ZYNTAX_CACHE_DIR=off)\n";
  return 0;
}

}  // namespace

int tune_command(const TuneCommandOptions& o) {
  if (!o.budget.empty() && !parse_budget(o.budget)) {
    std::cerr << "zyntax: error: --budget '" << o.budget << "' is not a time such as 60s, 2m or 90\n";
    return 2;
  }
  if (o.path.empty() && o.import_file.empty() && o.export_file.empty()) {
    std::cerr << "zyntax: error: tune needs a program, --import or --export\n";
    return 2;
  }
  TuningDatabase& db = TuningDatabase::global();
  if (!o.import_file.empty()) {
    std::string why;
    std::optional<std::string> text = read_regular_file(o.import_file, size_t{64} << 20, &why);
    if (!text) {
      std::cerr << "zyntax: error: cannot read '" << o.import_file << "': " << why << "\n";
      return 1;
    }
    size_t n = db.import_lines(*text, o.import_file);
    std::cout << "imported " << n << " tuning record" << (n == 1 ? "" : "s") << " from " << o.import_file << "\n";
  }
  if (!o.path.empty()) {
    int rc = run_and_tune(o);
    if (rc != 0) return rc;
  }
  if (!o.export_file.empty()) {
    std::string lines = db.export_lines();
    std::ofstream out(o.export_file, std::ios::binary);
    out << lines;
    out.close();
    if (!out) {
      std::cerr << "zyntax: error: cannot write '" << o.export_file << "'\n";
      return 1;
    }
    size_t n = static_cast<size_t>(std::count(lines.begin(), lines.end(), '\n'));
    std::cout << "exported " << n << " tuning record" << (n == 1 ? "" : "s") << " to " << o.export_file << "\n";
  }
  return 0;
}

}  // namespace zyntax::cli
