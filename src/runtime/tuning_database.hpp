// The tuning database: the schedule choice that won for a kernel, its
// shapes and dtypes, a device and a compiler, kept between runs in
// $ZYNTAX_CACHE_DIR/tuning/records.jsonl (beside the kernel cache).
//
// One JSON object per line, readable and editable:
//   {"key": "...", "kernel": "mm", "cir": "...", "shapes": "f32[128,4096] f32[4096,4096] -> f32[128,4096]",
//    "device": "...", "compiler": "...", "choice": "kc=256 mc=96 mr=8 nr=32 nc=2048",
//    "default_ms": 1.92, "tuned_ms": 1.41, "timed": 9, "when": "2026-11-29T03:00:00Z"}
// `key` is a hash of cir (the specialised kernel's CIR with its names
// stripped), shapes, device and compiler: a change of any misses. A line
// whose key does not match its fields, or that does not parse, is ignored
// with a warning naming the file and line; a record from another compiler
// version is stale and ignored (one warning). The last record of a key wins.
//
// Writers append whole lines under an exclusive lock of `records.lock`, so
// concurrent processes never interleave; the file is rewritten (to a
// temporary name, then renamed: readers see the old file or the new one)
// when it holds many superseded records. Readers take no lock: a line being
// appended is not yet whole, and is skipped without a warning.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "cir/ir.hpp"
#include "support/tuning_choice.hpp"

namespace zyntax {

// What a run does with the database (ZYNTAX_TUNE, `zyntax run --tune`):
// `off` ignores it, `cached` (the default) uses its records and never
// searches, `on` also tunes each kernel it launches that has no record.
enum class TuneMode { Off, Cached, On };
TuneMode tune_mode();
void set_tune_mode(TuneMode mode);
// "off", "cached", "on"; none for anything else.
std::optional<TuneMode> parse_tune_mode(const std::string& text);

struct TuningRecord {
  std::string key;       // 16 hex digits: the hash of the four fields below
  std::string cir;       // 16 hex digits: the kernel's CIR, names stripped
  std::string shapes;    // "f32[4,8] f32[8] -> f32[4]"
  std::string device;    // the device's signature (model, architecture, driver, cores)
  std::string compiler;  // zyntax, LLVM and code generator versions
  std::string kernel;    // the kernel's name, for people
  TuningChoice choice;   // the winner; empty: the default won
  double default_ms = 0, tuned_ms = 0;
  int timed = 0;         // candidates timed
  std::string when;      // UTC, ISO 8601

  // The line this record is on disk (without its newline).
  std::string json() const;
  // A line read back; none with `why` set where it is not a valid record.
  static std::optional<TuningRecord> parse(const std::string& line, std::string* why);
};

// The identity of a kernel for the database: the fields of a record's key.
struct TuningKey {
  std::string cir, shapes, device, compiler;
  std::string hash() const;  // the record's `key`
};

// `kernel` (specialised) on a device of signature `device`.
TuningKey tuning_key(const cir::Kernel& kernel, const std::string& device);
// This build's compiler identity (part of every key).
const std::string& tuning_compiler_version();

class TuningDatabase {
 public:
  // The process's database: under the kernel cache's directory, or held in
  // memory alone where the cache is off.
  static TuningDatabase& global();
  // `directory` empty: in memory only. `compiler`: the identity whose records count.
  TuningDatabase(std::string directory, std::string compiler);

  const std::string& directory() const { return dir_; }
  std::string file() const;

  // The record for a key, read from disk on first use.
  std::optional<TuningRecord> find(const std::string& key);
  // Adds a record (replacing the key's), in memory and on disk.
  void record(const TuningRecord& r);
  // Every record held, in key order.
  std::vector<TuningRecord> records();
  // Bumped by every record(): plans made from an older generation look again.
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }
  // Lines written as `export` writes them, valid records of this compiler
  // only: `import` adds them (later lines winning); returns how many, and
  // warns of the rest as loading does.
  size_t import_lines(const std::string& text, const std::string& origin);
  std::string export_lines();

 private:
  void load_locked();
  void append_locked(const TuningRecord& r);
  size_t parse_into_locked(const std::string& text, const std::string& origin, bool last_line_may_be_partial);

  std::string dir_, compiler_;
  std::mutex mu_;
  bool loaded_ = false;
  size_t lines_on_disk_ = 0;
  std::unordered_map<std::string, TuningRecord> records_;
  std::atomic<uint64_t> generation_{1};
};

}  // namespace zyntax
