// Batched 64 x 64 fp32 tile GEMMs, C[t] = A[t] @ B[t] for every tile t, by warp-specialized
// blocks (the book's warp_specialized_pipeline pair). Every block walks tiles blockIdx.x,
// blockIdx.x + gridDim.x, ... (grid = min(tiles, 128)); warp 0 loads, the compute warp(s)
// multiply, the last warp stores. Three kernels:
//   0 baseline            3 warps, one 16 KiB buffer each for A, B, C (48 KiB): warp 0 copies A
//                         and B synchronously (ld.global -> st.shared, 4 bytes a lane), then
//                         __syncthreads, warp 1 multiplies, __syncthreads, warp 2 stores,
//                         __syncthreads. Nothing overlaps.
//   1 pipelined           3 warps, two stages of A, B, C (96 KiB, opt-in dynamic smem): a
//                         2-stage cuda::pipeline partitioned by role (warp 0 the producer, 32
//                         arrivals; warps 1-2 consumers, 64 arrivals) fed by warp-collective
//                         cuda::memcpy_async (cp.async, 16 bytes a copy). Warp 0 issues tile i+2
//                         as soon as the consumers release tile i's stage; the store of tile i
//                         (C stage i % 2) overlaps the multiply of tile i+1. One __syncthreads
//                         per tile (compute -> store handoff).
//   2 pipelined_4compute  the pipelined kernel with 4 compute warps (6 warps in all), each
//                         multiplying 16 rows of C: the compute role is the bottleneck.
// The multiply is the book's: lane l of a compute warp computes C[row][col] for idx = l, l + 32,
// ... of its rows as a 64-term dot product (one FFMA per term, k in order).
#include <cooperative_groups.h>
#include <cuda/pipeline>
#include <cuda_runtime.h>

#include <cstdint>

namespace cg = cooperative_groups;

namespace {

constexpr int kTile = 64;
constexpr int kTileElems = kTile * kTile;                          // 4096 floats, 16 KiB
constexpr int kStages = 2;
constexpr int kMaxGrid = 128;                                      // the book's grid: min(tiles, 128)
constexpr int kVariants = 3;
constexpr int kMaxDevices = 64;
constexpr size_t kStageBytes = 3 * kTileElems * sizeof(float);     // A, B and C of one stage
constexpr size_t kPipelinedSmem = kStages * kStageBytes;           // 96 KiB, as in the book

using PipeState = cuda::pipeline_shared_state<cuda::thread_scope_block, kStages>;

// C rows [row0, row0 + kRows) of one tile, by one warp: lane `lane` computes outputs idx = row0 *
// 64 + lane, + 32, ... (all 32 lanes of an iteration share a row: A is a broadcast, B a row).
template <int kRows>
__device__ __forceinline__ void multiply_rows(const float* __restrict__ a, const float* __restrict__ b,
                                              float* __restrict__ c, int row0, int lane) {
    for (int idx = row0 * kTile + lane; idx < (row0 + kRows) * kTile; idx += 32) {
        const int row = idx / kTile, col = idx % kTile;
        float acc = 0.0f;
#pragma unroll
        for (int k = 0; k < kTile; ++k) acc = fmaf(a[row * kTile + k], b[k * kTile + col], acc);
        c[idx] = acc;
    }
}

// One tile of C from shared memory to global memory by one warp, 4 bytes a lane (the book's store).
__device__ __forceinline__ void store_tile(float* __restrict__ dst, const float* __restrict__ c, int lane) {
    for (int i = lane; i < kTileElems; i += 32) dst[i] = c[i];
}

// 0: the book's baseline: one buffer per matrix, synchronous copies, three barriers per tile.
__global__ void __launch_bounds__(96) baseline_kernel(const float* __restrict__ A, const float* __restrict__ B,
                                                      float* __restrict__ C, int tiles) {
    __shared__ float a_s[kTileElems], b_s[kTileElems], c_s[kTileElems];    // 48 KiB
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
        const long long base = static_cast<long long>(t) * kTileElems;
        if (warp == 0) {
            for (int i = lane; i < kTileElems; i += 32) {
                a_s[i] = A[base + i];
                b_s[i] = B[base + i];
            }
        }
        __syncthreads();                              // A and B are in shared memory
        if (warp == 1) multiply_rows<kTile>(a_s, b_s, c_s, 0, lane);
        __syncthreads();                              // C is complete
        if (warp == 2) store_tile(C + base, c_s, lane);
        __syncthreads();                              // every buffer is free for the next tile
    }
}

struct Stage {
    float* a;
    float* b;
    float* c;
};

__device__ __forceinline__ Stage stage_at(float* smem, int s) {
    float* base = smem + s * 3 * kTileElems;
    return {base, base + kTileElems, base + 2 * kTileElems};
}

// The loader warp's copy of tile t into stage `st`: both 16 KiB matrices as warp-collective
// cp.async (lane l copies 16-byte chunks l, l + 32, ...), completion tracked by the pipeline.
__device__ __forceinline__ void issue_tile(cuda::pipeline<cuda::thread_scope_block>& pipe,
                                           const cg::thread_block_tile<32>& warp, const Stage& st,
                                           const float* __restrict__ A, const float* __restrict__ B, int t) {
    const long long base = static_cast<long long>(t) * kTileElems;
    pipe.producer_acquire();                          // the consumers released this stage
    cuda::memcpy_async(warp, st.a, A + base, cuda::aligned_size_t<16>(kTileElems * sizeof(float)), pipe);
    cuda::memcpy_async(warp, st.b, B + base, cuda::aligned_size_t<16>(kTileElems * sizeof(float)), pipe);
    pipe.producer_commit();
}

