// Does compute-sanitizer synccheck report "Missing wait" on a textbook cuda::pipeline?
// Question from issue 12: synccheck stops three of this project's kernels at
// cuda::pipeline::producer_commit (block scope). Are they misusing the pipeline, or does
// synccheck flag the pattern itself? Three kernels, same data movement (copy in through a
// 2-stage pipeline, add 1, write out):
//   mode 0  the CUDA C++ Programming Guide's "unified" block-scope pipeline example (every thread
//           producer and consumer, cuda::memcpy_async(block, ...), pipeline_shared_state<block, 2>)
//   mode 1  the same with a thread-scope pipeline (cuda::make_pipeline(), per-thread copies:
//           cp.async.commit_group / wait_group, no mbarrier)
//   mode 2  block scope, but each thread copies its own element (cuda::memcpy_async(thread, ...))
//   mode 3  racecheck question: warp 0 alone fills the stage with a thread-scope pipeline
//           (cp.async, cuda::pipeline_consumer_wait_prior<0>), then __syncthreads(), then every
//           thread reads an element another lane copied. Correct by the CUDA model (wait_group,
//           then a CTA barrier); a race report here means racecheck does not model wait_group.
//   mode 4  racecheck question: warp 0 writes the stage with plain stores and arrives on a
//           cuda::barrier<thread_scope_block> (an mbarrier; both warps arrive, 64 expected), warp 1
//           waits on it and reads, then releases the stage through a second barrier. Correct by the CUDA model; a race report means racecheck does not model the
//           mbarrier hand-off between warps.
//   mode 5  racecheck question: the same hand-off as mode 4 through flags in shared memory,
//           cuda::atomic_ref<int, thread_scope_block> release stores and acquire loads (correct by
//           the CUDA memory model); a race report means racecheck does not model flag hand-offs.
//   mode 6  racecheck question (ch10 warp_specialized_cluster_pipeline): 2-CTA clusters; warp 0
//           of rank 0 fills rank 0's shared memory with cp.async (thread-scope pipeline,
//           wait_prior<0>), __syncthreads(), cluster.sync(); both ranks read it through
//           cluster.map_shared_rank(.., 0) (DSMEM); cluster.sync() before the next fill. Mode 7 is
//           the same with plain 16-byte stores instead of cp.async. Both are correct by the CUDA
//           model; a report only on mode 6 means racecheck does not pair cp.async completion with
//           the barriers when the reader goes through the cluster window.
// Usage: synccheck_pipeline MODE  -> prints "mode M ok" or "mode M WRONG", exit 0/1.
// Build: nvcc -arch=sm_90a -std=c++17 -o synccheck_pipeline synccheck_pipeline.cu
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
#include <cuda/atomic>
#include <cuda/pipeline>
#include <cstdio>
#include <cstdlib>

namespace cg = cooperative_groups;
constexpr int kStages = 2;
constexpr int kThreads = 128;

__device__ void compute(int* out, const int* in) { out[threadIdx.x] = in[threadIdx.x] + 1; }

__global__ void block_scope_guide(int* out, const int* in, int batches) {
    auto block = cg::this_thread_block();
    __shared__ int shared[kStages * kThreads];
    __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, kStages> state;
    auto pipe = cuda::make_pipeline(block, &state);
    const int stride = gridDim.x * kThreads;
    auto base = [&](int b) { return blockIdx.x * kThreads + stride * b; };
    for (int compute_b = 0, fetch_b = 0; compute_b < batches; ++compute_b) {
        for (; fetch_b < batches && fetch_b < compute_b + kStages; ++fetch_b) {
            pipe.producer_acquire();
            cuda::memcpy_async(block, shared + (fetch_b % kStages) * kThreads, in + base(fetch_b),
                               sizeof(int) * kThreads, pipe);
            pipe.producer_commit();
        }
        pipe.consumer_wait();
        compute(out + base(compute_b), shared + (compute_b % kStages) * kThreads);
        pipe.consumer_release();
    }
}

