// Calibration probes with exact analytic work: each kernel's FLOPs and bytes follow from its
// arguments alone, so a measured rate is a ceiling and an ncu count can be checked against it.
//
//   aisp_copy_f4      y[i] = x[i] over n float4 (streaming ld/st): reads 16n bytes, writes 16n bytes,
//                     no FLOPs
//   aisp_stream_l2    reps passes over a buffer with ld.global.cg (cached in L2 only, not L1):
//                     16 * n4 * reps bytes read at L2, one FADD per float read (+3 per thread)
//   aisp_stream_l1    each block re-reads its own small chunk with ld.global.ca (L1 hits):
//                     16 * chunk4 * blocks * reps bytes read at L1, one FADD per float read (+3 per thread)
//   aisp_fma_f32      kChains independent FFMA chains per thread, iters steps each:
//                     2 * kChains * iters FLOPs per thread (+ kChains - 1 FADDs to combine)
//
// The loads are volatile inline PTX so the compiler cannot hoist or merge repeated reads of the
// same address out of the repetition loop. Every kernel writes a result that depends on all the
// work it did, so nothing is dead code.
#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kChains = 8;

__device__ __forceinline__ float4 load_cg(const float4* p) {
    float4 v;
    asm volatile("ld.global.cg.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
    return v;
}

__device__ __forceinline__ float4 load_ca(const float4* p) {
    float4 v;
    asm volatile("ld.global.ca.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
    return v;
}

// Every thread issues kUnroll independent loads before it uses any of them, so enough bytes are
// in flight to cover the latency of DRAM or L2. Index i + k * stride for k < kUnroll; the host
// sizes buffers as multiples of kUnroll * grid * block, the guards only keep odd sizes correct.
constexpr int kUnroll = 4;

__global__ void copy_f4(const float4* __restrict__ x, float4* __restrict__ y, long long n) {
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += kUnroll * stride) {
        float4 v[kUnroll];
#pragma unroll
        for (int k = 0; k < kUnroll; ++k) {
            if (i + k * stride < n) v[k] = __ldcs(x + i + k * stride);   // streamed: evict first
        }
#pragma unroll
        for (int k = 0; k < kUnroll; ++k) {
            if (i + k * stride < n) __stcs(y + i + k * stride, v[k]);
        }
    }
}

__device__ __forceinline__ float sum4(float4 v) { return (v.x + v.y) + (v.z + v.w); }

__global__ void stream_l2(const float4* __restrict__ x, long long n4, int reps, float* __restrict__ out) {
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    const long long first = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    float acc[kUnroll] = {};
    for (int r = 0; r < reps; ++r) {
        for (long long i = first; i < n4; i += kUnroll * stride) {
            float4 v[kUnroll];
#pragma unroll
            for (int k = 0; k < kUnroll; ++k) {
                v[k] = i + k * stride < n4 ? load_cg(x + i + k * stride) : make_float4(0.f, 0.f, 0.f, 0.f);
            }
#pragma unroll
            for (int k = 0; k < kUnroll; ++k) acc[k] += sum4(v[k]);   // 4 FADDs per float4
        }
    }
    out[first] = (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

__global__ void stream_l1(const float4* __restrict__ x, int chunk4, int reps, float* __restrict__ out) {
    const float4* base = x + static_cast<long long>(blockIdx.x) * chunk4;
    const int stride = blockDim.x;
    float acc[kUnroll] = {};
    for (int r = 0; r < reps; ++r) {
        for (int i = threadIdx.x; i < chunk4; i += kUnroll * stride) {
            float4 v[kUnroll];
#pragma unroll
            for (int k = 0; k < kUnroll; ++k) {
                v[k] = i + k * stride < chunk4 ? load_ca(base + i + k * stride) : make_float4(0.f, 0.f, 0.f, 0.f);
            }
#pragma unroll
            for (int k = 0; k < kUnroll; ++k) acc[k] += sum4(v[k]);
        }
    }
    out[static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x] = (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

__global__ void fma_f32(float a, float b, int iters, float* __restrict__ out) {
    const long long tid = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    float v[kChains];
#pragma unroll
    for (int j = 0; j < kChains; ++j) v[j] = static_cast<float>(threadIdx.x + j) * 1e-3f;
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int j = 0; j < kChains; ++j) v[j] = fmaf(v[j], a, b);
    }
    float s = v[0];
#pragma unroll
    for (int j = 1; j < kChains; ++j) s += v[j];
    out[tid] = s;
}

cudaError_t launched() { return cudaGetLastError(); }

}  // namespace

extern "C" {

int aisp_probe_chains() { return kChains; }

int aisp_copy_f4(const void* x, void* y, long long n4, int blocks, int threads, void* stream) {
    copy_f4<<<blocks, threads, 0, static_cast<cudaStream_t>(stream)>>>(
        static_cast<const float4*>(x), static_cast<float4*>(y), n4);
    return static_cast<int>(launched());
}

int aisp_stream_l2(const void* x, long long n4, int reps, void* out, int blocks, int threads, void* stream) {
    stream_l2<<<blocks, threads, 0, static_cast<cudaStream_t>(stream)>>>(
        static_cast<const float4*>(x), n4, reps, static_cast<float*>(out));
    return static_cast<int>(launched());
}

int aisp_stream_l1(const void* x, int chunk4, int reps, void* out, int blocks, int threads, void* stream) {
    stream_l1<<<blocks, threads, 0, static_cast<cudaStream_t>(stream)>>>(
        static_cast<const float4*>(x), chunk4, reps, static_cast<float*>(out));
    return static_cast<int>(launched());
}

int aisp_fma_f32(float a, float b, int iters, void* out, int blocks, int threads, void* stream) {
    fma_f32<<<blocks, threads, 0, static_cast<cudaStream_t>(stream)>>>(a, b, iters, static_cast<float*>(out));
    return static_cast<int>(launched());
}

const char* aisp_probe_error_string(int err) { return cudaGetErrorString(static_cast<cudaError_t>(err)); }

}  // extern "C"
