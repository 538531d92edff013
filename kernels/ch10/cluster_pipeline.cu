// Hopper's version of the book's tcgen05_cluster_pipeline pair: a hand-written fp16 TMA + wgmma
// GEMM launched in 2 x 1 thread-block clusters whose two CTAs compute neighbouring row tiles of C
// against the SAME column tile of B, so B is fetched from L2 once per cluster with a real TMA
// multicast (the book's kernel says it multicasts B but issues a per-CTA load), fed through a
// full/empty mbarrier ring of 2 stages (baseline) or 4 stages.
//
//   C[M, N] = A[M, K] @ B[N, K]^T      A, B, C fp16 row-major (A and B "K-major"), fp32 accumulate
//
// Every kernel: one 128 x 256 tile of C per CTA, BK = 64, 256 threads = two warpgroups each
// owning 64 rows (128 fp32 accumulators per thread), 4 wgmma m64n256k16 per k-tile, thread 0 also
// the TMA producer (the non-warp-specialized schedule of matmul_wgmma_pipelined.cu; the TMA,
// mbarrier and wgmma wrappers, the tensor-map encoder and the sm_90a probe come from
// kernels/common/wgmma_tma.cuh, shared with it; only the cluster wrappers are this file's own).
// Compiled with __cluster_dims__(2, 1, 1): CTAs 2c and 2c + 1 form cluster c, rank r
// takes row tile 2 p + r of row-pair p, both take column tile n. Variants (template arguments):
//   0 two_stage    kStages = 2, B multicast: the ring loads 1 k-tile ahead.
//   1 four_stage   kStages = 4, B multicast: the ring loads 3 k-tiles ahead.
//   2 four_stage_no_multicast   kStages = 4, each CTA loads all of B itself (the control).
//
// The multicast, per stage and k-tile: each CTA's thread 0 arms its own `full` barrier for the
// whole stage (A 16 KiB + B 32 KiB = 48 KiB of expect-tx), loads its own A box, and loads HALF of
// the B tile (128 of its 256 rows, rank r the rows 128 r ..) with
// cp.async.bulk.tensor...multicast::cluster and ctaMask 0b11: the half lands at the same offset in
// both CTAs and completes 16 KiB on the `full` barrier at the same offset in each. So each CTA's
// stage is filled by three copies, one of them issued by the other CTA. (A peer's complete_tx
// may reach a `full` barrier before its own thread 0 has armed it for that phase: the tx-count
// goes negative and the phase cannot complete before the local arrive, which is how mbarriers
// are meant to be used with multicast.)
//
// The catch is the `empty` barrier. A slot of CTA 0 is written by CTA 1's multicast, so CTA 1
// may not refill stage s until CTA 0's warps are done reading it, and vice versa: each `empty`
// barrier counts 16 arrivals, the 8 warps of its own CTA and the 8 of the peer. A warp releases a
// stage by arriving on its own CTA's barrier and on the peer's (the address translated with
// `mapa`, then mbarrier.arrive.shared::cluster), and the producer waits on its own barrier. The
// remote arrive keeps PTX's default semantics (release at CTA scope), as CUTLASS's sm90
// ClusterBarrier::arrive(cta_id) does: what it releases is the stage's wgmma reads, already
// retired by wait_group, and what follows the wait is a TMA (async-proxy) write. Spelled
// .release.cluster (and the wait .acquire.cluster), ptxas puts MEMBAR.ALL.CTA + MEMBAR.ALL.GPU
// before every remote arrive (one per warp per k-tile) and CCTL.IVALL after the wait, for no
// access that needs it. All arrivals of one use of a stage
// precede any of the next use on both barriers: a warp can only release use u + 1 after both
// producers waited for use u's completion. A cluster barrier after the barrier init (a peer may
// multicast into us or arrive on us before we have run a single instruction past the init) and
// one after the main loop (no CTA may leave while its peer can still arrive on its barriers;
// placed before the epilogue, its MEMBAR.ALL.GPU has no stores to wait for) complete the protocol. The no-multicast control has neither: its barriers count its own 8 warps.
//
// Sizes are free up to TMA's rules: K % 8 == 0 and N % 8 == 0 (16-byte row pitches), M >= 1.
// TMA zero-fills what sticks out of A and B (and still counts the whole box against expect-tx),
// k-tiles are ceil(K / 64), the row tiles are rounded up to an even count (a padding CTA joins
// its cluster's protocol and stores nothing), and the epilogue stores only in-range elements.
// Built for sm_90a. The CUtensorMaps are encoded on the host per call (the graph-replayed
// variants encode them once, at capture) through cuTensorMapEncodeTiled, fetched with
// cudaGetDriverEntryPointByVersion (no -lcuda).
#include <cuda.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include <cstdint>

