#include "codegen/shader/shader_helpers.hpp"

#include <map>
#include <stdexcept>

namespace zyntax::codegen {

std::string write_helpers(const std::vector<ShaderHelper>& table, const std::set<std::string>& names, const std::string& library) {
  std::map<std::string, const ShaderHelper*> by_name;
  for (const ShaderHelper& h : table) by_name[h.name] = &h;
  std::set<std::string> wanted;
  std::function<void(const std::string&)> want = [&](const std::string& n) {
    auto it = by_name.find(n);
    if (it == by_name.end()) throw std::logic_error(library + ": no helper " + n);
    if (!wanted.insert(n).second) return;
    for (const char* c : it->second->calls) want(c);
  };
  for (const std::string& n : names) want(n);
  std::string out;
  for (const ShaderHelper& h : table)
    if (wanted.count(h.name)) out += h.source();
  return out;
}

long double factorial(int n) {
  long double f = 1;
  for (int i = 2; i <= n; ++i) f *= i;
  return f;
}

std::vector<long double> series(int terms, const std::function<long double(int)>& c) {
  std::vector<long double> v;
  for (int n = 0; n < terms; ++n) v.push_back(c(n));
  return v;
}

}  // namespace zyntax::codegen
