// ch10.warp_specialization_cutlass: one fp16 GEMM, D = A B^T, through three CUTLASS 3.x Hopper
// warp-specialized kernel schedules, each assembled by the CollectiveBuilder.
//
//   config 0  KernelTmaWarpSpecialized             128x128x64, cluster 1x1x1 (the book's 1-SM kernel)
//             one TMA producer warpgroup and one wgmma consumer warpgroup per CTA, one output
//             tile per CTA (not persistent): the epilogue does not overlap the next tile's loads.
//   config 1  KernelTmaWarpSpecializedCooperative  256x128x64, cluster 2x1x1 (the book's 2-SM kernel)
//             a persistent producer warpgroup feeding two consumer warpgroups that split the
//             256-row tile (128 rows each); the two CTAs of a cluster take adjacent M tiles of the
//             same N column and receive the shared B tile by TMA multicast (each CTA issues half).
//   config 2  KernelTmaWarpSpecializedPingpong     128x128x64, cluster 1x1x1
//             a persistent producer warpgroup feeding two consumer warpgroups that each own a
//             whole tile and take turns: one runs its mainloop while the other runs its epilogue.
//
// Operands: A [m, k] row-major, B [n, k] row-major (= k x n column-major: both K-major, the
// book's `A row-major, B column-major`), D [m, n] row-major; fp16 (cutlass::half_t) in and out,
// fp32 accumulation, D = 1 * A B^T (no C operand). The persistent configurations (1, 2) also take
// the tile scheduler's swizzle, the order in which output tiles are handed out (L2 reuse).
// Every entry point returns a cudaError_t (0 on success) and launches on the caller's stream.
// Build for sm_90a with --expt-relaxed-constexpr -DNDEBUG and the CUTLASS include folders
// (include/ and tools/util/include/); aisp_kernels.build does that, in three parts compiled at
// once (../common/build_parts.h), one configuration each, the C API in part 0. -DNDEBUG matters:
// CuTe's device-side asserts are calls (CALL.ABS.NOINC __assertfail), and ptxas serializes every
// wgmma around a call (warning C7510: one WARPGROUP.DEPBAR per HGMMA instead of one per k-block).
#include <cuda_runtime.h>

#include <cstdint>

#include "cutlass/cutlass.h"

#include "cute/tensor.hpp"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/util/packed_stride.hpp"

#include "../common/build_parts.h"

namespace {

using namespace cute;

cudaError_t status_to_error(cutlass::Status s) {
  switch (s) {
    case cutlass::Status::kSuccess: return cudaSuccess;
    case cutlass::Status::kErrorMisalignedOperand:
    case cutlass::Status::kErrorInvalidProblem:
    case cutlass::Status::kErrorNotSupported:
    case cutlass::Status::kErrorInvalidLayout:
    case cutlass::Status::kErrorInvalidDataType: return cudaErrorInvalidValue;
    case cutlass::Status::kErrorWorkspaceNull: return cudaErrorInvalidDevicePointer;
    case cutlass::Status::kErrorMemoryAllocation: return cudaErrorMemoryAllocation;
    default: {
      cudaError_t e = cudaGetLastError();
      return e != cudaSuccess ? e : cudaErrorLaunchFailure;
    }
  }
}

bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0; }

template <class TileShape_, class ClusterShape_, class MainloopSchedule_, class EpilogueSchedule_>
struct WsGemm {
  using ElementAB = cutlass::half_t;
  using ElementD = cutlass::half_t;
  using ElementAccumulator = float;
  using LayoutA = cutlass::layout::RowMajor;      // [m, k], K contiguous
  using LayoutB = cutlass::layout::ColumnMajor;   // k x n column-major = [n, k] row-major, K contiguous
  using LayoutD = cutlass::layout::RowMajor;      // [m, n]
  static constexpr int kAlignment = 128 / cutlass::sizeof_bits<ElementAB>::value;   // 8: 16-byte TMA rows

  using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp,
      TileShape_, ClusterShape_,
      cutlass::epilogue::collective::EpilogueTileAuto,
      ElementAccumulator, ElementAccumulator,
      void, LayoutD, kAlignment,             // no C operand: D = alpha A B^T
      ElementD, LayoutD, kAlignment,
      EpilogueSchedule_>::CollectiveOp;

  using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp,
      ElementAB, LayoutA, kAlignment,
      ElementAB, LayoutB, kAlignment,
      ElementAccumulator,
      TileShape_, ClusterShape_,
      cutlass::gemm::collective::StageCountAutoCarveout<
          static_cast<int>(sizeof(typename CollectiveEpilogue::SharedStorage))>,
      MainloopSchedule_>::CollectiveOp;

