#include "support/tuning_choice.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <functional>

namespace zyntax {

int64_t TuningChoice::get(const std::string& name, int64_t otherwise) const {
  auto it = knobs.find(name);
  return it == knobs.end() ? otherwise : it->second;
}

std::string TuningChoice::text() const {
  if (knobs.empty()) return "default";
  std::string s;
  for (const auto& [name, value] : knobs) {
    if (!s.empty()) s += ' ';
    s += name + "=" + std::to_string(value);
  }
  return s;
}

uint64_t TuningChoice::keyed(uint64_t key) const {
  if (knobs.empty()) return key;
  return key ^ (static_cast<uint64_t>(std::hash<std::string>()(text())) * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull);
}

std::optional<TuningChoice> TuningChoice::parse(std::string_view text) {
  TuningChoice c;
  if (text == "default") return c;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(' ', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view item = text.substr(pos, end - pos);
    size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0) return std::nullopt;
    std::string name(item.substr(0, eq));
    for (char ch : name)
      if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_') return std::nullopt;
    int64_t value = 0;
    std::string_view digits = item.substr(eq + 1);
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (ec != std::errc() || ptr != digits.data() + digits.size() || digits.empty()) return std::nullopt;
    if (!c.knobs.emplace(name, value).second) return std::nullopt;
    pos = end + 1;
  }
  if (c.knobs.empty()) return std::nullopt;
  return c;
}

void rank_candidates(std::vector<TuningCandidate>& candidates) {
  std::stable_sort(candidates.begin(), candidates.end(), [](const TuningCandidate& a, const TuningCandidate& b) {
    if (a.choice.empty() != b.choice.empty()) return a.choice.empty();
    return a.cost < b.cost;
  });
  // One of each choice: the first (the default, or the cheaper) stays.
  std::vector<TuningCandidate> unique;
  for (TuningCandidate& c : candidates)
    if (std::none_of(unique.begin(), unique.end(), [&](const TuningCandidate& u) { return u.choice == c.choice; }))
      unique.push_back(std::move(c));
  candidates = std::move(unique);
}

}  // namespace zyntax
