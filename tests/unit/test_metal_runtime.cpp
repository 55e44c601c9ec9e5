// The metal backend against a fake Objective-C runtime that records every
// message and keeps every object's references (no Mac needed): what opening
// a device reads, the messages of a dispatch in order, every object made
// released again, compile and command-buffer errors in Metal's words with
// the kernel's name, and a device running kernels through the fake (the
// fake executes no MSL: the tests check the buffers, the argument struct,
// the status word and the reduce buffers' types). Away from macOS the
// system runtime says why there is no Metal, and so does the backend.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <functional>
#include <map>

#include "backends/metal/metal_device.hpp"
#include "backends/metal/system_objc_runtime.hpp"
#include "backends/registry.hpp"
#include "kernel_source.hpp"
#include "runtime/disk_cache.hpp"
#include "runtime/launch.hpp"
#include "support/diagnostics.hpp"

namespace zyntax {

void register_metal_backend(DeviceRegistry& registry);

namespace {

using metal::Id;
using metal::MtlSize;
using metal::NSInteger;
using metal::NSUInteger;
using metal::Sel;

// A GPU as the fake describes it.
struct FakeGpu {
  std::string name = "Fake Apple GPU";
  std::vector<NSInteger> families = {1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008, 1009, 2002, 5001};
  NSUInteger execution_width = 32;
  NSUInteger pipeline_threads = 1024;  // a pipeline's maxTotalThreadsPerThreadgroup
  NSUInteger threadgroup_memory = 32768;
  uint64_t working_set = uint64_t{12} << 30;
  NSUInteger max_buffer = NSUInteger{8} << 30;
};

// One dispatch of a committed command buffer, as its kernel would see it.
struct FakeDispatch {
  std::map<NSUInteger, std::vector<unsigned char>*> buffers;  // [[buffer(i)]]: the MTLBuffer's contents
  std::map<NSUInteger, std::vector<unsigned char>> bytes;     // [[buffer(i)]] by setBytes
  NSUInteger threadgroup_memory = 0;
  MtlSize groups, threads;

  std::vector<unsigned char>& buffer(NSUInteger i) { return *buffers.at(i); }
  // The status word: the last buffer, by the emitters' layout.
  NSUInteger status_index() const { return buffers.rbegin()->first; }
};

// Answers as a Mac with FakeGpus would, records every call as text
// ("MTLComputeCommandEncoder setBuffer:offset:atIndex: MTLBuffer#7 0 1"),
// counts each object's references (new..., alloc and Copy give +1; other
// objects are autoreleased into the innermost pool or owned by another),
// and notes what would crash or leak on a Mac in `problems`. For one thread.
class RecordingObjcRuntime : public metal::ObjcRuntime {
 public:
  explicit RecordingObjcRuntime(std::vector<FakeGpu> gpus = {FakeGpu{}}, bool lists_devices = true)
      : gpus_(std::move(gpus)), lists_devices_(lists_devices) {}

  std::vector<std::string> log;
  std::vector<std::string> problems;
  // Runs each dispatch of a command buffer when it is committed.
  std::function<void(FakeDispatch&)> on_run;
  // Not empty: command buffers end in error, with this NSError text.
  std::string fail_commits_with;

  // "MTLBuffer#7"; a class by its name; "nil".
  std::string name_of(Id id) const {
    if (!id) return "nil";
    const Object& o = object(id);
    return o.is_class ? o.cls : o.cls + "#" + std::to_string(o.number);
  }
  // The objects still referenced.
  std::vector<std::string> live() const {
    std::vector<std::string> out;
    for (const Object& o : objects_)
      if (!o.is_class && o.refs > 0) out.push_back(name_of(id_of(o)) + " (" + std::to_string(o.refs) + ")");
    return out;
  }
  int made() const {
    int n = 0;
    for (const Object& o : objects_) n += !o.is_class;
    return n;
  }

  Id get_class(const char* name) override {
    log.push_back(std::string("objc_getClass ") + name);
    auto it = classes_.find(name);
    if (it != classes_.end()) return it->second;
    Id c = make(name, false);
    object(c).is_class = true;
    return classes_[name] = c;
  }
  Sel selector(const char* name) override {
    for (std::string& s : selectors_)
      if (s == name) return reinterpret_cast<Sel>(&s);
    selectors_.emplace_back(name);
    return reinterpret_cast<Sel>(&selectors_.back());
  }
  Id create_system_default_device() override {
    log.push_back("MTLCreateSystemDefaultDevice");
    if (gpus_.empty()) return nullptr;
    Id d = make("MTLDevice", false);
    object(d).gpu = &gpus_[0];
    return d;
  }
  Id copy_all_devices() override {
    log.push_back("MTLCopyAllDevices");
    if (!lists_devices_) return nullptr;
    Id all = make("NSArray", false);
    for (const FakeGpu& g : gpus_) {
      Id d = make("MTLDevice", false);  // the array's reference
      object(d).gpu = &g;
      object(all).holds.push_back(d);
    }
    return all;
  }
  void* autorelease_pool_push() override {
    log.push_back("objc_autoreleasePoolPush");
    pools_.emplace_back();
    return reinterpret_cast<void*>(pools_.size());
  }
  void autorelease_pool_pop(void* pool) override {
    log.push_back("objc_autoreleasePoolPop");
    if (pools_.empty() || reinterpret_cast<void*>(pools_.size()) != pool) {
      problems.push_back("a pool popped out of order");
      return;
    }
    std::vector<Id> objects = std::move(pools_.back());
    pools_.pop_back();
    for (Id o : objects) drop(o);
  }