__global__ void thread_scope(int* out, const int* in, int batches) {
    __shared__ int shared[kStages * kThreads];
    auto pipe = cuda::make_pipeline();
    const int stride = gridDim.x * kThreads;
    auto base = [&](int b) { return blockIdx.x * kThreads + stride * b; };
    for (int compute_b = 0, fetch_b = 0; compute_b < batches; ++compute_b) {
        for (; fetch_b < batches && fetch_b < compute_b + kStages; ++fetch_b) {
            pipe.producer_acquire();
            cuda::memcpy_async(shared + (fetch_b % kStages) * kThreads + threadIdx.x, in + base(fetch_b) + threadIdx.x,
                               sizeof(int), pipe);
            pipe.producer_commit();
        }
        pipe.consumer_wait();            // each thread reads only the element it copied itself
        compute(out + base(compute_b), shared + (compute_b % kStages) * kThreads);
        pipe.consumer_release();
    }
}

__global__ void block_scope_per_thread(int* out, const int* in, int batches) {
    __shared__ int shared[kStages * kThreads];
    __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, kStages> state;
    auto pipe = cuda::make_pipeline(cg::this_thread_block(), &state);
    const int stride = gridDim.x * kThreads;
    auto base = [&](int b) { return blockIdx.x * kThreads + stride * b; };
    for (int compute_b = 0, fetch_b = 0; compute_b < batches; ++compute_b) {
        for (; fetch_b < batches && fetch_b < compute_b + kStages; ++fetch_b) {
            pipe.producer_acquire();
            cuda::memcpy_async(cg::this_thread(), shared + (fetch_b % kStages) * kThreads + threadIdx.x,
                               in + base(fetch_b) + threadIdx.x, sizeof(int), pipe);
            pipe.producer_commit();
        }
        pipe.consumer_wait();
        compute(out + base(compute_b), shared + (compute_b % kStages) * kThreads);
        pipe.consumer_release();
    }
}

__global__ void warp_cp_async_then_syncthreads(int* out, const int* in, int batches) {
    __shared__ __align__(16) int shared[kThreads];
    auto pipe = cuda::make_pipeline();
    const int stride = gridDim.x * kThreads;
    for (int b = 0; b < batches; ++b) {
        const int base = blockIdx.x * kThreads + stride * b;
        if (threadIdx.x < 32) {                      // warp 0 copies all 128 ints, 16 bytes per lane
            pipe.producer_acquire();
            cuda::memcpy_async(reinterpret_cast<int4*>(shared) + threadIdx.x,
                               reinterpret_cast<const int4*>(in + base) + threadIdx.x, cuda::aligned_size_t<16>(16), pipe);
            pipe.producer_commit();
            cuda::pipeline_consumer_wait_prior<0>(pipe);
        }
        __syncthreads();
        const int j = (threadIdx.x + 32) % kThreads;  // an element another warp's lane copied
        out[base + j] = shared[j] + 1;
        __syncthreads();                             // reads done before the next batch overwrites
    }
}

__global__ void warp_mbarrier_handoff(int* out, const int* in, int batches) {
    // 64 threads: warp 0 produces, warp 1 consumes; one stage, full and empty barriers.
    __shared__ int shared[kThreads];
    __shared__ cuda::barrier<cuda::thread_scope_block> full, empty;
    if (threadIdx.x == 0) { init(&full, 64); init(&empty, 64); }   // both warps arrive on both
    __syncthreads();
    const int stride = gridDim.x * kThreads;
    for (int b = 0; b < batches; ++b) {
        const int base = blockIdx.x * kThreads + stride * b;
        const int lane = threadIdx.x & 31;
        if (threadIdx.x < 32) {
            if (b > 0) empty.wait(empty.arrive());   // the consumer has read batch b - 1
            for (int i = lane; i < kThreads; i += 32) shared[i] = in[base + i];
            (void)full.arrive();
        } else {
            full.wait(full.arrive());                // the producer's stores of batch b
            for (int i = lane; i < kThreads; i += 32) out[base + i] = shared[i] + 1;
            (void)empty.arrive();
        }
    }
}

