// Hopper's version of the book's matmul_tcgen05 single-stage GEMM: a hand-written fp16 GEMM whose
// tiles arrive by TMA (cp.async.bulk.tensor) and are multiplied by wgmma (warpgroup MMA reading
// both operands from shared memory), with load and math strictly in series. The pair holds it
// against cuBLAS (torch.mm) for the same C = A @ B^T.
//
//   C[M, N] = A[M, K] @ B[N, K]^T      A, B, C fp16 row-major (A and B "K-major"), fp32 accumulate
//
// One 128 x 256 tile of C per block (the book's UMMA tile), BK = 64 (one 128-byte row of fp16 per
// tile row: exactly one 128-byte TMA swizzle span). Two warpgroups each own 64 rows x 256 columns,
// i.e. 128 fp32 accumulators per thread, and issue 4 wgmma m64n256k16 per k-tile. Per k-tile:
// thread 0 arms the mbarrier with the tile's byte count (expect_tx) and issues the TMA loads of
// A's 128 x 64 and B's 256 x 64 box; everyone waits on the mbarrier; the warpgroups fence, issue
// their 4 wgmmas, commit and wait for all of them (wait_group 0); __syncthreads; only then is the
// next load issued. The tensor cores idle during every load and the TMA unit during every
// multiply, and at 256 threads x ~150 registers only one block fits per SM, so no other block hides
// it either.
//
// The epilogue converts the fp32 accumulators to fp16 in registers and stores them (the book's
// kernel writes an fp32 buffer and converts it with a separate .to(float16) kernel; this one does
// not need that pass).
//
// This is the same TMA + wgmma + mbarrier code that kernels/ch09/tma_wgmma_pipeline.cu proves on
// H100 (its `serial` kernel), in fp16 and with full tiles only; the PTX wrappers, the tensor-map
// encoding and the sm_90a probe come from kernels/common/wgmma_tma.cuh, shared with the other
// chapter-10 wgmma pairs (the build cache key and this pair's source digest cover that header).
//
// Shared-memory layout: A's 128 x 64 and B's 256 x 64 box as TMA wrote them with
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
constexpr int kSmemBytes = kStageBytes + 1024;               // + room to align to 1024 bytes
constexpr int kGroupM = 8;                                   // tile rasterization: 8 row-tiles per group
constexpr int kVariants = 1;                                 // 0: single_stage

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
// Host side.

// A rows x cols fp16 row-major matrix, read in box_rows x 64 boxes with 128-byte swizzle.
cudaError_t make_map(CUtensorMap* map, const void* base, int rows, int cols, int box_rows) {
    return make_map_2d_fp16(map, base, rows, cols, box_rows, kBlockK);
}

cudaError_t launch_single_stage(const void* A, const void* B, void* C, int M, int N, int K, cudaStream_t stream) {
    CUtensorMap map_a, map_b;
    cudaError_t err = make_map(&map_a, A, M, K, kBlockM);
    if (err == cudaSuccess) err = make_map(&map_b, B, N, K, kBlockN);
    if (err == cudaSuccess)
        err = cudaFuncSetAttribute(single_stage_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
    if (err != cudaSuccess) return err;
    const long long tiles = static_cast<long long>(tiles_of(M, kBlockM)) * tiles_of(N, kBlockN);
    single_stage_kernel<<<static_cast<unsigned>(tiles), kThreads, kSmemBytes, stream>>>(
        map_a, map_b, static_cast<__half*>(C), M, N, K);
    return cudaGetLastError();
}

}  // namespace

// variant: 0 single_stage. A is M x K, B is N x K (so C = A @ B^T), C is M x N, all fp16
// row-major and 16-byte aligned; M, N >= 1, K a positive multiple of 8, and the
// tile count fits an int. Returns a cudaError_t as int (aisp_matmul_wgmma_vs_cublas_error_string).
extern "C" int aisp_matmul_wgmma_vs_cublas(int variant, const void* A, const void* B, void* C, int M, int N, int K,
                                          cudaStream_t stream) {
    if (variant < 0 || variant >= kVariants || A == nullptr || B == nullptr || C == nullptr || M < 1 || N < 1 ||
        K < kKAlign || K % kKAlign ||
        static_cast<long long>(tiles_of(M, kBlockM)) * tiles_of(N, kBlockN) > 0x7fffffffLL)
        return cudaErrorInvalidValue;
    if ((reinterpret_cast<uintptr_t>(A) | reinterpret_cast<uintptr_t>(B) | reinterpret_cast<uintptr_t>(C)) % 16)
        return cudaErrorMisalignedAddress;
    return static_cast<int>(launch_single_stage(A, B, C, M, N, K, stream));
}

// cudaSuccess if this device is compute capability 9.0 (the sm_90a code runs nowhere else) and
// the driver exports cuTensorMapEncodeTiled; cudaErrorNotSupported if not; or the error that
// stopped the question.
extern "C" int aisp_matmul_wgmma_vs_cublas_support() {
    return static_cast<int>(sm90a_tma_support());
}

extern "C" const char* aisp_matmul_wgmma_vs_cublas_error_string(int code) {
    return cudaGetErrorString(static_cast<cudaError_t>(code));
}
