// fp32 SGEMM, C[M, N] = A[M, K] @ B[K, N], all row-major: one shared-memory tiled kernel and
// one register-blocked ("micro-tiled") kernel, to show what register blocking buys.
//
// Baseline, sgemm_smem_tiled: 32 x 32 tiles in shared memory, 1024 threads, one output per
// thread. Each FFMA needs one A value and one B value from shared memory (ptxas merges the A
// reads into LDS.128: 40 shared loads per 32 FFMA), so the LSU/MIO pipe, not the FMA pipe, is
// the limit (H200: mio_throttle is the top stall, 39% of issue slots used, 8.5 TFLOP/s).
//
// Optimized, sgemm_micro_tiled<Cfg>: a BM x BN tile per block, BK-deep slices of A and B staged
// in shared memory by cp.async (16-byte copies, L2 only, a STAGES-deep ring: slice k + 1 streams
// in while slice k is multiplied, one __syncthreads per slice), and a TM x TN micro-tile of C per
// thread held in registers. Per k a thread loads TM + TN values and does TM * TN FFMAs with
// them: 8 x 16 (the tuned kConfigs[0]) is 6 LDS.128 per 128 FFMA, 8 x 8 is 4 per 64.
// Tuned: 128 x 128 x 32 tiles, 128 threads (4 warps of 32 x 128), 8 x 16 per thread (128
// accumulators, 255 registers, no spills), two stages (68 KB), two blocks per SM: 24.49 ms =
// 44.9 TFLOP/s at 8192^3 on an H200, 87.9% of cuBLAS's SIMT SGEMM (21.53 ms).
//
// Layouts (no shared-memory bank conflicts on the fragment loads):
//   - warp tile (4 * TM) x (8 * TN): lane = 8 * tr + tc, tr in [0, 4), tc in [0, 8);
//   - thread rows   m = warp_m0 + tr + 4 * i     (i < TM; interleaved, see A below);
//   - thread cols   n = warp_n0 + 32 * j + 4 * tc + q   (j < TN / 4, q < 4): a quarter warp
//     (8 lanes, same tr) reads 128 contiguous bytes of a B row per LDS.128;
//   - A is staged as it sits in memory, [m][k] (cp.async cannot transpose); a thread reads 4
//     consecutive k of one row with one LDS.128, so A's "transpose" happens in registers. The
//     8 lanes of a quarter warp read the same A address (broadcast); the 4 quarter warps read 4
//     consecutive rows, which fall in distinct banks when a row is 32 bytes (BK = 8) or is
//     padded to BK + 4 floats (BK >= 16: 144-byte rows for BK = 32, whose 16-byte copies are
//     conflict-free too; BK = 16's 80-byte rows leave a 2-way conflict on one copy slot).
//   - B is staged [k][n] unpadded: 16-byte cp.async chunks, contiguous per warp.
// Edges: M is free (A rows past M are clamped to row M - 1 and their outputs never stored);
// N and K must be multiples of 4 and A, B, C 16-byte aligned (every row and every 16-byte copy
// stays aligned; B columns past N are clamped, k past K is zero-filled through cp.async's
// src-size); the host entry points return cudaErrorInvalidValue otherwise.
#include <cuda_runtime.h>

#include <cstdint>

