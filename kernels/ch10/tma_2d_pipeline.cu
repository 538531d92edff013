// y = x * 1.0001f + 1e-4f over an M x N fp32 row-major matrix (two roundings: __fmul_rn then
// __fadd_rn in every variant, so nvcc cannot contract them into an FMA), staged through shared
// memory three ways:
//   0 baseline          the book's cooperative path: a CTA of 32 x 4 threads owns 128 rows x 64
//                       columns and walks them in 32-row chunks through one [32][64] shared
//                       buffer: plain loads (LDG) -> smem, __syncthreads, compute in smem,
//                       __syncthreads, plain stores (STG), __syncthreads.
//   1 tma_book_config   the book's TMA kernel in the configuration a B200 ran ({tile_n 128,
//                       chunk 64, 1 stage}): a CTA owns 128 rows x 128 columns; per 64-row chunk
//                       thread 0 arms an mbarrier with the chunk's bytes (expect-tx) and issues a
//                       2-D TMA load, all threads wait, compute in smem, fence.proxy.async,
//                       __syncthreads, thread 0 issues the 2-D TMA store and waits until it has
//                       read the buffer (wait_group.read 0) before the next load may reuse it.
//   2 tma_hopper        a ring of 4 stages of 32 x 128 fp32 (16 KiB) in persistent CTAs (2 per
//                       SM) that stride over the 32 x 128 tiles: loads run 3 tiles ahead of the
//                       compute, each tile's TMA store is committed as a bulk group and only
//                       waited for (wait_group.read 1) one tile later, just before its stage is
//                       refilled, so stores overlap the next loads and compute.
// Edges: TMA loads zero-fill the part of a box outside the matrix and TMA stores clip it, so the
// TMA variants need no edge code; the baseline checks bounds. The TMA variants need N % 4 == 0
// (16-byte row pitch) and 16-byte aligned pointers. CUtensorMaps are encoded on the host through
// the driver entry point cuTensorMapEncodeTiled (cudaGetDriverEntryPointByVersion, no -lcuda)
// and passed as __grid_constant__ kernel parameters.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include <cstdint>

namespace {

constexpr float kScale = 1.0001f;
constexpr float kShift = 1e-4f;
constexpr int kThreadsX = 32;                 // the book's block: 32 x 4 threads
constexpr int kThreadsY = 4;
constexpr int kThreads = kThreadsX * kThreadsY;
constexpr int kTileM = 128;                   // rows per CTA (baseline and tma_book_config)
constexpr int kBaseTileN = 64, kBaseChunkM = 32;          // baseline: [32][64] smem chunk
constexpr int kBookTileN = 128, kBookChunkM = 64;         // tma_book_config: B200's {128, 64, 1}
constexpr int kRingCols = 128, kRingRows = 32, kRingStages = 4;   // tma_hopper
constexpr int kRingStageBytes = kRingCols * kRingRows * 4;        // 16 KiB
constexpr int kRingSmemBytes = kRingStages * kRingStageBytes + 128;   // + room to align to 128 B
constexpr int kRingCtasPerSm = 2;
constexpr int kRingMinTilesPerCta = 2 * kRingStages;   // every CTA wraps its ring at least twice
constexpr int kVariants = 3;
constexpr int kMaxDevices = 64;

__device__ __forceinline__ float transform(float v) { return __fadd_rn(__fmul_rn(v, kScale), kShift); }

// ---------------------------------------------------------------------------------------------
// PTX wrappers: mbarrier, TMA (cp.async.bulk.tensor) and the bulk-group completion mechanism.

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count) : "memory");
}

// Make initialized barriers visible to the async proxy (TMA) before it completes bytes on them.
__device__ __forceinline__ void mbar_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }

__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)), "r"(bytes)
                 : "memory");
}

// Spin until the barrier's phase with parity `parity` has completed.
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
    const uint32_t addr = smem_u32(bar);
    uint32_t done = 0;
    do {
        asm volatile(
            "{\n"
            ".reg .pred p;\n"
            "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
            "selp.u32 %0, 1, 0, p;\n"
            "}\n"
            : "=r"(done)
            : "r"(addr), "r"(parity)
            : "memory");
    } while (!done);
}

// Global box at (column x, row y) -> shared memory; its bytes complete on `bar`.
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, uint64_t* bar, int x, int y) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];"
        ::"r"(smem_u32(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)), "r"(x), "r"(y)
        : "memory");
}

// Shared memory -> global box at (column x, row y), clipped at the matrix edges; tracked by the
// issuing thread's bulk groups.
__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, const void* src, int x, int y) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];"
                 ::"l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(src)), "r"(x), "r"(y)
                 : "memory");
}

