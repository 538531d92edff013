// A TMA-store epilogue's building blocks for the hand-written sm_90a GEMMs: the 2-D bulk tensor
// store from shared memory, its bulk-group commit and waits, the proxy fence that makes the
// threads' shared-memory writes visible to TMA, and a named barrier for one warpgroup. Include it
// after kernels/common/wgmma_tma.cuh (#include "../common/tma_store.cuh").
//
// Why a TMA store: storing C from registers (st.global) keeps the math warps busy until the LSU
// has taken every byte; when all SMs finish a tile at the same time (a persistent GEMM's tiles
// run in lockstep waves) those stores meet in one burst and the tensor pipe idles through it.
// Writing the tile to shared memory is a few hundred cycles; the TMA unit then drains it to
// global memory while the warps already multiply the next tile.
#pragma once

#include <cstdint>

#include "wgmma_tma.cuh"

namespace wgmma_tma __attribute__((visibility("hidden"))) {

// Store the box at (inner coordinate x, outer coordinate y) of the tensor `map` from shared
// memory `src` (laid out as the map's swizzle says). Parts of the box outside the tensor are not
// written. Asynchronous: joins the thread's current bulk group (bulk_commit closes it).
__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, const void* src, int x, int y) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];"
                 ::"l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(src)), "r"(x), "r"(y)
                 : "memory");
}

__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }

// Wait until at most N of this thread's bulk groups still read their shared-memory source (the
// buffer may be rewritten); the global writes may still be in flight.
template <int N>
__device__ __forceinline__ void bulk_wait_read() {
    asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}

// Wait until at most N of this thread's bulk groups are incomplete (their writes done).
template <int N>
__device__ __forceinline__ void bulk_wait() {
    asm volatile("cp.async.bulk.wait_group %0;" ::"n"(N) : "memory");
}

// Order this thread's generic-proxy shared-memory writes before later async-proxy (TMA) reads.
__device__ __forceinline__ void fence_proxy_async_smem() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

// Barrier `id` (1..15; 0 is __syncthreads) over `threads` threads (a multiple of 32).
__device__ __forceinline__ void named_barrier(int id, int threads) {
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

}  // namespace wgmma_tma
