// `zyntax tune`: runs a program with tuning on, so that every kernel it
// launches is tuned (or found in the tuning database), and prints a table;
// imports and exports the database's records.
#pragma once

#include <string>

namespace zyntax::cli {

struct TuneCommandOptions {
  std::string path;          // the program; empty: only import / export
  std::string device = "auto";
  std::string budget;        // "60s", "2m", "90": the whole search's time
  std::string import_file, export_file;
  int max_timed = 8;
  bool compare_exhaustive = false;
  bool verbose = false;      // every candidate timed: its choice, the model's cost, its time or why not
  uint64_t seed = 0;
};

// The command's exit status (0, 1 for a failed program or file, 2 for bad usage).
int tune_command(const TuneCommandOptions& options);

}  // namespace zyntax::cli
