// Producer/consumer pipelines (the book's two_stage_pipeline.cu and warp-specialization pair),
// ported to Hopper (sm_90) as one library with four schedules of the same work.
//
// The work, per element of a long fp32 vector: y[i] = p(x[i]) with p a degree-D polynomial
// (Horner: D fused multiply-adds, 2D FLOPs, for 8 bytes of DRAM traffic). D = 64 puts it at
// 16 FLOP/byte, near the fp32 ridge of an H100/H200, so the time is
// max(memory, math) only if loading the next tile overlaps the math on this one, and nearer
// memory + math if it does not.
//
// Every variant streams the vector in tiles of kTileVec float4 (16 KiB) through a persistent
// grid (SM count x resident blocks per SM), and computes with the same 256 compute threads per
// block, each holding 4 float4 (16 independent Horner chains) in registers:
//   0 baseline          all threads: ld.global -> st.shared, __syncthreads, compute from shared,
//                       __syncthreads, next tile. A block never loads while it computes.
//   1 pipelined         two-stage cuda::pipeline, all threads produce and consume: the
//                       cp.async (memcpy_async) of tile i+1 is in flight while tile i is computed.
//   2 warp_specialized  the same two stages, partitioned: one producer warp only issues the
//                       copies (pipeline_role::producer), 8 consumer warps only compute.
//   3 direct            no shared memory, no barriers: ld.global straight to registers. The
//                       control that says what the GPU's own warp scheduling already overlaps.
//   4 warp_specialized_tma
//                       Hopper's producer: the same two stages and 8 consumer warps, but one
//                       thread of the producer warp moves a whole 16 KiB tile with ONE bulk copy
//                       (cp.async.bulk, the TMA engine's 1-D form) that completes transaction
//                       bytes on the stage's `full` mbarrier; consumers wait on `full`, take
//                       their slice into registers and arrive (every thread) on the stage's
//                       `empty` mbarrier. 1024 cp.async per tile become one instruction.
// Consumers copy their slice of a stage into registers and release it before the math, so a
// stage refills while the previous tile is still being computed.
#include <cooperative_groups.h>
#include <cuda/pipeline>
#include <cuda_runtime.h>

#include <cstdint>

namespace cg = cooperative_groups;

