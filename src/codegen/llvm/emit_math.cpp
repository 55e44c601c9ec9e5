#include "codegen/llvm/emitter.hpp"

#include <llvm/IR/Intrinsics.h>

#include <limits>
#include <stdexcept>

namespace zyntax::codegen {

namespace {

// Adding 1.5 * 2^23 rounds a float of magnitude < 2^22 to the nearest
// integer n and leaves n in the low mantissa bits; with the exponent bias
// added to the constant, those bits shifted into place are the float 2^n.
constexpr double kRoundMagic = 12582912.0;

}  // namespace

using cir::Expr;

// ------------------------------------------------------------ library functions

llvm::Value* Emitter::libm1(const char* name, llvm::Value* x) {
  llvm::Type* d = b_.getDoubleTy();
  llvm::FunctionCallee fn = module_->getOrInsertFunction(target_.math_function(name), llvm::FunctionType::get(d, {d}, false));
  return b_.CreateCall(fn, {to_f64(x)});
}

// Two-argument libm function on the register type of `a` (computed in f64).
llvm::Value* Emitter::libm2(const char* name, llvm::Value* a, llvm::Value* c) {
  llvm::Type* d = b_.getDoubleTy();
  llvm::FunctionCallee fn = module_->getOrInsertFunction(target_.math_function(name), llvm::FunctionType::get(d, {d, d}, false));
  llvm::Value* r = b_.CreateCall(fn, {to_f64(a), to_f64(c)});
  return a->getType()->isDoubleTy() ? r : b_.CreateFPTrunc(r, a->getType());
}

llvm::Value* Emitter::madd(llvm::Value* a, llvm::Value* b, llvm::Value* c) {
  return b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {a->getType()}, {a, b, c});
}

llvm::Value* Emitter::exp_reduced(llvm::Value* r) {
  llvm::Value* p = f32c(1.9875691500e-4);
  for (double c : {1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1})
    p = madd(p, r, f32c(c));
  return b_.CreateFAdd(madd(p, b_.CreateFMul(r, r), r), f32c(1.0));
}

// min(max(x, lo), hi), but a NaN x stays NaN (and so flows through the
// polynomial and out, with no select at the end); one min and one max.
llvm::Value* Emitter::clamp_keeping_nan(llvm::Value* x, double lo, double hi) {
  llvm::Value* above_lo = b_.CreateSelect(b_.CreateFCmpOLT(x, f32c(lo)), f32c(lo), x);
  return b_.CreateSelect(b_.CreateFCmpOGT(above_lo, f32c(hi)), f32c(hi), above_lo);
}

// x - n ln2, with ln2 split so that n * ln2_hi is exact (Cody and Waite).
llvm::Value* Emitter::reduce_ln2(llvm::Value* x, llvm::Value* n) {
  return madd(n, f32c(2.12194440e-4), madd(n, f32c(-0.693359375), x));
}

llvm::Value* Emitter::fast_exp(llvm::Value* x) {
  // Beyond these, exp is inf or 0 anyway; clamping keeps 2^n in range.
  llvm::Value* xc = clamp_keeping_nan(x, -104.0, 89.0);
  llvm::Value* f = madd(xc, f32c(1.44269504088896341), f32c(kRoundMagic));
  llvm::Value* n = b_.CreateFSub(f, f32c(kRoundMagic));
  llvm::Value* p = exp_reduced(reduce_ln2(xc, n));
  // p * 2^n for n in [-150, 128], in two exact steps so that results
  // reaching the subnormal range round only once.
  llvm::Value* ni = b_.CreateSub(as_int(f), as_int(f32c(kRoundMagic)));
  llvm::Value* n1 = b_.CreateAShr(ni, 1);
  llvm::Value* n2 = b_.CreateSub(ni, n1);
  auto pow2 = [&](llvm::Value* k) { return as_float(b_.CreateShl(b_.CreateAdd(k, i32c(127)), 23)); };
  return b_.CreateFMul(b_.CreateFMul(p, pow2(n1)), pow2(n2));  // NaN stays NaN through p
}

