#include "codegen/wgsl/wgsl_module.hpp"

#include <cctype>
#include <set>
#include <sstream>
#include <stdexcept>

#include "cir/reads.hpp"
#include "codegen/wgsl/wgsl_description.hpp"

namespace zyntax::codegen {

namespace {

// A size expression as JavaScript over `d` (the sizes by name); nothing
// where it is not integer arithmetic of sizes and constants.
std::optional<std::string> js_size(const cir::Expr& e) {
  if (auto i = e.as<cir::IntImm>()) return std::to_string(i->value);
  if (auto v = e.as<cir::Var>()) return "d[" + json_string(v->name) + "]";
  if (auto b = e.as<cir::Binary>()) {
    std::optional<std::string> x = js_size(b->a), y = js_size(b->b);
    if (!x || !y) return std::nullopt;
    switch (b->op) {
      case BinaryOp::Add: return "(" + *x + " + " + *y + ")";
      case BinaryOp::Sub: return "(" + *x + " - " + *y + ")";
      case BinaryOp::Mul: return "(" + *x + " * " + *y + ")";
      case BinaryOp::Div: return "Math.trunc(" + *x + " / " + *y + ")";
      case BinaryOp::Mod: return "(" + *x + " % " + *y + ")";
      case BinaryOp::Min: return "Math.min(" + *x + ", " + *y + ")";
      case BinaryOp::Max: return "Math.max(" + *x + ", " + *y + ")";
      default: return std::nullopt;
    }
  }
  return std::nullopt;
}

// A JS identifier for an exported kernel (names may hold '.').
std::string js_ident(const std::string& name) {
  std::string s;
  for (char c : name) s += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "k_" + s;
  return s;
}

// Inputs the kernel reads neither element nor size of (a block may name an
// input it does not use): they may have any shape.
std::set<std::string> unread_inputs(const cir::Kernel& k) {
  std::set<std::string> read;
  for (const cir::Stmt& st : k.body)
    for (const std::string& n : cir::reads(st)) read.insert(n);
  std::set<std::string> unread;
  for (const cir::Param& p : k.params)
    if (p.role == cir::ParamRole::Input && !read.count(p.name)) unread.insert(p.name);
  for (const cir::DimParam& dp : k.dims)
    if (dp.source == cir::DimSource::Input && read.count(dp.name)) unread.erase(dp.input);
  return unread;
}

}  // namespace

std::optional<std::string> js_shape_problem(const cir::Kernel& k) {
  for (const cir::Param& p : k.params)
    for (const cir::Expr& e : p.type.shape)
      if (!js_size(e)) return "the shape of " + p.name + " is not integer arithmetic of sizes";
  return std::nullopt;
}

std::string wgsl_js_module(const std::vector<WgslModuleKernel>& kernels, const std::string& program, const std::string& runtime_file) {
  std::ostringstream m;
  m << "// " << program << " for WebGPU (zyntax compile --backend webgpu --emit js).\n"
    << "// Each kernel: await NAME(device, { param: tensor | number }) -> { data, shape };\n"
    << "// a tensor is a typed array, or { data, shape } with more than one axis.\n"
    << "import { launch } from './" << runtime_file << "';\n\n";
  for (const WgslModuleKernel& mk : kernels) {
    const cir::Kernel& k = mk.kernel;
    if (std::optional<std::string> why = js_shape_problem(k)) throw std::invalid_argument("kernel " + mk.name + ": " + *why);
    std::string id = js_ident(mk.name);
    std::set<std::string> unread = unread_inputs(k);
    m << "const " << id << "_plan = {\n  kernel: " << wgsl_kernel_json(k, mk.wgsl)
      << ",\n  // where each size comes from: an input's axis (of any shape where `unread`), or an argument\n  sizes: [";
    for (size_t i = 0; i < k.dims.size(); ++i) {
      const cir::DimParam& dp = k.dims[i];
      m << (i ? ", " : "") << "{ name: " << json_string(dp.name);
      if (dp.source == cir::DimSource::Input) m << ", input: " << json_string(dp.input) << ", axis: " << dp.axis << (unread.count(dp.input) ? ", unread: true" : "");
      m << " }";
    }
    m << "],\n  // each tensor param's shape, from the sizes (null: any shape)\n  shapes: [";
    bool first = true;
    for (const cir::Param& p : k.params) {
      if (p.role == cir::ParamRole::Scalar) continue;
      m << (first ? "" : ", ");
      first = false;
      if (unread.count(p.name)) {
        m << "null";
        continue;
      }
      m << "(d) => [";
      for (size_t a = 0; a < p.type.shape.size(); ++a) m << (a ? ", " : "") << *js_size(p.type.shape[a]);
      m << "]";
    }
    m << "],\n};\n"
      << "export async function " << id << "(device, args = {}) {\n  return launch(device, " << id << "_plan, args);\n}\n\n";
  }
  m << "export const kernels = {";
  for (size_t i = 0; i < kernels.size(); ++i) m << (i ? ", " : "") << json_string(kernels[i].name) << ": " << js_ident(kernels[i].name) << "_plan";
  m << "};\n";
  return m.str();
}

}  // namespace zyntax::codegen