namespace {

constexpr int kComputeThreads = 256;                          // 8 compute warps in every variant
constexpr int kVecPerThread = 4;                              // float4 per compute thread per tile
constexpr int kTileVec = kComputeThreads * kVecPerThread;     // 1024 float4 = 16 KiB per tile
constexpr int kStages = 2;                                    // double buffering
constexpr int kProducerThreads = 32;                          // one producer warp
constexpr int kMaxDegree = 128;
constexpr int kVariants = 5;
constexpr int kMaxDevices = 16;

// The pipeline's stage barriers, in shared memory. Declared as raw bytes because a __shared__
// object with a constructor cannot be initialized dynamically; make_pipeline initializes it.
using PipeState = cuda::pipeline_shared_state<cuda::thread_scope_block, kStages>;

// The coefficients are a kernel argument, passed by value: they live in the parameter
// (constant) bank, and every Horner step is one FFMA whose coefficient operand is a uniform
// register (ULDC.64 loads two at a time). Measured alternative, slower: staging them in shared
// memory and reading four per LDS.128 cut the instructions per FFMA from 1.17 to 1.09, but the
// FFMAs, now with three vector-register sources, stalled on dispatch (most likely register-bank
// conflicts: dispatch_stall 0.13 -> 1.1-1.8 per issue) and every variant ran 8-17% slower on an
// H200 (2026-11-26).
struct Poly {
    float c[kMaxDegree + 1];   // c[0] + c[1] x + ... + c[D] x^D
};

template <int D>
__device__ __forceinline__ float horner(float x, const Poly& p) {
    float acc = p.c[D];
#pragma unroll
    for (int k = D - 1; k >= 0; --k) acc = fmaf(acc, x, p.c[k]);
    return acc;
}

// 16 independent chains per thread: enough FFMAs in flight to cover the 4-cycle FMA latency
// with one warp per scheduler.
template <int D>
__device__ __forceinline__ void horner_tile(float4 (&v)[kVecPerThread], const Poly& p) {
    float4 acc[kVecPerThread];
#pragma unroll
    for (int u = 0; u < kVecPerThread; ++u) acc[u] = make_float4(p.c[D], p.c[D], p.c[D], p.c[D]);
#pragma unroll
    for (int k = D - 1; k >= 0; --k) {
        const float c = p.c[k];
#pragma unroll
        for (int u = 0; u < kVecPerThread; ++u) {
            acc[u].x = fmaf(acc[u].x, v[u].x, c);
            acc[u].y = fmaf(acc[u].y, v[u].y, c);
            acc[u].z = fmaf(acc[u].z, v[u].z, c);
            acc[u].w = fmaf(acc[u].w, v[u].w, c);
        }
    }
#pragma unroll
    for (int u = 0; u < kVecPerThread; ++u) v[u] = acc[u];
}

// Tile t covers float4 [t * kTileVec, t * kTileVec + valid); only the last tile is partial.
__device__ __forceinline__ int tile_valid(int t, long long n4) {
    const long long left = n4 - static_cast<long long>(t) * kTileVec;
    return left < kTileVec ? static_cast<int>(left) : kTileVec;
}

// Compute thread `ctid` owns float4 ctid + u * kComputeThreads of each tile: consecutive lanes
// touch consecutive 16-byte words, so global accesses coalesce and LDS.128 has no conflicts.
__device__ __forceinline__ void read_slice(const float4* __restrict__ src, float4 (&v)[kVecPerThread],
                                           int valid, int ctid) {
#pragma unroll
    for (int u = 0; u < kVecPerThread; ++u) {
        const int j = ctid + u * kComputeThreads;
        v[u] = j < valid ? src[j] : make_float4(0.f, 0.f, 0.f, 0.f);
    }
}

template <int D>
__device__ __forceinline__ void compute_store(float4 (&v)[kVecPerThread], float4* __restrict__ dst,
                                              int valid, int ctid, const Poly& p) {
    horner_tile<D>(v, p);
#pragma unroll
    for (int u = 0; u < kVecPerThread; ++u) {
        const int j = ctid + u * kComputeThreads;
        if (j < valid) __stcs(dst + j, v[u]);  // streamed: y is not read again
    }
}

// The last n % 4 elements (none at the default size), by block 0.
template <int D>
__device__ __forceinline__ void tail(const float* __restrict__ x, float* __restrict__ y, long long n,
                                     int ctid, const Poly& p) {
    const long long i = (n & ~3LL) + ctid;
    if (blockIdx.x == 0 && i < n) y[i] = horner<D>(x[i], p);
}

// Asynchronous copy of `valid` float4 into `stage` by a group of kGroup threads (thread `rank`
// copies float4 rank, rank + kGroup, ...): one cp.async (LDGSTS.128) each, unrolled with
// immediate offsets for a full tile; completion tracked by the pipeline's stage barrier.
template <int kGroup>
__device__ __forceinline__ void copy_tile(float4* stage, const float4* __restrict__ src, int valid, int rank,
                                          cuda::pipeline<cuda::thread_scope_block>& pipe) {
    if (valid == kTileVec) {
#pragma unroll
        for (int k = 0; k < kTileVec / kGroup; ++k) {
            const int j = rank + k * kGroup;
            cuda::memcpy_async(stage + j, src + j, cuda::aligned_size_t<16>(sizeof(float4)), pipe);
        }
    } else {
        for (int j = rank; j < valid; j += kGroup)
            cuda::memcpy_async(stage + j, src + j, cuda::aligned_size_t<16>(sizeof(float4)), pipe);
    }
}

#define AISP_KERNEL_PARAMS                                                                          \
    const float4 *__restrict__ x4, float4 *__restrict__ y4, const float *__restrict__ x,               \
        float *__restrict__ y, long long n, long long n4, int ntiles, const Poly p

// 0: single stage. Load, barrier, compute, barrier: while a block loads it has nothing to
// compute, and while it computes it has no loads in flight.
template <int D>
__global__ void __launch_bounds__(kComputeThreads) baseline_kernel(AISP_KERNEL_PARAMS) {
    __shared__ float4 tile[kTileVec];
    const int ctid = threadIdx.x;
    for (int t = blockIdx.x; t < ntiles; t += gridDim.x) {
        const long long base = static_cast<long long>(t) * kTileVec;
        const int valid = tile_valid(t, n4);
#pragma unroll
        for (int u = 0; u < kVecPerThread; ++u) {
            const int j = ctid + u * kComputeThreads;
            if (j < valid) tile[j] = x4[base + j];
        }
        __syncthreads();
        float4 v[kVecPerThread];
        read_slice(tile, v, valid, ctid);
        compute_store<D>(v, y4 + base, valid, ctid, p);
        __syncthreads();  // the tile is overwritten next iteration
    }
    tail<D>(x, y, n, ctid, p);
}

// 1: two-stage cuda::pipeline, every thread a producer and a consumer.
template <int D>
__global__ void __launch_bounds__(kComputeThreads) pipelined_kernel(AISP_KERNEL_PARAMS) {
    __shared__ __align__(16) float4 buf[kStages][kTileVec];
    __shared__ alignas(alignof(PipeState)) unsigned char state[sizeof(PipeState)];
    auto block = cg::this_thread_block();
    auto pipe = cuda::make_pipeline(block, reinterpret_cast<PipeState*>(state));
    const int ctid = threadIdx.x;
    int t = blockIdx.x;
    if (t < ntiles) {  // prologue: this block's first tile into stage 0
        pipe.producer_acquire();
        copy_tile<kComputeThreads>(buf[0], x4 + static_cast<long long>(t) * kTileVec, tile_valid(t, n4), ctid, pipe);
        pipe.producer_commit();
    }
    for (int it = 0; t < ntiles; t += gridDim.x, ++it) {
        const int next = t + gridDim.x;
        if (next < ntiles) {  // tile i+1 in flight while tile i is computed
            pipe.producer_acquire();
            copy_tile<kComputeThreads>(buf[(it + 1) & 1], x4 + static_cast<long long>(next) * kTileVec,
                                       tile_valid(next, n4), ctid, pipe);
            pipe.producer_commit();
        }
        const int valid = tile_valid(t, n4);
        pipe.consumer_wait();
        float4 v[kVecPerThread];
        read_slice(buf[it & 1], v, valid, ctid);
        pipe.consumer_release();  // the slice is in registers: the stage may refill now
        compute_store<D>(v, y4 + static_cast<long long>(t) * kTileVec, valid, ctid, p);
    }
    tail<D>(x, y, n, ctid, p);
}

// 2: warp specialized. Warps 0-7 consume (compute), warp 8 produces (copies). The partitioned
// pipeline's stage barriers count 32 producer and 256 consumer arrivals.
template <int D>
__global__ void __launch_bounds__(kComputeThreads + kProducerThreads) warp_specialized_kernel(AISP_KERNEL_PARAMS) {
    __shared__ __align__(16) float4 buf[kStages][kTileVec];
    __shared__ alignas(alignof(PipeState)) unsigned char state[sizeof(PipeState)];
    auto block = cg::this_thread_block();
    const bool producer = threadIdx.x >= kComputeThreads;
    auto pipe = cuda::make_pipeline(block, reinterpret_cast<PipeState*>(state),
                                    producer ? cuda::pipeline_role::producer : cuda::pipeline_role::consumer);
    if (producer) {
        const int lane = threadIdx.x - kComputeThreads;
        int stage = 0;
        for (int t = blockIdx.x; t < ntiles; t += gridDim.x) {
            pipe.producer_acquire();  // waits until the consumers released this stage
            copy_tile<kProducerThreads>(buf[stage], x4 + static_cast<long long>(t) * kTileVec, tile_valid(t, n4),
                                        lane, pipe);
            pipe.producer_commit();
            stage ^= 1;
        }
        asm volatile("cp.async.wait_all;" ::: "memory");  // no copy outlives its issuing thread
        return;
    }
    const int ctid = threadIdx.x;
    int stage = 0;
    for (int t = blockIdx.x; t < ntiles; t += gridDim.x) {
        const int valid = tile_valid(t, n4);
        pipe.consumer_wait();
        float4 v[kVecPerThread];
        read_slice(buf[stage], v, valid, ctid);
        pipe.consumer_release();
        stage ^= 1;
        compute_store<D>(v, y4 + static_cast<long long>(t) * kTileVec, valid, ctid, p);
    }
    tail<D>(x, y, n, ctid, p);
}

// 4: warp specialized on Hopper's bulk-copy engine and mbarriers (no cuda::pipeline).
__device__ __forceinline__ uint32_t smem_addr(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Spin until the phase with parity `parity` has completed. kBackoff sleeps between polls
// (8 ns doubling to 256 ns, as cuda::pipeline's waits do): the producer waits on `empty` for a
// whole tile's math, and polling flat out takes issue slots from the consumer warps sharing its
// scheduler: at degree 128 (math-bound) that made this kernel 1.7x slower than the others.
template <bool kBackoff>
__device__ __forceinline__ void mbar_wait_parity(uint64_t* bar, uint32_t parity) {
    uint32_t done = 0;
    uint32_t sleep_ns = 8;
    while (true) {
        asm volatile(
            "{\n"
            ".reg .pred p;\n"
            "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
            "selp.u32 %0, 1, 0, p;\n"
            "}\n"
            : "=r"(done)
            : "r"(smem_addr(bar)), "r"(parity)
            : "memory");
        if (done) break;
        if constexpr (kBackoff) {
            __nanosleep(sleep_ns);
            sleep_ns = sleep_ns < 256 ? 2 * sleep_ns : 256;
        }
    }
}

// Known limit, degree 128 only: ptxas keeps this instance's 129 coefficients in registers (119
// per thread, one block per SM: 374 us = 76% of the bound on an H200, where the other schedules
// reach 90-98%). Capping registers with a min-blocks launch bound made it spill 276 bytes per
// thread and run slower still (520 us H200, 600 us H100: 2.4x the DRAM bytes, long_scoreboard
// stalls), so there is no cap; degrees 16-64 use 40-49 registers and fit 4 blocks per SM.
template <int D>
__global__ void __launch_bounds__(kComputeThreads + kProducerThreads)
warp_specialized_tma_kernel(const float4* __restrict__ x4, float4* __restrict__ y4, const float* __restrict__ x,
                            float* __restrict__ y, long long n, long long n4, int ntiles, const Poly p) {
    __shared__ __align__(128) float4 buf[kStages][kTileVec];
    __shared__ __align__(8) uint64_t full[kStages];    // tile bytes landed
    __shared__ __align__(8) uint64_t empty[kStages];   // every consumer thread has its slice
    if (threadIdx.x == 0) {
        for (int s = 0; s < kStages; ++s) {
            asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(&full[s])), "r"(1) : "memory");
            asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(&empty[s])), "r"(kComputeThreads)
                         : "memory");
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");   // visible to the copy engine
    }
    __syncthreads();
    if (threadIdx.x >= kComputeThreads) {   // the producer warp: one thread issues, the rest idle
        if (threadIdx.x == kComputeThreads) {
            int it = 0;
            for (int t = blockIdx.x; t < ntiles; t += gridDim.x, ++it) {
                const int s = it % kStages;
                // first pass: a fresh barrier's "previous phase" (parity 1) counts as complete
                mbar_wait_parity<true>(&empty[s], ((it / kStages) & 1) ^ 1);
                // the consumers' generic-proxy reads of this stage are ordered before the
                // async-proxy (bulk copy) write that refills it
                asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
                const uint32_t bytes = static_cast<uint32_t>(tile_valid(t, n4)) * sizeof(float4);
                asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                             ::"r"(smem_addr(&full[s])), "r"(bytes) : "memory");
                asm volatile(
                    "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                    ::"r"(smem_addr(buf[s])), "l"(x4 + static_cast<long long>(t) * kTileVec), "r"(bytes),
                      "r"(smem_addr(&full[s]))
                    : "memory");
            }
        }
        return;
    }
    const int ctid = threadIdx.x;
    int it = 0;
    for (int t = blockIdx.x; t < ntiles; t += gridDim.x, ++it) {
        const int s = it % kStages;
        const int valid = tile_valid(t, n4);
        mbar_wait_parity<false>(&full[s], (it / kStages) & 1);
        float4 v[kVecPerThread];
        read_slice(buf[s], v, valid, ctid);
        // Every thread arrives for itself: its arrive (a release) orders its own shared loads.
        // One arrive per warp after __syncwarp was not enough: on an H100 ~2% of calls had 64
        // wrong values, lanes 16-31 of one warp's LDS.128 overwritten by the next bulk copy
        // before those lanes' loads had completed (scripts/warp_spec_diag.py).
        asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(&empty[s])) : "memory");
        compute_store<D>(v, y4 + static_cast<long long>(t) * kTileVec, valid, ctid, p);
    }
    tail<D>(x, y, n, ctid, p);
}

