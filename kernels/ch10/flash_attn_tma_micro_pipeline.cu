// A toy "micro attention" (not softmax attention, not flash attention): for every query row i,
//   o[i, :] = sum_j w_ij v[j, :],   w_ij = __expf(clamp(q[i, :] . k[j, :], -10, 10)) * 1e-3f
// (no max subtraction, no normalization), q, k, v, o fp32 [seq, 64] row-major. K and V are
// walked in tiles of 32 rows x 64. Four kernels:
//   0 baseline               the book's baseline: one query row per 128-thread block; blocking
//                            tile loads (thread r < 32 copies row r of K and of V with scalar
//                            loads), then per key row the book's block-wide step: q . k
//                            reduced through shared memory by a tree with four __syncthreads,
//                            thread 0 turns it into the weight, the 64 owners of a dimension add
//                            w * v.
//   1 tma_ring3              the book's optimized: the same per-key-row step, the tiles arriving
//                            by TMA (cp.async.bulk.tensor.2d) in a 3-stage ring, each stage's
//                            mbarrier armed with expect_tx; the tile 3 ahead is issued into a
//                            stage right after the stage's tile is consumed.
//   2 tma_ring3_warp_reduce  NEW: the same ring and one query row per block, but no block
//                            barrier per key row: warp w takes key rows w, w + 4, ... of each
//                            tile and reduces q . k with 5 shuffles; the four warps' partial o
//                            are added once at the end. One __syncthreads per tile.
//   3 tma_ring3_rows8        NEW: the same ring and warp reductions, 8 query rows per block (2
//                            per warp, each warp walking every key row), so every K/V tile
//                            fetched from L2 serves 8 query rows instead of 1.
// Ragged seq: TMA zero-fills the rows of the last box beyond seq (and still counts the whole
// box's bytes), and every kernel skips those rows; query rows beyond seq are neither read nor
// written. The CUtensorMaps are encoded on the host through cuTensorMapEncodeTiled, fetched with
// cudaGetDriverEntryPointByVersion (no -lcuda), and passed as __grid_constant__ parameters.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include <cstdint>

namespace {

constexpr int kD = 64;                                   // head dimension (the only one supported)
constexpr int kTileRows = 32;                            // key/value rows per tile (TMA box height)
constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kStages = 3;
constexpr int kTileFloats = kTileRows * kD;              // 2048
constexpr int kTileBytes = kTileFloats * 4;              // 8 KiB
constexpr int kRingBytes = kStages * 2 * kTileBytes;     // 48 KiB of K and V stages
constexpr int kRingSmemBytes = kRingBytes + 128;         // + room to align the ring to 128 bytes for TMA
constexpr int kVariants = 4;
constexpr int kMaxSeq = 1 << 24;
constexpr float kClamp = 10.0f;
constexpr float kScale = 1e-3f;

// ---------------------------------------------------------------------------------------------
// PTX wrappers (the mbarrier + TMA subset kernels/ch09/tma_wgmma_pipeline.cu uses).

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count) : "memory");
}

__device__ __forceinline__ void mbar_init_fence() {
    // make the initialized barriers visible to the async proxy (TMA) before anyone uses them
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)), "r"(bytes)
                 : "memory");
}

// Spin until the phase with parity `parity` of the barrier has completed.
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

// 2-D TMA load of the box at (inner coordinate x, outer coordinate y) into shared memory, counted
// against the barrier's transaction bytes.
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, uint64_t* bar, int x, int y) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];"
        ::"r"(smem_u32(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)), "r"(x), "r"(y)
        : "memory");
}

// TMA writes shared memory at 128-byte aligned addresses; dynamic shared memory is only
// guaranteed 16-byte alignment, so the ring starts at the next 128-byte boundary.
// The pointer stays ring_smem + offset (not a cast integer) so the compiler keeps shared loads.
__device__ __forceinline__ float* align_128(float* ring_smem) {
    const uint32_t base = smem_u32(ring_smem);
    return ring_smem + (((base + 127u) & ~127u) - base) / sizeof(float);
}

// ---------------------------------------------------------------------------------------------
// The TMA ring shared by variants 1-3: stage s holds K's tile then V's tile (2 x 8 KiB), its
// `full` barrier counts one arrival (thread 0's expect_tx) plus the 16 KiB of both loads.

struct Ring {
    float* stages;      // kRingBytes of dynamic shared memory, 128-byte aligned
    uint64_t* full;     // kStages mbarriers
    const CUtensorMap* k_map;
    const CUtensorMap* v_map;

    __device__ __forceinline__ const float* k_tile(int s) const { return stages + s * 2 * kTileFloats; }
    __device__ __forceinline__ const float* v_tile(int s) const { return stages + (s * 2 + 1) * kTileFloats; }