#include "../common/wgmma_tma.cuh"   // mbarrier, TMA, wgmma PTX wrappers; tensor maps; the sm_90a probe

namespace {

using namespace wgmma_tma;

constexpr int kBlockM = 128;
constexpr int kBlockN = 256;
constexpr int kBlockK = 64;                                  // 64 fp16 = 128 bytes
constexpr int kHalfN = kBlockN / 2;                          // the B rows one CTA multicasts
constexpr int kCluster = 2;                                  // CTAs per cluster (along x)
constexpr int kMathWarpgroups = 2;                           // each owns 64 rows of the tile
constexpr int kThreads = 128 * kMathWarpgroups;
constexpr int kTileABytes = kBlockM * kBlockK * 2;           // 16 KiB
constexpr int kHalfBBytes = kHalfN * kBlockK * 2;            // 16 KiB
constexpr int kStageBytes = kTileABytes + 2 * kHalfBBytes;   // 48 KiB
constexpr int kConsumerWarps = kThreads / 32;                // each arrives once per k-tile on `empty`
constexpr int kGroupPairs = 4;                               // raster: 4 row pairs (8 row tiles) per group
constexpr int kVariants = 3;                                 // 0 two_stage, 1 four_stage, 2 no multicast
constexpr int kMaxDevices = 64;
constexpr int smem_bytes(int stages) { return stages * kStageBytes + 1024; }   // + room to align to 1 KiB

// ============================================================================================
// BEGIN cluster wrappers: multicast TMA, remote mbarrier arrive, cluster barrier (what
// kernels/common/wgmma_tma.cuh lacks: candidates for it; kernels/ch10/cluster_multicast.cu has
// the first and last too).

// The 2-D TMA load of tma_load_2d, written to the same offset in every CTA of the cluster named
// in cta_mask, each completing the transaction bytes on its own barrier at the same offset.
__device__ __forceinline__ void tma_load_2d_multicast(void* dst, const CUtensorMap* map, uint64_t* bar, int x, int y,
                                                      uint16_t cta_mask) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
        " [%0], [%1, {%3, %4}], [%2], %5;"
        ::"r"(smem_u32(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)), "r"(x), "r"(y), "h"(cta_mask)
        : "memory");
}

// Arrive on the barrier at the same offset in CTA `rank` of the cluster (mapa translates this
// CTA's shared address to that CTA's window). Default semantics: release at CTA scope (see the
// header for why not .release.cluster).
__device__ __forceinline__ void mbar_arrive_cluster(uint64_t* bar, uint32_t rank) {
    uint32_t remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(smem_u32(bar)), "r"(rank));
    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(remote) : "memory");
}

__device__ __forceinline__ uint32_t cluster_ctarank() {
    uint32_t v;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(v));
    return v;
}

// Every thread of every CTA in the cluster arrives, then waits (release/acquire at cluster scope).
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// END cluster wrappers.
// ============================================================================================

// The 4 wgmmas of one 64-deep k-tile for one warpgroup: its 64 rows of A (8 KiB into the A box)
// against all 256 rows of B; +2 in the descriptor = +32 bytes = 16 fp16 further along k.
__device__ __forceinline__ void mma_k_tile(float (&d)[128], const uint8_t* tile_a, const uint8_t* tile_b,
                                           int math_wg, bool first) {
    const uint64_t desc_a = smem_descriptor(tile_a + math_wg * (kTileABytes / kMathWarpgroups));
    const uint64_t desc_b = smem_descriptor(tile_b);
#pragma unroll
    for (int kk = 0; kk < kBlockK / 16; ++kk) {
        wgmma_m64n256k16(d, desc_a + 2 * kk, desc_b + 2 * kk, (first && kk == 0) ? 0 : 1);
    }
}

