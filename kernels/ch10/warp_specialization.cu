// Hopper's version of the book's tcgen05_warp_specialization pair: the same hand-written fp16
// TMA + wgmma GEMM, first with the same warps both loading and multiplying (no roles), then split
// into a TMA producer warpgroup that gives its registers away (setmaxnreg.dec) and two consumer
// warpgroups that take them (setmaxnreg.inc) and only multiply.
//
//   C[M, N] = A[M, K] @ B[N, K]^T      A, B, C fp16 row-major (A and B "K-major"), fp32 accumulate
//
// Every kernel computes 128 x 256 tiles of C (the book's UMMA tile) with BK = 64 (one 128-byte row
// of fp16 per tile row: one 128-byte TMA swizzle span) and two math warpgroups, each owning 64 rows
// x 256 columns (128 fp32 accumulators per thread) and issuing 4 wgmma m64n256k16 per k-tile.
//
//   one_issuer (baseline, the book's ch09 tcgen05_pipelined.cu): 256 threads, one tile per block,
//     a 2-stage double buffer with one `full` mbarrier per stage. Thread 0 loads k-tile 0, then
//     each k-tile: thread 0 issues the TMA of k-tile kt + 1 into the other stage, everyone waits on
//     `full`, the warpgroups issue their 4 wgmmas, commit and wait for all of them (wait_group 0),
//     __syncthreads (the stage is free), next k-tile. The loads run one k-tile ahead, but the
//     warps that issue them also wait for every wgmma group, so the tensor pipe drains at every
//     k-tile and the next tile's loads start only when this block has stored its tile and exited.
//   warp_specialized (the book's tcgen05_warp_specialized.cu, then one step further): 384 threads
//     = 3 warpgroups, persistent (grid = min(SMs, tiles), each block walks tiles blockIdx.x,
//     + gridDim.x, ...), a ring of `full` and `empty` mbarriers. Warpgroup 0 is the producer:
//     setmaxnreg.dec to 40 registers, then one thread walks the same tiles and k-tiles as the
//     consumers, waits on `empty`, arms `full` with expect_tx and issues the TMA loads; it never
//     waits for math, so it runs a whole ring ahead, across tile boundaries (it loads the next
//     tile while the consumers store this one). Warpgroups 1-2 are consumers: setmaxnreg.inc to
//     232, wait on `full`, issue 4 wgmmas, commit and wait_group 1 (the previous k-tile's group
//     retires, this one stays on the tensor pipe), then one lane per warp arrives on the previous
//     stage's `empty`; wait_group 0 only once per tile, before its epilogue. The epilogue goes
//     through shared memory: each consumer writes its 64 x 256 fp16 slab into a 32 KiB staging
//     buffer (four 64 x 64 boxes in 128-byte swizzle: conflict-free), fences the async proxy,
//     and one thread issues four TMA stores (cp.async.bulk.tensor ... bulk_group); the warps go
//     straight on to the next tile while the TMA unit drains the stores. Ring 3 x 48 KiB +
//     staging 64 KiB = 208 KiB.
//     Registers: 128 x 40 + 256 x 232 = 64512 <= 65536, the whole file for one block.
//   warp_specialized_c2: the same kernel on 2 x 1 clusters. The two CTAs take neighbouring row
//     tiles of the same column tile; each loads its own A and half of the B tile (128 rows)
//     multicast to both (cp.async.bulk.tensor ... multicast::cluster), so B is read from L2 once
//     per cluster. Each `empty` barrier counts the 8 consumer warps of both CTAs (a warp
//     releases a stage locally and, through mapa, in its peer), cluster barriers after the
//     barrier init and before exit. The grid is as many clusters as cudaOccupancyMaxActiveClusters
//     says can be resident. (kernels/ch10/cluster_pipeline.cu explains the protocol at length.)
//   warp_specialized_reg_epilogue (the control): warp_specialized as it stood before the TMA
//     store, a 4-stage ring (192 KiB) and fp16 stored straight from the registers (st.global
//     of fp16x2, 64 per thread per tile). Persistent tiles run in lockstep waves, so every SM
//     stores its 64 KiB at the same moment; the consumers wait for their stores to leave while
//     the tensor pipe idles: at k = 2048 that cost ~12% of the time.
//
// Where the book differs: its producer and consumer are single warps (tcgen05.mma is issued by
// one thread; wgmma needs a whole warpgroup of 128 threads per 64-row slab, hence warpgroups and
// setmaxnreg here), its consumer frees a stage with umma_arrive (an MMA-side mbarrier arrive
// wgmma lacks: here a warp arrives after the wait_group that retires the stage's reads, one
// k-tile later), its accumulator lives in TMEM, both its sides write an fp32 buffer and convert
// it with .to(float16) (here fp16 is written once, through a TMA store or from the registers),
// and its kernel is not persistent (one tile per block; here the producer's independence is used
// to overlap the next tile's loads with this tile's epilogue, which is what decoupled roles buy
// at K = 2048, where a tile has only 32 k-tiles).
//
// The TMA + wgmma + mbarrier + setmaxnreg code is what kernels/ch09/tma_wgmma_pipeline.cu proves on
// H100 (its producer/consumer kernel, in bf16) and kernels/ch10/matmul_wgmma_pipelined.cu (fp16);
// the wrappers come from kernels/common/wgmma_tma.cuh, cluster_tma.cuh and tma_store.cuh (covered
// by the build key and the digest).
//
// Edges: TMA zero-fills the parts of a box outside A or B (and still counts the box's full bytes
// on the mbarrier), so M, N and K need no padding; register stores are guarded, TMA stores clip. N and K must be multiples
// of 8 (16-byte row pitches for TMA, 4-byte aligned fp16x2 stores); pointers 16-byte aligned.
// Built for sm_90a (wgmma and setmaxnreg exist only on the arch-specific target).
#include <cuda.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include <cstdint>