namespace {

// ------------------------------------------------------------------------------------------
// Baseline: classic shared-memory tiling, one output per thread.
constexpr int kBaseTile = 32;

__global__ void __launch_bounds__(kBaseTile * kBaseTile)
sgemm_smem_tiled(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                 int M, int N, int K) {
    __shared__ float As[kBaseTile][kBaseTile];
    __shared__ float Bs[kBaseTile][kBaseTile];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * kBaseTile + ty;
    const int col = blockIdx.x * kBaseTile + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += kBaseTile) {
        // Coalesced: a warp (fixed ty, 32 tx) reads 128 contiguous bytes of A and of B.
        As[ty][tx] = (row < M && k0 + tx < K) ? A[static_cast<size_t>(row) * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = (k0 + ty < K && col < N) ? B[static_cast<size_t>(k0 + ty) * N + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < kBaseTile; ++k) acc = fmaf(As[ty][k], Bs[k][tx], acc);  // broadcast x row
        __syncthreads();
    }
    if (row < M && col < N) C[static_cast<size_t>(row) * N + col] = acc;
}

// ------------------------------------------------------------------------------------------
// Optimized: register-blocked micro-tiles fed by a cp.async shared-memory pipeline.

__device__ __forceinline__ void cp_async_16(float* smem_dst, const float* gmem_src, bool valid) {
    const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem_dst));
    const int src_bytes = valid ? 16 : 0;    // 0: read nothing, fill the 16 bytes with zeros
    // .cg: cache in L2 only; the tile is reused from shared memory, not from L1.
    // No "memory" clobber: the copy is asynchronous, its ordering comes from wait_group +
    // __syncthreads, and the compiler may then schedule shared loads of other stages around it.
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem_src),
                 "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

__device__ __forceinline__ float lane_of(const float4& v, int q) {   // q is a constant after unrolling
    return q == 0 ? v.x : q == 1 ? v.y : q == 2 ? v.z : v.w;
}

template <int BM_, int BN_, int BK_, int TN_, int STAGES_, int MIN_BLOCKS_, bool EARLY_ = false>
struct MicroConfig {
    static constexpr int BM = BM_, BN = BN_, BK = BK_, TM = 8, TN = TN_, STAGES = STAGES_;
    static constexpr int MIN_BLOCKS = MIN_BLOCKS_;
    // EARLY: wait for slice k + 1 and sync *before* the last k group of slice k, then load
    // slice k + 1's first A fragment while that group's FFMAs run (A fragments double
    // buffered in registers), so no warp idles on shared-load latency after the barrier.
    static constexpr bool EARLY = EARLY_;
    static constexpr int kLanesM = 4, kLanesN = 8;            // lanes of a warp over (m, n)
    static constexpr int WM = kLanesM * TM;                    // warp tile rows (32)
    static constexpr int WN = kLanesN * TN;                    // warp tile cols (64 or 128)
    static constexpr int kWarpsM = BM / WM, kWarpsN = BN / WN;
    static constexpr int kThreads = 32 * kWarpsM * kWarpsN;
    static constexpr int kAStride = BK <= 8 ? BK : BK + 4;     // floats per staged A row (padded)
    static constexpr int kAStage = BM * kAStride;              // floats per stage
    static constexpr int kBStage = BK * BN;
    static constexpr int kStage = kAStage + kBStage;          // A then B, 16-byte multiples
    static constexpr int kSmemBytes = STAGES * kStage * 4;
    static constexpr int kAChunks = BM * BK / 4;               // 16-byte copies per stage
    static constexpr int kBChunks = BK * BN / 4;
    static constexpr int kAPerThread = kAChunks / kThreads;
    static constexpr int kBPerThread = kBChunks / kThreads;
    static constexpr int kGroupM = 8;                          // tile rows per raster group (L2 reuse)
    static_assert(BM % WM == 0 && BN % WN == 0, "block tile must be whole warp tiles");
    static_assert(TN % 4 == 0 && BK % 4 == 0, "fragments are float4s");
    static_assert(kAChunks % kThreads == 0 && kBChunks % kThreads == 0, "copies split evenly");
    static_assert(STAGES >= 2, "at least double buffered");
    static_assert(!EARLY || (STAGES >= 3 && (BK / 4) % 2 == 0),
                  "EARLY overwrites the stage of slice k - 1 while slice k is read: 3+ stages; "
                  "A fragments ping-pong over an even number of k groups");
};