// Which tile this CTA computes. Cluster c (CTAs 2c, 2c + 1) takes a row pair and a column tile:
// groups of kGroupPairs row pairs walked column by column, so the clusters resident at one time
// share A rows and B columns in L2; rank r takes row tile 2 pair + r.
__device__ __forceinline__ void tile_coordinates(int pairs_m, int tiles_n, uint32_t rank, int* tile_m, int* tile_n) {
    const int cluster = static_cast<int>(blockIdx.x) / kCluster;
    const int per_group = kGroupPairs * tiles_n;
    const int group = cluster / per_group;
    const int first = group * kGroupPairs;
    const int group_pairs = min(pairs_m - first, kGroupPairs);
    const int in_group = cluster % per_group;
    *tile_m = (first + in_group % group_pairs) * kCluster + static_cast<int>(rank);
    *tile_n = in_group / group_pairs;
}

// Write one warpgroup's 64 x 256 fp32 accumulators to C as fp16, in-range elements only (N is
// even, so a column pair is either in or out). wgmma's accumulator layout: warp w of the
// warpgroup holds rows 16 w .. 16 w + 15; for column block j (8 wide) lane l holds d[4 j + 0..1]
// at row l / 4, columns 8 j + 2 (l % 4) + 0..1, and d[4 j + 2..3] eight rows down.
__device__ __forceinline__ void store_tile(const float (&d)[128], __half* C, int M, int N, int row0, int col0) {
    const int t = threadIdx.x % 128;
    const int warp = t / 32, lane = t % 32;
    const int r = row0 + warp * 16 + lane / 4;
    const int c = col0 + 2 * (lane % 4);
    __half* row_lo = C + static_cast<size_t>(r) * N + c;
    __half* row_hi = row_lo + static_cast<size_t>(8) * N;
    const bool lo_ok = r < M, hi_ok = r + 8 < M;
#pragma unroll
    for (int j = 0; j < kBlockN / 8; ++j) {
        if (c + 8 * j < N) {
            if (lo_ok) *reinterpret_cast<__half2*>(row_lo + 8 * j) = __floats2half2_rn(d[4 * j + 0], d[4 * j + 1]);
            if (hi_ok) *reinterpret_cast<__half2*>(row_hi + 8 * j) = __floats2half2_rn(d[4 * j + 2], d[4 * j + 3]);
        }
    }
}

// Arm stage s's `full` barrier for the whole stage and issue this CTA's loads of k-tile kt into
// it: its A box, and either half of the B tile multicast to both CTAs or all of B for itself.
template <bool kMulticast>
__device__ __forceinline__ void load_stage(uint8_t* stage, uint64_t* full, const CUtensorMap* map_a,
                                           const CUtensorMap* map_b, int kt, int a_row, int b_row, uint32_t rank) {
    uint8_t* tile_b = stage + kTileABytes;
    mbar_arrive_expect_tx(full, kStageBytes);
    tma_load_2d(stage, map_a, full, kt * kBlockK, a_row);
    if (kMulticast) {
        tma_load_2d_multicast(tile_b + rank * kHalfBBytes, map_b, full, kt * kBlockK, b_row + rank * kHalfN,
                              static_cast<uint16_t>((1u << kCluster) - 1u));
    } else {
        tma_load_2d(tile_b, map_b, full, kt * kBlockK, b_row);
        tma_load_2d(tile_b + kHalfBBytes, map_b, full, kt * kBlockK, b_row + kHalfN);
    }
}

