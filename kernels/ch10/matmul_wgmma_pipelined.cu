// Hopper's version of the book's matmul_tcgen05_pipelined pair: the same hand-written fp16
// TMA + wgmma GEMM, first with one shared-memory stage (load and math in series), then with a
// 4-stage ring of full/empty mbarriers in which the warps that issue the math never wait for it
// inside the main loop.
//
//   C[M, N] = A[M, K] @ B[N, K]^T      A, B, C fp16 row-major (A and B "K-major"), fp32 accumulate
//
// Both kernels compute one 128 x 256 tile of C per block (the book's UMMA tile) with BK = 64 (one
// 128-byte row of fp16 per tile row: exactly one 128-byte TMA swizzle span) and the same 256
// threads: two warpgroups each owning 64 rows x 256 columns (128 fp32 accumulators per thread)
// and issuing 4 wgmma m64n256k16 per k-tile. Only the schedule differs:
//
//   single_stage (baseline, the book's matmul_tcgen05): one 48 KiB stage and one mbarrier. Thread 0
//     arms it with expect_tx and issues the TMA loads; everyone waits on it; the warpgroups issue
//     their wgmmas, commit and wait for all of them (wait_group 0); __syncthreads; next load. The
//     tensor cores idle during every load and the TMA unit during every multiply.
//   pipelined (the book's tcgen05_no_wait): kStages = 4 stages (192 KiB), a `full` mbarrier per
//     stage (TMA bytes landed) and an `empty` one (both warpgroups done reading). Thread 0 fills
//     kStages - 1 stages before the loop. Each k-tile: wait on `full`, issue the 4 wgmmas, commit
//     them as a group and wait_group 1, which retires the PREVIOUS k-tile's group and leaves this
//     one running on the tensor cores; one lane per warp then arrives on the previous stage's
//     `empty` barrier (the wgmmas that read it are done), and thread 0 waits for that barrier to
//     complete and refills the stage with the k-tile kStages - 1 ahead. So the loads of the next
//     3 k-tiles are always in flight behind the math, and the math never waits for itself: the
//     only wait for the last group is wait_group 0 before the epilogue. This is the schedule of
//     CUTLASS's non-warp-specialized sm90 TMA mainloop (every warp computes, one thread also
//     loads); splitting loads into their own warpgroup is the lesson of the warp_specialization
//     pair, not of this one.
//
// The book's no_wait kernel frees a stage with umma_arrive (the tcgen05 MMA unit arrives on the
// mbarrier itself when its reads finish); wgmma has no such arrive, so here the warps arrive
// after the wait_group that retires the stage's wgmmas: one k-tile later, which is why the ring
// needs its 4th stage to keep 3 loads ahead.
//
// The epilogue converts the fp32 accumulators to fp16 in registers and stores them (the book's
// kernels write an fp32 buffer and convert it with a separate .to(float16) kernel).
//
// The TMA + wgmma + mbarrier code is what kernels/ch09/tma_wgmma_pipeline.cu proves on H100 (its
// serial kernel, and the wait_group 1 / empty-barrier release of its consumers), in fp16 and with
// whole tiles only; the PTX wrappers, the tensor-map encoding and the sm_90a probe come from
// kernels/common/wgmma_tma.cuh, shared with the other chapter-10 wgmma pairs (the build cache
// key and this pair's source digest cover that header).
//
// Shared-memory layout: every stage holds A's 128 x 64 and B's 256 x 64 box as TMA wrote them with
// CU_TENSOR_MAP_SWIZZLE_128B (128-byte rows, the 16-byte chunks of row r XOR-permuted by r % 8),
// each on a 1024-byte boundary. The wgmma descriptors describe exactly that (K-major, 128-byte
// swizzle, 1024 bytes between 8-row groups); stepping k by 16 elements inside the 64-wide box
// adds 32 bytes to the start address (the hardware applies the swizzle to the final address).
//
// Sizes: any M, N >= 1 and K a positive multiple of 8 (TMA's 16-byte row pitch); the entry point
// refuses anything else. Edge tiles (kernels/common/wgmma_edges.cuh): TMA zero-fills the parts of
// a box past M, N or K, the grid and the k loop count tiles rounded up, and a tile reaching past M
// or N stores element by element, guarded; on the tile grid every block keeps the unguarded stores.
// Built for sm_90a (wgmma exists only on the arch-specific target). The CUtensorMaps are encoded
// on the host per call through the driver's cuTensorMapEncodeTiled, fetched with
// cudaGetDriverEntryPointByVersion (no -lcuda needed).
#include <cuda.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include <cstdint>

