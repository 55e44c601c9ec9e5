// The Objective-C runtime as the Metal backend uses it: classes, selectors
// and message sends, one call per shape of message (objc_msgSend takes
// whatever the method takes, so each shape is its own C function type),
// Metal's two C entry points and autorelease pools. Behind an interface so
// that the backend builds with no Apple headers, opens the real runtime at
// run time (system_objc_runtime) and runs its tests against a fake that
// records every message.
//
// Ownership follows Cocoa's rules: what `new...`, `alloc`, `copy` and the
// Create/Copy functions return is the caller's (+1) and must be released
// (Owned does); anything else is autoreleased or owned elsewhere and lives
// until the enclosing AutoreleasePool ends.
#pragma once

#include <string>
#include <utility>

namespace zyntax::metal {

// Opaque here: only the runtime behind ObjcRuntime looks inside them.
struct ObjcObject;
struct ObjcSelector;
using Id = ObjcObject*;     // id; a class is an object too
using Sel = ObjcSelector*;  // SEL
using NSUInteger = unsigned long;  // 64 bits on every Mac with Metal
using NSInteger = long;

// MTLSize: three NSUIntegers, passed and returned by value.
struct MtlSize {
  NSUInteger width = 1, height = 1, depth = 1;
};

class ObjcRuntime {
 public:
  virtual ~ObjcRuntime() = default;

  // objc_getClass, sel_registerName.
  virtual Id get_class(const char* name) = 0;
  virtual Sel selector(const char* name) = 0;

  // MTLCreateSystemDefaultDevice (+1; null where there is no GPU) and
  // MTLCopyAllDevices (an NSArray, +1; null where the system lacks it).
  virtual Id create_system_default_device() = 0;
  virtual Id copy_all_devices() = 0;

  // objc_autoreleasePoolPush, objc_autoreleasePoolPop.
  virtual void* autorelease_pool_push() = 0;
  virtual void autorelease_pool_pop(void* pool) = 0;

  // Message sends, named by what the method returns and takes. A message to
  // nil does nothing and answers zero, as in Objective-C.
  virtual Id send_id(Id self, Sel op) = 0;                                              // - (id)op
  virtual Id send_id_id(Id self, Sel op, Id a) = 0;                                     // - (id)op:(id)a
  virtual Id send_id_cstr(Id self, Sel op, const char* a) = 0;                          // - (id)op:(const char*)a
  virtual Id send_id_uint(Id self, Sel op, NSUInteger a) = 0;                           // - (id)op:(NSUInteger)a
  virtual Id send_id_uint_uint(Id self, Sel op, NSUInteger a, NSUInteger b) = 0;        // newBufferWithLength:options:
  virtual Id send_id_id_err(Id self, Sel op, Id a, Id* error) = 0;                      // newComputePipelineStateWithFunction:error:
  virtual Id send_id_id_id_err(Id self, Sel op, Id a, Id b, Id* error) = 0;             // newLibraryWithSource:options:error:
  virtual void send_void(Id self, Sel op) = 0;                                          // - (void)op
  virtual void send_void_id(Id self, Sel op, Id a) = 0;                                 // setComputePipelineState:
  virtual void send_void_bool(Id self, Sel op, bool a) = 0;                             // setFastMathEnabled:
  virtual void send_void_id_uint_uint(Id self, Sel op, Id a, NSUInteger b, NSUInteger c) = 0;           // setBuffer:offset:atIndex:
  virtual void send_void_ptr_uint_uint(Id self, Sel op, const void* a, NSUInteger b, NSUInteger c) = 0;  // setBytes:length:atIndex:
  virtual void send_void_uint_uint(Id self, Sel op, NSUInteger a, NSUInteger b) = 0;    // setThreadgroupMemoryLength:atIndex:
  virtual void send_void_size_size(Id self, Sel op, MtlSize a, MtlSize b) = 0;          // dispatchThreadgroups:threadsPerThreadgroup:
  virtual NSUInteger send_uint(Id self, Sel op) = 0;                                    // - (NSUInteger)op
  virtual bool send_bool(Id self, Sel op) = 0;                                          // - (BOOL)op
  virtual bool send_bool_int(Id self, Sel op, NSInteger a) = 0;                         // supportsFamily:
  virtual double send_double(Id self, Sel op) = 0;                                      // - (double)op
  virtual const char* send_cstr(Id self, Sel op) = 0;                                   // UTF8String
  virtual void* send_ptr(Id self, Sel op) = 0;                                          // contents
  virtual MtlSize send_size(Id self, Sel op) = 0;                                       // - (MTLSize)op

  // retain and release, which every object takes.
  Id retain(Id object) { return object ? send_id(object, selector("retain")) : nullptr; }
  void release(Id object) {
    if (object) send_void(object, selector("release"));
  }
};

// A +1 reference, released when this goes.
class Owned {
 public:
  Owned() = default;
  Owned(ObjcRuntime& runtime, Id object) : runtime_(&runtime), object_(object) {}
  ~Owned() { reset(); }
  Owned(Owned&& o) noexcept : runtime_(o.runtime_), object_(std::exchange(o.object_, nullptr)) {}
  Owned& operator=(Owned&& o) noexcept {
    if (this != &o) {
      reset();
      runtime_ = o.runtime_;
      object_ = std::exchange(o.object_, nullptr);
    }
    return *this;
  }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;

  Id get() const { return object_; }
  explicit operator bool() const { return object_ != nullptr; }
  void reset() {
    if (object_) runtime_->release(std::exchange(object_, nullptr));
  }

 private:
  ObjcRuntime* runtime_ = nullptr;
  Id object_ = nullptr;
};

// An autorelease pool for a scope: the backend runs on threads that have
// none of their own (the runtime's workers, @async launches).
class AutoreleasePool {
 public:
  explicit AutoreleasePool(ObjcRuntime& runtime) : runtime_(runtime), pool_(runtime.autorelease_pool_push()) {}
  ~AutoreleasePool() { runtime_.autorelease_pool_pop(pool_); }
  AutoreleasePool(const AutoreleasePool&) = delete;
  AutoreleasePool& operator=(const AutoreleasePool&) = delete;

 private:
  ObjcRuntime& runtime_;
  void* pool_;
};

// [NSString stringWithUTF8String:] (autoreleased).
Id ns_string(ObjcRuntime& runtime, const std::string& text);
// An NSString's text; "" for nil.
std::string string_of(ObjcRuntime& runtime, Id ns_string);
// An NSError's localizedDescription; `otherwise` for nil.
std::string error_text(ObjcRuntime& runtime, Id ns_error, const std::string& otherwise = "no error was given");

}  // namespace zyntax::metal
