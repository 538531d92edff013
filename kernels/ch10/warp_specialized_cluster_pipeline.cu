// Batched 96 x 96 FP32 GEMM, C[t] = A[t] B[t] for every tile t, computed 4 times over (the book's
// kComputeRepeats), by 4-CTA thread-block clusters with warp-specialized CTAs of 3 warps:
//   warp 0 of the leader CTA (rank 0) stages A[t] and B[t] into the leader's shared memory;
//   warp 1 of every CTA computes its 24-row band of C[t], reading A[t] and B[t] from the leader's
//          shared memory through DSMEM (cluster.map_shared_rank(ptr, 0));
//   warp 2 of every CTA stores the band (shared -> global, 16-byte stores).
// The grid is persistent: min(tiles, clusters) clusters, clusters = the caller's cap or, when 0,
// cudaOccupancyMaxActiveClusters (one wave); cluster c takes tiles c, c + clusters, ...
// Four variants differ ONLY in how the leader's warp 0 stages a tile (same grid, same 153 KiB of
// dynamic shared memory, same compute and store code, the same two cluster barriers per tile):
//   0 baseline             scalar loads, synchronous (LDG.32 -> STS.32), one buffer
//   1 vector_copy          16-byte loads, synchronous (LDG.128 -> STS.128), one buffer
//   2 async_copy           cp.async of 16 bytes (warp-collective cuda::memcpy_async into a
//                          per-thread cuda::pipeline), committed and waited at once, one buffer:
//                          what the book's optimized kernel does when a cluster has one tile
//   3 async_copy_pipeline  the same copies into two buffers: the cluster's next tile (t + clusters)
//                          is issued right after the barrier that publishes tile t, so it lands
//                          while t is computed and stored (the book's optimized kernel with tiles
//                          to prefetch)
// The pipeline is thread-scope (cuda::make_pipeline(), no shared state): only the loader warp's
// 32 lanes produce, each waits for its own cp.async groups (cp.async.wait_group), and the
// consumers, in four CTAs, are reached by cluster.sync() alone. A block-scope pipeline would make
// its mbarriers expect every thread of the block, while here one warp produces and the readers
// live in other CTAs that cannot wait on a block-scope barrier anyway.
#include <cooperative_groups.h>
#include <cuda/pipeline>
#include <cuda_runtime.h>

#include <cstdint>

namespace cg = cooperative_groups;