#include "../common/wgmma_tma.cuh"   // mbarrier, TMA, wgmma PTX wrappers; tensor maps; the sm_90a probe
#include "../common/wgmma_edges.cuh" // edge tiles: tile counts rounded up, guarded stores

namespace {

using namespace wgmma_tma;
using namespace wgmma_edges;

constexpr int kBlockM = 128;
constexpr int kBlockN = 256;
constexpr int kBlockK = 64;                                  // 64 fp16 = 128 bytes
constexpr int kKAlign = 8;                                   // K: TMA row pitches of 16 bytes
constexpr int kMathWarpgroups = 2;                           // each owns 64 rows of the tile
constexpr int kThreads = 128 * kMathWarpgroups;
constexpr int kTileABytes = kBlockM * kBlockK * 2;           // 16 KiB
constexpr int kTileBBytes = kBlockN * kBlockK * 2;           // 32 KiB
constexpr int kStageBytes = kTileABytes + kTileBBytes;       // 48 KiB
constexpr int kStages = 4;                                   // the pipelined kernel's ring
constexpr int kConsumerWarps = kThreads / 32;                // each arrives once per k-tile on `empty`
constexpr int kSingleSmemBytes = kStageBytes + 1024;         // + room to align to 1024 bytes
constexpr int kRingSmemBytes = kStages * kStageBytes + 1024;
constexpr int kGroupM = 8;                                   // tile rasterization: 8 row-tiles per group
constexpr int kVariants = 2;                                 // 0: single_stage, 1: pipelined

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

// Which tile this block computes: groups of kGroupM row-tiles walked column by column, so the
// blocks resident at one time share A rows and B columns in L2.
__device__ __forceinline__ void tile_coordinates(int M, int N, int* tile_m, int* tile_n) {
    const int tiles_m = tiles_of(M, kBlockM);
    const int tiles_n = tiles_of(N, kBlockN);
    const int per_group = kGroupM * tiles_n;
    const int group = static_cast<int>(blockIdx.x) / per_group;
    const int first_m = group * kGroupM;
    const int group_rows = min(tiles_m - first_m, kGroupM);
    const int in_group = static_cast<int>(blockIdx.x) % per_group;
    *tile_m = first_m + in_group % group_rows;
    *tile_n = in_group / group_rows;
}

// Write one warpgroup's 64 x 256 fp32 accumulators to C as fp16. wgmma's accumulator layout:
// warp w of the warpgroup holds rows 16 w .. 16 w + 15; for column block j (8 wide) lane l holds
// d[4 j + 0..1] at row l / 4, columns 8 j + 2 (l % 4) + 0..1, and d[4 j + 2..3] eight rows down.
__device__ __forceinline__ void store_tile(const float (&d)[128], __half* C, int N, int row0, int col0) {
    const int t = threadIdx.x % 128;
    const int warp = t / 32, lane = t % 32;
    const int r = row0 + warp * 16 + lane / 4;
    __half* row_lo = C + static_cast<size_t>(r) * N + col0 + 2 * (lane % 4);
    __half* row_hi = row_lo + static_cast<size_t>(8) * N;
#pragma unroll
    for (int j = 0; j < kBlockN / 8; ++j) {
        *reinterpret_cast<__half2*>(row_lo + 8 * j) = __floats2half2_rn(d[4 * j + 0], d[4 * j + 1]);
        *reinterpret_cast<__half2*>(row_hi + 8 * j) = __floats2half2_rn(d[4 * j + 2], d[4 * j + 3]);
    }
}

// ---------------------------------------------------------------------------------------------
// The single-stage kernel: TMA and wgmma in series.

__global__ void __launch_bounds__(kThreads, 1)
single_stage_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                    __half* __restrict__ C, int M, int N, int K) {
    extern __shared__ uint8_t smem_raw[];
    uint8_t* tile_a = align_1024(smem_raw);
    uint8_t* tile_b = tile_a + kTileABytes;
    __shared__ __align__(8) uint64_t full;

    const int math_wg = threadIdx.x / 128;
    int tile_m, tile_n;
    tile_coordinates(M, N, &tile_m, &tile_n);
    if (threadIdx.x == 0) {
        mbar_init(&full, 1);
        mbar_init_fence();
    }
    __syncthreads();

    float d[128];
    const int k_tiles = tiles_of(K, kBlockK);
    for (int kt = 0; kt < k_tiles; ++kt) {
        if (threadIdx.x == 0) {
            mbar_arrive_expect_tx(&full, kStageBytes);
            tma_load_2d(tile_a, &map_a, &full, kt * kBlockK, tile_m * kBlockM);
            tma_load_2d(tile_b, &map_b, &full, kt * kBlockK, tile_n * kBlockN);
        }
        mbar_wait(&full, kt & 1);           // the load has landed: the tensor cores were idle until now
        fence_registers(d);
        wgmma_fence();
        mma_k_tile(d, tile_a, tile_b, math_wg, kt == 0);
        wgmma_commit();
        wgmma_wait<0>();                    // ... and now the TMA unit idles until the math is done
        fence_registers(d);
        __syncthreads();                    // both warpgroups are done reading the stage before it is refilled
    }
    const int row0 = tile_m * kBlockM + math_wg * 64, col0 = tile_n * kBlockN;
    if (whole_tile(M, N, tile_m * kBlockM, col0, kBlockM, kBlockN)) {
        store_tile(d, C, N, row0, col0);
    } else {                                // an edge tile: element by element, inside M x N only
        store_tile_guarded<kBlockN>(d, C, M, N, row0, col0, [](float v, int) { return v; });
    }
}