  Id send_id(Id self, Sel op) override {
    Object* o = receive(self, op, "");
    if (!o) return nullptr;
    std::string s = sel(op);
    if (s == "retain") {
      ++o->refs;
      return self;
    }
    if (o->is_class && s == "new" && o->cls == "MTLCompileOptions") return make(o->cls, false);
    if (o->cls == "MTLDevice" && s == "name") return string(o->gpu->name);
    if (o->cls == "MTLDevice" && s == "newCommandQueue") {
      Id q = make("MTLCommandQueue", false);
      object(q).gpu = o->gpu;
      return q;
    }
    if (o->cls == "MTLCommandQueue" && s == "commandBuffer") return make("MTLCommandBuffer", true);
    if (o->cls == "MTLCommandBuffer" && s == "computeCommandEncoder") {
      Id e = make("MTLComputeCommandEncoder", true);
      object(e).commands = self;
      o->encoder = e;
      return e;
    }
    if (o->cls == "MTLCommandBuffer" && s == "error") return o->error;
    if (o->cls == "NSError" && s == "localizedDescription") return string(o->text);
    return unexpected(self, op);
  }
  Id send_id_id(Id self, Sel op, Id a) override {
    Object* o = receive(self, op, describe(a));
    if (!o) return nullptr;
    if (o->cls == "MTLLibrary" && sel(op) == "newFunctionWithName:")
      return object(a).text == "zy_main" ? make("MTLFunction", false) : nullptr;
    return unexpected(self, op);
  }
  Id send_id_cstr(Id self, Sel op, const char* a) override {
    Object* o = receive(self, op, quoted(a));
    if (!o) return nullptr;
    if (o->is_class && o->cls == "NSString" && sel(op) == "stringWithUTF8String:") return string(a);
    return unexpected(self, op);
  }
  Id send_id_uint(Id self, Sel op, NSUInteger a) override {
    Object* o = receive(self, op, std::to_string(a));
    if (!o) return nullptr;
    if (o->cls == "NSArray" && sel(op) == "objectAtIndex:") return a < o->holds.size() ? o->holds[a] : nullptr;
    return unexpected(self, op);
  }
  Id send_id_uint_uint(Id self, Sel op, NSUInteger a, NSUInteger b) override {
    Object* o = receive(self, op, std::to_string(a) + " " + std::to_string(b));
    if (!o) return nullptr;
    if (o->cls == "MTLDevice" && sel(op) == "newBufferWithLength:options:") {
      if (a > o->gpu->max_buffer || b != 0) return nullptr;  // options 0: shared storage
      Id buffer = make("MTLBuffer", false);
      object(buffer).bytes.assign(a, 0xcd);  // never zeroed: the device must fill what it reads
      return buffer;
    }
    return unexpected(self, op);
  }
  Id send_id_id_err(Id self, Sel op, Id a, Id* error) override {
    Object* o = receive(self, op, describe(a));
    if (!o) return nullptr;
    if (o->cls == "MTLDevice" && sel(op) == "newComputePipelineStateWithFunction:error:") {
      if (error) *error = nullptr;
      Id state = make("MTLComputePipelineState", false);
      object(state).gpu = o->gpu;
      return state;
    }
    return unexpected(self, op);
  }
  Id send_id_id_id_err(Id self, Sel op, Id a, Id b, Id* error) override {
    Object* o = receive(self, op, describe(a) + " " + describe(b));
    if (!o) return nullptr;
    if (o->cls == "MTLDevice" && sel(op) == "newLibraryWithSource:options:error:") {
      if (object(a).text.find("#error") != std::string::npos) {
        Id e = make("NSError", true);
        object(e).text = "program_source:3:5: error: \"the kernel does not compile\"";
        if (error) *error = e;
        return nullptr;
      }
      return make("MTLLibrary", false);
    }
    return unexpected(self, op);
  }
  void send_void(Id self, Sel op) override {
    std::string s = sel(op);
    if (s == "release") {
      log.push_back((self ? object(self).cls : std::string("nil")) + " release");
      if (self && object(self).refs <= 0) problems.push_back("release of a freed " + name_of(self));
      else if (self) drop(self);
      return;
    }
    Object* o = receive(self, op, "");
    if (!o) return;
    if (o->cls == "MTLComputeCommandEncoder" && s == "endEncoding") {
      o->ended = true;
    } else if (o->cls == "MTLCommandBuffer" && s == "commit") {
      if (!o->encoder || !object(o->encoder).ended) problems.push_back("a command buffer committed with its encoder open");
      if (!fail_commits_with.empty()) {
        Id e = make("NSError", false);  // the command buffer's reference
        object(e).text = fail_commits_with;
        o->holds.push_back(e);
        o->error = e;
        o->status = 5;
        return;
      }
      for (FakeDispatch& d : o->dispatches)
        if (on_run) on_run(d);
      o->status = 4;
    } else if (o->cls == "MTLCommandBuffer" && s == "waitUntilCompleted") {
      if (o->status < 4) problems.push_back("waiting for a command buffer never committed");
    } else {
      unexpected(self, op);
    }
  }
  void send_void_id(Id self, Sel op, Id a) override {
    Object* o = receive(self, op, describe(a));
    if (o && !(o->cls == "MTLComputeCommandEncoder" && sel(op) == "setComputePipelineState:")) unexpected(self, op);
  }
  void send_void_bool(Id self, Sel op, bool a) override {
    Object* o = receive(self, op, a ? "YES" : "NO");
    if (o && !(o->cls == "MTLCompileOptions" && sel(op) == "setFastMathEnabled:")) unexpected(self, op);
  }
  void send_void_id_uint_uint(Id self, Sel op, Id a, NSUInteger b, NSUInteger c) override {
    Object* o = receive(self, op, describe(a) + " " + std::to_string(b) + " " + std::to_string(c));
    if (!o) return;
    if (o->cls == "MTLComputeCommandEncoder" && sel(op) == "setBuffer:offset:atIndex:") o->bound.buffers[c] = &object(a).bytes;
    else unexpected(self, op);
  }
  void send_void_ptr_uint_uint(Id self, Sel op, const void* a, NSUInteger b, NSUInteger c) override {
    std::string hex;
    for (NSUInteger i = 0; i < b; ++i) {
      static const char kDigits[] = "0123456789abcdef";
      unsigned char byte = static_cast<const unsigned char*>(a)[i];
      hex += kDigits[byte >> 4];
      hex += kDigits[byte & 15];
    }
    Object* o = receive(self, op, hex + " " + std::to_string(b) + " " + std::to_string(c));
    if (!o) return;
    if (o->cls == "MTLComputeCommandEncoder" && sel(op) == "setBytes:length:atIndex:")
      o->bound.bytes[c].assign(static_cast<const unsigned char*>(a), static_cast<const unsigned char*>(a) + b);
    else unexpected(self, op);
  }
  void send_void_uint_uint(Id self, Sel op, NSUInteger a, NSUInteger b) override {
    Object* o = receive(self, op, std::to_string(a) + " " + std::to_string(b));
    if (!o) return;
    if (o->cls == "MTLComputeCommandEncoder" && sel(op) == "setThreadgroupMemoryLength:atIndex:" && b == 0) o->bound.threadgroup_memory = a;
    else unexpected(self, op);
  }
  void send_void_size_size(Id self, Sel op, MtlSize a, MtlSize b) override {
    Object* o = receive(self, op, size_text(a) + " " + size_text(b));
    if (!o) return;
    if (o->cls == "MTLComputeCommandEncoder" && sel(op) == "dispatchThreadgroups:threadsPerThreadgroup:") {
      o->bound.groups = a;
      o->bound.threads = b;
      object(o->commands).dispatches.push_back(o->bound);
    } else {
      unexpected(self, op);
    }
  }
  NSUInteger send_uint(Id self, Sel op) override {
    Object* o = receive(self, op, "");
    if (!o) return 0;
    std::string s = sel(op);
    if (o->cls == "NSArray" && s == "count") return o->holds.size();
    if (o->cls == "MTLDevice" && s == "recommendedMaxWorkingSetSize") return o->gpu->working_set;
    if (o->cls == "MTLDevice" && s == "maxBufferLength") return o->gpu->max_buffer;
    if (o->cls == "MTLDevice" && s == "maxThreadgroupMemoryLength") return o->gpu->threadgroup_memory;
    if (o->cls == "MTLComputePipelineState" && s == "maxTotalThreadsPerThreadgroup") return o->gpu->pipeline_threads;
    if (o->cls == "MTLComputePipelineState" && s == "threadExecutionWidth") return o->gpu->execution_width;
    if (o->cls == "MTLCommandBuffer" && s == "status") return o->status;
    unexpected(self, op);
    return 0;
  }
  bool send_bool(Id self, Sel op) override {
    Object* o = receive(self, op, "");
    if (o && o->cls == "MTLDevice" && sel(op) == "hasUnifiedMemory") return true;
    if (o) unexpected(self, op);
    return false;
  }
  bool send_bool_int(Id self, Sel op, NSInteger a) override {
    Object* o = receive(self, op, std::to_string(a));
    if (o && o->cls == "MTLDevice" && sel(op) == "supportsFamily:")
      return std::find(o->gpu->families.begin(), o->gpu->families.end(), a) != o->gpu->families.end();
    if (o) unexpected(self, op);
    return false;
  }
  double send_double(Id self, Sel op) override {
    Object* o = receive(self, op, "");
    if (o && o->cls == "MTLCommandBuffer" && sel(op) == "GPUStartTime") return 1000.0;
    if (o && o->cls == "MTLCommandBuffer" && sel(op) == "GPUEndTime") return 1000.0025;
    if (o) unexpected(self, op);
    return 0;
  }
  const char* send_cstr(Id self, Sel op) override {
    Object* o = receive(self, op, "");
    if (o && o->cls == "NSString" && sel(op) == "UTF8String") return o->text.c_str();
    if (o) unexpected(self, op);
    return nullptr;
  }
  void* send_ptr(Id self, Sel op) override {
    Object* o = receive(self, op, "");
    if (o && o->cls == "MTLBuffer" && sel(op) == "contents") return o->bytes.data();
    if (o) unexpected(self, op);
    return nullptr;
  }
  MtlSize send_size(Id self, Sel op) override {
    Object* o = receive(self, op, "");
    if (o && o->cls == "MTLDevice" && sel(op) == "maxThreadsPerThreadgroup") return {1024, 1024, 1024};
    if (o) unexpected(self, op);
    return {0, 0, 0};
  }