// The kernel: a kStages-deep ring; the warps that issue the math never wait for it inside the
// main loop (wait_group 1), as in matmul_wgmma_pipelined.cu's pipelined kernel.
template <int kStages, bool kMulticast>
__global__ void __cluster_dims__(kCluster, 1, 1) __launch_bounds__(kThreads, 1)
cluster_gemm_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                    __half* __restrict__ C, int M, int N, int K, int pairs_m, int tiles_n) {
    extern __shared__ uint8_t smem_raw[];
    uint8_t* stages = align_1024(smem_raw);
    __shared__ __align__(8) uint64_t full[kStages];    // this stage's 48 KiB landed here
    __shared__ __align__(8) uint64_t empty[kStages];   // every reader of this stage (both CTAs if multicast) done

    const int math_wg = threadIdx.x / 128;
    const uint32_t rank = cluster_ctarank();
    int tile_m, tile_n;
    tile_coordinates(pairs_m, tiles_n, rank, &tile_m, &tile_n);
    const int a_row = tile_m * kBlockM, b_row = tile_n * kBlockN;
    const int k_tiles = (K + kBlockK - 1) / kBlockK;
    if (threadIdx.x == 0) {
        for (int s = 0; s < kStages; ++s) {
            mbar_init(&full[s], 1);                                        // thread 0's arrive.expect_tx
            mbar_init(&empty[s], kMulticast ? kCluster * kConsumerWarps : kConsumerWarps);
        }
        mbar_init_fence();
    }
    if (kMulticast) cluster_sync();                    // the peer's barriers exist before we write or arrive on them
    else __syncthreads();
    if (threadIdx.x == 0) {                            // prologue: the first kStages - 1 k-tiles
        for (int kt = 0; kt < kStages - 1 && kt < k_tiles; ++kt)
            load_stage<kMulticast>(stages + kt * kStageBytes, &full[kt], &map_a, &map_b, kt, a_row, b_row, rank);
    }

    float d[128];
    for (int kt = 0; kt < k_tiles; ++kt) {
        const int s = kt % kStages;
        mbar_wait(&full[s], (kt / kStages) & 1);
        const uint8_t* tile_a = stages + s * kStageBytes;
        fence_registers(d);
        wgmma_fence();
        mma_k_tile(d, tile_a, tile_a + kTileABytes, math_wg, kt == 0);
        wgmma_commit();
        wgmma_wait<1>();                               // k-tile kt - 1's group is done; kt's keeps running
        fence_registers(d);
        if (kt > 0 && threadIdx.x % 32 == 0) {         // release k-tile kt - 1's stage: here and in the peer
            uint64_t* released = &empty[(kt - 1) % kStages];
            mbar_arrive(released);
            if (kMulticast) mbar_arrive_cluster(released, rank ^ 1u);
        }
        // Refill the stage just released with the k-tile kStages - 1 ahead, once every warp that
        // reads it (of both CTAs, with multicast: our half of B lands in the peer too) released it.
        const int next = kt + kStages - 1;
        if (threadIdx.x == 0 && next < k_tiles) {
            const int ns = next % kStages;
            if (next >= kStages) mbar_wait(&empty[ns], (next / kStages - 1) & 1);
            load_stage<kMulticast>(stages + ns * kStageBytes, &full[ns], &map_a, &map_b, next, a_row, b_row, rank);
        }
    }
    wgmma_wait<0>();                                   // the last group, once, before the epilogue
    fence_registers(d);
    if (kMulticast) cluster_sync();                    // the peer may arrive on our barriers until here
    store_tile(d, C, M, N, a_row + math_wg * 64, b_row);
}

// ---------------------------------------------------------------------------------------------
// Host side.

using KernelFn = void (*)(CUtensorMap, CUtensorMap, __half*, int, int, int, int, int);

KernelFn kernel_of(int variant) {
    switch (variant) {
        case 0: return cluster_gemm_kernel<2, true>;
        case 1: return cluster_gemm_kernel<4, true>;
        case 2: return cluster_gemm_kernel<4, false>;
        default: return nullptr;
    }
}

int smem_of(int variant) { return smem_bytes(variant == 0 ? 2 : 4); }

// Once per device: the dynamic shared memory above the 48 KiB default, for every kernel (so a
// launch captured into a CUDA graph makes no attribute call).
cudaError_t configure_kernels() {
    static bool configured[kMaxDevices] = {};
    int device = 0;
    cudaError_t err = cudaGetDevice(&device);
    if (err != cudaSuccess) return err;
    if (device < 0 || device >= kMaxDevices) return cudaErrorInvalidDevice;
    if (configured[device]) return cudaSuccess;
    for (int v = 0; v < kVariants; ++v) {
        err = cudaFuncSetAttribute(kernel_of(v), cudaFuncAttributeMaxDynamicSharedMemorySize, smem_of(v));
        if (err != cudaSuccess) return err;
    }
    configured[device] = true;
    return cudaSuccess;
}

