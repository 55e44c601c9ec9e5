// Polynomials for erf and erfc with small *relative* error, so that
// gelu(x) = 0.5 x erfc(-x / sqrt(2)) keeps its accuracy in the negative
// tail, where 1 + erf(x / sqrt(2)) cancels to nothing. Shared by the code
// generators that write these functions out (the reference uses libm's).
#pragma once

namespace zyntax::normal_tail {

// erf(s) = s * P(s^2) for |s| <= 0.5, P highest degree first: the Taylor
// series 2/sqrt(pi) (-1)^k / (k! (2k + 1)), truncated below 1.4e-14.
inline constexpr double kErfSeries[] = {
    -1.6365844691234924e-07, 1.6462114365889246e-06, -1.492565035840625e-05, 0.00012055332981789664,
    -0.0008548327023450852,  0.005223977625442188,   -0.026866170645131252, 0.11283791670955126,
    -0.37612638903183754,    1.1283791670955126,
};
inline constexpr double kErfSeriesEnd = 0.5;

// erfc(z) = exp(-z^2) R(z) for 0.5 <= z <= 12, with R = erfcx a polynomial
// in u = (1 / (2 + z) - kCenter) / kHalfWidth in [-1, 1], highest degree
// first: a Chebyshev fit, within 1.3e-10 of erfcx relatively. Beyond z = 12,
// erfc(z) < 1e-64 and every f32 result it scales is 0.
inline constexpr double kErfcxPoly[] = {
    -3.9922285583139945e-08, 2.9197026857473584e-07, 6.373265857678937e-08, -4.132092095187787e-06,
    4.7716886922045725e-06,  4.9748968969594935e-05, -9.931729526155885e-05, -0.0008137354235916898,
    0.0010600282179448982,   0.022106446939918707,   0.09854732423604765,    0.26307944123065097,
    0.23175945194512407,
};
inline constexpr double kErfcxCenter = 0.2357142857142857;
inline constexpr double kErfcxHalfWidth = 0.1642857142857143;
inline constexpr double kErfcxLast = 12.0;

}  // namespace zyntax::normal_tail
