#include "codegen/shader/wgsl_to_c_like.hpp"

#include <cctype>
#include <regex>
#include <stdexcept>
#include <vector>

namespace zyntax::codegen {
namespace {

enum class Target { Glsl, Msl };

std::string c_type(const std::string& t, Target to) {
  if (t == "f32") return "float";
  if (t == "i32") return "int";
  if (t == "u32") return "uint";
  if (t == "bool") return "bool";
  bool msl = to == Target::Msl;
  if (t == "vec2<f32>") return msl ? "float2" : "vec2";
  if (t == "vec2<i32>") return msl ? "int2" : "ivec2";
  if (t == "vec2<u32>") return msl ? "uint2" : "uvec2";
  throw std::logic_error("wgsl translation: no C-like type for '" + t + "'");
}

bool is_word(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The index just past the bracket that closes the one at `open`.
size_t closing(const std::string& s, size_t open, char o, char c) {
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    if (s[i] == o) ++depth;
    if (s[i] == c && --depth == 0) return i + 1;
  }
  throw std::logic_error("wgsl translation: unbalanced '" + std::string(1, o) + "' in: " + s.substr(open, 60));
}

std::vector<std::string> split_arguments(const std::string& inside) {
  std::vector<std::string> args;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < inside.size(); ++i) {
    char c = inside[i];
    if (c == '(' || (c == '<' && i > 0 && is_word(inside[i - 1]) && depth >= 0)) ++depth;
    if (c == ')' || (c == '>' && depth > 0 && i > 0 && inside[i - 1] != '-' && inside[i - 1] != '>' && inside[i - 1] != ' ')) --depth;
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
std::string rewrite(const std::string& s, Target to) {
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
        out += c_type(templ.empty() ? name : name + "<" + templ + ">", to);
      else
        out += name;
      i = j;
      continue;
    }
    size_t end = closing(s, j, '(', ')');
    std::vector<std::string> args = split_arguments(s.substr(j + 1, end - j - 2));
    for (std::string& a : args) a = rewrite(a, to);
    auto joined = [&] {
      std::string r;
      for (size_t k = 0; k < args.size(); ++k) r += (k ? ", " : "") + args[k];
      return r;
    };
    bool msl = to == Target::Msl;
    if (name == "select") {
      if (args.size() != 3) throw std::logic_error("wgsl translation: select takes 3 arguments");
      out += "((" + args[2] + ") ? (" + args[1] + ") : (" + args[0] + "))";
    } else if (name == "bitcast") {
      if (templ != "f32" && templ != "u32" && templ != "i32") throw std::logic_error("wgsl translation: bitcast<" + templ + ">");
      if (msl) out += "as_type<" + c_type(templ, to) + ">(" + joined() + ")";
      else out += std::string(templ == "f32" ? "uintBitsToFloat" : templ == "u32" ? "floatBitsToUint" : "floatBitsToInt") + "(" + joined() + ")";
    } else if (name == "firstLeadingBit") {
      out += msl ? "uint(31 - int(clz(" + joined() + ")))" : "uint(findMSB(" + joined() + "))";
    } else if (name == "countLeadingZeros") {
      out += msl ? "uint(clz(" + joined() + "))" : "(31u - uint(findMSB(" + joined() + ")))";
    } else if (name == "round") {
      out += std::string(msl ? "rint(" : "roundEven(") + joined() + ")";
    } else if (name == "array") {
      std::smatch m;
      if (!std::regex_match(templ, m, std::regex("(\\w+),\\s*(\\d+)"))) throw std::logic_error("wgsl translation: array<" + templ + ">");
      out += msl ? "{" + joined() + "}" : c_type(m[1], to) + "[" + m[2].str() + "](" + joined() + ")";
    } else if (name == "f32" || name == "i32" || name == "u32" || name == "vec2") {
      out += c_type(templ.empty() ? name : name + "<" + templ + ">", to) + "(" + joined() + ")";
    } else {
      out += name + "(" + joined() + ")";
    }
    i = end;
  }
  return out;
}

std::string translate(const std::string& wgsl, Target to) {
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
        params += (params.empty() ? "" : ", ") + c_type(p[2], to) + " " + p[1].str();
        rest = p.suffix();
      }
    }
    out += (m[3].matched ? c_type(m[3], to) : std::string("void")) + " " + m[1].str() + "(" + params + ") {";
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
    typed += out.substr(last, m.position() - last) + c_type(m[2], to) + " " + m[1].str() + m[3].str();
    last = m.position() + m.length();
  }
  typed += out.substr(last);
  return rewrite(typed, to);
}

}  // namespace

std::string wgsl_to_glsl(const std::string& wgsl) { return translate(wgsl, Target::Glsl); }
// MSL has no doubles: its float literals carry an `f` (a bare 1.5 is a double in C++).
std::string wgsl_to_msl(const std::string& wgsl) {
  std::string s = translate(wgsl, Target::Msl), out;
  for (size_t i = 0; i < s.size();) {
    bool starts = std::isdigit(static_cast<unsigned char>(s[i])) && (i == 0 || (!is_word(s[i - 1]) && s[i - 1] != '.'));
    if (!starts) {
      out += s[i++];
      continue;
    }
    size_t j = i;
    while (j < s.size() && (is_word(s[j]) || s[j] == '.' || ((s[j] == '+' || s[j] == '-') && (s[j - 1] == 'e' || s[j - 1] == 'E')))) ++j;
    std::string number = s.substr(i, j - i);
    bool hex = number.size() > 1 && (number[1] == 'x' || number[1] == 'X');
    bool is_float = !hex && number.find_first_of(".eE") != std::string::npos && number.back() != 'f';
    out += number + (is_float ? "f" : "");
    i = j;
  }
  return out;
}

}  // namespace zyntax::codegen
