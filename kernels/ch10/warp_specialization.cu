// Hopper's version of the book's tcgen05_warp_specialization pair: the same hand-written fp16
// TMA + wgmma GEMM, first with the same warps both loading and multiplying (no roles), then split
// into a TMA producer warpgroup that gives its registers away (setmaxnreg.dec) and two consumer
// warpgroups that take them (setmaxnreg.inc) and only multiply.
//
//   C[M, N] = A[M, K] @ B[N, K]^T      A, B, C fp16 row-major (A and B "K-major"), fp32 accumulate
//
// Both kernels compute 128 x 256 tiles of C (the book's UMMA tile) with BK = 64 (one 128-byte row
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
//   warp_specialized (the book's tcgen05_warp_specialized.cu): 384 threads = 3 warpgroups, a
//     4-stage ring (192 KiB) with `full` and `empty` mbarriers, persistent (grid = min(SMs,
//     tiles), each block walks tiles blockIdx.x, + gridDim.x, ...). Warpgroup 0 is the producer:
//     setmaxnreg.dec to 40 registers, then one thread walks the same tiles and k-tiles as the
//     consumers, waits on `empty`, arms `full` with expect_tx and issues the TMA loads; it never
//     waits for math, so it runs up to 4 k-tiles ahead, across tile boundaries (it loads the next
//     tile while the consumers store this one). Warpgroups 1-2 are consumers: setmaxnreg.inc to
//     232, wait on `full`, issue 4 wgmmas, commit and wait_group 1 (the previous k-tile's group
//     retires, this one stays on the tensor pipe), then one lane per warp arrives on the previous
//     stage's `empty`; wait_group 0 only once per tile, before its epilogue.
//     Registers: 128 x 40 + 256 x 232 = 64512 <= 65536, the whole file for one block.
//
// Where the book differs: its producer and consumer are single warps (tcgen05.mma is issued by
// one thread; wgmma needs a whole warpgroup of 128 threads per 64-row slab, hence warpgroups and
// setmaxnreg here), its consumer frees a stage with umma_arrive (an MMA-side mbarrier arrive
// wgmma lacks: here a warp arrives after the wait_group that retires the stage's reads, one
// k-tile later), its accumulator lives in TMEM, both its sides write an fp32 buffer and convert
// it with .to(float16) (here fp16 is stored straight from the registers), and its kernel is not
// persistent (one tile per block; here the producer's independence is used to overlap the next
// tile's loads with this tile's epilogue, which is what decoupled roles buy at K = 2048, where a
// tile has only 32 k-tiles).
//
// The TMA + wgmma + mbarrier + setmaxnreg code is what kernels/ch09/tma_wgmma_pipeline.cu proves on
// H100 (its producer/consumer kernel, in bf16) and kernels/ch10/matmul_wgmma_pipelined.cu (fp16);
// the wrappers come from kernels/common/wgmma_tma.cuh (covered by the build key and the digest).
//
// Edges: TMA zero-fills the parts of a box outside A or B (and still counts the box's full bytes
// on the mbarrier), so M, N and K need no padding; stores are guarded. N and K must be multiples
// of 8 (16-byte row pitches for TMA, 4-byte aligned fp16x2 stores); pointers 16-byte aligned.
// Built for sm_90a (wgmma and setmaxnreg exist only on the arch-specific target).
#include <cuda.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include <cstdint>

#include "../common/wgmma_tma.cuh"   // mbarrier, TMA, wgmma, setmaxnreg PTX; tensor maps; the sm_90a probe

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
// one_issuer
constexpr int kIssuerThreads = 128 * kMathWarpgroups;        // 256: the math warpgroups, thread 0 also loads
constexpr int kIssuerStages = 2;                             // the book's double buffer
constexpr int kIssuerSmemBytes = kIssuerStages * kStageBytes + 1024;   // + room to align to 1024 bytes
// warp_specialized
constexpr int kStages = 4;                                   // the ring
constexpr int kSpecializedThreads = 128 * (1 + kMathWarpgroups);       // 384: producer + 2 consumers
constexpr int kConsumerWarps = 4 * kMathWarpgroups;          // each arrives once per k-tile on `empty`
constexpr int kProducerRegisters = 40;
constexpr int kConsumerRegisters = 232;
constexpr int kRingSmemBytes = kStages * kStageBytes + 1024;
constexpr int kVariants = 2;                                 // 0: one_issuer, 1: warp_specialized
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