// expm1(r) for |r| <= ln2/2 (and a little beyond): r + r^2 (1/2 + r P(r)),
// P fitted to within 2e-8 of expm1's relative value; no cancellation near 0.
llvm::Value* Emitter::expm1_reduced(llvm::Value* r) {
  llvm::Value* q = f32c(1.3941927457213378e-3);
  for (double c : {8.367779467143038e-3, 4.1666390952678996e-2, 1.6666534423138976e-1, 0.5}) q = madd(q, r, f32c(c));
  return madd(q, b_.CreateFMul(r, r), r);
}

// tanh |x| = e / (e + 2) with e = expm1(2|x|), the sign of x copied back:
// one formula over the whole range (no cancellation near 0, where e is
// about 2|x|). Beyond |x| = 9.1 tanh rounds to 1, so 2|x| stays where exp
// needs no range handling and 2^n is one shift of the rounding constant's
// bits; e = 2^n expm1(r) + (2^n - 1). A true divide: a reciprocal estimate
// would add an ulp, and the loop has enough other work to hide it. NaN
// flows through.
llvm::Value* Emitter::fast_tanh(llvm::Value* x) {
  llvm::Value* ax = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  llvm::Value* y = b_.CreateFMul(b_.CreateSelect(b_.CreateFCmpOGT(ax, f32c(9.1)), f32c(9.1), ax), f32c(2.0));
  llvm::Value* f = madd(y, f32c(1.44269504088896341), f32c(kRoundMagic + 127.0));
  llvm::Value* n = b_.CreateFSub(f, f32c(kRoundMagic + 127.0));
  llvm::Value* scale = as_float(b_.CreateShl(as_int(f), 23));  // 2^n
  llvm::Value* e = madd(scale, expm1_reduced(reduce_ln2(y, n)), b_.CreateFSub(scale, f32c(1.0)));
  llvm::Value* t = b_.CreateFDiv(e, b_.CreateFAdd(e, f32c(2.0)));
  return b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, t, x);
}

// erf of an f64 `d` to within 2e-8 (so erf of an f32 rounds to within
// 1 ulp): d P(d^2) / Q(d^2), a rational fitted to erf on [0, 3.92], beyond
// which erf rounds to ±1 in f32. Vector f64 arithmetic, no libm call.
llvm::Value* Emitter::erf_rational(llvm::Value* d) {
  llvm::Type* f64t = b_.getDoubleTy();
  auto c = [&](double v) { return llvm::ConstantFP::get(f64t, v); };
  // Clamped keeping NaN, as clamp_keeping_nan in f64.
  llvm::Value* lo = b_.CreateSelect(b_.CreateFCmpOLT(d, c(-3.92)), c(-3.92), d);
  llvm::Value* x = b_.CreateSelect(b_.CreateFCmpOGT(lo, c(3.92)), c(3.92), lo);
  llvm::Value* s = b_.CreateFMul(x, x);
  auto horner = [&](std::initializer_list<double> coefficients) {  // highest degree first
    llvm::Value* r = nullptr;
    for (double k : coefficients) r = r ? madd(r, s, c(k)) : c(k);
    return r;
  };
  llvm::Value* p = horner({2.0428020050672346e-06, 0.0002857252011551452, 0.00380419366925265, 0.05286758831280999,
                           0.19130654475081452, 1.1283791670955126});
  llvm::Value* q = horner({3.806039534569143e-05, 0.0011718445442006392, 0.015046480707136246, 0.11448093915405412,
                           0.5028736534848581, 1.0});
  return b_.CreateFDiv(b_.CreateFMul(x, p), q);
}

