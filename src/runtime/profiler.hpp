// Where a run's time goes: events for host statements, kernel compiles,
// kernel runs, copies between a device and the host, and waits on
// asynchronous launches, recorded while the profiler is on (`zyntax run
// --profile`, `--trace`) and nothing otherwise. The report and the trace
// are made from them (runtime/profile_report).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace zyntax {

struct ProfileEvent {
  // Function: a call of a host function (from interpreted code), `device`
  // the tier that ran it ("compiled" or "interpreted").
  enum class Kind { Host, Compile, Kernel, Copy, Wait, Function };
  Kind kind = Kind::Host;
  std::string name;    // the kernel, the statement, "device -> host", the function
  std::string device;  // where it ran ("" for the host)
  int64_t start_ns = 0;
  int64_t duration_ns = 0;  // its own time (a kernel's, less the compile it triggered)
  int64_t span_ns = -1;     // the whole span on the host where it differs (a kernel's, with its compile): traces nest
  uint64_t bytes = 0;   // kernels: inputs and output; copies: the bytes copied
  double flops = -1;    // kernels: counted from the CIR; -1 unknown
  bool compiled = false;   // kernels: built for this launch (a cache miss)
  bool from_disk = false;  // kernels and compiles: what was built came from the disk cache (a hit)
  std::string plan;        // kernels: "tuned" (the tuner's choice), "default" (the tuner kept the rules), "-" (no record)
  uint32_t thread = 0;  // a small number per host thread
};

class Profiler {
 public:
  static Profiler& global();

  bool enabled() const { return enabled_; }
  // Starts recording; times count from here.
  void enable();
  int64_t now_ns() const;
  void record(ProfileEvent e);
  std::vector<ProfileEvent> events() const;

  // Compile time spent on this thread since the last take (a kernel's run
  // subtracts the compile it triggered from its own time).
  static void add_compile_ns(int64_t ns);
  static int64_t take_compile_ns();
  // Loads from the disk cache on this thread so far: a build that loaded
  // something is a disk-cache hit, not a compile.
  static void note_disk_load();
  static uint64_t disk_loads();
  // The kernel and device this thread is running, for the compile events
  // recorded below it.
  struct Running {
    Running(const std::string& kernel, const std::string& device);
    ~Running();
    const std::string* saved_kernel;
    const std::string* saved_device;
  };
  static const std::string& running_kernel();
  static const std::string& running_device();

 private:
  bool enabled_ = false;
  int64_t origin_ns_ = 0;
  mutable std::mutex mu_;
  std::vector<ProfileEvent> events_;
};

// Times a span and records it when the profiler is on.
class ProfileSpan {
 public:
  ProfileSpan(ProfileEvent::Kind kind, std::string name, std::string device = "");
  ~ProfileSpan();
  ProfileEvent& event() { return e_; }

 private:
  bool on_;
  ProfileEvent e_;
};

}  // namespace zyntax
