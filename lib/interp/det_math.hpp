// Transcendental functions whose result depends on the input bits only.
//
// Golden activations must be byte-identical on every machine, and libm
// implementations (glibc versions, musl, other CPUs) differ in the last bit
// of exp, erf and tanh. These are built from IEEE basic operations alone
// (+ - * /, comparisons, conversions), evaluated in double with range
// reduction and polynomials or series, then rounded once to float. They are
// compiled without FP contraction (no FMA: -ffp-contract=off for the whole
// build) and with SSE arithmetic (FLT_EVAL_METHOD 0, no x87: checked below).
//
// Accuracy: the double results are within about 2e-14 (relative) of the
// true value, so the float results are within 0.5 + 3e-7 ulp of it: the
// correctly rounded float, unless the true value is within 3e-7 ulp of a
// rounding tie. Measured against glibc 2.36's long double functions on
// every float where the result is neither saturated nor x itself (exp:
// 2^-30 <= |x| <= 104.5, expm1: -21 to -2^-30 and 2^-30 to 89.5, tanh:
// 2^-30 to 10.5, erf: 2^-30 to 4.5; 1.76e9 values) and on 1 in 4099 below
// 2^-30 and 1 in 257 of the negative side of tanh and erf: every result
// correctly rounded (glibc's own float functions there: expf 170648 results
// not, max 0.502 ulp; expm1f max 0.81 ulp; tanhf 59.6 million not, max 2.19
// ulp; erff max 0.97 ulp). tests/interp/test_det_math.cpp checks 1 in 2039
// of all floats and the edge cases. Special values: exp(-inf) = 0,
// exp(+inf) = +inf; tanh, erf and expm1 keep the sign of zero; tanh and erf
// give +-1 at +-inf, expm1(-inf) = -1; NaN in, NaN out.
#pragma once

#include <cfloat>

// x87 evaluates float and double expressions in 80 bits and rounds them
// when it spills a register: results would depend on the compiler's
// register allocation, here and in the INT8 arithmetic (int8_ops.hpp).
#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#error "the INT8 arithmetic needs FLT_EVAL_METHOD 0 (SSE2, not x87 floating point): e.g. -msse2 -mfpmath=sse"
#endif

namespace cct::det {

float exp(float x);    // e^x; 0 below about -103.97, +inf above about 88.72
float expm1(float x);  // e^x - 1, accurate near 0 (where exp(x) - 1 cancels)
float tanh(float x);
float erf(float x);

}  // namespace cct::det