long long row_pairs(int M) { return ((M + kBlockM - 1LL) / kBlockM + kCluster - 1) / kCluster; }
long long col_tiles(int N) { return (N + kBlockN - 1LL) / kBlockN; }

}  // namespace

// variant: 0 two_stage, 1 four_stage, 2 four_stage_no_multicast. A is M x K, B is N x K (so
// C = A @ B^T), C is M x N, all fp16 row-major and 16-byte aligned; M >= 1, N and K positive
// multiples of 8. Returns a cudaError_t as int (aisp_cluster_pipeline_error_string).
extern "C" int aisp_cluster_pipeline(int variant, const void* A, const void* B, void* C, int M, int N, int K,
                                     cudaStream_t stream) {
    if (variant < 0 || variant >= kVariants || A == nullptr || B == nullptr || C == nullptr || M < 1 || N < 8 ||
        K < 8 || N % 8 || K % 8)
        return cudaErrorInvalidValue;
    const long long clusters = row_pairs(M) * col_tiles(N);
    if (clusters * kCluster > 0x7fffffffLL) return cudaErrorInvalidValue;
    if ((reinterpret_cast<uintptr_t>(A) | reinterpret_cast<uintptr_t>(B) | reinterpret_cast<uintptr_t>(C)) % 16)
        return cudaErrorMisalignedAddress;
    cudaError_t err = configure_kernels();
    // A in 128 x 64 boxes; B in 128 x 64 boxes too (half a column tile: the multicast unit; two
    // stacked are exactly one 256-row box, 16 KiB being a whole number of the swizzle's 1 KiB periods)
    CUtensorMap map_a, map_b;
    if (err == cudaSuccess) err = make_map_2d_fp16(&map_a, A, M, K, kBlockM, kBlockK);
    if (err == cudaSuccess) err = make_map_2d_fp16(&map_b, B, N, K, kHalfN, kBlockK);
    if (err != cudaSuccess) return static_cast<int>(err);
    kernel_of(variant)<<<static_cast<unsigned>(clusters * kCluster), kThreads, smem_of(variant), stream>>>(
        map_a, map_b, static_cast<__half*>(C), M, N, K, static_cast<int>(row_pairs(M)), static_cast<int>(col_tiles(N)));
    return static_cast<int>(cudaGetLastError());
}

// cudaSuccess if this device is compute capability 9.0 (the sm_90a code runs nowhere else),
// launches clusters, can keep a 2-CTA cluster of every kernel resident
// (cudaOccupancyMaxActiveClusters >= 1) and the driver exports cuTensorMapEncodeTiled;
// cudaErrorNotSupported if not; or the error that stopped the question.
extern "C" int aisp_cluster_pipeline_support() {
    int device = 0, cluster_launch = 0;
    cudaError_t err = sm90a_tma_support();
    if (err != cudaSuccess) return static_cast<int>(err);
    err = cudaGetDevice(&device);
    if (err == cudaSuccess) err = cudaDeviceGetAttribute(&cluster_launch, cudaDevAttrClusterLaunch, device);
    if (err != cudaSuccess) return static_cast<int>(err);
    if (!cluster_launch) return cudaErrorNotSupported;
    err = configure_kernels();
    if (err != cudaSuccess) return static_cast<int>(err);
    for (int v = 0; v < kVariants; ++v) {
        cudaLaunchConfig_t config{};
        config.gridDim = dim3(kCluster);
        config.blockDim = dim3(kThreads);
        config.dynamicSmemBytes = smem_of(v);
        int clusters = 0;
        err = cudaOccupancyMaxActiveClusters(&clusters, kernel_of(v), &config);
        if (err != cudaSuccess) {
            (void)cudaGetLastError();                  // a refused configuration, not a sticky error
            return cudaErrorNotSupported;
        }
        if (clusters < 1) return cudaErrorNotSupported;
    }
    return cudaSuccess;
}

extern "C" const char* aisp_cluster_pipeline_error_string(int code) {
    return cudaGetErrorString(static_cast<cudaError_t>(code));
}
