#include "support/diagnostics.hpp"

#include <algorithm>
#include <ostream>
#include <sstream>

namespace zyntax {

size_t utf8_sequence_length(std::string_view s, size_t i) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  size_t n = c >= 0xF0 && c < 0xF5 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
  return n;
}

std::string printable_text(std::string_view line) {
  std::string out;
  for (size_t i = 0; i < line.size();) {
    unsigned char c = static_cast<unsigned char>(line[i]);
    if (c == '\t' || (c >= 0x20 && c < 0x7f)) {
      out += static_cast<char>(c);
      ++i;
    } else if (size_t n = c >= 0x80 ? utf8_sequence_length(line, i) : 0) {
      out.append(line.substr(i, n));
      i += n;
    } else {
      out += '?';
      ++i;
    }
  }
  return out;
}

Diagnostic& DiagnosticEngine::error(Span span, std::string message) {
  diags_.push_back(Diagnostic{Severity::Error, span, std::move(message), {}, {}});
  ++error_count_;
  return diags_.back();
}

Diagnostic& DiagnosticEngine::warning(Span span, std::string message) {
  diags_.push_back(Diagnostic{Severity::Warning, span, std::move(message), {}, {}});
  return diags_.back();
}

void DiagnosticEngine::report(Diagnostic d) {
  if (d.severity == Severity::Error) ++error_count_;
  diags_.push_back(std::move(d));
}

std::string DiagnosticEngine::render_location(Span span) const {
  if (!span.valid() || span.file >= sources_.size()) return "zyntax";
  const SourceFile& f = sources_.file(span.file);
  LineCol lc = f.line_col(span.begin);
  return f.path() + ":" + std::to_string(lc.line) + ":" + std::to_string(lc.column);
}

// The source line (non-printable bytes shown as '?', so junk input cannot
// garble a terminal) and a caret line under the span; tabs are kept so the
// caret lines up.
std::string DiagnosticEngine::render_excerpt(Span span) const {
  if (!span.valid() || span.file >= sources_.size()) return "";
  const SourceFile& f = sources_.file(span.file);
  LineCol lc = f.line_col(span.begin);
  std::string_view line = f.line_text(lc.line);
  // Long lines show a window around the column, so the caret is always on screen.
  constexpr size_t kWidth = 160;
  size_t col = std::min<size_t>(lc.column - 1, line.size());
  size_t first = col > kWidth / 2 ? col - kWidth / 2 : 0;
  while (first > 0 && first < line.size() && (static_cast<unsigned char>(line[first]) & 0xC0) == 0x80) --first;
  std::string_view shown_part = line.substr(first, kWidth);
  std::string prefix = first > 0 ? "... " : "";
  std::string shown = prefix + printable_text(shown_part) + (first + kWidth < line.size() ? " ..." : "");
  std::string gutter = std::to_string(lc.line);
  std::string pad(gutter.size(), ' ');
  std::ostringstream os;
  os << " " << gutter << " | " << shown << "\n";
  os << " " << pad << " | " << std::string(prefix.size(), ' ');
  for (size_t i = first; i < col;) {
    unsigned char c = static_cast<unsigned char>(line[i]);
    size_t n = c >= 0x80 ? utf8_sequence_length(line, i) : 0;
    os << (c == '\t' ? '\t' : ' ');  // one column per shown character
    i += n ? n : 1;
  }
  os << '^';
  LineCol end_lc = f.line_col(span.end > span.begin ? span.end - 1 : span.begin);
  if (end_lc.line == lc.line && span.end > span.begin + 1) {
    size_t n = std::min<size_t>(span.end - span.begin - 1, first + kWidth > col + 1 ? first + kWidth - col - 1 : 0);
    os << std::string(n, '~');
  }
  os << "\n";
  return os.str();
}

std::string DiagnosticEngine::render(const Diagnostic& d) const {
  static const char* kNames[] = {"error", "warning", "note"};
  std::ostringstream os;
  os << render_location(d.span) << ": " << kNames[static_cast<int>(d.severity)] << ": " << d.message << "\n";
  os << render_excerpt(d.span);
  for (const DiagNote& n : d.notes) {
    if (n.span.valid()) {
      os << render_location(n.span) << ": note: " << n.message << "\n";
      os << render_excerpt(n.span);
    } else {
      os << "  note: " << n.message << "\n";
    }
  }
  if (!d.hint.empty()) os << "  hint: " << d.hint << "\n";
  return os.str();
}

void DiagnosticEngine::print(std::ostream& os) const {
  // In source order: the lexer and the parser report in separate passes.
  std::vector<const Diagnostic*> sorted;
  for (const Diagnostic& d : diags_) sorted.push_back(&d);
  std::stable_sort(sorted.begin(), sorted.end(), [](const Diagnostic* a, const Diagnostic* b) {
    if (a->span.file != b->span.file) return a->span.file < b->span.file;
    return a->span.begin < b->span.begin;
  });
  for (const Diagnostic* d : sorted) os << render(*d);
  if (error_count_ > 1) os << error_count_ << " errors\n";
}

std::string DiagnosticEngine::render_all() const {
  std::ostringstream os;
  print(os);
  return os.str();
}

}  // namespace zyntax