llvm::Value* Emitter::math(const cir::Math& m) {
  DType t = m.type.dtype;
  std::vector<llvm::Value*> args;
  for (const Expr& a : m.args) args.push_back(expr(a));
  llvm::Value* x = args[0];
  if (!is_float(t)) return int_math(m.fn, t, args);
  if (x->getType()->isFloatTy()) {  // f32, and f16/bf16 computed in f32
    switch (m.fn) {
      case MathFn::Exp: return round_to(t, fast_exp(x));
      case MathFn::Tanh: return round_to(t, fast_tanh(x));
      case MathFn::Erf: return round_to(t, b_.CreateFPTrunc(erf_rational(b_.CreateFPExt(x, b_.getDoubleTy())), x->getType()));
      case MathFn::Gelu:
      case MathFn::GeluTanh:
      case MathFn::Sigmoid:
      case MathFn::Silu: return round_to(t, activation_f32(m.fn, x));
      default: break;
    }
  }
  llvm::Type* rt = x->getType();
  auto back = [&](llvm::Value* d) { return round_to(t, rt->isDoubleTy() ? d : b_.CreateFPTrunc(d, rt)); };
  auto intrinsic = [&](llvm::Intrinsic::ID id) { return round_to(t, b_.CreateUnaryIntrinsic(id, x)); };
  switch (m.fn) {
    case MathFn::Sin: return back(libm1("sin", x));
    case MathFn::Cos: return back(libm1("cos", x));
    case MathFn::Tan: return back(libm1("tan", x));
    case MathFn::Asin: return back(libm1("asin", x));
    case MathFn::Acos: return back(libm1("acos", x));
    case MathFn::Atan: return back(libm1("atan", x));
    case MathFn::Sinh: return back(libm1("sinh", x));
    case MathFn::Cosh: return back(libm1("cosh", x));
    case MathFn::Tanh: return back(libm1("tanh", x));
    case MathFn::Exp: return back(libm1("exp", x));
    case MathFn::Exp2: return back(libm1("exp2", x));
    case MathFn::Log: return back(libm1("log", x));
    case MathFn::Log2: return back(libm1("log2", x));
    case MathFn::Log10: return back(libm1("log10", x));
    case MathFn::Erf: return back(libm1("erf", x));
    case MathFn::Sqrt: return intrinsic(llvm::Intrinsic::sqrt);  // correctly rounded in every precision
    case MathFn::Rsqrt: return back(b_.CreateFDiv(f64(1.0), b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, to_f64(x))));
    case MathFn::Abs: return intrinsic(llvm::Intrinsic::fabs);
    case MathFn::Floor: return intrinsic(llvm::Intrinsic::floor);
    case MathFn::Ceil: return intrinsic(llvm::Intrinsic::ceil);
    case MathFn::Round: return intrinsic(llvm::Intrinsic::nearbyint);
    case MathFn::Trunc: return intrinsic(llvm::Intrinsic::trunc);
    case MathFn::Sign: {
      llvm::Value* zero = llvm::ConstantFP::get(rt, 0.0);
      llvm::Value* s = b_.CreateSelect(b_.CreateFCmpOGT(x, zero), llvm::ConstantFP::get(rt, 1.0),
                                       b_.CreateSelect(b_.CreateFCmpOLT(x, zero), llvm::ConstantFP::get(rt, -1.0), zero));
      return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, s);
    }
    case MathFn::Relu:
      // IEEE maximum with +0: NaN stays NaN and relu(-0) is +0, as the
      // reference. (Written as selects over a compare, LLVM 19's InstCombine
      // turned relu(abs(x)) into `x > 0 ? |x| : 0`.)
      return round_to(t, b_.CreateBinaryIntrinsic(llvm::Intrinsic::maximum, x, llvm::ConstantFP::get(rt, 0.0)));
    case MathFn::Gelu: {  // 0.5 x erfc(-x / sqrt(2)), as the reference: no cancellation in the negative tail
      llvm::Value* e = libm1("erfc", b_.CreateFMul(x, f64(-0.70710678118654752440)));
      return zero_at_minus_inf(x, b_.CreateFMul(b_.CreateFMul(f64(0.5), x), e));
    }
    case MathFn::GeluTanh: {  // x / (1 + exp(-2u)), as the reference
      llvm::Value* cube = b_.CreateFMul(b_.CreateFMul(b_.CreateFMul(f64(0.044715), x), x), x);
      llvm::Value* u2 = b_.CreateFMul(f64(2.0 * 0.79788456080286535588), b_.CreateFAdd(x, cube));
      return zero_at_minus_inf(x, b_.CreateFDiv(x, b_.CreateFAdd(f64(1.0), libm1("exp", b_.CreateFNeg(u2)))));
    }
    case MathFn::Sigmoid:  // e / (1 + e) below 0, e = exp(-|x|): subnormal results too, as the reference
    case MathFn::Silu: {
      llvm::Value* e = libm1("exp", b_.CreateFNeg(b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x)));
      llvm::Value* num = m.fn == MathFn::Sigmoid ? f64(1.0) : x;
      llvm::Value* below = b_.CreateFCmpOLT(x, f64(0.0));
      llvm::Value* r = b_.CreateFDiv(b_.CreateSelect(below, b_.CreateFMul(num, e), num), b_.CreateFAdd(f64(1.0), e));
      return m.fn == MathFn::Sigmoid ? r : zero_at_minus_inf(x, r);
    }
    case MathFn::Pow: return round_to(t, libm2("pow", x, args[1]));
    case MathFn::Atan2: return round_to(t, libm2("atan2", x, args[1]));
    case MathFn::Min: return round_to(t, b_.CreateBinaryIntrinsic(llvm::Intrinsic::minimum, x, args[1]));
    case MathFn::Max: return round_to(t, b_.CreateBinaryIntrinsic(llvm::Intrinsic::maximum, x, args[1]));
    case MathFn::Clamp:
      return round_to(t, b_.CreateBinaryIntrinsic(llvm::Intrinsic::minimum,
                                                  b_.CreateBinaryIntrinsic(llvm::Intrinsic::maximum, x, args[1]), args[2]));
    case MathFn::Fma:  // rounded once: in f32 and f64 themselves, as the reference; f16/bf16 through f64
      if (t == DType::F32 || t == DType::F64) return b_.CreateIntrinsic(llvm::Intrinsic::fma, {rt}, {x, args[1], args[2]});
      return back(b_.CreateIntrinsic(llvm::Intrinsic::fma, {b_.getDoubleTy()}, {to_f64(x), to_f64(args[1]), to_f64(args[2])}));
  }
  throw std::logic_error("LLVM lowering: unknown math function");
}