template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::MIN_BLOCKS)
sgemm_micro_tiled(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                  int M, int N, int K) {
    constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, TM = Cfg::TM, TN = Cfg::TN;
    constexpr int STAGES = Cfg::STAGES, kAStride = Cfg::kAStride, kStage = Cfg::kStage;
    constexpr int kACpr = BK / 4;           // 16-byte chunks per A row of a slice
    constexpr int kBCpr = BN / 4;           // 16-byte chunks per B row of a slice
    constexpr int kARowStep = Cfg::kThreads / kACpr;   // rows between a thread's A copies
    constexpr int kBRowStep = Cfg::kThreads / kBCpr;   // k rows between a thread's B copies
    static_assert(Cfg::kThreads % kACpr == 0 && Cfg::kThreads % kBCpr == 0, "copies tile the slice");
    // Stage s holds A's slice [BM][kAStride] then B's [BK][BN], at smem + s * kStage.
    extern __shared__ __align__(16) float smem[];

    // Grouped raster: consecutive blocks walk kGroupM tile rows down before moving right, so
    // the A and B panels that resident blocks share stay in L2.
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    const int per_group = Cfg::kGroupM * tiles_n;
    const int group = blockIdx.x / per_group;
    const int first_m = group * Cfg::kGroupM;
    const int group_rows = min(tiles_m - first_m, Cfg::kGroupM);
    const int in_group = blockIdx.x - group * per_group;
    const int bm0 = (first_m + in_group % group_rows) * BM;
    const int bn0 = (in_group / group_rows) * BN;

    const int tid = threadIdx.x;
    // This thread's cp.async copies: A copy `it` is row a_row + it * kARowStep, k chunk a_kc;
    // B copy `it` is k row b_kr + it * kBRowStep, column b_col. Rows of A past M and columns of
    // B past N are clamped to the last real one: they feed only outputs that are never stored.
    // k past K must add nothing, so those copies read nothing and land as zeros. Few values stay
    // live across the main loop (the 8 x 8 micro-tile leaves little room under 128 registers).
    const int a_row = bm0 + tid / kACpr;
    const int a_kc = (tid % kACpr) * 4;
    const int b_kr = tid / kBCpr;
    const int b_col = min(bn0 + (tid % kBCpr) * 4, N - 4);
    const int a_dst = (tid / kACpr) * kAStride + a_kc;
    const int b_dst = Cfg::kAStage + b_kr * BN + (tid % kBCpr) * 4;

    // Copy the slice starting at k0 into stage `stage` (one commit group per call site).
    auto load_slice = [&](int stage, int k0) {
        float* dst = smem + stage * kStage;
        const int k_rem = K - k0;
#pragma unroll
        for (int it = 0; it < Cfg::kAPerThread; ++it) {
            const int row = min(a_row + it * kARowStep, M - 1);
            const bool ok = a_kc < k_rem;
            cp_async_16(dst + a_dst + it * kARowStep * kAStride,
                        A + (static_cast<size_t>(row) * K + (ok ? k0 + a_kc : 0)), ok);
        }
#pragma unroll
        for (int it = 0; it < Cfg::kBPerThread; ++it) {
            const int kr = b_kr + it * kBRowStep;
            const bool ok = kr < k_rem;
            cp_async_16(dst + b_dst + it * kBRowStep * BN,
                        B + (static_cast<size_t>(ok ? k0 + kr : 0) * N + b_col), ok);
        }
    };

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

    // Where this thread's fragments sit inside a stage.
    const int warp = tid >> 5, lane = tid & 31;
    const int wm = warp / Cfg::kWarpsN, wn = warp % Cfg::kWarpsN;
    const int tr = lane >> 3, tc = lane & 7;
    const int a_frag = (wm * Cfg::WM + tr) * kAStride;               // row i adds 4 * i rows
    const int b_frag = Cfg::kAStage + wn * Cfg::WN + tc * 4;         // chunk j adds 32 columns

    constexpr int kGroups = BK / 4;    // k groups of 4 per slice: one LDS.128 per A row each
    auto load_a = [&](float4 (&a)[TM], const float* as, int kg) {      // rows i, k = 4 kg .. 4 kg + 3
#pragma unroll
        for (int i = 0; i < TM; ++i) a[i] = *reinterpret_cast<const float4*>(as + 4 * i * kAStride + 4 * kg);
    };
    auto load_b = [&](float4 (&b)[TN / 4], const float* bs, int k) {    // row k, TN columns
#pragma unroll
        for (int j = 0; j < TN / 4; ++j) b[j] = *reinterpret_cast<const float4*>(bs + k * BN + 32 * j);
    };
    auto fma_k = [&](const float4 (&a)[TM], const float4 (&b)[TN / 4], int q) {   // TM x TN FFMAs
#pragma unroll
        for (int i = 0; i < TM; ++i) {
            const float av = lane_of(a[i], q);
#pragma unroll
            for (int j = 0; j < TN / 4; ++j) {
                acc[i][4 * j + 0] = fmaf(av, b[j].x, acc[i][4 * j + 0]);
                acc[i][4 * j + 1] = fmaf(av, b[j].y, acc[i][4 * j + 1]);
                acc[i][4 * j + 2] = fmaf(av, b[j].z, acc[i][4 * j + 2]);
                acc[i][4 * j + 3] = fmaf(av, b[j].w, acc[i][4 * j + 3]);
            }
        }
    };

    // Prologue: STAGES - 1 slices in flight, one commit group each. Copies past K are issued
    // anyway (they read nothing and zero-fill a free stage): no branch, and group counting stays
    // uniform, so wait_group<n> always names the same slice.
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        load_slice(s, s * BK);
        cp_async_commit();
    }
    if constexpr (!Cfg::EARLY) {
        for (int k0 = 0; k0 < K; k0 += BK) {
            const int kt = k0 / BK;
            cp_async_wait<STAGES - 2>();   // this thread's copies of slice kt are done...
            __syncthreads();               // ...and everyone's; and everyone finished slice kt - 1,
                                           // whose stage the next copy overwrites
            // A branch, not a zero-filling copy, past the end: this keeps the 8 x 8 configurations
            // within 128 registers (ptxas 13.0 spills a few bytes otherwise).
            if (k0 + (STAGES - 1) * BK < K) load_slice((kt + STAGES - 1) % STAGES, k0 + (STAGES - 1) * BK);
            cp_async_commit();
            const float* as = smem + (kt % STAGES) * kStage + a_frag;
            const float* bs = smem + (kt % STAGES) * kStage + b_frag;
#pragma unroll
            for (int kg = 0; kg < kGroups; ++kg) {
                float4 a[TM];
                load_a(a, as, kg);
#pragma unroll
                for (int q = 0; q < 4; ++q) {
                    float4 b[TN / 4];
                    load_b(b, bs, 4 * kg + q);
                    fma_k(a, b, q);
                }
            }
        }
    } else {
        // Slice kt lives in stage kt % STAGES. The copy of slice kt + STAGES - 1 is issued in
        // iteration kt after the barrier that precedes the last k group; it overwrites the stage
        // of slice kt - 1, which every thread finished before reaching that barrier. Reads of
        // slice kt's stage after the barrier are safe: it is next overwritten in iteration
        // kt + 1, after a barrier this thread reaches only once its reads are done.
        cp_async_wait<STAGES - 2>();       // slice 0 landed
        __syncthreads();
        float4 a[2][TM];                   // ping-pong: group kg uses a[kg & 1]
        load_a(a[0], smem + a_frag, 0);
        for (int k0 = 0; k0 < K; k0 += BK) {
            const int kt = k0 / BK;
            const float* as = smem + (kt % STAGES) * kStage + a_frag;
            const float* bs = smem + (kt % STAGES) * kStage + b_frag;
#pragma unroll
            for (int kg = 0; kg < kGroups - 1; ++kg) {
                load_a(a[(kg + 1) & 1], as, kg + 1);
#pragma unroll
                for (int q = 0; q < 4; ++q) {
                    float4 b[TN / 4];
                    load_b(b, bs, 4 * kg + q);
                    fma_k(a[kg & 1], b, q);
                }
            }
            constexpr int kLast = kGroups - 1;             // odd: its fragments are a[1]
            float4 b0[TN / 4];
            load_b(b0, bs, 4 * kLast);                     // before the barrier: stage kt stays valid
            cp_async_wait<STAGES - 3>();   // slices <= kt + 1 have landed for this thread...
            __syncthreads();               // ...for every thread; all are done with slice kt - 1
            load_slice((kt + STAGES - 1) % STAGES, k0 + (STAGES - 1) * BK);
            cp_async_commit();
            load_a(a[0], smem + ((kt + 1) % STAGES) * kStage + a_frag, 0);   // next slice, group 0
            fma_k(a[1], b0, 0);
#pragma unroll
            for (int q = 1; q < 4; ++q) {
                float4 b[TN / 4];
                load_b(b, bs, 4 * kLast + q);
                fma_k(a[1], b, q);
            }
        }
    }
    cp_async_wait<0>();                // nothing real is pending; leave no copy behind

    // Epilogue: 16-byte stores; per (i, j) a warp writes 4 rows x 128 contiguous bytes.
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = bm0 + wm * Cfg::WM + tr + 4 * i;
        if (row >= M) continue;
        float* c_row = C + static_cast<size_t>(row) * N;
