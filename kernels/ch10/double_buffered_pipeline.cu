// FP32 GEMM C = A @ B (row-major, M x K times K x N), three kernels that separate the three
// changes the book's double_buffered_pipeline pair makes at once:
//   0 naive            the book's baseline: one thread per element of C, 32 x 32 threads, no
//                      shared memory; every FMA loads one A and one B value from L1/L2.
//   1 tiled            shared-memory tiling + register blocking, SYNCHRONOUS loads: a 64 x 64
//                      tile of C per block, 16 x 16 threads with a 4 x 4 micro-tile each, K in
//                      chunks of 32; load the chunk (ld.global -> st.shared), __syncthreads,
//                      compute, __syncthreads.
//   2 double_buffered  the book's optimized: the same tiling, but a 2-stage cuda::pipeline with
//                      warp-collective cuda::memcpy_async(aligned_size_t<16>) (cp.async) fills
//                      one shared buffer while the other is computed.
// Any M, N, K >= 1 (M up to 65535 x 32: the naive kernel's grid height). On the 64-grid (M, N, K
// multiples of 64: every tile whole, every row segment 16-byte aligned) the kernels above run as
// they always did. Off it, the naive kernel's grid is rounded up (it already guards its threads)
// and the other two run as edge twins of the same tiling and the same multiply_chunk: a chunk's
// elements past M, N or K are zeros in shared memory, loaded element by element (tiled_edge:
// synchronously; double_buffered_edge: 4-byte cp.async with zero fill, two stages in flight as
// commit groups), and only the outputs inside M x N are stored.
#include <cooperative_groups.h>
#include <cuda/pipeline>
#include <cuda_runtime.h>

#include <cstdint>

namespace cg = cooperative_groups;

