// ch14.cuda_python: LayerNorm -> GELU (erf) -> zero the dropped rows -> + residual, fused.
//
// Not built by nvcc: cuda_python.py reads this file when a factory runs and compiles it with
// NVRTC through NVIDIA's cuda-python bindings, with the row length and the launch shape as macros:
//   HIDDEN   fp16 elements per row
//   VEC      fp16 elements per load and store (8: one 16-byte LDG/STG.128; 4, 2 or 1 when
//            HIDDEN or a pointer's alignment does not allow 8)
//   THREADS  threads per block (a multiple of 32, at most 256)
//   ITEMS    loads per thread: ceil(HIDDEN / VEC / THREADS)
// No headers (NVRTC has no cuda_fp16.h of its own): fp16 <-> fp32 by cvt instructions.
//
// One block per row. The row stays in registers, so x is read once from DRAM and out written
// once: the mean, then the centred sum of squares (two-pass variance, no E[x^2] - mean^2
// cancellation), then y = (keep ? GELU(LN(x)) : 0) + x, rounded to fp16 once. A dropped row
// (keep == 0) is copied through bit for bit: 0 + x in fp16 is x.

template <int V> struct Pack;
template <> struct Pack<8> { typedef uint4 T; };
template <> struct Pack<4> { typedef uint2 T; };
template <> struct Pack<2> { typedef unsigned int T; };
template <> struct Pack<1> { typedef unsigned short T; };

template <int V> union Vec {
    typename Pack<V>::T raw;
    unsigned short h[V];
};
typedef Vec<VEC> VecT;

__device__ __forceinline__ float half_to_float(unsigned short h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

__device__ __forceinline__ unsigned short float_to_half(float f) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}

// Sum over the block; every thread gets the same value (the warps' partials are added in the
// same order by all threads). `red` is reused, hence the second barrier.
__device__ __forceinline__ float block_sum(float v, float* red) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
    __syncthreads();
    float total = 0.0f;
#pragma unroll
    for (int w = 0; w < THREADS / 32; ++w) total += red[w];
    __syncthreads();
    return total;
}

extern "C" __global__ void __launch_bounds__(THREADS)
fused_layernorm_gelu_mask(const VecT* __restrict__ x, const VecT* __restrict__ weight,
                          const VecT* __restrict__ bias, const unsigned char* __restrict__ keep,
                          VecT* __restrict__ out, float eps) {
    constexpr int kVectors = HIDDEN / VEC;
    __shared__ float red[THREADS / 32];
    const long long row = blockIdx.x;
    const VecT* xr = x + row * kVectors;
    VecT* outr = out + row * kVectors;

    VecT v[ITEMS];
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        const int c = i * THREADS + threadIdx.x;
        if (c < kVectors) v[i].raw = xr[c].raw;
    }
    if (!keep[row]) {                        // uniform per block: no divergence
#pragma unroll
        for (int i = 0; i < ITEMS; ++i) {
            const int c = i * THREADS + threadIdx.x;
            if (c < kVectors) outr[c].raw = v[i].raw;
        }
        return;
    }

    VecT w[ITEMS], b[ITEMS];                 // issued now, so the reductions hide their latency
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        const int c = i * THREADS + threadIdx.x;
        if (c < kVectors) {
            w[i].raw = weight[c].raw;
            b[i].raw = bias[c].raw;
        }
    }

    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        if (i * THREADS + threadIdx.x < kVectors) {
#pragma unroll
            for (int j = 0; j < VEC; ++j) sum += half_to_float(v[i].h[j]);
        }
    }
    const float mean = block_sum(sum, red) / HIDDEN;

    float squares = 0.0f;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        if (i * THREADS + threadIdx.x < kVectors) {
#pragma unroll
            for (int j = 0; j < VEC; ++j) {
                const float d = half_to_float(v[i].h[j]) - mean;
                squares += d * d;
            }
        }
    }
    const float rstd = rsqrtf(block_sum(squares, red) / HIDDEN + eps);

#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        const int c = i * THREADS + threadIdx.x;
        if (c < kVectors) {
            VecT y;
#pragma unroll
            for (int j = 0; j < VEC; ++j) {
                const float xv = half_to_float(v[i].h[j]);
                const float n = (xv - mean) * rstd * half_to_float(w[i].h[j]) + half_to_float(b[i].h[j]);
                const float g = 0.5f * n * (1.0f + erff(n * 0.70710678118654752f));
                y.h[j] = float_to_half(g + xv);
            }
            outr[c].raw = y.raw;
        }
    }
}
