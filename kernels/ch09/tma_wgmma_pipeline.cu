// Hopper's version of the book's tcgen05 TMA pipeline pair: a hand-written bf16 GEMM whose tiles
// arrive by TMA (cp.async.bulk.tensor) and are multiplied by wgmma (warpgroup MMA reading both
// operands straight from shared memory), first with load and math in series, then pipelined.
//
//   C[M, N] = A[M, K] @ B[N, K]^T      A, B, C bf16 row-major (A and B "K-major"), fp32 accumulate
//
// Both kernels compute a 128 x 256 tile of C per block, BK = 64 (one 128-byte row of bf16 per
// tile row, exactly one 128-byte TMA swizzle span), with the same 2 "math" warpgroups, each
// owning 64 rows x 256 columns = 128 fp32 accumulators per thread and issuing 4 wgmma m64n256k16
// per k-tile. Only the schedule differs:
//
//   serial (baseline, the analogue of tcgen05_basic.cu): one shared-memory stage. Thread 0 arms
//     an mbarrier with the tile's byte count and issues the two TMA loads; everyone waits on the
//     mbarrier, the warpgroups run their wgmmas and wait for them, __syncthreads, and only then
//     is the next load issued. The tensor cores idle during every load and the TMA unit during
//     every multiply; at 256 threads x ~168 registers only one block fits per SM, so no other
//     block hides it either.
//   pipelined (optimized, the analogue of tcgen05_pipelined.cu): a ring of kStages = 4 stages
//     (4 x 48 KiB) and warp specialization. Warpgroup 0 is the producer: it gives registers back
//     (setmaxnreg.dec to 40) and one thread loops over k-tiles waiting for an empty slot
//     (`empty` mbarrier), arming the slot's `full` mbarrier with expect_tx and issuing its TMA
//     loads. Warpgroups 1-2 are consumers: setmaxnreg.inc to 232, wait on `full`, issue wgmmas,
//     keep one wgmma group in flight (wait_group 1) and release the previous slot to the
//     producer. Loads run up to 3 k-tiles ahead of the math.
//
// Shared-memory layout: every stage holds A's 128 x 64 and B's 256 x 64 box as TMA wrote them
// with CU_TENSOR_MAP_SWIZZLE_128B (128-byte rows, the 16-byte chunks of row r XOR-permuted by
// r % 8); each box starts on a 1024-byte boundary. The wgmma descriptors describe exactly that
// (K-major, 128-byte swizzle, 1024 bytes between 8-row groups); stepping k by 16 elements inside
// the 64-wide box adds 32 bytes to the start address, the swizzle being applied by hardware to
// the final address.
//
// Edges: TMA zero-fills boxes that stick out of A or B, so M, N and K need no padding; stores
// are guarded. N and K must be multiples of 8 (TMA needs 16-byte row pitches), pointers 16-byte
// aligned. Built for sm_90a (wgmma and setmaxnreg exist only on the arch-specific target).
// The CUtensorMaps are encoded on the host through the driver entry point
// cuTensorMapEncodeTiled, fetched with cudaGetDriverEntryPointByVersion (no -lcuda needed).
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include <cstdint>

namespace {

constexpr int kBlockM = 128;
constexpr int kBlockN = 256;
constexpr int kBlockK = 64;                                   // 64 bf16 = 128 bytes
constexpr int kStages = 4;
constexpr int kMathWarpgroups = 2;                           // each owns 64 rows of the tile
constexpr int kTileABytes = kBlockM * kBlockK * 2;           // 16 KiB
constexpr int kTileBBytes = kBlockN * kBlockK * 2;           // 32 KiB
constexpr int kStageBytes = kTileABytes + kTileBBytes;       // 48 KiB
constexpr int kGroupM = 8;                                   // tile rasterization: 8 row-tiles per group
constexpr int kSerialThreads = 128 * kMathWarpgroups;
constexpr int kPipelinedThreads = 128 * (kMathWarpgroups + 1);
constexpr int kProducerRegisters = 40;
constexpr int kConsumerRegisters = 232;

// ---------------------------------------------------------------------------------------------
// PTX wrappers.

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count) : "memory");
}

__device__ __forceinline__ void mbar_init_fence() {
    // make the initialized barriers visible to the async proxy (TMA) before anyone uses them
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)), "r"(bytes)
                 : "memory");
}

__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(bar)) : "memory");
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

