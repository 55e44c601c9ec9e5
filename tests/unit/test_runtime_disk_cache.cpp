// The on-disk kernel cache: what is stored loads back; anything else — another
// key, a truncated or corrupted file, a disabled cache — is a miss.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cir/hash.hpp"
#include "runtime/disk_cache.hpp"

namespace zyntax {
namespace {

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    path = std::filesystem::temp_directory_path() / ("zyntax-cache-test-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
                                                     "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

std::filesystem::path only_file(const std::filesystem::path& dir) {
  std::filesystem::path found;
  for (const auto& e : std::filesystem::directory_iterator(dir)) found = e.path();
  return found;
}

TEST(RuntimeDiskCache, StoresAndLoads) {
  TempDir dir;
  DiskCache cache(dir.path.string());
  std::string bytes("\x7f" "ELF\0\1\2 binary", 15);
  cache.store("kernel A on x86-64", bytes);
  EXPECT_EQ(cache.load("kernel A on x86-64"), bytes);
  EXPECT_FALSE(cache.load("kernel B on x86-64").has_value());
}

TEST(RuntimeDiskCache, TruncatedOrCorruptEntriesMiss) {
  TempDir dir;
  DiskCache cache(dir.path.string());
  cache.store("key", std::string(1000, 'x'));
  std::filesystem::path file = only_file(dir.path);
  std::filesystem::resize_file(file, std::filesystem::file_size(file) - 10);
  EXPECT_FALSE(cache.load("key").has_value());
  cache.store("key", std::string(1000, 'x'));
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-5, std::ios::end);
    f.put('y');
  }
  EXPECT_FALSE(cache.load("key").has_value());
  cache.store("key", std::string(1000, 'x'));  // rebuilt
  EXPECT_EQ(cache.load("key"), std::string(1000, 'x'));
}

TEST(RuntimeDiskCache, AFileForAnotherKeyUnderTheSameNameMisses) {
  TempDir dir;
  DiskCache cache(dir.path.string());
  cache.store("key two", "bytes two");
  // As if "key one" hashed to the same file name as "key two".
  std::filesystem::path one = dir.path / (cir::hash_hex(cir::hash_text("key one")) + ".kernel");
  std::filesystem::copy_file(only_file(dir.path), one);
  EXPECT_FALSE(cache.load("key one").has_value());
}

TEST(RuntimeDiskCache, DisabledCacheStoresNothing) {
  DiskCache cache("");
  EXPECT_FALSE(cache.enabled());
  cache.store("k", "v");
  EXPECT_FALSE(cache.load("k").has_value());
}

}  // namespace
}  // namespace zyntax