namespace {

constexpr int kTile = 96;
constexpr int kTileElems = kTile * kTile;                 // 9216 floats = 36 KiB
constexpr int kClusterSize = 4;
constexpr int kBandRows = kTile / kClusterSize;           // 24 rows of C per CTA
constexpr int kBandElems = kBandRows * kTile;             // 2304
constexpr int kWarps = 3;
constexpr int kThreads = kWarps * 32;
constexpr int kLoaderWarp = 0, kComputeWarp = 1, kStoreWarp = 2;
constexpr int kColsPerLane = kTile / 32;                  // lane owns columns lane, lane + 32, lane + 64
constexpr int kRepeats = 4;
constexpr int kStages = 2;
constexpr int kCopyUnroll = 4;                            // both synchronous copies: 4 iterations in flight
constexpr int kSmemFloats = 2 * kStages * kTileElems + kBandElems;
constexpr int kSmemBytes = kSmemFloats * static_cast<int>(sizeof(float));   // 156,672 bytes
constexpr int kVariants = 4;
constexpr int kMaxDevices = 64;

enum Staging : int { kScalar = 0, kVector = 1, kAsync = 2, kAsyncPrefetch = 3 };

// Synchronous staging of one tile of A and one of B by the 32 lanes of the loader warp.
template <int kMode>
__device__ __forceinline__ void stage_sync(float* __restrict__ as, float* __restrict__ bs,
                                           const float* __restrict__ a, const float* __restrict__ b, int lane) {
    if constexpr (kMode == kScalar) {
#pragma unroll kCopyUnroll
        for (int it = 0; it < kTileElems / 32; ++it) {              // 288 per lane per matrix
            const int i = it * 32 + lane;
            as[i] = a[i];
            bs[i] = b[i];
        }
    } else {
        const float4* __restrict__ a4 = reinterpret_cast<const float4*>(a);
        const float4* __restrict__ b4 = reinterpret_cast<const float4*>(b);
        float4* __restrict__ as4 = reinterpret_cast<float4*>(as);
        float4* __restrict__ bs4 = reinterpret_cast<float4*>(bs);
#pragma unroll kCopyUnroll
        for (int it = 0; it < kTileElems / 4 / 32; ++it) {          // 72 per lane per matrix
            const int i = it * 32 + lane;
            as4[i] = a4[i];
            bs4[i] = b4[i];
        }
    }
}

// Issue one tile of A and one of B as warp-collective 16-byte cp.async (72 per lane per matrix)
// and close them as one group of this lane's pipeline.
__device__ __forceinline__ void stage_async(cuda::pipeline<cuda::thread_scope_thread>& pipe, float* as, float* bs,
                                            const float* a, const float* b) {
    const auto warp = cg::tiled_partition<32>(cg::this_thread_block());
    pipe.producer_acquire();
    cuda::memcpy_async(warp, as, a, cuda::aligned_size_t<16>(kTileElems * sizeof(float)), pipe);
    cuda::memcpy_async(warp, bs, b, cuda::aligned_size_t<16>(kTileElems * sizeof(float)), pipe);
    pipe.producer_commit();
}

// Rows [row0, row0 + 24) of A B, accumulated kRepeats times in one chain per output (so that no
// repeat can be folded into another), then scaled back by 1/kRepeats: with integer-valued inputs
// every partial sum is an integer below 2^24 and the result is exactly A B. `a` and `b` point
// into the leader's shared memory through the cluster's shared window (DSMEM): A is read as
// 16-byte broadcasts (one address per warp), B as consecutive columns (conflict-free).
__device__ __forceinline__ void compute_band(const float* __restrict__ a, const float* __restrict__ b,
                                             float* __restrict__ band, int row0, int lane) {
    float acc[kBandRows][kColsPerLane];
#pragma unroll
    for (int i = 0; i < kBandRows; ++i)
#pragma unroll
        for (int j = 0; j < kColsPerLane; ++j) acc[i][j] = 0.0f;
#pragma unroll 1
    for (int r = 0; r < kRepeats; ++r) {
        // 4 k-steps of 4 per loop trip: ptxas issues a step's 36 loads among the previous step's
        // 288 FFMAs, so one warp exposes the DSMEM latency once per 16 k instead of every 4
        // (~250 registers, no spills; a longer body would only grow the code one warp runs).
#pragma unroll 4
        for (int k = 0; k < kTile; k += 4) {
            float bv[4][kColsPerLane];
#pragma unroll
            for (int kk = 0; kk < 4; ++kk)
#pragma unroll
                for (int j = 0; j < kColsPerLane; ++j) bv[kk][j] = b[(k + kk) * kTile + lane + 32 * j];
#pragma unroll
            for (int i = 0; i < kBandRows; ++i) {
                const float4 av = *reinterpret_cast<const float4*>(a + (row0 + i) * kTile + k);
#pragma unroll
                for (int j = 0; j < kColsPerLane; ++j) {
                    acc[i][j] = fmaf(av.x, bv[0][j], acc[i][j]);
                    acc[i][j] = fmaf(av.y, bv[1][j], acc[i][j]);
                    acc[i][j] = fmaf(av.z, bv[2][j], acc[i][j]);
                    acc[i][j] = fmaf(av.w, bv[3][j], acc[i][j]);
                }
            }
        }
    }
#pragma unroll
    for (int i = 0; i < kBandRows; ++i)
#pragma unroll
        for (int j = 0; j < kColsPerLane; ++j) band[i * kTile + lane + 32 * j] = acc[i][j] * (1.0f / kRepeats);
}

// The band is 24 whole rows of C[t]: one contiguous run of 2304 floats, 18 float4 per lane.
__device__ __forceinline__ void store_band(const float* __restrict__ band, float* __restrict__ c, int lane) {
    const float4* __restrict__ src = reinterpret_cast<const float4*>(band);
    float4* __restrict__ dst = reinterpret_cast<float4*>(c);
#pragma unroll
    for (int it = 0; it < kBandElems / 4 / 32; ++it) dst[it * 32 + lane] = src[it * 32 + lane];
}

template <int kMode>
__global__ void __launch_bounds__(kThreads, 1)
cluster_pipeline_kernel(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int tiles) {
    extern __shared__ __align__(16) float smem[];
    float* a_buf = smem;                                   // [kStages][kTileElems] (stage 1 unused by 0-2)
    float* b_buf = smem + kStages * kTileElems;            // [kStages][kTileElems]
    float* band = smem + 2 * kStages * kTileElems;         // [kBandRows][kTile], this CTA's rows of C[t]
    cg::cluster_group cluster = cg::this_cluster();
    const unsigned rank = cluster.block_rank();
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const bool loader = rank == 0 && warp == kLoaderWarp;
    const int clusters = static_cast<int>(gridDim.x) / kClusterSize;
    const int first = static_cast<int>(blockIdx.x) / kClusterSize;   // 1-D clusters: consecutive blocks
    auto pipe = cuda::make_pipeline();                     // per thread; only the loader's lanes use it

    auto tile_a = [&](int t) { return A + static_cast<long long>(t) * kTileElems; };
    auto tile_b = [&](int t) { return B + static_cast<long long>(t) * kTileElems; };

    if constexpr (kMode == kAsyncPrefetch) {
        if (loader && first < tiles) stage_async(pipe, a_buf, b_buf, tile_a(first), tile_b(first));
    }
    int stage = 0;
    for (int t = first; t < tiles; t += clusters) {
        if (loader) {
            if constexpr (kMode == kScalar || kMode == kVector) {
                stage_sync<kMode>(a_buf, b_buf, tile_a(t), tile_b(t), lane);
            } else {
                if constexpr (kMode == kAsync) stage_async(pipe, a_buf, b_buf, tile_a(t), tile_b(t));
                cuda::pipeline_consumer_wait_prior<0>(pipe);   // all of this lane's copies (tile t) landed
            }
        }
        // cp.async.wait_group, then the cluster barrier (arrive.release / wait.acquire) publishes the
        // copies to all 4 CTAs. compute-sanitizer racecheck (2025.3.1) still reports every DSMEM read
        // of cp.async-written data as a race, with or without a bar.sync here: its own probe
        // (benchmarks/probes/synccheck_pipeline.cu modes 6 and 7) draws the report for cp.async and
        // none for plain stores under the same barriers. See kernels/ch10/README.md.
        cluster.sync();   // tile t is in the leader's buffer `stage`, visible to all 4 CTAs
        if constexpr (kMode == kAsyncPrefetch) {
            const int next = t + clusters;                 // refills the buffer tile t - clusters used
            if (loader && next < tiles) {
                stage_async(pipe, a_buf + (stage ^ 1) * kTileElems, b_buf + (stage ^ 1) * kTileElems,
                            tile_a(next), tile_b(next));
            }
        }
        if (warp == kComputeWarp) {
            compute_band(cluster.map_shared_rank(a_buf + stage * kTileElems, 0),
                         cluster.map_shared_rank(b_buf + stage * kTileElems, 0), band,
                         static_cast<int>(rank) * kBandRows, lane);
        }
        __syncthreads();  // the band is complete
        if (warp == kStoreWarp) {
            store_band(band, C + static_cast<long long>(t) * kTileElems + static_cast<long long>(rank) * kBandElems, lane);
        }
        cluster.sync();   // every CTA is done with buffer `stage` (and its band) before they are reused;
                          // after the last tile: the leader's shared memory outlives every DSMEM read
        if constexpr (kMode == kAsyncPrefetch) stage ^= 1;
    }
}

using Kernel = void (*)(const float*, const float*, float*, int);

Kernel kernel_for(int variant) {
    switch (variant) {
        case 0: return cluster_pipeline_kernel<kScalar>;
        case 1: return cluster_pipeline_kernel<kVector>;
        case 2: return cluster_pipeline_kernel<kAsync>;
        case 3: return cluster_pipeline_kernel<kAsyncPrefetch>;
        default: return nullptr;
    }
}

// Per device and variant: the dynamic shared memory opt-in done, and how many 4-CTA clusters
// with 153 KiB each can be resident at once (0: none, the pair cannot run here).
struct Where {
    int ready;             // 0 unknown, 1 asked
    int max_clusters;
    int sm_count;
};

cudaError_t where(int variant, Where* out) {
    static Where cache[kMaxDevices][kVariants] = {};
    int device = 0;
    cudaError_t err = cudaGetDevice(&device);
    if (err != cudaSuccess) return err;
    if (device >= kMaxDevices) return cudaErrorInvalidDevice;
    Where& w = cache[device][variant];
    if (!w.ready) {
        int cluster_launch = 0, optin = 0, sms = 0;
        if ((err = cudaDeviceGetAttribute(&cluster_launch, cudaDevAttrClusterLaunch, device)) != cudaSuccess) return err;
        if ((err = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device)) != cudaSuccess)
            return err;
        if ((err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device)) != cudaSuccess) return err;
        int clusters = 0;
        if (cluster_launch && optin >= kSmemBytes) {
            const Kernel kernel = kernel_for(variant);
            err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
            if (err != cudaSuccess) return err;
            cudaLaunchAttribute attr{};
            attr.id = cudaLaunchAttributeClusterDimension;
            attr.val.clusterDim.x = kClusterSize;
            attr.val.clusterDim.y = 1;
            attr.val.clusterDim.z = 1;
            cudaLaunchConfig_t config{};
            config.gridDim = dim3(kClusterSize);
            config.blockDim = dim3(kThreads);
            config.dynamicSmemBytes = kSmemBytes;
            config.attrs = &attr;
            config.numAttrs = 1;
            err = cudaOccupancyMaxActiveClusters(&clusters, kernel, &config);
            if (err != cudaSuccess) return err;
        }
        w.max_clusters = clusters;
        w.sm_count = sms;
        w.ready = 1;
    }
    *out = w;
    return cudaSuccess;
}

