// C = sqrt(A^2 + B^2) over tiles of 64 x 64 fp32, by CTAs of 3 warps in a persistent tile loop
// (tile t goes to CTA t % grid), three ways:
//   0 serialized         one shared stage: warp 0 loads A and B (LDG.128 -> STS.128), warp 1
//                        computes C into shared memory, warp 2 stores C, three __syncthreads per
//                        tile: at any time one warp of the CTA works and two wait.
//   1 pingpong_flags     a 2-stage ring: warp 0 (producer) keeps the next tile loaded while
//                        warps 1 and 2 take the tiles in turn (each computes AND stores its
//                        own tiles, so warp 1 always uses stage 0 and warp 2 stage 1). The
//                        hand-off is the book's software protocol, a (state, tile) flag pair
//                        per stage polled with __nanosleep, made correct: lane 0 publishes
//                        with a block-scope release store after __syncwarp, every polling lane
//                        reads with a block-scope acquire load (cuda::atomic_ref).
//   2 pingpong_mbarrier  the same roles and ring on Hopper's hardware barriers: a `full` and an
//                        `empty` mbarrier per stage (32 arrivals each: every lane arrives for
//                        its own accesses); waits are mbarrier.try_wait.parity (the hardware
//                        suspends the warp), no flags, no fences, no nanosleep.
// Every variant moves data the same way (load_tile, compute_tile, store_tile below), so only
// the schedule and the hand-off differ. A short last tile (n not a multiple of 4096) takes a
// checked scalar path; A, B and C must be 16-byte aligned.
#include <cuda/atomic>
#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kTile = 64 * 64;                     // floats per tile
constexpr int kTileVec = kTile / 4;                // float4 per tile
constexpr int kLanes = 32;
constexpr int kThreads = 3 * kLanes;               // producer, consumer/compute, consumer/store
constexpr int kVecPerLane = kTileVec / kLanes;     // 32 float4 of A (and of B) per lane per tile
constexpr int kLoadBatch = 2;                      // float4 per operand per lane per batch
constexpr int kStages = 2;
constexpr int kVariants = 3;
constexpr int kMaxDevices = 64;
constexpr int kBlocksPerSm = 2;                    // the book's grid: 2 x SMs (capped at tiles)
constexpr size_t kStageBytes = 3 * kTile * sizeof(float);    // A, B and C: 48 KiB
constexpr size_t kSmemBytes[kVariants] = {kStageBytes, kStages * kStageBytes, kStages * kStageBytes};

static_assert(kTileVec % (kLanes * kLoadBatch) == 0, "a tile is a whole number of load batches");

// Floats of tile `tile` inside [0, n): kTile except for a short last tile.
__device__ __forceinline__ int tile_valid(int tile, long long n) {
    const long long rest = n - static_cast<long long>(tile) * kTile;
    return rest < kTile ? static_cast<int>(rest) : kTile;
}

// One warp copies tile `tile` of A and B into shared memory (LDG.128 -> registers -> STS.128).
// Software-pipelined batches of kLoadBatch float4 per operand per lane: the next batch's 4
// LDG.128 are issued before the previous batch's 4 STS.128 wait for their data, so a producer
// lane keeps 8 LDG.128 in flight, 8 x 16 B x 32 lanes = 4 KiB per warp. The depth is written
// out because ptxas picks it otherwise, from the registers live around the loop (nvcc 13.0):
// the book's plain loop got up to 5 LDG.128 ahead of their stores, a plain (not pipelined)
// batch of 2 + 2 got 4 in the serialized kernel but only 2 in the flags kernel, and one of
// 4 + 4 was cut back to 4: the variants would differ in their loads, not only in their
// hand-off. `unroll 1` keeps ptxas from hoisting further batches.
__device__ __forceinline__ void load_tile(const float* __restrict__ A, const float* __restrict__ B,
                                          float* __restrict__ sa, float* __restrict__ sb, int tile, long long n,
                                          int lane) {
    const long long base = static_cast<long long>(tile) * kTile;
    const int valid = tile_valid(tile, n);
    if (valid == kTile) {
        const float4* __restrict__ a4 = reinterpret_cast<const float4*>(A + base);
        const float4* __restrict__ b4 = reinterpret_cast<const float4*>(B + base);
        float4* __restrict__ sa4 = reinterpret_cast<float4*>(sa);
        float4* __restrict__ sb4 = reinterpret_cast<float4*>(sb);
        float4 va[kLoadBatch], vb[kLoadBatch];
#pragma unroll
        for (int j = 0; j < kLoadBatch; ++j) {
            va[j] = a4[lane + j * kLanes];
            vb[j] = b4[lane + j * kLanes];
        }
#pragma unroll 1
        for (int k0 = kLoadBatch; k0 < kVecPerLane; k0 += kLoadBatch) {
            float4 na[kLoadBatch], nb[kLoadBatch];
#pragma unroll
            for (int j = 0; j < kLoadBatch; ++j) {
                na[j] = a4[lane + (k0 + j) * kLanes];
                nb[j] = b4[lane + (k0 + j) * kLanes];
            }
#pragma unroll
            for (int j = 0; j < kLoadBatch; ++j) {
                sa4[lane + (k0 - kLoadBatch + j) * kLanes] = va[j];
                sb4[lane + (k0 - kLoadBatch + j) * kLanes] = vb[j];
                va[j] = na[j];
                vb[j] = nb[j];
            }
        }
#pragma unroll
        for (int j = 0; j < kLoadBatch; ++j) {
            sa4[lane + (kVecPerLane - kLoadBatch + j) * kLanes] = va[j];
            sb4[lane + (kVecPerLane - kLoadBatch + j) * kLanes] = vb[j];
        }
    } else {   // the short last tile: scalar, zero-filled past n
        for (int i = lane; i < kTile; i += kLanes) {
            sa[i] = i < valid ? A[base + i] : 0.0f;
            sb[i] = i < valid ? B[base + i] : 0.0f;
        }
    }
}

