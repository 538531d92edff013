// FP32 GEMM C[M, N] = A[M, K] @ B[K, N] (all row-major fp32) with a deliberately thin CTA tile
// (4 x 128, TILE_K = 128, 128 threads x 4 outputs) so that each CTA reuses a B element only 4
// times and the B tile (128 x 128 fp32 = 64 KiB) dominates the traffic. Every variant is
// launched in clusters of `cluster` CTAs along M (16 by default, a non-portable size): the CTAs
// of one cluster share blockIdx.y, hence the same B tile at every k step. The three variants
// differ only in how that B tile reaches shared memory:
//   0 baseline          each CTA loads its own B tile with plain coalesced 4-byte loads (LDG +
//                       STS); a cluster reads the same 64 KiB from L2 `cluster` times.
//   1 multicast         cluster rank 0, thread 0 issues ONE TMA load of the B tile with
//                       .multicast::cluster and ctaMask = (1 << cluster) - 1: L2 is read once
//                       and the box lands at the same shared-memory offset in every CTA of the
//                       cluster, each CTA's mbarrier counting the 64 KiB (expect-tx). A cluster
//                       barrier before each issue makes sure every CTA has finished with the
//                       previous tile and armed its barrier.
//   2 tma_no_multicast  the control: every CTA issues its own TMA load of the B tile (no
//                       multicast, no cluster barrier). 1 vs 2 is what the multicast itself
//                       buys; 0 vs 2 what the bulk copy engine buys over per-thread loads.
// A is loaded with plain loads by every CTA in every variant (2 KiB per k step). The inner
// product is the same code everywhere: per k, one broadcast A value (LDS.128 covers 4 k) and
// one LDS.128 of 4 B columns per thread, 4 FFMAs.
//
// Shared memory (dynamic, 67,592 bytes, too much for static __shared__): the 64 KiB B tile at
// offset 0, the 2 KiB A tile, then the mbarrier. The same layout in every variant, so occupancy
// (3 CTAs per SM on an H100) is the same.
//
// Edges: M, N, K >= 1 and N a multiple of 4 (TMA needs a 16-byte row pitch; it also lets a
// thread store its 4 outputs as one float4). TMA zero-fills what sticks out of B, the plain
// loads do the same by hand; grid.x is rounded up to whole clusters and the padding CTAs take
// part in every barrier and multicast but store nothing. Pointers must be 16-byte aligned.
// The CUtensorMap is encoded once by aisp_cluster_multicast_encode_b (host, through the driver
// entry point cuTensorMapEncodeTiled; no -lcuda) and handed to every launch.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include <cstdint>
#include <cstring>

namespace {

constexpr int kTileM = 4;
constexpr int kTileN = 128;
constexpr int kTileK = 128;
constexpr int kThreads = 128;                                   // 4 warps: warp w owns row w
constexpr int kCols = 4;                                        // outputs per thread
constexpr int kBTileBytes = kTileK * kTileN * 4;                // 65,536
constexpr int kATileBytes = kTileM * kTileK * 4;                // 2,048
constexpr int kSmemBytes = kBTileBytes + kATileBytes + 8;       // + one mbarrier
constexpr int kVariants = 3;
constexpr int kMaxDevices = 64;
constexpr int kMapBytes = 128;                                  // sizeof(CUtensorMap)
static_assert(kTileN == kThreads && kTileM * 32 == kThreads && kTileN == 32 * kCols, "tile shape");
static_assert(sizeof(CUtensorMap) == kMapBytes, "CUtensorMap size");

enum Mode { kPlainLoads = 0, kMulticast = 1, kTmaPerCta = 2 };

// ---------------------------------------------------------------------------------------------
// PTX wrappers.

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count) : "memory");
    // visible to the async proxy (TMA) of every CTA in the cluster, not just this thread
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)), "r"(bytes)
                 : "memory");
}

// Spin until the phase with parity `parity` of the barrier has completed.
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
    const uint32_t addr = smem_u32(bar);
    uint32_t done = 0;
    do {
        asm volatile(
            "{\n"
            ".reg .pred p;\n"
            "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
            "selp.u32 %0, 1, 0, p;\n"
            "}\n"
            : "=r"(done)
            : "r"(addr), "r"(parity)
            : "memory");
    } while (!done);
}

// 2-D TMA load of the box at (inner x, outer y) into this CTA's shared memory.
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, uint64_t* bar, int x, int y) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];"
        ::"r"(smem_u32(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)), "r"(x), "r"(y)
        : "memory");
}

