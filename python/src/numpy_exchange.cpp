#include "numpy_exchange.hpp"

#include <pybind11/numpy.h>

#include <cstring>

namespace py = pybind11;

namespace zyntax::python {

const char* numpy_typestr(ElementType t) {
  switch (t) {
    case ElementType::F32: return "<f4";
    case ElementType::F64: return "<f8";
    case ElementType::F16: return "<f2";
    case ElementType::I8: return "|i1";
    case ElementType::I16: return "<i2";
    case ElementType::I32: return "<i4";
    case ElementType::I64: return "<i8";
    case ElementType::U8: return "|u1";
    case ElementType::U16: return "<u2";
    case ElementType::U32: return "<u4";
    case ElementType::U64: return "<u8";
    case ElementType::Bool: return "|b1";
    default: return nullptr;
  }
}

namespace {

std::optional<ElementType> element_type_of(const py::detail::PyArrayDescr_Proxy& d) {
  if (d.byteorder == '>') return std::nullopt;  // not this machine's order
  const size_t size = static_cast<size_t>(d.elsize);
  switch (d.kind) {
    case 'f': return size == 2 ? std::optional(ElementType::F16) : size == 4 ? std::optional(ElementType::F32)
                   : size == 8 ? std::optional(ElementType::F64) : std::nullopt;
    case 'i': return size == 1 ? std::optional(ElementType::I8) : size == 2 ? std::optional(ElementType::I16)
                   : size == 4 ? std::optional(ElementType::I32) : size == 8 ? std::optional(ElementType::I64) : std::nullopt;
    case 'u': return size == 1 ? std::optional(ElementType::U8) : size == 2 ? std::optional(ElementType::U16)
                   : size == 4 ? std::optional(ElementType::U32) : size == 8 ? std::optional(ElementType::U64) : std::nullopt;
    case 'b': return size == 1 ? std::optional(ElementType::Bool) : std::nullopt;
    default: return std::nullopt;
  }
}

const py::detail::PyArray_Proxy& proxy(py::handle a) { return *py::detail::array_proxy(a.ptr()); }

// NumPy's dtype for each element type, made once (parsing the type string
// per call costs as much as the rest); borrowed. Null where NumPy has none.
PyObject* numpy_descr(ElementType t) {
  const char* typestr = numpy_typestr(t);
  if (!typestr) return nullptr;
  static PyObject* dtypes[16] = {};
  PyObject*& dtype = dtypes[static_cast<size_t>(t) % 16];
  if (!dtype) dtype = py::dtype(typestr).release().ptr();
  return dtype;
}

}  // namespace

std::optional<PyArray> array_from_numpy(py::handle obj, const ComputeDevice& device) {
  if (!py::isinstance<py::array>(obj)) return std::nullopt;
  auto a = py::reinterpret_borrow<py::array>(obj);
  constexpr int kTakes = py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_ | py::detail::npy_api::NPY_ARRAY_ALIGNED_ |
                         py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  if ((a.flags() & kTakes) != kTakes) return std::nullopt;
  std::optional<ElementType> type = element_type_of(*py::detail::array_descriptor_proxy(proxy(a).descr));
  if (!type) return std::nullopt;
  std::vector<size_t> shape(static_cast<size_t>(a.ndim()));
  for (size_t i = 0; i < shape.size(); ++i) shape[i] = static_cast<size_t>(a.shape(static_cast<py::ssize_t>(i)));
  return array_held_by(a, a.mutable_data(), *type, shape, device);
}

PyArray array_held_by(py::handle holder, void* data, ElementType type, const std::vector<size_t>& shape,
                      const ComputeDevice& device) {
  if (device.description().type != "cpu") return PyArray{Array::from_host(device, data, type, shape), nullptr};
  PyObject* ref = holder.inc_ref().ptr();
  std::shared_ptr<void> owner(ref, [](void* p) {
    if (!Py_IsInitialized()) return;
    py::gil_scoped_acquire gil;
    Py_DECREF(static_cast<PyObject*>(p));
  });
  return PyArray{Array::from_host(device, data, type, shape, std::shared_ptr<const void>(owner)), owner};
}

py::object numpy_over(const PyArray& a) {
  const char* typestr = numpy_typestr(a.array.element_type());
  void* data = a.array.host_data();
  if (!typestr || (!data && a.array.size() > 0)) return py::none();
  static char empty;
  std::vector<py::ssize_t> shape(a.array.shape().begin(), a.array.shape().end());
  py::object base = py::cast(a);  // keeps the Array (and what it reads) alive
  return py::array(py::reinterpret_borrow<py::dtype>(numpy_descr(a.array.element_type())), shape, {}, data ? data : &empty, base);
}

std::optional<HostView> numpy_view(py::handle obj) {
  if (!py::isinstance<py::array>(obj)) return std::nullopt;
  const py::detail::PyArray_Proxy& a = proxy(obj);
  constexpr int kTakes = py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_ | py::detail::npy_api::NPY_ARRAY_ALIGNED_;
  if ((a.flags & kTakes) != kTakes || a.nd > HostView::kMostAxes) return std::nullopt;
  std::optional<ElementType> type = element_type_of(*py::detail::array_descriptor_proxy(a.descr));
  if (!type) return std::nullopt;
  HostView v;
  v.data = a.data;
  v.type = *type;
  v.rank = a.nd;
  for (int i = 0; i < a.nd; ++i) v.shape[static_cast<size_t>(i)] = a.dimensions[i];
  return v;
}

py::object numpy_empty(ElementType type, const std::vector<size_t>& shape) {
  PyObject* descr = numpy_descr(type);
  constexpr size_t kMostAxes = 64;  // as many as an Array has
  if (!descr || shape.size() > kMostAxes) return py::none();
  Py_intptr_t dims[kMostAxes];
  for (size_t i = 0; i < shape.size(); ++i) dims[i] = static_cast<Py_intptr_t>(shape[i]);
  auto& api = py::detail::npy_api::get();
  Py_INCREF(descr);  // NewFromDescr takes a reference
  PyObject* a = api.PyArray_NewFromDescr_(api.PyArray_Type_, descr, static_cast<int>(shape.size()), dims, nullptr, nullptr, 0, nullptr);
  if (!a) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(a);
}

}  // namespace zyntax::python
