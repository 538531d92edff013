// Segmented sum, six ways: where do the per-block partial sums meet?
//
// out[g] = sum of x[g * 16384 .. (g + 1) * 16384) (the last segment may be short). Every variant
// streams x once from DRAM with 256-thread blocks that each reduce their slice with warp shuffles
// and shared memory; they differ only in how the partial sums of one segment are combined:
//   0 baseline                 two kernels: partials to a global scratch buffer, then a second
//                              kernel adds each group of 4 (the book's two-pass reduction).
//   1 block_atomic             one kernel: one global atomicAdd (RED) per block into out[block/4];
//                              out is zeroed by cudaMemsetAsync inside the call.
//   2 cluster4_dsmem_atomic    4-CTA clusters set at launch (cudaLaunchKernelEx): each CTA adds its
//                              sum into the leader CTA's shared accumulator over DSMEM
//                              (map_shared_rank + atomicAdd); the leader writes out[cluster].
//   3 cluster2_leader_read     2-CTA clusters, 8192 elements per CTA: the leader reads the peer's
//                              partial over DSMEM (no atomics) and writes out[cluster].
//   4 cluster4_dims            variant 2 with compile-time __cluster_dims__(4, 1, 1) and <<< >>>.
//   5 cluster4_warp_specialized variant 2 with float4 loads (only warp 0 / lane 0 talks to the
//                              cluster, as in every variant here).
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace cg = cooperative_groups;

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kItems = 16;                            // elements per thread per block
constexpr int kBlockElems = kThreads * kItems;        // 4096
constexpr int kBlocksPerSegment = 4;
constexpr long long kSegment = static_cast<long long>(kBlockElems) * kBlocksPerSegment;   // 16384
constexpr int kVariants = 6;
constexpr int kMaxDevices = 64;

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

// Sum over the block, valid in warp 0 (thread 0 is the one that uses it). One call per kernel.
__device__ __forceinline__ float block_sum(float v, float* __restrict__ warp_sums) {
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    v = warp_sum(v);
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) v = warp_sum(lane < kWarps ? warp_sums[lane] : 0.0f);
    return v;
}

// This thread's share of x[begin, begin + kThreads * kPer) clipped to n. A full slice is read
// without bounds checks (kVec4: as float4, begin is a multiple of 4096 so 16-byte aligned when x
// is); only the slice that holds the end of x takes the checked scalar path.
template <int kPer, bool kVec4>
__device__ __forceinline__ float thread_sum(const float* __restrict__ x, long long n, long long begin) {
    float acc = 0.0f;
    if (begin + static_cast<long long>(kThreads) * kPer <= n) {
        if constexpr (kVec4) {
            const float4* __restrict__ x4 = reinterpret_cast<const float4*>(x + begin);
#pragma unroll
            for (int i = 0; i < kPer / 4; ++i) {
                const float4 v = x4[threadIdx.x + i * kThreads];
                acc += (v.x + v.y) + (v.z + v.w);
            }
        } else {
#pragma unroll
            for (int i = 0; i < kPer; ++i) acc += x[begin + threadIdx.x + i * kThreads];
        }
    } else {
        for (long long i = begin + threadIdx.x; i < n; i += kThreads) acc += x[i];
    }
    return acc;
}

__device__ __forceinline__ float block_slice_sum(const float* __restrict__ x, long long n) {
    __shared__ float warp_sums[kWarps];
    return block_sum(thread_sum<kItems, false>(x, n, static_cast<long long>(blockIdx.x) * kBlockElems), warp_sums);
}