#include "../common/wgmma_tma.cuh"   // mbarrier, TMA, wgmma, setmaxnreg PTX; tensor maps; the sm_90a probe
#include "../common/cluster_tma.cuh"  // multicast TMA, remote mbarrier arrive, cluster barrier
#include "../common/tma_store.cuh"    // TMA store, bulk groups, proxy fence, named barrier

namespace {

using namespace wgmma_tma;

constexpr int kBlockM = 128;
constexpr int kBlockN = 256;
constexpr int kBlockK = 64;                                  // 64 fp16 = 128 bytes
constexpr int kMathWarpgroups = 2;                           // each owns 64 rows of the tile
constexpr int kTileABytes = kBlockM * kBlockK * 2;           // 16 KiB
constexpr int kTileBBytes = kBlockN * kBlockK * 2;           // 32 KiB
constexpr int kStageBytes = kTileABytes + kTileBBytes;       // 48 KiB
constexpr int kGroupM = 8;                                   // tile rasterization: 8 row-tiles per group
constexpr int kMaxDevices = 64;
// one_issuer
constexpr int kIssuerThreads = 128 * kMathWarpgroups;        // 256: the math warpgroups, thread 0 also loads
constexpr int kIssuerStages = 2;                             // the book's double buffer
constexpr int kIssuerSmemBytes = kIssuerStages * kStageBytes + 1024;   // + room to align to 1024 bytes
// warp_specialized
constexpr int kStages = 4;                                   // the ring with the register epilogue
constexpr int kStagesTmaStore = 3;                           // the ring beside the TMA-store staging buffer
constexpr int kStagingBytes = kBlockM * kBlockN * 2;         // 64 KiB: the fp16 tile of C
constexpr int kStoreBox = 64;                                // C is stored in 64 x 64 boxes (128-byte rows)
constexpr int kSpecializedThreads = 128 * (1 + kMathWarpgroups);       // 384: producer + 2 consumers
constexpr int kConsumerWarps = 4 * kMathWarpgroups;          // each arrives once per k-tile on `empty`
constexpr int kProducerRegisters = 40;
constexpr int kConsumerRegisters = 232;
// The warp-specialized kernel's dynamic shared memory: its ring, the staging buffer of C with a
// TMA store, and room to align to 1024 bytes. 3 x 48 + 64 = 208 KiB vs 4 x 48 = 192 KiB.
__host__ __device__ constexpr int ring_stages(bool tma_store) { return tma_store ? kStagesTmaStore : kStages; }
__host__ __device__ constexpr int ring_smem_bytes(bool tma_store) {
    return ring_stages(tma_store) * kStageBytes + (tma_store ? kStagingBytes : 0) + 1024;
}
static_assert(ring_smem_bytes(true) <= 227 * 1024, "ring + staging must fit Hopper's 227 KiB of shared memory");
constexpr int kVariants = 4;                                 // 0 one_issuer, 1-3 warp-specialized
static_assert(128 * kProducerRegisters + 128 * kMathWarpgroups * kConsumerRegisters <= 65536,
              "setmaxnreg: the warpgroups' registers must fit the SM's register file");

// ceil(a / b) for a >= 0 without the overflow of a + b - 1 near INT_MAX.
__host__ __device__ __forceinline__ int ceil_div(int a, int b) { return a / b + (a % b != 0); }

// The 4 wgmmas of one 64-deep k-tile for one math warpgroup: its 64 rows of A (8 KiB into the A
// box) against all 256 rows of B; +2 in the descriptor = +32 bytes = 16 fp16 further along k.
__device__ __forceinline__ void mma_k_tile(float (&d)[128], const uint8_t* tile_a, const uint8_t* tile_b,
                                           int math_wg, bool first) {
    const uint64_t desc_a = smem_descriptor(tile_a + math_wg * (kTileABytes / kMathWarpgroups));
    const uint64_t desc_b = smem_descriptor(tile_b);
#pragma unroll
    for (int kk = 0; kk < kBlockK / 16; ++kk) {
        wgmma_m64n256k16(d, desc_a + 2 * kk, desc_b + 2 * kk, (first && kk == 0) ? 0 : 1);
    }
}

// Tile `tile` (0 .. tiles_m * tiles_n - 1) in groups of `group_m` row-tiles walked column by
// column, so the tiles in flight at one time share A rows and B columns in L2. (With clusters, a
// "row tile" here is a cluster's stack of row tiles.)
__device__ __forceinline__ void tile_coordinates(int tile, int tiles_m, int tiles_n, int group_m, int* tile_m,
                                                 int* tile_n) {
    const int per_group = group_m * tiles_n;
    const int group = tile / per_group;
    const int first_m = group * group_m;
    const int group_rows = min(tiles_m - first_m, group_m);
    const int in_group = tile % per_group;
    *tile_m = first_m + in_group % group_rows;
    *tile_n = in_group / group_rows;
}

// Write one math warpgroup's 64 x 256 fp32 accumulators to C as fp16, inside M x N only (see
// wgmma_m64n256k16 for the accumulator layout). A slab wholly inside C (every slab but the edges
// of a ragged size) takes the unguarded path: 64 stores and no branches.
__device__ __forceinline__ void store_tile(const float (&d)[128], __half* C, int M, int N, int row0, int col0) {
    const int t = threadIdx.x % 128;
    const int warp = t / 32, lane = t % 32;
    const int r = row0 + warp * 16 + lane / 4;
    const int c0 = col0 + 2 * (lane % 4);
    __half* row_lo = C + static_cast<size_t>(r) * N + c0;
    __half* row_hi = row_lo + static_cast<size_t>(8) * N;
    if (row0 + 64 <= M && col0 + kBlockN <= N) {
#pragma unroll
        for (int j = 0; j < kBlockN / 8; ++j) {
            *reinterpret_cast<__half2*>(row_lo + 8 * j) = __floats2half2_rn(d[4 * j + 0], d[4 * j + 1]);
            *reinterpret_cast<__half2*>(row_hi + 8 * j) = __floats2half2_rn(d[4 * j + 2], d[4 * j + 3]);
        }
        return;
    }
#pragma unroll
    for (int j = 0; j < kBlockN / 8; ++j) {
        if (c0 + 8 * j < N) {   // N % 8 == 0: the column after is inside too, and the fp16x2 store is aligned
            if (r < M) *reinterpret_cast<__half2*>(row_lo + 8 * j) = __floats2half2_rn(d[4 * j + 0], d[4 * j + 1]);
            if (r + 8 < M) *reinterpret_cast<__half2*>(row_hi + 8 * j) = __floats2half2_rn(d[4 * j + 2], d[4 * j + 3]);
        }
    }
}

// Arm stage `stage`'s `full` barrier with the stage's byte count and issue this CTA's loads of
// k-tile kt into it: its A box, and the B tile, either all of it (kCluster = 1) or its 1 / kCluster
// share (rank r: B rows b_row + r 256 / kCluster ..) multicast to every CTA of the cluster, where it
// lands at the same offset and completes its bytes on the same barrier. Either way each CTA's
// stage receives kStageBytes.
template <int kCluster>
__device__ __forceinline__ void load_stage(uint8_t* stage, uint64_t* full, const CUtensorMap* map_a,
                                           const CUtensorMap* map_b, int kt, int a_row, int b_row, uint32_t rank) {
    mbar_arrive_expect_tx(full, kStageBytes);
    tma_load_2d(stage, map_a, full, kt * kBlockK, a_row);
    if (kCluster == 1) {
        tma_load_2d(stage + kTileABytes, map_b, full, kt * kBlockK, b_row);
    } else {
        constexpr int kShareRows = kBlockN / kCluster;
        tma_load_2d_multicast(stage + kTileABytes + rank * (kTileBBytes / kCluster), map_b, full, kt * kBlockK,
                              b_row + static_cast<int>(rank) * kShareRows, static_cast<uint16_t>((1u << kCluster) - 1u));
    }
}

// ---------------------------------------------------------------------------------------------
// Baseline: the same warps load and multiply; a 2-stage double buffer, a wait for the math at
// every k-tile.

__global__ void __launch_bounds__(kIssuerThreads, 1)
one_issuer_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                  __half* __restrict__ C, int M, int N, int K) {
    extern __shared__ uint8_t smem_raw[];
    uint8_t* stages = align_1024(smem_raw);
    __shared__ __align__(8) uint64_t full[kIssuerStages];

    const int math_wg = threadIdx.x / 128;
    const int tiles_m = ceil_div(M, kBlockM), tiles_n = ceil_div(N, kBlockN);
    int tile_m, tile_n;
    tile_coordinates(static_cast<int>(blockIdx.x), tiles_m, tiles_n, kGroupM, &tile_m, &tile_n);
    const int a_row = tile_m * kBlockM, b_row = tile_n * kBlockN;
    const int k_tiles = ceil_div(K, kBlockK);
    if (threadIdx.x == 0) {
        for (int s = 0; s < kIssuerStages; ++s) mbar_init(&full[s], 1);
        mbar_init_fence();
    }
    __syncthreads();
    if (threadIdx.x == 0) load_stage<1>(stages, &full[0], &map_a, &map_b, 0, a_row, b_row, 0);

    float d[128];
    for (int kt = 0; kt < k_tiles; ++kt) {
        const int s = kt % kIssuerStages;
        // The other stage was last read by k-tile kt - 1, whose wgmmas every warp waited for
        // before the __syncthreads that ended it: free to refill.
        if (threadIdx.x == 0 && kt + 1 < k_tiles)
            load_stage<1>(stages + (s ^ 1) * kStageBytes, &full[s ^ 1], &map_a, &map_b, kt + 1, a_row, b_row, 0);
        mbar_wait(&full[s], (kt / kIssuerStages) & 1);
        const uint8_t* tile_a = stages + s * kStageBytes;
        fence_registers(d);
        wgmma_fence();
        mma_k_tile(d, tile_a, tile_a + kTileABytes, math_wg, kt == 0);
        wgmma_commit();
        wgmma_wait<0>();                    // the issuing warps wait for their math at every k-tile
        fence_registers(d);
        __syncthreads();                    // both warpgroups are done reading stage s
    }
    store_tile(d, C, M, N, a_row + math_wg * 64, b_row);
}

