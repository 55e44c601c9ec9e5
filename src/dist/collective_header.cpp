#include "dist/collective_header.hpp"

#include <functional>

#include "dist/dist_error.hpp"

namespace zyntax::dist {

namespace {

// "0", "0-3", "0-3, 5": the ranks of one group, runs written as ranges.
std::string rank_list(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += std::to_string(ranks[i]);
    if (j > i) out += (j == i + 1 ? ", " : "-") + std::to_string(ranks[j]);
    i = j + 1;
  }
  return out;
}

// "rank 0 has f32[4,5], ranks 1-2 have f32[4,6]": the ranks grouped by what
// `describe` says of their header, groups in order of their first rank.
std::string by_rank(const std::vector<CollectiveHeader>& headers,
                    const std::function<std::string(const CollectiveHeader&)>& describe, const char* verb = "has",
                    const char* plural_verb = "have") {
  constexpr size_t kMaxGroups = 8;  // a large job with many variants stays readable
  std::vector<std::string> values;
  std::vector<std::vector<int>> groups;
  for (size_t r = 0; r < headers.size(); ++r) {
    std::string v = describe(headers[r]);
    size_t g = 0;
    while (g < values.size() && values[g] != v) ++g;
    if (g == values.size()) {
      values.push_back(v);
      groups.emplace_back();
    }
    groups[g].push_back(static_cast<int>(r));
  }
  std::string out;
  for (size_t g = 0; g < values.size() && g < kMaxGroups; ++g) {
    if (g) out += ", ";
    bool one = groups[g].size() == 1;
    out += (one ? "rank " : "ranks ") + rank_list(groups[g]) + " " + (one ? verb : plural_verb) + " " + values[g];
  }
  if (values.size() > kMaxGroups) out += ", and " + std::to_string(values.size() - kMaxGroups) + " more variants";
  return out;
}

bool all_equal(const std::vector<CollectiveHeader>& headers,
               const std::function<bool(const CollectiveHeader&, const CollectiveHeader&)>& same) {
  for (const CollectiveHeader& h : headers)
    if (!same(h, headers[0])) return false;
  return true;
}

// The shapes agree but for axis `axis` (every header's param: the axes
// agree by the time this is asked).
bool same_but_axis(const CollectiveHeader& a, const CollectiveHeader& b) {
  if (a.dtype != b.dtype || a.ndim != b.ndim) return false;
  for (int i = 0; i < a.ndim; ++i)
    if (i != a.param && a.dims[i] != b.dims[i]) return false;
  return true;
}

bool same_tensor(const CollectiveHeader& a, const CollectiveHeader& b) {
  if (a.dtype != b.dtype || a.ndim != b.ndim) return false;
  for (int i = 0; i < a.ndim; ++i)
    if (a.dims[i] != b.dims[i]) return false;
  return true;
}

// "all_reduce (collective 12 on this communicator)"
std::string collective_text(const CollectiveHeader& h) {
  return std::string(collective_name(static_cast<CollectiveKind>(h.kind))) + " (collective " +
         std::to_string(h.sequence) + " on this communicator)";
}

std::string header_tensor(const CollectiveHeader& h) {
  return tensor_text(static_cast<DType>(h.dtype), h.shape());
}

}  // namespace

const char* collective_name(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::Barrier: return "barrier";
    case CollectiveKind::Broadcast: return "broadcast";
    case CollectiveKind::AllReduce: return "all_reduce";
    case CollectiveKind::AllGather: return "all_gather";
    case CollectiveKind::ReduceScatter: return "reduce_scatter";
  }
  return "?";
}

CollectiveHeader make_header(CollectiveKind kind, uint64_t sequence, DType dtype, const Shape& shape, ReduceOp reduce,
                             int32_t param) {
  if (shape.size() > static_cast<size_t>(CollectiveHeader::kMaxDims))
    throw DistError("a tensor of " + std::to_string(shape.size()) + " axes cannot take part in a collective (at most " +
                    std::to_string(CollectiveHeader::kMaxDims) + ")");
  CollectiveHeader h;
  h.sequence = sequence;
  h.kind = static_cast<uint8_t>(kind);
  h.dtype = static_cast<uint8_t>(dtype);
  h.reduce = static_cast<uint8_t>(reduce);
  h.ndim = static_cast<uint8_t>(shape.size());
  h.param = param;
  for (size_t i = 0; i < shape.size(); ++i) h.dims[i] = shape[i];
  return h;
}

std::string find_disagreement(const std::vector<CollectiveHeader>& headers) {
  if (headers.empty()) return "";
  if (!all_equal(headers, [](auto& a, auto& b) { return a.kind == b.kind && a.sequence == b.sequence; }))
    return "ranks are not in the same collective: " + by_rank(headers, collective_text, "is in", "are in");
  auto kind = static_cast<CollectiveKind>(headers[0].kind);
  if (kind == CollectiveKind::Barrier) return "";
  bool reduces = kind == CollectiveKind::AllReduce || kind == CollectiveKind::ReduceScatter;
  if (reduces && !all_equal(headers, [](auto& a, auto& b) { return a.reduce == b.reduce; }))
    return "ranks disagree on the reduction: " + by_rank(headers, [](const CollectiveHeader& h) {
             return std::string("op ") + reduce_op_name(static_cast<ReduceOp>(h.reduce));
           });
  if (!all_equal(headers, [](auto& a, auto& b) { return a.param == b.param; })) {
    const char* what = kind == CollectiveKind::Broadcast ? "root" : "axis";
    auto value = [&](const CollectiveHeader& h) { return std::string(what) + " " + std::to_string(h.param); };
    return std::string("ranks disagree on the ") + what + ": " + by_rank(headers, value);
  }
  if (kind == CollectiveKind::AllGather && headers[0].param >= 0) {
    if (!all_equal(headers, same_but_axis))
      return "ranks disagree on the tensor (only axis " + std::to_string(headers[0].param) +
             " may differ): " + by_rank(headers, header_tensor);
    return "";
  }
  if (!all_equal(headers, same_tensor)) return "ranks disagree on the tensor: " + by_rank(headers, header_tensor);
  return "";
}

std::string tensor_text(DType dtype, const Shape& shape) {
  std::string out = std::string(dtype_name(dtype)) + "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? "," : "") + std::to_string(shape[i]);
  return out + "]";
}

}  // namespace zyntax::dist