    // Thread 0 only: arm stage tile % kStages for tile `tile` and start both loads.
    __device__ __forceinline__ void issue(int tile) const {
        const int s = tile % kStages;
        mbar_arrive_expect_tx(&full[s], 2 * kTileBytes);
        tma_load_2d(stages + s * 2 * kTileFloats, k_map, &full[s], 0, tile * kTileRows);
        tma_load_2d(stages + (s * 2 + 1) * kTileFloats, v_map, &full[s], 0, tile * kTileRows);
    }

    // Barriers initialized (thread 0), visible to all threads and to TMA, first stages issued.
    __device__ __forceinline__ void start(int tiles) const {
        if (threadIdx.x == 0) {
            for (int s = 0; s < kStages; ++s) mbar_init(&full[s], 1);
            mbar_init_fence();
        }
        __syncthreads();
        if (threadIdx.x == 0)
            for (int t = 0; t < kStages && t < tiles; ++t) issue(t);
    }

    // Every thread: wait until tile `tile` has landed in its stage.
    __device__ __forceinline__ void wait(int tile) const {
        mbar_wait(&full[tile % kStages], static_cast<uint32_t>((tile / kStages) & 1));
    }
};

// ---------------------------------------------------------------------------------------------
// The book's per-key-row step (variants 0 and 1): thread t < 64 owns dimension t of q and o;
// threads 64-127 contribute zeros. `red` is kThreads floats of shared memory. Ends with a
// __syncthreads, so the tile may be overwritten as soon as this returns.

__device__ __forceinline__ void block_step_tile(const float* __restrict__ sk, const float* __restrict__ sv, int rows,
                                                float q, float& o, float* __restrict__ red) {
    const int t = threadIdx.x;
    const bool owner = t < kD;
    for (int r = 0; r < rows; ++r) {
        float partial = 0.0f;
        if (owner) partial = q * sk[r * kD + t];
        red[t] = partial;
        __syncthreads();
        if (t < 64) red[t] += red[t + 64];
        __syncthreads();
        if (t < 32) red[t] += red[t + 32];
        __syncwarp();
        if (t < 16) red[t] += red[t + 16];
        __syncwarp();
        if (t < 8) red[t] += red[t + 8];
        __syncwarp();
        if (t < 4) red[t] += red[t + 4];
        __syncwarp();
        if (t < 2) red[t] += red[t + 2];
        __syncwarp();
        if (t == 0) {
            const float s = fminf(fmaxf(red[0] + red[1], -kClamp), kClamp);
            red[0] = __expf(s) * kScale;
        }
        __syncthreads();
        const float w = red[0];
        if (owner) o += w * sv[r * kD + t];
        __syncthreads();   // red[0] read by all and the tile row consumed before anything is rewritten
    }
}

// 0: blocking loads, one query row per block.
__global__ void __launch_bounds__(kThreads) blocking_kernel(const float* __restrict__ q, const float* __restrict__ k,
                                                            const float* __restrict__ v, float* __restrict__ o,
                                                            int seq) {
    __shared__ float sk[kTileFloats];
    __shared__ float sv[kTileFloats];
    __shared__ float red[kThreads];
    const int t = threadIdx.x;
    const size_t row = blockIdx.x;
    const float qd = t < kD ? q[row * kD + t] : 0.0f;
    float od = 0.0f;
    const int tiles = (seq + kTileRows - 1) / kTileRows;
    for (int tile = 0; tile < tiles; ++tile) {
        const int base = tile * kTileRows;
        const int rows = min(kTileRows, seq - base);
        if (t < rows) {   // the book's copy: one thread per row, 64 scalar loads from each matrix
            const float* __restrict__ k_row = k + static_cast<size_t>(base + t) * kD;
            const float* __restrict__ v_row = v + static_cast<size_t>(base + t) * kD;
#pragma unroll 4
            for (int d = 0; d < kD; ++d) {
                sk[t * kD + d] = k_row[d];
                sv[t * kD + d] = v_row[d];
            }
        }
        __syncthreads();
        block_step_tile(sk, sv, rows, qd, od, red);
    }
    if (t < kD) o[row * kD + t] = od;
}