// One warp computes a whole tile in shared memory (the book's loop: scalar, conflict-free).
// sqrtf is correctly rounded (nvcc's default -prec-sqrt=true).
__device__ __forceinline__ void compute_tile(const float* __restrict__ sa, const float* __restrict__ sb,
                                             float* __restrict__ sc, int lane) {
#pragma unroll 4
    for (int i = lane; i < kTile; i += kLanes) {
        const float x = sa[i];
        const float y = sb[i];
        sc[i] = sqrtf(x * x + y * y);
    }
}

// One warp writes a tile of C from shared memory (STG.128; scalar for the short last tile).
__device__ __forceinline__ void store_tile(const float* __restrict__ sc, float* __restrict__ C, int tile, long long n,
                                           int lane) {
    const long long base = static_cast<long long>(tile) * kTile;
    const int valid = tile_valid(tile, n);
    if (valid == kTile) {
        const float4* __restrict__ sc4 = reinterpret_cast<const float4*>(sc);
        float4* __restrict__ c4 = reinterpret_cast<float4*>(C + base);
#pragma unroll 4
        for (int k = 0; k < kVecPerLane; ++k) c4[lane + k * kLanes] = sc4[lane + k * kLanes];
    } else {
        for (int i = lane; i < valid; i += kLanes) C[base + i] = sc[i];
    }
}

// Tiles of CTA `block`: block, block + grid, ... (< tiles).
__device__ __forceinline__ int tiles_of_block(int tiles) {
    return static_cast<int>(blockIdx.x) < tiles ? 1 + (tiles - 1 - static_cast<int>(blockIdx.x)) / gridDim.x : 0;
}

// 0: serialized. One stage; the three roles take turns, separated by block barriers.
__global__ void __launch_bounds__(kThreads) serialized_kernel(const float* __restrict__ A, const float* __restrict__ B,
                                                              float* __restrict__ C, long long n, int tiles) {
    extern __shared__ float4 smem4[];
    float* sa = reinterpret_cast<float*>(smem4);
    float* sb = sa + kTile;
    float* sc = sb + kTile;
    const int warp = threadIdx.x / kLanes;
    const int lane = threadIdx.x % kLanes;
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        if (warp == 0) load_tile(A, B, sa, sb, tile, n, lane);
        __syncthreads();                    // A and B are in shared memory
        if (warp == 1) compute_tile(sa, sb, sc, lane);
        __syncthreads();                    // C is in shared memory; A and B are free
        if (warp == 2) store_tile(sc, C, tile, n, lane);
        __syncthreads();                    // C is free for the next tile
    }
}

// --- 1: the book's software flags, with block-scope acquire/release --------------------------

enum StageState : int { kEmpty = 0, kLoaded = 1, kComputed = 2 };

using BlockFlag = cuda::atomic_ref<int, cuda::thread_scope_block>;

struct StageFlags {
    int state[kStages];   // kEmpty / kLoaded / kComputed
    int tile[kStages];    // the tile the stage holds, -1 when empty
};

