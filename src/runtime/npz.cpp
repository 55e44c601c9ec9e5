#include "runtime/npz.hpp"

#include <zlib.h>


#include "runtime/npy.hpp"
#include "support/bounded_read.hpp"

namespace zyntax {

namespace {

[[noreturn]] void fail(const std::string& name, const std::string& message) { throw DataError(name + ": " + message); }

uint32_t u16_at(const std::string& b, size_t at) {
  return static_cast<uint32_t>(static_cast<unsigned char>(b[at])) | static_cast<uint32_t>(static_cast<unsigned char>(b[at + 1])) << 8;
}
uint32_t u32_at(const std::string& b, size_t at) { return u16_at(b, at) | u16_at(b, at + 2) << 16; }

void put16(std::string& out, uint32_t v) {
  out += static_cast<char>(v & 0xff);
  out += static_cast<char>((v >> 8) & 0xff);
}
void put32(std::string& out, uint32_t v) {
  put16(out, v & 0xffff);
  put16(out, v >> 16);
}

constexpr uint32_t kEndOfDirectory = 0x06054b50, kDirectoryEntry = 0x02014b50, kLocalHeader = 0x04034b50;

std::string inflate_raw(const std::string& name, const char* data, size_t size, size_t expected) {
  std::string out(expected, '\0');
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) fail(name, "cannot start decompression");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data));
  z.avail_in = static_cast<uInt>(size);
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(expected);
  int rc = inflate(&z, Z_FINISH);
  size_t produced = expected - z.avail_out;
  inflateEnd(&z);
  if (rc != Z_STREAM_END || produced != expected) fail(name, "a compressed entry is corrupt");
  return out;
}

}  // namespace

std::vector<std::pair<std::string, Tensor>> parse_npz(const std::string& b, const std::string& name) {
  // The end-of-central-directory record: in the last 64 KiB + 22 bytes.
  // An archive starts with its first entry, or, holding none (np.savez(f)), with its directory's end.
  if (b.size() < 22 || (u32_at(b, 0) != kLocalHeader && u32_at(b, 0) != kEndOfDirectory)) fail(name, "not a .npz file (no zip header)");
  size_t end = std::string::npos;
  size_t lowest = b.size() > 65557 ? b.size() - 65557 : 0;
  for (size_t at = b.size() - 22 + 1; at-- > lowest;)
    if (u32_at(b, at) == kEndOfDirectory) {
      end = at;
      break;
    }
  if (end == std::string::npos) fail(name, "the zip directory is missing (truncated file?)");
  uint32_t entries = u16_at(b, end + 10), dir_size = u32_at(b, end + 12), dir_at = u32_at(b, end + 16);
  if (u16_at(b, end + 4) != 0 || u16_at(b, end + 6) != 0) fail(name, "multi-disk zip archives are not supported");
  if (dir_at == 0xffffffffu || entries == 0xffffu) fail(name, "ZIP64 archives (over 4 GiB) are not supported");
  if (static_cast<size_t>(dir_at) + dir_size > end) fail(name, "the zip directory points past the file");
  std::vector<std::pair<std::string, Tensor>> out;
  size_t at = dir_at;
  for (uint32_t k = 0; k < entries; ++k) {
    if (at + 46 > end || u32_at(b, at) != kDirectoryEntry) fail(name, "the zip directory is corrupt");
    uint32_t flags = u16_at(b, at + 8), method = u16_at(b, at + 10), crc = u32_at(b, at + 16);
    uint32_t packed = u32_at(b, at + 20), size = u32_at(b, at + 24);
    uint32_t name_len = u16_at(b, at + 28), extra_len = u16_at(b, at + 30), comment_len = u16_at(b, at + 32);
    uint32_t local = u32_at(b, at + 42);
    if (at + 46 + name_len > end) fail(name, "the zip directory is corrupt");
    std::string entry = b.substr(at + 46, name_len);
    at += 46 + name_len + extra_len + comment_len;
    if (flags & 1) fail(name, "entry '" + entry + "' is encrypted");
    if (packed == 0xffffffffu || size == 0xffffffffu) fail(name, "entry '" + entry + "' is ZIP64 (over 4 GiB): not supported");
    if (static_cast<size_t>(local) + 30 > b.size() || u32_at(b, local) != kLocalHeader)
      fail(name, "entry '" + entry + "' has no local header");
    size_t data_at = static_cast<size_t>(local) + 30 + u16_at(b, local + 26) + u16_at(b, local + 28);
    if (data_at + packed > b.size()) fail(name, "entry '" + entry + "' runs past the end of the file (truncated?)");
    std::string bytes;
    if (method == 0) {
      if (packed != size) fail(name, "entry '" + entry + "' is stored with two sizes");
      bytes = b.substr(data_at, packed);
    } else if (method == 8) {
      // Deflate expands at most 1032 to 1: a larger claim is a corrupt
      // header, not a reason to allocate gigabytes.
      if (size > static_cast<uint64_t>(packed) * 1032 + 64)
        fail(name, "entry '" + entry + "' claims " + std::to_string(size) + " bytes from " + std::to_string(packed) +
                       " compressed (corrupt file)");
      bytes = inflate_raw(name + ": " + entry, b.data() + data_at, packed, size);
    } else {
      fail(name, "entry '" + entry + "' uses zip compression method " + std::to_string(method) + " (stored and deflate are read)");
    }
    if (static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size()))) != crc)
      fail(name, "entry '" + entry + "' fails its checksum (corrupt file)");
    std::string array = entry.size() > 4 && entry.ends_with(".npy") ? entry.substr(0, entry.size() - 4) : entry;
    out.emplace_back(array, parse_npy(bytes, name + ": " + entry));
  }
  return out;
}