// 1: the same step over a 3-stage TMA ring, one query row per block.
__global__ void __launch_bounds__(kThreads) tma_ring3_kernel(const __grid_constant__ CUtensorMap k_map,
                                                             const __grid_constant__ CUtensorMap v_map,
                                                             const float* __restrict__ q, float* __restrict__ o,
                                                             int seq) {
    extern __shared__ float ring_smem[];
    __shared__ __align__(8) uint64_t full[kStages];
    __shared__ float red[kThreads];
    const Ring ring{align_128(ring_smem), full, &k_map, &v_map};
    const int t = threadIdx.x;
    const size_t row = blockIdx.x;
    const int tiles = (seq + kTileRows - 1) / kTileRows;
    ring.start(tiles);
    const float qd = t < kD ? q[row * kD + t] : 0.0f;
    float od = 0.0f;
    for (int tile = 0; tile < tiles; ++tile) {
        ring.wait(tile);
        const int s = tile % kStages;
        block_step_tile(ring.k_tile(s), ring.v_tile(s), min(kTileRows, seq - tile * kTileRows), qd, od, red);
        // every thread is past its last read of stage s (the step ends with __syncthreads)
        if (t == 0 && tile + kStages < tiles) ring.issue(tile + kStages);
    }
    if (t < kD) o[row * kD + t] = od;
}

// ---------------------------------------------------------------------------------------------
// 2 and 3: warp reductions. kKeySplit warps share a query row (warp w takes the key rows r with
// r % kKeySplit == w % kKeySplit); each warp holds kRowsPerWarp query rows, lane l owning
// dimensions 2l and 2l + 1 (one float2 of q and of o per row).

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;   // the same value in every lane (a + b == b + a in IEEE arithmetic)
}

template <int kRowsPerWarp, int kKeySplit>
__global__ void __launch_bounds__(kThreads) tma_ring3_warp_kernel(const __grid_constant__ CUtensorMap k_map,
                                                                  const __grid_constant__ CUtensorMap v_map,
                                                                  const float* __restrict__ q, float* __restrict__ o,
                                                                  int seq) {
    static_assert(kWarps % kKeySplit == 0 && kTileRows % kKeySplit == 0, "warps and tile rows split evenly");
    static_assert(kKeySplit == 1 || kRowsPerWarp == 1, "a split query row is one row per warp");
    constexpr int kRowsPerBlock = kWarps / kKeySplit * kRowsPerWarp;
    extern __shared__ float ring_smem[];
    __shared__ __align__(8) uint64_t full[kStages];
    __shared__ float2 partial[kKeySplit > 1 ? kWarps : 1][32];
    const Ring ring{align_128(ring_smem), full, &k_map, &v_map};
    const int lane = threadIdx.x % 32;
    const int warp = threadIdx.x / 32;
    const int slice = warp % kKeySplit;
    const long long first_row = static_cast<long long>(blockIdx.x) * kRowsPerBlock + warp / kKeySplit * kRowsPerWarp;
    const int tiles = (seq + kTileRows - 1) / kTileRows;
    ring.start(tiles);

    const float2* __restrict__ q2 = reinterpret_cast<const float2*>(q);
    float2 qv[kRowsPerWarp], ov[kRowsPerWarp];
#pragma unroll
    for (int i = 0; i < kRowsPerWarp; ++i) {
        qv[i] = first_row + i < seq ? q2[(first_row + i) * (kD / 2) + lane] : make_float2(0.0f, 0.0f);
        ov[i] = make_float2(0.0f, 0.0f);
    }
    for (int tile = 0; tile < tiles; ++tile) {
        ring.wait(tile);
        const int s = tile % kStages;
        const float2* __restrict__ sk = reinterpret_cast<const float2*>(ring.k_tile(s));
        const float2* __restrict__ sv = reinterpret_cast<const float2*>(ring.v_tile(s));
        // No row guard: the rows of a last box past seq are TMA's zero fill, and a zero row of V
        // adds w * 0 = 0 to o exactly (a guard the compiler cannot prove warp-uniform would turn
        // every shuffle into a WARPSYNC.COLLECTIVE sequence).
#pragma unroll
        for (int j = 0; j < kTileRows / kKeySplit; ++j) {
            const int r = j * kKeySplit + slice;
            const float2 kk = sk[r * (kD / 2) + lane];
            const float2 vv = sv[r * (kD / 2) + lane];
#pragma unroll
            for (int i = 0; i < kRowsPerWarp; ++i) {
                const float dot = warp_sum(qv[i].x * kk.x + qv[i].y * kk.y);
                const float w = __expf(fminf(fmaxf(dot, -kClamp), kClamp)) * kScale;
                ov[i].x += w * vv.x;
                ov[i].y += w * vv.y;
            }
        }
        __syncthreads();   // every warp is done with stage s
        if (threadIdx.x == 0 && tile + kStages < tiles) ring.issue(tile + kStages);
    }

    float2* __restrict__ o2 = reinterpret_cast<float2*>(o);
    if constexpr (kKeySplit > 1) {
        partial[warp][lane] = ov[0];
        __syncthreads();
        if (slice == 0 && first_row < seq) {
            float2 sum = partial[warp][lane];
#pragma unroll
            for (int w = 1; w < kKeySplit; ++w) {
                sum.x += partial[warp + w][lane].x;
                sum.y += partial[warp + w][lane].y;
            }
            o2[first_row * (kD / 2) + lane] = sum;
        }
    } else {
#pragma unroll
        for (int i = 0; i < kRowsPerWarp; ++i)
            if (first_row + i < seq) o2[(first_row + i) * (kD / 2) + lane] = ov[i];
    }
}

