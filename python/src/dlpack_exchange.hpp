// Arrays in and out through DLPack (the protocol NumPy, PyTorch and others
// share): a producer's tensor becomes an Array (read in place on the CPU
// where it is contiguous), and an Array becomes a capsule any consumer
// takes without a copy.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>

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
// copy is false; else copied.
PyArray from_dlpack(pybind11::object producer, const ComputeDevice& device, bool copy);

// A "dltensor" capsule over the array (its host copy where a GPU holds it).
pybind11::capsule to_dlpack(const PyArray& a);

// "f32", "i64", ...: the element type's name; and back (ValueError if none).
ElementType element_type_named(const std::string& name);

}  // namespace zyntax::python