// 2-D TMA load of the box at (inner coordinate x, outer coordinate y) into shared memory, counted
// against the barrier's transaction bytes.
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, uint64_t* bar, int x, int y) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];"
        ::"r"(smem_u32(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)), "r"(x), "r"(y)
        : "memory");
}

// The same load, written to the same shared-memory offset in every CTA of the cluster named in
// cta_mask, completing transaction bytes on the barrier at the same offset in each of them.
__device__ __forceinline__ void tma_load_2d_multicast(void* dst, const CUtensorMap* map, uint64_t* bar, int x, int y,
                                                      uint16_t cta_mask) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
        " [%0], [%1, {%3, %4}], [%2], %5;"
        ::"r"(smem_u32(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)), "r"(x), "r"(y), "h"(cta_mask)
        : "memory");
}

__device__ __forceinline__ uint32_t cluster_ctarank() {
    uint32_t rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    return rank;
}

// Every thread of every CTA in the cluster arrives, then waits (release/acquire at cluster scope).
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// Arrive on the barrier at this barrier's offset in CTA `cta` of the cluster (DSMEM address).
__device__ __forceinline__ void mbar_arrive_cluster(uint64_t* bar, uint32_t cta) {
    asm volatile(
        "{\n"
        ".reg .b32 remote;\n"
        "mapa.shared::cluster.u32 remote, %0, %1;\n"
        "mbarrier.arrive.shared::cluster.b64 _, [remote];\n"
        "}\n"
        ::"r"(smem_u32(bar)), "r"(cta)
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

template <int N>
__device__ __forceinline__ void setmaxnreg_inc() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N)); }
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N)); }

// wgmma shared-memory matrix descriptor for a K-major operand laid out by TMA with 128-byte
// swizzle: start address >> 4 (bits 0-13), leading byte offset (unused for swizzled K-major,
// 1), stride byte offset 1024 >> 4 between 8-row groups (bits 32-45), swizzle mode 1 = 128B
// (bits 62-63).
__device__ __forceinline__ uint64_t smem_descriptor(const void* tile) {
    const uint64_t addr = smem_u32(tile);
    return ((addr & 0x3FFFF) >> 4) | (uint64_t{1} << 16) | (uint64_t{1024 >> 4} << 32) | (uint64_t{1} << 62);
}

// One wgmma.mma_async m64n256k16, bf16 x bf16 -> fp32, both operands from shared memory through
// matrix descriptors, accumulating into d (128 fp32 registers per thread of the warpgroup).
// scale_d = 0 ignores d's old contents (the first k-step of a tile), 1 accumulates.
__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], uint64_t desc_a, uint64_t desc_b,
                                                 int scale_d) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16\n"
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

// The 4 wgmmas of one 64-deep k-tile for one math warpgroup: its 64 rows of A (8 KiB into the A
// box) against all 256 rows of B; +2 in the descriptor = +32 bytes = 16 bf16 further along k.
__device__ __forceinline__ void mma_k_tile(float (&d)[128], const uint8_t* tile_a, const uint8_t* tile_b,
                                           int math_wg, bool first) {
    const uint64_t desc_a = smem_descriptor(tile_a + math_wg * (kTileABytes / kMathWarpgroups));
    const uint64_t desc_b = smem_descriptor(tile_b);
#pragma unroll
    for (int kk = 0; kk < kBlockK / 16; ++kk) {
        wgmma_m64n256k16(d, desc_a + 2 * kk, desc_b + 2 * kk, (first && kk == 0) ? 0 : 1);
    }
}

// Which tile this block computes: groups of kGroupM row-tiles walked column by column, so the
// blocks resident at one time share A rows and B columns in L2. The row-tile count is padded to
// a multiple of kCluster, so the kCluster consecutive blocks of a cluster always get the same
// column tile and consecutive row tiles (kGroupM is a multiple of every cluster size used); a
// padding block loads real rows (clamped) for its peers' sake and stores nothing.
template <int kCluster>
__device__ __forceinline__ void tile_coordinates(int M, int N, int* tile_m, int* tile_n) {
    static_assert(kGroupM % kCluster == 0, "a cluster must not straddle two row groups");
    const int tiles_m = ((M + kBlockM - 1) / kBlockM + kCluster - 1) / kCluster * kCluster;
    const int tiles_n = (N + kBlockN - 1) / kBlockN;
    const int per_group = kGroupM * tiles_n;
    const int group = static_cast<int>(blockIdx.x) / per_group;
    const int first_m = group * kGroupM;
    const int group_rows = min(tiles_m - first_m, kGroupM);
    const int in_group = static_cast<int>(blockIdx.x) % per_group;
    *tile_m = first_m + in_group % group_rows;
    *tile_n = in_group / group_rows;
}

