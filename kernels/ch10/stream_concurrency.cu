// Many small independent kernels: one stream vs 32 streams (the book's pipeline_3stage pair,
// which despite its name is stream concurrency, not a shared-memory pipeline).
//
// x and y are [segments, seg_len] fp32; one launch per segment computes, per element, the
// book's 8 rounds of  v <- sin(v) cos(v) + tanh(v / 2)  starting from v = x[s, i]: y = f^8(x).
// A 65,536-element segment is 256 blocks of 256 threads: a quarter of what an H100's 132 SMs
// hold at once (132 x 2048 threads = 1056 such blocks), so launches one after another leave
// most of the GPU idle, and launches on different streams may run side by side.
//   aisp_stream_serial        every launch on the caller's stream, in order (the baseline).
//   aisp_stream_pool_*        a pool of worker streams, created once (create), used for the
//                             launches round-robin (launch), freed by its owner (destroy).
//                             launch forks from the caller's stream with an event
//                             (cudaEventRecord there, cudaStreamWaitEvent on every worker) and
//                             joins back (an event per worker recorded after its launches,
//                             waited on by the caller's stream), so work queued on the caller's
//                             stream afterwards, and any event timer there, covers all of it.
#include <cuda_runtime.h>

#include <new>

namespace {

constexpr int kThreads = 256;
constexpr int kMaxStreams = 1024;

constexpr int kRounds = 8;
constexpr float kInvPi = 0.318309886183790671537767526745f;

// sin and cos through sincospif(v / pi): accurate to a few ulp like sincosf, but its argument
// reduction is exact arithmetic, without the local-memory (Payne-Hanek) path sincosf carries
// for |v| > 105615, which would give this kernel a stack frame it never uses.
__device__ __forceinline__ float round_of(float v) {
    float s, c;
    sincospif(v * kInvPi, &s, &c);
    return s * c + tanhf(0.5f * v);
}

__global__ void __launch_bounds__(kThreads) segment_kernel(const float* __restrict__ x, float* __restrict__ y, int n) {
    const int i = blockIdx.x * kThreads + threadIdx.x;
    if (i < n) {
        float v = x[i];
#pragma unroll 4
        for (int r = 0; r < kRounds; ++r) v = round_of(v);
        y[i] = v;
    }
}

cudaError_t launch_segment(const float* x, float* y, int s, int seg_len, cudaStream_t stream) {
    const long long base = static_cast<long long>(s) * seg_len;
    segment_kernel<<<(seg_len + kThreads - 1) / kThreads, kThreads, 0, stream>>>(x + base, y + base, seg_len);
    return cudaGetLastError();
}

bool valid(const float* x, const float* y, int segments, int seg_len) {
    return x != nullptr && y != nullptr && segments >= 0 && seg_len >= 0;
}

struct StreamPool {
    int count = 0;
    cudaStream_t streams[kMaxStreams] = {};
    cudaEvent_t joined[kMaxStreams] = {};   // recorded on worker i after its launches
    cudaEvent_t fork = nullptr;             // recorded on the caller's stream before them
};

void release(StreamPool* pool) {
    for (int i = 0; i < pool->count; ++i) {
        if (pool->joined[i] != nullptr) cudaEventDestroy(pool->joined[i]);
        if (pool->streams[i] != nullptr) cudaStreamDestroy(pool->streams[i]);
    }
    if (pool->fork != nullptr) cudaEventDestroy(pool->fork);
    delete pool;
}

}  // namespace

// 128 launches (one per segment) in order on `stream`.
extern "C" int aisp_stream_serial(const float* x, float* y, int segments, int seg_len, cudaStream_t stream) {
    if (!valid(x, y, segments, seg_len)) return cudaErrorInvalidValue;
    if (seg_len == 0) return cudaSuccess;
    for (int s = 0; s < segments; ++s) {
        const cudaError_t err = launch_segment(x, y, s, seg_len, stream);
        if (err != cudaSuccess) return static_cast<int>(err);
    }
    return cudaSuccess;
}

// A pool of `count` non-blocking streams and their events on the current device; *out gets
// an opaque handle for launch and destroy. Event timing is off: the events only order work.
extern "C" int aisp_stream_pool_create(int count, void** out) {
    if (out == nullptr) return cudaErrorInvalidValue;
    *out = nullptr;
    if (count < 1 || count > kMaxStreams) return cudaErrorInvalidValue;
    StreamPool* pool = new (std::nothrow) StreamPool();
    if (pool == nullptr) return cudaErrorMemoryAllocation;
    cudaError_t err = cudaEventCreateWithFlags(&pool->fork, cudaEventDisableTiming);
    for (int i = 0; i < count && err == cudaSuccess; ++i) {
        pool->count = i + 1;
        err = cudaStreamCreateWithFlags(&pool->streams[i], cudaStreamNonBlocking);
        if (err == cudaSuccess) err = cudaEventCreateWithFlags(&pool->joined[i], cudaEventDisableTiming);
    }
    if (err != cudaSuccess) {
        release(pool);
        return static_cast<int>(err);
    }
    *out = pool;
    return cudaSuccess;
}

// Segment s on worker stream s % count, forked from and joined back into `stream`.
extern "C" int aisp_stream_pool_launch(void* handle, const float* x, float* y, int segments, int seg_len,
                                       cudaStream_t stream) {
    StreamPool* pool = static_cast<StreamPool*>(handle);
    if (pool == nullptr || !valid(x, y, segments, seg_len)) return cudaErrorInvalidValue;
    if (seg_len == 0 || segments == 0) return cudaSuccess;
    const int used = segments < pool->count ? segments : pool->count;
    cudaError_t err = cudaEventRecord(pool->fork, stream);
    for (int i = 0; i < used && err == cudaSuccess; ++i) err = cudaStreamWaitEvent(pool->streams[i], pool->fork, 0);
    for (int s = 0; s < segments && err == cudaSuccess; ++s)
        err = launch_segment(x, y, s, seg_len, pool->streams[s % pool->count]);
    // Join even after an error, so the caller's stream never runs ahead of queued work.
    for (int i = 0; i < used; ++i) {
        cudaError_t e = cudaEventRecord(pool->joined[i], pool->streams[i]);
        if (e == cudaSuccess) e = cudaStreamWaitEvent(stream, pool->joined[i], 0);
        if (err == cudaSuccess) err = e;
    }
    return static_cast<int>(err);
}

// Frees the pool's streams and events (work already queued on them still completes).
extern "C" int aisp_stream_pool_destroy(void* handle) {
    if (handle == nullptr) return cudaErrorInvalidValue;
    release(static_cast<StreamPool*>(handle));
    return cudaSuccess;
}

extern "C" const char* aisp_stream_error_string(int code) {
    return cudaGetErrorString(static_cast<cudaError_t>(code));
}
