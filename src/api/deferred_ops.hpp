// The op library's deferred ops: an op whose result is a new buffer returns
// at once, its buffer pending (interp/pending_block), and the ops pending on
// a device are computed together, as few kernels as fusion allows
// (interp/pending_graph: a bias add becomes a product's epilogue), when
// something needs a value: a read of a pending buffer's elements, an op
// that runs at once (one that writes a buffer in place, one of several
// results, any op of a group of devices), ComputeDevice::sync, 128 ops
// waiting, the last handle of the device going. Errors are the ops' own (a
// ComputeError naming the op), raised where the values are needed.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "interp/pending_graph.hpp"

namespace zyntax {

class DeviceImpl;
class Buffer;

namespace api {

// The ops waiting on one device (one queue per device, for the process:
// every ComputeDevice opened on it shares it, so an op that writes a
// buffer in place computes first whatever reads it).
class DeferredOps {
 public:
  static DeferredOps& of(Device& device);

  // `b` waits for the next flush (which runs now where too many wait).
  void add(std::shared_ptr<PendingBlock> b);
  // Computes every op waiting; a failing op's error as a ComputeError naming it.
  void flush();
  // Every device's: before a buffer is written in place or its memory freed,
  // since any op waiting may read it (a buffer's storage may be shared by
  // views on several devices).
  static void flush_all();
  // Kernels the op library launched here, deferred ops (fused or not) and
  // ops run at once, since the process started.
  uint64_t launches() const;
  void count_launch();
  // Handles opened on the device (ComputeDevice::open): when the last goes,
  // what waits runs, and its checks.
  void attach();
  size_t detach();  // the handles left

 private:
  explicit DeferredOps(Device& device) : device_(device) {}
  void flush_locked();

  Device& device_;
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<PendingBlock>> pending_;
  PendingGraph graph_;
  uint64_t next_seq_ = 0;
  uint64_t launches_ = 0;
  size_t handles_ = 0;
};

// Computes what waits on the device of `dev` (nothing for a group of devices,
// whose ops run at once).
void flush_deferred(const DeviceImpl& dev);

// An op's argument: a tensor or a pending result. `exposed`: its memory is
// in the application's hands (Array::host_data, device_memory_of), which
// may write it at any time: an op reading it runs at once.
struct OpInput {
  PendingInput input;
  bool exposed = false;
};

// Op `op`'s argument `arg`: the buffer checked to hold `shape` (named
// `names` in errors) and viewed so; a pending result stays pending.
OpInput op_input(const DeviceImpl& dev, const Buffer& b, const char* op, const char* arg, const std::vector<size_t>& shape,
                 const char* names);

// Runs op `op` (a stdlib kernel) on `dev` with these inputs, host integers
// and scalars: deferred where the device allows it (one device, fusion
// on), else now.
Buffer deferred_op(const DeviceImpl& dev, const std::string& op, const std::vector<OpInput>& inputs,
                   const std::map<std::string, int64_t>& host_dims = {}, const std::map<std::string, Scalar>& scalars = {});

}  // namespace api
}  // namespace zyntax