// 3: no staging: loads straight into registers; overlap only across resident warps.
template <int D>
__global__ void __launch_bounds__(kComputeThreads) direct_kernel(AISP_KERNEL_PARAMS) {
    const int ctid = threadIdx.x;
    for (int t = blockIdx.x; t < ntiles; t += gridDim.x) {
        const long long base = static_cast<long long>(t) * kTileVec;
        const int valid = tile_valid(t, n4);
        float4 v[kVecPerThread];
        read_slice(x4 + base, v, valid, ctid);
        compute_store<D>(v, y4 + base, valid, ctid, p);
    }
    tail<D>(x, y, n, ctid, p);
}

#undef AISP_KERNEL_PARAMS

using Kernel = void (*)(const float4*, float4*, const float*, float*, long long, long long, int, const Poly);

template <int D>
Kernel kernel_for(int variant) {
    switch (variant) {
        case 0: return baseline_kernel<D>;
        case 1: return pipelined_kernel<D>;
        case 2: return warp_specialized_kernel<D>;
        case 3: return direct_kernel<D>;
        case 4: return warp_specialized_tma_kernel<D>;
        default: return nullptr;
    }
}

Kernel find_kernel(int variant, int degree) {
    switch (degree) {
        case 16: return kernel_for<16>(variant);
        case 32: return kernel_for<32>(variant);
        case 64: return kernel_for<64>(variant);
        case 128: return kernel_for<128>(variant);
        default: return nullptr;
    }
}