// Every lane polls: the acquire load of `state` orders this lane's later reads (and writes) of
// the stage after the publisher's writes; `tile` is written before the release of `state`, so
// a relaxed read after the acquire sees the matching tile.
__device__ __forceinline__ void wait_stage(StageFlags& f, int stage, int tile, int state) {
    while (BlockFlag(f.state[stage]).load(cuda::memory_order_acquire) != state ||
           BlockFlag(f.tile[stage]).load(cuda::memory_order_relaxed) != tile) {
        __nanosleep(64);
    }
}

// __syncwarp orders the other lanes' shared-memory accesses before lane 0's release store
// (release is cumulative over what happens before it); the book had a plain volatile store
// after __threadfence_block here, which is the release half only.
__device__ __forceinline__ void publish_stage(StageFlags& f, int stage, int tile, int state, int lane) {
    __syncwarp();
    if (lane == 0) {
        BlockFlag(f.tile[stage]).store(tile, cuda::memory_order_relaxed);
        BlockFlag(f.state[stage]).store(state, cuda::memory_order_release);
    }
    __syncwarp();
}

__global__ void __launch_bounds__(kThreads) pingpong_flags_kernel(const float* __restrict__ A,
                                                                  const float* __restrict__ B,
                                                                  float* __restrict__ C, long long n, int tiles) {
    extern __shared__ float4 smem4[];
    float* a_stages = reinterpret_cast<float*>(smem4);
    float* b_stages = a_stages + kStages * kTile;
    float* c_stages = b_stages + kStages * kTile;
    __shared__ StageFlags flags;
    const int warp = threadIdx.x / kLanes;
    const int lane = threadIdx.x % kLanes;
    if (threadIdx.x < kStages) {
        flags.state[threadIdx.x] = kEmpty;
        flags.tile[threadIdx.x] = -1;
    }
    __syncthreads();                        // the only block barrier

    const int count = tiles_of_block(tiles);
    const auto tile_at = [&](int it) { return static_cast<int>(blockIdx.x + it * gridDim.x); };
    if (warp == 0) {                        // prologue: fill both stages
        for (int it = 0; it < kStages && it < count; ++it) {
            load_tile(A, B, a_stages + it * kTile, b_stages + it * kTile, tile_at(it), n, lane);
            publish_stage(flags, it, tile_at(it), kLoaded, lane);
        }
    }
    for (int it = 0; it < count; ++it) {
        const int stage = it % kStages;
        const int prev = stage ^ 1;
        const bool warp1_computes = stage == 0;
        if (warp == (warp1_computes ? 1 : 2)) {          // compute tile `it`
            wait_stage(flags, stage, tile_at(it), kLoaded);
            compute_tile(a_stages + stage * kTile, b_stages + stage * kTile, c_stages + stage * kTile, lane);
            publish_stage(flags, stage, tile_at(it), kComputed, lane);
        }
        if (it > 0 && warp == (warp1_computes ? 2 : 1)) {   // store tile it - 1 (this warp computed it)
            wait_stage(flags, prev, tile_at(it - 1), kComputed);
            store_tile(c_stages + prev * kTile, C, tile_at(it - 1), n, lane);
            publish_stage(flags, prev, -1, kEmpty, lane);
        }
        if (warp == 0 && it > 0 && it + 1 < count) {        // refill the stage tile it - 1 freed
            wait_stage(flags, prev, -1, kEmpty);
            load_tile(A, B, a_stages + prev * kTile, b_stages + prev * kTile, tile_at(it + 1), n, lane);
            publish_stage(flags, prev, tile_at(it + 1), kLoaded, lane);
        }
    }
    if (count > 0) {                        // the last tile: stored by the warp that computed it
        const int last = count - 1;
        const int stage = last % kStages;
        if (warp == (stage == 0 ? 1 : 2)) {
            wait_stage(flags, stage, tile_at(last), kComputed);
            store_tile(c_stages + stage * kTile, C, tile_at(last), n, lane);
            publish_stage(flags, stage, -1, kEmpty, lane);
        }
    }
}

// --- 2: the same roles on mbarriers ----------------------------------------------------------

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count) : "memory");
}

// Release at CTA scope (mbarrier.arrive's default): this thread's earlier accesses to the stage
// are ordered before the phase completes.
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(bar)) : "memory");
}