// Clusters in the grid: min(tiles, cap), cap = `clusters` if > 0, else the resident maximum.
int grid_clusters(const Where& w, int tiles, int clusters) {
    const int cap = clusters > 0 ? clusters : w.max_clusters;
    return tiles < cap ? tiles : cap;
}

bool valid(int variant, const float* A, const float* B, const float* C, int tiles, int clusters) {
    if (variant < 0 || variant >= kVariants || A == nullptr || B == nullptr || C == nullptr) return false;
    return tiles >= 1 && clusters >= 0 && clusters <= (1 << 28);
}

}  // namespace

// variant: 0 baseline, 1 vector_copy, 2 async_copy, 3 async_copy_pipeline. A, B, C: `tiles`
// row-major 96 x 96 fp32 tiles each, 16-byte aligned, C not overlapping A or B; C[t] = A[t] B[t].
// clusters: the most 4-CTA clusters to launch (0: as many as can be resident). Returns a
// cudaError_t as int: cudaErrorInvalidValue / cudaErrorMisalignedAddress for bad arguments
// (before any CUDA call), cudaErrorNotSupported where no such cluster can be resident.
extern "C" int aisp_wscp(int variant, const float* A, const float* B, float* C, int tiles, int clusters,
                         cudaStream_t stream) {
    if (!valid(variant, A, B, C, tiles, clusters)) return cudaErrorInvalidValue;
    if ((reinterpret_cast<std::uintptr_t>(A) | reinterpret_cast<std::uintptr_t>(B) |
         reinterpret_cast<std::uintptr_t>(C)) % 16 != 0)
        return cudaErrorMisalignedAddress;
    Where w{};
    const cudaError_t err = where(variant, &w);
    if (err != cudaSuccess) return static_cast<int>(err);
    if (w.max_clusters < 1) return cudaErrorNotSupported;
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = kClusterSize;
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(static_cast<unsigned>(kClusterSize * grid_clusters(w, tiles, clusters)));
    config.blockDim = dim3(kThreads);
    config.dynamicSmemBytes = kSmemBytes;
    config.stream = stream;
    config.attrs = &attr;
    config.numAttrs = 1;
    return static_cast<int>(cudaLaunchKernelEx(&config, kernel_for(variant), A, B, C, tiles));
}

