// The error of every distributed collective: a rank that gave no answer in
// time, a failure MPI reported, ranks that disagree on a collective, or a
// collective that cannot be done with these arguments. The message names the
// rank, the communicator's size, the operation and what happened.
#pragma once

#include <stdexcept>

namespace zyntax::dist {

class DistError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace zyntax::dist