std::string serialize_npz(const std::vector<std::pair<std::string, Tensor>>& arrays) {
  std::string out, directory;
  for (const auto& [array, t] : arrays) {
    std::string entry = array + ".npy";
    std::string bytes = serialize_npy(t);
    if (bytes.size() >= 0xffffffffu || out.size() >= 0xffffffffu)
      throw DataError("save: array '" + array + "' makes the .npz larger than 4 GiB (not supported)");
    uint32_t crc = static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size())));
    uint32_t local = static_cast<uint32_t>(out.size());
    put32(out, kLocalHeader);
    put16(out, 20), put16(out, 0), put16(out, 0), put16(out, 0), put16(out, 0x21);  // version, flags, stored, time, date
    put32(out, crc), put32(out, static_cast<uint32_t>(bytes.size())), put32(out, static_cast<uint32_t>(bytes.size()));
    put16(out, static_cast<uint32_t>(entry.size())), put16(out, 0);
    out += entry;
    out += bytes;
    put32(directory, kDirectoryEntry);
    put16(directory, 20), put16(directory, 20), put16(directory, 0), put16(directory, 0), put16(directory, 0), put16(directory, 0x21);
    put32(directory, crc), put32(directory, static_cast<uint32_t>(bytes.size())), put32(directory, static_cast<uint32_t>(bytes.size()));
    put16(directory, static_cast<uint32_t>(entry.size())), put16(directory, 0), put16(directory, 0), put16(directory, 0), put16(directory, 0);
    put32(directory, 0), put32(directory, local);
    directory += entry;
  }
  uint32_t dir_at = static_cast<uint32_t>(out.size());
  out += directory;
  put32(out, kEndOfDirectory);
  put16(out, 0), put16(out, 0), put16(out, static_cast<uint32_t>(arrays.size())), put16(out, static_cast<uint32_t>(arrays.size()));
  put32(out, static_cast<uint32_t>(directory.size())), put32(out, dir_at), put16(out, 0);
  return out;
}

std::vector<std::pair<std::string, Tensor>> load_npz(const std::string& path) {
  std::string why;
  std::optional<std::string> bytes = read_regular_file(path, size_t{1} << 40, &why);
  if (!bytes) fail(path, "cannot read file: " + why);
  return parse_npz(*bytes, path);
}

void save_npz(const std::vector<std::pair<std::string, Tensor>>& arrays, const std::string& path) {
  write_file_bytes(serialize_npz(arrays), path);
}

}  // namespace zyntax
