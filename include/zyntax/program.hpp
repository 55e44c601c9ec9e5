// ZynML programs from C++: load a file or source text, then call its kernels
// (its compute blocks) on arrays, or its functions with their host code,
// through the same compiler, kernel cache and devices as `zyntax run`.
//
//   zyntax::ComputeDevice dev = zyntax::ComputeDevice::open("auto");
//   zyntax::Program prog = zyntax::Program::load("softmax.zynml", dev);
//   zyntax::Array x = zyntax::Array::from_vector<float>(dev, data, {rows, cols});
//   zyntax::Array y = prog.kernel("softmax")({x});
//
// A kernel is named as `zyntax compile` names it: by the function returning
// the compute block (`def softmax(x: tensor[n, m, f32]) { return compute(x)
// {...} }`) or the variable it is assigned to. Its inputs are the block's
// `compute(...)` arguments, in order, with the element types and ranks the
// function declares; their sizes bind the dimensions (n, m). Host numbers
// the block reads besides (a scale, a dimension no input has) are given by
// name.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "zyntax/array.hpp"
#include "zyntax/compute_device.hpp"
#include "zyntax/errors.hpp"
#include "zyntax/export.hpp"

namespace zyntax {

class ProgramImpl;
struct KernelEntry;
class BoundKernel;

// A host number given to a kernel by name: an integer, exact over all 64
// bits (an offset past 2^53 stays what it is), or a float.
class ZYNTAX_API HostNumber {
 public:
  HostNumber(int v) : integer_(true), i_(v) {}
  HostNumber(long v) : integer_(true), i_(v) {}
  HostNumber(long long v) : integer_(true), i_(v) {}
  HostNumber(double v) : integer_(false), f_(v) {}
  HostNumber(float v) : integer_(false), f_(v) {}
  bool is_integer() const { return integer_; }
  long long integer() const { return i_; }  // when is_integer()
  double value() const { return integer_ ? static_cast<double>(i_) : f_; }

 private:
  bool integer_;
  long long i_ = 0;
  double f_ = 0;
};

class ZYNTAX_API Kernel {
 public:
  // One array the kernel takes: its name in the program, element type and
  // shape as declared ("n", "4").
  struct Param {
    std::string name;
    ElementType type = ElementType::F32;
    std::vector<std::string> shape;
  };
  // A host number the kernel reads: an integer (a dimension, an index) or a
  // float.
  struct HostValue {
    std::string name;
    bool integer = false;
  };

  const std::string& name() const;
  const std::vector<Param>& params() const;
  const std::vector<HostValue>& host_values() const;
  // "softmax(x: tensor[n, m, f32]) -> tensor[n, m, f32]"-like, for messages.
  std::string signature() const;

  // What the kernel returns for arrays of these element types and shapes
  // (in the order run() takes them), found without running it: for shape
  // functions such as torch's meta kernels. ShapeError as run() gives it.
  struct ArraySpec {
    ElementType type = ElementType::F32;
    std::vector<size_t> shape;
  };
  ArraySpec result_spec(const std::vector<ArraySpec>& inputs,
                        const std::map<std::string, HostNumber>& host_values = {}) const;

  // Runs the kernel on the program's device. ShapeError for the wrong
  // number of arrays, a wrong element type or rank, sizes that disagree on
  // a dimension, or a missing host value (naming the kernel, the argument
  // and both shapes); ComputeError for what goes wrong while it runs.
  Array operator()(const std::vector<Array>& inputs, const std::map<std::string, HostNumber>& host_values = {}) const;
  // The same on another device.
  Array run(const ComputeDevice& device, const std::vector<Array>& inputs,
            const std::map<std::string, HostNumber>& host_values = {}) const;

  // The kernel bound to `device` for arrays of these element types and
  // shapes and these host values: every check made, the dimensions bound,
  // the kernel specialised and compiled, once. The last few bindings of
  // each kernel are kept, so binding a signature again is a lookup (run()
  // binds, then runs the binding). ShapeError as run() gives it.
  std::shared_ptr<const BoundKernel> bind(const ComputeDevice& device, const std::vector<ArraySpec>& inputs,
                                          const std::map<std::string, HostNumber>& host_values = {}) const;

  Kernel(std::shared_ptr<ProgramImpl> program, KernelEntry* entry);

 private:
  std::shared_ptr<ProgramImpl> program_;
  KernelEntry* entry_;
};

// A kernel call bound once (Kernel::bind): what is left at each run is the
// kernel itself and the result's memory, as with a framework's dispatcher
// for a call it has seen before.
class ZYNTAX_API BoundKernel {
 public:
  struct State;  // api/bound_kernel_state.hpp
  explicit BoundKernel(std::unique_ptr<State> state);
  ~BoundKernel();

  const std::string& name() const;
  const std::vector<Kernel::ArraySpec>& inputs() const;
  const Kernel::ArraySpec& result() const;
  // The bytes of the result (its elements times their size).
  size_t result_bytes() const;
  // The bytes of the inputs and the result together.
  size_t bytes() const;

