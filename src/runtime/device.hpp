// Devices that run kernels, the one policy for what a device cannot run,
// and the registry that finds devices by name ("cpu", "cpu:reference",
// "cuda:0", ...). Backends provide the devices (src/backends/).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "cir/ir.hpp"
#include "support/tuning_choice.hpp"
#include "runtime/host_launch.hpp"
#include "runtime/tensor.hpp"
#include "target/gpu_target.hpp"

namespace zyntax {

struct DeviceInfo {
  std::string id;       // "cpu", "cpu:reference"
  std::string type;     // "cpu" or "gpu"
  std::string name;     // the processor's name
  std::string backend;  // what compiles and runs kernels there
  int cores = 0;  // cores, or a GPU's multiprocessors
  uint64_t memory_bytes = 0;
  std::string compute_capability;  // GPUs: "9.0"
};

class DeviceRegistry;

// A device runs kernels. Backends (src/backends/<name>/) implement execute();
// callers use run(), which applies the one fallback policy of the runtime
// (device.cpp) to what execute() could not do.
class Device {
 public:
  virtual ~Device() = default;
  virtual const DeviceInfo& info() const = 0;
  // What the GPU planner uses of this device (plan/gpu_plan), for a GPU;
  // null for devices that compute on the host.
  virtual const GpuTarget* gpu_target() const { return nullptr; }

  // Runs a specialised kernel (all dims constant). `key` is the hash of its
  // CIR: devices cache what they build for it under that key. Where this
  // device cannot compile the kernel, it runs on the host's compiled CPU
  // device ("cpu"), or where that cannot either, on the reference executor
  // ("cpu:reference"); where a runtime check fails (an index out of bounds,
  // a division by zero), the kernel runs again on the reference executor,
  // which reports the error in the source's words and place (or, for a
  // conservative check, computes the result).
  Tensor run(const cir::Kernel& kernel, uint64_t key, const std::vector<Tensor>& inputs,
             const std::map<std::string, Scalar>& scalars);

  // The kernel made ready to run many times on host memory, for inputs of
  // the dtypes and shapes it was specialised for and these scalars; null
  // where this device does not compute in host memory or cannot run the
  // kernel itself (then every run goes through run()). The fast path runs
  // without the profiler: callers take run() while it records.
  virtual std::unique_ptr<HostLaunch> prepare_host_launch(const cir::Kernel& kernel, uint64_t key,
                                                          const std::map<std::string, Scalar>& scalars) {
    return nullptr;
  }

  // What execute() did with a kernel.
  enum class Outcome { Done, Unsupported, CheckFailed };
  struct Attempt {
    Outcome outcome = Outcome::Done;
    Tensor result;  // when Done
    static Attempt done(Tensor t) { return {Outcome::Done, std::move(t)}; }
    static Attempt unsupported() { return {Outcome::Unsupported, {}}; }
    static Attempt check_failed() { return {Outcome::CheckFailed, {}}; }
  };

  // For benchmarks: how long the last kernel this device ran took on it,
  // timed by the device itself (CUDA events, Vulkan timestamps) around the
  // kernel alone, copies excluded; -1 where the device keeps no such time.
  virtual double last_kernel_milliseconds() const { return -1; }

  // Zeroed host memory for a tensor this device is to read: page-locked
  // where `pinned` and the device copies it over a bus (copies then run at
  // the bus's speed and beside kernels); plain memory elsewhere.
  virtual Tensor host_tensor(DType dtype, Shape shape, bool pinned) { return Tensor::zeros(dtype, std::move(shape)); }

  // A view of host tensor `t` that this device's kernels read in place, no
  // copy made: `t` itself where the device computes in host memory; host
  // memory mapped into a GPU's address space for as long as the view lives;
  // a DataError saying why where the device cannot reach host memory.
  virtual Tensor share_host(const Tensor& t) { return t; }

  // A copy of `t` placed on this device (to_device with copy=true): in its
  // own memory where it has some (a GPU's, where the device's kernels then
  // read it without copying it in, and the host reads it back when it
  // first needs it); a host copy elsewhere.
  virtual Tensor copy_in(const Tensor& t) {
    Tensor c = t.clone();
    c.set_device(info().id);
    return c;
  }

  // Memory of this device that another library holds (a torch CUDA tensor
  // through DLPack): a tensor of `dtype` and `shape` placed on this device,
  // holding a copy of the bytes at `address` made on the device itself
  // (never through host memory) once the work queued on the device has
  // finished; `address` is not read after the call. A DataError where the
  // device has no memory of its own to take it from.
  virtual Tensor copy_in_device_memory(uint64_t address, DType dtype, Shape shape);

  // Where this device's own memory holds `t`'s current bytes, and what
  // keeps that memory allocated; none where it does not (host memory, or
  // the host has written `t` since).
  struct HeldMemory {
    uint64_t address = 0;
    std::shared_ptr<const void> keep;
  };
  virtual std::optional<HeldMemory> held_memory(const Tensor& t) const { return std::nullopt; }

  // Bytes of inputs the last run here copied in from host memory (0 where
  // every input was on the device already, or the device computes in host
  // memory). For tests that check data stays on a GPU.
  virtual size_t last_run_bytes_copied_in() const { return 0; }