__device__ __forceinline__ void bulk_commit_group() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }

// Wait until at most N of this thread's committed bulk groups still READ shared memory.
template <int N>
__device__ __forceinline__ void bulk_wait_group_read() {
    asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}

// Wait until every committed bulk group has fully completed (writes done), before exit.
__device__ __forceinline__ void bulk_wait_all() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }

// Order this thread's generic-proxy shared-memory writes before later async-proxy (TMA) reads.
__device__ __forceinline__ void fence_proxy_async_smem() {
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// Compute a rows x cols tile in shared memory in place, 16 bytes per access (cols % 4 == 0).
template <int kRows, int kCols>
__device__ __forceinline__ void transform_tile(float* tile) {
    float4* t4 = reinterpret_cast<float4*>(tile);
    const int tid = threadIdx.y * blockDim.x + threadIdx.x;
#pragma unroll 4
    for (int i = tid; i < kRows * kCols / 4; i += kThreads) {
        float4 v = t4[i];
        v.x = transform(v.x);
        v.y = transform(v.y);
        v.z = transform(v.z);
        v.w = transform(v.w);
        t4[i] = v;
    }
}

// ---------------------------------------------------------------------------------------------
// 0: baseline. grid (ceil(N / 64), ceil(M / 128)), block (32, 4).

__global__ void __launch_bounds__(kThreads) baseline_kernel(const float* __restrict__ x, float* __restrict__ y, int M,
                                                           int N) {
    __shared__ alignas(16) float chunk_buf[kBaseChunkM][kBaseTileN];
    const int row0 = blockIdx.y * kTileM;
    const int col0 = blockIdx.x * kBaseTileN;
    const int tile_rows = min(kTileM, M - row0);
    const int tile_cols = min(kBaseTileN, N - col0);
    for (int r0 = 0; r0 < tile_rows; r0 += kBaseChunkM) {
        const int rows = min(kBaseChunkM, tile_rows - r0);
        const float* __restrict__ src = x + static_cast<long long>(row0 + r0) * N + col0;
        float* __restrict__ dst = y + static_cast<long long>(row0 + r0) * N + col0;
        for (int r = threadIdx.y; r < rows; r += blockDim.y)
            for (int c = threadIdx.x; c < tile_cols; c += blockDim.x)
                chunk_buf[r][c] = src[static_cast<long long>(r) * N + c];
        __syncthreads();
        for (int r = threadIdx.y; r < rows; r += blockDim.y)
            for (int c = threadIdx.x; c < tile_cols; c += blockDim.x) chunk_buf[r][c] = transform(chunk_buf[r][c]);
        __syncthreads();
        for (int r = threadIdx.y; r < rows; r += blockDim.y)
            for (int c = threadIdx.x; c < tile_cols; c += blockDim.x)
                dst[static_cast<long long>(r) * N + c] = chunk_buf[r][c];
        __syncthreads();   // the buffer is refilled by the next chunk
    }
}

// ---------------------------------------------------------------------------------------------
// 1: tma_book_config. grid (ceil(N / 128), ceil(M / 128)), block (32, 4), one 32 KiB stage.

__global__ void __launch_bounds__(kThreads) tma_book_config_kernel(const __grid_constant__ CUtensorMap map_x,
                                                                  const __grid_constant__ CUtensorMap map_y, int M) {
    __shared__ alignas(128) float stage[kBookChunkM * kBookTileN];
    __shared__ alignas(8) uint64_t full;
    constexpr uint32_t kBytes = kBookChunkM * kBookTileN * sizeof(float);
    const bool leader = threadIdx.x == 0 && threadIdx.y == 0;
    if (leader) {
        mbar_init(&full, 1);
        mbar_init_fence();
    }
    __syncthreads();
    const int row0 = blockIdx.y * kTileM;
    const int col0 = blockIdx.x * kBookTileN;
    const int chunks = (min(kTileM, M - row0) + kBookChunkM - 1) / kBookChunkM;
    for (int chunk = 0; chunk < chunks; ++chunk) {
        const int row = row0 + chunk * kBookChunkM;
        if (leader) {
            mbar_arrive_expect_tx(&full, kBytes);   // the whole box counts, out-of-bounds part included
            tma_load_2d(stage, &map_x, &full, col0, row);
        }
        mbar_wait(&full, chunk & 1);
        transform_tile<kBookChunkM, kBookTileN>(stage);
        fence_proxy_async_smem();   // each thread's smem writes, before the TMA store reads them
        __syncthreads();
        if (leader) {
            tma_store_2d(&map_y, stage, col0, row);
            bulk_commit_group();
            bulk_wait_group_read<0>();   // the single stage may only be refilled once read
        }
        __syncthreads();
    }
    if (leader) bulk_wait_all();
}

// ---------------------------------------------------------------------------------------------
// 2: tma_hopper. Persistent: grid min(2 x SMs, ceil(tiles / 8)), block (32, 4); tile t of this
// CTA's sequence (t = blockIdx.x + k * gridDim.x, column block fastest) lives in stage k % 4.

__global__ void __launch_bounds__(kThreads) tma_hopper_kernel(const __grid_constant__ CUtensorMap map_x,
                                                             const __grid_constant__ CUtensorMap map_y,
                                                             int tiles_x, int tiles) {
    extern __shared__ unsigned char smem_raw[];
    __shared__ alignas(8) uint64_t full[kRingStages];
    // the ring starts on a 128-byte boundary (offset computed on the shared address, so the
    // compiler keeps LDS/STS rather than generic loads)
    float* ring = reinterpret_cast<float*>(smem_raw + ((128u - (smem_u32(smem_raw) & 127u)) & 127u));
    const bool leader = threadIdx.x == 0 && threadIdx.y == 0;
    const int first = static_cast<int>(blockIdx.x), step = static_cast<int>(gridDim.x);
    const int count = first < tiles ? (tiles - 1 - first) / step + 1 : 0;
    auto issue = [&](int k) {   // leader only: load this CTA's k-th tile into stage k % 4
        const int t = first + k * step;
        const int s = k % kRingStages;
        mbar_arrive_expect_tx(&full[s], kRingStageBytes);
        tma_load_2d(ring + s * (kRingStageBytes / 4), &map_x, &full[s], (t % tiles_x) * kRingCols,
                    (t / tiles_x) * kRingRows);
    };
    if (leader) {
        for (int s = 0; s < kRingStages; ++s) mbar_init(&full[s], 1);
        mbar_init_fence();
        for (int k = 0; k < kRingStages - 1 && k < count; ++k) issue(k);   // prologue: 3 loads ahead
    }
    __syncthreads();
    for (int k = 0; k < count; ++k) {
        const int s = k % kRingStages;
        float* stage = ring + s * (kRingStageBytes / 4);
        mbar_wait(&full[s], static_cast<uint32_t>(k / kRingStages) & 1u);
        transform_tile<kRingRows, kRingCols>(stage);
        fence_proxy_async_smem();
        __syncthreads();   // every thread's writes to this stage (and reads of the last) are done
        if (leader) {
            const int t = first + k * step;
            tma_store_2d(&map_y, stage, (t % tiles_x) * kRingCols, (t / tiles_x) * kRingRows);
            bulk_commit_group();
            if (k + kRingStages - 1 < count) {
                // The next load goes into stage (k - 1) % 4, whose store was committed one tile
                // ago: wait until that store has read it, leaving this tile's store in flight.
                bulk_wait_group_read<1>();
                issue(k + kRingStages - 1);
            }
        }
    }
    if (leader) bulk_wait_all();
}

// ---------------------------------------------------------------------------------------------
// Host side.

PFN_cuTensorMapEncodeTiled_v12000 encode_fn() {
    static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
    if (!fn) {
        void* ptr = nullptr;
        cudaDriverEntryPointQueryResult status{};
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &ptr, 12000, cudaEnableDefault, &status) ==
                cudaSuccess &&
            status == cudaDriverEntryPointSuccess)
            fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(ptr);
    }
    return fn;
}