// The same load written to the same offset in every CTA of the cluster named in cta_mask, each
// completing the transaction bytes on its own barrier at the same offset.
__device__ __forceinline__ void tma_load_2d_multicast(void* dst, const CUtensorMap* map, uint64_t* bar, int x, int y,
                                                      uint16_t cta_mask) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
        " [%0], [%1, {%3, %4}], [%2], %5;"
        ::"r"(smem_u32(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)), "r"(x), "r"(y), "h"(cta_mask)
        : "memory");
}

__device__ __forceinline__ uint32_t cluster_ctarank() {
    uint32_t v;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(v));
    return v;
}

__device__ __forceinline__ uint32_t cluster_nctarank() {
    uint32_t v;
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(v));
    return v;
}

// Every thread of every CTA in the cluster arrives, then waits (release/acquire at cluster scope).
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// ---------------------------------------------------------------------------------------------
// The kernel: one 4 x 128 tile of C per CTA; only the way the B tile arrives depends on kMode.

template <int kMode>
__global__ void __launch_bounds__(kThreads) cluster_gemm_kernel(const __grid_constant__ CUtensorMap map_b,
                                                                const float* __restrict__ A,
                                                                const float* __restrict__ B,
                                                                float* __restrict__ C, int M, int N, int K) {
    extern __shared__ __align__(128) unsigned char smem[];
    float* b_tile = reinterpret_cast<float*>(smem);                       // [kTileK][kTileN]
    float* a_tile = reinterpret_cast<float*>(smem + kBTileBytes);         // [kTileM][kTileK]
    uint64_t* bar = reinterpret_cast<uint64_t*>(smem + kBTileBytes + kATileBytes);

    const int tid = threadIdx.x;
    const int row = tid / 32;                      // the C row (within the tile) this thread owns
    const int col = (tid % 32) * kCols;            // its first of 4 columns
    const long long m0 = static_cast<long long>(blockIdx.x) * kTileM;   // may be >= M (padding CTA)
    const int n0 = blockIdx.y * kTileN;
    const int k_tiles = (K + kTileK - 1) / kTileK;

    if (kMode != kPlainLoads) {
        if (tid == 0) mbar_init(bar, 1);           // one arrival per phase: thread 0's expect-tx
        __syncthreads();                           // (multicast: the first cluster_sync orders it cluster-wide)
    }
    float acc[kCols] = {0.0f, 0.0f, 0.0f, 0.0f};

    for (int kt = 0; kt < k_tiles; ++kt) {
        const int k0 = kt * kTileK;
        if (kMode == kMulticast) {
            if (tid == 0) mbar_arrive_expect_tx(bar, kBTileBytes);
            // Every CTA of the cluster is done reading the previous tile and has armed its barrier
            // for this one before rank 0 overwrites all their tiles.
            cluster_sync();
            if (tid == 0 && cluster_ctarank() == 0)
                tma_load_2d_multicast(b_tile, &map_b, bar, n0, k0,
                                      static_cast<uint16_t>((1u << cluster_nctarank()) - 1u));
        } else if (kMode == kTmaPerCta) {
            if (tid == 0) {
                mbar_arrive_expect_tx(bar, kBTileBytes);
                tma_load_2d(b_tile, &map_b, bar, n0, k0);
            }
        } else {
            // Each CTA fetches the whole 64 KiB itself: row i of the tile by all 128 threads.
            const int gn = n0 + tid;
            const bool col_ok = gn < N;
            const float* src = B + static_cast<long long>(k0) * N + gn;
#pragma unroll 8
            for (int i = 0; i < kTileK; ++i)
                b_tile[i * kTileN + tid] = (col_ok && k0 + i < K) ? src[static_cast<long long>(i) * N] : 0.0f;
        }
        // A: 4 rows x 128 k, one element per thread per row, in every variant.
#pragma unroll
        for (int r = 0; r < kTileM; ++r) {
            const int gk = k0 + tid;
            a_tile[r * kTileK + tid] = (m0 + r < M && gk < K) ? A[(m0 + r) * K + gk] : 0.0f;
        }
        __syncthreads();                           // A (and the plain-loaded B) visible to all
        if (kMode != kPlainLoads) mbar_wait(bar, kt & 1);   // the TMA bytes have landed here

        const float* a_row = a_tile + row * kTileK;
        const float* b_col = b_tile + col;
#pragma unroll
        for (int kk = 0; kk < kTileK; kk += 4) {
            const float4 a = *reinterpret_cast<const float4*>(a_row + kk);
            const float av[4] = {a.x, a.y, a.z, a.w};
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const float4 b = *reinterpret_cast<const float4*>(b_col + (kk + j) * kTileN);
                acc[0] = fmaf(av[j], b.x, acc[0]);
                acc[1] = fmaf(av[j], b.y, acc[1]);
                acc[2] = fmaf(av[j], b.z, acc[2]);
                acc[3] = fmaf(av[j], b.w, acc[3]);
            }
        }
        // The tiles are overwritten next step: the multicast's next cluster_sync waits for every
        // thread of every CTA; the other two need every thread of this CTA.
        if (kMode != kMulticast) __syncthreads();
    }
    // No CTA leaves while a multicast it issued may still be landing in another CTA.
    if (kMode == kMulticast) cluster_sync();

    const long long m = m0 + row;
    const int n = n0 + col;
    if (m < M && n < N)   // N % 4 == 0 and n % 4 == 0: all 4 columns are in range
        *reinterpret_cast<float4*>(C + m * N + n) = make_float4(acc[0], acc[1], acc[2], acc[3]);
}