#pragma unroll
        for (int j = 0; j < TN / 4; ++j) {
            const int col = bn0 + wn * Cfg::WN + 32 * j + 4 * tc;
            if (col < N)
                *reinterpret_cast<float4*>(c_row + col) =
                    make_float4(acc[i][4 * j], acc[i][4 * j + 1], acc[i][4 * j + 2], acc[i][4 * j + 3]);
        }
    }
}

template <class Cfg>
cudaError_t launch_micro(const float* A, const float* B, float* C, int M, int N, int K,
                         cudaStream_t stream) {
    if (Cfg::kSmemBytes > 48 * 1024) {
        const cudaError_t err = cudaFuncSetAttribute(sgemm_micro_tiled<Cfg>,
                                                     cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                     Cfg::kSmemBytes);
        if (err != cudaSuccess) return err;
    }
    const long long tiles = static_cast<long long>((M + Cfg::BM - 1) / Cfg::BM) * ((N + Cfg::BN - 1) / Cfg::BN);
    if (tiles > 0x7fffffffLL) return cudaErrorInvalidValue;
    sgemm_micro_tiled<Cfg><<<static_cast<unsigned>(tiles), Cfg::kThreads, Cfg::kSmemBytes, stream>>>(
        A, B, C, M, N, K);
    return cudaGetLastError();
}