 private:
  struct Object {
    std::string cls;
    int number = 0;
    int refs = 1;
    bool is_class = false;
    std::vector<Id> holds;  // released when this goes
    const FakeGpu* gpu = nullptr;
    std::string text;                  // NSString, NSError
    std::vector<unsigned char> bytes;  // MTLBuffer
    // MTLCommandBuffer
    Id encoder = nullptr;
    Id error = nullptr;
    NSUInteger status = 0;
    std::vector<FakeDispatch> dispatches;
    // MTLComputeCommandEncoder
    Id commands = nullptr;
    FakeDispatch bound;
    bool ended = false;
  };

  Object& object(Id id) const { return *reinterpret_cast<Object*>(id); }
  Id id_of(const Object& o) const { return reinterpret_cast<Id>(const_cast<Object*>(&o)); }
  static std::string sel(Sel op) { return *reinterpret_cast<const std::string*>(op); }

  Id make(const std::string& cls, bool autoreleased) {
    objects_.emplace_back();
    Object& o = objects_.back();
    o.cls = cls;
    o.number = static_cast<int>(objects_.size());
    Id id = id_of(o);
    if (autoreleased) {
      if (pools_.empty()) problems.push_back(name_of(id) + " autoreleased outside any pool (a leak)");
      else pools_.back().push_back(id);
    }
    return id;
  }
  Id string(const std::string& text) {
    Id s = make("NSString", true);
    object(s).text = text;
    return s;
  }
  void drop(Id id) {
    Object& o = object(id);
    if (--o.refs == 0)
      for (Id h : o.holds) drop(h);
  }
  // Records the message; the receiver where it is alive, null for nil (a message to nil answers zero).
  Object* receive(Id self, Sel op, const std::string& args) {
    log.push_back((self ? object(self).cls : std::string("nil")) + " " + sel(op) + (args.empty() ? "" : " " + args));
    if (!self) return nullptr;
    Object& o = object(self);
    if (!o.is_class && o.refs <= 0) {
      problems.push_back(sel(op) + " sent to a freed " + name_of(self));
      return nullptr;
    }
    return &o;
  }
  Id unexpected(Id self, Sel op) {
    problems.push_back(name_of(self) + " does not answer " + sel(op));
    return nullptr;
  }
  std::string describe(Id id) const {
    if (id && object(id).cls == "NSString") return quoted(object(id).text.c_str());
    return name_of(id);
  }
  static std::string quoted(const char* text) {
    std::string t = text ? text : "";
    return "\"" + (t.size() > 24 ? t.substr(0, 24) + "..." : t) + "\"";
  }
  static std::string size_text(MtlSize s) {
    return "{" + std::to_string(s.width) + ", " + std::to_string(s.height) + ", " + std::to_string(s.depth) + "}";
  }