// Write one math warpgroup's 64 x 256 fp32 accumulators to C as bf16. wgmma's accumulator
// layout: warp w of the warpgroup holds rows 16 w .. 16 w + 15; for column block j (8 wide)
// lane l holds d[4 j + 0..1] at row l / 4, columns 8 j + 2 (l % 4) + 0..1, and d[4 j + 2..3]
// eight rows further down.
__device__ __forceinline__ void store_tile(const float (&d)[128], __nv_bfloat16* C, int M, int N, int row0, int col0) {
    const int t = threadIdx.x % 128;
    const int warp = t / 32, lane = t % 32;
    const int r = row0 + warp * 16 + lane / 4;
#pragma unroll
    for (int j = 0; j < kBlockN / 8; ++j) {
        const int c = col0 + 8 * j + 2 * (lane % 4);
        if (c < N) {   // N % 8 == 0: c + 1 < N too, and the bf16x2 store is 4-byte aligned
            if (r < M)
                *reinterpret_cast<__nv_bfloat162*>(C + static_cast<size_t>(r) * N + c) =
                    __floats2bfloat162_rn(d[4 * j + 0], d[4 * j + 1]);
            if (r + 8 < M)
                *reinterpret_cast<__nv_bfloat162*>(C + static_cast<size_t>(r + 8) * N + c) =
                    __floats2bfloat162_rn(d[4 * j + 2], d[4 * j + 3]);
        }
    }
}

__device__ __forceinline__ uint8_t* align_1024(uint8_t* p) {
    return reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(p) + 1023) & ~uintptr_t{1023});
}

// ---------------------------------------------------------------------------------------------
// Baseline: TMA and wgmma in series, one stage.

__global__ void __launch_bounds__(kSerialThreads, 1)
gemm_tma_wgmma_serial(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                      __nv_bfloat16* __restrict__ C, int M, int N, int K) {
    extern __shared__ uint8_t smem_raw[];
    uint8_t* tile_a = align_1024(smem_raw);
    uint8_t* tile_b = tile_a + kTileABytes;
    __shared__ __align__(8) uint64_t full;

    const int math_wg = threadIdx.x / 128;
    int tile_m, tile_n;
    tile_coordinates<1>(M, N, &tile_m, &tile_n);
    if (threadIdx.x == 0) {
        mbar_init(&full, 1);
        mbar_init_fence();
    }
    __syncthreads();

    float d[128];
    const int k_tiles = (K + kBlockK - 1) / kBlockK;
    for (int kt = 0; kt < k_tiles; ++kt) {
        if (threadIdx.x == 0) {
            mbar_arrive_expect_tx(&full, kStageBytes);
            tma_load_2d(tile_a, &map_a, &full, kt * kBlockK, tile_m * kBlockM);
            tma_load_2d(tile_b, &map_b, &full, kt * kBlockK, tile_n * kBlockN);
        }
        mbar_wait(&full, kt & 1);
        fence_registers(d);
        wgmma_fence();
        mma_k_tile(d, tile_a, tile_b, math_wg, kt == 0);
        wgmma_commit();
        wgmma_wait<0>();
        fence_registers(d);
        __syncthreads();   // both warpgroups are done reading the stage before it is refilled
    }
    store_tile(d, C, M, N, tile_m * kBlockM + math_wg * 64, tile_n * kBlockN);
}

// ---------------------------------------------------------------------------------------------
// Optimized: a kStages-deep TMA ring, one producer warpgroup, two consumer warpgroups.
// kCluster = 2 adds Hopper's thread-block clusters: the two CTAs of a cluster compute vertically
// adjacent tiles that need the same 256 rows of B, so each loads half of B's box and TMA
// multicasts it into both CTAs' shared memory (B's L2->SM traffic halves). A stage may then be
// refilled only when the consumers of both CTAs are done with it: each consumer warp arrives on
// the `empty` barrier of every CTA in the cluster (mapa + a remote mbarrier arrive over DSMEM).