  using Kernel = cutlass::gemm::kernel::GemmUniversal<
      Shape<int, int, int, int>, CollectiveMainloop, CollectiveEpilogue>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;

  static typename Gemm::Arguments arguments(const void* a, const void* b, void* d, int m, int n, int k,
                                            int swizzle, int sm_count) {
    using StrideA = typename Gemm::GemmKernel::StrideA;
    using StrideB = typename Gemm::GemmKernel::StrideB;
    using StrideC = typename Gemm::GemmKernel::StrideC;
    using StrideD = typename Gemm::GemmKernel::StrideD;
    auto sa = cutlass::make_cute_packed_stride(StrideA{}, cute::make_shape(m, k, 1));
    auto sb = cutlass::make_cute_packed_stride(StrideB{}, cute::make_shape(n, k, 1));
    auto sc = cutlass::make_cute_packed_stride(StrideC{}, cute::make_shape(m, n, 1));
    auto sd = cutlass::make_cute_packed_stride(StrideD{}, cute::make_shape(m, n, 1));
    cutlass::KernelHardwareInfo hw;
    hw.sm_count = sm_count;            // the persistent schedules size their grid by it
    typename Gemm::Arguments args{
        cutlass::gemm::GemmUniversalMode::kGemm,
        {m, n, k, 1},
        {static_cast<const ElementAB*>(a), sa, static_cast<const ElementAB*>(b), sb},
        {{1.0f, 0.0f}, nullptr, sc, static_cast<ElementD*>(d), sd},
        hw};
    // The persistent schedules hand out output tiles along M when there are more N tiles than M
    // tiles, else along N (RasterOrderOptions::Heuristic), in groups `swizzle` tiles (clusters)
    // wide across the other dimension; 1 (CUTLASS's default) walks whole columns/rows. The
    // non-persistent schedule's grid ignores it (refused there, see bad_swizzle).
    args.scheduler.max_swizzle_size = swizzle;
    return args;
  }

  static size_t workspace_size(int m, int n, int k, int swizzle, int sm_count) {
    return Gemm::get_workspace_size(arguments(nullptr, nullptr, nullptr, m, n, k, swizzle, sm_count));
  }

  static cudaError_t run(const void* a, const void* b, void* d, int m, int n, int k, int swizzle, void* workspace,
                         size_t workspace_bytes, int sm_count, cudaStream_t stream) {
    auto args = arguments(a, b, d, m, n, k, swizzle, sm_count);
    if (Gemm::get_workspace_size(args) > workspace_bytes) return cudaErrorInvalidValue;
    Gemm gemm;
    cutlass::Status s = gemm.can_implement(args);
    if (s != cutlass::Status::kSuccess) return status_to_error(s);
    s = gemm.initialize(args, workspace, stream);
    if (s != cutlass::Status::kSuccess) return status_to_error(s);
    s = gemm.run(stream);
    if (s != cutlass::Status::kSuccess) return status_to_error(s);
    return cudaGetLastError();
  }
};

using Ws = WsGemm<Shape<_128, _128, _64>, Shape<_1, _1, _1>,
                  cutlass::gemm::KernelTmaWarpSpecialized, cutlass::epilogue::TmaWarpSpecialized>;
using Coop = WsGemm<Shape<_256, _128, _64>, Shape<_2, _1, _1>,
                    cutlass::gemm::KernelTmaWarpSpecializedCooperative,
                    cutlass::epilogue::TmaWarpSpecializedCooperative>;
using Ping = WsGemm<Shape<_128, _128, _64>, Shape<_1, _1, _1>,
                    cutlass::gemm::KernelTmaWarpSpecializedPingpong, cutlass::epilogue::TmaWarpSpecialized>;

}  // namespace

// Each configuration's entry points: declared in every part, defined (and so its kernel compiled)
// in one, called through kConfigs from part 0.
namespace ws_cutlass_parts __attribute__((visibility("hidden"))) {

#define DECLARE_CONFIG(NAME)                                                                       \
  size_t NAME##_workspace(int m, int n, int k, int swizzle, int sms);                              \
  cudaError_t NAME##_run(const void* a, const void* b, void* d, int m, int n, int k, int swizzle,   \
                         void* workspace, size_t workspace_bytes, int sms, cudaStream_t stream);
#define DEFINE_CONFIG(NAME)                                                                        \
  size_t NAME##_workspace(int m, int n, int k, int swizzle, int sms) {                             \
    return NAME::workspace_size(m, n, k, swizzle, sms);                                            \
  }                                                                                                \
  cudaError_t NAME##_run(const void* a, const void* b, void* d, int m, int n, int k, int swizzle,   \
                         void* workspace, size_t workspace_bytes, int sms, cudaStream_t stream) {  \
    return NAME::run(a, b, d, m, n, k, swizzle, workspace, workspace_bytes, sms, stream);          \
  }