namespace {

constexpr int kNaive = 32;                        // naive block: 32 x 32 threads
constexpr int kTileM = 64, kTileN = 64;           // C tile per block
constexpr int kChunkK = 32;                       // K depth of one staged chunk
constexpr int kMicro = 4;                         // 4 x 4 outputs per thread
constexpr int kThreadsX = kTileN / kMicro;        // 16
constexpr int kThreadsY = kTileM / kMicro;        // 16
constexpr int kThreads = kThreadsX * kThreadsY;   // 256
constexpr int kStages = 2;

using PipeState = cuda::pipeline_shared_state<cuda::thread_scope_block, kStages>;

// 0: naive. Each thread reads a row of A and a column of B (K loads each) from global memory.
__global__ void __launch_bounds__(kNaive * kNaive)
naive_kernel(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K) {
    const int row = blockIdx.y * kNaive + threadIdx.y;
    const int col = blockIdx.x * kNaive + threadIdx.x;
    if (row >= M || col >= N) return;
    const float* a = A + static_cast<long long>(row) * K;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc = fmaf(a[k], B[static_cast<long long>(k) * N + col], acc);
    C[static_cast<long long>(row) * N + col] = acc;
}

// A chunk in shared memory: As[m][k] (64 x 32) and Bs[k][n] (32 x 64), the book's layout.
struct Chunk {
    float a[kTileM * kChunkK];
    float b[kChunkK * kTileN];
};

// The inner product of one staged chunk, shared by the tiled and double-buffered kernels so
// that only the staging differs. Thread (tx, ty) owns rows ty*4.. and columns tx*4.. of the tile.
__device__ __forceinline__ void multiply_chunk(const Chunk& s, float (&acc)[kMicro][kMicro], int tx, int ty) {
#pragma unroll 8
    for (int kk = 0; kk < kChunkK; ++kk) {
        float a[kMicro], b[kMicro];
#pragma unroll
        for (int i = 0; i < kMicro; ++i) a[i] = s.a[(ty * kMicro + i) * kChunkK + kk];
        const float4 b4 = *reinterpret_cast<const float4*>(&s.b[kk * kTileN + tx * kMicro]);
        b[0] = b4.x; b[1] = b4.y; b[2] = b4.z; b[3] = b4.w;
#pragma unroll
        for (int i = 0; i < kMicro; ++i)
#pragma unroll
            for (int j = 0; j < kMicro; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
}

__device__ __forceinline__ void store_tile(float* __restrict__ C, const float (&acc)[kMicro][kMicro], int N,
                                           int row0, int col0) {
#pragma unroll
    for (int i = 0; i < kMicro; ++i) {
        float4* dst = reinterpret_cast<float4*>(C + static_cast<long long>(row0 + i) * N + col0);
        *dst = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
    }
}

// 1: tiled, synchronous. 256 threads move each 8 KiB half of a chunk as 512 float4: 2 per thread.
__global__ void __launch_bounds__(kThreads)
tiled_kernel(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int N, int K) {
    __shared__ __align__(16) Chunk s;
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * kThreadsX + tx;
    const int row0 = blockIdx.y * kTileM, col0 = blockIdx.x * kTileN;
    float acc[kMicro][kMicro] = {};
    for (int k0 = 0; k0 < K; k0 += kChunkK) {
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            const int q = tid + r * kThreads;                 // float4 index in the chunk half
            const int am = q / (kChunkK / 4), ak = (q % (kChunkK / 4)) * 4;
            const int bk = q / (kTileN / 4), bn = (q % (kTileN / 4)) * 4;
            const float4 av = *reinterpret_cast<const float4*>(A + static_cast<long long>(row0 + am) * K + k0 + ak);
            const float4 bv = *reinterpret_cast<const float4*>(B + static_cast<long long>(k0 + bk) * N + col0 + bn);
            *reinterpret_cast<float4*>(&s.a[am * kChunkK + ak]) = av;
            *reinterpret_cast<float4*>(&s.b[bk * kTileN + bn]) = bv;
        }
        __syncthreads();                                      // the chunk is in shared memory
        multiply_chunk(s, acc, tx, ty);
        __syncthreads();                                      // everyone is done before it is overwritten
    }
    store_tile(C, acc, N, row0 + ty * kMicro, col0 + tx * kMicro);
}

// One chunk's copies, issued warp by warp (the book's warp-collective memcpy_async): warp w
// copies rows w, w+8, ... of the A half (128 bytes each) and of the B half (256 bytes each).
__device__ __forceinline__ void stage_chunk(cuda::pipeline<cuda::thread_scope_block>& pipe, Chunk& s,
                                            const float* __restrict__ A, const float* __restrict__ B,
                                            int N, int K, int row0, int col0, int k0) {
    const auto warp = cg::tiled_partition<32>(cg::this_thread_block());
    const int w = warp.meta_group_rank(), warps = warp.meta_group_size();
    pipe.producer_acquire();
    for (int r = w; r < kTileM; r += warps)
        cuda::memcpy_async(warp, &s.a[r * kChunkK], A + static_cast<long long>(row0 + r) * K + k0,
                           cuda::aligned_size_t<16>(kChunkK * sizeof(float)), pipe);
    for (int r = w; r < kChunkK; r += warps)
        cuda::memcpy_async(warp, &s.b[r * kTileN], B + static_cast<long long>(k0 + r) * N + col0,
                           cuda::aligned_size_t<16>(kTileN * sizeof(float)), pipe);
    pipe.producer_commit();
}

// 2: double buffered. Chunk c+1 is in flight while c is computed; c+2 refills c's buffer after it.
__global__ void __launch_bounds__(kThreads)
double_buffered_kernel(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int N, int K) {
    __shared__ __align__(16) Chunk s[kStages];
    __shared__ alignas(alignof(PipeState)) unsigned char state[sizeof(PipeState)];
    auto pipe = cuda::make_pipeline(cg::this_thread_block(), reinterpret_cast<PipeState*>(state));
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row0 = blockIdx.y * kTileM, col0 = blockIdx.x * kTileN;
    const int chunks = K / kChunkK;
    int next = 0;
    for (; next < kStages && next < chunks; ++next) stage_chunk(pipe, s[next], A, B, N, K, row0, col0, next * kChunkK);
    float acc[kMicro][kMicro] = {};
    for (int c = 0; c < chunks; ++c) {
        const int stage = c % kStages;
        pipe.consumer_wait();                 // chunk c landed (every thread's copies: block scope)
        multiply_chunk(s[stage], acc, tx, ty);
        pipe.consumer_release();              // producer_acquire below waits for every thread's release
        if (next < chunks) {
            stage_chunk(pipe, s[stage], A, B, N, K, row0, col0, next * kChunkK);
            ++next;
        }
    }
    store_tile(C, acc, N, row0 + ty * kMicro, col0 + tx * kMicro);
}

// ---------------------------------------------------------------------------------------------
// Edge twins: any M, N, K. A chunk's elements outside the matrices are zeros, so multiply_chunk
// adds exact zeros for them and the sums over k are the same as the whole-tile kernels'.

// Element q of a chunk's A half (64 x 32) and of its B half (32 x 64): consecutive q, consecutive
// addresses (coalesced). in_a / in_b: inside the matrices.
struct ChunkElement {
    int a_smem, b_smem;
    long long a_global, b_global;
    bool in_a, in_b;
};

__device__ __forceinline__ ChunkElement chunk_element(int q, int M, int N, int K, int row0, int col0, int k0) {
    const int am = q / kChunkK, ak = q % kChunkK, bk = q / kTileN, bn = q % kTileN;
    const int ar = row0 + am, ac = k0 + ak, br = k0 + bk, bc = col0 + bn;
    return {am * kChunkK + ak, bk * kTileN + bn, static_cast<long long>(ar) * K + ac,
            static_cast<long long>(br) * N + bc, ar < M && ac < K, br < K && bc < N};
}

constexpr int kPerThread = kTileM * kChunkK / kThreads;        // 8 elements of each half per thread

__device__ __forceinline__ void store_tile_guarded(float* __restrict__ C, const float (&acc)[kMicro][kMicro],
                                                   int M, int N, int row0, int col0) {
#pragma unroll
    for (int i = 0; i < kMicro; ++i)
#pragma unroll
        for (int j = 0; j < kMicro; ++j)
            if (row0 + i < M && col0 + j < N) C[static_cast<long long>(row0 + i) * N + col0 + j] = acc[i][j];
}

// 1, off the 64-grid: tiled, synchronous, element by element.
__global__ void __launch_bounds__(kThreads)
tiled_edge_kernel(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N,
                  int K) {
    __shared__ __align__(16) Chunk s;
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * kThreadsX + tx;
    const int row0 = blockIdx.y * kTileM, col0 = blockIdx.x * kTileN;
    float acc[kMicro][kMicro] = {};
    for (int k0 = 0; k0 < K; k0 += kChunkK) {
#pragma unroll
        for (int r = 0; r < kPerThread; ++r) {
            const ChunkElement e = chunk_element(tid + r * kThreads, M, N, K, row0, col0, k0);
            s.a[e.a_smem] = e.in_a ? A[e.a_global] : 0.0f;
            s.b[e.b_smem] = e.in_b ? B[e.b_global] : 0.0f;
        }
        __syncthreads();
        multiply_chunk(s, acc, tx, ty);
        __syncthreads();
    }
    store_tile_guarded(C, acc, M, N, row0 + ty * kMicro, col0 + tx * kMicro);
}

// cp.async of one float, or of none and a zero (src-size 0 zero-fills the 4 bytes; `src` is then
// a valid address that is not read).
__device__ __forceinline__ void cp_async_4(float* dst, const float* src, bool in) {
    const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(d), "l"(src), "r"(in ? 4 : 0) : "memory");
}

__device__ __forceinline__ void stage_chunk_guarded(Chunk& s, const float* __restrict__ A, const float* __restrict__ B,
                                                    int M, int N, int K, int row0, int col0, int k0, int tid) {
#pragma unroll
    for (int r = 0; r < kPerThread; ++r) {
        const ChunkElement e = chunk_element(tid + r * kThreads, M, N, K, row0, col0, k0);
        cp_async_4(&s.a[e.a_smem], e.in_a ? A + e.a_global : A, e.in_a);
        cp_async_4(&s.b[e.b_smem], e.in_b ? B + e.b_global : B, e.in_b);
    }
}

// 2, off the 64-grid: double buffered with 4-byte cp.async; chunks c+1 (and c+2 once c's buffer
// is free) are in flight while c is multiplied. One commit group per chunk (empty past the end),
// so wait_group 1 always means "chunk c has landed" for this thread; the barrier makes it everyone's.
__global__ void __launch_bounds__(kThreads)
double_buffered_edge_kernel(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M,
                            int N, int K) {
    __shared__ __align__(16) Chunk s[kStages];
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * kThreadsX + tx;
    const int row0 = blockIdx.y * kTileM, col0 = blockIdx.x * kTileN;
    const int chunks = (K + kChunkK - 1) / kChunkK;
    for (int c = 0; c < kStages; ++c) {
        if (c < chunks) stage_chunk_guarded(s[c], A, B, M, N, K, row0, col0, c * kChunkK, tid);
        asm volatile("cp.async.commit_group;" ::: "memory");
    }
    float acc[kMicro][kMicro] = {};
    for (int c = 0; c < chunks; ++c) {
        asm volatile("cp.async.wait_group %0;" ::"n"(kStages - 1) : "memory");
        __syncthreads();                      // chunk c landed, every thread's copies
        multiply_chunk(s[c % kStages], acc, tx, ty);
        __syncthreads();                      // everyone is done with its buffer before it is refilled
        if (c + kStages < chunks)
            stage_chunk_guarded(s[c % kStages], A, B, M, N, K, row0, col0, (c + kStages) * kChunkK, tid);
        asm volatile("cp.async.commit_group;" ::: "memory");
    }
    store_tile_guarded(C, acc, M, N, row0 + ty * kMicro, col0 + tx * kMicro);
}

constexpr int kMaxGridY = 65535;

bool valid(const float* A, const float* B, const float* C, int M, int N, int K) {
    if (A == nullptr || B == nullptr || C == nullptr || M <= 0 || N <= 0 || K <= 0) return false;
    if ((M + kNaive - 1) / kNaive > kMaxGridY) return false;       // the naive kernel's grid height
    return true;
}

// Whole 64 x 64 tiles, whole 32-deep chunks, 16-byte aligned rows: the kernels as they always were.
bool on_grid(const float* A, const float* B, const float* C, int M, int N, int K) {
    return M % kTileM == 0 && N % kTileN == 0 && K % kTileM == 0 &&
           (reinterpret_cast<std::uintptr_t>(A) | reinterpret_cast<std::uintptr_t>(B) |
            reinterpret_cast<std::uintptr_t>(C)) % 16 == 0;
}

}  // namespace