template <int kCluster>
__global__ void __launch_bounds__(kPipelinedThreads, 1)
gemm_tma_wgmma_pipelined(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                         __nv_bfloat16* __restrict__ C, int M, int N, int K) {
    static_assert(kCluster == 1 || kCluster == 2, "cluster of 1 or 2 CTAs");
    extern __shared__ uint8_t smem_raw[];
    uint8_t* stages = align_1024(smem_raw);
    __shared__ __align__(8) uint64_t full[kStages];    // TMA bytes landed: consumers may read
    __shared__ __align__(8) uint64_t empty[kStages];   // consumers done: producer may refill

    const int wg = threadIdx.x / 128;
    int tile_m, tile_n;
    tile_coordinates<kCluster>(M, N, &tile_m, &tile_n);
    if (threadIdx.x == 0) {
        for (int s = 0; s < kStages; ++s) {
            mbar_init(&full[s], 1);                                 // the producer's arrive.expect_tx
            mbar_init(&empty[s], kCluster * kMathWarpgroups * 4);   // every consumer warp of the cluster
        }
        mbar_init_fence();
    }
    if constexpr (kCluster > 1) cluster_sync();   // peers' barriers exist before any multicast lands
    else __syncthreads();

    const int k_tiles = (K + kBlockK - 1) / kBlockK;
    if (wg == 0) {
        // Producer: registers back to the pool, one thread drives TMA.
        setmaxnreg_dec<kProducerRegisters>();
        if (threadIdx.x == 0) {
            const int tiles_m = (M + kBlockM - 1) / kBlockM;
            const int a_row = min(tile_m, tiles_m - 1) * kBlockM;          // padding blocks: clamp
            const uint32_t rank = kCluster > 1 ? cluster_ctarank() : 0;
            constexpr int kSliceBytes = kTileBBytes / kCluster;               // this CTA's share of B
            const int b_row = tile_n * kBlockN + static_cast<int>(rank) * (kBlockN / kCluster);
            for (int kt = 0; kt < k_tiles; ++kt) {
                const int s = kt % kStages;
                // the first pass over the ring finds every slot empty: waiting on the parity of the
                // phase before a fresh barrier's first returns at once
                mbar_wait(&empty[s], ((kt / kStages) & 1) ^ 1);
                uint8_t* tile_a = stages + s * kStageBytes;
                mbar_arrive_expect_tx(&full[s], kStageBytes);   // A + all of B, whoever loads it
                tma_load_2d(tile_a, &map_a, &full[s], kt * kBlockK, a_row);
                if constexpr (kCluster > 1)
                    tma_load_2d_multicast(tile_a + kTileABytes + rank * kSliceBytes, &map_b, &full[s], kt * kBlockK,
                                          b_row, static_cast<uint16_t>((1u << kCluster) - 1));
                else
                    tma_load_2d(tile_a + kTileABytes, &map_b, &full[s], kt * kBlockK, b_row);
            }
        }
    } else {
        setmaxnreg_inc<kConsumerRegisters>();
        const int math_wg = wg - 1;
        const bool warp_leader = threadIdx.x % 32 == 0;
        const uint32_t peer = kCluster > 1 ? cluster_ctarank() ^ 1 : 0;   // the other CTA of the pair
        float d[128];
        int previous = -1;
        for (int kt = 0; kt < k_tiles; ++kt) {
            const int s = kt % kStages;
            mbar_wait(&full[s], (kt / kStages) & 1);
            const uint8_t* tile_a = stages + s * kStageBytes;
            fence_registers(d);
            wgmma_fence();
            mma_k_tile(d, tile_a, tile_a + kTileABytes, math_wg, kt == 0);
            wgmma_commit();
            wgmma_wait<1>();                  // the previous k-tile's wgmmas are done with their stage
            fence_registers(d);
            if (previous >= 0 && warp_leader) {
                if constexpr (kCluster > 1) {
                    mbar_arrive(&empty[previous]);
                    mbar_arrive_cluster(&empty[previous], peer);
                } else {
                    mbar_arrive(&empty[previous]);
                }
            }
            previous = s;
        }
        wgmma_wait<0>();
        fence_registers(d);
        store_tile(d, C, M, N, tile_m * kBlockM + math_wg * 64, tile_n * kBlockN);
    }
    // No CTA may exit while a peer can still multicast into its shared memory or arrive on its
    // barriers.
    if constexpr (kCluster > 1) cluster_sync();
}

