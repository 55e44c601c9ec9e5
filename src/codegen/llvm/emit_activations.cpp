// gelu, gelu_tanh, sigmoid and silu of f32 (and f16/bf16) values: computed
// in f64 with an inline exp and rounded once, so that the tails (results
// that are tiny, subnormal or cancel in f32) agree with the reference,
// which evaluates the same formulas in f64: within 1 ulp over the whole
// range. Scalar code the loop vectoriser widens; no libm calls.
#include "codegen/llvm/emitter.hpp"

#include <llvm/IR/Intrinsics.h>

#include <limits>

#include "support/normal_tail.hpp"

namespace zyntax::codegen {

namespace {

// 1.5 * 2^52: adding it rounds a double of magnitude < 2^51 to an integer
// held in the low mantissa bits (as kRoundMagic in emit_math.cpp for f32).
constexpr double kRoundMagic64 = 6755399441055744.0;

}  // namespace

llvm::Value* Emitter::horner_f64(llvm::Value* x, const double* c, size_t n) {
  llvm::Value* r = f64(c[0]);
  for (size_t i = 1; i < n; ++i) r = madd(r, x, f64(c[i]));
  return r;
}

// exp of a double to within 1e-14 relatively: n = round(x / ln2),
// r = x - n ln2 (ln2 in two parts, n ln2_hi exact), a degree-11 Taylor
// polynomial on |r| <= ln2/2, then 2^n in two exact steps so that subnormal
// results round once. NaN flows through; beyond the clamp exp is 0 or inf.
llvm::Value* Emitter::exp_f64(llvm::Value* x) {
  llvm::Type* i64t = b_.getInt64Ty();
  llvm::Value* lo = b_.CreateSelect(b_.CreateFCmpOLT(x, f64(-1080.0)), f64(-1080.0), x);
  llvm::Value* xc = b_.CreateSelect(b_.CreateFCmpOGT(lo, f64(710.0)), f64(710.0), lo);
  llvm::Value* f = madd(xc, f64(1.4426950408889634074), f64(kRoundMagic64));
  llvm::Value* n = b_.CreateFSub(f, f64(kRoundMagic64));
  llvm::Value* r = madd(n, f64(-1.90821492927058770002e-10), madd(n, f64(-6.93147180369123816490e-01), xc));
  static constexpr double kTaylor[] = {1.0 / 39916800, 1.0 / 3628800, 1.0 / 362880, 1.0 / 40320, 1.0 / 5040, 1.0 / 720,
                                       1.0 / 120,      1.0 / 24,      1.0 / 6,      0.5,          1.0,          1.0};
  llvm::Value* p = horner_f64(r, kTaylor, std::size(kTaylor));
  llvm::Value* ni = b_.CreateSub(b_.CreateBitCast(f, i64t), b_.CreateBitCast(f64(kRoundMagic64), i64t));
  llvm::Value* n1 = b_.CreateAShr(ni, 1);
  llvm::Value* n2 = b_.CreateSub(ni, n1);
  auto pow2 = [&](llvm::Value* k) {
    return b_.CreateBitCast(b_.CreateShl(b_.CreateAdd(k, b_.getInt64(1023)), 52), b_.getDoubleTy());
  };
  return b_.CreateFMul(b_.CreateFMul(p, pow2(n1)), pow2(n2));
}

// 1 + erf(d / sqrt(2)) = erfc(-d / sqrt(2)), with small relative error on
// both sides: a series near 0, exp(-z^2) erfcx(z) beyond (normal_tail.hpp).
llvm::Value* Emitter::twice_normal_cdf_f64(llvm::Value* d) {
  using namespace normal_tail;
  llvm::Value* s = b_.CreateFMul(d, f64(0.70710678118654752440));
  llvm::Value* z = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, s);
  llvm::Value* near = b_.CreateFAdd(f64(1.0), b_.CreateFMul(s, horner_f64(b_.CreateFMul(s, s), kErfSeries, std::size(kErfSeries))));
  llvm::Value* zc = b_.CreateSelect(b_.CreateFCmpOGT(z, f64(kErfcxLast)), f64(kErfcxLast), z);
  llvm::Value* u = b_.CreateFMul(b_.CreateFSub(b_.CreateFDiv(f64(1.0), b_.CreateFAdd(f64(2.0), zc)), f64(kErfcxCenter)),
                                 f64(1.0 / kErfcxHalfWidth));
  llvm::Value* erfc = b_.CreateFMul(exp_f64(b_.CreateFNeg(b_.CreateFMul(z, z))), horner_f64(u, kErfcxPoly, std::size(kErfcxPoly)));
  llvm::Value* far = b_.CreateSelect(b_.CreateFCmpOLT(d, f64(0.0)), erfc, b_.CreateFSub(f64(2.0), erfc));
  return b_.CreateSelect(b_.CreateFCmpOLT(z, f64(kErfSeriesEnd)), near, far);  // NaN: far, which is NaN
}

// The activation `fn` of an f32 `x`; nullptr for other functions.
llvm::Value* Emitter::activation_f32(MathFn fn, llvm::Value* x) {
  llvm::Value* d = to_f64(x);
  llvm::Value* r = nullptr;
  switch (fn) {
    case MathFn::Gelu: r = b_.CreateFMul(b_.CreateFMul(f64(0.5), d), twice_normal_cdf_f64(d)); break;
    case MathFn::GeluTanh: {  // 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)): no cancellation where tanh(u) nears -1
      llvm::Value* cube = b_.CreateFMul(b_.CreateFMul(b_.CreateFMul(f64(0.044715), d), d), d);
      llvm::Value* u2 = b_.CreateFMul(f64(2.0 * 0.79788456080286535588), b_.CreateFAdd(d, cube));
      r = b_.CreateFDiv(d, b_.CreateFAdd(f64(1.0), exp_f64(b_.CreateFNeg(u2))));
      break;
    }
    case MathFn::Sigmoid: r = b_.CreateFDiv(f64(1.0), b_.CreateFAdd(f64(1.0), exp_f64(b_.CreateFNeg(d)))); break;
    case MathFn::Silu: r = b_.CreateFDiv(d, b_.CreateFAdd(f64(1.0), exp_f64(b_.CreateFNeg(d)))); break;
    default: return nullptr;
  }
  r = b_.CreateFPTrunc(r, x->getType());
  if (fn == MathFn::Sigmoid) return r;
  return zero_at_minus_inf(x, r);
}

// The limit at -inf of the gelus and silu, -0, where their formulas give
// -inf * 0 or -inf / inf.
llvm::Value* Emitter::zero_at_minus_inf(llvm::Value* x, llvm::Value* g) {
  llvm::Value* minus_inf = b_.CreateFCmpOEQ(x, llvm::ConstantFP::getInfinity(x->getType(), /*negative=*/true));
  return b_.CreateSelect(minus_inf, llvm::ConstantFP::getNegativeZero(x->getType()), g);
}

}  // namespace zyntax::codegen
