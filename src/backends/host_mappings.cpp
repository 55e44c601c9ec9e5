#include "backends/host_mappings.hpp"

#include <utility>

namespace zyntax {

// One holder of a recorded range: counted in, counted out under the lock;
// the last one out forgets the range (unmapping it where it was mapped here).
class HostMappings::Hold {
 public:
  Hold(std::shared_ptr<Table> table, uintptr_t begin, bool view) : table_(std::move(table)), begin_(begin), view_(view) {}
  ~Hold() {
    std::lock_guard<std::mutex> lock(table_->mu);
    auto it = table_->ranges.find(begin_);
    Range& r = it->second;
    --r.holders;
    if (view_) --r.views;
    if (r.holders > 0) return;
    // Unmapped under the lock: a new mapping of the same bytes waits until
    // the driver has forgotten this one.
    if (r.mapped_here) table_->unmap(reinterpret_cast<void*>(begin_));
    table_->ranges.erase(it);
  }
  Hold(const Hold&) = delete;
  Hold& operator=(const Hold&) = delete;

 private:
  std::shared_ptr<Table> table_;
  uintptr_t begin_;
  bool view_;
};

HostMappings::HostMappings(Map map, Unmap unmap) : table_(std::make_shared<Table>()) {
  table_->map = std::move(map);
  table_->unmap = std::move(unmap);
}

std::pair<const uintptr_t, HostMappings::Range>* HostMappings::containing(Table& t, uintptr_t p, size_t bytes) {
  auto it = t.ranges.upper_bound(p);
  if (it == t.ranges.begin()) return nullptr;
  --it;
  if (p + bytes > it->first + it->second.bytes) return nullptr;
  return &*it;
}

std::shared_ptr<void> HostMappings::share(void* data, size_t bytes) {
  auto p = reinterpret_cast<uintptr_t>(data);
  std::lock_guard<std::mutex> lock(table_->mu);
  auto* found = containing(*table_, p, bytes);
  if (!found) {
    // The driver refuses a range that overlaps a mapped one; its error says so.
    uint64_t address = table_->map(data, bytes);
    found = &*table_->ranges.emplace(p, Range{bytes, address, true, 0, 0}).first;
  }
  ++found->second.holders;
  ++found->second.views;
  return std::make_shared<Hold>(table_, found->first, /*view=*/true);
}

std::shared_ptr<void> HostMappings::adopt(void* data, size_t bytes, uint64_t address) {
  auto p = reinterpret_cast<uintptr_t>(data);
  std::lock_guard<std::mutex> lock(table_->mu);
  Range& r = table_->ranges[p];
  r = Range{bytes, address, false, 1, 0};
  return std::make_shared<Hold>(table_, p, /*view=*/false);
}

std::optional<HostMappings::Found> HostMappings::find(const void* data, size_t bytes) const {
  auto p = reinterpret_cast<uintptr_t>(data);
  std::lock_guard<std::mutex> lock(table_->mu);
  auto* found = containing(*table_, p, bytes);
  if (!found || found->second.views == 0) return std::nullopt;
  ++found->second.holders;
  return Found{found->second.address + (p - found->first), std::make_shared<Hold>(table_, found->first, /*view=*/false)};
}

size_t HostMappings::size() const {
  std::lock_guard<std::mutex> lock(table_->mu);
  return table_->ranges.size();
}

}  // namespace zyntax