// ---------------------------------------------------------------------------------------------
// Optimized: a TMA producer warpgroup and two wgmma consumer warpgroups over a ring of full/empty
// mbarriers, persistent over tiles. Template arguments: kCluster = 2 adds a 2 x 1 cluster whose
// CTAs take neighbouring row tiles of the same column tile and multicast half of B each;
// kTmaStore stores C through a shared-memory staging buffer and TMA (3-stage ring) instead of
// from the registers (4-stage ring).

// Release a stage: one arrive on this CTA's `empty` barrier and one on each peer's.
__device__ __forceinline__ void release(uint64_t* empty, uint32_t rank, int cluster) {
    mbar_arrive(empty);
    for (int r = 1; r < cluster; ++r) mbar_arrive_cluster(empty, (rank + static_cast<uint32_t>(r)) % cluster);
}

// The producer: one thread walks this CTA's tiles and k-tiles, waits until every reader of the
// next stage released it, and refills it. It never waits for math, so it runs a whole ring of
// k-tiles ahead, across tile boundaries.
template <int kCluster, int kRing>
__device__ __forceinline__ void produce(uint8_t* stages, uint64_t* full, uint64_t* empty, const CUtensorMap* map_a,
                                        const CUtensorMap* map_b, int units_m, int tiles_n, int k_tiles,
                                        uint32_t rank) {
    const int units = units_m * tiles_n;
    int s = 0;
    uint32_t phase = 0;                                // of the ring pass: flips when s wraps
    for (int unit = static_cast<int>(blockIdx.x) / kCluster; unit < units;
         unit += static_cast<int>(gridDim.x) / kCluster) {
        int unit_m, tile_n;
        tile_coordinates(unit, units_m, tiles_n, kGroupM / kCluster, &unit_m, &tile_n);
        const int a_row = (unit_m * kCluster + static_cast<int>(rank)) * kBlockM;
        for (int kt = 0; kt < k_tiles; ++kt) {
            // The first pass finds every stage empty: waiting on the parity of the phase before
            // a fresh barrier's first returns at once.
            mbar_wait(&empty[s], phase ^ 1);
            load_stage<kCluster>(stages + s * kStageBytes, &full[s], map_a, map_b, kt, a_row, tile_n * kBlockN, rank);
            if (++s == kRing) {
                s = 0;
                phase ^= 1;
            }
        }
    }
}

