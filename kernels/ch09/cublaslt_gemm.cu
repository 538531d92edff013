// fp16 GEMM on the tensor cores, hand-written with mma.sync: C[M, N] = A[M, K] @ B[K, N],
// fp16 in, fp32 accumulate, fp16 out, all row-major. The baseline that cuBLASLt's Hopper kernels
// (wgmma + TMA, HGMMA/QGMMA in SASS) are measured against in ch09.cublaslt_gemm.
//
// hgemm_mma_sync: a straightforward Ampere-style kernel, deliberately not tuned further:
//   - 128 x 128 output tile per block, 256 threads = 8 warps as 2 (m) x 4 (n), each warp a
//     64 x 32 tile = 4 x 4 mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 (64 fp32
//     accumulators per thread);
//   - BK = 32: A's [128][32] and B's [32][128] slices staged by cp.async (16-byte LDGSTS, L2
//     only) into a two-stage ring (double buffering: slice k + 1 streams in while slice k is
//     multiplied), rows padded by 8 halves (A 80-byte rows, B 272-byte rows) so the 8 row
//     addresses of each ldmatrix phase fall in distinct banks;
//   - fragments by ldmatrix.x4 (A) and ldmatrix.x4.trans (B, stored [k][n]: .trans hands each
//     thread the k-pairs mma's "col" B operand wants);
//   - epilogue: fp32 accumulators rounded to fp16, stored as half2 straight from the fragments.
// On Hopper mma.sync (HMMA in SASS) runs at most 2/3 of wgmma's dense rate, and this kernel has
// no TMA, no warp specialization and one barrier pair per 32 k: the point of comparison.
//
// Edges: M is free; N and K must be multiples of 8 (16-byte rows and copies), A, B, C 16-byte
// aligned. Rows of A past M, columns of B past N and k past K are zero-filled through cp.async's
// src-size (their addresses clamped to a valid one), and outputs past M or N are never stored.
// The host entry point returns cudaErrorInvalidValue on bad arguments, before any CUDA call.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kBM = 128, kBN = 128, kBK = 32;
constexpr int kWarpsM = 2, kWarpsN = 4, kThreads = 32 * kWarpsM * kWarpsN;
constexpr int kWM = kBM / kWarpsM, kWN = kBN / kWarpsN;        // 64 x 32 per warp
constexpr int kMTiles = kWM / 16, kNTiles = kWN / 8;           // 4 x 4 mma tiles per warp
constexpr int kPad = 8;                                        // halves (16 bytes) per row
constexpr int kAStride = kBK + kPad;                           // 40 halves = 80 bytes
constexpr int kBStride = kBN + kPad;                           // 136 halves = 272 bytes
constexpr int kStages = 2;
static_assert(kNTiles % 2 == 0, "B fragments come two n8 tiles per ldmatrix.x4");

struct __align__(16) Smem {
    __half a[kStages][kBM][kAStride];
    __half b[kStages][kBK][kBStride];
};

__device__ __forceinline__ unsigned smem_addr(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async_16(void* smem_dst, const void* gmem_src, bool valid) {
    // src-size 0: read nothing, fill the 16 bytes with zeros (edges).
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(smem_dst)),
                 "l"(gmem_src), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const __half* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], const __half* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(p)));
}