  std::vector<FakeGpu> gpus_;
  bool lists_devices_;
  std::deque<Object> objects_;      // never shrinks: a freed object stays, to catch later messages
  std::deque<std::string> selectors_;
  std::map<std::string, Id> classes_;
  std::vector<std::vector<Id>> pools_;
};

// Nothing leaked, over-released or sent to a freed object.
void expect_clean(const RecordingObjcRuntime& fake) {
  EXPECT_TRUE(fake.live().empty()) << ::testing::PrintToString(fake.live());
  EXPECT_TRUE(fake.problems.empty()) << ::testing::PrintToString(fake.problems);
}

constexpr const char* kSource = "kernel void zy_main(device uint* out [[buffer(0)]]) {}\n";

std::unique_ptr<metal::Gpu> open_one(RecordingObjcRuntime& fake) {
  std::string why;
  std::vector<std::unique_ptr<metal::Gpu>> gpus = metal::Gpu::open_all(fake, &why);
  EXPECT_EQ(gpus.size(), 1u) << why;
  return gpus.empty() ? nullptr : std::move(gpus[0]);
}

TEST(MetalRuntime, OpeningListsTheDevicesWithTheirTargets) {
  RecordingObjcRuntime fake;
  {
    std::unique_ptr<metal::Gpu> gpu = open_one(fake);
    ASSERT_TRUE(gpu);
    EXPECT_EQ(gpu->id(), "metal:0");
    EXPECT_EQ(gpu->name(), "Fake Apple GPU");
    EXPECT_EQ(gpu->family(), "Apple9");
    EXPECT_EQ(gpu->memory_bytes(), uint64_t{12} << 30);
    EXPECT_TRUE(gpu->unified_memory());
    const GpuTarget& t = gpu->target();
    EXPECT_EQ(t.api, GpuApi::Metal);
    EXPECT_EQ(t.arch, "Fake Apple GPU");
    EXPECT_EQ(t.subgroup_size, 32);
    EXPECT_EQ(t.max_threads_per_block, 1024);
    EXPECT_EQ(t.shared_memory_max, 32768);
    EXPECT_FALSE(t.f64);
    EXPECT_EQ(t.verify(), "");
    // The devices listed, each kept, the list released; a queue; the probe kernel's pipeline.
    const std::vector<std::string>& log = fake.log;
    EXPECT_EQ(log.front(), "objc_autoreleasePoolPush");
    EXPECT_EQ(log[1], "MTLCopyAllDevices");
    EXPECT_NE(std::find(log.begin(), log.end(), "MTLDevice retain"), log.end());
    EXPECT_NE(std::find(log.begin(), log.end(), "MTLDevice newCommandQueue"), log.end());
    EXPECT_NE(std::find(log.begin(), log.end(), "MTLComputePipelineState threadExecutionWidth"), log.end());
  }
  expect_clean(fake);
}

// The SIMD width and the limits come from the device: a GPU of 64-wide
// SIMD groups, 512 threads and 16 KiB of threadgroup memory is planned so.
TEST(MetalRuntime, TheTargetFollowsTheDevice) {
  FakeGpu g;
  g.execution_width = 64;
  g.pipeline_threads = 512;
  g.threadgroup_memory = 16384;
  RecordingObjcRuntime fake({g});
  {
    std::unique_ptr<metal::Gpu> gpu = open_one(fake);
    ASSERT_TRUE(gpu);
    EXPECT_EQ(gpu->target().subgroup_size, 64);
    EXPECT_EQ(gpu->target().max_threads_per_block, 512);
    EXPECT_EQ(gpu->target().shared_memory_static, 16384);
  }
  expect_clean(fake);
}

// A GPU of no family the MSL emitter writes for is left out, and said so;
// without MTLCopyAllDevices the system's default device is taken.
TEST(MetalRuntime, DevicesOfOtherFamiliesAreLeftOut) {
  FakeGpu old;
  old.name = "Old GPU";
  old.families = {1001, 1002};
  RecordingObjcRuntime fake({FakeGpu{}, old});
  {
    std::string why;
    std::vector<std::unique_ptr<metal::Gpu>> gpus = metal::Gpu::open_all(fake, &why);
    ASSERT_EQ(gpus.size(), 1u);
    EXPECT_EQ(gpus[0]->name(), "Fake Apple GPU");
    EXPECT_NE(why.find("Old GPU: it is neither an Apple GPU of family Apple7"), std::string::npos) << why;
  }
  expect_clean(fake);

  RecordingObjcRuntime without_list({FakeGpu{}}, /*lists_devices=*/false);
  {
    std::unique_ptr<metal::Gpu> gpu = open_one(without_list);
    ASSERT_TRUE(gpu);
    EXPECT_NE(std::find(without_list.log.begin(), without_list.log.end(), "MTLCreateSystemDefaultDevice"), without_list.log.end());
  }
  expect_clean(without_list);
}

TEST(MetalRuntime, RegistersItsDevicesOrWhyThereAreNone) {
  RecordingObjcRuntime fake;
  {
    DeviceRegistry registry;
    add_metal_devices(registry, fake);
    Device* d = registry.find("metal:0");
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(d->info().type, "gpu");
    EXPECT_EQ(d->info().name, "Fake Apple GPU");
    EXPECT_NE(d->info().backend.find("Metal"), std::string::npos) << d->info().backend;
    ASSERT_NE(d->gpu_target(), nullptr);
    EXPECT_EQ(d->gpu_target()->api, GpuApi::Metal);
  }
  expect_clean(fake);

  RecordingObjcRuntime none(std::vector<FakeGpu>{});
  DeviceRegistry registry;
  add_metal_devices(registry, none);
  EXPECT_EQ(registry.find("metal:0"), nullptr);
  EXPECT_EQ(registry.unavailable_reason("metal:0"), "no Metal GPU: Metal lists no device");
  expect_clean(none);
}

// Compiling: IEEE arithmetic asked for, the library, its zy_main, the pipeline.
TEST(MetalRuntime, PipelinesCompileWithoutFastMath) {
  RecordingObjcRuntime fake;
  {
    std::unique_ptr<metal::Gpu> gpu = open_one(fake);
    ASSERT_TRUE(gpu);
    fake.log.clear();
    metal::Gpu::Pipeline pipeline(*gpu, kSource, "zy_main", "scale");
    EXPECT_EQ(pipeline.max_threads(), 1024u);
    EXPECT_EQ(pipeline.execution_width(), 32u);
    // Each call by its receiver and selector (the sources' text aside).
    std::vector<std::string> calls;
    for (const std::string& line : fake.log) calls.push_back(line.substr(0, line.find(' ', line.find(' ') + 1)));
    std::vector<std::string> want_calls = {"objc_autoreleasePoolPush",
                                           "objc_getClass MTLCompileOptions",
                                           "MTLCompileOptions new",
                                           "MTLCompileOptions setFastMathEnabled:",
                                           "objc_getClass NSString",
                                           "NSString stringWithUTF8String:",
                                           "MTLDevice newLibraryWithSource:options:error:",
                                           "objc_getClass NSString",
                                           "NSString stringWithUTF8String:",
                                           "MTLLibrary newFunctionWithName:",
                                           "MTLDevice newComputePipelineStateWithFunction:error:",
                                           "MTLComputePipelineState maxTotalThreadsPerThreadgroup",
                                           "MTLComputePipelineState threadExecutionWidth",
                                           "MTLFunction release",
                                           "MTLLibrary release",
                                           "MTLCompileOptions release",
                                           "objc_autoreleasePoolPop"};
    EXPECT_EQ(calls, want_calls);
    EXPECT_EQ(fake.log[3], "MTLCompileOptions setFastMathEnabled: NO");
  }
  expect_clean(fake);
}

// A dispatch sends exactly these messages, in this order, and makes nothing
// it does not release (its command buffer and encoder are autoreleased).
TEST(MetalRuntime, ADispatchSendsItsMessagesInOrder) {
  RecordingObjcRuntime fake;
  {
    std::unique_ptr<metal::Gpu> gpu = open_one(fake);
    ASSERT_TRUE(gpu);
    metal::Gpu::Pipeline pipeline(*gpu, kSource, "zy_main", "scale");
    metal::Gpu::Buffer a(*gpu, 40), b(*gpu, 40), status(*gpu, 4);
    EXPECT_EQ(a.bytes(), 40u);
    EXPECT_EQ(status.bytes(), 4u);
    std::vector<uint8_t> arguments = {0x2a, 0, 0, 0, 0xcd, 0xcc, 0x0c, 0x40};
    int made = fake.made();
    fake.log.clear();
    gpu->dispatch(pipeline, {&a, &b, &status}, arguments, 3, 1024, 7, 2, 256);
    std::vector<std::string> want = {
        "objc_autoreleasePoolPush",
        "MTLCommandQueue commandBuffer",
        "MTLCommandBuffer computeCommandEncoder",
        "MTLComputeCommandEncoder setComputePipelineState: " + fake.name_of(pipeline.handle()),
        "MTLComputeCommandEncoder setBuffer:offset:atIndex: " + fake.name_of(a.handle()) + " 0 0",
        "MTLComputeCommandEncoder setBuffer:offset:atIndex: " + fake.name_of(b.handle()) + " 0 1",
        "MTLComputeCommandEncoder setBuffer:offset:atIndex: " + fake.name_of(status.handle()) + " 0 2",
        "MTLComputeCommandEncoder setBytes:length:atIndex: 2a000000cdcc0c40 8 3",
        "MTLComputeCommandEncoder setThreadgroupMemoryLength:atIndex: 1024 0",
        "MTLComputeCommandEncoder dispatchThreadgroups:threadsPerThreadgroup: {7, 2, 1} {256, 1, 1}",
        "MTLComputeCommandEncoder endEncoding",
        "MTLCommandBuffer commit",
        "MTLCommandBuffer waitUntilCompleted",
        "MTLCommandBuffer status",
        "MTLCommandBuffer GPUStartTime",
        "MTLCommandBuffer GPUEndTime",
        "objc_autoreleasePoolPop",
    };
    EXPECT_EQ(fake.log, want);
    EXPECT_EQ(fake.made(), made + 2);  // the command buffer and its encoder, both gone with the pool
    EXPECT_NEAR(gpu->last_dispatch_milliseconds(), 2.5, 1e-6);

    // Without arguments and threadgroup memory, neither is set.
    fake.log.clear();
    gpu->dispatch(pipeline, {&a}, {}, -1, 0, 1, 1, 32);
    for (const std::string& line : fake.log) {
      EXPECT_EQ(line.find("setBytes"), std::string::npos) << line;
      EXPECT_EQ(line.find("setThreadgroupMemoryLength"), std::string::npos) << line;
    }
    // More threads than the pipeline takes are the caller's mistake.
    EXPECT_THROW(gpu->dispatch(pipeline, {&a}, {}, -1, 0, 1, 1, 2048), std::logic_error);
  }
  expect_clean(fake);
}

TEST(MetalRuntime, ACompileErrorNamesTheKernelAndGivesMetalsLog) {
  RecordingObjcRuntime fake;
  {
    std::unique_ptr<metal::Gpu> gpu = open_one(fake);
    ASSERT_TRUE(gpu);
    std::string error;
    try {
      metal::Gpu::Pipeline pipeline(*gpu, "#error the kernel does not compile\n", "zy_main", "softmax_rows");
    } catch (const metal::MetalError& e) {
      error = e.what();
    }
    EXPECT_NE(error.find("kernel softmax_rows"), std::string::npos) << error;
    EXPECT_NE(error.find("program_source:3:5: error:"), std::string::npos) << error;
    // A library without the entry point.
    error.clear();
    try {
      metal::Gpu::Pipeline pipeline(*gpu, kSource, "other", "softmax_rows");
    } catch (const metal::MetalError& e) {
      error = e.what();
    }
    EXPECT_NE(error.find("function other"), std::string::npos) << error;
  }
  expect_clean(fake);
}

TEST(MetalRuntime, ACommandBufferErrorGivesTheNSErrorsText) {
  RecordingObjcRuntime fake;
  {
    std::unique_ptr<metal::Gpu> gpu = open_one(fake);
    ASSERT_TRUE(gpu);
    metal::Gpu::Pipeline pipeline(*gpu, kSource, "zy_main", "gather_rows");
    metal::Gpu::Buffer a(*gpu, 16);
    gpu->dispatch(pipeline, {&a}, {}, -1, 0, 1, 1, 32);
    fake.fail_commits_with = "Execution of the command buffer was aborted due to an error during execution. (GPU Address Fault)";
    std::string error;
    try {
      gpu->dispatch(pipeline, {&a}, {}, -1, 0, 1, 1, 32);
    } catch (const metal::MetalError& e) {
      error = e.what();
    }
    EXPECT_NE(error.find("kernel gather_rows on metal:0"), std::string::npos) << error;
    EXPECT_NE(error.find(fake.fail_commits_with), std::string::npos) << error;
    EXPECT_EQ(gpu->last_dispatch_milliseconds(), -1);
  }
  expect_clean(fake);
}

// Away from macOS there is no Objective-C runtime to open, and the backend
// says so where a device is asked for.
TEST(MetalRuntime, TheSystemRuntimeSaysWhyThereIsNoMetal) {
#if defined(__APPLE__)
  GTEST_SKIP() << "this system may have Metal";
#else
  EXPECT_EQ(metal::SystemObjcRuntime::get(), nullptr);
  const std::string& why = metal::SystemObjcRuntime::why_not();
  EXPECT_NE(why.find("Metal needs macOS"), std::string::npos) << why;
  EXPECT_NE(why.find("/usr/lib/libobjc.A.dylib"), std::string::npos) << why;
  DeviceRegistry registry;
  register_metal_backend(registry);
  EXPECT_EQ(registry.find("metal:0"), nullptr);
  EXPECT_NE(registry.unavailable_reason("metal:0").find("macOS"), std::string::npos) << registry.unavailable_reason("metal:0");
  EXPECT_NE(registry.unavailable_reason("gpu").find("macOS"), std::string::npos);
#endif
}

// A Metal device on the fake, with the process's devices to fall back on.
std::unique_ptr<Device> fake_device(RecordingObjcRuntime& fake) {
  std::unique_ptr<Device> d = make_metal_device(open_one(fake));
  device_registry().lend_fallbacks(*d);
  return d;
}

std::vector<float> floats(const std::vector<unsigned char>& bytes, size_t n) {
  std::vector<float> v(n);
  std::memcpy(v.data(), bytes.data(), n * sizeof(float));
  return v;
}

// A kernel's run: its input in [[buffer(0)]], the output read back from
// [[buffer(1)]] (here what the fake wrote there), its scalar in the
// argument struct after the status word.
TEST(MetalDevice, RunsAKernelThroughItsBuffers) {
  RecordingObjcRuntime fake;
  {
    std::unique_ptr<Device> d = fake_device(fake);
    const char* src = "def f(x: tensor[n, f32], a: f32) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = x[i] * a\n }\n}";
    CompiledCompute compiled(testing::kernel_of(src));
    Tensor x = Tensor::zeros(DType::F32, {5});
    for (int i = 0; i < 5; ++i) x.data_as<float>()[i] = static_cast<float>(i + 1);
    int runs = 0;
    fake.on_run = [&](FakeDispatch& run) {
      ++runs;
      EXPECT_EQ(floats(run.buffer(0), 5), (std::vector<float>{1, 2, 3, 4, 5}));
      NSUInteger status = run.status_index();
      EXPECT_EQ(status, 2u);  // x, out, status
      uint32_t word = 0;
      std::memcpy(&word, run.buffer(status).data(), 4);
      EXPECT_EQ(word, 0u);  // starts with no failure
      ASSERT_EQ(run.bytes.size(), 1u);
      EXPECT_EQ(run.bytes.begin()->first, status + 1);
      const std::vector<unsigned char>& args = run.bytes.begin()->second;
      float a = 2.5f;
      EXPECT_NE(std::search(args.begin(), args.end(), reinterpret_cast<unsigned char*>(&a), reinterpret_cast<unsigned char*>(&a) + 4),
                args.end());
      float seven = 7;
      for (int i = 0; i < 5; ++i) std::memcpy(run.buffer(1).data() + 4 * i, &seven, 4);
      EXPECT_GE(run.threads.width, 1u);
    };
    Tensor got = compiled.launch(*d, {x}, {}, {{"a", Scalar::of_float(2.5, DType::F32)}});
    EXPECT_EQ(runs, 1);
    ASSERT_EQ(got.numel(), 5);
    for (int i = 0; i < 5; ++i) EXPECT_EQ(got.get(i).as_double(), 7.0);
    EXPECT_NEAR(d->last_kernel_milliseconds(), 2.5, 1e-6);

    // The MSL it ran, and the disk cache holding it.
    std::string why;
    std::string msl = metal_msl_of(*d, compiled.specialize({{"n", 5}})->kernel, &why);
    EXPECT_FALSE(msl.empty()) << why;
    if (DiskCache::global().enabled()) {
      EXPECT_TRUE(DiskCache::global().load(std::string("msl\nzyntax ") + ZYNTAX_VERSION + "\n" + msl));
    }

    // A second run takes the pipeline and the buffers made for the first.
    int made = fake.made();
    compiled.launch(*d, {x}, {}, {{"a", Scalar::of_float(2.5, DType::F32)}});
    EXPECT_EQ(runs, 2);
    EXPECT_EQ(fake.made(), made + 2);  // a command buffer and its encoder
  }
  expect_clean(fake);
}

// A failed check recorded in the status word: the kernel runs again on the
// reference executor, which reports it in the source's words.
TEST(MetalDevice, AFailedCheckIsTheReferencesError) {
  RecordingObjcRuntime fake;
  {
    std::unique_ptr<Device> d = fake_device(fake);
    const char* src = "def f(x: tensor[n, f32]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = x[i + 1]\n }\n}";
    CompiledCompute compiled(testing::kernel_of(src));
    fake.on_run = [&](FakeDispatch& run) {
      uint32_t failed = 1;
      std::memcpy(run.buffer(run.status_index()).data(), &failed, 4);
    };
    std::string error;
    try {
      compiled.launch(*d, {Tensor::zeros(DType::F32, {5})}, {}, {});
    } catch (const Error& e) {
      error = e.what();
    }
    EXPECT_NE(error.find("out of bounds"), std::string::npos) << error;
  }
  expect_clean(fake);
}

// The host sums f32 values in f64; Metal has no f64: the accumulator goes
// to the kernel as f32 and comes back.
TEST(MetalDevice, ReduceBuffersGoInTheKernelsTypes) {
  RecordingObjcRuntime fake;
  {
    std::unique_ptr<Device> d = fake_device(fake);
    const char* src = "def f(x: tensor[n, f32]) {\n return compute(x) {\n @kernel reduce(+)\n for i in 0..n:\n  yield x[i]\n }\n}";
    CompiledCompute compiled(testing::kernel_of(src));
    int runs = 0;
    fake.on_run = [&](FakeDispatch& run) {
      ++runs;
      ASSERT_EQ(run.status_index(), 3u);  // x, out, acc, status
      EXPECT_EQ(floats(run.buffer(2), 1)[0], 0.0f);
      float sum = 10.5f;
      std::memcpy(run.buffer(2).data(), &sum, 4);
    };
    Tensor got = compiled.launch(*d, {Tensor::full(DType::F32, {4}, Scalar::of_float(1, DType::F32))}, {}, {});
    EXPECT_EQ(runs, 1);
    EXPECT_EQ(got.get(0).as_double(), 10.5);
  }
  expect_clean(fake);
}

}  // namespace
}  // namespace zyntax
