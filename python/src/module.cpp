// The zyntax Python extension (_zyntax): devices, arrays exchanged through
// DLPack, ZynML programs and their kernels, and the op library's forward
// and backward ops that zyntax.torch wraps as autograd functions. The
// Python package (python/zyntax) is the interface users see.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <string>
#include <vector>

#include "dlpack_exchange.hpp"
#include "kernel_call.hpp"
#include "dist_bindings.hpp"
#include "numpy_exchange.hpp"
#include "torch_exchange.hpp"
#include "zyntax/zyntax.hpp"

namespace py = pybind11;
using namespace zyntax;
using zyntax::python::PyArray;

namespace {

// Rows of the last axis: (product of the others, the last).
std::pair<size_t, size_t> rows_of(const Array& a, const char* op) {
  if (a.shape().empty()) throw ShapeError(std::string(op) + ": a 0-d array has no rows");
  size_t len = a.shape().back();
  return {len ? a.size() / len : 0, len};
}

// NCHW input and OIHW weights.
Conv2dShape conv_shape(const Array& x, const Array& w, size_t stride_h, size_t stride_w, size_t pad_h, size_t pad_w) {
  if (x.shape().size() != 4 || w.shape().size() != 4)
    throw ShapeError("conv2d: the input must be 4-D [batch, channels, height, width] and the weight [out, in, kh, kw]");
  Conv2dShape s;
  s.batch = x.shape()[0], s.in_channels = x.shape()[1], s.height = x.shape()[2], s.width = x.shape()[3];
  s.out_channels = w.shape()[0], s.kernel_h = w.shape()[2], s.kernel_w = w.shape()[3];
  s.stride_h = stride_h, s.stride_w = stride_w, s.pad_h = pad_h, s.pad_w = pad_w;
  if (w.shape()[1] != s.in_channels)
    throw ShapeError("conv2d: the input has " + std::to_string(s.in_channels) + " channels, the weight takes " +
                     std::to_string(w.shape()[1]));
  if (stride_h == 0 || stride_w == 0) throw ShapeError("conv2d: strides must be positive");
  if (s.height + 2 * pad_h < s.kernel_h || s.width + 2 * pad_w < s.kernel_w)
    throw ShapeError("conv2d: the kernel is larger than the padded input");
  return s;
}

std::string shape_text(const std::vector<size_t>& s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

// (seq, heads, kv_heads, head_dim) of q [seq, heads, hd] and k, v [seq, kv_heads, hd].
std::tuple<size_t, size_t, size_t, size_t> attention_shape(const Array& q, const Array& k, const Array& v) {
  const auto& sq = q.shape();
  const auto& sk = k.shape();
  if (sq.size() != 3 || sk.size() != 3 || v.shape() != sk || sk[0] != sq[0] || sk[2] != sq[2] || !sk[1] || sq[1] % sk[1])
    throw ShapeError("causal_attention: q must be [seq, heads, head_dim] and k, v [seq, kv_heads, head_dim] with heads a "
                     "multiple of kv_heads; got q " + shape_text(sq) + ", k " + shape_text(sk) + ", v " + shape_text(v.shape()));
  return {sq[0], sq[1], sk[1], sq[2]};
}

PyArray shaped(Buffer b, std::vector<size_t> shape) { return {Array(std::move(b), std::move(shape)), nullptr}; }

std::vector<Array> arrays_of(const std::vector<PyArray*>& in) {
  std::vector<Array> out;
  for (const PyArray* a : in) out.push_back(a->array);
  return out;
}

// A host value from Python: an integer (int, NumPy's integers, anything
// with __index__) exactly, over 64 bits; anything else as a float.
HostNumber host_number(const std::string& name, py::handle v) {
  if (!PyFloat_Check(v.ptr()) && PyIndex_Check(v.ptr())) {
    py::int_ i = py::reinterpret_steal<py::int_>(PyNumber_Index(v.ptr()));
    if (!i) throw py::error_already_set();
    int overflow = 0;
    long long n = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
    if (overflow)
      throw ShapeError("host value '" + name + "' is " + py::str(i).cast<std::string>() + ", beyond a 64-bit integer");
    return HostNumber(n);
  }
  return HostNumber(py::cast<double>(py::float_(py::reinterpret_borrow<py::object>(v))));
}

}  // namespace

PYBIND11_MODULE(_zyntax, m) {
  python::bind_dist(m);
  m.doc() = "Zyntax Compute: ZynML kernels and the op library from Python";
  m.attr("__version__") = version();

  static py::exception<ShapeError> shape_error(m, "ShapeError", PyExc_ValueError);
  static py::exception<ComputeError> compute_error(m, "ComputeError", PyExc_RuntimeError);
  static py::exception<ProgramError> program_error(m, "ProgramError", PyExc_Exception);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ShapeError& e) {
      PyErr_SetString(shape_error.ptr(), e.what());
    } catch (const ComputeError& e) {
      PyErr_SetString(compute_error.ptr(), e.what());
    } catch (const ProgramError& e) {
      PyErr_SetString(program_error.ptr(), e.what());
    }
  });

  // zyntax.torch's fast path: a CPU tensor read in place (its gradient is the
  // caller's business) and a result as a CPU tensor over its memory; None
  // where either needs the general path.
  m.def("array_from_torch", [](py::handle t, const ComputeDevice& d) -> py::object {
    std::optional<PyArray> a = python::array_from_torch(t, d, /*grad_handled=*/true);
    return a ? py::cast(std::move(*a)) : py::none();
  }, py::arg("tensor"), py::arg("device"));
  m.def("torch_over", [](const PyArray& a) -> py::object {
    py::object over = python::numpy_over(a);
    return over.is_none() ? over : python::torch_over(over);
  }, py::arg("array"));

  m.def("devices", [] {
    py::list out;
    for (const DeviceDescription& d : compute_devices()) {
      py::dict e;
      e["id"] = d.id;
      e["type"] = d.type;
      e["name"] = d.name;
      e["backend"] = d.backend;
      e["memory"] = d.memory;
      e["cores"] = d.cores;
      out.append(e);
    }
    return out;
  });

  py::class_<PyArray>(m, "Array", "An array on a compute device (shared storage, like a tensor)")
      .def_static("from_dlpack", &python::from_dlpack, py::arg("producer"), py::arg("device"), py::arg("copy") = false,
                  "From a NumPy array, torch tensor or any __dlpack__ producer; in place on the CPU unless copy")
      .def_property_readonly("shape", [](const PyArray& a) { return py::tuple(py::cast(a.array.shape())); })
      .def_property_readonly("dtype", [](const PyArray& a) { return std::string(element_type_name(a.array.element_type())); })
      .def_property_readonly("device", [](const PyArray& a) { return a.array.buffer().device(); })
      .def("__dlpack__", [](const PyArray& a, py::object /*stream*/) { return python::to_dlpack(a); }, py::arg("stream") = py::none())
      .def("__dlpack_device__", [](const PyArray&) { return py::make_tuple(1, 0); })  // exported as host memory
      .def("to_dlpack", [](const PyArray& a, bool on_device) { return python::to_dlpack(a, on_device); },
           py::arg("on_device") = false,
           "A DLPack capsule over the array: with on_device, over the GPU memory holding it where a CUDA GPU "
           "does (no copy), else over host memory")
      .def("host_array_interface", [](const PyArray& a) -> py::object {
        // NumPy's __array_interface__ over the array's host memory, writable;
        // None where it is not in host memory or NumPy has no such type (bf16).
        const char* typestr = python::numpy_typestr(a.array.element_type());
        void* data = a.array.host_data();
        if (!typestr || (!data && a.array.size() > 0)) return py::none();
        static char empty;
        py::dict d;
        d["shape"] = py::tuple(py::cast(a.array.shape()));
        d["typestr"] = typestr;
        d["data"] = py::make_tuple(reinterpret_cast<uintptr_t>(data ? data : &empty), false);
        d["version"] = 3;
        return d;
      })
      .def_property_readonly("device_address", [](const PyArray& a) { return device_memory_of(a.array).address; },
                             "The address of the elements in a CUDA GPU's memory where the GPU holds them, else 0")
      .def("__repr__", [](const PyArray& a) {
        std::string s = "zyntax.Array(shape=(";
        for (size_t i = 0; i < a.array.shape().size(); ++i) s += (i ? ", " : "") + std::to_string(a.array.shape()[i]);
        if (a.array.shape().size() == 1) s += ",";
        return s + "), dtype=" + element_type_name(a.array.element_type()) + ", device=" + a.array.buffer().device() + ")";
      });

  py::class_<ComputeDevice>(m, "Device", "A compute device: 'auto', 'cpu', 'cpu:reference', 'cuda:0', 'vulkan:0', ...")
      .def(py::init([](const std::string& id) { return ComputeDevice::open(id); }), py::arg("id") = "auto")
      .def_property_readonly("id", [](const ComputeDevice& d) { return d.id(); })
      .def_property_readonly("type", [](const ComputeDevice& d) { return d.description().type; })
      .def_property_readonly("name", [](const ComputeDevice& d) { return d.description().name; })
      .def("sync", &ComputeDevice::sync)
      .def_property("fusion", &ComputeDevice::fusion, &ComputeDevice::set_fusion,
                    "Whether the op library's ops on this handle wait, their results pending, and run fused when a "
                    "value is needed (the default); False: each op runs when it is called")
      .def("last_run_bytes_copied_in", [](const ComputeDevice& d) { return last_run_bytes_copied_in(d); },
           "Bytes of inputs the last kernel run on this CUDA GPU copied from host memory (0 for other devices)")
      .def("__repr__", [](const ComputeDevice& d) { return "zyntax.Device('" + d.id() + "')"; })
      // The op library on arrays of f32 (forward and backward).
      .def("matmul", [](const ComputeDevice& d, const PyArray& a, const PyArray& b, bool ta, bool tb) {
        const auto& sa = a.array.shape();
        const auto& sb = b.array.shape();
        if (sa.size() != 2 || sb.size() != 2) throw ShapeError("matmul: both arrays must be 2-D");
        size_t m = ta ? sa[1] : sa[0], k = ta ? sa[0] : sa[1], n = tb ? sb[0] : sb[1];
        size_t kb = tb ? sb[1] : sb[0];
        if (k != kb)
          throw ShapeError("matmul: argument a has shape " + std::to_string(sa[0]) + "x" + std::to_string(sa[1]) +
                           " and b " + std::to_string(sb[0]) + "x" + std::to_string(sb[1]) + ": inner sizes " + std::to_string(k) +
                           " and " + std::to_string(kb) + " differ");
        if (ta && tb) throw ShapeError("matmul: one of the two may be transposed, not both");
        Buffer c = ta ? d.matmul_transposed_a(a.array.buffer(), b.array.buffer(), m, k, n)
                 : tb ? d.matmul_transposed_b(a.array.buffer(), b.array.buffer(), m, k, n)
                      : d.matmul(a.array.buffer(), b.array.buffer(), m, k, n);
        return shaped(c, {m, n});
      }, py::arg("a"), py::arg("b"), py::arg("transpose_a") = false, py::arg("transpose_b") = false)
      .def("softmax", [](const ComputeDevice& d, const PyArray& x) {
        auto [rows, len] = rows_of(x.array, "softmax");
        return shaped(d.softmax(x.array.buffer(), rows, len), x.array.shape());
      })
      .def("softmax_backward", [](const ComputeDevice& d, const PyArray& y, const PyArray& g) {
        auto [rows, len] = rows_of(y.array, "softmax_backward");
        return shaped(d.softmax_backward(y.array.buffer(), g.array.buffer(), rows, len), y.array.shape());
      })
      .def("rms_norm", [](const ComputeDevice& d, const PyArray& x, const PyArray& w, float eps) {
        auto [rows, len] = rows_of(x.array, "rms_norm");
        return shaped(d.rms_norm(x.array.buffer(), w.array.buffer(), rows, len, eps), x.array.shape());
      })
      .def("rms_norm_backward", [](const ComputeDevice& d, const PyArray& x, const PyArray& w, const PyArray& g, float eps) {
        auto [rows, len] = rows_of(x.array, "rms_norm_backward");
        auto [gx, gw] = d.rms_norm_backward(x.array.buffer(), w.array.buffer(), g.array.buffer(), rows, len, eps);
        return py::make_tuple(shaped(gx, x.array.shape()), shaped(gw, {len}));
      })
      .def("conv2d", [](const ComputeDevice& d, const PyArray& x, const PyArray& w, const PyArray* bias, size_t stride_h,
                        size_t stride_w, size_t pad_h, size_t pad_w) {
        Conv2dShape s = conv_shape(x.array, w.array, stride_h, stride_w, pad_h, pad_w);
        Buffer y = bias ? d.conv2d(x.array.buffer(), w.array.buffer(), bias->array.buffer(), s)
                        : d.conv2d(x.array.buffer(), w.array.buffer(), s);
        return shaped(y, {s.batch, s.out_channels, s.out_height(), s.out_width()});
      }, py::arg("x"), py::arg("weight"), py::arg("bias").none(true), py::arg("stride_h"), py::arg("stride_w"),
         py::arg("pad_h"), py::arg("pad_w"))
      .def("conv2d_backward", [](const ComputeDevice& d, const PyArray& g, const PyArray& x, const PyArray& w, size_t stride_h,
                                 size_t stride_w, size_t pad_h, size_t pad_w) {
        Conv2dShape s = conv_shape(x.array, w.array, stride_h, stride_w, pad_h, pad_w);
        auto [gx, gw, gb] = d.conv2d_backward(g.array.buffer(), x.array.buffer(), w.array.buffer(), s);
        return py::make_tuple(shaped(gx, x.array.shape()), shaped(gw, w.array.shape()), shaped(gb, {s.out_channels}));
      })
      .def("embedding", [](const ComputeDevice& d, const PyArray& weight, const PyArray& ids) {
        if (weight.array.shape().size() != 2) throw ShapeError("embedding: the weight must be 2-D [vocab, dim]");
        size_t dim = weight.array.shape()[1];
        std::vector<size_t> shape = ids.array.shape();
        shape.push_back(dim);
        return shaped(d.embedding(weight.array.buffer(), ids.array.buffer(), ids.array.size(), dim), shape);
      })
      .def("embedding_backward", [](const ComputeDevice& d, const PyArray& g, const PyArray& ids, size_t vocab) {
        size_t dim = g.array.shape().back();
        return shaped(d.embedding_backward(g.array.buffer(), ids.array.buffer(), vocab, ids.array.size(), dim), {vocab, dim});
      })
      .def("layer_norm", [](const ComputeDevice& d, const PyArray& x, const PyArray& gamma, const PyArray& beta, float eps) {
        auto [rows, len] = rows_of(x.array, "layer_norm");
        return shaped(d.layer_norm(x.array.buffer(), gamma.array.buffer(), beta.array.buffer(), rows, len, eps), x.array.shape());
      })
      .def("layer_norm_backward", [](const ComputeDevice& d, const PyArray& x, const PyArray& gamma, const PyArray& g, float eps) {
        auto [rows, len] = rows_of(x.array, "layer_norm_backward");
        auto [gx, gg, gb] = d.layer_norm_backward(x.array.buffer(), gamma.array.buffer(), g.array.buffer(), rows, len, eps);
        return py::make_tuple(shaped(gx, x.array.shape()), shaped(gg, {len}), shaped(gb, {len}));
      })
      // x: [seq, heads, head_dim] (head_dim even), positions offset + t.
      .def("rope", [](const ComputeDevice& d, const PyArray& x, size_t offset, bool backward) {
        const auto& s = x.array.shape();
        if (s.size() != 3 || s[2] % 2) throw ShapeError("rope: x must be [seq, heads, head_dim] with head_dim even, got " + shape_text(s));
        Buffer y = backward ? d.rope_backward(x.array.buffer(), s[0], s[1], s[2], offset)
                            : d.rope(x.array.buffer(), s[0], s[1], s[2], offset);
        return shaped(y, s);
      }, py::arg("x"), py::arg("offset") = 0, py::arg("backward") = false)
      // q: [seq, heads, head_dim]; k, v: [seq, kv_heads, head_dim], heads a multiple of kv_heads.
      .def("causal_attention", [](const ComputeDevice& d, const PyArray& q, const PyArray& k, const PyArray& v) {
        auto [seq, heads, kv_heads, hd] = attention_shape(q.array, k.array, v.array);
        return shaped(d.causal_attention(q.array.buffer(), k.array.buffer(), v.array.buffer(), seq, heads, kv_heads, hd),
                      q.array.shape());
      })
      .def("causal_attention_backward", [](const ComputeDevice& d, const PyArray& g, const PyArray& q, const PyArray& k,
                                           const PyArray& v) {
        auto [seq, heads, kv_heads, hd] = attention_shape(q.array, k.array, v.array);
        if (g.array.shape() != q.array.shape())
          throw ShapeError("causal_attention_backward: the gradient is " + shape_text(g.array.shape()) + ", the output " +
                           shape_text(q.array.shape()));
        auto [gq, gk, gv] = d.causal_attention_backward(g.array.buffer(), q.array.buffer(), k.array.buffer(),
                                                        v.array.buffer(), seq, heads, kv_heads, hd);
        return py::make_tuple(shaped(gq, q.array.shape()), shaped(gk, k.array.shape()), shaped(gv, v.array.shape()));
      })
      // logits: [n, vocab] f32; targets: [n] u32. (mean loss, its gradient
      // [n, vocab]); targets equal to pad_id count for nothing.
      .def("cross_entropy", [](const ComputeDevice& d, const PyArray& logits, const PyArray& targets, uint32_t pad_id) {
        const auto& s = logits.array.shape();
        if (s.size() != 2) throw ShapeError("cross_entropy: logits must be [n, classes], got " + shape_text(s));
        if (targets.array.shape() != std::vector<size_t>{s[0]})
          throw ShapeError("cross_entropy: logits are " + shape_text(s) + ", so targets must be [" + std::to_string(s[0]) +
                           "], got " + shape_text(targets.array.shape()));
        auto [loss, grad] = d.cross_entropy_forward_backward(logits.array.buffer(), targets.array.buffer(), s[0], s[1], pad_id);
        return py::make_tuple(loss, shaped(grad, s));
      })
      // One AdamW step, in place on param, m and v (arrays over the caller's memory on a CPU device).
      .def("adamw_step", [](const ComputeDevice& d, const PyArray& param, const PyArray& grad, const PyArray& m,
                            const PyArray& v, float lr, float beta1, float beta2, float eps, float weight_decay, size_t step) {
        for (const PyArray* a : {&grad, &m, &v})
          if (a->array.size() != param.array.size())
            throw ShapeError("adamw_step: the parameter is " + shape_text(param.array.shape()) + ", an argument " +
                             shape_text(a->array.shape()));
        Buffer p = param.array.buffer(), mb = m.array.buffer(), vb = v.array.buffer();
        d.adamw_step(p, grad.array.buffer(), mb, vb, lr, beta1, beta2, eps, weight_decay, step);
      });

  py::class_<Kernel>(m, "Kernel", "A compute block of a ZynML program")
      .def_property_readonly("name", &Kernel::name)
      // (element type, shape) of the result for [(element type, shape)] of
      // the arrays, found without running the kernel.
      .def("result_spec", [](const Kernel& k, const std::vector<std::pair<std::string, std::vector<size_t>>>& arrays,
                             const py::dict& given) {
        std::vector<Kernel::ArraySpec> specs;
        for (const auto& [type, shape] : arrays) specs.push_back({python::element_type_named(type), shape});
        std::map<std::string, HostNumber> host_values;
        for (auto [key, value] : given) host_values.emplace(py::cast<std::string>(key), host_number(py::cast<std::string>(key), value));
        Kernel::ArraySpec out = k.result_spec(specs, host_values);
        return py::make_tuple(std::string(element_type_name(out.type)), py::tuple(py::cast(out.shape)));
      }, py::arg("arrays"), py::arg("host_values") = py::dict())
      .def_property_readonly("signature", &Kernel::signature)
      .def_property_readonly("params", [](const Kernel& k) {
        py::list out;
        for (const Kernel::Param& p : k.params())
          out.append(py::make_tuple(p.name, std::string(element_type_name(p.type)), py::tuple(py::cast(p.shape))));
        return out;
      })
      .def_property_readonly("host_values", [](const Kernel& k) {
        py::list out;
        for (const Kernel::HostValue& h : k.host_values()) out.append(py::make_tuple(h.name, h.integer ? "int" : "float"));
        return out;
      })
      .def("run", [](const Kernel& k, const ComputeDevice& d, const std::vector<PyArray*>& inputs, const py::dict& given) {
        std::map<std::string, HostNumber> host_values;
        for (auto [key, value] : given) host_values.emplace(py::cast<std::string>(key), host_number(py::cast<std::string>(key), value));
        std::vector<Array> arrays = arrays_of(inputs);
        py::gil_scoped_release release;  // kernels run without the interpreter lock
        return PyArray{k.run(d, arrays, host_values), nullptr};
      }, py::arg("device"), py::arg("inputs"), py::arg("host_values") = py::dict())
      // The fast path of a call: arrays (zyntax.Array, or NumPy arrays and
      // CPU torch tensors taken as they are) in, a NumPy array over the
      // result out (a torch tensor over it where a torch tensor came in; the
      // Array where its elements are not in host memory). None, having run
      // nothing, where an argument needs the general path (CUDA tensors,
      // tensors that need a gradient, lists, arrays that must be copied or
      // converted first).
      .def("call", [](const Kernel& k, const ComputeDevice& d, const py::tuple& args, const py::dict& given) -> py::object {
        std::vector<Array> arrays;
        std::vector<PyArray> taken;  // NumPy arrays and tensors read in place, kept alive for the call
        arrays.reserve(args.size());
        taken.reserve(args.size());
        bool torch_in = false;
        for (py::handle a : args) {
          if (py::isinstance<PyArray>(a)) {
            arrays.push_back(a.cast<PyArray&>().array);
            continue;
          }
          std::optional<PyArray> p = python::array_from_numpy(a, d);
          if (!p && (p = python::array_from_torch(a, d))) torch_in = true;
          if (!p) return py::none();
          taken.push_back(std::move(*p));
          arrays.push_back(taken.back().array);
        }
        std::map<std::string, HostNumber> host_values;
        for (auto [key, value] : given) host_values.emplace(py::cast<std::string>(key), host_number(py::cast<std::string>(key), value));
        PyArray out;
        {
          py::gil_scoped_release release;  // kernels run without the interpreter lock
          out.array = k.run(d, arrays, host_values);
        }
        py::object over = python::numpy_over(out);
        if (over.is_none()) return py::cast(std::move(out));
        return torch_in ? python::torch_over(over) : over;
      }, py::arg("device"), py::arg("args"), py::arg("host_values"));

  python::add_kernel_call(m);

  py::class_<Function>(m, "Function", "A function of a ZynML program, run with its host code")
      .def_property_readonly("name", &Function::name)
      .def_property_readonly("signature", &Function::signature)
      .def_property_readonly("last_tier", &Function::last_tier)
      .def_property_readonly("params", [](const Function& f) {
        py::list out;
        for (const Function::Param& p : f.params())
          out.append(py::make_tuple(p.name, p.tensor, p.has_type ? py::object(py::str(element_type_name(p.type))) : py::object(py::none())));
        return out;
      })
      // args: arrays (zyntax.Array, or DLPack producers such as NumPy arrays,
      // read in place on `device`) and numbers, in order; keywords: numbers
      // by name. Returns a list: an Array per tensor, Python ints and floats
      // for numbers.
      .def("call", [](const Function& f, const py::sequence& args, const py::dict& keywords, const ComputeDevice& dev) {
        std::vector<Argument> in;
        std::vector<PyArray> taken;  // arrays read from DLPack producers, kept alive for the call
        const size_t n = args.size();
        in.reserve(n);
        taken.reserve(n);
        for (size_t i = 0; i < n; ++i) {
          py::handle a = args[i];
          if (py::isinstance<PyArray>(a)) {
            in.emplace_back(a.cast<PyArray&>().array);
          } else if (std::optional<PyArray> np = python::array_from_numpy(a, dev)) {
            taken.push_back(std::move(*np));
            in.emplace_back(taken.back().array);
          } else if (!PyFloat_Check(a.ptr()) && !PyLong_Check(a.ptr()) && py::hasattr(a, "__dlpack__")) {
            taken.push_back(python::from_dlpack(py::reinterpret_borrow<py::object>(a), dev, /*copy=*/false));
            in.emplace_back(taken.back().array);
          } else {
            in.emplace_back(host_number(i < f.params().size() ? f.params()[i].name : "argument", a));
          }
        }
        std::map<std::string, HostNumber> given;
        for (auto [key, value] : keywords) given.emplace(py::cast<std::string>(key), host_number(py::cast<std::string>(key), value));
        std::vector<Argument> out;
        {
          py::gil_scoped_release release;  // kernels run without the interpreter lock
          out = f.call(in, given);
        }
        py::list result(out.size());
        for (size_t i = 0; i < out.size(); ++i) {
          const Argument& r = out[i];
          if (r.is_array()) result[i] = py::cast(PyArray{r.array(), nullptr});
          else if (r.number().is_integer()) result[i] = py::int_(r.number().integer());
          else result[i] = py::float_(r.number().value());
        }
        return result;
      }, py::arg("args"), py::arg("keywords"), py::arg("device"));

  py::class_<Program>(m, "Program", "A ZynML program: its kernels, compiled for a device")
      .def_static("load", [](const std::string& path, const ComputeDevice& d) { return Program::load(path, d); },
                  py::arg("path"), py::arg("device"))
      .def_static("from_source", [](const std::string& source, const std::string& name, const ComputeDevice& d) {
        return Program::from_source(source, name, d);
      }, py::arg("source"), py::arg("name"), py::arg("device"))
      .def_property_readonly("kernel_names", &Program::kernel_names)
      .def_property_readonly("device", &Program::device)
      .def("kernel", &Program::kernel, py::arg("name"))
      .def_property_readonly("function_names", &Program::function_names)
      .def("function", &Program::function, py::arg("name"));
}