int threads_for(int variant) {
    return variant == 2 || variant == 4 ? kComputeThreads + kProducerThreads : kComputeThreads;
}

int degree_slot(int degree) {
    switch (degree) {
        case 16: return 0;
        case 32: return 1;
        case 64: return 2;
        case 128: return 3;
        default: return -1;
    }
}

// Resident blocks per SM and SM count, looked up once per (device, variant, degree): the
// occupancy query costs microseconds of host time, launches should not.
struct Placement {
    int max_blocks_per_sm;
    int sm_count;
};

cudaError_t placement(int variant, int degree, Kernel kernel, Placement* out) {
    static Placement cache[kMaxDevices][kVariants][4] = {};
    int device = 0;
    cudaError_t err = cudaGetDevice(&device);
    if (err != cudaSuccess) return err;
    const int slot = degree_slot(degree);
    if (device >= kMaxDevices || slot < 0) return cudaErrorInvalidValue;
    Placement& p = cache[device][variant][slot];
    if (p.sm_count == 0) {
        int blocks = 0, sms = 0;
        err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads_for(variant), 0);
        if (err != cudaSuccess) return err;
        err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
        if (err != cudaSuccess) return err;
        if (blocks < 1) return cudaErrorInvalidConfiguration;
        p.max_blocks_per_sm = blocks;
        p.sm_count = sms;
    }
    *out = p;
    return cudaSuccess;
}

}  // namespace

