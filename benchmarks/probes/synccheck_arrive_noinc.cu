// Which mbarrier arrive pattern does compute-sanitizer synccheck call "Missing wait"?
// Build: nvcc -arch=sm_90a -std=c++17 -o probe synccheck_arrive_noinc.cu
// Run:   for m in 0 1 2 3; do compute-sanitizer --tool synccheck ./probe $m; done
// Every mode copies 128 float4 with cp.async, completes one phase of a shared mbarrier
// (count 128), waits on it and checks the copy; each prints "mode M ok" when the data is right.
//   0  libcu++ cuda::pipeline<block> (unified, 1 stage): producer_commit =
//      cp.async.mbarrier.arrive (no .noinc: A0T1 + TRANSCNT) then mbarrier.arrive (A1T0)
//   1  the same two PTX instructions written by hand
//   2  cp.async.mbarrier.arrive.noinc only (one async arrive per thread, ARVCNT)
//   3  cp.async.wait_all, then a plain mbarrier.arrive
#include <cooperative_groups.h>
#include <cuda/pipeline>
#include <cstdio>
#include <cstdlib>

__device__ unsigned smem_addr(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

__global__ void probe(const float4* src, float4* dst, int mode) {
    __shared__ alignas(16) float4 buf[128];
    __shared__ alignas(8) unsigned long long bar;
    using State = cuda::pipeline_shared_state<cuda::thread_scope_block, 1>;
    __shared__ alignas(alignof(State)) unsigned char state[sizeof(State)];
    const int t = threadIdx.x;
    if (mode == 0) {
        auto pipe = cuda::make_pipeline(cooperative_groups::this_thread_block(), reinterpret_cast<State*>(state));
        pipe.producer_acquire();
        cuda::memcpy_async(&buf[t], &src[t], cuda::aligned_size_t<16>(16), pipe);
        pipe.producer_commit();
        pipe.consumer_wait();
        dst[t] = buf[(t + 1) % 128];
        pipe.consumer_release();
        return;
    }
    const unsigned b = smem_addr(&bar);
    if (t == 0) asm volatile("mbarrier.init.shared.b64 [%0], %1;" :: "r"(b), "r"(128));
    __syncthreads();
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(smem_addr(&buf[t])), "l"(src + t) : "memory");
    if (mode == 1) {
        asm volatile("cp.async.mbarrier.arrive.shared.b64 [%0];" :: "r"(b) : "memory");
        asm volatile("{ .reg .b64 s; mbarrier.arrive.shared.b64 s, [%0]; }" :: "r"(b) : "memory");
    } else if (mode == 2) {
        asm volatile("cp.async.mbarrier.arrive.noinc.shared.b64 [%0];" :: "r"(b) : "memory");
    } else {
        asm volatile("cp.async.wait_all;" ::: "memory");
        asm volatile("{ .reg .b64 s; mbarrier.arrive.shared.b64 s, [%0]; }" :: "r"(b) : "memory");
    }
    asm volatile("{ .reg .pred p; W: mbarrier.try_wait.parity.shared.b64 p, [%0], 0; @!p bra W; }" :: "r"(b) : "memory");
    dst[t] = buf[(t + 1) % 128];
}

int main(int argc, char** argv) {
    const int mode = argc > 1 ? atoi(argv[1]) : 0;
    float4 h[128], out[128];
    for (int i = 0; i < 128; ++i) h[i] = make_float4(i, i + 0.25f, i + 0.5f, i + 0.75f);
    float4 *src, *dst;
    cudaMalloc(&src, sizeof h);
    cudaMalloc(&dst, sizeof h);
    cudaMemcpy(src, h, sizeof h, cudaMemcpyHostToDevice);
    probe<<<1, 128>>>(src, dst, mode);
    cudaError_t err = cudaMemcpy(out, dst, sizeof out, cudaMemcpyDeviceToHost);
    bool ok = err == cudaSuccess;
    for (int i = 0; ok && i < 128; ++i) ok = out[i].x == h[(i + 1) % 128].x && out[i].w == h[(i + 1) % 128].w;
    printf("mode %d %s (%s)\n", mode, ok ? "ok" : "WRONG", cudaGetErrorString(err));
    return ok ? 0 : 1;
}