// 0, pass 1: one partial per block (blocks past the end of x write 0).
__global__ void __launch_bounds__(kThreads) partials_kernel(const float* __restrict__ x, long long n,
                                                            float* __restrict__ partials) {
    const float s = block_slice_sum(x, n);
    if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

// 0, pass 2: out[g] = the 4 partials of segment g (one float4: partials holds 4 per segment).
__global__ void __launch_bounds__(kThreads) combine_kernel(const float4* __restrict__ partials, int segments,
                                                           float* __restrict__ out) {
    const int g = blockIdx.x * kThreads + threadIdx.x;
    if (g < segments) {
        const float4 p = partials[g];
        out[g] = (p.x + p.y) + (p.z + p.w);
    }
}

// 1: one global atomic per block; out was zeroed on the stream before this launch.
__global__ void __launch_bounds__(kThreads) block_atomic_kernel(const float* __restrict__ x, long long n,
                                                                float* __restrict__ out) {
    const float s = block_slice_sum(x, n);
    if (threadIdx.x == 0) atomicAdd(out + blockIdx.x / kBlocksPerSegment, s);
}

// 2, 4, 5: the leader (rank 0) zeroes its accumulator; the first cluster barrier publishes that
// zero and guarantees every CTA of the cluster is running before anyone touches DSMEM; each CTA
// adds its sum into the leader's accumulator; the second barrier makes every add visible to the
// leader and keeps the leader's shared memory alive until all peers' adds have landed.
template <bool kVec4>
__device__ __forceinline__ void cluster_atomic_body(const float* __restrict__ x, long long n,
                                                    float* __restrict__ out) {
    __shared__ float warp_sums[kWarps];
    __shared__ float acc;
    cg::cluster_group cluster = cg::this_cluster();
    const unsigned rank = cluster.block_rank();
    if (rank == 0 && threadIdx.x == 0) acc = 0.0f;
    cluster.sync();
    const float s = block_sum(thread_sum<kItems, kVec4>(x, n, static_cast<long long>(blockIdx.x) * kBlockElems),
                              warp_sums);
    if (threadIdx.x == 0) atomicAdd(cluster.map_shared_rank(&acc, 0), s);
    cluster.sync();
    if (rank == 0 && threadIdx.x == 0) out[blockIdx.x / kBlocksPerSegment] = acc;
}

__global__ void __launch_bounds__(kThreads) cluster4_atomic_kernel(const float* __restrict__ x, long long n,
                                                                   float* __restrict__ out) {
    cluster_atomic_body<false>(x, n, out);
}

__global__ void __cluster_dims__(kBlocksPerSegment, 1, 1) __launch_bounds__(kThreads)
cluster4_dims_kernel(const float* __restrict__ x, long long n, float* __restrict__ out) {
    cluster_atomic_body<false>(x, n, out);
}

__global__ void __launch_bounds__(kThreads) cluster4_vec4_kernel(const float* __restrict__ x, long long n,
                                                                 float* __restrict__ out) {
    cluster_atomic_body<true>(x, n, out);
}

// 3: clusters of 2, each CTA 8192 elements. The leader reads the peer's partial over DSMEM after
// the first barrier; the second keeps the peer (and its shared partial) alive until then.
__global__ void __launch_bounds__(kThreads) cluster2_leader_read_kernel(const float* __restrict__ x, long long n,
                                                                        float* __restrict__ out) {
    constexpr int kPer = 2 * kItems;
    __shared__ float warp_sums[kWarps];
    __shared__ float partial;
    cg::cluster_group cluster = cg::this_cluster();
    const float s = block_sum(thread_sum<kPer, false>(x, n, static_cast<long long>(blockIdx.x) * kThreads * kPer),
                              warp_sums);
    if (threadIdx.x == 0) partial = s;
    cluster.sync();
    if (cluster.block_rank() == 0 && threadIdx.x == 0) out[blockIdx.x / 2] = partial + *cluster.map_shared_rank(&partial, 1);
    cluster.sync();
}

// Whether this device launches clusters, asked once per device.
cudaError_t cluster_support() {
    static int cache[kMaxDevices] = {};   // 0 unknown, 1 yes, 2 no
    int device = 0;
    cudaError_t err = cudaGetDevice(&device);
    if (err != cudaSuccess) return err;
    if (device >= kMaxDevices) return cudaErrorInvalidDevice;
    if (cache[device] == 0) {
        int supported = 0;
        err = cudaDeviceGetAttribute(&supported, cudaDevAttrClusterLaunch, device);
        if (err != cudaSuccess) return err;
        cache[device] = supported ? 1 : 2;
    }
    return cache[device] == 1 ? cudaSuccess : cudaErrorNotSupported;
}

using Kernel = void (*)(const float*, long long, float*);

cudaError_t launch_cluster(Kernel kernel, unsigned blocks, unsigned cluster, const float* x, long long n,
                           float* out, cudaStream_t stream) {
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = cluster;
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(blocks);
    config.blockDim = dim3(kThreads);
    config.stream = stream;
    config.attrs = &attr;
    config.numAttrs = 1;
    return cudaLaunchKernelEx(&config, kernel, x, n, out);
}

}  // namespace

