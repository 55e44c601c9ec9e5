#include "backends/metal/objc_runtime.hpp"

namespace zyntax::metal {

Id ns_string(ObjcRuntime& runtime, const std::string& text) {
  return runtime.send_id_cstr(runtime.get_class("NSString"), runtime.selector("stringWithUTF8String:"), text.c_str());
}

std::string string_of(ObjcRuntime& runtime, Id ns_string) {
  if (!ns_string) return "";
  const char* text = runtime.send_cstr(ns_string, runtime.selector("UTF8String"));
  return text ? text : "";
}

std::string error_text(ObjcRuntime& runtime, Id ns_error, const std::string& otherwise) {
  if (!ns_error) return otherwise;
  std::string text = string_of(runtime, runtime.send_id(ns_error, runtime.selector("localizedDescription")));
  return text.empty() ? otherwise : text;
}

}  // namespace zyntax::metal
