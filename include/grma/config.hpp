// Compiler portability for code that is compiled both as plain C++ (CPU backend)
// and as CUDA device code (CUDA backend). Rank-side headers use only these macros.
#pragma once

#if defined(__CUDACC__)
#define GRMA_HOST_DEVICE __host__ __device__
#define GRMA_INLINE __host__ __device__ __forceinline__
#else
#define GRMA_HOST_DEVICE
#define GRMA_INLINE inline
#endif

// True while compiling device code (the second pass of nvcc), false for host code.
#if defined(__CUDA_ARCH__)
#define GRMA_DEVICE_CODE 1
#else
#define GRMA_DEVICE_CODE 0
#endif

#define GRMA_VERSION_MAJOR 0
#define GRMA_VERSION_MINOR 1