// Two fp32 rounded to fp16x2 and stored at shared address `addr` (STS: a generic store would
// leave the address space to be resolved at run time).
__device__ __forceinline__ void st_shared_half2(uint32_t addr, float lo, float hi) {
    const __half2 v = __floats2half2_rn(lo, hi);
    asm volatile("st.shared.b32 [%0], %1;" ::"r"(addr), "r"(*reinterpret_cast<const uint32_t*>(&v)) : "memory");
}

// Write one math warpgroup's 64 x 256 accumulators as fp16 into its 32 KiB of the staging buffer:
// four 64 x 64 boxes of 8 KiB, each in the C map's 128-byte swizzle (row r's 16-byte chunk c sits
// at chunk c ^ (r % 8)). One store of a warp covers 8 rows x one chunk: 8 different chunks, all
// 32 banks, no conflict (unswizzled, the 8 rows would share 4 banks).
__device__ __forceinline__ void stage_tile(const float (&d)[128], uint8_t* staging) {
    const int t = threadIdx.x % 128;
    const int warp = t / 32, lane = t % 32;
    const int r = warp * 16 + lane / 4;                // and r + 8, which has the same r % 8
    const uint32_t row_lo = smem_u32(staging) + r * 128 + 4 * (lane % 4);
#pragma unroll
    for (int j = 0; j < kBlockN / 8; ++j) {
        const uint32_t p = row_lo + (j / 8) * (kStoreBox * 128) + (((j % 8) ^ (r % 8)) << 4);
        st_shared_half2(p, d[4 * j + 0], d[4 * j + 1]);
        st_shared_half2(p + 8 * 128, d[4 * j + 2], d[4 * j + 3]);
    }
}

