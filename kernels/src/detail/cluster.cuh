// Thread-block cluster primitives of the split-row kernels (Hopper, sm_90): the CTAs of one cluster plan one row
// together and exchange partial results through distributed shared memory (DSMEM).
//
// Protocol every split-row kernel follows (what makes DSMEM accesses safe):
// - ClusterArriveRelaxed() at kernel entry and ClusterWait() before the first remote access: no CTA writes into a
//   peer that has not started.
// - Results are pushed (remote stores into every peer's own slot) before a ClusterSync(), then read locally; a
//   remote read (the histogram merge) is always followed by another ClusterSync() before the peer may reuse or
//   release that memory. So a CTA may return right after any ClusterSync() that follows its last remote access.
// - Every branch that contains a ClusterSync() depends only on values all CTAs of the cluster hold identically.
#pragma once

#include <cooperative_groups.h>

#include <cstdint>

namespace samplecheck::kernels::detail {

inline constexpr int kMaxClusterSize = 16;  // non-portable above 8 (Hopper allows 16)

__device__ __forceinline__ uint32_t ClusterRank() { return cooperative_groups::this_cluster().block_rank(); }
__device__ __forceinline__ uint32_t ClusterSize() { return cooperative_groups::this_cluster().num_blocks(); }

// The start barrier: arrive without ordering (nothing to publish yet) ...
__device__ __forceinline__ void ClusterArriveRelaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory");
}
// ... and wait (acquire) before the first remote access.
__device__ __forceinline__ void ClusterWait() { asm volatile("barrier.cluster.wait.aligned;\n" ::: "memory"); }

// Every thread of every CTA of the cluster: release, then acquire (shared memory, local and remote, is visible).
__device__ __forceinline__ void ClusterSync() { cooperative_groups::this_cluster().sync(); }

// The address of `local` (a shared-memory object of this CTA) in the CTA of cluster rank `rank`.
template <class U>
__device__ __forceinline__ U* AtRank(U* local, uint32_t rank) {
  return cooperative_groups::this_cluster().map_shared_rank(local, static_cast<int>(rank));
}

}  // namespace samplecheck::kernels::detail
