// C = sqrt(A^2 + B^2) elementwise over tiles of 32 x 32 fp32 (4 KiB per matrix tile), by blocks
// of 96 threads with warp roles (the book's warp_specialized_pipeline_enhanced pair). Every
// block walks tiles blockIdx.x, blockIdx.x + gridDim.x, ... (grid = min(tiles, 256)); warp 1
// computes, warp 2 stores. Two kernels:
//   0 baseline   one buffer each for A, B, C (12 KiB): warp 0 copies A and B synchronously
//                (ld.global -> st.shared, 4 bytes a lane), __syncthreads, warp 1 computes,
//                __syncthreads, warp 2 stores, __syncthreads. Nothing overlaps.
//   1 pipelined  two stages of A, B, C (24 KiB): a 2-stage cuda::pipeline that every thread of
//                the block produces into (block-collective cuda::memcpy_async, cp.async of 16
//                bytes) and consumes from (barrier counts = 96 both ways). Tiles i+1 and i+2 are
//                in flight while tile i is computed; tile i+2 is issued right after tile i's
//                compute -> store barrier, and the store of tile i overlaps the compute of
//                tile i+1 (C has two stages). One __syncthreads per tile.
#include <cooperative_groups.h>
#include <cuda/pipeline>
#include <cuda_runtime.h>

#include <cstdint>

namespace cg = cooperative_groups;

namespace {

constexpr int kTile = 32;                               // the book's pick on H100 and B200
constexpr int kTileElems = kTile * kTile;               // 1024 floats, 4 KiB
constexpr int kThreads = 96;                            // 3 warps
constexpr int kStages = 2;
constexpr int kMaxGrid = 256;                           // the book's grid: min(tiles, 256)
constexpr int kVariants = 2;

using PipeState = cuda::pipeline_shared_state<cuda::thread_scope_block, kStages>;

// The compute warp's part: c = sqrt(a^2 + b^2), 4 bytes a lane (the book's loop). sqrtf is IEEE
// correctly rounded here (no fast math), so integer inputs give exactly rounded results.
__device__ __forceinline__ void compute_tile(const float* __restrict__ a, const float* __restrict__ b,
                                             float* __restrict__ c, int lane) {
    for (int i = lane; i < kTileElems; i += 32) {
        const float x = a[i], y = b[i];
        c[i] = sqrtf(x * x + y * y);
    }
}

__device__ __forceinline__ void store_tile(float* __restrict__ dst, const float* __restrict__ c, int lane) {
    for (int i = lane; i < kTileElems; i += 32) dst[i] = c[i];
}

// 0: the book's baseline: synchronous copies by warp 0, three block barriers per tile.
__global__ void __launch_bounds__(kThreads) baseline_kernel(const float* __restrict__ A, const float* __restrict__ B,
                                                            float* __restrict__ C, int tiles) {
    __shared__ float a_s[kTileElems], b_s[kTileElems], c_s[kTileElems];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
        const long long base = static_cast<long long>(t) * kTileElems;
        if (warp == 0) {
            for (int i = lane; i < kTileElems; i += 32) {
                a_s[i] = A[base + i];
                b_s[i] = B[base + i];
            }
        }
        __syncthreads();                            // A and B are in shared memory
        if (warp == 1) compute_tile(a_s, b_s, c_s, lane);
        __syncthreads();                            // C is complete
        if (warp == 2) store_tile(C + base, c_s, lane);
        __syncthreads();                            // every buffer is free for the next tile
    }
}

struct alignas(16) Stage {
    float a[kTileElems];
    float b[kTileElems];
    float c[kTileElems];
};

// Every thread of the block issues its share of tile t's copies (4 KiB of A and of B: 256
// chunks of 16 bytes each, thread r copies chunks r, r + 96, ...) into `st`, then commits.
__device__ __forceinline__ void issue_tile(cuda::pipeline<cuda::thread_scope_block>& pipe,
                                           const cg::thread_block& block, Stage& st,
                                           const float* __restrict__ A, const float* __restrict__ B, int t) {
    const long long base = static_cast<long long>(t) * kTileElems;
    pipe.producer_acquire();
    cuda::memcpy_async(block, st.a, A + base, cuda::aligned_size_t<16>(kTileElems * sizeof(float)), pipe);
    cuda::memcpy_async(block, st.b, B + base, cuda::aligned_size_t<16>(kTileElems * sizeof(float)), pipe);
    pipe.producer_commit();
}

// 1: the book's optimized: a unified 2-stage pipeline (every thread a producer and a consumer).
// Every call below is made by all 96 threads in the same order (the loop bounds depend on
// blockIdx only), which is what a unified block-scope pipeline's barrier counts assume.
__global__ void __launch_bounds__(kThreads) pipelined_kernel(const float* __restrict__ A, const float* __restrict__ B,
                                                             float* __restrict__ C, int tiles) {
    __shared__ Stage stages[kStages];                                       // 24 KiB
    __shared__ alignas(alignof(PipeState)) unsigned char state[sizeof(PipeState)];
    const auto block = cg::this_thread_block();
    auto pipe = cuda::make_pipeline(block, reinterpret_cast<PipeState*>(state));
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int next = blockIdx.x;
    for (int s = 0; s < kStages && next < tiles; ++s, next += gridDim.x) issue_tile(pipe, block, stages[s], A, B, next);
    int i = 0;
    for (int t = blockIdx.x; t < tiles; t += gridDim.x, ++i) {
        Stage& st = stages[i % kStages];
        pipe.consumer_wait();                       // every thread's copies of tile t have landed
        if (warp == 1) compute_tile(st.a, st.b, st.c, lane);
        pipe.consumer_release();                    // A and B of this stage may be refilled
        // C of tile t is complete; the store warp has finished tile t - 1 (the other C stage's
        // next writer is the compute of tile t + 1, after this barrier).
        __syncthreads();
        if (next < tiles) {                         // tile i + 2 into this stage
            issue_tile(pipe, block, st, A, B, next);
            next += gridDim.x;
        }
        if (warp == 2) store_tile(C + static_cast<long long>(t) * kTileElems, st.c, lane);
    }
}

}  // namespace

// variant: 0 baseline, 1 pipelined. A, B, C: tiles x 32 x 32 fp32, 16-byte aligned, C not
// overlapping A or B. Returns a cudaError_t as int (cudaErrorInvalidValue /
// cudaErrorMisalignedAddress before any CUDA call for bad arguments).
extern "C" int aisp_wsp_elementwise(int variant, const float* A, const float* B, float* C, int tiles,
                                    cudaStream_t stream) {
    if (variant < 0 || variant >= kVariants || A == nullptr || B == nullptr || C == nullptr || tiles < 1)
        return cudaErrorInvalidValue;
    if ((reinterpret_cast<std::uintptr_t>(A) | reinterpret_cast<std::uintptr_t>(B) |
         reinterpret_cast<std::uintptr_t>(C)) % 16 != 0)
        return cudaErrorMisalignedAddress;
    const int grid = tiles < kMaxGrid ? tiles : kMaxGrid;
    if (variant == 0) {
        baseline_kernel<<<grid, kThreads, 0, stream>>>(A, B, C, tiles);
    } else {
        pipelined_kernel<<<grid, kThreads, 0, stream>>>(A, B, C, tiles);
    }
    return static_cast<int>(cudaGetLastError());
}

extern "C" const char* aisp_wsp_elementwise_error_string(int code) {
    return cudaGetErrorString(static_cast<cudaError_t>(code));
}