// An M x N fp32 row-major matrix moved in box_rows x box_cols boxes: no swizzle, no L2
// promotion (the book's descriptor), out-of-bounds elements read as zero.
cudaError_t make_map(CUtensorMap* map, const void* base, int M, int N, int box_rows, int box_cols) {
    const PFN_cuTensorMapEncodeTiled_v12000 encode = encode_fn();
    if (!encode) return cudaErrorNotSupported;
    const cuuint64_t dims[2] = {static_cast<cuuint64_t>(N), static_cast<cuuint64_t>(M)};
    const cuuint64_t strides[1] = {static_cast<cuuint64_t>(N) * sizeof(float)};   // bytes between rows
    const cuuint32_t box[2] = {static_cast<cuuint32_t>(box_cols), static_cast<cuuint32_t>(box_rows)};
    const cuuint32_t element_strides[2] = {1, 1};
    const CUresult res = encode(map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, const_cast<void*>(base), dims, strides, box,
                                element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                                CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return res == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}

cudaError_t sm_count(int* out) {
    static int cache[kMaxDevices] = {};
    int device = 0;
    cudaError_t err = cudaGetDevice(&device);
    if (err != cudaSuccess) return err;
    if (device >= kMaxDevices) return cudaErrorInvalidDevice;
    if (cache[device] == 0) {
        err = cudaDeviceGetAttribute(&cache[device], cudaDevAttrMultiProcessorCount, device);
        if (err != cudaSuccess) return err;
    }
    *out = cache[device];
    return cudaSuccess;
}

cudaError_t launch_book(const float* x, float* y, int M, int N, cudaStream_t stream) {
    CUtensorMap map_x, map_y;
    cudaError_t err = make_map(&map_x, x, M, N, kBookChunkM, kBookTileN);
    if (err == cudaSuccess) err = make_map(&map_y, y, M, N, kBookChunkM, kBookTileN);
    if (err != cudaSuccess) return err;
    const dim3 grid((N + kBookTileN - 1) / kBookTileN, (M + kTileM - 1) / kTileM);
    tma_book_config_kernel<<<grid, dim3(kThreadsX, kThreadsY), 0, stream>>>(map_x, map_y, M);
    return cudaGetLastError();
}

cudaError_t launch_hopper(const float* x, float* y, int M, int N, cudaStream_t stream) {
    int sms = 0;
    cudaError_t err = sm_count(&sms);
    if (err != cudaSuccess) return err;
    CUtensorMap map_x, map_y;
    err = make_map(&map_x, x, M, N, kRingRows, kRingCols);
    if (err == cudaSuccess) err = make_map(&map_y, y, M, N, kRingRows, kRingCols);
    if (err != cudaSuccess) return err;
    err = cudaFuncSetAttribute(tma_hopper_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kRingSmemBytes);
    if (err != cudaSuccess) return err;
    const int tiles_x = (N + kRingCols - 1) / kRingCols;
    const long long tiles = static_cast<long long>(tiles_x) * ((M + kRingRows - 1) / kRingRows);
    if (tiles > 0x7fffffffLL) return cudaErrorInvalidValue;   // tile indices are ints
    long long grid = (tiles + kRingMinTilesPerCta - 1) / kRingMinTilesPerCta;
    if (grid > static_cast<long long>(kRingCtasPerSm) * sms) grid = static_cast<long long>(kRingCtasPerSm) * sms;
    tma_hopper_kernel<<<static_cast<unsigned>(grid), dim3(kThreadsX, kThreadsY), kRingSmemBytes, stream>>>(
        map_x, map_y, tiles_x, static_cast<int>(tiles));
    return cudaGetLastError();
}

}  // namespace

