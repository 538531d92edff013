// ch09.cutlass_gemm: the same GEMM through CUTLASS's two generations of kernels.
//
//   aisp_cutlass_simt      CUTLASS 2.x cutlass::gemm::device::Gemm, OpClassSimt, fp32 in/out,
//                          fp32 FFMA on the CUDA cores (DefaultGemmConfiguration<OpClassSimt>:
//                          128x128x8 threadblock tile, 32x64x8 warp tile, 2 stages).
//   aisp_cutlass_tensorop  CUTLASS 3.x Hopper GEMM built by the CollectiveBuilder: TMA loads into
//                          a multi-stage shared-memory ring, wgmma (bf16 in, fp32 accumulate),
//                          warp-specialized producer/consumer warpgroups, a persistent tile
//                          scheduler and a TMA epilogue storing bf16 (no C operand: beta = 0).
//                          Several tile/cluster/schedule configurations are compiled in
//                          (kTensorOpConfigs); index 0 is the pair's `tensorop_sm90` variant.
//
// All matrices are row-major: A [m, k], B [k, n], D [m, n]. Every entry point returns a
// cudaError_t (0 on success) and launches on the caller's stream. Build for sm_90a
// (-gencode=arch=compute_90a,code=sm_90a: wgmma needs the arch-specific target) with
// --expt-relaxed-constexpr and the CUTLASS include directory; aisp_kernels.build does that, in
// three parts compiled at once (../common/build_parts.h): part 0 the C API, the SIMT kernel and
// configuration 0, part 1 configurations 1 and 2, part 2 configurations 3 and 4.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

#include "cutlass/cutlass.h"
#include "cutlass/gemm/device/gemm.h"

#include "cute/tensor.hpp"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/util/packed_stride.hpp"

#include "../common/build_parts.h"

namespace {

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

// --- CUTLASS 2.x SIMT (CUDA cores) ---------------------------------------------------------

using RowMajor = cutlass::layout::RowMajor;
using SimtGemm = cutlass::gemm::device::Gemm<
    float, RowMajor,                  // A
    float, RowMajor,                  // B
    float, RowMajor,                  // C / D
    float,                            // accumulator
    cutlass::arch::OpClassSimt,       // FFMA on the CUDA cores
    cutlass::arch::Sm80>;             // the newest SIMT defaults (cp.async-free 2-stage pipeline)

// --- CUTLASS 3.x Hopper tensor op (TMA + wgmma) --------------------------------------------

using namespace cute;

template <class TileShape_, class ClusterShape_, class MainloopSchedule_, class EpilogueSchedule_>
struct TensorOpGemm {
  using ElementA = cutlass::bfloat16_t;
  using ElementB = cutlass::bfloat16_t;
  using ElementD = cutlass::bfloat16_t;
  using ElementAccumulator = float;
  static constexpr int kAlignment = 128 / cutlass::sizeof_bits<ElementA>::value;   // 8: 16 bytes

  using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp,
      TileShape_, ClusterShape_,
      cutlass::epilogue::collective::EpilogueTileAuto,
      ElementAccumulator, ElementAccumulator,
      void, RowMajor, kAlignment,            // no C operand (D = alpha * A B)
      ElementD, RowMajor, kAlignment,
      EpilogueSchedule_>::CollectiveOp;

  using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp,
      ElementA, RowMajor, kAlignment,
      ElementB, RowMajor, kAlignment,
      ElementAccumulator,
      TileShape_, ClusterShape_,
      cutlass::gemm::collective::StageCountAutoCarveout<
          static_cast<int>(sizeof(typename CollectiveEpilogue::SharedStorage))>,
      MainloopSchedule_>::CollectiveOp;

  using Kernel = cutlass::gemm::kernel::GemmUniversal<
      Shape<int, int, int, int>, CollectiveMainloop, CollectiveEpilogue>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;

