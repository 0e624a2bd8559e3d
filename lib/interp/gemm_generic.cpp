// Baseline-ISA build of the SGEMM kernel.
#define GEMM_NS generic
#include "interp/gemm_kernel.inc"