// ---------------------------------------------------------------------------------------------
// Host side.

using KernelFn = void (*)(CUtensorMap, const float*, const float*, float*, int, int, int);

KernelFn kernel_of(int variant) {
    switch (variant) {
        case 0: return cluster_gemm_kernel<kPlainLoads>;
        case 1: return cluster_gemm_kernel<kMulticast>;
        case 2: return cluster_gemm_kernel<kTmaPerCta>;
        default: return nullptr;
    }
}

bool valid_cluster(int cluster) { return cluster == 2 || cluster == 4 || cluster == 8 || cluster == 16; }

// Once per device: 67,592 bytes of dynamic shared memory (above the 48 KiB default) and
// clusters of 16 (above the portable 8) for every kernel.
cudaError_t configure_kernels() {
    static bool configured[kMaxDevices] = {};
    int device = 0;
    cudaError_t err = cudaGetDevice(&device);
    if (err != cudaSuccess) return err;
    if (device < 0 || device >= kMaxDevices) return cudaErrorInvalidDevice;
    if (configured[device]) return cudaSuccess;
    for (int v = 0; v < kVariants; ++v) {
        err = cudaFuncSetAttribute(kernel_of(v), cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
        if (err != cudaSuccess) return err;
        err = cudaFuncSetAttribute(kernel_of(v), cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
        if (err != cudaSuccess) return err;
    }
    configured[device] = true;
    return cudaSuccess;
}

cudaLaunchConfig_t launch_config(dim3 grid, cudaStream_t stream, cudaLaunchAttribute* attr, int cluster) {
    attr->id = cudaLaunchAttributeClusterDimension;
    attr->val.clusterDim.x = cluster;
    attr->val.clusterDim.y = 1;
    attr->val.clusterDim.z = 1;
    cudaLaunchConfig_t config{};
    config.gridDim = grid;
    config.blockDim = dim3(kThreads);
    config.dynamicSmemBytes = kSmemBytes;
    config.stream = stream;
    config.attrs = attr;
    config.numAttrs = 1;
    return config;
}

// cudaSuccess if clusters of `cluster` CTAs of every kernel can be resident at once
// (cudaOccupancyMaxActiveClusters >= 1), cudaErrorNotSupported if not (no cluster launch, or
// the query refuses the configuration), or the error that stopped the question.
int cluster_support(int cluster) {
    int device = 0;
    cudaError_t err = cudaGetDevice(&device);
    if (err != cudaSuccess) return static_cast<int>(err);
    int launch = 0;
    err = cudaDeviceGetAttribute(&launch, cudaDevAttrClusterLaunch, device);
    if (err != cudaSuccess) return static_cast<int>(err);
    if (!launch) return cudaErrorNotSupported;
    err = configure_kernels();
    if (err != cudaSuccess) return static_cast<int>(err);
    for (int v = 0; v < kVariants; ++v) {
        cudaLaunchAttribute attr{};
        const cudaLaunchConfig_t config = launch_config(dim3(cluster), nullptr, &attr, cluster);
        int clusters = 0;
        err = cudaOccupancyMaxActiveClusters(&clusters, kernel_of(v), &config);
        if (err != cudaSuccess) {
            (void)cudaGetLastError();              // a refused configuration, not a sticky error
            return cudaErrorNotSupported;
        }
        if (clusters < 1) return cudaErrorNotSupported;
    }
    return cudaSuccess;
}

PFN_cuTensorMapEncodeTiled_v12000 encode_fn() {
    static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
    if (!fn) {
        void* ptr = nullptr;
        cudaDriverEntryPointQueryResult status{};
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &ptr, 12000, cudaEnableDefault, &status) ==
                cudaSuccess &&
            status == cudaDriverEntryPointSuccess)
            fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(ptr);
    }
    return fn;
}

