#include "runtime/disk_cache.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cir/hash.hpp"
#include "runtime/profiler.hpp"
#include "support/bounded_read.hpp"

namespace zyntax {

namespace {

constexpr char kMagic[] = "ZYNTAX-CACHE-1\n";

std::string default_directory() {
  if (const char* env = std::getenv("ZYNTAX_CACHE_DIR")) {
    std::string d = env;
    return d == "off" || d == "0" ? std::string() : d;
  }
  if (const char* home = std::getenv("HOME")) return std::string(home) + "/.cache/zyntax";
  return "";
}

// header: magic, key length, key, byte count, checksum; then the bytes.
std::string header(std::string_view key, std::string_view bytes) {
  std::ostringstream os;
  os << kMagic << key.size() << "\n" << key << "\n" << bytes.size() << " " << cir::hash_text(bytes) << "\n";
  return os.str();
}

}  // namespace

DiskCache& DiskCache::global() {
  static DiskCache cache(default_directory());
  return cache;
}

DiskCache::DiskCache(std::string directory) : dir_(std::move(directory)) {}

std::string DiskCache::path_for(std::string_view key) const {
  return dir_ + "/" + cir::hash_hex(cir::hash_text(key)) + ".kernel";
}

std::optional<std::string> DiskCache::load(std::string_view key) const {
  if (!enabled()) return std::nullopt;
  // Entries are compiled kernels: far below 1 GiB; anything else is not one.
  std::optional<std::string> read = read_regular_file(path_for(key), size_t{1} << 30, nullptr);
  if (!read) return std::nullopt;
  std::string& file = *read;
  if (file.compare(0, sizeof kMagic - 1, kMagic) != 0) return std::nullopt;
  size_t pos = sizeof kMagic - 1;
  size_t nl = file.find('\n', pos);
  if (nl == std::string::npos) return std::nullopt;
  size_t key_size = std::strtoull(file.c_str() + pos, nullptr, 10);
  pos = nl + 1;
  if (key_size != key.size() || file.size() < pos + key_size + 1 || file.compare(pos, key_size, key) != 0) return std::nullopt;
  pos += key_size + 1;
  nl = file.find('\n', pos);
  if (nl == std::string::npos) return std::nullopt;
  std::istringstream sizes(file.substr(pos, nl - pos));
  size_t count = 0;
  uint64_t checksum = 0;
  if (!(sizes >> count >> checksum)) return std::nullopt;
  pos = nl + 1;
  if (file.size() - pos != count) return std::nullopt;
  std::string bytes = file.substr(pos);
  if (cir::hash_text(bytes) != checksum) return std::nullopt;
  Profiler::note_disk_load();  // a kernel's build that loads is a cache hit in the profile
  return bytes;
}

void DiskCache::store(std::string_view key, std::string_view bytes) const {
  if (!enabled()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) return;
  static std::atomic<uint64_t> counter{0};
  std::string final_path = path_for(key);
  std::string tmp = final_path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) return;
    out << header(key, bytes);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) {
      std::filesystem::remove(tmp, ec);
      return;
    }
  }
  std::filesystem::rename(tmp, final_path, ec);
  if (ec) std::filesystem::remove(tmp, ec);
}

}  // namespace zyntax