// 1, 2: warp 0 loads (the pipeline's only producer), warps 1..kComputeWarps multiply (each
// 64 / kComputeWarps rows), warp kComputeWarps + 1 stores. Every warp walks the block's tiles
// in the same order; tile i lives in stage i % 2.
template <int kComputeWarps>
__global__ void __launch_bounds__((kComputeWarps + 2) * 32)
pipelined_kernel(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int tiles) {
    static_assert(kTile % kComputeWarps == 0, "compute warps split the tile's rows evenly");
    constexpr int kRows = kTile / kComputeWarps;
    constexpr int kStoreWarp = kComputeWarps + 1;
    extern __shared__ __align__(16) float smem[];                        // [stage][A, B, C]
    __shared__ alignas(alignof(PipeState)) unsigned char state[sizeof(PipeState)];
    const auto block = cg::this_thread_block();
    const auto warp_group = cg::tiled_partition<32>(block);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const bool loader = warp == 0;
    // Barrier counts: produced = 32 (warp 0), consumed = every other thread (the store warp
    // too: it takes part in consumer_wait/consumer_release so the counts are exact).
    auto pipe = cuda::make_pipeline(block, reinterpret_cast<PipeState*>(state),
                                    loader ? cuda::pipeline_role::producer : cuda::pipeline_role::consumer);
    int next = blockIdx.x;                            // the next tile warp 0 issues
    if (loader) {
        for (int s = 0; s < kStages && next < tiles; ++s, next += gridDim.x)
            issue_tile(pipe, warp_group, stage_at(smem, s), A, B, next);
    }
    int i = 0;
    for (int t = blockIdx.x; t < tiles; t += gridDim.x, ++i) {
        const Stage st = stage_at(smem, i % kStages);
        if (!loader) {
            pipe.consumer_wait();                     // tile t's A and B have landed
            if (warp <= kComputeWarps) multiply_rows<kRows>(st.a, st.b, st.c, (warp - 1) * kRows, lane);
            pipe.consumer_release();                  // A and B of this stage may be refilled
        } else if (next < tiles) {
            issue_tile(pipe, warp_group, st, A, B, next);   // tile i + 2 into the stage tile i used
            next += gridDim.x;
        }
        // C of tile t is complete, and the store warp has finished tile t - 1, whose C stage
        // the compute warps write next (tile t + 1 uses the other one).
        __syncthreads();
        if (warp == kStoreWarp) store_tile(C + static_cast<long long>(t) * kTileElems, st.c, lane);
    }
}

using Kernel = void (*)(const float*, const float*, float*, int);

struct Launch {
    Kernel kernel;
    int threads;
    size_t dynamic_smem;
};

Launch launch_for(int variant) {
    switch (variant) {
        case 0: return {baseline_kernel, 96, 0};
        case 1: return {pipelined_kernel<1>, 96, kPipelinedSmem};
        case 2: return {pipelined_kernel<4>, 192, kPipelinedSmem};
        default: return {nullptr, 0, 0};
    }
}

// The pipelined kernels need 96 KiB of dynamic shared memory, above the 48 KiB a launch gets
// without opting in: set once per (device, kernel).
cudaError_t opt_in_smem(int variant, const Launch& l) {
    static bool done[kMaxDevices][kVariants] = {};
    if (l.dynamic_smem == 0) return cudaSuccess;
    int device = 0;
    cudaError_t err = cudaGetDevice(&device);
    if (err != cudaSuccess) return err;
    if (device >= kMaxDevices) return cudaErrorInvalidDevice;
    if (!done[device][variant]) {
        err = cudaFuncSetAttribute(l.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   static_cast<int>(l.dynamic_smem));
        if (err != cudaSuccess) return err;
        done[device][variant] = true;
    }
    return cudaSuccess;
}

}  // namespace

// variant: 0 baseline, 1 pipelined, 2 pipelined_4compute. A, B, C: tiles x 64 x 64 fp32,
// row-major per tile, 16-byte aligned, C not overlapping A or B. Returns a cudaError_t as int
// (cudaErrorInvalidValue / cudaErrorMisalignedAddress before any CUDA call for bad arguments).
extern "C" int aisp_wsp_gemm(int variant, const float* A, const float* B, float* C, int tiles, cudaStream_t stream) {
    const Launch l = launch_for(variant);
    if (l.kernel == nullptr || A == nullptr || B == nullptr || C == nullptr || tiles < 1) return cudaErrorInvalidValue;
    if ((reinterpret_cast<std::uintptr_t>(A) | reinterpret_cast<std::uintptr_t>(B) |
         reinterpret_cast<std::uintptr_t>(C)) % 16 != 0)
        return cudaErrorMisalignedAddress;
    cudaError_t err = opt_in_smem(variant, l);
    if (err != cudaSuccess) return static_cast<int>(err);
    const int grid = tiles < kMaxGrid ? tiles : kMaxGrid;
    l.kernel<<<grid, l.threads, l.dynamic_smem, stream>>>(A, B, C, tiles);
    return static_cast<int>(cudaGetLastError());
}

extern "C" const char* aisp_wsp_gemm_error_string(int code) {
    return cudaGetErrorString(static_cast<cudaError_t>(code));
}
