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
// the TMA producer (the non-warp-specialized schedule of matmul_wgmma_pipelined.cu, which this
// file reuses). Compiled with __cluster_dims__(2, 1, 1): CTAs 2c and 2c + 1 form cluster c, rank r
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

namespace {

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
// BEGIN PTX wrappers: TMA, mbarrier, wgmma (the same as matmul_wgmma_pipelined.cu's; to be
// replaced by kernels/common/wgmma_tma.cuh when it lands).

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count) : "memory");
}

// Make the initialized barriers visible to the async proxy (TMA) and to the cluster.
__device__ __forceinline__ void mbar_init_fence() {
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)), "r"(bytes)
                 : "memory");
}

__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(bar)) : "memory");
}

// Spin until the phase with parity `parity` of the barrier has completed (acquire, CTA scope).
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

// 2-D TMA load of the box at (inner coordinate x, outer coordinate y) into this CTA's shared
// memory, its bytes counted against the barrier's transaction count.
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, uint64_t* bar, int x, int y) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];"
        ::"r"(smem_u32(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)), "r"(x), "r"(y)
        : "memory");
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory"); }

// Keep the compiler from moving accumulator reads/writes across wgmma issue/wait points.
__device__ __forceinline__ void fence_registers(float (&d)[128]) {
#pragma unroll
    for (int i = 0; i < 128; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// wgmma shared-memory matrix descriptor for a K-major operand laid out by TMA with 128-byte
// swizzle: start address >> 4 (bits 0-13), leading byte offset (unused for swizzled K-major, 1),
// stride byte offset 1024 >> 4 between 8-row groups (bits 32-45), swizzle mode 1 = 128B (bits 62-63).
__device__ __forceinline__ uint64_t smem_descriptor(const void* tile) {
    const uint64_t addr = smem_u32(tile);
    return ((addr & 0x3FFFF) >> 4) | (uint64_t{1} << 16) | (uint64_t{1024 >> 4} << 32) | (uint64_t{1} << 62);
}

// One wgmma.mma_async m64n256k16, fp16 x fp16 -> fp32, both operands from shared memory through
// matrix descriptors, accumulating into d (128 fp32 registers per thread of the warpgroup).
// scale_d = 0 ignores d's old contents (the first k-step of a tile), 1 accumulates.
__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], uint64_t desc_a, uint64_t desc_b, int scale_d) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16\n"
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127},\n"
        "%128, %129, p, 1, 1, 0, 0;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

// END PTX wrappers: TMA, mbarrier, wgmma.
// ============================================================================================
// BEGIN cluster wrappers: multicast TMA, remote mbarrier arrive, cluster barrier (candidates for
// kernels/common/wgmma_tma.cuh; kernels/ch10/cluster_multicast.cu has the first and last too).

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

__device__ __forceinline__ uint8_t* align_1024(uint8_t* p) {
    return reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(p) + 1023) & ~uintptr_t{1023});
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

// A rows x cols fp16 row-major matrix, read in 128-row x 64-column boxes with 128-byte swizzle,
// what sticks out zero-filled. (Two 128-row boxes stacked are exactly one 256-row box: 16 KiB is
// a whole number of the swizzle's 1 KiB periods.)
cudaError_t make_map(CUtensorMap* map, const void* base, int rows, int cols) {
    const PFN_cuTensorMapEncodeTiled_v12000 encode = encode_fn();
    if (!encode) return cudaErrorNotSupported;
    const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
    const cuuint64_t strides[1] = {static_cast<cuuint64_t>(cols) * 2};   // bytes between rows
    const cuuint32_t box[2] = {kBlockK, kBlockM};
    const cuuint32_t element_strides[2] = {1, 1};
    const CUresult res = encode(map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, const_cast<void*>(base), dims, strides, box,
                                element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return res == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
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
    CUtensorMap map_a, map_b;
    if (err == cudaSuccess) err = make_map(&map_a, A, M, K);
    if (err == cudaSuccess) err = make_map(&map_b, B, N, K);
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
    int device = 0, major = 0, minor = 0, cluster_launch = 0;
    cudaError_t err = cudaGetDevice(&device);
    if (err == cudaSuccess) err = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
    if (err == cudaSuccess) err = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
    if (err == cudaSuccess) err = cudaDeviceGetAttribute(&cluster_launch, cudaDevAttrClusterLaunch, device);
    if (err != cudaSuccess) return static_cast<int>(err);
    if (major != 9 || minor != 0 || !cluster_launch || encode_fn() == nullptr) return cudaErrorNotSupported;
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