// The TMA-store epilogue of one math warpgroup: wait until its previous tile's store has read the
// staging buffer (one tile ago: long done), write the tile there, make the writes visible to the
// async proxy, and let one thread issue the four box stores. TMA clips what lies outside C, so
// ragged edges and a cluster's padding row tile need no guard. The warpgroup goes straight on
// to its next tile; the stores drain beside its math.
__device__ __forceinline__ void store_tile_tma(const float (&d)[128], uint8_t* staging, const CUtensorMap* map_c,
                                               int math_wg, int row0, int col0) {
    const bool issuer = threadIdx.x % 128 == 0;
    if (issuer) bulk_wait_read<0>();
    named_barrier(1 + math_wg, 128);
    stage_tile(d, staging);
    fence_proxy_async_smem();
    named_barrier(1 + math_wg, 128);
    if (issuer) {
#pragma unroll
        for (int b = 0; b < kBlockN / kStoreBox; ++b)
            tma_store_2d(map_c, staging + b * (kStoreBox * 128), col0 + b * kStoreBox, row0);
        bulk_commit();
    }
}

// A consumer warpgroup: waits on `full`, issues its 4 wgmmas, keeps one group in flight
// (wait_group 1) and releases the stage the retired group read: one arrive per warp on this
// CTA's `empty`, and with a cluster on every peer's too (their multicast wrote into it).
template <int kCluster, int kRing, bool kTmaStore>
__device__ __forceinline__ void consume(const uint8_t* stages, uint64_t* full, uint64_t* empty, __half* C,
                                        const CUtensorMap* map_c, int M, int N, int units_m, int tiles_n, int k_tiles,
                                        uint32_t rank) {
    const int math_wg = static_cast<int>(threadIdx.x) / 128 - 1;
    const bool warp_leader = threadIdx.x % 32 == 0;
    uint8_t* staging = const_cast<uint8_t*>(stages) + kRing * kStageBytes + math_wg * (kStagingBytes / 2);
    const int units = units_m * tiles_n;
    int s = 0;
    uint32_t phase = 0;
    float d[128];
    for (int unit = static_cast<int>(blockIdx.x) / kCluster; unit < units;
         unit += static_cast<int>(gridDim.x) / kCluster) {
        int unit_m, tile_n;
        tile_coordinates(unit, units_m, tiles_n, kGroupM / kCluster, &unit_m, &tile_n);
        int previous = -1;                             // the stage the group still in flight reads
        for (int kt = 0; kt < k_tiles; ++kt) {
            mbar_wait(&full[s], phase);
            const uint8_t* tile_a = stages + s * kStageBytes;
            fence_registers(d);
            wgmma_fence();
            mma_k_tile(d, tile_a, tile_a + kTileABytes, math_wg, kt == 0);
            wgmma_commit();
            wgmma_wait<1>();                           // k-tile kt - 1's group is done; kt's keeps running
            fence_registers(d);
            if (previous >= 0 && warp_leader) release(&empty[previous], rank, kCluster);
            previous = s;
            if (++s == kRing) {
                s = 0;
                phase ^= 1;
            }
        }
        wgmma_wait<0>();                               // the tile's last group, once, before its epilogue
        fence_registers(d);
        if (warp_leader) release(&empty[previous], rank, kCluster);   // k_tiles >= 1: previous is a stage
        const int row0 = (unit_m * kCluster + static_cast<int>(rank)) * kBlockM + math_wg * 64;
        if (kTmaStore) store_tile_tma(d, staging, map_c, math_wg, row0, tile_n * kBlockN);
        else store_tile(d, C, M, N, row0, tile_n * kBlockN);
    }
    if (kTmaStore && threadIdx.x % 128 == 0) bulk_wait<0>();   // the last stores done before the CTA leaves
}

