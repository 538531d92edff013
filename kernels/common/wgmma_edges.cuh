// Edge tiles for the hand-written sm_90a TMA + wgmma GEMMs of chapter 10 (matmul_wgmma_vs_cublas,
// matmul_wgmma_pipelined, matmul_wgmma_epilogue): any M and N, and K a multiple of 8.
//
// TMA does most of it: the parts of a load box outside the tensor arrive as zeros (the maps use
// CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) and still count their full bytes against the mbarrier, so a
// k-tile past K multiplies zeros into the sum, and rows past M or N produce accumulators that are
// never stored. What is left: the grid and the k loop count tiles rounded up (`tiles_of`), and a
// tile that reaches past M or N (or whose rows are not 4-byte aligned for half2 stores: N odd)
// stores its accumulators element by element, each one guarded (`store_tile_guarded`). A whole
// tile keeps the pair's own unguarded half2 stores: at sizes on the tile grid no block takes the
// guarded path, and the main loop is the same code. The real limit is TMA's: a row pitch that is
// a multiple of 16 bytes, so K % 8 == 0 for fp16 A and B (C is not read by TMA).
#pragma once

#include <cuda_fp16.h>

#include <cstddef>

namespace wgmma_edges __attribute__((visibility("hidden"))) {

// Tiles of `tile` elements covering n, the last one partial.
__host__ __device__ __forceinline__ int tiles_of(int n, int tile) {
    return static_cast<int>((static_cast<long long>(n) + tile - 1) / tile);
}

// Whether the rows x cols tile at (row0, col0) lies inside M x N with half2-aligned rows.
__device__ __forceinline__ bool whole_tile(int M, int N, int row0, int col0, int rows, int cols) {
    return row0 + rows <= M && col0 + cols <= N && N % 2 == 0;
}

// One warpgroup's 64 x kCols fp32 accumulators to C (fp16, row-major, M x N), element by element,
// only those inside M x N; `op(v, col)` gives the value stored for accumulator v in column col.
// wgmma's accumulator layout: warp w holds rows 16 w .. 16 w + 15; for column block j (8 wide)
// lane l holds d[4 j + 0..1] at row l / 4, columns 8 j + 2 (l % 4) + 0..1, d[4 j + 2..3] 8 rows down.
template <int kCols, typename Op>
__device__ __forceinline__ void store_tile_guarded(const float (&d)[kCols / 2], __half* C, int M, int N, int row0,
                                                   int col0, Op op) {
    const int t = threadIdx.x % 128;
    const int warp = t / 32, lane = t % 32;
    const int r = row0 + warp * 16 + lane / 4;
    const int c = col0 + 2 * (lane % 4);
#pragma unroll
    for (int j = 0; j < kCols / 8; ++j) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int row = r + (e / 2) * 8, col = c + 8 * j + (e % 2);
            if (row < M && col < N) C[static_cast<size_t>(row) * N + col] = __float2half_rn(op(d[4 * j + e], col));
        }
    }
}

}  // namespace wgmma_edges
