#include "codegen/wgsl/wgsl_description.hpp"

#include <cstdio>
#include <sstream>

namespace zyntax::codegen {

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
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
    o << (i ? ", " : "") << "{\"source\": \"" << (u.source == WgslUniform::Source::Dim ? "dim" : "scalar") << "\", \"index\": " << u.index
      << ", \"as\": \"" << dtype_name(u.as) << "\", \"offset\": " << u.offset << "}";
  }
  o << "], \"sites\": [";
  for (size_t i = 0; i < w.sites.size(); ++i) o << (i ? ", " : "") << json_string(w.sites[i].what);
  o << "], \"wgsl\": " << json_string(w.source) << "}";
  return o.str();
}

}  // namespace zyntax::codegen
