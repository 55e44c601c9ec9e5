// Host memory a GPU's kernels read in place: ranges mapped into the GPU's
// address space (page-locked and registered with the driver, or allocated
// mapped), found again by any range inside them.
//
// A view (Tensor storage that to_device(copy=false) made) holds its range
// shared with kernels; kernels read in place only ranges some view shares,
// so page-locked memory meant for fast copies is still copied. A range the
// table mapped itself is unmapped when its last holder lets go, before the
// memory can be freed and its addresses reused.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

namespace zyntax {

class HostMappings {
 public:
  // Maps [data, data + bytes) for kernels and gives its device address; unmaps it.
  using Map = std::function<uint64_t(void* data, size_t bytes)>;
  using Unmap = std::function<void(void* data)>;
  HostMappings(Map map, Unmap unmap);

  // Shares [data, data + bytes) with kernels for as long as the result
  // lives: mapping it, or holding the mapped range that contains it.
  std::shared_ptr<void> share(void* data, size_t bytes);
  // Records memory that was allocated mapped at `address` (never unmapped
  // here) for as long as the result lives, so that views of it share it.
  std::shared_ptr<void> adopt(void* data, size_t bytes, uint64_t address);

  struct Found {
    uint64_t address = 0;       // where kernels find `data`
    std::shared_ptr<void> hold;  // keeps the range mapped while kernels use it
  };
  // The device address of [data, data + bytes) if a view shares a range
  // that contains it; nothing otherwise.
  std::optional<Found> find(const void* data, size_t bytes) const;

  // Ranges recorded now (mapped here or adopted), for tests.
  size_t size() const;

 private:
  struct Range {
    size_t bytes = 0;
    uint64_t address = 0;
    bool mapped_here = false;  // unmap when the last holder lets go
    int holders = 0;
    int views = 0;  // holders that share the range with kernels
  };
  struct Table {
    Map map;
    Unmap unmap;
    mutable std::mutex mu;
    std::map<uintptr_t, Range> ranges;  // by first byte; ranges never overlap
  };
  class Hold;

  // The recorded range containing [p, p + bytes), or null; under the lock.
  static std::pair<const uintptr_t, Range>* containing(Table& t, uintptr_t p, size_t bytes);

  std::shared_ptr<Table> table_;  // shared with holds, which may outlive this
};

}  // namespace zyntax