__device__ __forceinline__ void mma_16816(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Stage slice [k0, k0 + kBK) of A (rows bm0..) and B (columns bn0..) into stage `s`.
__device__ __forceinline__ void load_slice(Smem& sm, int s, const __half* __restrict__ A,
                                           const __half* __restrict__ B, int M, int N, int K,
                                           int bm0, int bn0, int k0, int tid) {
    // A: 128 rows x 4 chunks of 8 halves = 512 copies, 2 per thread.
#pragma unroll
    for (int it = 0; it < (kBM * kBK / 8) / kThreads; ++it) {
        const int c = tid + it * kThreads;
        const int row = c / (kBK / 8), kc = (c % (kBK / 8)) * 8;
        const int gr = bm0 + row, gk = k0 + kc;
        const bool valid = gr < M && gk < K;
        const __half* src = valid ? A + static_cast<size_t>(gr) * K + gk : A;
        cp_async_16(&sm.a[s][row][kc], src, valid);
    }
    // B: 32 k rows x 16 chunks of 8 halves = 512 copies, 2 per thread.
#pragma unroll
    for (int it = 0; it < (kBK * kBN / 8) / kThreads; ++it) {
        const int c = tid + it * kThreads;
        const int kr = c / (kBN / 8), nc = (c % (kBN / 8)) * 8;
        const int gk = k0 + kr, gn = bn0 + nc;
        const bool valid = gk < K && gn < N;
        const __half* src = valid ? B + static_cast<size_t>(gk) * N + gn : B;
        cp_async_16(&sm.b[s][kr][nc], src, valid);
    }
}

__global__ void __launch_bounds__(kThreads)
hgemm_mma_sync(const __half* __restrict__ A, const __half* __restrict__ B, __half* __restrict__ C,
               int M, int N, int K) {
    __shared__ Smem sm;
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int bm0 = blockIdx.y * kBM, bn0 = blockIdx.x * kBN;
    const int wm0 = (warp / kWarpsN) * kWM, wn0 = (warp % kWarpsN) * kWN;

    float acc[kMTiles][kNTiles][4];
#pragma unroll
    for (int i = 0; i < kMTiles; ++i)
#pragma unroll
        for (int j = 0; j < kNTiles; ++j)
#pragma unroll
            for (int q = 0; q < 4; ++q) acc[i][j][q] = 0.0f;

    // ldmatrix.x4 lane addressing: lanes 0-15 give rows 0-15 of the first 8 columns, lanes
    // 16-31 rows 0-15 of the next 8 (A: m rows / k columns; B, transposed: k rows / n columns).
    const int ld_row = lane % 16, ld_col = (lane / 16) * 8;

    const int slices = (K + kBK - 1) / kBK;
    load_slice(sm, 0, A, B, M, N, K, bm0, bn0, 0, tid);
    cp_async_commit();
    for (int t = 0; t < slices; ++t) {
        const int s = t % kStages;
        if (t + 1 < slices) load_slice(sm, (t + 1) % kStages, A, B, M, N, K, bm0, bn0, (t + 1) * kBK, tid);
        cp_async_commit();                     // possibly empty: keeps the group count uniform
        cp_async_wait<1>();                    // slice t has landed (slice t + 1 may be in flight)
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < kBK; kk += 16) {
            unsigned af[kMTiles][4], bf[kNTiles / 2][4];
#pragma unroll
            for (int i = 0; i < kMTiles; ++i) ldmatrix_x4(af[i], &sm.a[s][wm0 + 16 * i + ld_row][kk + ld_col]);
#pragma unroll
            for (int j = 0; j < kNTiles / 2; ++j)
                ldmatrix_x4_trans(bf[j], &sm.b[s][kk + ld_row][wn0 + 16 * j + ld_col]);
#pragma unroll
            for (int i = 0; i < kMTiles; ++i)
#pragma unroll
                for (int j = 0; j < kNTiles; ++j)
                    mma_16816(acc[i][j], af[i], bf[j / 2][(j % 2) * 2], bf[j / 2][(j % 2) * 2 + 1]);
        }
        __syncthreads();                       // stage s is overwritten by slice t + 2's copies
    }

    // Accumulator layout of m16n8: c0, c1 at (row g, cols 2t, 2t + 1), c2, c3 at row g + 8.
    const int g = lane / 4, tq = lane % 4;
#pragma unroll
    for (int i = 0; i < kMTiles; ++i)
#pragma unroll
        for (int j = 0; j < kNTiles; ++j) {
            const int col = bn0 + wn0 + 8 * j + 2 * tq;      // even; N % 8 == 0 keeps col + 1 < N
            if (col >= N) continue;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int row = bm0 + wm0 + 16 * i + g + 8 * h;
                if (row < M)
                    *reinterpret_cast<__half2*>(C + static_cast<size_t>(row) * N + col) =
                        __floats2half2_rn(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
            }
        }
}

}  // namespace

extern "C" int aisp_hgemm_mma_sync(const void* A, const void* B, void* C, int M, int N, int K,
                                   cudaStream_t stream) {
    if (!A || !B || !C || M < 0 || N < 0 || K < 1) return cudaErrorInvalidValue;
    const bool aligned = ((reinterpret_cast<std::uintptr_t>(A) | reinterpret_cast<std::uintptr_t>(B) |
                           reinterpret_cast<std::uintptr_t>(C)) % 16) == 0;
    if (N % 8 != 0 || K % 8 != 0 || !aligned) return cudaErrorInvalidValue;
    if (M == 0 || N == 0) return cudaSuccess;
    if ((M + kBM - 1) / kBM > 65535) return cudaErrorInvalidValue;       // grid.y limit
    const dim3 grid((N + kBN - 1) / kBN, (M + kBM - 1) / kBM);
    hgemm_mma_sync<<<grid, kThreads, 0, stream>>>(static_cast<const __half*>(A), static_cast<const __half*>(B),
                                                  static_cast<__half*>(C), M, N, K);
    return static_cast<int>(cudaGetLastError());
}

extern "C" const char* aisp_cuda_error_string(int code) {
    return cudaGetErrorString(static_cast<cudaError_t>(code));
}
