// Thread-block-cluster building blocks for the hand-written sm_90a GEMMs: a TMA load multicast to
// several CTAs of the cluster, an mbarrier arrive on a peer CTA's barrier, the CTA's rank in its
// cluster, and the cluster-wide barrier. What kernels/common/wgmma_tma.cuh lacks; include it after
// that header (#include "../common/cluster_tma.cuh").
//
// kernels/ch10/cluster_pipeline.cu and cluster_multicast.cu keep their own copies of these
// wrappers (their recorded evidence is tied to their source digests); new code includes this file.
#pragma once

#include <cstdint>

#include "wgmma_tma.cuh"

namespace wgmma_tma __attribute__((visibility("hidden"))) {

// The 2-D TMA load of tma_load_2d, written to the same shared-memory offset in every CTA of the
// cluster named in cta_mask, each completing the transaction bytes on its own barrier at the
// same offset. A peer's bytes may reach a barrier before its own CTA armed it for that phase:
// the tx-count goes negative and the phase still waits for the local arrive.
__device__ __forceinline__ void tma_load_2d_multicast(void* dst, const CUtensorMap* map, uint64_t* bar, int x, int y,
                                                      uint16_t cta_mask) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
        " [%0], [%1, {%3, %4}], [%2], %5;"
        ::"r"(smem_u32(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)), "r"(x), "r"(y), "h"(cta_mask)
        : "memory");
}

// Arrive on the barrier at the same offset in CTA `rank` of the cluster (mapa translates this
// CTA's shared address into that CTA's window). Default semantics, release at CTA scope, as
// CUTLASS's sm90 ClusterBarrier::arrive(cta_id): what a consumer releases is reads its
// wait_group already retired, and what waits on it is a TMA write; .release.cluster would put a
// MEMBAR.ALL.GPU before every arrive for no access that needs it.
__device__ __forceinline__ void mbar_arrive_cluster(uint64_t* bar, uint32_t rank) {
    uint32_t remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(smem_u32(bar)), "r"(rank));
    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(remote) : "memory");
}

__device__ __forceinline__ uint32_t cluster_ctarank() {
    uint32_t v;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(v));
    return v;
}

// Every thread of every CTA in the cluster arrives, then waits (release/acquire at cluster scope).
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

}  // namespace wgmma_tma
