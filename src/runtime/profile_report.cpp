#include "runtime/profile_report.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "support/json_string.hpp"

namespace zyntax {

namespace {

struct KernelRow {
  std::string name, device, plan;
  int64_t launches = 0, compiles = 0, disk_loads = 0;
  int64_t compile_ns = 0, run_ns = 0;
  double bytes = 0, flops = 0;
  bool flops_known = true;
  int64_t first_ns = 0;
  std::vector<int64_t> each_ns;  // every launch's time: the fastest and the median
};

// The median of `ns` (reordered).
int64_t median(std::vector<int64_t>& ns) {
  auto mid = ns.begin() + static_cast<std::ptrdiff_t>(ns.size() / 2);
  std::nth_element(ns.begin(), mid, ns.end());
  if (ns.size() % 2) return *mid;
  return (*std::max_element(ns.begin(), mid) + *mid) / 2;
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

const char* category(ProfileEvent::Kind k) {
  switch (k) {
    case ProfileEvent::Kind::Host: return "host";
    case ProfileEvent::Kind::Compile: return "compile";
    case ProfileEvent::Kind::Kernel: return "kernel";
    case ProfileEvent::Kind::Copy: return "copy";
    case ProfileEvent::Kind::Wait: return "wait";
    case ProfileEvent::Kind::Function: return "function";
  }
  return "host";
}

// Names left, numbers right, each column as wide as its widest cell.
void print_table(const std::vector<std::vector<std::string>>& table, std::ostream& out) {
  std::vector<size_t> width(table[0].size(), 0);
  for (const auto& row : table)
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  for (const auto& row : table) {
    out << " ";
    for (size_t c = 0; c < row.size(); ++c) {
      std::string pad(width[c] - row[c].size(), ' ');
      out << "  " << (c < 2 ? row[c] + pad : pad + row[c]);
    }
    out << "\n";
  }
}

// Host functions called from interpreted code, by the tier that ran them
// (time includes what they called).
void print_functions(const std::vector<ProfileEvent>& events, std::ostream& out) {
  struct Row {
    int64_t calls = 0, ns = 0;
  };
  std::map<std::pair<std::string, std::string>, Row> rows;
  for (const ProfileEvent& e : events) {
    if (e.kind != ProfileEvent::Kind::Function) continue;
    Row& r = rows[{e.name, e.device}];
    ++r.calls;
    r.ns += e.duration_ns;
  }
  if (rows.empty()) return;
  std::vector<std::vector<std::string>> table = {{"host function", "tier", "calls", "total ms", "mean us"}};
  for (const auto& [key, r] : rows)
    table.push_back({key.first, key.second, std::to_string(r.calls), fixed(r.ns * 1e-6, 3), fixed(r.ns * 1e-3 / static_cast<double>(r.calls), 3)});
  print_table(table, out);
}

}  // namespace

void print_profile(const std::vector<ProfileEvent>& events, int64_t wall_ns, std::ostream& out) {
  std::map<std::pair<std::string, std::string>, KernelRow> rows;
  int64_t copy_ns = 0, wait_ns = 0;
  double copy_bytes = 0;
  for (const ProfileEvent& e : events) {
    if (e.kind == ProfileEvent::Kind::Copy) copy_ns += e.duration_ns, copy_bytes += static_cast<double>(e.bytes);
    if (e.kind == ProfileEvent::Kind::Wait) wait_ns += e.duration_ns;
    if (e.kind != ProfileEvent::Kind::Kernel && e.kind != ProfileEvent::Kind::Compile) continue;
    KernelRow& r = rows[{e.name, e.device}];
    if (r.launches == 0 && r.compiles == 0) r.first_ns = e.start_ns;
    r.name = e.name;
    r.device = e.device;
    if (e.kind == ProfileEvent::Kind::Compile) {
      r.compile_ns += e.duration_ns;
      continue;
    }
    ++r.launches;
    r.compiles += e.compiled;
    r.disk_loads += e.from_disk;
    if (!e.plan.empty()) r.plan = e.plan;
    r.run_ns += e.duration_ns;
    r.each_ns.push_back(e.duration_ns);
    r.bytes += static_cast<double>(e.bytes);
    if (e.flops < 0) r.flops_known = false;
    else r.flops += e.flops;
  }
  std::vector<KernelRow> sorted;
  for (auto& [key, r] : rows) sorted.push_back(r);
  std::sort(sorted.begin(), sorted.end(), [](const KernelRow& a, const KernelRow& b) { return a.run_ns > b.run_ns; });

  std::vector<std::vector<std::string>> table = {
      {"kernel", "device", "launches", "compile ms", "cache hits", "from disk", "plan", "total ms", "mean ms", "min ms", "median ms", "GB/s", "GFLOP/s"}};
  int64_t kernel_ns = 0, compile_ns = 0;
  for (KernelRow& r : sorted) {
    kernel_ns += r.run_ns;
    compile_ns += r.compile_ns;
    double seconds = static_cast<double>(r.run_ns) * 1e-9;
    table.push_back({r.name, r.device, std::to_string(r.launches), fixed(r.compile_ns * 1e-6, 1),
                     std::to_string(r.launches - r.compiles), std::to_string(r.disk_loads), r.plan.empty() ? "-" : r.plan,
                     fixed(r.run_ns * 1e-6, 3),
                     r.launches ? fixed(r.run_ns * 1e-6 / static_cast<double>(r.launches), 3) : "-",
                     r.launches ? fixed(*std::min_element(r.each_ns.begin(), r.each_ns.end()) * 1e-6, 3) : "-",
                     r.launches ? fixed(median(r.each_ns) * 1e-6, 3) : "-",
                     seconds > 0 ? fixed(r.bytes / seconds * 1e-9, 2) : "-",
                     seconds > 0 && r.flops_known ? fixed(r.flops / seconds * 1e-9, 2) : "-"});
  }
  out << "profile: " << fixed(wall_ns * 1e-6, 1) << " ms in all; kernels " << fixed(kernel_ns * 1e-6, 1)
      << " ms, compiling " << fixed(compile_ns * 1e-6, 1) << " ms, copies to the host " << fixed(copy_ns * 1e-6, 1) << " ms ("
      << fixed(copy_bytes / 1048576.0, 1) << " MiB), waiting on async launches " << fixed(wait_ns * 1e-6, 1) << " ms\n";
  if (sorted.empty()) out << "  no kernels ran\n";
  else print_table(table, out);
  print_functions(events, out);
}

void write_chrome_trace(const std::vector<ProfileEvent>& events, std::ostream& out) {
  out << "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  out << "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1, \"args\": {\"name\": \"zyntax\"}}";
  for (const ProfileEvent& e : events) {
    out << ",\n{\"name\": " << json_string(e.name) << ", \"cat\": \"" << category(e.kind) << "\", \"ph\": \"X\", \"ts\": "
        << fixed(e.start_ns * 1e-3, 3) << ", \"dur\": " << fixed((e.span_ns >= 0 ? e.span_ns : e.duration_ns) * 1e-3, 3)
        << ", \"pid\": 1, \"tid\": " << e.thread
        << ", \"args\": {";
    std::string args;
    if (!e.device.empty()) args += "\"device\": " + json_string(e.device);
    if (e.bytes) args += std::string(args.empty() ? "" : ", ") + "\"bytes\": " + std::to_string(e.bytes);
    if (e.kind == ProfileEvent::Kind::Compile && e.from_disk) args += std::string(args.empty() ? "" : ", ") + "\"from_disk\": true";
    if (e.kind == ProfileEvent::Kind::Kernel) {
      args += std::string(args.empty() ? "" : ", ") + "\"compiled\": " + (e.compiled ? "true" : "false");
      if (e.from_disk) args += ", \"from_disk\": true";
      if (e.span_ns > e.duration_ns) args += ", \"own_us\": " + fixed(e.duration_ns * 1e-3, 3);
      if (e.flops >= 0) args += ", \"flops\": " + fixed(e.flops, 0);
    }
    out << args << "}}";
  }
  out << "\n]}\n";
}

}  // namespace zyntax