// Acquire at CTA scope: returns once the phase of parity `parity` has completed. try_wait
// suspends the thread in hardware for a while before it answers false, so no sleep is needed.
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
    uint32_t done = 0;
    do {
        asm volatile(
            "{\n"
            ".reg .pred p;\n"
            "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
            "selp.u32 %0, 1, 0, p;\n"
            "}\n"
            : "=r"(done)
            : "r"(smem_u32(bar)), "r"(parity)
            : "memory");
    } while (!done);
}

__global__ void __launch_bounds__(kThreads) pingpong_mbarrier_kernel(const float* __restrict__ A,
                                                                     const float* __restrict__ B,
                                                                     float* __restrict__ C, long long n, int tiles) {
    extern __shared__ float4 smem4[];
    float* a_stages = reinterpret_cast<float*>(smem4);
    float* b_stages = a_stages + kStages * kTile;
    float* c_stages = b_stages + kStages * kTile;
    __shared__ __align__(8) uint64_t full[kStages];    // the producer's 32 lanes loaded the stage
    __shared__ __align__(8) uint64_t empty[kStages];   // the consumer's 32 lanes stored its tile
    const int warp = threadIdx.x / kLanes;
    const int lane = threadIdx.x % kLanes;
    if (threadIdx.x == 0) {
        for (int s = 0; s < kStages; ++s) {
            mbar_init(&full[s], kLanes);
            mbar_init(&empty[s], kLanes);
        }
    }
    __syncthreads();                        // the barriers are initialized (the only block barrier)

    const int count = tiles_of_block(tiles);
    if (warp == 0) {                        // producer: tile it into stage it % 2, use it / 2
        for (int it = 0; it < count; ++it) {
            const int stage = it % kStages;
            const uint32_t use = static_cast<uint32_t>(it / kStages);
            mbar_wait(&empty[stage], (use & 1) ^ 1);  // use 0: a fresh barrier's previous phase counts as done
            load_tile(A, B, a_stages + stage * kTile, b_stages + stage * kTile,
                      static_cast<int>(blockIdx.x + it * gridDim.x), n, lane);
            mbar_arrive(&full[stage]);
        }
    } else {                                // consumer w (1 or 2): tiles w-1, w+1, ... all in stage w-1
        const int stage = warp - 1;
        float* sc = c_stages + stage * kTile;          // only this warp touches it: no barrier for C
        for (int it = stage; it < count; it += kStages) {
            const uint32_t use = static_cast<uint32_t>(it / kStages);
            const int tile = static_cast<int>(blockIdx.x + it * gridDim.x);
            mbar_wait(&full[stage], use & 1);
            compute_tile(a_stages + stage * kTile, b_stages + stage * kTile, sc, lane);
            __syncwarp();                   // the book's COMPUTED flag: a hand-off within this warp
            store_tile(sc, C, tile, n, lane);
            mbar_arrive(&empty[stage]);     // the book frees the stage here too, after the store
            __syncwarp();                   // every lane has read C before the next compute rewrites it
        }
    }
}

using Kernel = void (*)(const float*, const float*, float*, long long, int);
constexpr Kernel kKernels[kVariants] = {serialized_kernel, pingpong_flags_kernel, pingpong_mbarrier_kernel};

// Per device: SM count, the opt-in shared memory limit, and whether each kernel's dynamic
// shared memory limit has been raised to what it needs (96 KiB is above the default 48 KiB).
struct DeviceInfo {
    bool known;
    int sm_count;
    int smem_optin;
    bool configured[kVariants];
};

cudaError_t device_info(DeviceInfo** out) {
    static DeviceInfo cache[kMaxDevices] = {};
    int device = 0;
    cudaError_t err = cudaGetDevice(&device);
    if (err != cudaSuccess) return err;
    if (device < 0 || device >= kMaxDevices) return cudaErrorInvalidDevice;
    DeviceInfo& info = cache[device];
    if (!info.known) {
        err = cudaDeviceGetAttribute(&info.sm_count, cudaDevAttrMultiProcessorCount, device);
        if (err != cudaSuccess) return err;
        err = cudaDeviceGetAttribute(&info.smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
        if (err != cudaSuccess) return err;
        info.known = true;
    }
    *out = &info;
    return cudaSuccess;
}

// The device info with `variant`'s dynamic shared memory limit set (once per device).
cudaError_t configure(int variant, DeviceInfo** out) {
    cudaError_t err = device_info(out);
    if (err != cudaSuccess) return err;
    DeviceInfo& info = **out;
    if (!info.configured[variant]) {
        if (kSmemBytes[variant] > static_cast<size_t>(info.smem_optin)) return cudaErrorNotSupported;
        err = cudaFuncSetAttribute(kKernels[variant], cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   static_cast<int>(kSmemBytes[variant]));
        if (err != cudaSuccess) return err;
        info.configured[variant] = true;
    }
    return cudaSuccess;
}

long long tile_count(long long n) { return (n + kTile - 1) / kTile; }

// The grid: min(tiles, `grid`), or min(tiles, 2 x SMs) (the book's) when `grid` is 0.
unsigned grid_for(long long n, int grid, const DeviceInfo& info) {
    const long long want = grid > 0 ? grid : static_cast<long long>(kBlocksPerSm) * info.sm_count;
    const long long tiles = tile_count(n);
    return static_cast<unsigned>(tiles < want ? tiles : want);
}

bool valid_args(int variant, long long n, int grid) {
    return variant >= 0 && variant < kVariants && n >= 1 && tile_count(n) < (1LL << 31) && grid >= 0;
}

}  // namespace

