// "Did you mean ...?": the candidate nearest a misspelt name, by edit
// distance, if one is near enough to be the likely intent.
#pragma once

#include <string>
#include <vector>

namespace zyntax {

// Edits from one to the other: insertions, deletions, substitutions and
// swaps of neighbouring characters, each one.
size_t edit_distance(const std::string& a, const std::string& b);

// The nearest candidate within a third of the name's length (at least one
// edit, at most two), or "" when none is that near.
std::string nearest_name(const std::string& name, const std::vector<std::string>& candidates);

}  // namespace zyntax
