#include "runtime/tuning_database.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cir/hash.hpp"
#include "cir/printer.hpp"
#include "cir/rename_interface.hpp"
#include "codegen_fingerprint.hpp"
#include "runtime/disk_cache.hpp"
#include "support/bounded_read.hpp"
#include "support/dtype.hpp"

namespace zyntax {

namespace {

std::atomic<int> g_mode{-1};

void warn(const std::string& message) { std::cerr << "zyntax: warning: " << message << "\n"; }

// The file stays this size or less: more is not a tuning database.
constexpr size_t kMaxFile = size_t{64} << 20;
// Rewritten when it holds this many more lines than live records.
constexpr size_t kSupersededToCompact = 256;

std::string shape_text(const cir::Type& t) {
  std::string s = dtype_name(t.dtype);
  s += "[";
  for (size_t i = 0; i < t.shape.size(); ++i) {
    if (i) s += ",";
    auto v = t.shape[i].as<cir::IntImm>();
    s += v ? std::to_string(v->value) : cir::print(t.shape[i]);
  }
  return s + "]";
}

// An exclusive lock of the database's lock file, for as long as it lives.
class FileLock {
 public:
  explicit FileLock(const std::string& path) : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
    if (fd_ >= 0) ::flock(fd_, LOCK_EX);
  }
  ~FileLock() {
    if (fd_ >= 0) {
      ::flock(fd_, LOCK_UN);
      ::close(fd_);
    }
  }
  bool held() const { return fd_ >= 0; }

 private:
  int fd_;
};

bool write_all(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

std::string utc_now() {
  std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

TuneMode tune_mode() {
  int m = g_mode.load(std::memory_order_acquire);
  if (m >= 0) return static_cast<TuneMode>(m);
  TuneMode mode = TuneMode::Cached;
  if (const char* env = std::getenv("ZYNTAX_TUNE")) {
    if (std::optional<TuneMode> parsed = parse_tune_mode(env)) mode = *parsed;
    else warn(std::string("ZYNTAX_TUNE='") + env + "' is not off, cached or on; using cached");
  }
  int none = -1;
  g_mode.compare_exchange_strong(none, static_cast<int>(mode));
  return static_cast<TuneMode>(g_mode.load());
}

void set_tune_mode(TuneMode mode) { g_mode.store(static_cast<int>(mode), std::memory_order_release); }

std::optional<TuneMode> parse_tune_mode(const std::string& text) {
  if (text == "off") return TuneMode::Off;
  if (text == "cached") return TuneMode::Cached;
  if (text == "on") return TuneMode::On;
  return std::nullopt;
}

std::string TuningKey::hash() const {
  return cir::hash_hex(cir::hash_text(cir + "\n" + shapes + "\n" + device + "\n" + compiler));
}

TuningKey tuning_key(const cir::Kernel& kernel, const std::string& device) {
  // Names stripped: the same computation under other names is the same kernel.
  std::map<std::string, std::string> to;
  int inputs = 0, scalars = 0;
  for (const cir::Param& p : kernel.params) {
    if (p.role == cir::ParamRole::Input) to[p.name] = "in" + std::to_string(inputs++);
    else if (p.role == cir::ParamRole::Scalar) to[p.name] = "s" + std::to_string(scalars++);
  }
  cir::Kernel anonymous = cir::rename_interface(kernel, to);
  anonymous.name = "k";
  anonymous.span = {};
  TuningKey key;
  key.cir = cir::hash_hex(cir::hash_kernel(anonymous));
  std::string ins;
  for (const cir::Param& p : kernel.params)
    if (p.role == cir::ParamRole::Input) ins += (ins.empty() ? "" : " ") + shape_text(p.type);
  key.shapes = ins + " -> " + shape_text(kernel.output().type);
  key.device = device;
  key.compiler = tuning_compiler_version();
  return key;
}

const std::string& tuning_compiler_version() {
  static const std::string v = std::string("zyntax ") + ZYNTAX_VERSION + ", LLVM " + ZYNTAX_LLVM_VERSION + ", codegen " +
                               ZYNTAX_CODEGEN_FINGERPRINT;
  return v;
}

std::string TuningRecord::json() const {
  nlohmann::ordered_json j;
  j["key"] = key;
  j["kernel"] = kernel;
  j["cir"] = cir;
  j["shapes"] = shapes;
  j["device"] = device;
  j["compiler"] = compiler;
  j["choice"] = choice.text();
  j["default_ms"] = default_ms;
  j["tuned_ms"] = tuned_ms;
  j["timed"] = timed;
  j["when"] = when.empty() ? utc_now() : when;
  return j.dump();
}

std::optional<TuningRecord> TuningRecord::parse(const std::string& line, std::string* why) {
  auto fail = [&](const std::string& w) -> std::optional<TuningRecord> {
    if (why) *why = w;
    return std::nullopt;
  };
  nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return fail("not a JSON object");
  TuningRecord r;
  for (auto [field, into] : {std::pair{"key", &r.key}, {"cir", &r.cir}, {"shapes", &r.shapes}, {"device", &r.device},
                             {"compiler", &r.compiler}, {"kernel", &r.kernel}, {"when", &r.when}}) {
    auto it = j.find(field);
    if (it == j.end() || !it->is_string()) return fail(std::string("no string '") + field + "'");
    *into = it->get<std::string>();
  }
  auto choice = j.find("choice");
  if (choice == j.end() || !choice->is_string()) return fail("no string 'choice'");
  std::optional<TuningChoice> c = TuningChoice::parse(choice->get<std::string>());
  if (!c) return fail("choice '" + choice->get<std::string>() + "' is not knob=value pairs");
  r.choice = *c;
  for (auto [field, into] : {std::pair{"default_ms", &r.default_ms}, {"tuned_ms", &r.tuned_ms}}) {
    auto it = j.find(field);
    if (it == j.end() || !it->is_number()) return fail(std::string("no number '") + field + "'");
    *into = it->get<double>();
  }
  auto timed = j.find("timed");
  if (timed != j.end() && timed->is_number_integer()) r.timed = timed->get<int>();
  if (TuningKey{r.cir, r.shapes, r.device, r.compiler}.hash() != r.key) return fail("its key does not match its fields");
  return r;
}

TuningDatabase& TuningDatabase::global() {
  static TuningDatabase db(DiskCache::global().enabled() ? DiskCache::global().directory() + "/tuning" : std::string(),
                           tuning_compiler_version());
  return db;
}

TuningDatabase::TuningDatabase(std::string directory, std::string compiler) : dir_(std::move(directory)), compiler_(std::move(compiler)) {}

std::string TuningDatabase::file() const { return dir_.empty() ? std::string() : dir_ + "/records.jsonl"; }

std::optional<TuningRecord> TuningDatabase::find(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!loaded_) load_locked();
  auto it = records_.find(key);
  if (it == records_.end()) return std::nullopt;
  return it->second;
}

std::vector<TuningRecord> TuningDatabase::records() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!loaded_) load_locked();
  std::map<std::string, TuningRecord> sorted(records_.begin(), records_.end());
  std::vector<TuningRecord> out;
  for (auto& [k, r] : sorted) out.push_back(r);
  return out;
}

