// Per-chunk sum and sum of squares (out[c] = {sum x, sum x^2} over chunk c of 2048 fp32), four ways:
//   0 baseline           per-element global atomics: grid = chunks x 256 threads, 8 elements per
//                        thread, 2 atomicAdd per element into out[c]; out zeroed by
//                        cudaMemsetAsync inside the call.
//   1 cluster2_dsmem     a 2-CTA cluster per chunk (runtime cluster attribute): rank 0 loads the
//                        chunk into its shared memory, cluster.sync(), both CTAs read it through
//                        map_shared_rank (DSMEM), rank 0 reduces the sum, rank 1 the sum of
//                        squares; a final cluster.sync() keeps rank 0's tile alive for rank 1.
//   2 block_reduce       no cluster: min(chunks, 4 x SMs) blocks stride over the chunks and
//                        reduce both stats with warp shuffles.
//   3 single_cta_float4  one CTA per chunk, float4 loads, both stats reduced with warp shuffles.
// Variants 1-3 write every output exactly once, so they need no memset.
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace cg = cooperative_groups;

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kItems = 8;                            // elements per thread per chunk
constexpr int kChunk = kThreads * kItems;            // 2048
constexpr int kVariants = 4;
constexpr int kMaxDevices = 64;
constexpr int kBlocksPerSm = 4;                      // block_reduce's grid: min(chunks, 4 x SMs)

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

// Both stats summed over the block, valid in thread 0. `partials` is double buffered by the
// caller (chunk parity) so a block that loops over chunks needs one __syncthreads per chunk.
__device__ __forceinline__ float2 block_sum2(float2 v, float2* __restrict__ partials) {
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    v.x = warp_sum(v.x);
    v.y = warp_sum(v.y);
    if (lane == 0) partials[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < kWarps ? partials[lane] : make_float2(0.0f, 0.0f);
        v.x = warp_sum(v.x);
        v.y = warp_sum(v.y);
    }
    return v;
}

__device__ __forceinline__ float block_sum(float v, float* __restrict__ partials) {
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    v = warp_sum(v);
    if (lane == 0) partials[warp] = v;
    __syncthreads();
    if (warp == 0) v = warp_sum(lane < kWarps ? partials[lane] : 0.0f);
    return v;
}

// 0: two global atomics per element, 2048 of each per output address.
__global__ void __launch_bounds__(kThreads) atomics_kernel(const float* __restrict__ x, long long n,
                                                           float* __restrict__ out) {
    const long long base = static_cast<long long>(blockIdx.x) * kChunk;
    float* __restrict__ o = out + 2 * static_cast<long long>(blockIdx.x);
#pragma unroll
    for (int i = 0; i < kItems; ++i) {
        const long long j = base + threadIdx.x + i * kThreads;
        if (j < n) {
            const float v = x[j];
            atomicAdd(o, v);
            atomicAdd(o + 1, v * v);
        }
    }
}

// 1: rank 0 stages the chunk; both ranks read it over DSMEM; rank r writes stat r.
__global__ void __launch_bounds__(kThreads) cluster2_dsmem_kernel(const float* __restrict__ x, long long n,
                                                                  float* __restrict__ out) {
    __shared__ float tile[kChunk];
    __shared__ float partials[kWarps];
    cg::cluster_group cluster = cg::this_cluster();
    const unsigned rank = cluster.block_rank();
    const long long chunk = blockIdx.x / 2;
    const long long base = chunk * kChunk;
    if (rank == 0) {
#pragma unroll
        for (int i = 0; i < kItems; ++i) {
            const int j = threadIdx.x + i * kThreads;
            tile[j] = base + j < n ? x[base + j] : 0.0f;
        }
    }
    cluster.sync();   // the tile is written and visible cluster-wide; rank 0 is running
    const float* __restrict__ src = cluster.map_shared_rank(tile, 0);
    float acc = 0.0f;
#pragma unroll
    for (int i = 0; i < kItems; ++i) {
        const float v = src[threadIdx.x + i * kThreads];
        acc += rank == 0 ? v : v * v;
    }
    acc = block_sum(acc, partials);
    if (threadIdx.x == 0) out[2 * chunk + rank] = acc;
    cluster.sync();   // rank 0 may not exit (freeing its tile) while rank 1 still reads it
}

// 2: a grid-stride loop over chunks, scalar loads, both stats per block.
__global__ void __launch_bounds__(kThreads) block_reduce_kernel(const float* __restrict__ x, long long n,
                                                                float* __restrict__ out, int chunks) {
    __shared__ float2 partials[2][kWarps];
    int parity = 0;
    for (int c = blockIdx.x; c < chunks; c += gridDim.x, parity ^= 1) {
        const long long base = static_cast<long long>(c) * kChunk;
        float2 acc = make_float2(0.0f, 0.0f);
#pragma unroll
        for (int i = 0; i < kItems; ++i) {
            const long long j = base + threadIdx.x + i * kThreads;
            const float v = j < n ? x[j] : 0.0f;
            acc.x += v;
            acc.y += v * v;
        }
        acc = block_sum2(acc, partials[parity]);
        if (threadIdx.x == 0) reinterpret_cast<float2*>(out)[c] = acc;
    }
}