DECLARE_CONFIG(Ws) DECLARE_CONFIG(Coop) DECLARE_CONFIG(Ping)
#if AISP_IN_PART(0)
DEFINE_CONFIG(Ws)
#endif
#if AISP_IN_PART(1)
DEFINE_CONFIG(Coop)
#endif
#if AISP_IN_PART(2)
DEFINE_CONFIG(Ping)
#endif

}  // namespace ws_cutlass_parts

#if AISP_IN_PART(0)      // the C API and its table: part 0 only

namespace {

using namespace ws_cutlass_parts;

struct ConfigEntry {
  const char* name;
  bool persistent;                     // takes a tile-order swizzle
  size_t (*workspace_size)(int, int, int, int, int);
  cudaError_t (*run)(const void*, const void*, void*, int, int, int, int, void*, size_t, int, cudaStream_t);
};

// The order is the Python module's CONFIGS order.
const ConfigEntry kConfigs[] = {
    {"KernelTmaWarpSpecialized 128x128x64 cluster1x1x1", false, &Ws_workspace, &Ws_run},
    {"KernelTmaWarpSpecializedCooperative 256x128x64 cluster2x1x1", true, &Coop_workspace, &Coop_run},
    {"KernelTmaWarpSpecializedPingpong 128x128x64 cluster1x1x1", true, &Ping_workspace, &Ping_run},
};
constexpr int kConfigCount = sizeof(kConfigs) / sizeof(kConfigs[0]);

int sm_count_cached() {
  static int count = 0;
  if (count == 0) {
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) return 0;
    count = cutlass::KernelHardwareInfo::query_device_multiprocessor_count(dev);
  }
  return count;
}

bool bad_shape(int m, int n, int k) { return m < 1 || n < 1 || k < 1 || n % 8 || k % 8; }

// 1, 2, 4 or 8 for a persistent schedule (CUTLASS rounds anything else down to one of these:
// refused instead, so the asked order is the one that runs); only 1 for the non-persistent one.
bool bad_swizzle(int config, int swizzle) {
  if (!kConfigs[config].persistent) return swizzle != 1;
  return !(swizzle == 1 || swizzle == 2 || swizzle == 4 || swizzle == 8);
}

}  // namespace

extern "C" {

int aisp_ws_cutlass_config_count() { return kConfigCount; }

const char* aisp_ws_cutlass_config_name(int config) {
  return (config >= 0 && config < kConfigCount) ? kConfigs[config].name : "";
}

int aisp_ws_cutlass_config_persistent(int config) {
  return (config >= 0 && config < kConfigCount) ? kConfigs[config].persistent : -1;
}

// Bytes of device workspace configuration `config` needs for this shape (0 for these schedules'
// default tile schedulers); -1 for a configuration, shape or swizzle it does not take, or no device.
long long aisp_ws_cutlass_workspace_size(int config, int m, int n, int k, int swizzle) {
  if (config < 0 || config >= kConfigCount || bad_shape(m, n, k) || bad_swizzle(config, swizzle)) return -1;
  int sms = sm_count_cached();
  if (sms <= 0) return -1;
  return static_cast<long long>(kConfigs[config].workspace_size(m, n, k, swizzle, sms));
}

// fp16 A [m, k] and B [n, k] (both K-major) -> fp16 D [m, n] = A B^T, fp32 accumulation, output
// tiles visited in `swizzle`-wide groups (persistent configurations only). n and k must be
// multiples of 8 (16-byte rows for TMA), every pointer 16-byte aligned. Refused with
// cudaErrorInvalidValue before any CUDA call otherwise.
int aisp_ws_cutlass_gemm(int config, const void* a, const void* b, void* d, int m, int n, int k, int swizzle,
                         void* workspace, long long workspace_bytes, void* stream) {
  if (config < 0 || config >= kConfigCount || bad_swizzle(config, swizzle)) return cudaErrorInvalidValue;
  if (!a || !b || !d || bad_shape(m, n, k) || workspace_bytes < 0) return cudaErrorInvalidValue;
  if (!aligned16(a) || !aligned16(b) || !aligned16(d)) return cudaErrorInvalidValue;
  int sms = sm_count_cached();
  if (sms <= 0) return cudaErrorNoDevice;
  return kConfigs[config].run(a, b, d, m, n, k, swizzle, workspace, static_cast<size_t>(workspace_bytes), sms,
                              static_cast<cudaStream_t>(stream));
}

const char* aisp_cuda_error_string(int err) { return cudaGetErrorString(static_cast<cudaError_t>(err)); }

}  // extern "C"

#endif  // AISP_IN_PART(0)
