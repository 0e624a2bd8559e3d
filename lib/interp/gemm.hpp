// Single-precision matrix multiplication for the interpreter's Conv, Gemm and
// MatMul: a packed, cache-blocked kernel (6x16 register tile) with an AVX2
// variant chosen at run time (bit-identical to the baseline one: no FMA), parallelised with parallel_for.
#pragma once

#include <cstdint>

namespace cct::interp {

// C = A * B (+ C when accumulate). Row-major: A is M x K with row stride lda,
// B is K x N with row stride ldb, C is M x N with row stride ldc.
// Each element of C is summed in the same order whatever the thread count.
void sgemm(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb, float* C,
           int64_t ldc, bool accumulate);

// The serial kernel on one block (used by sgemm; exposed for tests and benchmarks).
void sgemm_serial(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb, float* C,
                  int64_t ldc, bool accumulate);

// True when the AVX2 kernel is in use.
bool sgemm_uses_avx2();
// Whether this CPU can run the AVX2 kernel at all.
bool sgemm_avx2_available();
// The serial kernel of the given ISA, whatever the CPU prefers (tests check the
// two agree bit for bit; call with avx2 only when sgemm_avx2_available()).
void sgemm_serial_isa(bool avx2, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
                      int64_t ldb, float* C, int64_t ldc, bool accumulate);

}  // namespace cct::interp
