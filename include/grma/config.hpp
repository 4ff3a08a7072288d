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

// Cold paths of the rank API (failing, publishing a long wait, the
// other-node path, a window lookup that misses its cache): one copy per
// program, called from every call site, where GRMA_INLINE would put a copy
// at each (a user's 100-call program grew to megabytes of PTX that way).
// For member functions defined in their class (implicitly inline).
// GRMA_OUT_OF_LINE: the same for a large path that is not cold (a
// collective's gather and release).
#if defined(__CUDACC__)
#define GRMA_COLD __host__ __device__ __noinline__
#define GRMA_OUT_OF_LINE __host__ __device__ __noinline__
#elif defined(__GNUC__)
#define GRMA_COLD __attribute__((noinline, cold))
#define GRMA_OUT_OF_LINE __attribute__((noinline))
#else
#define GRMA_COLD
#define GRMA_OUT_OF_LINE
#endif

// True while compiling device code (the second pass of nvcc), false for host code.
#if defined(__CUDA_ARCH__)
#define GRMA_DEVICE_CODE 1
#else
#define GRMA_DEVICE_CODE 0
#endif

// A class-type constant of the public API (grma::world, grma::team_world,
// ...). Rank code may bind one by reference, as a conditional does when it
// passes `c ? team_device : team_world` on: device code can only reference
// device memory, so nvcc's device pass gets a __device__ copy (of internal
// linkage, which whole-program compilation requires of it) and the host
// pass the plain constant.
#if defined(__CUDA_ARCH__)
#define GRMA_CONSTANT static constexpr __device__
#else
#define GRMA_CONSTANT inline constexpr
#endif

#define GRMA_VERSION_MAJOR 0
#define GRMA_VERSION_MINOR 1
