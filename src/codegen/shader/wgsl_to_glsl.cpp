#include "codegen/shader/wgsl_to_glsl.hpp"

#include <cctype>
#include <regex>
#include <stdexcept>
#include <vector>

namespace zyntax::codegen {
namespace {

std::string glsl_type(const std::string& t) {
  if (t == "f32") return "float";
  if (t == "i32") return "int";
  if (t == "u32") return "uint";
  if (t == "bool") return "bool";
  if (t == "vec2<f32>") return "vec2";
  if (t == "vec2<i32>") return "ivec2";
  if (t == "vec2<u32>") return "uvec2";
  throw std::logic_error("wgsl_to_glsl: no GLSL type for '" + t + "'");
}

bool is_word(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The index just past the bracket that closes the one at `open`.
size_t closing(const std::string& s, size_t open, char o, char c) {
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    if (s[i] == o) ++depth;
    if (s[i] == c && --depth == 0) return i + 1;
  }
  throw std::logic_error("wgsl_to_glsl: unbalanced '" + std::string(1, o) + "' in: " + s.substr(open, 60));
}

std::vector<std::string> split_arguments(const std::string& inside) {
  std::vector<std::string> args;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < inside.size(); ++i) {
    char c = inside[i];
    if (c == '(' || c == '<' && i > 0 && is_word(inside[i - 1]) && depth >= 0) ++depth;
    if (c == ')' || c == '>' && depth > 0 && i > 0 && inside[i - 1] != '-' && inside[i - 1] != '>' && inside[i - 1] != ' ') --depth;
    if (c == ',' && depth == 0) {
      args.push_back(inside.substr(start, i - start));
      start = i + 1;
    }
  }
  args.push_back(inside.substr(start));
  for (std::string& a : args) a = std::regex_replace(a, std::regex("^\\s+|\\s+$"), "");
  return args;
}

// Calls and type names, recursively into the arguments.
std::string rewrite(const std::string& s) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    bool starts_word = (std::isalpha(static_cast<unsigned char>(s[i])) || s[i] == '_') && (i == 0 || (!is_word(s[i - 1]) && s[i - 1] != '.'));
    if (!starts_word) {
      out += s[i++];
      continue;
    }
    size_t j = i;
    while (j < s.size() && is_word(s[j])) ++j;
    std::string name = s.substr(i, j - i), templ;
    if (j < s.size() && s[j] == '<' && (name == "bitcast" || name == "vec2" || name == "array")) {
      size_t end = closing(s, j, '<', '>');
      templ = s.substr(j + 1, end - j - 2);
      j = end;
    }
    bool call = j < s.size() && s[j] == '(';
    if (!call) {
      if (name == "f32" || name == "i32" || name == "u32" || (name == "vec2" && !templ.empty()))
        out += glsl_type(templ.empty() ? name : name + "<" + templ + ">");
      else
        out += name;
      i = j;
      continue;
    }
    size_t end = closing(s, j, '(', ')');
    std::vector<std::string> args = split_arguments(s.substr(j + 1, end - j - 2));
    for (std::string& a : args) a = rewrite(a);
    auto joined = [&] {
      std::string r;
      for (size_t k = 0; k < args.size(); ++k) r += (k ? ", " : "") + args[k];
      return r;
    };
    if (name == "select") {
      if (args.size() != 3) throw std::logic_error("wgsl_to_glsl: select takes 3 arguments");
      out += "((" + args[2] + ") ? (" + args[1] + ") : (" + args[0] + "))";
    } else if (name == "bitcast") {
      const char* fn = templ == "f32" ? "uintBitsToFloat" : templ == "u32" ? "floatBitsToUint" : templ == "i32" ? "floatBitsToInt" : nullptr;
      if (!fn) throw std::logic_error("wgsl_to_glsl: bitcast<" + templ + ">");
      out += std::string(fn) + "(" + joined() + ")";
    } else if (name == "firstLeadingBit") {
      out += "uint(findMSB(" + joined() + "))";
    } else if (name == "countLeadingZeros") {
      out += "(31u - uint(findMSB(" + joined() + ")))";
    } else if (name == "round") {
      out += "roundEven(" + joined() + ")";
    } else if (name == "array") {
      std::smatch m;
      if (!std::regex_match(templ, m, std::regex("(\\w+),\\s*(\\d+)"))) throw std::logic_error("wgsl_to_glsl: array<" + templ + ">");
      out += glsl_type(m[1]) + "[" + m[2].str() + "](" + joined() + ")";
    } else if (name == "f32" || name == "i32" || name == "u32" || name == "vec2") {
      out += glsl_type(templ.empty() ? name : name + "<" + templ + ">") + "(" + joined() + ")";
    } else {
      out += name + "(" + joined() + ")";
    }
    i = end;
  }
  return out;
}

}  // namespace

std::string wgsl_to_glsl(const std::string& wgsl) {
  std::string s = wgsl;
  // Function headers: fn name(a: T, ...) -> R {
  std::regex header("fn (\\w+)\\(([^)]*)\\)(?: -> ([\\w<>]+))? \\{");
  std::string out;
  auto begin = std::sregex_iterator(s.begin(), s.end(), header);
  size_t last = 0;
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    out += s.substr(last, m.position() - last);
    std::string params;
    std::string list = m[2];
    if (!list.empty()) {
      std::smatch p;
      std::string rest = list;
      std::regex param("\\s*(\\w+): ([\\w<>]+)\\s*(,|$)");
      while (std::regex_search(rest, p, param)) {
        params += (params.empty() ? "" : ", ") + glsl_type(p[2]) + " " + p[1].str();
        rest = p.suffix();
      }
    }
    out += (m[3].matched ? glsl_type(m[3]) : std::string("void")) + " " + m[1].str() + "(" + params + ") {";
    last = m.position() + m.length();
  }
  out += s.substr(last);
  // Declarations: `let x: T = `, `var x: T = `, `var x: T;`, tables.
  out = std::regex_replace(out, std::regex("\\bvar (\\w+): array<(\\w+), (\\d+)> ="), "$2 $1[$3] =");
  std::string typed;
  std::regex decl("\\b(?:let|var) (\\w+): ([\\w<>]+)( =|;)");
  last = 0;
  for (auto it = std::sregex_iterator(out.begin(), out.end(), decl); it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    typed += out.substr(last, m.position() - last) + glsl_type(m[2]) + " " + m[1].str() + m[3].str();
    last = m.position() + m.length();
  }
  typed += out.substr(last);
  return rewrite(typed);
}

}  // namespace zyntax::codegen