// Tile `tile` (0 .. tiles_m * tiles_n - 1) in groups of kGroupM row-tiles walked column by column,
// so the tiles in flight at one time share A rows and B columns in L2.
__device__ __forceinline__ void tile_coordinates(int tile, int tiles_m, int tiles_n, int* tile_m, int* tile_n) {
    const int per_group = kGroupM * tiles_n;
    const int group = tile / per_group;
    const int first_m = group * kGroupM;
    const int group_rows = min(tiles_m - first_m, kGroupM);
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

// Arm stage `stage`'s `full` barrier with the stage's byte count and load k-tile kt into it.
__device__ __forceinline__ void load_stage(uint8_t* stage, uint64_t* full, const CUtensorMap* map_a,
                                           const CUtensorMap* map_b, int kt, int a_row, int b_row) {
    mbar_arrive_expect_tx(full, kStageBytes);
    tma_load_2d(stage, map_a, full, kt * kBlockK, a_row);
    tma_load_2d(stage + kTileABytes, map_b, full, kt * kBlockK, b_row);
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
    tile_coordinates(static_cast<int>(blockIdx.x), tiles_m, tiles_n, &tile_m, &tile_n);
    const int a_row = tile_m * kBlockM, b_row = tile_n * kBlockN;
    const int k_tiles = ceil_div(K, kBlockK);
    if (threadIdx.x == 0) {
        for (int s = 0; s < kIssuerStages; ++s) mbar_init(&full[s], 1);
        mbar_init_fence();
    }
    __syncthreads();
    if (threadIdx.x == 0) load_stage(stages, &full[0], &map_a, &map_b, 0, a_row, b_row);

    float d[128];
    for (int kt = 0; kt < k_tiles; ++kt) {
        const int s = kt % kIssuerStages;
        // The other stage was last read by k-tile kt - 1, whose wgmmas every warp waited for
        // before the __syncthreads that ended it: free to refill.
        if (threadIdx.x == 0 && kt + 1 < k_tiles)
            load_stage(stages + (s ^ 1) * kStageBytes, &full[s ^ 1], &map_a, &map_b, kt + 1, a_row, b_row);
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
// Optimized: a TMA producer warpgroup and two wgmma consumer warpgroups over a kStages-deep ring,
// persistent over tiles.

__global__ void __launch_bounds__(kSpecializedThreads, 1)
warp_specialized_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                        __half* __restrict__ C, int M, int N, int K) {
    extern __shared__ uint8_t smem_raw[];
    uint8_t* stages = align_1024(smem_raw);
    __shared__ __align__(8) uint64_t full[kStages];    // TMA bytes landed: the consumers may read
    __shared__ __align__(8) uint64_t empty[kStages];   // every consumer warp is done: the producer may refill

    const int wg = threadIdx.x / 128;
    const int tiles_m = ceil_div(M, kBlockM), tiles_n = ceil_div(N, kBlockN);
    const int tiles = tiles_m * tiles_n;
    const int k_tiles = ceil_div(K, kBlockK);
    if (threadIdx.x == 0) {
        for (int s = 0; s < kStages; ++s) {
            mbar_init(&full[s], 1);                    // the producer's arrive.expect_tx
            mbar_init(&empty[s], kConsumerWarps);      // one arrive per consumer warp
        }
        mbar_init_fence();
    }
    __syncthreads();                                   // the last block-wide barrier: roles split here

    if (wg == 0) {
        // Producer: registers back to the pool; one thread drives TMA, never waiting for math.
        setmaxnreg_dec<kProducerRegisters>();
        if (threadIdx.x == 0) {
            int s = 0;
            uint32_t phase = 0;                        // of the ring pass: flips when s wraps
            for (int tile = static_cast<int>(blockIdx.x); tile < tiles; tile += static_cast<int>(gridDim.x)) {
                int tile_m, tile_n;
                tile_coordinates(tile, tiles_m, tiles_n, &tile_m, &tile_n);
                for (int kt = 0; kt < k_tiles; ++kt) {
                    // The first pass finds every stage empty: waiting on the parity of the phase
                    // before a fresh barrier's first returns at once.
                    mbar_wait(&empty[s], phase ^ 1);
                    load_stage(stages + s * kStageBytes, &full[s], &map_a, &map_b, kt, tile_m * kBlockM,
                               tile_n * kBlockN);
                    if (++s == kStages) {
                        s = 0;
                        phase ^= 1;
                    }
                }
            }
        }
    } else {
        // Consumers: the registers the producer gave back; wgmma only.
        setmaxnreg_inc<kConsumerRegisters>();
        const int math_wg = wg - 1;
        const bool warp_leader = threadIdx.x % 32 == 0;
        int s = 0;
        uint32_t phase = 0;
        float d[128];
        for (int tile = static_cast<int>(blockIdx.x); tile < tiles; tile += static_cast<int>(gridDim.x)) {
            int tile_m, tile_n;
            tile_coordinates(tile, tiles_m, tiles_n, &tile_m, &tile_n);
            int previous = -1;                         // the stage the group still in flight reads
            for (int kt = 0; kt < k_tiles; ++kt) {
                mbar_wait(&full[s], phase);
                const uint8_t* tile_a = stages + s * kStageBytes;
                fence_registers(d);
                wgmma_fence();
                mma_k_tile(d, tile_a, tile_a + kTileABytes, math_wg, kt == 0);
                wgmma_commit();
                wgmma_wait<1>();                       // k-tile kt - 1's group is done; kt's keeps running
                fence_registers(d);
                if (previous >= 0 && warp_leader) mbar_arrive(&empty[previous]);
                previous = s;
                if (++s == kStages) {
                    s = 0;
                    phase ^= 1;
                }
            }
            wgmma_wait<0>();                           // the tile's last group, once, before its epilogue
            fence_registers(d);
            if (warp_leader) mbar_arrive(&empty[previous]);   // k_tiles >= 1: previous is a stage
            store_tile(d, C, M, N, tile_m * kBlockM + math_wg * 64, tile_n * kBlockN);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Host side.

cudaError_t launch(int variant, const void* A, const void* B, void* C, int M, int N, int K, cudaStream_t stream) {
    const long long tiles = static_cast<long long>(ceil_div(M, kBlockM)) * ceil_div(N, kBlockN);
    CUtensorMap map_a, map_b;
    cudaError_t err = make_map_2d_fp16(&map_a, A, M, K, kBlockM, kBlockK);
    if (err == cudaSuccess) err = make_map_2d_fp16(&map_b, B, N, K, kBlockN, kBlockK);
    if (err != cudaSuccess) return err;
    if (variant == 0) {
        err = cudaFuncSetAttribute(one_issuer_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kIssuerSmemBytes);
        if (err != cudaSuccess) return err;
        one_issuer_kernel<<<static_cast<unsigned>(tiles), kIssuerThreads, kIssuerSmemBytes, stream>>>(
            map_a, map_b, static_cast<__half*>(C), M, N, K);
        return cudaGetLastError();
    }
    int device = 0, sms = 0;
    err = cudaGetDevice(&device);
    if (err == cudaSuccess) err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    if (err == cudaSuccess)
        err = cudaFuncSetAttribute(warp_specialized_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kRingSmemBytes);
    if (err != cudaSuccess) return err;
    const unsigned blocks = static_cast<unsigned>(tiles < sms ? tiles : sms);   // one resident block per SM
    warp_specialized_kernel<<<blocks, kSpecializedThreads, kRingSmemBytes, stream>>>(
        map_a, map_b, static_cast<__half*>(C), M, N, K);
    return cudaGetLastError();
}

}  // namespace

// variant: 0 one_issuer, 1 warp_specialized. A is M x K, B is N x K (so C = A @ B^T), C is M x N,
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
