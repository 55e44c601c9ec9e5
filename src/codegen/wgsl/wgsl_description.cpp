#include "codegen/wgsl/wgsl_description.hpp"

#include <cstdio>
#include <sstream>

#include "runtime/tensor.hpp"
#include "support/json_string.hpp"

namespace zyntax::codegen {

std::string base64(const void* data, size_t n) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const auto* p = static_cast<const unsigned char*>(data);
  std::string out;
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = p[i] << 16 | (i + 1 < n ? p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
    out += k[v >> 18 & 63];
    out += k[v >> 12 & 63];
    out += i + 1 < n ? k[v >> 6 & 63] : '=';
    out += i + 2 < n ? k[v & 63] : '=';
  }
  return out;
}

std::string wgsl_kernel_json(const cir::Kernel& k, const WgslKernel& w) {
  std::ostringstream o;
  o << "{\"name\": " << json_string(k.name) << ", \"workgroupSize\": " << w.workgroup_size << ", \"params\": [";
  for (size_t i = 0; i < k.params.size(); ++i) {
    const cir::Param& p = k.params[i];
    const char* role = p.role == cir::ParamRole::Input ? "input" : p.role == cir::ParamRole::Output ? "output" : "scalar";
    o << (i ? ", " : "") << "{\"name\": " << json_string(p.name) << ", \"role\": \"" << role << "\", \"dtype\": \"" << dtype_name(p.type.dtype) << "\"}";
  }
  o << "], \"dims\": [";
  for (size_t i = 0; i < k.dims.size(); ++i) o << (i ? ", " : "") << json_string(k.dims[i].name);
  o << "], \"statusBinding\": " << w.status_binding << ", \"uniformBinding\": " << w.uniform_binding << ", \"uniformBytes\": " << w.uniform_bytes
    << ", \"uniforms\": [";
  for (size_t i = 0; i < w.uniforms.size(); ++i) {
    const WgslUniform& u = w.uniforms[i];
    const char* source = u.source == WgslUniform::Source::Dim ? "dim" : u.source == WgslUniform::Source::Host ? "host" : "scalar";
    o << (i ? ", " : "") << "{\"source\": \"" << source << "\", \"index\": " << u.index << ", \"as\": \"" << dtype_name(u.as)
      << "\", \"offset\": " << u.offset;
    if (u.source == WgslUniform::Source::Host) o << ", \"expr\": " << w.host_expressions[u.index];
    o << "}";
  }
  o << "], \"sites\": [";
  for (size_t i = 0; i < w.sites.size(); ++i) o << (i ? ", " : "") << json_string(w.sites[i].what);
  o << "], \"reduce\": ";
  if (!w.reduce) {
    o << "null";
  } else {
    o << "{\"op\": " << json_string(reduce_op_name(k.reduce_op)) << ", \"arg\": " << (w.arg ? "true" : "false");
    if (w.arg) {
      o << ", \"bestDtype\": \"" << dtype_name(w.best_dtype) << "\", \"bestBinding\": " << w.best_binding << ", \"hasBinding\": " << w.has_binding;
    } else {
      Tensor one = Tensor::full(k.output().type.dtype, {1}, w.identity);
      o << ", \"identity\": \"" << base64(one.data(), one.nbytes()) << "\"";
    }
    o << "}";
  }
  o << ", \"wgsl\": " << json_string(w.source) << "}";
  return o.str();
}

}  // namespace zyntax::codegen
