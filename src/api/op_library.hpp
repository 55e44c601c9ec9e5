// The ML op library's kernels: stdlib/*.zynml, embedded in the library when
// it is built, checked and lowered once per process by the same compiler
// as any program. An op is found by the name of the function that returns
// its compute block.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "runtime/launch.hpp"

namespace zyntax::api {

class OpLibrary {
 public:
  static OpLibrary& instance();
  // The op's kernel; std::logic_error if the library has none of that name.
  CompiledCompute& op(const std::string& name);

 private:
  OpLibrary();
  std::map<std::string, std::unique_ptr<CompiledCompute>> ops_;
};

}  // namespace zyntax::api