  static typename Gemm::Arguments arguments(const void* a, const void* b, void* d, int m, int n,
                                            int k, int sm_count) {
    using StrideA = typename Gemm::GemmKernel::StrideA;
    using StrideB = typename Gemm::GemmKernel::StrideB;
    using StrideC = typename Gemm::GemmKernel::StrideC;
    using StrideD = typename Gemm::GemmKernel::StrideD;
    auto sa = cutlass::make_cute_packed_stride(StrideA{}, cute::make_shape(m, k, 1));
    auto sb = cutlass::make_cute_packed_stride(StrideB{}, cute::make_shape(n, k, 1));
    auto sc = cutlass::make_cute_packed_stride(StrideC{}, cute::make_shape(m, n, 1));
    auto sd = cutlass::make_cute_packed_stride(StrideD{}, cute::make_shape(m, n, 1));
    cutlass::KernelHardwareInfo hw;
    hw.device_id = 0;
    hw.sm_count = sm_count;
    typename Gemm::Arguments args{
        cutlass::gemm::GemmUniversalMode::kGemm,
        {m, n, k, 1},
        {static_cast<const ElementA*>(a), sa, static_cast<const ElementB*>(b), sb},
        {{1.0f, 0.0f}, nullptr, sc, static_cast<ElementD*>(d), sd},
        hw};
    return args;
  }

  static size_t workspace_size(int m, int n, int k, int sm_count) {
    return Gemm::get_workspace_size(arguments(nullptr, nullptr, nullptr, m, n, k, sm_count));
  }

  static cudaError_t run(const void* a, const void* b, void* d, int m, int n, int k,
                         void* workspace, size_t workspace_bytes, int sm_count, cudaStream_t stream) {
    auto args = arguments(a, b, d, m, n, k, sm_count);
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

using Coop = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
using CoopEpi = cutlass::epilogue::TmaWarpSpecializedCooperative;
using Ping = cutlass::gemm::KernelTmaWarpSpecializedPingpong;
using PingEpi = cutlass::epilogue::TmaWarpSpecialized;

using Cfg0 = TensorOpGemm<Shape<_128, _256, _64>, Shape<_2, _1, _1>, Coop, CoopEpi>;
using Cfg1 = TensorOpGemm<Shape<_128, _128, _64>, Shape<_2, _1, _1>, Coop, CoopEpi>;
using Cfg2 = TensorOpGemm<Shape<_64, _256, _64>, Shape<_1, _2, _1>, Ping, PingEpi>;
using Cfg3 = TensorOpGemm<Shape<_128, _256, _64>, Shape<_1, _2, _1>, Coop, CoopEpi>;
using Cfg4 = TensorOpGemm<Shape<_256, _128, _64>, Shape<_1, _2, _1>, Coop, CoopEpi>;

}  // namespace

// Each configuration's entry points: declared in every part, defined (and so its kernel compiled)
// in one, called through kTensorOpConfigs from part 0.
namespace cutlass_gemm_parts __attribute__((visibility("hidden"))) {

#define DECLARE_CONFIG(I)                                                                          \
  size_t workspace##I(int m, int n, int k, int sms);                                               \
  cudaError_t run##I(const void* a, const void* b, void* d, int m, int n, int k, void* workspace,   \
                     size_t workspace_bytes, int sms, cudaStream_t stream);
#define DEFINE_CONFIG(I)                                                                           \
  size_t workspace##I(int m, int n, int k, int sms) { return Cfg##I::workspace_size(m, n, k, sms); } \
  cudaError_t run##I(const void* a, const void* b, void* d, int m, int n, int k, void* workspace,   \
                     size_t workspace_bytes, int sms, cudaStream_t stream) {                       \
    return Cfg##I::run(a, b, d, m, n, k, workspace, workspace_bytes, sms, stream);                 \
  }

DECLARE_CONFIG(0) DECLARE_CONFIG(1) DECLARE_CONFIG(2) DECLARE_CONFIG(3) DECLARE_CONFIG(4)
#if AISP_IN_PART(0)
DEFINE_CONFIG(0)
#endif
#if AISP_IN_PART(1)
DEFINE_CONFIG(1) DEFINE_CONFIG(2)
#endif
#if AISP_IN_PART(2)
DEFINE_CONFIG(3) DEFINE_CONFIG(4)
#endif

}  // namespace cutlass_gemm_parts

