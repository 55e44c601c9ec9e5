// Compiled kernels kept on disk between runs, under $ZYNTAX_CACHE_DIR or
// ~/.cache/zyntax (ZYNTAX_CACHE_DIR=off turns it off). An entry's file
// name is a hash of its key; the file holds the whole key and a checksum of
// its bytes, so a hash collision, a truncated or a corrupt file is a miss
// (and is rebuilt), never wrong code. Files are written to a temporary name
// and renamed, so a concurrent reader sees a whole file or none.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace zyntax {

class DiskCache {
 public:
  // The directory from the environment; disabled when there is none.
  static DiskCache& global();
  explicit DiskCache(std::string directory);

  bool enabled() const { return !dir_.empty(); }
  const std::string& directory() const { return dir_; }

  std::optional<std::string> load(std::string_view key) const;
  // Best effort: a cache that cannot be written is simply not used.
  void store(std::string_view key, std::string_view bytes) const;

 private:
  std::string path_for(std::string_view key) const;
  std::string dir_;
};

}  // namespace zyntax