// variant: 0 naive, 1 tiled, 2 double_buffered. M, N, K >= 1 (M <= 65535 x 32); A, B, C
// row-major, C not overlapping A or B. cudaErrorInvalidValue otherwise.
extern "C" int aisp_db_gemm(int variant, const float* A, const float* B, float* C, int M, int N, int K,
                            cudaStream_t stream) {
    if (variant < 0 || variant > 2 || !valid(A, B, C, M, N, K)) return cudaErrorInvalidValue;
    const dim3 tiles((N + kTileN - 1) / kTileN, (M + kTileM - 1) / kTileM), threads(kThreadsX, kThreadsY);
    if (variant == 0) {
        naive_kernel<<<dim3((N + kNaive - 1) / kNaive, (M + kNaive - 1) / kNaive), dim3(kNaive, kNaive), 0, stream>>>(
            A, B, C, M, N, K);
    } else if (!on_grid(A, B, C, M, N, K)) {       // edge twins (see the top of the file)
        if (variant == 1) tiled_edge_kernel<<<tiles, threads, 0, stream>>>(A, B, C, M, N, K);
        else double_buffered_edge_kernel<<<tiles, threads, 0, stream>>>(A, B, C, M, N, K);
    } else if (variant == 1) {
        tiled_kernel<<<dim3(N / kTileN, M / kTileM), dim3(kThreadsX, kThreadsY), 0, stream>>>(A, B, C, N, K);
    } else {
        double_buffered_kernel<<<dim3(N / kTileN, M / kTileM), dim3(kThreadsX, kThreadsY), 0, stream>>>(A, B, C, N,
                                                                                                     K);
    }
    return static_cast<int>(cudaGetLastError());
}

extern "C" const char* aisp_db_gemm_error_string(int code) {
    return cudaGetErrorString(static_cast<cudaError_t>(code));
}