constexpr int kWarpReduceSplit = 4;    // variant 2: 1 query row per block, 4 warps share it
constexpr int kRows8PerWarp = 2;       // variant 3: 2 query rows per warp, 8 per block

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

// A seq x 64 fp32 row-major matrix read in 32 x 64 boxes, no swizzle, out-of-range rows zero-filled.
cudaError_t make_map(CUtensorMap* map, const float* base, int seq) {
    const PFN_cuTensorMapEncodeTiled_v12000 encode = encode_fn();
    if (!encode) return cudaErrorNotSupported;
    const cuuint64_t dims[2] = {kD, static_cast<cuuint64_t>(seq)};
    const cuuint64_t strides[1] = {kD * sizeof(float)};   // bytes between rows
    const cuuint32_t box[2] = {kD, kTileRows};
    const cuuint32_t element_strides[2] = {1, 1};
    const CUresult res = encode(map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, const_cast<float*>(base), dims, strides, box,
                                element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                                CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return res == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}

template <typename Kernel>
cudaError_t launch_tma(Kernel kernel, unsigned grid, const float* q, const float* k, const float* v, float* o,
                       int seq, cudaStream_t stream) {
    CUtensorMap k_map, v_map;
    cudaError_t err = make_map(&k_map, k, seq);
    if (err != cudaSuccess) return err;
    err = make_map(&v_map, v, seq);
    if (err != cudaSuccess) return err;
    // the 48 KiB ring (+ alignment) exceeds the default 48 KiB of shared memory per block: opt in
    err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kRingSmemBytes);
    if (err != cudaSuccess) return err;
    kernel<<<grid, kThreads, kRingSmemBytes, stream>>>(k_map, v_map, q, o, seq);
    return cudaGetLastError();
}

}  // namespace

// variant: 0 baseline, 1 tma_ring3, 2 tma_ring3_warp_reduce, 3 tma_ring3_rows8. q, k, v, o: seq x 64
// fp32 row-major, 16-byte aligned, 1 <= seq <= 2^24. Returns a cudaError_t as int:
// cudaErrorNotSupported for the TMA variants when the driver has no cuTensorMapEncodeTiled.
extern "C" int aisp_micro_attention(int variant, const float* q, const float* k, const float* v, float* o, int seq,
                                    cudaStream_t stream) {
    if (variant < 0 || variant >= kVariants || !q || !k || !v || !o || seq < 1 || seq > kMaxSeq)
        return cudaErrorInvalidValue;
    if ((reinterpret_cast<std::uintptr_t>(q) | reinterpret_cast<std::uintptr_t>(k) |
         reinterpret_cast<std::uintptr_t>(v) | reinterpret_cast<std::uintptr_t>(o)) % 16 != 0)
        return cudaErrorMisalignedAddress;
    const unsigned rows = static_cast<unsigned>(seq);
    switch (variant) {
        case 0:
            blocking_kernel<<<rows, kThreads, 0, stream>>>(q, k, v, o, seq);
            return static_cast<int>(cudaGetLastError());
        case 1: return static_cast<int>(launch_tma(tma_ring3_kernel, rows, q, k, v, o, seq, stream));
        case 2:
            return static_cast<int>(
                launch_tma(tma_ring3_warp_kernel<1, kWarpReduceSplit>, rows, q, k, v, o, seq, stream));
        case 3: {
            constexpr unsigned per_block = kWarps * kRows8PerWarp;
            return static_cast<int>(launch_tma(tma_ring3_warp_kernel<kRows8PerWarp, 1>,
                                               (rows + per_block - 1) / per_block, q, k, v, o, seq, stream));
        }
        default: return cudaErrorInvalidValue;
    }
}

// cudaSuccess if the current device can run the TMA variants (compute capability 9.0 or newer and
// a driver that hands out cuTensorMapEncodeTiled), cudaErrorNotSupported if not, or the error
// that stopped the question.
extern "C" int aisp_micro_attention_tma_support() {
    int device = 0, major = 0;
    cudaError_t err = cudaGetDevice(&device);
    if (err != cudaSuccess) return static_cast<int>(err);
    err = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
    if (err != cudaSuccess) return static_cast<int>(err);
    return major >= 9 && encode_fn() != nullptr ? cudaSuccess : cudaErrorNotSupported;
}

extern "C" const char* aisp_micro_attention_error_string(int code) {
    return cudaGetErrorString(static_cast<cudaError_t>(code));
}