// variant: 0 baseline, 1 pipelined, 2 warp_specialized, 3 direct, 4 warp_specialized_tma. coeffs: degree + 1 floats in
// HOST memory, c[0] + c[1] x + ... + c[degree] x^degree. blocks_per_sm: resident blocks per SM
// of the persistent grid, 0 = as many as fit (clamped to that). x and y: 16-byte aligned.
// Returns a cudaError_t as int (aisp_warp_spec_error_string names it).
extern "C" int aisp_warp_spec_launch(int variant, const float* x, float* y, long long n, int degree,
                                     const float* coeffs, int blocks_per_sm, cudaStream_t stream) {
    const Kernel kernel = find_kernel(variant, degree);
    if (kernel == nullptr || x == nullptr || y == nullptr || coeffs == nullptr || n < 0 || blocks_per_sm < 0)
        return cudaErrorInvalidValue;
    if ((reinterpret_cast<std::uintptr_t>(x) | reinterpret_cast<std::uintptr_t>(y)) % 16 != 0)
        return cudaErrorMisalignedAddress;
    if (n == 0) return cudaSuccess;
    const long long n4 = n / 4;
    const long long tiles = (n4 + kTileVec - 1) / kTileVec;
    if (tiles >= (1LL << 31)) return cudaErrorInvalidValue;
    Placement where{};
    cudaError_t err = placement(variant, degree, kernel, &where);
    if (err != cudaSuccess) return static_cast<int>(err);
    const int per_sm = blocks_per_sm > 0 && blocks_per_sm < where.max_blocks_per_sm ? blocks_per_sm
                                                                                    : where.max_blocks_per_sm;
    long long grid = static_cast<long long>(per_sm) * where.sm_count;
    if (grid > tiles) grid = tiles;
    if (grid < 1) grid = 1;  // n < 4: one block for the tail
    Poly poly{};
    for (int k = 0; k <= degree; ++k) poly.c[k] = coeffs[k];
    kernel<<<static_cast<unsigned>(grid), threads_for(variant), 0, stream>>>(
        reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), x, y, n, n4, static_cast<int>(tiles), poly);
    return static_cast<int>(cudaGetLastError());
}