// ---------------------------------------------------------------------------------------------
// The pipelined kernel: a kStages-deep TMA ring; the warps that issue the math never wait for it
// inside the main loop.

// Arm stage s's `full` barrier with the stage's byte count and load k-tile kt into it.
__device__ __forceinline__ void load_stage(uint8_t* stages, uint64_t* full, const CUtensorMap* map_a,
                                           const CUtensorMap* map_b, int s, int kt, int a_row, int b_row) {
    uint8_t* tile_a = stages + s * kStageBytes;
    mbar_arrive_expect_tx(&full[s], kStageBytes);
    tma_load_2d(tile_a, map_a, &full[s], kt * kBlockK, a_row);
    tma_load_2d(tile_a + kTileABytes, map_b, &full[s], kt * kBlockK, b_row);
}

__global__ void __launch_bounds__(kThreads, 1)
pipelined_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                 __half* __restrict__ C, int M, int N, int K) {
    extern __shared__ uint8_t smem_raw[];
    uint8_t* stages = align_1024(smem_raw);
    __shared__ __align__(8) uint64_t full[kStages];    // TMA bytes landed: the warpgroups may read
    __shared__ __align__(8) uint64_t empty[kStages];   // every warp's wgmmas retired: thread 0 may refill

    const int math_wg = threadIdx.x / 128;
    int tile_m, tile_n;
    tile_coordinates(M, N, &tile_m, &tile_n);
    const int a_row = tile_m * kBlockM, b_row = tile_n * kBlockN;
    const int k_tiles = tiles_of(K, kBlockK);
    if (threadIdx.x == 0) {
        for (int s = 0; s < kStages; ++s) {
            mbar_init(&full[s], 1);                    // thread 0's arrive.expect_tx
            mbar_init(&empty[s], kConsumerWarps);      // one arrive per warp
        }
        mbar_init_fence();
    }
    __syncthreads();
    if (threadIdx.x == 0) {                            // prologue: the first kStages - 1 k-tiles
        for (int kt = 0; kt < kStages - 1 && kt < k_tiles; ++kt)
            load_stage(stages, full, &map_a, &map_b, kt, kt, a_row, b_row);
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
        if (kt > 0 && threadIdx.x % 32 == 0) mbar_arrive(&empty[(kt - 1) % kStages]);
        // Refill the stage just released with the k-tile kStages - 1 ahead, once every warp of both
        // warpgroups has released it (its previous use was k-tile next - kStages = kt - 1).
        const int next = kt + kStages - 1;
        if (threadIdx.x == 0 && next < k_tiles) {
            const int ns = next % kStages;
            if (next >= kStages) mbar_wait(&empty[ns], (next / kStages - 1) & 1);
            load_stage(stages, full, &map_a, &map_b, ns, next, a_row, b_row);
        }
    }
    wgmma_wait<0>();                                   // the last group, once, before the epilogue
    fence_registers(d);
    const int row0 = tile_m * kBlockM + math_wg * 64, col0 = tile_n * kBlockN;
    if (whole_tile(M, N, tile_m * kBlockM, col0, kBlockM, kBlockN)) {
        store_tile(d, C, N, row0, col0);
    } else {                                // an edge tile: element by element, inside M x N only
        store_tile_guarded<kBlockN>(d, C, M, N, row0, col0, [](float v, int) { return v; });
    }
}

