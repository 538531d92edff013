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
// Usage: synccheck_pipeline MODE  -> prints "mode M ok" or "mode M WRONG", exit 0/1.
// Build: nvcc -arch=sm_90a -std=c++17 -o synccheck_pipeline synccheck_pipeline.cu
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
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

int main(int argc, char** argv) {
    const int mode = argc > 1 ? std::atoi(argv[1]) : 0;
    const int blocks = 4, batches = 6, n = blocks * kThreads * batches;
    int *in, *out;
    cudaMallocManaged(&in, n * sizeof(int));
    cudaMallocManaged(&out, n * sizeof(int));
    for (int i = 0; i < n; ++i) { in[i] = i; out[i] = 0; }
    if (mode == 0) block_scope_guide<<<blocks, kThreads>>>(out, in, batches);
    else if (mode == 1) thread_scope<<<blocks, kThreads>>>(out, in, batches);
    else block_scope_per_thread<<<blocks, kThreads>>>(out, in, batches);
    cudaError_t err = cudaDeviceSynchronize();
    int bad = 0;
    for (int i = 0; i < n; ++i) bad += out[i] != i + 1;
    std::printf("mode %d %s (%s, %d wrong)\n", mode, (err == cudaSuccess && bad == 0) ? "ok" : "WRONG",
                cudaGetErrorString(err), bad);
    return (err == cudaSuccess && bad == 0) ? 0 : 1;
}
