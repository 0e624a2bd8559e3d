// AVX2+FMA build of the SGEMM kernel (this file is compiled with -mavx2 -mfma;
// gemm.cpp only calls it when the CPU supports both).
#define GEMM_NS avx2
#include "interp/gemm_kernel.inc"