// C[i] = sqrt(A[i]^2 + B[i]^2) for i < n. variant: 0 serialized (the book's baseline),
// 1 pingpong_flags, 2 pingpong_mbarrier. grid: CTAs of the persistent loop, 0 for 2 x SMs (the
// book's); always capped at the tile count. A, B, C: 16-byte aligned, C not overlapping A or B.
// Returns a cudaError_t as int (cudaErrorNotSupported when the device's opt-in shared memory per
// block is below the variant's 48 or 96 KiB).
extern "C" int aisp_warp_spec_pingpong(int variant, const float* A, const float* B, float* C, long long n, int grid,
                                       cudaStream_t stream) {
    if (!valid_args(variant, n, grid) || A == nullptr || B == nullptr || C == nullptr) return cudaErrorInvalidValue;
    if ((reinterpret_cast<std::uintptr_t>(A) | reinterpret_cast<std::uintptr_t>(B) |
         reinterpret_cast<std::uintptr_t>(C)) % 16 != 0)
        return cudaErrorMisalignedAddress;
    DeviceInfo* info = nullptr;
    cudaError_t err = configure(variant, &info);
    if (err != cudaSuccess) return static_cast<int>(err);
    kKernels[variant]<<<grid_for(n, grid, *info), kThreads, kSmemBytes[variant], stream>>>(
        A, B, C, n, static_cast<int>(tile_count(n)));
    return static_cast<int>(cudaGetLastError());
}

// cudaSuccess if the current device gives a block the ring variants' 96 KiB of dynamic shared
// memory (plus their static flags/barriers), cudaErrorNotSupported if not, or the error that
// stopped the question.
extern "C" int aisp_warp_spec_pingpong_smem_support() {
    DeviceInfo* info = nullptr;
    const cudaError_t err = device_info(&info);
    if (err != cudaSuccess) return static_cast<int>(err);
    return kSmemBytes[1] + 64 <= static_cast<size_t>(info->smem_optin) ? cudaSuccess : cudaErrorNotSupported;
}

// out[0..6] = grid, max_blocks_per_sm (occupancy at the variant's shared memory), sm_count,
// dynamic_smem_bytes, static_smem_bytes, registers, local_bytes, for `variant` at n and grid.
extern "C" int aisp_warp_spec_pingpong_info(int variant, long long n, int grid, int* out) {
    if (!valid_args(variant, n, grid) || out == nullptr) return cudaErrorInvalidValue;
    DeviceInfo* info = nullptr;
    cudaError_t err = configure(variant, &info);
    if (err != cudaSuccess) return static_cast<int>(err);
    cudaFuncAttributes attr{};
    err = cudaFuncGetAttributes(&attr, kKernels[variant]);
    if (err != cudaSuccess) return static_cast<int>(err);
    int blocks = 0;
    err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kKernels[variant], kThreads, kSmemBytes[variant]);
    if (err != cudaSuccess) return static_cast<int>(err);
    out[0] = static_cast<int>(grid_for(n, grid, *info));
    out[1] = blocks;
    out[2] = info->sm_count;
    out[3] = static_cast<int>(kSmemBytes[variant]);
    out[4] = static_cast<int>(attr.sharedSizeBytes);
    out[5] = attr.numRegs;
    out[6] = static_cast<int>(attr.localSizeBytes);
    return cudaSuccess;
}

extern "C" const char* aisp_warp_spec_pingpong_error_string(int code) {
    return cudaGetErrorString(static_cast<cudaError_t>(code));
}
