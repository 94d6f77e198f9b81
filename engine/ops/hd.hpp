#pragma once
// Functions that run on both backends: an op's functor is compiled by the
// C++ compiler for the CPU and by nvcc for the GPU from the same source.
#if defined(__CUDACC__)
#define TW_HD __host__ __device__ __forceinline__
#else
#define TW_HD inline
#endif

namespace tw::ops {
// a * b + c rounded twice, as on the CPU: nvcc would otherwise fuse it into
// an FMA (rounded once) and the backends would differ in the last bit.
TW_HD float mul_add(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(__fmul_rn(a, b), c);
#else
  return a * b + c;
#endif
}
}  // namespace tw::ops