llvm::Value* Emitter::int_math(MathFn fn, DType t, const std::vector<llvm::Value*>& args) {
  llvm::Value* x = args[0];
  bool s = is_signed_int(t);
  llvm::Value* zero = llvm::ConstantInt::get(x->getType(), 0);
  switch (fn) {
    case MathFn::Abs: return s ? b_.CreateSelect(b_.CreateICmpSLT(x, zero), b_.CreateNeg(x), x) : x;
    case MathFn::Sign:
      if (!s) return b_.CreateZExt(b_.CreateICmpNE(x, zero), x->getType());
      return b_.CreateSelect(b_.CreateICmpSGT(x, zero), llvm::ConstantInt::get(x->getType(), 1),
                             b_.CreateSelect(b_.CreateICmpSLT(x, zero), llvm::ConstantInt::getSigned(x->getType(), -1), zero));
    case MathFn::Relu: return s ? b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, x, zero) : x;
    case MathFn::Min: return b_.CreateBinaryIntrinsic(s ? llvm::Intrinsic::smin : llvm::Intrinsic::umin, x, args[1]);
    case MathFn::Max: return b_.CreateBinaryIntrinsic(s ? llvm::Intrinsic::smax : llvm::Intrinsic::umax, x, args[1]);
    case MathFn::Clamp:
      return b_.CreateBinaryIntrinsic(s ? llvm::Intrinsic::smin : llvm::Intrinsic::umin,
                                      b_.CreateBinaryIntrinsic(s ? llvm::Intrinsic::smax : llvm::Intrinsic::umax, x, args[1]),
                                      args[2]);
    default: throw std::logic_error(std::string("LLVM lowering: ") + math_fn_name(fn) + " on integers");
  }
}

}  // namespace zyntax::codegen
