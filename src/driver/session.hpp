// One compilation session: the source files read (the program and what it
// imports), their syntax trees, the diagnostics, and the names given to the
// program's compute blocks.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "support/diagnostics.hpp"
#include "support/source.hpp"
#include "syntax/ast.hpp"

namespace zyntax {

struct LoadedModule {
  std::string path;  // as resolved (relative to the importing file's directory)
  FileId file = kNoFile;
  ast::Module ast;
};

class Session {
 public:
  Session() : diags_(sources_) {}

  SourceManager& sources() { return sources_; }
  DiagnosticEngine& diags() { return diags_; }

  // Reads and parses a file once; later calls return the same module.
  // Returns null (with a diagnostic at `site`) if the file cannot be read.
  LoadedModule* load(const std::string& path, Span site);
  // Parses text given directly (tests, fuzzing).
  LoadedModule* load_text(const std::string& name, std::string text);

  // Where `import "x"` / `import x` in `from` points to.
  std::string resolve_import(const ast::Import& imp, const LoadedModule& from) const;

  // A name for each compute block: the variable it is bound to, made unique.
  const std::string& kernel_name(const ast::Compute* c);

 private:
  LoadedModule* add(const std::string& path, std::string text);
  void name_kernels(const ast::Module& m);

  SourceManager sources_;
  DiagnosticEngine diags_;
  std::map<std::string, std::unique_ptr<LoadedModule>> modules_;
  std::map<const ast::Compute*, std::string> kernel_names_;
  std::map<std::string, int> name_counts_;
};

// Files larger than this are refused rather than read.
constexpr size_t kMaxSourceBytes = 64u << 20;

}  // namespace zyntax