// The tuned configuration (what `optimized` runs) is kConfigs[0]; the others are kept for the
// tuning sweep in scripts/micro_tiling_gpu.sh (aisp_sgemm_micro_tiled_config). Registers are
// ptxas's for sm_90 (nvcc 13.0), all without spills; times are medians at 8192^3 on an H200
// (2026-11-26, L2 flushed, cuBLAS fp32 SIMT 21.53 ms in the same process).
//                       BM   BN  BK  TN stages minBlocks early  threads regs smem x blocks/SM  H200 ms
using C128x128x32t = MicroConfig<128, 128, 32, 16, 2, 2>;         // 128   255   68 KB x 2   24.49
using C128x256x32 = MicroConfig<128, 256, 32, 16, 2, 1>;          // 256   255  100 KB x 1   24.62
using C128x256x16 = MicroConfig<128, 256, 16, 16, 2, 1>;          // 256   255   52 KB x 1   25.76
using C128x128x16t = MicroConfig<128, 128, 16, 16, 3, 2>;         // 128   255   54 KB x 2   25.74
using C256x128x16 = MicroConfig<256, 128, 16, 16, 2, 1>;          // 256   255   56 KB x 1   26.18
using C128x256x32e = MicroConfig<128, 256, 32, 16, 3, 1, true>;   // 256   255  150 KB x 1   26.42
using C128x256x16e = MicroConfig<128, 256, 16, 16, 3, 1, true>;   // 256   255   78 KB x 1   27.24
using C128x128x8 = MicroConfig<128, 128, 8, 8, 2, 2>;             // 256   128   16 KB x 2   28.05
// Read: a deeper slice (BK 16 -> 32) halves the barriers and the post-barrier bursts of shared
// loads (-1.1 ms at 128 x 256); 8 x 16 micro-tiles beat 8 x 8 (fewer LDS per FFMA) even at 255 registers and
// 8 warps per SM; "early" (barrier before the last k group, A fragments double buffered in
// registers) was slower here, and a third stage bought nothing once loads were hidden.