  // Runs on host memory: inputs[i] holds the i-th array (the bound element
  // type and shape, row-major), and the result is written to `out`
  // (result()'s size). On a CPU device the kernel reads and writes that
  // memory in place; elsewhere the arrays are copied to the device and the
  // result back. `out` may overlap an input (`x = f(x)` in place): the
  // result is then computed into fresh memory and copied over it.
  // ComputeError for what goes wrong while it runs.
  void run_host(const void* const* inputs, void* out) const;
  // Runs on arrays of the bound element types and shapes (a ShapeError
  // naming the argument and both shapes for any other).
  Array run(const std::vector<Array>& inputs) const;

 private:
  std::unique_ptr<State> state_;
};

// One argument of a program's function, or one part of what it returns:
// an array or a host number.
class ZYNTAX_API Argument {
 public:
  Argument(Array a) : is_array_(true), array_(std::move(a)) {}
  Argument(HostNumber n) : number_(n) {}
  Argument(int v) : number_(v) {}
  Argument(long v) : number_(v) {}
  Argument(long long v) : number_(v) {}
  Argument(double v) : number_(v) {}
  Argument(float v) : number_(v) {}
  bool is_array() const { return is_array_; }
  const Array& array() const { return array_; }        // when is_array()
  const HostNumber& number() const { return number_; }  // otherwise

 private:
  bool is_array_ = false;
  Array array_;
  HostNumber number_{0};
};

// A function of the program, run with its host code as `zyntax run` runs
// it: its compute blocks fuse (a chain of element-wise blocks, a softmax of
// four blocks, each one kernel), its host statements run between them.
//
//   zyntax::Program prog = zyntax::Program::load("layers.zynml", dev);
//   std::vector<zyntax::Array> y = prog.function("softmax_rows")({x});
//
// The program's functions, imports and config are bound; its other
// top-level statements never run. What it prints goes to standard output.
// Once a function runs compiled (host code's compiled tier: after a couple
// of calls, or at once for a @critical_path), calls with arguments of the
// same types go straight into the compiled code.
class ZYNTAX_API Function {
 public:
  // One parameter as declared: a tensor's element type where it names one.
  struct Param {
    std::string name;
    bool tensor = false;
    bool has_type = false;                    // a tensor that names its element type
    ElementType type = ElementType::F32;      // then: which
  };
  const std::string& name() const;
  const std::vector<Param>& params() const;
  // "softmax_rows(x: tensor[n, m, f32], t: f32)".
  const std::string& signature() const;

  // Calls it: arguments positionally, then host numbers by name. Returns
  // its result's arrays: one for a tensor, one per element of a tuple or
  // list of tensors, a 0-d array (f64 or i64) for a number, none for none.
  // ProgramError for arguments its parameters do not take, ComputeError
  // (with the source line and caret) for what goes wrong while it runs.
  std::vector<Array> operator()(const std::vector<Argument>& args, const std::map<std::string, HostNumber>& keywords = {}) const;
  // The same, with numbers (int and float results) as numbers.
  std::vector<Argument> call(const std::vector<Argument>& args, const std::map<std::string, HostNumber>& keywords = {}) const;
  // How its last call ran: "interpreted", "compiled" (compiled code, its
  // arguments bound by the interpreter) or "direct" (straight into the
  // compiled code); "" before the first call.
  std::string last_tier() const;

  Function(std::shared_ptr<ProgramImpl> program, const void* def);

 private:
  std::vector<Argument> run(const std::vector<Argument>& args, const std::map<std::string, HostNumber>& keywords,
                            bool numbers_as_arrays) const;

  std::shared_ptr<ProgramImpl> program_;
  const void* def_ = nullptr;  // its definition in the program's syntax tree
  std::string name_;
  std::vector<Param> params_;
  std::string signature_;
};

class ZYNTAX_API Program {
 public:
  // Reads and checks a program; ProgramError with its diagnostics when it
  // does not compile. Its top-level code is not run.
  static Program load(const std::string& path, const ComputeDevice& device = ComputeDevice::open("auto"));
  // The same from source text; `name` is the file name diagnostics show.
  static Program from_source(const std::string& source, const std::string& name = "<source>",
                             const ComputeDevice& device = ComputeDevice::open("auto"));

  // Every kernel the program defines, in source order.
  std::vector<std::string> kernel_names() const;
  // ProgramError naming the kernels there are (and the nearest name) when
  // there is none of that name, or saying why one cannot be called alone.
  Kernel kernel(const std::string& name) const;
  const ComputeDevice& device() const;

  // Every function defined at the program's top level, in source order.
  std::vector<std::string> function_names() const;
  // ProgramError naming the functions there are when there is none so named.
  Function function(const std::string& name) const;

  explicit Program(std::shared_ptr<ProgramImpl> impl);

 private:
  std::shared_ptr<ProgramImpl> impl_;
};

}  // namespace zyntax