// variant: 0 baseline, 1 tma_book_config, 2 tma_hopper. x and y: M x N fp32 row-major, 16-byte
// aligned, N % 4 == 0 (TMA row pitches are multiples of 16 bytes), 1 <= M <= 8,388,480 (the
// 128-row grid's y extent is at most 65535). Returns a cudaError_t as int.
extern "C" int aisp_tma_2d_pipeline(int variant, const float* x, float* y, int M, int N, cudaStream_t stream) {
    if (variant < 0 || variant >= kVariants || x == nullptr || y == nullptr || M < 1 || N < 1 || N % 4 != 0 ||
        (M + kTileM - 1) / kTileM > 65535)
        return cudaErrorInvalidValue;
    if ((reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y)) % 16 != 0) return cudaErrorMisalignedAddress;
    switch (variant) {
        case 0: {
            const dim3 grid((N + kBaseTileN - 1) / kBaseTileN, (M + kTileM - 1) / kTileM);
            baseline_kernel<<<grid, dim3(kThreadsX, kThreadsY), 0, stream>>>(x, y, M, N);
            return static_cast<int>(cudaGetLastError());
        }
        case 1: return static_cast<int>(launch_book(x, y, M, N, stream));
        case 2: return static_cast<int>(launch_hopper(x, y, M, N, stream));
        default: return cudaErrorInvalidValue;
    }
}

// cudaSuccess if this device runs TMA (compute capability 9.0+) and the driver exports
// cuTensorMapEncodeTiled; cudaErrorNotSupported if not; or the error that stopped the question.
extern "C" int aisp_tma_2d_pipeline_tma_support() {
    int device = 0, major = 0;
    cudaError_t err = cudaGetDevice(&device);
    if (err == cudaSuccess) err = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
    if (err != cudaSuccess) return static_cast<int>(err);
    return major >= 9 && encode_fn() != nullptr ? cudaSuccess : cudaErrorNotSupported;
}

extern "C" const char* aisp_tma_2d_pipeline_error_string(int code) {
    return cudaGetErrorString(static_cast<cudaError_t>(code));
}
