// The system's Objective-C runtime and Metal framework, opened at run time
// (dlopen of libobjc, Foundation and Metal), so the backend builds on any
// system and, where they do not exist, says why it has no device. Every
// message goes through objc_msgSend cast to the message's C type.
#pragma once

#include <string>

#include "backends/metal/objc_runtime.hpp"

namespace zyntax::metal {

class SystemObjcRuntime final : public ObjcRuntime {
 public:
  // The process's runtime, opened once and never closed (Metal's objects
  // live as long as the process); null where it cannot be opened, and
  // why_not() says why ("Metal needs macOS: cannot open ...").
  static SystemObjcRuntime* get();
  static const std::string& why_not();

  Id get_class(const char* name) override;
  Sel selector(const char* name) override;
  Id create_system_default_device() override;
  Id copy_all_devices() override;
  void* autorelease_pool_push() override;
  void autorelease_pool_pop(void* pool) override;

  Id send_id(Id self, Sel op) override;
  Id send_id_id(Id self, Sel op, Id a) override;
  Id send_id_cstr(Id self, Sel op, const char* a) override;
  Id send_id_uint(Id self, Sel op, NSUInteger a) override;
  Id send_id_uint_uint(Id self, Sel op, NSUInteger a, NSUInteger b) override;
  Id send_id_id_err(Id self, Sel op, Id a, Id* error) override;
  Id send_id_id_id_err(Id self, Sel op, Id a, Id b, Id* error) override;
  void send_void(Id self, Sel op) override;
  void send_void_id(Id self, Sel op, Id a) override;
  void send_void_bool(Id self, Sel op, bool a) override;
  void send_void_id_uint_uint(Id self, Sel op, Id a, NSUInteger b, NSUInteger c) override;
  void send_void_ptr_uint_uint(Id self, Sel op, const void* a, NSUInteger b, NSUInteger c) override;
  void send_void_uint_uint(Id self, Sel op, NSUInteger a, NSUInteger b) override;
  void send_void_size_size(Id self, Sel op, MtlSize a, MtlSize b) override;
  NSUInteger send_uint(Id self, Sel op) override;
  bool send_bool(Id self, Sel op) override;
  bool send_bool_int(Id self, Sel op, NSInteger a) override;
  double send_double(Id self, Sel op) override;
  const char* send_cstr(Id self, Sel op) override;
  void* send_ptr(Id self, Sel op) override;
  MtlSize send_size(Id self, Sel op) override;

 private:
  SystemObjcRuntime() = default;
  struct Opened {
    SystemObjcRuntime* runtime = nullptr;
    std::string why;
  };
  static const Opened& opened();
  // Opens the libraries and resolves the entry points; null and `why` on failure.
  static SystemObjcRuntime* open(std::string* why);

  // objc_msgSend as the linker sees it: called only through a cast to the
  // message's type.
  using Untyped = void (*)();
  template <class F>
  F as(Untyped f) const {
    return reinterpret_cast<F>(f);
  }

  Id (*get_class_)(const char*) = nullptr;
  Sel (*register_name_)(const char*) = nullptr;
  void* (*pool_push_)() = nullptr;
  void (*pool_pop_)(void*) = nullptr;
  Id (*create_default_device_)() = nullptr;
  Id (*copy_all_devices_)() = nullptr;  // macOS only
  Untyped msg_send_ = nullptr;
  Untyped msg_send_large_struct_ = nullptr;  // what returns MTLSize: objc_msgSend_stret on x86-64, objc_msgSend on arm64
};

}  // namespace zyntax::metal