// 3: one CTA per chunk, two float4 per thread (a full chunk starts 8 KiB-aligned when x is
// 16-byte aligned); a short last chunk takes the checked scalar path.
__global__ void __launch_bounds__(kThreads) single_cta_float4_kernel(const float* __restrict__ x, long long n,
                                                                     float* __restrict__ out) {
    __shared__ float2 partials[kWarps];
    const long long base = static_cast<long long>(blockIdx.x) * kChunk;
    float2 acc = make_float2(0.0f, 0.0f);
    if (base + kChunk <= n) {
        const float4* __restrict__ x4 = reinterpret_cast<const float4*>(x + base);
#pragma unroll
        for (int i = 0; i < kItems / 4; ++i) {
            const float4 v = x4[threadIdx.x + i * kThreads];
            acc.x += (v.x + v.y) + (v.z + v.w);
            acc.y += (v.x * v.x + v.y * v.y) + (v.z * v.z + v.w * v.w);
        }
    } else {
        for (long long j = base + threadIdx.x; j < n; j += kThreads) {
            const float v = x[j];
            acc.x += v;
            acc.y += v * v;
        }
    }
    acc = block_sum2(acc, partials);
    if (threadIdx.x == 0) reinterpret_cast<float2*>(out)[blockIdx.x] = acc;
}

// Cluster launch support and SM count, asked once per device.
struct DeviceInfo {
    int clusters;   // 0 unknown, 1 yes, 2 no
    int sm_count;
};

cudaError_t device_info(DeviceInfo* out) {
    static DeviceInfo cache[kMaxDevices] = {};
    int device = 0;
    cudaError_t err = cudaGetDevice(&device);
    if (err != cudaSuccess) return err;
    if (device >= kMaxDevices) return cudaErrorInvalidDevice;
    DeviceInfo& info = cache[device];
    if (info.clusters == 0) {
        int supported = 0, sms = 0;
        err = cudaDeviceGetAttribute(&supported, cudaDevAttrClusterLaunch, device);
        if (err != cudaSuccess) return err;
        err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
        if (err != cudaSuccess) return err;
        info.sm_count = sms;
        info.clusters = supported ? 1 : 2;
    }
    *out = info;
    return cudaSuccess;
}

cudaError_t launch_cluster2(unsigned chunks, const float* x, long long n, float* out, cudaStream_t stream) {
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = 2;
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(2 * chunks);
    config.blockDim = dim3(kThreads);
    config.stream = stream;
    config.attrs = &attr;
    config.numAttrs = 1;
    return cudaLaunchKernelEx(&config, cluster2_dsmem_kernel, x, n, out);
}

}  // namespace

// variant: 0 baseline, 1 cluster2_dsmem, 2 block_reduce, 3 single_cta_float4. out: ceil(n / 2048)
// x 2 floats ({sum, sum of squares} per chunk). x and out 16-byte aligned. Returns a cudaError_t
// as int: cudaErrorNotSupported for cluster2_dsmem on a device without cluster launch.
extern "C" int aisp_cluster_group(int variant, const float* x, long long n, float* out, cudaStream_t stream) {
    if (variant < 0 || variant >= kVariants || x == nullptr || out == nullptr || n < 1) return cudaErrorInvalidValue;
    if ((reinterpret_cast<std::uintptr_t>(x) | reinterpret_cast<std::uintptr_t>(out)) % 16 != 0)
        return cudaErrorMisalignedAddress;
    const long long chunks = (n + kChunk - 1) / kChunk;
    if (2 * chunks >= (1LL << 31)) return cudaErrorInvalidValue;
    DeviceInfo info{};
    cudaError_t err = device_info(&info);
    if (err != cudaSuccess) return static_cast<int>(err);
    const unsigned grid = static_cast<unsigned>(chunks);
    switch (variant) {
        case 0:
            err = cudaMemsetAsync(out, 0, static_cast<size_t>(chunks) * 2 * sizeof(float), stream);
            if (err != cudaSuccess) return static_cast<int>(err);
            atomics_kernel<<<grid, kThreads, 0, stream>>>(x, n, out);
            break;
        case 1:
            if (info.clusters != 1) return cudaErrorNotSupported;
            return static_cast<int>(launch_cluster2(grid, x, n, out, stream));
        case 2: {
            const long long cap = static_cast<long long>(kBlocksPerSm) * info.sm_count;
            block_reduce_kernel<<<static_cast<unsigned>(chunks < cap ? chunks : cap), kThreads, 0, stream>>>(
                x, n, out, static_cast<int>(chunks));
            break;
        }
        case 3: single_cta_float4_kernel<<<grid, kThreads, 0, stream>>>(x, n, out); break;
        default: return cudaErrorInvalidValue;
    }
    return static_cast<int>(cudaGetLastError());
}

// cudaSuccess if the current device launches thread-block clusters (cudaDevAttrClusterLaunch),
// cudaErrorNotSupported if not, or the error that stopped the question.
extern "C" int aisp_cluster_group_cluster_support() {
    DeviceInfo info{};
    const cudaError_t err = device_info(&info);
    if (err != cudaSuccess) return static_cast<int>(err);
    return info.clusters == 1 ? cudaSuccess : cudaErrorNotSupported;
}

extern "C" const char* aisp_cluster_group_error_string(int code) {
    return cudaGetErrorString(static_cast<cudaError_t>(code));
}