template <int kCluster, bool kTmaStore>
__global__ void __launch_bounds__(kSpecializedThreads, 1)
warp_specialized_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                        const __grid_constant__ CUtensorMap map_c, __half* __restrict__ C, int M, int N, int K) {
    constexpr int kRing = ring_stages(kTmaStore);
    extern __shared__ uint8_t smem_raw[];
    uint8_t* stages = align_1024(smem_raw);
    __shared__ __align__(8) uint64_t full[kRing];      // TMA bytes landed: the consumers may read
    __shared__ __align__(8) uint64_t empty[kRing];     // every consumer warp (of every CTA) is done: refill

    const uint32_t rank = kCluster > 1 ? cluster_ctarank() : 0u;
    // A cluster takes kCluster row tiles at a time (a padding row tile past M is loaded as zeros
    // by TMA, computed, and not stored: it keeps its cluster's protocol).
    const int units_m = ceil_div(ceil_div(M, kBlockM), kCluster), tiles_n = ceil_div(N, kBlockN);
    const int k_tiles = ceil_div(K, kBlockK);
    if (threadIdx.x == 0) {
        for (int s = 0; s < kRing; ++s) {
            mbar_init(&full[s], 1);                    // the producer's arrive.expect_tx
            mbar_init(&empty[s], kCluster * kConsumerWarps);   // one arrive per consumer warp of the cluster
        }
        mbar_init_fence();
    }
    // The last block-wide barrier: roles split here. With a cluster, the peer's barriers must
    // exist before we multicast into it or arrive on them.
    if (kCluster > 1) cluster_sync();
    else __syncthreads();

    if (threadIdx.x / 128 == 0) {
        setmaxnreg_dec<kProducerRegisters>();          // registers back to the pool; one thread drives TMA
        if (threadIdx.x == 0)
            produce<kCluster, kRing>(stages, full, empty, &map_a, &map_b, units_m, tiles_n, k_tiles, rank);
    } else {
        setmaxnreg_inc<kConsumerRegisters>();          // the registers the producer gave back; wgmma only
        consume<kCluster, kRing, kTmaStore>(stages, full, empty, C, &map_c, M, N, units_m, tiles_n, k_tiles, rank);
    }
    if (kCluster > 1) cluster_sync();                  // a peer may multicast into us or arrive on us until here
}

