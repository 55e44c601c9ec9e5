// Arrays in and out through DLPack (the protocol NumPy, PyTorch and others
// share): a producer's tensor becomes an Array (read in place on the CPU
// where it is contiguous; a CUDA GPU's memory copied on that GPU), and an
// Array becomes a capsule any consumer takes without a copy (host memory,
// or on request the GPU memory holding it).
#pragma once

#include <pybind11/pybind11.h>

#include <memory>

#include "zyntax/device_memory.hpp"
#include "zyntax/zyntax.hpp"

namespace zyntax::python {

// An Array and what keeps its memory alive (the producer's tensor, when
// the Array reads it in place).
struct PyArray {
  Array array;
  std::shared_ptr<void> owner;
};

// From any object with __dlpack__ (NumPy >= 1.22, torch): on `device`, in
// place when `device` is a CPU, the data is on the CPU and contiguous, and
// copy is false; a contiguous tensor in a CUDA GPU's memory (kDLCUDA) when
// `device` is that GPU ("cuda:N"), copied there on the GPU without a host
// copy (array_from_device_memory); else copied through host memory.
PyArray from_dlpack(pybind11::object producer, const ComputeDevice& device, bool copy);

// A "dltensor" capsule over the array: with on_device, over the GPU memory
// holding it (kDLCUDA) where a CUDA GPU holds its current bytes; else over
// host memory (its host copy where a GPU holds it).
pybind11::capsule to_dlpack(const PyArray& a, bool on_device = false);

// "f32", "i64", ...: the element type's name; and back (ValueError if none).
ElementType element_type_named(const std::string& name);

}  // namespace zyntax::python