size_t TuningDatabase::parse_into_locked(const std::string& text, const std::string& origin, bool last_line_may_be_partial) {
  size_t added = 0, stale = 0, line_no = 0, pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    bool whole = nl != std::string::npos;
    std::string line = text.substr(pos, whole ? nl - pos : std::string::npos);
    pos = whole ? nl + 1 : text.size();
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::string why;
    std::optional<TuningRecord> r = TuningRecord::parse(line, &why);
    if (!r) {
      if (!whole && last_line_may_be_partial) continue;  // being appended now
      warn(origin + ":" + std::to_string(line_no) + ": tuning record ignored: " + why);
      continue;
    }
    if (r->compiler != compiler_) {
      ++stale;
      continue;
    }
    records_[r->key] = std::move(*r);
    ++added;
  }
  if (stale)
    warn(origin + ": " + std::to_string(stale) + " tuning record" + (stale == 1 ? "" : "s") +
         " of another compiler version ignored (`zyntax tune` makes new ones)");
  return added;
}

void TuningDatabase::load_locked() {
  loaded_ = true;
  lines_on_disk_ = 0;
  if (dir_.empty()) return;
  std::string why;
  std::optional<std::string> text = read_regular_file(file(), kMaxFile, &why);
  if (!text) {
    std::error_code ec;
    if (std::filesystem::exists(file(), ec)) warn(file() + ": tuning database not read: " + why);
    return;
  }
  for (char c : *text) lines_on_disk_ += c == '\n';
  parse_into_locked(*text, file(), true);
}

void TuningDatabase::append_locked(const TuningRecord& r) {
  if (dir_.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  FileLock lock(dir_ + "/records.lock");
  if (!lock.held()) return;  // best effort, as the kernel cache: a database that cannot be written is not kept
  // Too many superseded lines: rewrite the live records (other processes'
  // appends since this one read the file included) and rename over.
  if (lines_on_disk_ > records_.size() + kSupersededToCompact) {
    std::map<std::string, TuningRecord> live;
    if (std::optional<std::string> text = read_regular_file(file(), kMaxFile, nullptr)) {
      std::istringstream in(*text);
      for (std::string line; std::getline(in, line);)
        if (std::optional<TuningRecord> old = TuningRecord::parse(line, nullptr)) live[old->key] = *old;
    }
    live[r.key] = r;
    std::string bytes;
    for (auto& [k, rec] : live) bytes += rec.json() + "\n";
    std::string tmp = file() + ".tmp." + std::to_string(::getpid());
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0 && write_all(fd, bytes) && ::fsync(fd) == 0 && ::close(fd) == 0 && std::rename(tmp.c_str(), file().c_str()) == 0) {
      lines_on_disk_ = live.size();
      return;
    }
    if (fd >= 0) ::close(fd);
    std::remove(tmp.c_str());
  }
  int fd = ::open(file().c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  // A line a writer left unfinished (it died mid-write) is ended first, so
  // that this record is a line of its own.
  std::string line = r.json() + "\n";
  off_t size = ::lseek(fd, 0, SEEK_END);
  char last = '\n';
  if (size > 0 && ::pread(fd, &last, 1, size - 1) == 1 && last != '\n') line = "\n" + line;
  if (write_all(fd, line)) ++lines_on_disk_;
  ::close(fd);
}

void TuningDatabase::record(const TuningRecord& given) {
  TuningRecord r = given;
  if (r.when.empty()) r.when = utc_now();
  std::lock_guard<std::mutex> lock(mu_);
  if (!loaded_) load_locked();
  records_[r.key] = r;
  append_locked(r);
  generation_.fetch_add(1, std::memory_order_acq_rel);
}

size_t TuningDatabase::import_lines(const std::string& text, const std::string& origin) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!loaded_) load_locked();
  std::unordered_map<std::string, TuningRecord> before = records_;
  size_t added = parse_into_locked(text, origin, false);
  for (auto& [key, r] : records_) {
    auto it = before.find(key);
    if (it == before.end() || it->second.json() != r.json()) append_locked(r);
  }
  generation_.fetch_add(1, std::memory_order_acq_rel);
  return added;
}

std::string TuningDatabase::export_lines() {
  std::string out;
  for (const TuningRecord& r : records()) out += r.json() + "\n";
  return out;
}

}  // namespace zyntax
