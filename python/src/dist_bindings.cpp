// The collectives of zyntax.dist (python/zyntax/dist.py) over
// dist::Communicator::world(), on NumPy arrays read and written in place;
// in a build without MPI, a world of one rank.
#include "dist_bindings.hpp"

#include <pybind11/numpy.h>

#include <memory>
#include <optional>
#include <string>

#include "runtime/tensor.hpp"

#ifdef ZYNTAX_HAVE_MPI
#include "dist/communicator.hpp"
#endif

namespace py = pybind11;

namespace zyntax::python {

namespace {

// NumPy's kind and size of an element as our dtype.
DType dtype_of(const py::array& a) {
  py::dtype t = a.dtype();
  char kind = t.kind();
  size_t size = t.itemsize();
  if (kind == 'f' && size == 2) return DType::F16;
  if (kind == 'f' && size == 4) return DType::F32;
  if (kind == 'f' && size == 8) return DType::F64;
  if (kind == 'b' && size == 1) return DType::Bool;
  if (kind == 'i' && size == 1) return DType::I8;
  if (kind == 'i' && size == 2) return DType::I16;
  if (kind == 'i' && size == 4) return DType::I32;
  if (kind == 'i' && size == 8) return DType::I64;
  if (kind == 'u' && size == 1) return DType::U8;
  if (kind == 'u' && size == 2) return DType::U16;
  if (kind == 'u' && size == 4) return DType::U32;
  if (kind == 'u' && size == 8) return DType::U64;
  throw py::type_error("zyntax.dist: arrays of dtype " + std::string(py::str(t)) + " have no collective");
}

// The array's memory as a tensor, for the length of a call.
Tensor tensor_over(py::array& a, bool writes) {
  if (!(a.flags() & py::array::c_style)) throw py::value_error("zyntax.dist: the array is not C-contiguous");
  if (writes && !a.writeable()) throw py::value_error("zyntax.dist: the array is read-only");
  Shape shape;
  for (py::ssize_t i = 0; i < a.ndim(); ++i) shape.push_back(static_cast<int64_t>(a.shape(i)));
  auto* data = static_cast<unsigned char*>(writes ? a.mutable_data() : const_cast<void*>(a.data()));
  return Tensor::in_storage(dtype_of(a), std::move(shape), std::shared_ptr<unsigned char>(data, [](unsigned char*) {}));
}

#ifdef ZYNTAX_HAVE_MPI
dist::ReduceOp op_of(const std::string& op) {
  if (op == "sum" || op == "+") return dist::ReduceOp::Sum;
  if (op == "max") return dist::ReduceOp::Max;
  if (op == "min") return dist::ReduceOp::Min;
  if (op == "mean") return dist::ReduceOp::Mean;
  throw py::value_error("zyntax.dist: unknown op '" + op + "' (sum, max, min or mean)");
}
dist::Communicator& world() { return dist::Communicator::world(); }
#endif

}  // namespace

void bind_dist(py::module_& m) {
  m.def("dist_built_with_mpi", [] {
#ifdef ZYNTAX_HAVE_MPI
    return true;
#else
    return false;
#endif
  });
#ifdef ZYNTAX_HAVE_MPI
  m.def("dist_rank", [] { return world().rank(); });
  m.def("dist_size", [] { return world().size(); });
  m.def("dist_set_timeout", [](double s) { world().set_timeout(std::chrono::milliseconds(static_cast<int64_t>(s * 1000))); });
  m.def("dist_barrier", [] {
    py::gil_scoped_release release;
    world().barrier();
  });
  m.def("dist_all_reduce", [](py::array a, const std::string& op) {
    Tensor t = tensor_over(a, true);
    dist::ReduceOp o = op_of(op);
    py::gil_scoped_release release;
    world().all_reduce(t, o);
  });
  m.def("dist_broadcast", [](py::array a, int root) {
    Tensor t = tensor_over(a, true);
    py::gil_scoped_release release;
    world().broadcast(t, root);
  });
  m.def("dist_all_gather", [](py::array a, int axis) {
    Tensor t = tensor_over(a, false);
    Tensor all;
    {
      py::gil_scoped_release release;
      all = world().all_gather(t, axis);
    }
    std::vector<py::ssize_t> shape(all.shape().begin(), all.shape().end());
    py::array out(a.dtype(), shape);
    std::memcpy(out.mutable_data(), static_cast<const Tensor&>(all).data(), all.nbytes());
    return out;
  });
#endif
}

}  // namespace zyntax::python