// cudaSuccess if every variant's 4-CTA clusters (96 threads, 153 KiB of dynamic shared memory
// each) can be resident on the current device, cudaErrorNotSupported if not (no cluster launch,
// too little opt-in shared memory, or cudaOccupancyMaxActiveClusters = 0), or the error that
// stopped the question.
extern "C" int aisp_wscp_cluster_support() {
    for (int v = 0; v < kVariants; ++v) {
        Where w{};
        const cudaError_t err = where(v, &w);
        if (err != cudaSuccess) return static_cast<int>(err);
        if (w.max_clusters < 1) return cudaErrorNotSupported;
    }
    return cudaSuccess;
}

// Launch shape and resources of one variant on the current device, into out[7]: clusters in the
// grid for (tiles, clusters), max resident clusters, most tiles any cluster takes, dynamic shared
// bytes, registers per thread, local bytes per thread, SM count.
extern "C" int aisp_wscp_info(int variant, int tiles, int clusters, int* out) {
    if (out == nullptr || variant < 0 || variant >= kVariants || tiles < 1 || clusters < 0) return cudaErrorInvalidValue;
    Where w{};
    cudaError_t err = where(variant, &w);
    if (err != cudaSuccess) return static_cast<int>(err);
    cudaFuncAttributes attrs{};
    if ((err = cudaFuncGetAttributes(&attrs, kernel_for(variant))) != cudaSuccess) return static_cast<int>(err);
    const int grid = w.max_clusters > 0 ? grid_clusters(w, tiles, clusters) : 0;
    out[0] = grid;
    out[1] = w.max_clusters;
    out[2] = grid > 0 ? (tiles + grid - 1) / grid : 0;
    out[3] = kSmemBytes;
    out[4] = attrs.numRegs;
    out[5] = static_cast<int>(attrs.localSizeBytes);
    out[6] = w.sm_count;
    return cudaSuccess;
}

extern "C" const char* aisp_wscp_error_string(int code) {
    return cudaGetErrorString(static_cast<cudaError_t>(code));
}
