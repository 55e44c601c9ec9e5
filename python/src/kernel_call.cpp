#include "kernel_call.hpp"

#include <pybind11/numpy.h>

#include <cstring>
#include <map>
#include <optional>
#include <string>

#include "numpy_exchange.hpp"
#include "torch_exchange.hpp"

namespace py = pybind11;

namespace zyntax::python {

namespace {

// Calls moving fewer bytes than this keep the interpreter lock: giving it
// up and taking it back costs more than such a kernel.
constexpr size_t kReleaseLockBytes = 64 * 1024;

// The zyntax.Array type, looked up once.
const py::detail::type_info* array_type() {
  static const py::detail::type_info* t = py::detail::get_type_info(typeid(PyArray));
  return t;
}

void add_view(const HostView& v, std::vector<int64_t>& key) {
  key.push_back(static_cast<int64_t>(v.type));
  key.push_back(v.rank);
  key.insert(key.end(), v.shape.begin(), v.shape.begin() + v.rank);
}

}  // namespace

KernelCall::KernelCall(Kernel kernel, ComputeDevice device) : kernel_(std::move(kernel)), device_(std::move(device)) {
  for (const Kernel::HostValue& h : kernel_.host_values())
    host_names_.push_back(py::reinterpret_steal<py::object>(PyUnicode_InternFromString(h.name.c_str())));
}

bool KernelCall::read_arguments(const py::args& args, const py::kwargs& kwargs, ArgumentData& data, bool& torch_in) {
  const size_t n = args.size();
  if (n != kernel_.params().size() || n > kMostArrays) return false;  // host values given positionally, or a wrong count: reported there
  key_.clear();
  key_.push_back(static_cast<int64_t>(n));
  for (size_t i = 0; i < n; ++i) {
    PyObject* a = PyTuple_GET_ITEM(args.ptr(), static_cast<Py_ssize_t>(i));
    if (Py_TYPE(a) == array_type()->type) {
      py::detail::value_and_holder held = reinterpret_cast<py::detail::instance*>(a)->get_value_and_holder(array_type());
      const Array& array = static_cast<const PyArray*>(held.value_ptr())->array;
      const void* host = array.buffer().impl() ? array.host_data() : nullptr;
      if (!host && array.size() > 0) return false;  // not in host memory
      if (array.shape().size() > static_cast<size_t>(HostView::kMostAxes)) return false;
      HostView v;
      v.type = array.element_type();
      v.rank = static_cast<int>(array.shape().size());
      for (int d = 0; d < v.rank; ++d) v.shape[static_cast<size_t>(d)] = static_cast<int64_t>(array.shape()[static_cast<size_t>(d)]);
      add_view(v, key_);
      data[i] = host;
      continue;
    }
    std::optional<HostView> v = numpy_view(a);
    if (!v && (v = torch_view(a, /*grad_handled=*/false))) torch_in = true;
    if (!v) return false;
    add_view(*v, key_);
    data[i] = v->data;
  }
  // Host values: by name, each an int or a float (anything else, a name
  // the kernel does not read, device=: the general path).
  size_t found = 0;
  for (const py::object& name : host_names_) {
    PyObject* value = kwargs ? PyDict_GetItem(kwargs.ptr(), name.ptr()) : nullptr;  // borrowed
    if (!value) {
      key_.push_back(0);
      continue;
    }
    ++found;
    if (PyLong_CheckExact(value)) {
      int overflow = 0;
      long long i = PyLong_AsLongLongAndOverflow(value, &overflow);
      if (overflow) return false;
      key_.push_back(1);
      key_.push_back(i);
    } else if (PyFloat_CheckExact(value)) {
      double f = PyFloat_AS_DOUBLE(value);
      int64_t bits;
      std::memcpy(&bits, &f, sizeof bits);
      key_.push_back(2);
      key_.push_back(bits);
    } else {
      return false;
    }
  }
  return found == (kwargs ? kwargs.size() : 0);
}

std::shared_ptr<const BoundKernel> KernelCall::bound_for_key() {
  for (auto it = bindings_.rbegin(); it != bindings_.rend(); ++it)
    if (it->key == key_) return it->bound;
  // Not seen: bound through the kernel (its own cache, its checks and errors).
  std::vector<Kernel::ArraySpec> specs;
  size_t at = 1;
  for (int64_t i = 0; i < key_[0]; ++i) {
    Kernel::ArraySpec s;
    s.type = static_cast<ElementType>(key_[at++]);
    int64_t rank = key_[at++];
    for (int64_t d = 0; d < rank; ++d) s.shape.push_back(static_cast<size_t>(key_[at++]));
    specs.push_back(std::move(s));
  }
  std::map<std::string, HostNumber> host_values;
  for (size_t h = 0; h < host_names_.size(); ++h) {
    int64_t kind = key_[at++];
    if (kind == 0) continue;
    int64_t bits = key_[at++];
    double f;
    std::memcpy(&f, &bits, sizeof f);
    host_values.emplace(kernel_.host_values()[h].name, kind == 1 ? HostNumber(static_cast<long long>(bits)) : HostNumber(f));
  }
  std::shared_ptr<const BoundKernel> bound = kernel_.bind(device_, specs, host_values);
  if (bindings_.size() >= kMostBindings) bindings_.erase(bindings_.begin());
  bindings_.push_back({key_, bound});
  return bound;
}

py::object KernelCall::try_call(const py::args& args, const py::kwargs& kwargs) {
  bool torch_in = false;
  ArgumentData data{};  // on this call's stack: another thread may call while this one runs unlocked
  if (!read_arguments(args, kwargs, data, torch_in)) return py::object();
  std::shared_ptr<const BoundKernel> bound = bound_for_key();
  const Kernel::ArraySpec& result = bound->result();
  py::object out = numpy_empty(result.type, result.shape);
  if (out.is_none()) return py::object();  // NumPy has no such type
  void* out_data = py::detail::array_proxy(out.ptr())->data;
  if (bound->bytes() >= kReleaseLockBytes) {
    py::gil_scoped_release release;  // a kernel worth running without the interpreter lock
    bound->run_host(data.data(), out_data);
  } else {
    bound->run_host(data.data(), out_data);
  }
  return torch_in ? torch_over(out) : out;
}

void add_kernel_call(py::module_& m) {
  py::class_<KernelCall>(m, "KernelCall", "A kernel called as a function: the fast path of zyntax.KernelFunction")
      .def(py::init<Kernel, ComputeDevice>(), py::arg("kernel"), py::arg("device"))
      // The result, else the Python class's general path (_general).
      .def("__call__", [](py::object self, py::args args, py::kwargs kwargs) -> py::object {
        py::object r = self.cast<KernelCall&>().try_call(args, kwargs);
        if (r) return r;
        return self.attr("_general")(*args, **kwargs);
      });
}

}  // namespace zyntax::python
