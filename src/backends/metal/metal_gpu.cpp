#include "backends/metal/metal_gpu.hpp"

#include <algorithm>

#include "codegen/msl/msl_emitter.hpp"

namespace zyntax::metal {

namespace {

// MTLResourceStorageModeShared with the default CPU cache mode and hazard
// tracking: memory the host and the GPU both address.
constexpr NSUInteger kSharedStorage = 0;
// MTLCommandBufferStatus.
constexpr NSUInteger kCommandBufferCompleted = 4;
constexpr NSUInteger kCommandBufferError = 5;

// The MTLGPUFamily values the MSL emitter writes for, newest first: Apple
// silicon from M1 (Apple7) on, and the Macs' other GPUs of Metal 3 (Mac2).
struct Family {
  NSInteger value;
  const char* name;
};
constexpr Family kFamilies[] = {{1009, "Apple9"}, {1008, "Apple8"}, {1007, "Apple7"}, {2002, "Mac2"}};

std::string gpu_family(ObjcRuntime& rt, Id device) {
  Sel supports = rt.selector("supportsFamily:");
  for (const Family& f : kFamilies)
    if (rt.send_bool_int(device, supports, f.value)) return f.name;
  return "";
}

// A kernel compiled when a device is opened: the pipeline of any kernel
// says how wide the device's SIMD groups are (threadExecutionWidth), which
// the device itself does not.
constexpr const char* kProbe =
    "#include <metal_stdlib>\n"
    "using namespace metal;\n"
    "kernel void zy_main(device uint* out [[buffer(0)]], uint i [[thread_position_in_grid]]) { out[i] = i; }\n";

}  // namespace

std::vector<std::unique_ptr<Gpu>> Gpu::open_all(ObjcRuntime& runtime, std::string* why) {
  ObjcRuntime& rt = runtime;
  std::vector<Owned> devices;
  {
    AutoreleasePool pool(rt);
    Owned all(rt, rt.copy_all_devices());
    if (all) {
      NSUInteger n = rt.send_uint(all.get(), rt.selector("count"));
      for (NSUInteger i = 0; i < n; ++i) devices.emplace_back(rt, rt.retain(rt.send_id_uint(all.get(), rt.selector("objectAtIndex:"), i)));
    } else if (Id d = rt.create_system_default_device()) {
      devices.emplace_back(rt, d);
    }
  }
  std::vector<std::unique_ptr<Gpu>> out;
  std::vector<std::string> skipped;
  for (Owned& d : devices) {
    std::string name, family;
    {
      AutoreleasePool pool(rt);
      name = string_of(rt, rt.send_id(d.get(), rt.selector("name")));
      family = gpu_family(rt, d.get());
    }
    if (family.empty()) {
      skipped.push_back(name + ": it is neither an Apple GPU of family Apple7 (M1) or later nor a Mac2 GPU");
      continue;
    }
    try {
      out.push_back(std::make_unique<Gpu>(rt, std::move(d), static_cast<int>(out.size())));
    } catch (const MetalError& e) {
      skipped.push_back(name + ": " + e.what());
    }
  }
  if (why) {
    *why = devices.empty() ? "Metal lists no device" : "";
    for (const std::string& s : skipped) *why += (why->empty() ? "" : "; ") + s;
  }
  return out;
}

Gpu::Gpu(ObjcRuntime& runtime, Owned device, int ordinal) : runtime_(runtime), device_(std::move(device)) {
  ObjcRuntime& rt = runtime_;
  AutoreleasePool pool(rt);
  Id d = device_.get();
  id_ = "metal:" + std::to_string(ordinal);
  name_ = string_of(rt, rt.send_id(d, rt.selector("name")));
  family_ = gpu_family(rt, d);
  memory_bytes_ = rt.send_uint(d, rt.selector("recommendedMaxWorkingSetSize"));
  max_buffer_bytes_ = rt.send_uint(d, rt.selector("maxBufferLength"));
  unified_memory_ = rt.send_bool(d, rt.selector("hasUnifiedMemory"));
  queue_ = Owned(rt, rt.send_id(d, rt.selector("newCommandQueue")));
  if (!queue_) throw MetalError("Metal cannot make a command queue on " + id_);

  // The Apple GPU target the MSL emitter describes, with this device's limits.
  target_ = codegen::apple_gpu_target();
  target_.api = GpuApi::Metal;
  target_.arch = name_;
  Pipeline probe(*this, kProbe, "zy_main", "the device probe");
  if (probe.execution_width() > 0) target_.subgroup_size = static_cast<int>(probe.execution_width());
  MtlSize most = rt.send_size(d, rt.selector("maxThreadsPerThreadgroup"));
  int64_t threads = target_.max_threads_per_block;
  if (most.width > 0) threads = static_cast<int64_t>(most.width);
  if (probe.max_threads() > 0) threads = std::min<int64_t>(threads, probe.max_threads());
  threads -= threads % target_.subgroup_size;  // whole SIMD groups
  target_.max_threads_per_block = static_cast<int>(std::max<int64_t>(threads, target_.subgroup_size));
  if (NSUInteger shared = rt.send_uint(d, rt.selector("maxThreadgroupMemoryLength")); shared > 0)
    target_.shared_memory_static = target_.shared_memory_max = static_cast<int64_t>(shared);
  if (std::string bad = target_.verify(); !bad.empty()) throw MetalError("its GPU target is inconsistent: " + bad);
}

Gpu::~Gpu() = default;  // the queue, then the device (members go in reverse)

// Whole 32-bit words, at least one.
Gpu::Buffer::Buffer(Gpu& gpu, size_t bytes) : bytes_(std::max<size_t>((bytes + 3) / 4 * 4, 4)) {
  ObjcRuntime& rt = gpu.runtime_;
  AutoreleasePool pool(rt);
  buffer_ = Owned(rt, rt.send_id_uint_uint(gpu.device_.get(), rt.selector("newBufferWithLength:options:"), bytes_, kSharedStorage));
  if (!buffer_) throw MetalError("Metal cannot allocate " + std::to_string(bytes_) + " bytes on " + gpu.id_);
  contents_ = rt.send_ptr(buffer_.get(), rt.selector("contents"));
}

Gpu::Pipeline::Pipeline(Gpu& gpu, const std::string& source, const std::string& entry, const std::string& kernel) : kernel_(kernel) {
  ObjcRuntime& rt = gpu.runtime_;
  AutoreleasePool pool(rt);
  // IEEE arithmetic, as every backend computes (Metal's default is fast math).
  Owned options(rt, rt.send_id(rt.get_class("MTLCompileOptions"), rt.selector("new")));
  rt.send_void_bool(options.get(), rt.selector("setFastMathEnabled:"), false);
  Id error = nullptr;
  Owned library(rt, rt.send_id_id_id_err(gpu.device_.get(), rt.selector("newLibraryWithSource:options:error:"), ns_string(rt, source),
                                          options.get(), &error));
  if (!library) throw MetalError("Metal cannot compile kernel " + kernel + ": " + error_text(rt, error, "the compiler gave no log"));
  Owned function(rt, rt.send_id_id(library.get(), rt.selector("newFunctionWithName:"), ns_string(rt, entry)));
  if (!function) throw MetalError("Metal cannot find function " + entry + " in the library of kernel " + kernel);
  error = nullptr;
  state_ = Owned(rt, rt.send_id_id_err(gpu.device_.get(), rt.selector("newComputePipelineStateWithFunction:error:"), function.get(), &error));
  if (!state_) throw MetalError("Metal cannot make the pipeline of kernel " + kernel + ": " + error_text(rt, error));
  max_threads_ = static_cast<uint32_t>(rt.send_uint(state_.get(), rt.selector("maxTotalThreadsPerThreadgroup")));
  execution_width_ = static_cast<uint32_t>(rt.send_uint(state_.get(), rt.selector("threadExecutionWidth")));
}

void Gpu::dispatch(const Pipeline& pipeline, const std::vector<Buffer*>& buffers, const std::vector<uint8_t>& arguments, int argument_index,
                   uint32_t threadgroup_bytes, uint32_t groups_x, uint32_t groups_y, uint32_t threads) {
  if (threads == 0 || threads > pipeline.max_threads() || (!arguments.empty() && argument_index < 0) ||
      arguments.size() > kMostInlineArgumentBytes)
    throw std::logic_error("Metal dispatch of kernel " + pipeline.kernel() + ": the threads or arguments do not fit its pipeline");
  ObjcRuntime& rt = runtime_;
  AutoreleasePool pool(rt);
  // Both autoreleased: the pool holds them until the command buffer is done.
  Id commands = rt.send_id(queue_.get(), rt.selector("commandBuffer"));
  Id encoder = commands ? rt.send_id(commands, rt.selector("computeCommandEncoder")) : nullptr;
  if (!encoder) throw MetalError("Metal cannot make a command buffer on " + id_ + " for kernel " + pipeline.kernel());
  rt.send_void_id(encoder, rt.selector("setComputePipelineState:"), pipeline.state_.get());
  Sel set_buffer = rt.selector("setBuffer:offset:atIndex:");
  for (size_t i = 0; i < buffers.size(); ++i) rt.send_void_id_uint_uint(encoder, set_buffer, buffers[i]->handle(), 0, i);
  if (!arguments.empty())
    rt.send_void_ptr_uint_uint(encoder, rt.selector("setBytes:length:atIndex:"), arguments.data(), arguments.size(),
                               static_cast<NSUInteger>(argument_index));
  if (threadgroup_bytes) rt.send_void_uint_uint(encoder, rt.selector("setThreadgroupMemoryLength:atIndex:"), threadgroup_bytes, 0);
  rt.send_void_size_size(encoder, rt.selector("dispatchThreadgroups:threadsPerThreadgroup:"), MtlSize{groups_x, groups_y, 1},
                         MtlSize{threads, 1, 1});
  rt.send_void(encoder, rt.selector("endEncoding"));
  rt.send_void(commands, rt.selector("commit"));
  rt.send_void(commands, rt.selector("waitUntilCompleted"));
  NSUInteger status = rt.send_uint(commands, rt.selector("status"));
  if (status != kCommandBufferCompleted) {
    last_dispatch_ms_.store(-1, std::memory_order_relaxed);
    std::string why = status == kCommandBufferError ? error_text(rt, rt.send_id(commands, rt.selector("error")))
                                                    : "its command buffer ended with status " + std::to_string(status);
    throw MetalError("Metal failed running kernel " + pipeline.kernel() + " on " + id_ + ": " + why);
  }
  double start = rt.send_double(commands, rt.selector("GPUStartTime"));
  double end = rt.send_double(commands, rt.selector("GPUEndTime"));
  last_dispatch_ms_.store(start > 0 && end >= start ? (end - start) * 1e3 : -1, std::memory_order_relaxed);
}

}  // namespace zyntax::metal