// ---------------------------------------------------------------------------------------------
// Host side.

// A rows x cols fp16 row-major matrix, read in box_rows x 64 boxes with 128-byte swizzle.
cudaError_t make_map(CUtensorMap* map, const void* base, int rows, int cols, int box_rows) {
    return make_map_2d_fp16(map, base, rows, cols, box_rows, kBlockK);
}

// One block per 128 x 256 tile of C; kernel and shared-memory size by variant.
cudaError_t launch(int variant, const void* A, const void* B, void* C, int M, int N, int K, cudaStream_t stream) {
    void (*kernel)(CUtensorMap, CUtensorMap, __half*, int, int, int) =
        variant == 0 ? single_stage_kernel : pipelined_kernel;
    const int smem_bytes = variant == 0 ? kSingleSmemBytes : kRingSmemBytes;
    CUtensorMap map_a, map_b;
    cudaError_t err = make_map(&map_a, A, M, K, kBlockM);
    if (err == cudaSuccess) err = make_map(&map_b, B, N, K, kBlockN);
    if (err == cudaSuccess) err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes);
    if (err != cudaSuccess) return err;
    const long long tiles = static_cast<long long>(tiles_of(M, kBlockM)) * tiles_of(N, kBlockN);
    kernel<<<static_cast<unsigned>(tiles), kThreads, smem_bytes, stream>>>(map_a, map_b, static_cast<__half*>(C), M,
                                                                            N, K);
    return cudaGetLastError();
}

}  // namespace

// variant: 0 single_stage, 1 pipelined. A is M x K, B is N x K (so C = A @ B^T), C is M x N, all fp16
// row-major and 16-byte aligned; M, N >= 1, K a positive multiple of 8, and the
// tile count fits an int. Returns a cudaError_t as int (aisp_matmul_wgmma_pipelined_error_string).
extern "C" int aisp_matmul_wgmma_pipelined(int variant, const void* A, const void* B, void* C, int M, int N, int K,
                                          cudaStream_t stream) {
    if (variant < 0 || variant >= kVariants || A == nullptr || B == nullptr || C == nullptr || M < 1 || N < 1 ||
        K < kKAlign || K % kKAlign ||
        static_cast<long long>(tiles_of(M, kBlockM)) * tiles_of(N, kBlockN) > 0x7fffffffLL)
        return cudaErrorInvalidValue;
    if ((reinterpret_cast<uintptr_t>(A) | reinterpret_cast<uintptr_t>(B) | reinterpret_cast<uintptr_t>(C)) % 16)
        return cudaErrorMisalignedAddress;
    return static_cast<int>(launch(variant, A, B, C, M, N, K, stream));
}

// cudaSuccess if this device is compute capability 9.0 (the sm_90a code runs nowhere else) and
// the driver exports cuTensorMapEncodeTiled; cudaErrorNotSupported if not; or the error that
// stopped the question.
extern "C" int aisp_matmul_wgmma_pipelined_support() {
    return static_cast<int>(sm90a_tma_support());
}

extern "C" const char* aisp_matmul_wgmma_pipelined_error_string(int code) {
    return cudaGetErrorString(static_cast<cudaError_t>(code));
}
