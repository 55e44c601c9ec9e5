#include "torch_exchange.hpp"

#include "numpy_exchange.hpp"

#include <Python.h>

#include <vector>
#include <utility>

namespace py = pybind11;

namespace zyntax::python {

namespace {

// What is looked up once in the torch module: the Tensor type, the dtypes we
// take (compared by identity), torch.from_numpy. Never freed: the
// interpreter may be finalising when a static would be destroyed.
struct TorchNames {
  PyTypeObject* tensor = nullptr;
  std::vector<std::pair<PyObject*, ElementType>> dtypes;
  PyObject* from_numpy = nullptr;
};

// The names, once torch has been imported (by anyone); null before: then
// nothing is a tensor, and nothing imports torch for it. Called under the
// interpreter lock.
const TorchNames* torch_names() {
  static const TorchNames* names = nullptr;
  if (names) return names;
  PyObject* modules = PyImport_GetModuleDict();
  PyObject* torch = modules ? PyDict_GetItemString(modules, "torch") : nullptr;  // borrowed
  if (!torch) return nullptr;
  py::handle t(torch);
  auto* n = new TorchNames();
  n->tensor = reinterpret_cast<PyTypeObject*>(py::object(t.attr("Tensor")).release().ptr());
  const std::pair<const char*, ElementType> kinds[] = {
      {"float32", ElementType::F32}, {"float64", ElementType::F64}, {"float16", ElementType::F16},
      {"bfloat16", ElementType::BF16}, {"int8", ElementType::I8},   {"int16", ElementType::I16},
      {"int32", ElementType::I32},     {"int64", ElementType::I64}, {"uint8", ElementType::U8},
      {"bool", ElementType::Bool}};
  for (const auto& [name, type] : kinds) n->dtypes.emplace_back(py::object(t.attr(name)).release().ptr(), type);
  n->from_numpy = py::object(t.attr("from_numpy")).release().ptr();
  return names = n;
}

// An attribute by an interned name (made once): no string built per read.
py::object attribute(py::handle obj, const char* name, PyObject*& interned) {
  if (!interned) interned = PyUnicode_InternFromString(name);
  PyObject* v = PyObject_GetAttr(obj.ptr(), interned);
  if (!v) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(v);
}

// A method called without arguments, by an interned name: no bound method made.
py::object call_method(py::handle obj, const char* name, PyObject*& interned) {
  if (!interned) interned = PyUnicode_InternFromString(name);
  PyObject* v = PyObject_CallMethodNoArgs(obj.ptr(), interned);
  if (!v) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(v);
}

bool truth(const py::object& v) { return v.ptr() == Py_True; }

}  // namespace

std::optional<HostView> torch_view(py::handle obj, bool grad_handled) {
  const TorchNames* n = torch_names();
  if (!n || !PyObject_TypeCheck(obj.ptr(), n->tensor)) return std::nullopt;
  static PyObject *is_cpu, *requires_grad, *is_contiguous, *dtype_name, *shape_name, *data_ptr;
  if (!truth(attribute(obj, "is_cpu", is_cpu))) return std::nullopt;
  if (!grad_handled && truth(attribute(obj, "requires_grad", requires_grad))) return std::nullopt;
  if (!truth(call_method(obj, "is_contiguous", is_contiguous))) return std::nullopt;
  py::object dtype = attribute(obj, "dtype", dtype_name);
  std::optional<ElementType> type;
  for (const auto& [d, t] : n->dtypes)
    if (d == dtype.ptr()) type = t;
  if (!type) return std::nullopt;
  py::object shape_object = attribute(obj, "shape", shape_name);  // torch.Size, a tuple
  PyObject* sizes = shape_object.ptr();
  HostView v;
  v.type = *type;
  v.rank = static_cast<int>(PyTuple_GET_SIZE(sizes));
  if (v.rank > HostView::kMostAxes) return std::nullopt;
  for (int i = 0; i < v.rank; ++i) v.shape[static_cast<size_t>(i)] = PyLong_AsSsize_t(PyTuple_GET_ITEM(sizes, i));
  py::object address = call_method(obj, "data_ptr", data_ptr);
  v.data = PyLong_AsVoidPtr(address.ptr());
  return v;
}

std::optional<PyArray> array_from_torch(py::handle obj, const ComputeDevice& device, bool grad_handled) {
  std::optional<HostView> v = torch_view(obj, grad_handled);
  if (!v) return std::nullopt;
  std::vector<size_t> shape(v->shape.begin(), v->shape.begin() + v->rank);
  return array_held_by(obj, v->data, v->type, shape, device);
}

py::object torch_over(py::handle ndarray) {
  const TorchNames* n = torch_names();
  return py::reinterpret_borrow<py::object>(n->from_numpy)(ndarray);
}

}  // namespace zyntax::python
