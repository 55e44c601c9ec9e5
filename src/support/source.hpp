// Source files and positions in them. Every AST and CIR node carries a Span so
// that errors found anywhere on the data path can point back at the source.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace zyntax {

using FileId = uint32_t;
constexpr FileId kNoFile = ~FileId{0};

// A half-open byte range [begin, end) in one file.
struct Span {
  FileId file = kNoFile;
  uint32_t begin = 0;
  uint32_t end = 0;

  bool valid() const { return file != kNoFile; }
  // The smallest span covering both (same file assumed; falls back to `a`).
  static Span merge(Span a, Span b) {
    if (!a.valid()) return b;
    if (!b.valid() || a.file != b.file) return a;
    return {a.file, a.begin < b.begin ? a.begin : b.begin, a.end > b.end ? a.end : b.end};
  }
};

struct LineCol {
  uint32_t line = 0;    // 1-based
  uint32_t column = 0;  // 1-based, in bytes
};

class SourceFile {
 public:
  SourceFile(std::string path, std::string text);

  const std::string& path() const { return path_; }
  const std::string& text() const { return text_; }
  LineCol line_col(uint32_t offset) const;
  // The text of a 1-based line without its newline.
  std::string_view line_text(uint32_t line) const;
  uint32_t line_count() const { return static_cast<uint32_t>(line_starts_.size()); }

 private:
  std::string path_;
  std::string text_;
  std::vector<uint32_t> line_starts_;
};

// Owns every file read during one compilation (the main program and its imports).
class SourceManager {
 public:
  FileId add(std::string path, std::string text);
  const SourceFile& file(FileId id) const { return *files_.at(id); }
  size_t size() const { return files_.size(); }
  // Returns kNoFile if the path was never added.
  FileId find(const std::string& path) const;

 private:
  std::vector<std::unique_ptr<SourceFile>> files_;
};

}  // namespace zyntax