// ---------------------------------------------------------------------------------------------
// Host side.

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

// A rows x cols bf16 row-major matrix, read in box_rows x 64 boxes with 128-byte swizzle.
bool make_map(CUtensorMap* map, const void* base, int rows, int cols, int box_rows) {
    const PFN_cuTensorMapEncodeTiled_v12000 encode = encode_fn();
    if (!encode) return false;
    const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
    const cuuint64_t strides[1] = {static_cast<cuuint64_t>(cols) * 2};   // bytes, for dimension 1
    const cuuint32_t box[2] = {kBlockK, static_cast<cuuint32_t>(box_rows)};
    const cuuint32_t element_strides[2] = {1, 1};
    return encode(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(base), dims, strides, box,
                  element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                  CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

int validate(const void* A, const void* B, const void* C, int M, int N, int K) {
    if (M < 0 || N < 0 || K < 1 || N % 8 || K % 8) return cudaErrorInvalidValue;
    if ((reinterpret_cast<uintptr_t>(A) | reinterpret_cast<uintptr_t>(B) | reinterpret_cast<uintptr_t>(C)) % 16)
        return cudaErrorInvalidValue;
    return cudaSuccess;
}

// One block per (padded) tile; with cluster > 1, clusters of `cluster` consecutive blocks along x,
// each loading 1/cluster of B's box.
template <typename Kernel>
int launch(Kernel kernel, int threads, int smem_bytes, int cluster, const void* A, const void* B, void* C, int M,
           int N, int K, cudaStream_t stream) {
    if (const int err = validate(A, B, C, M, N, K)) return err;
    if (M == 0 || N == 0) return cudaSuccess;
    CUtensorMap map_a, map_b;
    if (!make_map(&map_a, A, M, K, kBlockM) || !make_map(&map_b, B, N, K, kBlockN / cluster))
        return cudaErrorInvalidValue;
    if (const cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes))
        return err;
    const long long tiles_m = ((M + kBlockM - 1) / kBlockM + cluster - 1) / cluster * cluster;
    const long long tiles = tiles_m * ((N + kBlockN - 1) / kBlockN);
    if (tiles > 0x7fffffffLL) return cudaErrorInvalidValue;
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(static_cast<unsigned>(tiles));
    config.blockDim = dim3(threads);
    config.dynamicSmemBytes = smem_bytes;
    config.stream = stream;
    cudaLaunchAttribute attribute[1];
    attribute[0].id = cudaLaunchAttributeClusterDimension;
    attribute[0].val.clusterDim.x = cluster;
    attribute[0].val.clusterDim.y = 1;
    attribute[0].val.clusterDim.z = 1;
    config.attrs = attribute;
    config.numAttrs = cluster > 1 ? 1 : 0;
    return static_cast<int>(cudaLaunchKernelEx(&config, kernel, map_a, map_b, static_cast<__nv_bfloat16*>(C), M, N, K));
}

}  // namespace

// All entry points return a cudaError_t as int (aisp_cuda_error_string() names it).
// A is M x K, B is N x K (so C = A @ B^T), C is M x N, all bf16 row-major.

extern "C" int aisp_tma_wgmma_serial(const void* A, const void* B, void* C, int M, int N, int K,
                                     cudaStream_t stream) {
    return launch(gemm_tma_wgmma_serial, kSerialThreads, kStageBytes + 1024, 1, A, B, C, M, N, K, stream);
}

extern "C" int aisp_tma_wgmma_pipelined(const void* A, const void* B, void* C, int M, int N, int K,
                                        cudaStream_t stream) {
    return launch(gemm_tma_wgmma_pipelined<1>, kPipelinedThreads, kStages * kStageBytes + 1024, 1, A, B, C, M, N, K,
                  stream);
}

extern "C" int aisp_tma_wgmma_pipelined_cluster(const void* A, const void* B, void* C, int M, int N, int K,
                                                cudaStream_t stream) {
    return launch(gemm_tma_wgmma_pipelined<2>, kPipelinedThreads, kStages * kStageBytes + 1024, 2, A, B, C, M, N, K,
                  stream);
}

extern "C" int aisp_tma_wgmma_stages() { return kStages; }

extern "C" const char* aisp_cuda_error_string(int code) {
    return cudaGetErrorString(static_cast<cudaError_t>(code));
}
