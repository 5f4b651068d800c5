// kernelformer/suggest.hpp — "did you mean …?" for a misspelled name (a kernel, an option, a
// subcommand): the candidate at the smallest edit distance (insertions, deletions,
// substitutions and transpositions of neighbours), if it is close enough to be the one meant.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kf {

// The optimal-string-alignment distance between a and b (case-sensitive).
std::size_t edit_distance(std::string_view a, std::string_view b);

// The candidate closest to word when its distance is at most max(1, |word| / 3) and it is the
// only one that close; else "".
std::string suggest_name(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace kf
