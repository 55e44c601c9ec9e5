#include "dlpack_exchange.hpp"

#include <dlpack/dlpack.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace py = pybind11;

namespace zyntax::python {

namespace {

ElementType element_type_of(const DLDataType& t) {
  if (t.lanes != 1) throw py::type_error("zyntax: vector element types (lanes > 1) are not supported");
  switch (t.code) {
    case kDLFloat:
      if (t.bits == 16) return ElementType::F16;
      if (t.bits == 32) return ElementType::F32;
      if (t.bits == 64) return ElementType::F64;
      break;
    case kDLBfloat:
      if (t.bits == 16) return ElementType::BF16;
      break;
    case kDLInt:
      if (t.bits == 8) return ElementType::I8;
      if (t.bits == 16) return ElementType::I16;
      if (t.bits == 32) return ElementType::I32;
      if (t.bits == 64) return ElementType::I64;
      break;
    case kDLUInt:
      if (t.bits == 8) return ElementType::U8;
      if (t.bits == 16) return ElementType::U16;
      if (t.bits == 32) return ElementType::U32;
      if (t.bits == 64) return ElementType::U64;
      break;
    case 6:  // kDLBool (DLPack 0.8)
      if (t.bits == 8) return ElementType::Bool;
      break;
    default: break;
  }
  throw py::type_error("zyntax: no element type for DLPack type code " + std::to_string(t.code) + " of " +
                       std::to_string(t.bits) + " bits");
}

DLDataType dl_type_of(ElementType t) {
  switch (t) {
    case ElementType::F16: return {kDLFloat, 16, 1};
    case ElementType::F32: return {kDLFloat, 32, 1};
    case ElementType::F64: return {kDLFloat, 64, 1};
    case ElementType::BF16: return {kDLBfloat, 16, 1};
    case ElementType::I8: return {kDLInt, 8, 1};
    case ElementType::I16: return {kDLInt, 16, 1};
    case ElementType::I32: return {kDLInt, 32, 1};
    case ElementType::I64: return {kDLInt, 64, 1};
    case ElementType::U8: return {kDLUInt, 8, 1};
    case ElementType::U16: return {kDLUInt, 16, 1};
    case ElementType::U32: return {kDLUInt, 32, 1};
    case ElementType::U64: return {kDLUInt, 64, 1};
    case ElementType::Bool: return {kDLUInt, 8, 1};  // NumPy 1.24 and torch 1.13 read bool as this
  }
  return {kDLFloat, 32, 1};
}

size_t bytes_of(ElementType t) {
  switch (t) {
    case ElementType::F16: case ElementType::BF16: case ElementType::I16: case ElementType::U16: return 2;
    case ElementType::F32: case ElementType::I32: case ElementType::U32: return 4;
    case ElementType::F64: case ElementType::I64: case ElementType::U64: return 8;
    default: return 1;
  }
}

bool row_major(const DLTensor& t) {
  if (!t.strides) return true;
  int64_t expect = 1;
  for (int i = t.ndim - 1; i >= 0; --i) {
    if (t.shape[i] != 1 && t.strides[i] != expect) return false;
    expect *= t.shape[i];
  }
  return true;
}

// What an exported capsule owns: the array (its storage), the shape, and
// for an export of GPU memory what keeps that memory allocated.
struct Exported {
  DLManagedTensor managed;
  Array array;
  std::vector<int64_t> shape;
  std::shared_ptr<const void> keep;
};

}  // namespace

ElementType element_type_named(const std::string& name) {
  for (ElementType t : {ElementType::F32, ElementType::U32, ElementType::F16, ElementType::BF16, ElementType::F64, ElementType::I8,
                        ElementType::I16, ElementType::I32, ElementType::I64, ElementType::U8, ElementType::U16, ElementType::U64,
                        ElementType::Bool})
    if (name == element_type_name(t)) return t;
  throw py::value_error("zyntax: no element type '" + name + "'");
}

PyArray from_dlpack(py::object producer, const ComputeDevice& device, bool copy) {
  if (!py::hasattr(producer, "__dlpack__"))
    throw py::type_error("zyntax: expected an array (NumPy, torch or another DLPack producer), got " +
                         std::string(py::str(producer.get_type().attr("__name__"))));
  py::capsule capsule = producer.attr("__dlpack__")();
  if (std::strcmp(capsule.name(), "dltensor") != 0) throw py::value_error("zyntax: the DLPack capsule was already used");
  auto* managed = static_cast<DLManagedTensor*>(capsule.get_pointer());
  PyCapsule_SetName(capsule.ptr(), "used_dltensor");  // ours now: we call its deleter
  std::shared_ptr<DLManagedTensor> owner(managed, [](DLManagedTensor* m) {
    if (m->deleter) m->deleter(m);
  });
  const DLTensor& t = managed->dl_tensor;
  ElementType type = element_type_of(t.dtype);
  std::vector<size_t> shape;
  for (int i = 0; i < t.ndim; ++i) shape.push_back(static_cast<size_t>(t.shape[i]));
  if (t.device.device_type == kDLCUDA) {
    // A GPU's memory: copied on that GPU (never through host memory) when
    // `device` is that GPU.
    std::string gpu = "cuda:" + std::to_string(t.device.device_id);
    if (device.id() != gpu)
      throw py::value_error("zyntax: the array is in the memory of " + gpu + ", not of " + device.id() +
                            "; run on " + gpu + " or pass host memory (e.g. tensor.cpu())");
    if (!row_major(t))
      throw py::value_error("zyntax: a strided array in a GPU's memory; make it contiguous first (tensor.contiguous())");
    uint64_t address = reinterpret_cast<uintptr_t>(t.data) + t.byte_offset;
    py::gil_scoped_release release;  // waits for the GPU's queued work
    return {array_from_device_memory(device, address, type, shape), nullptr};
  }
  if (t.device.device_type != kDLCPU)
    throw py::value_error("zyntax: the array is on a DLPack device of type " + std::to_string(t.device.device_type) +
                          "; pass host memory (e.g. tensor.cpu()) or a CUDA GPU's memory");
  const char* data = static_cast<const char*>(t.data) + t.byte_offset;
  bool in_place = !copy && row_major(t) && device.description().type == "cpu";
  if (in_place) return {Array::from_host(device, data, type, shape, std::shared_ptr<const void>(owner)), owner};
  if (row_major(t)) return {Array::from_host(device, data, type, shape), nullptr};
  // Strided: gathered element by element into a contiguous copy.
  size_t n = 1, size = bytes_of(type);
  for (size_t d : shape) n *= d;
  std::vector<char> packed(n * size);
  std::vector<int64_t> index(shape.size(), 0);
  for (size_t k = 0; k < n; ++k) {
    int64_t offset = 0;
    for (size_t a = 0; a < shape.size(); ++a) offset += index[a] * t.strides[a];
    std::memcpy(packed.data() + k * size, data + offset * static_cast<int64_t>(size), size);
    for (size_t a = shape.size(); a-- > 0;) {
      if (++index[a] < static_cast<int64_t>(shape[a])) break;
      index[a] = 0;
    }
  }
  return {Array::from_host(device, packed.data(), type, shape), nullptr};
}

py::capsule to_dlpack(const PyArray& a, bool on_device) {
  auto* e = new Exported{};
  e->array = a.array;
  DeviceMemory gpu;
  if (on_device) gpu = device_memory_of(a.array);
  if (gpu.address) {
    e->keep = gpu.keep;  // the GPU's memory itself
  } else if (!e->array.host_data() && e->array.size() > 0) {
    // A GPU's array: its host copy.
    std::vector<char> bytes(e->array.bytes());
    e->array.copy_to_host(bytes.data(), bytes.size());
    e->array = Array::from_host(ComputeDevice::open("cpu"), bytes.data(), a.array.element_type(), a.array.shape());
  }
  for (size_t d : e->array.shape()) e->shape.push_back(static_cast<int64_t>(d));
  static char empty;  // a valid address for zero elements
  DLTensor& t = e->managed.dl_tensor;
  if (gpu.address) {
    t.data = reinterpret_cast<void*>(static_cast<uintptr_t>(gpu.address));
    t.device = {kDLCUDA, gpu.ordinal};
  } else {
    t.data = e->array.size() ? e->array.host_data() : &empty;
    t.device = {kDLCPU, 0};
  }
  t.ndim = static_cast<int>(e->shape.size());
  t.dtype = dl_type_of(e->array.element_type());
  t.shape = e->shape.data();
  t.strides = nullptr;  // row-major
  t.byte_offset = 0;
  e->managed.manager_ctx = e;
  e->managed.deleter = [](DLManagedTensor* m) { delete static_cast<Exported*>(m->manager_ctx); };
  // A consumer renames the capsule once it owns the tensor; else it is freed here.
  return py::capsule(&e->managed, "dltensor", [](PyObject* cap) {
    if (PyCapsule_IsValid(cap, "dltensor")) {
      auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap, "dltensor"));
      m->deleter(m);
    }
  });
}

}  // namespace zyntax::python
