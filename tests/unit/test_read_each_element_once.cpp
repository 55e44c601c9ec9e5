// read_each_element_once: a statement that reads an element several times
// reads it once, through a let, with results and errors unchanged.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "backends/reference/reference_executor.hpp"
#include "cir/passes/read_each_element_once.hpp"
#include "cir/passes/specialize.hpp"
#include "cir/printer.hpp"
#include "kernel_source.hpp"
#include "runtime/tensor_ops.hpp"
#include "support/diagnostics.hpp"

namespace zyntax {
namespace {

using testing::kernel_of;

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

void expect_same_results(const cir::Kernel& k, const cir::Kernel& r, const std::vector<Tensor>& inputs) {
  Tensor want = ReferenceKernel(k).run(inputs, {});
  Tensor got = ReferenceKernel(r).run(inputs, {});
  ASSERT_EQ(want.nbytes(), got.nbytes());
  EXPECT_EQ(std::memcmp(want.data(), got.data(), want.nbytes()), 0);
}

TEST(ReadEachElementOnce, ALongExpressionReadsEachElementOnce) {
  cir::Kernel k = cir::specialize(
      kernel_of("def f(x: tensor[n, f32], y: tensor[n, f32]) {\n return compute(x, y) {\n @kernel elementwise\n for i in 0..n:\n"
                "  out[i] = tanh(x[i] * 0.5) + y[i] * x[i] + exp(x[i]) - y[i]\n }\n}"),
      {{"n", 9}});
  cir::Kernel r = cir::read_each_element_once(k);
  std::string text = cir::print(r);
  EXPECT_EQ(count(text, "x[i]"), 1u) << text;
  EXPECT_EQ(count(text, "y[i]"), 1u) << text;
  EXPECT_LT(text.find("x[i]"), text.find("y[i]")) << "in the order first read:\n" << text;
  Random rng(5);
  Tensor x = rand_normal(rng, DType::F32, {9}), y = rand_normal(rng, DType::F32, {9});
  x.set(2, Scalar::of_float(NAN, DType::F32));
  y.set(4, Scalar::of_float(-0.0, DType::F32));
  expect_same_results(k, r, {x, y});
}

TEST(ReadEachElementOnce, AnIndexReadFirstThenTheElementItNames) {
  cir::Kernel k = cir::specialize(
      kernel_of("def f(t: tensor[v, f32], ids: tensor[n, i64]) {\n return compute(t, ids) {\n @kernel elementwise\n for i in 0..n:\n"
                "  out[i] = t[ids[i]] * t[ids[i]] + f32(ids[i])\n }\n}"),
      {{"t.d0", 4}, {"n", 6}});
  cir::Kernel r = cir::read_each_element_once(k);
  std::string text = cir::print(r);
  EXPECT_EQ(count(text, "ids[i]"), 1u) << text;
  EXPECT_EQ(count(text, " t["), 1u) << text;
  Random rng(6);
  Tensor t = rand_normal(rng, DType::F32, {4});
  Tensor ids = Tensor::zeros(DType::I64, {6});
  for (int64_t i = 0; i < 6; ++i) ids.set(i, Scalar::of_int(i % 4, DType::I64));
  expect_same_results(k, r, {t, ids});
}

// The first read that fails is the same read, whichever of two fails.
TEST(ReadEachElementOnce, TheFirstFailingReadIsTheSame) {
  cir::Kernel k = cir::specialize(
      kernel_of("def f(x: tensor[n, f32], y: tensor[m, f32]) {\n return compute(x, y) {\n @kernel elementwise\n for i in 0..n:\n"
                "  out[i] = y[i + 2] + x[i] * y[i + 2] + x[i + 1]\n }\n}"),
      {{"n", 5}, {"y.d0", 5}});
  cir::Kernel r = cir::read_each_element_once(k);
  ASSERT_NE(cir::print(r), cir::print(k));
  Tensor x = Tensor::zeros(DType::F32, {5}), y = Tensor::zeros(DType::F32, {5});
  auto message = [&](const cir::Kernel& kernel) {
    try {
      ReferenceKernel(kernel).run({x, y}, {});
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(message(k), "(no error)");
  EXPECT_EQ(message(r), message(k));
}

// Where a part of the expression may be skipped (a select, `and`), or an
// operation other than a read may fail (integer division), nothing moves.
TEST(ReadEachElementOnce, NotWhereEvaluationIsConditionalOrMayFailOtherwise) {
  for (const char* body : {"  out[i] = x[i] / x[i] + x[i]\n", "  out[i] = i64(x[i] > 0 and x[i] < 5) + x[i]\n"}) {
    cir::Kernel k = cir::specialize(
        kernel_of(std::string("def f(x: tensor[n, i64]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n") + body + " }\n}"),
        {{"n", 3}});
    EXPECT_EQ(cir::print(cir::read_each_element_once(k)), cir::print(k)) << body;
  }
}

// A store's indices are evaluated before its value: one that reads keeps
// the value's reads where they are.
TEST(ReadEachElementOnce, NotWhereTheStoreIndexReads) {
  cir::Kernel k = cir::specialize(
      kernel_of("def f(x: tensor[n, f32], ids: tensor[n, i64]) {\n return compute(x, ids) {\n @kernel fused\n out = zeros(n)\n"
                " for i in 0..n:\n  out[ids[i]] = x[i] * x[i]\n }\n}"),
      {{"n", 3}});
  EXPECT_EQ(cir::print(cir::read_each_element_once(k)), cir::print(k));
}

}  // namespace
}  // namespace zyntax