using Launcher = cudaError_t (*)(const float*, const float*, float*, int, int, int, cudaStream_t);
struct Entry {
    const char* name;
    Launcher launch;
};
constexpr Entry kConfigs[] = {
    {"128x128x32 t8x16 128thr 2st", launch_micro<C128x128x32t>},
    {"128x256x32 t8x16 256thr 2st", launch_micro<C128x256x32>},
    {"128x256x16 t8x16 256thr 2st", launch_micro<C128x256x16>},
    {"128x128x16 t8x16 128thr 3st", launch_micro<C128x128x16t>},
    {"256x128x16 t8x16 256thr 2st", launch_micro<C256x128x16>},
    {"128x256x32 t8x16 256thr 3st early", launch_micro<C128x256x32e>},
    {"128x256x16 t8x16 256thr 3st early", launch_micro<C128x256x16e>},
    {"128x128x8 t8x8 256thr 2st", launch_micro<C128x128x8>},
};
constexpr int kNumConfigs = sizeof(kConfigs) / sizeof(kConfigs[0]);

int validate(const float* A, const float* B, const float* C, int M, int N, int K) {
    if (A == nullptr || B == nullptr || C == nullptr || M < 0 || N < 0 || K < 0) return cudaErrorInvalidValue;
    return cudaSuccess;
}

}  // namespace

// All entry points return a cudaError_t as int (aisp_cuda_error_string() names it).

extern "C" int aisp_sgemm_smem_tiled(const float* A, const float* B, float* C, int M, int N, int K,
                                     cudaStream_t stream) {
    if (const int err = validate(A, B, C, M, N, K)) return err;
    if (M == 0 || N == 0) return cudaSuccess;
    if ((M + kBaseTile - 1) / kBaseTile > 65535) return cudaErrorInvalidValue;   // grid.y limit
    const dim3 block(kBaseTile, kBaseTile);
    const dim3 grid((N + kBaseTile - 1) / kBaseTile, (M + kBaseTile - 1) / kBaseTile);
    sgemm_smem_tiled<<<grid, block, 0, stream>>>(A, B, C, M, N, K);
    return static_cast<int>(cudaGetLastError());
}

extern "C" int aisp_sgemm_micro_tiled_config(int config, const float* A, const float* B, float* C,
                                             int M, int N, int K, cudaStream_t stream) {
    if (config < 0 || config >= kNumConfigs) return cudaErrorInvalidValue;
    if (const int err = validate(A, B, C, M, N, K)) return err;
    const bool aligned = ((reinterpret_cast<std::uintptr_t>(A) | reinterpret_cast<std::uintptr_t>(B) |
                           reinterpret_cast<std::uintptr_t>(C)) % 16) == 0;
    if (N % 4 != 0 || K % 4 != 0 || !aligned) return cudaErrorInvalidValue;
    if (M == 0 || N == 0) return cudaSuccess;
    return static_cast<int>(kConfigs[config].launch(A, B, C, M, N, K, stream));
}

extern "C" int aisp_sgemm_micro_tiled(const float* A, const float* B, float* C, int M, int N, int K,
                                      cudaStream_t stream) {
    return aisp_sgemm_micro_tiled_config(0, A, B, C, M, N, K, stream);
}

extern "C" int aisp_sgemm_config_count() { return kNumConfigs; }

extern "C" const char* aisp_sgemm_config_name(int config) {
    return config >= 0 && config < kNumConfigs ? kConfigs[config].name : "";
}

extern "C" const char* aisp_cuda_error_string(int code) {
    return cudaGetErrorString(static_cast<cudaError_t>(code));
}
