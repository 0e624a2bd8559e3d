#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "interp/gemm.hpp"
#include "interp/parallel.hpp"

using namespace cct::interp;

namespace {
std::vector<float> random_matrix(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = static_cast<float>(static_cast<int64_t>(rng() % 2001) - 1000) / 500.0f;
  return v;
}

void naive(int64_t M, int64_t N, int64_t K, const float* A, const float* B, double* C) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k) s += static_cast<double>(A[i * K + k]) * B[k * N + j];
      C[i * N + j] = s;
    }
}
}  // namespace

TEST_CASE("sgemm matches a naive product on awkward sizes") {
  for (auto [M, N, K] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {7, 5, 3}, {6, 16, 256}, {13, 33, 257},
                         {100, 49, 600}, {2, 1000, 64}, {97, 3, 1}}) {
    auto A = random_matrix(M * K, 1), B = random_matrix(K * N, 2);
    std::vector<float> C(static_cast<size_t>(M * N), 7.0f);
    std::vector<double> R(static_cast<size_t>(M * N));
    naive(M, N, K, A.data(), B.data(), R.data());
    sgemm(M, N, K, A.data(), K, B.data(), N, C.data(), N, false);
    double worst = 0;
    for (size_t k = 0; k < C.size(); ++k) worst = std::max(worst, std::fabs(C[k] - R[k]) / (1.0 + std::fabs(R[k])));
    CHECK(worst < 1e-4);
    // accumulate adds onto C
    std::vector<float> D(C.size(), 1.0f);
    sgemm(M, N, K, A.data(), K, B.data(), N, D.data(), N, true);
    for (size_t k = 0; k < C.size(); ++k) CHECK(D[k] == doctest::Approx(C[k] + 1.0f).epsilon(1e-5));
  }
}

TEST_CASE("sgemm results do not depend on the thread count") {
  int64_t M = 70, N = 300, K = 513;
  auto A = random_matrix(M * K, 3), B = random_matrix(K * N, 4);
  std::vector<float> one(static_cast<size_t>(M * N)), many(one.size());
  int saved = thread_count();
  set_thread_count(1);
  sgemm(M, N, K, A.data(), K, B.data(), N, one.data(), N, false);
  set_thread_count(3);
  sgemm(M, N, K, A.data(), K, B.data(), N, many.data(), N, false);
  set_thread_count(saved);
  CHECK(one == many);
}

TEST_CASE("integer-valued products are exact below 2^24") {
  // The quantized convolution relies on this: |a*b| <= 32385 and K <= 512 keeps
  // every partial sum an exactly representable integer.
  int64_t M = 4, N = 20, K = 512;
  std::vector<float> A(static_cast<size_t>(M * K)), B(static_cast<size_t>(K * N));
  std::mt19937_64 rng(9);
  for (auto& a : A) a = static_cast<float>(static_cast<int>(rng() % 255) - 127);
  for (auto& b : B) b = static_cast<float>(static_cast<int>(rng() % 256));
  std::vector<float> C(static_cast<size_t>(M * N));
  sgemm(M, N, K, A.data(), K, B.data(), N, C.data(), N, false);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      int64_t s = 0;
      for (int64_t k = 0; k < K; ++k) s += static_cast<int64_t>(A[i * K + k]) * static_cast<int64_t>(B[k * N + j]);
      CHECK(static_cast<int64_t>(C[i * N + j]) == s);
    }
}

TEST_CASE("the AVX2 and baseline kernels agree bit for bit (FIRs must not depend on the CPU)") {
  if (!sgemm_avx2_available()) {
    MESSAGE("no AVX2 on this CPU: only the baseline kernel runs here");
    return;
  }
  // Non-integer values, so any contraction to FMA or reordering would show.
  std::mt19937_64 rng(11);
  for (auto [M, N, K] : {std::array<int64_t, 3>{7, 19, 300}, {64, 64, 64}, {13, 3072 + 5, 513}}) {
    std::vector<float> A(static_cast<size_t>(M * K)), B(static_cast<size_t>(K * N));
    for (auto& x : A) x = static_cast<float>(static_cast<double>(rng() % 100000) / 7777.0 - 6.4);
    for (auto& x : B) x = static_cast<float>(static_cast<double>(rng() % 100000) / 3333.0 - 15.1);
    std::vector<float> C1(static_cast<size_t>(M * N)), C2(static_cast<size_t>(M * N));
    sgemm_serial_isa(false, M, N, K, A.data(), K, B.data(), N, C1.data(), N, false);
    sgemm_serial_isa(true, M, N, K, A.data(), K, B.data(), N, C2.data(), N, false);
    CHECK(std::memcmp(C1.data(), C2.data(), C1.size() * sizeof(float)) == 0);
  }
}
