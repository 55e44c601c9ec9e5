// Where host code finds its names: the scopes of the running function (or
// of the module's top level) and then the module's globals.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "driver/session.hpp"
#include "interp/value.hpp"

namespace zyntax {

struct Binding {
  Value value;
  bool is_mutable = false;
  Span decl;
  // A dimension bound by parameter types (`x: tensor[batch, seq]`): the
  // parameters and axes it is the extent of.
  std::vector<std::pair<std::string, int>> param_axes;
};

using Scope = std::unordered_map<std::string, Binding>;

struct ModuleInstance {
  LoadedModule* source = nullptr;
  Scope globals;
  bool executed = false;
};

// One activation: a function call, or a module's top level (no scopes, so
// declarations land in the module's globals).
struct Frame {
  ModuleInstance* module = nullptr;
  std::vector<Scope> scopes;
  Value return_value;

  Binding* lookup(const std::string& name) {
    for (auto it = scopes.rbegin(); it != scopes.rend(); ++it) {
      auto f = it->find(name);
      if (f != it->end()) return &f->second;
    }
    auto g = module->globals.find(name);
    return g == module->globals.end() ? nullptr : &g->second;
  }

  Scope& innermost() { return scopes.empty() ? module->globals : scopes.back(); }
};

}  // namespace zyntax