bool misaligned(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 != 0; }

}  // namespace

// Encode the CUtensorMap of B (K rows x N columns, fp32 row-major) read in 128 x 128 boxes, no
// swizzle, out-of-bounds elements zero-filled, into the kMapBytes (128) bytes at map_out.
extern "C" int aisp_cluster_multicast_encode_b(const float* B, int K, int N, void* map_out) {
    if (B == nullptr || map_out == nullptr || K < 1 || N < 4 || N % 4 != 0) return cudaErrorInvalidValue;
    if (misaligned(B)) return cudaErrorMisalignedAddress;
    const PFN_cuTensorMapEncodeTiled_v12000 encode = encode_fn();
    if (!encode) return cudaErrorNotSupported;
    CUtensorMap map{};
    const cuuint64_t dims[2] = {static_cast<cuuint64_t>(N), static_cast<cuuint64_t>(K)};
    const cuuint64_t strides[1] = {static_cast<cuuint64_t>(N) * 4};   // bytes between rows
    const cuuint32_t box[2] = {kTileN, kTileK};
    const cuuint32_t element_strides[2] = {1, 1};
    if (encode(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, const_cast<float*>(B), dims, strides, box, element_strides,
               CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS)
        return cudaErrorInvalidValue;
    std::memcpy(map_out, &map, sizeof(map));
    return cudaSuccess;
}

// variant: 0 baseline, 1 multicast, 2 tma_no_multicast. map_b: the 128 bytes from
// aisp_cluster_multicast_encode_b for this B (unused by the baseline, may be null there).
// A is M x K, B is K x N, C is M x N, fp32 row-major, 16-byte aligned; N % 4 == 0; cluster in
// {2, 4, 8, 16}. Returns a cudaError_t as int.
extern "C" int aisp_cluster_multicast(int variant, const void* map_b, const float* A, const float* B, float* C, int M,
                                      int N, int K, int cluster, cudaStream_t stream) {
    if (variant < 0 || variant >= kVariants || A == nullptr || B == nullptr || C == nullptr)
        return cudaErrorInvalidValue;
    if (M < 1 || N < 4 || K < 1 || N % 4 != 0 || !valid_cluster(cluster)) return cudaErrorInvalidValue;
    if (variant != 0 && map_b == nullptr) return cudaErrorInvalidValue;
    if (misaligned(A) || misaligned(B) || misaligned(C)) return cudaErrorMisalignedAddress;
    const long long tiles_m = ((M + kTileM - 1LL) / kTileM + cluster - 1) / cluster * cluster;
    const long long tiles_n = (N + kTileN - 1LL) / kTileN;
    if (tiles_m > 0x7fffffffLL || tiles_n > 65535) return cudaErrorInvalidValue;
    cudaError_t err = configure_kernels();
    if (err != cudaSuccess) return static_cast<int>(err);
    CUtensorMap map{};
    if (map_b != nullptr) std::memcpy(&map, map_b, sizeof(map));
    cudaLaunchAttribute attr{};
    const cudaLaunchConfig_t config = launch_config(
        dim3(static_cast<unsigned>(tiles_m), static_cast<unsigned>(tiles_n)), stream, &attr, cluster);
    return static_cast<int>(cudaLaunchKernelEx(&config, kernel_of(variant), map, A, B, C, M, N, K));
}

// Capability probes, one per cluster width: cudaSuccess, cudaErrorNotSupported, or the error
// that stopped the question (see cluster_support).
extern "C" int aisp_cluster_multicast_cluster2_support() { return cluster_support(2); }
extern "C" int aisp_cluster_multicast_cluster4_support() { return cluster_support(4); }
extern "C" int aisp_cluster_multicast_cluster8_support() { return cluster_support(8); }
extern "C" int aisp_cluster_multicast_cluster16_support() { return cluster_support(16); }

extern "C" const char* aisp_cluster_multicast_error_string(int code) {
    return cudaGetErrorString(static_cast<cudaError_t>(code));
}
