// Diagnostics: `path:line:col: error: message`, the source line, a caret under
// the span, then notes (other places involved) and an optional hint.
#pragma once

#include <iosfwd>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/source.hpp"

namespace zyntax {

enum class Severity { Error, Warning, Note };

struct DiagNote {
  Span span;  // may be invalid: a note without a place
  std::string message;
};

struct Diagnostic {
  Severity severity = Severity::Error;
  Span span;
  std::string message;
  std::vector<DiagNote> notes;
  std::string hint;

  Diagnostic& note(Span s, std::string m) {
    notes.push_back({s, std::move(m)});
    return *this;
  }
  Diagnostic& with_hint(std::string h) {
    hint = std::move(h);
    return *this;
  }
};

// Length of the valid UTF-8 sequence starting at s[i] (1 to 4), or 0 if none starts there.
size_t utf8_sequence_length(std::string_view s, size_t i);

// Text safe to show on a terminal: control bytes and invalid UTF-8 become
// '?', one per byte, so that columns still line up.
std::string printable_text(std::string_view text);

// An error that unwinds: thrown by the host interpreter and the executors,
// caught at the top and printed like any other diagnostic.
class Error : public std::runtime_error {
 public:
  explicit Error(Diagnostic d) : std::runtime_error(d.message), diag_(std::move(d)) {}
  Error(Span span, std::string message) : Error(Diagnostic{Severity::Error, span, std::move(message), {}, {}}) {}
  const Diagnostic& diagnostic() const { return diag_; }
  Diagnostic& diagnostic() { return diag_; }

 private:
  Diagnostic diag_;
};

// Collects diagnostics of one run. Printing is separate so that tests can
// inspect what was reported.
class DiagnosticEngine {
 public:
  explicit DiagnosticEngine(const SourceManager& sources) : sources_(sources) {}

  Diagnostic& error(Span span, std::string message);
  Diagnostic& warning(Span span, std::string message);
  void report(Diagnostic d);

  bool has_errors() const { return error_count_ > 0; }
  size_t error_count() const { return error_count_; }
  const std::vector<Diagnostic>& diagnostics() const { return diags_; }
  // Too many errors: later phases stop adding more.
  bool saturated() const { return error_count_ >= kMaxErrors; }

  // Renders one diagnostic with its source excerpt.
  std::string render(const Diagnostic& d) const;
  void print(std::ostream& os) const;
  std::string render_all() const;

  static constexpr size_t kMaxErrors = 50;

 private:
  std::string render_location(Span span) const;
  std::string render_excerpt(Span span) const;

  const SourceManager& sources_;
  std::vector<Diagnostic> diags_;
  size_t error_count_ = 0;
};

}  // namespace zyntax