  // Running one share of a kernel into an output in host memory that other
  // devices fill with the other shares (several devices on one kernel, see
  // runtime/split_launch): share `part` of `parts` of the outer parallel
  // loop of the kernel as this device compiles it, so that every element is
  // computed exactly as one device alone computes it. `out` starts zeroed.
  enum class Share { Done, Unsupported, RunWhole };
  virtual Share run_share(const cir::Kernel& kernel, uint64_t key, const std::vector<Tensor>& inputs,
                          const std::map<std::string, Scalar>& scalars, int part, int parts, Tensor& out) {
    return Share::Unsupported;
  }

  // Tuning (runtime/tuner). The schedule choices this device can plan the
  // kernel (specialised) with: the default (its rules, an empty choice)
  // first, the rest ranked by its cost model; empty where nothing is tuned.
  virtual std::vector<TuningCandidate> tuning_candidates(const cir::Kernel& kernel) { return {}; }
  // execute() planned with `choice` rather than the tuning database's, for
  // the tuner's timed runs: Unsupported where the choice does not compile
  // or exceeds a limit of the device.
  virtual Attempt execute_choice(const cir::Kernel& kernel, uint64_t key, const TuningChoice& choice,
                                 const std::vector<Tensor>& inputs, const std::map<std::string, Scalar>& scalars) {
    return Attempt::unsupported();
  }
  // What tuning records are kept for: the device's model, architecture,
  // driver and cores (what info() says of them), not its id.
  virtual std::string tuning_signature() const;
  // The tuning database's choice for the kernel here (empty: no record, the
  // default won, or tuning is off), looked up once per kernel until the
  // database changes; `tuned` says whether a record exists.
  TuningChoice tuned_choice(const cir::Kernel& kernel, uint64_t key, bool* tuned = nullptr);

  // Where run() sends what this device cannot do (DeviceRegistry::add sets
  // them; a device made outside a registry borrows a registry's with
  // DeviceRegistry::lend_fallbacks).
  struct Fallbacks {
    Device* host = nullptr;       // the host's compiled CPU device
    Device* reference = nullptr;  // the reference executor
  };
  void set_fallbacks(Fallbacks f) { fallbacks_ = f; }

 protected:
  // Runs the kernel here if this device can: Done with the result,
  // Unsupported where it cannot compile the kernel, CheckFailed where a
  // runtime check failed. Errors of the program's data throw as usual.
  virtual Attempt execute(const cir::Kernel& kernel, uint64_t key, const std::vector<Tensor>& inputs,
                          const std::map<std::string, Scalar>& scalars) = 0;

 private:
  // run() without the profiler: execute() and the fallback policy; where it
  // ran goes to *ran_on when given.
  Tensor run_with_fallbacks(const cir::Kernel& kernel, uint64_t key, const std::vector<Tensor>& inputs,
                            const std::map<std::string, Scalar>& scalars, const Device** ran_on);
  Fallbacks fallbacks_;
  struct Tuned {
    uint64_t generation = 0;
    bool recorded = false;
    TuningChoice choice;
  };
  std::mutex tuned_mu_;
  std::unordered_map<uint64_t, Tuned> tuned_;
};

// The devices of this process, by id: every device each enabled backend
// found (backends/registry builds the process's registry).
class DeviceRegistry {
 public:
  // Every device, the deferred backends opened first.
  const std::vector<std::unique_ptr<Device>>& devices() const;
  // "auto" picks the best device (the first GPU, else "cpu", else the first);
  // null if the id names no available device. The devices added before any
  // defer() are found without opening the deferred backends.
  Device* find(const std::string& id) const;
  // Ids of the available devices, for messages: "cpu, cpu:reference".
  std::string available() const;
  // Why `id` names no device here, when a backend said so ("no CUDA GPU:
  // no CUDA driver (...)"), else "". "gpu" asks every GPU backend.
  std::string unavailable_reason(const std::string& id) const;
  // "device 'cuda:7' is not available (available: cpu, cpu:reference; no CUDA GPU: ...)".
  std::string not_available_message(const std::string& id) const;

  // Adds a device; its fallbacks are this registry's "cpu" and
  // "cpu:reference" devices (each device added so far is given them again).
  void add(std::unique_ptr<Device> d);
  // A backend whose devices are added by `open` the first time anything
  // beyond the devices added so far is asked for: opening a GPU driver
  // costs a program that never leaves the host a tenth of a second or more.
  // Opened once, in the order deferred, safely from any thread.
  void defer(std::function<void(DeviceRegistry&)> open);
  // A backend with no device here says why, for ids starting with `prefix`
  // ("cuda"); `gpu` marks a GPU backend.
  void add_unavailable(const std::string& prefix, std::string why, bool gpu);
  // Gives a device made outside this registry this registry's fallbacks.
  void lend_fallbacks(Device& d) const;

 private:
  Device::Fallbacks fallbacks() const;
  void open_deferred() const;

  std::vector<std::unique_ptr<Device>> devices_;
  // The devices added before the first defer(): never changed afterwards,
  // so that finding them races with no opening.
  std::vector<Device*> first_;
  std::vector<std::function<void(DeviceRegistry&)>> deferred_;
  mutable std::once_flag opened_;
  struct Unavailable {
    std::string prefix, why;
    bool gpu = false;
  };
  std::vector<Unavailable> unavailable_;
};

// What every device on the host processor reports, with its backend's description.
DeviceInfo host_cpu_info(const std::string& id, std::string backend);

// The processor's model name and core count, read from the operating system.
std::string cpu_model_name();
int cpu_core_count();
uint64_t host_memory_bytes();

}  // namespace zyntax
