#include "interp/gemm.hpp"

#include <algorithm>

#include "interp/parallel.hpp"

namespace cct::interp {
namespace generic {
void sgemm_block(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb, float* C,
                 int64_t ldc, bool accumulate);
}
namespace avx2 {
void sgemm_block(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb, float* C,
                 int64_t ldc, bool accumulate);
}

namespace {
using BlockFn = void (*)(int64_t, int64_t, int64_t, const float*, int64_t, const float*, int64_t, float*, int64_t, bool);

bool cpu_has_avx2() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2");
#else
  return false;
#endif
}

BlockFn select_kernel() { return cpu_has_avx2() ? avx2::sgemm_block : generic::sgemm_block; }

BlockFn kernel() {
  static const BlockFn k = select_kernel();
  return k;
}
}  // namespace

bool sgemm_uses_avx2() { return kernel() == avx2::sgemm_block; }
bool sgemm_avx2_available() { return cpu_has_avx2(); }

void sgemm_serial_isa(bool use_avx2, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
                      int64_t ldb, float* C, int64_t ldc, bool accumulate) {
  if (M <= 0 || N <= 0) return;
  (use_avx2 ? avx2::sgemm_block : generic::sgemm_block)(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}

void sgemm_serial(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb, float* C,
                  int64_t ldc, bool accumulate) {
  if (M <= 0 || N <= 0) return;
  kernel()(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}

void sgemm(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb, float* C,
           int64_t ldc, bool accumulate) {
  if (M <= 0 || N <= 0) return;
  BlockFn k = kernel();
  double work = static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
  if (thread_count() <= 1 || work < 2.0e5) {
    k(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
    return;
  }
  // Split the larger output dimension in register-tile multiples; the K sum of
  // every element stays in one task, so results do not depend on the split.
  if (N >= M) {
    int64_t tiles = (N + 15) / 16;
    parallel_for(tiles, 1, [&](int64_t b, int64_t e) {
      int64_t j0 = b * 16, j1 = std::min(N, e * 16);
      k(M, j1 - j0, K, A, lda, B + j0, ldb, C + j0, ldc, accumulate);
    });
  } else {
    int64_t tiles = (M + 5) / 6;
    parallel_for(tiles, 1, [&](int64_t b, int64_t e) {
      int64_t i0 = b * 6, i1 = std::min(M, e * 6);
      k(i1 - i0, N, K, A + i0 * lda, lda, B, ldb, C + i0 * ldc, ldc, accumulate);
    });
  }
}

}  // namespace cct::interp