// What a launch of (variant, degree) gets: out[0] threads per block, [1] static shared bytes,
// [2] registers per thread, [3] local (stack) bytes per thread, [4] max resident blocks per SM,
// [5] blocks per SM a launch with `blocks_per_sm` uses, [6] SM count.
extern "C" int aisp_warp_spec_info(int variant, int degree, int blocks_per_sm, int* out) {
    const Kernel kernel = find_kernel(variant, degree);
    if (kernel == nullptr || out == nullptr || blocks_per_sm < 0) return cudaErrorInvalidValue;
    cudaFuncAttributes attr{};
    cudaError_t err = cudaFuncGetAttributes(&attr, kernel);
    if (err != cudaSuccess) return static_cast<int>(err);
    Placement where{};
    err = placement(variant, degree, kernel, &where);
    if (err != cudaSuccess) return static_cast<int>(err);
    out[0] = threads_for(variant);
    out[1] = static_cast<int>(attr.sharedSizeBytes);
    out[2] = attr.numRegs;
    out[3] = static_cast<int>(attr.localSizeBytes);
    out[4] = where.max_blocks_per_sm;
    out[5] = blocks_per_sm > 0 && blocks_per_sm < where.max_blocks_per_sm ? blocks_per_sm : where.max_blocks_per_sm;
    out[6] = where.sm_count;
    return cudaSuccess;
}

extern "C" const char* aisp_warp_spec_error_string(int code) {
    return cudaGetErrorString(static_cast<cudaError_t>(code));
}