// ---------------------------------------------------------------------------------------------
// Host side.

using Kernel = void (*)(CUtensorMap, CUtensorMap, CUtensorMap, __half*, int, int, int);

// Variants 1.. of the warp-specialized kernel: (kernel, CTAs per cluster, TMA store).
struct Specialized {
    Kernel kernel;
    int cluster;
    bool tma_store;
};
constexpr int kSpecializedVariants = 3;
Specialized specialized(int variant) {
    switch (variant) {
        case 1: return {warp_specialized_kernel<1, true>, 1, true};
        case 2: return {warp_specialized_kernel<2, true>, 2, true};
        default: return {warp_specialized_kernel<1, false>, 1, false};   // 3: the register epilogue
    }
}

// Once per device: the shared-memory opt-in of every kernel, and how many 2-CTA clusters of the
// clustered kernel can be resident at once (its persistent grid; 0 if none can).
cudaError_t configure(int* sms, int* clusters) {
    static int sm_count[kMaxDevices] = {}, max_clusters[kMaxDevices] = {};
    static bool ready[kMaxDevices] = {};
    int device = 0;
    cudaError_t err = cudaGetDevice(&device);
    if (err != cudaSuccess) return err;
    if (device < 0 || device >= kMaxDevices) return cudaErrorInvalidDevice;
    if (!ready[device]) {
        err = cudaFuncSetAttribute(one_issuer_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kIssuerSmemBytes);
        for (int v = 1; v <= kSpecializedVariants && err == cudaSuccess; ++v)
            err = cudaFuncSetAttribute(specialized(v).kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       ring_smem_bytes(specialized(v).tma_store));
        if (err == cudaSuccess) err = cudaDeviceGetAttribute(&sm_count[device], cudaDevAttrMultiProcessorCount, device);
        if (err != cudaSuccess) return err;
        cudaLaunchAttribute attr{};
        attr.id = cudaLaunchAttributeClusterDimension;
        attr.val.clusterDim = {2, 1, 1};
        cudaLaunchConfig_t config{};
        config.gridDim = dim3(2);
        config.blockDim = dim3(kSpecializedThreads);
        config.dynamicSmemBytes = ring_smem_bytes(specialized(2).tma_store);
        config.attrs = &attr;
        config.numAttrs = 1;
        err = cudaOccupancyMaxActiveClusters(&max_clusters[device], specialized(2).kernel, &config);
        if (err != cudaSuccess) return err;
        ready[device] = true;
    }
    *sms = sm_count[device];
    *clusters = max_clusters[device];
    return cudaSuccess;
}