#if AISP_IN_PART(0)      // the C API and its table: part 0 only

namespace {

using namespace cutlass_gemm_parts;

struct ConfigEntry {
  const char* name;
  size_t (*workspace_size)(int, int, int, int);
  cudaError_t (*run)(const void*, const void*, void*, int, int, int, void*, size_t, int, cudaStream_t);
};

const ConfigEntry kTensorOpConfigs[] = {
    {"128x256x64 cluster2x1 cooperative", &workspace0, &run0},
    {"128x128x64 cluster2x1 cooperative", &workspace1, &run1},
    {"64x256x64 cluster1x2 pingpong", &workspace2, &run2},
    {"128x256x64 cluster1x2 cooperative", &workspace3, &run3},
    {"256x128x64 cluster1x2 cooperative", &workspace4, &run4},
};
constexpr int kConfigCount = sizeof(kTensorOpConfigs) / sizeof(kTensorOpConfigs[0]);

int sm_count_cached() {
  static int count = 0;
  if (count == 0) {
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) return 0;
    count = cutlass::KernelHardwareInfo::query_device_multiprocessor_count(dev);
  }
  return count;
}

bool bad_sizes(int m, int n, int k) { return m < 1 || n < 1 || k < 1; }

}  // namespace

extern "C" {

// fp32 SIMT GEMM: D = A B (alpha 1, beta 0; C aliases D and is not read).
int aisp_cutlass_simt(const float* a, const float* b, float* d, int m, int n, int k, void* stream) {
  if (!a || !b || !d || bad_sizes(m, n, k)) return cudaErrorInvalidValue;
  SimtGemm gemm;
  SimtGemm::Arguments args({m, n, k}, {a, k}, {b, n}, {d, n}, {d, n}, {1.0f, 0.0f});
  cutlass::Status s = gemm.can_implement(args);
  if (s != cutlass::Status::kSuccess) return status_to_error(s);
  s = gemm(args, nullptr, static_cast<cudaStream_t>(stream));
  if (s != cutlass::Status::kSuccess) return status_to_error(s);
  return cudaGetLastError();
}

int aisp_cutlass_tensorop_config_count() { return kConfigCount; }

const char* aisp_cutlass_tensorop_config_name(int config) {
  return (config >= 0 && config < kConfigCount) ? kTensorOpConfigs[config].name : "";
}

// Bytes of device workspace configuration `config` needs for this shape (0 for most); -1 if
// the configuration does not exist.
long long aisp_cutlass_tensorop_workspace_size(int config, int m, int n, int k) {
  if (config < 0 || config >= kConfigCount || bad_sizes(m, n, k)) return -1;
  return static_cast<long long>(kTensorOpConfigs[config].workspace_size(m, n, k, sm_count_cached()));
}

// bf16 A [m, k], B [k, n] -> bf16 D [m, n], fp32 accumulation, on TMA + wgmma. n and k must be
// multiples of 8 (16-byte rows for TMA); pointers 16-byte aligned.
int aisp_cutlass_tensorop(int config, const void* a, const void* b, void* d, int m, int n, int k,
                          void* workspace, long long workspace_bytes, void* stream) {
  if (config < 0 || config >= kConfigCount) return cudaErrorInvalidValue;
  if (!a || !b || !d || bad_sizes(m, n, k) || n % 8 || k % 8) return cudaErrorInvalidValue;
  if (!aligned16(a) || !aligned16(b) || !aligned16(d) || workspace_bytes < 0) return cudaErrorInvalidValue;
  int sms = sm_count_cached();
  if (sms <= 0) return cudaErrorNoDevice;
  return kTensorOpConfigs[config].run(a, b, d, m, n, k, workspace, static_cast<size_t>(workspace_bytes),
                                      sms, static_cast<cudaStream_t>(stream));
}

const char* aisp_cuda_error_string(int err) { return cudaGetErrorString(static_cast<cudaError_t>(err)); }

}  // extern "C"

#endif  // AISP_IN_PART(0)
