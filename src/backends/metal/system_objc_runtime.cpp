#include "backends/metal/system_objc_runtime.hpp"

#include <dlfcn.h>

namespace zyntax::metal {

namespace {

constexpr const char* kObjc = "/usr/lib/libobjc.A.dylib";
constexpr const char* kFoundation = "/System/Library/Frameworks/Foundation.framework/Foundation";
constexpr const char* kMetal = "/System/Library/Frameworks/Metal.framework/Metal";
// A process that is no application gets no default Metal device unless
// Core Graphics is loaded.
constexpr const char* kCoreGraphics = "/System/Library/Frameworks/CoreGraphics.framework/CoreGraphics";

// MTLSize is returned in memory: on x86-64 that takes objc_msgSend_stret,
// while arm64's objc_msgSend passes the address through itself.
#if defined(__x86_64__)
constexpr const char* kMsgSendLargeStruct = "objc_msgSend_stret";
#else
constexpr const char* kMsgSendLargeStruct = "objc_msgSend";
#endif

// "cannot open PATH: why", where glibc's message names the path again.
std::string dl_error(const char* path) {
  const char* e = dlerror();
  std::string why = e ? e : "no reason given";
  std::string named = std::string(path) + ": ";
  if (why.rfind(named, 0) == 0) why.erase(0, named.size());
  return "cannot open " + named + why;
}

}  // namespace

SystemObjcRuntime* SystemObjcRuntime::open(std::string* why) {
  // Never closed: classes and objects of these libraries live as long as the process.
  void* objc = dlopen(kObjc, RTLD_NOW | RTLD_LOCAL);
  if (!objc) {
    *why = "Metal needs macOS: " + dl_error(kObjc);
    return nullptr;
  }
  // Foundation registers NSString; Metal the device classes and its functions.
  void* foundation = dlopen(kFoundation, RTLD_NOW | RTLD_LOCAL);
  if (!foundation) {
    *why = "no Foundation framework: " + dl_error(kFoundation);
    return nullptr;
  }
  void* metal = dlopen(kMetal, RTLD_NOW | RTLD_LOCAL);
  if (!metal) {
    *why = "no Metal framework: " + dl_error(kMetal);
    return nullptr;
  }
  dlopen(kCoreGraphics, RTLD_NOW | RTLD_LOCAL);  // optional: only the default device needs it
  auto* r = new SystemObjcRuntime();
  std::string missing;
  auto resolve = [&](void* lib, const char* symbol) {
    void* f = dlsym(lib, symbol);
    if (!f) missing += (missing.empty() ? "" : ", ") + std::string(symbol);
    return f;
  };
  r->get_class_ = reinterpret_cast<Id (*)(const char*)>(resolve(objc, "objc_getClass"));
  r->register_name_ = reinterpret_cast<Sel (*)(const char*)>(resolve(objc, "sel_registerName"));
  r->pool_push_ = reinterpret_cast<void* (*)()>(resolve(objc, "objc_autoreleasePoolPush"));
  r->pool_pop_ = reinterpret_cast<void (*)(void*)>(resolve(objc, "objc_autoreleasePoolPop"));
  r->msg_send_ = reinterpret_cast<Untyped>(resolve(objc, "objc_msgSend"));
  r->msg_send_large_struct_ = reinterpret_cast<Untyped>(resolve(objc, kMsgSendLargeStruct));
  r->create_default_device_ = reinterpret_cast<Id (*)()>(resolve(metal, "MTLCreateSystemDefaultDevice"));
  r->copy_all_devices_ = reinterpret_cast<Id (*)()>(dlsym(metal, "MTLCopyAllDevices"));  // optional
  if (!missing.empty()) {
    *why = "the Objective-C runtime or Metal framework lacks " + missing;
    delete r;
    return nullptr;
  }
  return r;
}

const SystemObjcRuntime::Opened& SystemObjcRuntime::opened() {
  static const Opened o = [] {
    Opened r;
    r.runtime = open(&r.why);
    return r;
  }();
  return o;
}

SystemObjcRuntime* SystemObjcRuntime::get() { return opened().runtime; }

const std::string& SystemObjcRuntime::why_not() { return opened().why; }

Id SystemObjcRuntime::get_class(const char* name) { return get_class_(name); }
Sel SystemObjcRuntime::selector(const char* name) { return register_name_(name); }
Id SystemObjcRuntime::create_system_default_device() { return create_default_device_(); }
Id SystemObjcRuntime::copy_all_devices() { return copy_all_devices_ ? copy_all_devices_() : nullptr; }
void* SystemObjcRuntime::autorelease_pool_push() { return pool_push_(); }
void SystemObjcRuntime::autorelease_pool_pop(void* pool) { pool_pop_(pool); }

Id SystemObjcRuntime::send_id(Id self, Sel op) { return as<Id (*)(Id, Sel)>(msg_send_)(self, op); }
Id SystemObjcRuntime::send_id_id(Id self, Sel op, Id a) { return as<Id (*)(Id, Sel, Id)>(msg_send_)(self, op, a); }
Id SystemObjcRuntime::send_id_cstr(Id self, Sel op, const char* a) { return as<Id (*)(Id, Sel, const char*)>(msg_send_)(self, op, a); }
Id SystemObjcRuntime::send_id_uint(Id self, Sel op, NSUInteger a) { return as<Id (*)(Id, Sel, NSUInteger)>(msg_send_)(self, op, a); }
Id SystemObjcRuntime::send_id_uint_uint(Id self, Sel op, NSUInteger a, NSUInteger b) {
  return as<Id (*)(Id, Sel, NSUInteger, NSUInteger)>(msg_send_)(self, op, a, b);
}
Id SystemObjcRuntime::send_id_id_err(Id self, Sel op, Id a, Id* error) {
  return as<Id (*)(Id, Sel, Id, Id*)>(msg_send_)(self, op, a, error);
}
Id SystemObjcRuntime::send_id_id_id_err(Id self, Sel op, Id a, Id b, Id* error) {
  return as<Id (*)(Id, Sel, Id, Id, Id*)>(msg_send_)(self, op, a, b, error);
}
void SystemObjcRuntime::send_void(Id self, Sel op) { as<void (*)(Id, Sel)>(msg_send_)(self, op); }
void SystemObjcRuntime::send_void_id(Id self, Sel op, Id a) { as<void (*)(Id, Sel, Id)>(msg_send_)(self, op, a); }
void SystemObjcRuntime::send_void_bool(Id self, Sel op, bool a) { as<void (*)(Id, Sel, bool)>(msg_send_)(self, op, a); }
void SystemObjcRuntime::send_void_id_uint_uint(Id self, Sel op, Id a, NSUInteger b, NSUInteger c) {
  as<void (*)(Id, Sel, Id, NSUInteger, NSUInteger)>(msg_send_)(self, op, a, b, c);
}
void SystemObjcRuntime::send_void_ptr_uint_uint(Id self, Sel op, const void* a, NSUInteger b, NSUInteger c) {
  as<void (*)(Id, Sel, const void*, NSUInteger, NSUInteger)>(msg_send_)(self, op, a, b, c);
}
void SystemObjcRuntime::send_void_uint_uint(Id self, Sel op, NSUInteger a, NSUInteger b) {
  as<void (*)(Id, Sel, NSUInteger, NSUInteger)>(msg_send_)(self, op, a, b);
}
void SystemObjcRuntime::send_void_size_size(Id self, Sel op, MtlSize a, MtlSize b) {
  as<void (*)(Id, Sel, MtlSize, MtlSize)>(msg_send_)(self, op, a, b);
}
NSUInteger SystemObjcRuntime::send_uint(Id self, Sel op) { return as<NSUInteger (*)(Id, Sel)>(msg_send_)(self, op); }
bool SystemObjcRuntime::send_bool(Id self, Sel op) { return as<bool (*)(Id, Sel)>(msg_send_)(self, op); }
bool SystemObjcRuntime::send_bool_int(Id self, Sel op, NSInteger a) { return as<bool (*)(Id, Sel, NSInteger)>(msg_send_)(self, op, a); }
double SystemObjcRuntime::send_double(Id self, Sel op) { return as<double (*)(Id, Sel)>(msg_send_)(self, op); }
const char* SystemObjcRuntime::send_cstr(Id self, Sel op) { return as<const char* (*)(Id, Sel)>(msg_send_)(self, op); }
void* SystemObjcRuntime::send_ptr(Id self, Sel op) { return as<void* (*)(Id, Sel)>(msg_send_)(self, op); }
MtlSize SystemObjcRuntime::send_size(Id self, Sel op) {
  if (!self) return MtlSize{0, 0, 0};  // objc_msgSend_stret leaves a nil receiver's result unwritten
  return as<MtlSize (*)(Id, Sel)>(msg_send_large_struct_)(self, op);
}

}  // namespace zyntax::metal