// variant: 0 baseline .. 5 cluster4_warp_specialized (see the top of this file). out holds
// ceil(n / 16384) floats; scratch (baseline only, else may be null) 4 floats per segment. x, out
// and scratch 16-byte aligned. Returns a cudaError_t as int: cudaErrorNotSupported when a cluster
// variant runs on a device without cluster launch (aisp_dsmem_reduction_cluster_support says so
// up front).
extern "C" int aisp_dsmem_reduction(int variant, const float* x, long long n, float* out, float* scratch,
                                    cudaStream_t stream) {
    if (variant < 0 || variant >= kVariants || x == nullptr || out == nullptr || n < 1) return cudaErrorInvalidValue;
    if ((reinterpret_cast<std::uintptr_t>(x) | reinterpret_cast<std::uintptr_t>(out) |
         reinterpret_cast<std::uintptr_t>(scratch)) % 16 != 0)
        return cudaErrorMisalignedAddress;
    const long long segments = (n + kSegment - 1) / kSegment;
    const long long blocks = segments * kBlocksPerSegment;
    if (blocks >= (1LL << 31)) return cudaErrorInvalidValue;
    const unsigned grid = static_cast<unsigned>(blocks);
    if (variant >= 2) {
        const cudaError_t err = cluster_support();
        if (err != cudaSuccess) return static_cast<int>(err);
    }
    switch (variant) {
        case 0:
            if (scratch == nullptr) return cudaErrorInvalidValue;
            partials_kernel<<<grid, kThreads, 0, stream>>>(x, n, scratch);
            combine_kernel<<<static_cast<unsigned>((segments + kThreads - 1) / kThreads), kThreads, 0, stream>>>(
                reinterpret_cast<const float4*>(scratch), static_cast<int>(segments), out);
            break;
        case 1: {
            const cudaError_t err = cudaMemsetAsync(out, 0, static_cast<size_t>(segments) * sizeof(float), stream);
            if (err != cudaSuccess) return static_cast<int>(err);
            block_atomic_kernel<<<grid, kThreads, 0, stream>>>(x, n, out);
            break;
        }
        case 2: return static_cast<int>(launch_cluster(cluster4_atomic_kernel, grid, 4, x, n, out, stream));
        case 3: return static_cast<int>(launch_cluster(cluster2_leader_read_kernel, grid / 2, 2, x, n, out, stream));
        case 4: cluster4_dims_kernel<<<grid, kThreads, 0, stream>>>(x, n, out); break;
        case 5: return static_cast<int>(launch_cluster(cluster4_vec4_kernel, grid, 4, x, n, out, stream));
        default: return cudaErrorInvalidValue;
    }
    return static_cast<int>(cudaGetLastError());
}

// cudaSuccess if the current device launches thread-block clusters (cudaDevAttrClusterLaunch),
// cudaErrorNotSupported if not, or the error that stopped the question.
extern "C" int aisp_dsmem_reduction_cluster_support() { return static_cast<int>(cluster_support()); }

extern "C" const char* aisp_dsmem_reduction_error_string(int code) {
    return cudaGetErrorString(static_cast<cudaError_t>(code));
}