// A warp-specialized kernel: persistent, one CTA per SM (or per tile, if fewer); with clusters,
// as many 2-CTA clusters as can be resident (or as there are units of two row tiles x one column
// tile), and B read in 128-row boxes (each CTA's multicast share).
cudaError_t launch_specialized(int variant, const void* A, const void* B, void* C, int M, int N, int K,
                               cudaStream_t stream) {
    const Specialized ws = specialized(variant);
    int sms = 0, max_clusters = 0;
    CUtensorMap map_a, map_b, map_c;
    cudaError_t err = configure(&sms, &max_clusters);
    if (err == cudaSuccess) err = make_map_2d_fp16(&map_a, A, M, K, kBlockM, kBlockK);
    if (err == cudaSuccess) err = make_map_2d_fp16(&map_b, B, N, K, kBlockN / ws.cluster, kBlockK);
    if (err == cudaSuccess) err = make_map_2d_fp16(&map_c, C, M, N, kStoreBox, kStoreBox);
    if (err != cudaSuccess) return err;
    const long long units = static_cast<long long>(ceil_div(ceil_div(M, kBlockM), ws.cluster)) * ceil_div(N, kBlockN);
    const long long resident = ws.cluster > 1 ? max_clusters : sms;
    if (resident < 1) return cudaErrorNotSupported;
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim = {static_cast<unsigned>(ws.cluster), 1, 1};
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(static_cast<unsigned>(ws.cluster * (units < resident ? units : resident)));
    config.blockDim = dim3(kSpecializedThreads);
    config.dynamicSmemBytes = ring_smem_bytes(ws.tma_store);
    config.stream = stream;
    config.attrs = &attr;
    config.numAttrs = ws.cluster > 1 ? 1 : 0;          // one CTA: a plain launch, no cluster attribute
    return cudaLaunchKernelEx(&config, ws.kernel, map_a, map_b, map_c, static_cast<__half*>(C), M, N, K);
}

cudaError_t launch(int variant, const void* A, const void* B, void* C, int M, int N, int K, cudaStream_t stream) {
    if (variant != 0) return launch_specialized(variant, A, B, C, M, N, K, stream);
    int sms = 0, max_clusters = 0;
    CUtensorMap map_a, map_b;
    cudaError_t err = configure(&sms, &max_clusters);
    if (err == cudaSuccess) err = make_map_2d_fp16(&map_a, A, M, K, kBlockM, kBlockK);
    if (err == cudaSuccess) err = make_map_2d_fp16(&map_b, B, N, K, kBlockN, kBlockK);
    if (err != cudaSuccess) return err;
    const long long tiles = static_cast<long long>(ceil_div(M, kBlockM)) * ceil_div(N, kBlockN);
    one_issuer_kernel<<<static_cast<unsigned>(tiles), kIssuerThreads, kIssuerSmemBytes, stream>>>(
        map_a, map_b, static_cast<__half*>(C), M, N, K);
    return cudaGetLastError();
}

}  // namespace

// variant: 0 one_issuer, 1 warp_specialized (TMA-store epilogue), 2 warp_specialized_c2 (and 2 x 1
// clusters with B multicast; cudaErrorNotSupported where no such cluster can be resident),
// 3 warp_specialized_reg_epilogue (C stored from the registers). A is M x K, B is N x K (so C = A @ B^T), C is M x N,
// all fp16 row-major and 16-byte aligned; M, N, K >= 1, N % 8 == 0 and K % 8 == 0 (16-byte rows
// for TMA), and the tile count fits an int. Returns a cudaError_t as int
// (aisp_warp_specialization_error_string names it).
extern "C" int aisp_warp_specialization(int variant, const void* A, const void* B, void* C, int M, int N, int K,
                                        cudaStream_t stream) {
    if (variant < 0 || variant >= kVariants || A == nullptr || B == nullptr || C == nullptr || M < 1 || N < 1 ||
        K < 1 || N % 8 || K % 8 ||
        static_cast<long long>(ceil_div(M, kBlockM)) * ceil_div(N, kBlockN) > 0x7fffffffLL)
        return cudaErrorInvalidValue;
    if ((reinterpret_cast<uintptr_t>(A) | reinterpret_cast<uintptr_t>(B) | reinterpret_cast<uintptr_t>(C)) % 16)
        return cudaErrorMisalignedAddress;
    return static_cast<int>(launch(variant, A, B, C, M, N, K, stream));
}

// cudaSuccess if this device is compute capability 9.0 (the sm_90a code runs nowhere else) and
// the driver exports cuTensorMapEncodeTiled; cudaErrorNotSupported if not; or the error that
// stopped the question.
extern "C" int aisp_warp_specialization_support() { return static_cast<int>(sm90a_tma_support()); }

extern "C" const char* aisp_warp_specialization_error_string(int code) {
    return cudaGetErrorString(static_cast<cudaError_t>(code));
}
