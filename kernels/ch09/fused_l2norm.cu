// Fused row-wise L2 normalization: y[r, :] = x[r, :] / sqrt(sum(x[r, :]^2) + eps).
//
// The eager pipeline runs five kernels and moves the whole tensor through DRAM about five
// times; this kernel reads x once and writes y once, which is the minimum for the operation.
// It is memory bound, so everything here serves that: 16-byte loads, the row kept in registers
// between the reduction and the scaling, and one block per row so the reduction never leaves
// the SM.
#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kThreads = 256;                 // 8 warps: enough loads in flight per row
constexpr int kWarps = kThreads / 32;
constexpr int kMaxBlocks = 1 << 16;           // beyond this, blocks loop over rows

__device__ __forceinline__ float squares(float v) { return v * v; }
__device__ __forceinline__ float squares(float4 v) {
    return v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
}
__device__ __forceinline__ float scaled(float v, float s) { return v * s; }
__device__ __forceinline__ float4 scaled(float4 v, float s) {
    return make_float4(v.x * s, v.y * s, v.z * s, v.w * s);
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

// Sum over the block; every thread gets the same total. `partials` is double buffered by
// the caller (row parity) so a warp that races ahead to the next row cannot overwrite a
// partial sum another warp is still reading, which saves a second __syncthreads per row.
__device__ __forceinline__ float block_sum(float v, float* __restrict__ partials) {
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    v = warp_sum(v);
    if (lane == 0) partials[warp] = v;
    __syncthreads();
    // Each warp reduces the per-warp partials itself instead of waiting for warp 0 to
    // broadcast: same arithmetic order in every warp, so all threads agree bit for bit.
    v = lane < kWarps ? partials[lane] : 0.0f;
    return warp_sum(v);
}

// Rows of up to kThreads * kItems elements of T: the row stays in registers, so x is read
// from DRAM exactly once.
template <typename T, int kItems>
__global__ void __launch_bounds__(kThreads)
l2norm_rows_in_registers(const T* __restrict__ x, T* __restrict__ y, int rows, int n, float eps) {
    __shared__ float partials[2][kWarps];
    int parity = 0;
    for (int row = blockIdx.x; row < rows; row += gridDim.x, parity ^= 1) {
        const T* __restrict__ xr = x + static_cast<size_t>(row) * n;
        T* __restrict__ yr = y + static_cast<size_t>(row) * n;
        T v[kItems];
        float acc = 0.0f;
#pragma unroll
        for (int i = 0; i < kItems; ++i) {
            const int c = threadIdx.x + i * kThreads;
            if (c < n) {
                v[i] = __ldcs(xr + c);  // streamed: x is not read again, keep it out of L2's way
                acc += squares(v[i]);
            }
        }
        const float scale = rsqrtf(block_sum(acc, partials[parity]) + eps);
#pragma unroll
        for (int i = 0; i < kItems; ++i) {
            const int c = threadIdx.x + i * kThreads;
            if (c < n) __stcs(yr + c, scaled(v[i], scale));
        }
    }
}

// Rows too long for registers: a second read of the row, which mostly hits L2 because the
// block just read it.
template <typename T>
__global__ void __launch_bounds__(kThreads)
l2norm_rows_reread(const T* __restrict__ x, T* __restrict__ y, int rows, int n, float eps) {
    __shared__ float partials[2][kWarps];
    int parity = 0;
    for (int row = blockIdx.x; row < rows; row += gridDim.x, parity ^= 1) {
        const T* __restrict__ xr = x + static_cast<size_t>(row) * n;
        T* __restrict__ yr = y + static_cast<size_t>(row) * n;
        float acc = 0.0f;
        for (int c = threadIdx.x; c < n; c += kThreads) acc += squares(xr[c]);
        const float scale = rsqrtf(block_sum(acc, partials[parity]) + eps);
        for (int c = threadIdx.x; c < n; c += kThreads) __stcs(yr + c, scaled(__ldcs(xr + c), scale));
    }
}

template <typename T>
void launch_rows(const T* x, T* y, int rows, int n, float eps, cudaStream_t stream) {
    const dim3 grid(rows < kMaxBlocks ? rows : kMaxBlocks);
    const int per_thread = (n + kThreads - 1) / kThreads;
    // Smallest register footprint that holds the row: fewer registers, more resident blocks.
    if (per_thread <= 1) {
        l2norm_rows_in_registers<T, 1><<<grid, kThreads, 0, stream>>>(x, y, rows, n, eps);
    } else if (per_thread <= 2) {
        l2norm_rows_in_registers<T, 2><<<grid, kThreads, 0, stream>>>(x, y, rows, n, eps);
    } else if (per_thread <= 4) {
        l2norm_rows_in_registers<T, 4><<<grid, kThreads, 0, stream>>>(x, y, rows, n, eps);
    } else if (per_thread <= 8) {
        l2norm_rows_in_registers<T, 8><<<grid, kThreads, 0, stream>>>(x, y, rows, n, eps);
    } else if (per_thread <= 16) {
        l2norm_rows_in_registers<T, 16><<<grid, kThreads, 0, stream>>>(x, y, rows, n, eps);
    } else {
        l2norm_rows_reread<T><<<grid, kThreads, 0, stream>>>(x, y, rows, n, eps);
    }
}

}  // namespace

// Returns a cudaError_t as int so the Python side can raise with aisp_cuda_error_string().
extern "C" int aisp_fused_l2norm(const float* x, float* y, int rows, int cols, float eps,
                                 cudaStream_t stream) {
    if (rows < 0 || cols < 0 || x == nullptr || y == nullptr) return cudaErrorInvalidValue;
    if (rows == 0 || cols == 0) return cudaSuccess;  // nothing to do; a 0-block launch is an error
    const bool vec4 = cols % 4 == 0 &&
                      (reinterpret_cast<std::uintptr_t>(x) | reinterpret_cast<std::uintptr_t>(y)) % 16 == 0;
    if (vec4) {
        // cols % 4 == 0 keeps every row start 16-byte aligned, not only the first.
        launch_rows(reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), rows, cols / 4, eps,
                    stream);
    } else {
        launch_rows(x, y, rows, cols, eps, stream);
    }
    return static_cast<int>(cudaGetLastError());
}

extern "C" const char* aisp_cuda_error_string(int code) {
    return cudaGetErrorString(static_cast<cudaError_t>(code));
}