__global__ void warp_flag_handoff(int* out, const int* in, int batches) {
    __shared__ int shared[kThreads];
    __shared__ int full_flag, empty_flag;                // batch number published / released
    if (threadIdx.x == 0) { full_flag = -1; empty_flag = -1; }
    __syncthreads();
    cuda::atomic_ref<int, cuda::thread_scope_block> full(full_flag), empty(empty_flag);
    const int stride = gridDim.x * kThreads;
    for (int b = 0; b < batches; ++b) {
        const int base = blockIdx.x * kThreads + stride * b;
        const int lane = threadIdx.x & 31;
        if (threadIdx.x < 32) {
            while (b > 0 && empty.load(cuda::memory_order_acquire) < b - 1) __nanosleep(32);
            for (int i = lane; i < kThreads; i += 32) shared[i] = in[base + i];
            __syncwarp();
            if (lane == 0) full.store(b, cuda::memory_order_release);
        } else {
            while (full.load(cuda::memory_order_acquire) < b) __nanosleep(32);
            for (int i = lane; i < kThreads; i += 32) out[base + i] = shared[i] + 1;
            __syncwarp();
            if (lane == 0) empty.store(b, cuda::memory_order_release);
        }
    }
}

template <bool kAsyncCopy>
__global__ void __cluster_dims__(2, 1, 1) cluster_fill_then_dsmem_read(int* out, const int* in, int batches) {
    __shared__ __align__(16) int shared[kThreads];
    auto cluster = cg::this_cluster();
    const unsigned rank = cluster.block_rank();
    auto pipe = cuda::make_pipeline();
    const int clusters = gridDim.x / 2;
    for (int b = 0; b < batches; ++b) {
        const int base = (blockIdx.x / 2 + clusters * b) * kThreads;   // one 128-int tile per cluster
        if (rank == 0 && threadIdx.x < 32) {
            const int4* src = reinterpret_cast<const int4*>(in + base) + threadIdx.x;
            int4* dst = reinterpret_cast<int4*>(shared) + threadIdx.x;
            if constexpr (kAsyncCopy) {
                pipe.producer_acquire();
                cuda::memcpy_async(dst, src, cuda::aligned_size_t<16>(16), pipe);
                pipe.producer_commit();
                cuda::pipeline_consumer_wait_prior<0>(pipe);
            } else {
                *dst = *src;
            }
        }
        __syncthreads();
        cluster.sync();
        const int* tile = cluster.map_shared_rank(shared, 0);
        if (threadIdx.x < kThreads / 2) {            // rank 0 writes the first half of out, rank 1 the second
            const int j = static_cast<int>(rank) * (kThreads / 2) + threadIdx.x;
            out[base + j] = tile[j] + 1;
        }
        cluster.sync();                              // reads done before rank 0 refills
    }
}

int main(int argc, char** argv) {
    const int mode = argc > 1 ? std::atoi(argv[1]) : 0;
    const int blocks = 4, batches = 6, n = blocks * kThreads * batches;
    int *in, *out;
    cudaMallocManaged(&in, n * sizeof(int));
    cudaMallocManaged(&out, n * sizeof(int));
    for (int i = 0; i < n; ++i) { in[i] = i; out[i] = 0; }
    if (mode == 0) block_scope_guide<<<blocks, kThreads>>>(out, in, batches);
    else if (mode == 1) thread_scope<<<blocks, kThreads>>>(out, in, batches);
    else if (mode == 2) block_scope_per_thread<<<blocks, kThreads>>>(out, in, batches);
    else if (mode == 3) warp_cp_async_then_syncthreads<<<blocks, kThreads>>>(out, in, batches);
    else if (mode == 4) warp_mbarrier_handoff<<<blocks, 64>>>(out, in, batches);
    else if (mode == 5) warp_flag_handoff<<<blocks, 64>>>(out, in, batches);
    else if (mode == 6) cluster_fill_then_dsmem_read<true><<<2 * blocks, kThreads>>>(out, in, batches);
    else cluster_fill_then_dsmem_read<false><<<2 * blocks, kThreads>>>(out, in, batches);
    cudaError_t err = cudaDeviceSynchronize();
    int bad = 0;
    for (int i = 0; i < n; ++i) bad += out[i] != i + 1;
    std::printf("mode %d %s (%s, %d wrong)\n", mode, (err == cudaSuccess && bad == 0) ? "ok" : "WRONG",
                cudaGetErrorString(err), bad);
    return (err == cudaSuccess && bad == 0) ? 0 : 1;
}
