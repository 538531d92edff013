// ch14.cublas_vs_cutlass: one fp16 GEMM, D = A B (all row-major), through two generations of
// CUTLASS kernel; cuBLAS (torch.mm) is the Python side's baseline.
//
//   variant 0  "sm80": CUTLASS 2.x cutlass::gemm::device::Gemm, OpClassTensorOp, arch::Sm80, as the
//              book's extension builds it: threadblock 128x128x64, warp 64x64x64, instruction
//              16x8x16 (mma.sync.m16n8k16 -> HMMA.16816.F32 in SASS), fp32 accumulation, cp.async
//              (LDGSTS) multistage mainloop with 3 stages (CUTLASS's Sm80 default; the book names
//              none), ldmatrix (LDSM) from shared memory, identity threadblock order (CUTLASS's
//              default), one output tile per CTA. Every warp both loads and multiplies.
//   variant 1  "sm90": CUTLASS 3.x Hopper GEMM from the CollectiveBuilder,
//              KernelTmaWarpSpecializedCooperative, tile 256x128x64 on a 2x1x1 cluster: a TMA
//              producer warpgroup fills a shared-memory ring (UTMALDG, B multicast to both CTAs of
//              the cluster), two consumer warpgroups issue wgmma (HGMMA) on 128-row halves,
//              persistent tile scheduler with a tile-order swizzle, TMA store epilogue.
//
// Operands: A [m, k], B [k, n], D [m, n], all row-major (the book's layout: B is N-major, which
// wgmma takes for 16-bit types), fp16 (cutlass::half_t) in and out, fp32 accumulation,
// D = 1 * A B (beta = 0: C is never read). n and k must be multiples of 8 (16-byte rows), every
// pointer 16-byte aligned; m is free; ragged tiles are predicated (sm80) or clipped by TMA (sm90).
// Every entry point returns a cudaError_t (0 on success) and launches on the caller's stream.
// Build for sm_90a with --expt-relaxed-constexpr -DNDEBUG and the CUTLASS include folders
// (include/ and tools/util/include/); aisp_kernels.build does that. -DNDEBUG matters: CuTe's
// device-side asserts are calls, and ptxas serializes every wgmma around a call (warning C7510).
#include <cuda_runtime.h>

#include <cstdint>

#include "cutlass/cutlass.h"
#include "cutlass/epilogue/thread/linear_combination.h"
#include "cutlass/gemm/device/gemm.h"
#include "cutlass/gemm/threadblock/threadblock_swizzle.h"

#include "cute/tensor.hpp"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/util/packed_stride.hpp"

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

using RowMajor = cutlass::layout::RowMajor;
using Half = cutlass::half_t;
constexpr int kAlignment = 128 / cutlass::sizeof_bits<Half>::value;   // 8 elements: 16-byte accesses

// --- variant 0: the book's CUTLASS 2.x Ampere kernel (mma.sync) ---------------------------------

struct Sm80Gemm {
  using Gemm = cutlass::gemm::device::Gemm<
      Half, RowMajor,                                    // A [m, k]
      Half, RowMajor,                                    // B [k, n]
      Half, RowMajor,                                    // C / D [m, n]
      float,                                             // accumulator
      cutlass::arch::OpClassTensorOp,
      cutlass::arch::Sm80,
      cutlass::gemm::GemmShape<128, 128, 64>,            // threadblock tile
      cutlass::gemm::GemmShape<64, 64, 64>,              // warp tile (4 warps)
      cutlass::gemm::GemmShape<16, 8, 16>,               // mma.sync.m16n8k16
      cutlass::epilogue::thread::LinearCombination<Half, kAlignment, float, float>,
      cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<>,
      3,                                                 // cp.async stages
      kAlignment, kAlignment>;

  static typename Gemm::Arguments arguments(const void* a, const void* b, void* d, int m, int n, int k) {
    auto* dd = static_cast<Half*>(d);
    // beta = 0: LinearCombination::is_source_needed() is false, so C (here D) is never read
    return typename Gemm::Arguments({m, n, k}, {static_cast<const Half*>(a), k}, {static_cast<const Half*>(b), n},
                                    {dd, n}, {dd, n}, {1.0f, 0.0f});
  }

  static size_t workspace_size(int m, int n, int k, int /*swizzle*/, int /*sm_count*/) {
    return Gemm::get_workspace_size(arguments(nullptr, nullptr, nullptr, m, n, k));
  }

  static cudaError_t run(const void* a, const void* b, void* d, int m, int n, int k, int /*swizzle*/,
                         void* workspace, size_t workspace_bytes, int /*sm_count*/, cudaStream_t stream) {
    auto args = arguments(a, b, d, m, n, k);
    if (Gemm::get_workspace_size(args) > workspace_bytes) return cudaErrorInvalidValue;
    Gemm gemm;
    cutlass::Status s = gemm.can_implement(args);
    if (s != cutlass::Status::kSuccess) return status_to_error(s);
    s = gemm.initialize(args, workspace, stream);       // sets the kernel's >48 KiB dynamic shared memory
    if (s != cutlass::Status::kSuccess) return status_to_error(s);
    s = gemm.run(stream);
    if (s != cutlass::Status::kSuccess) return status_to_error(s);
    return cudaGetLastError();
  }
};

// --- variant 1: CUTLASS 3.x Hopper kernel (TMA + wgmma, warp-specialized) ----------------------

using namespace cute;

struct Sm90Gemm {
  using TileShape = Shape<_256, _128, _64>;
  using ClusterShape = Shape<_2, _1, _1>;

  using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp,
      TileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto,
      float, float,
      void, RowMajor, kAlignment,                        // no C operand: D = alpha A B
      Half, RowMajor, kAlignment,
      cutlass::epilogue::TmaWarpSpecializedCooperative>::CollectiveOp;

  using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp,
      Half, RowMajor, kAlignment,
      Half, RowMajor, kAlignment,                        // B [k, n] row-major: N-major, transposed by wgmma
      float,
      TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<
          static_cast<int>(sizeof(typename CollectiveEpilogue::SharedStorage))>,
      cutlass::gemm::KernelTmaWarpSpecializedCooperative>::CollectiveOp;

  using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, CollectiveMainloop,
                                                      CollectiveEpilogue>;
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
    hw.sm_count = sm_count;                              // the persistent grid is sized by it
    typename Gemm::Arguments args{
        cutlass::gemm::GemmUniversalMode::kGemm,
        {m, n, k, 1},
        {static_cast<const Half*>(a), sa, static_cast<const Half*>(b), sb},
        {{1.0f, 0.0f}, nullptr, sc, static_cast<Half*>(d), sd},
        hw};
    // Output tiles are handed out in groups `swizzle` clusters wide (1 walks whole columns/rows):
    // only the order changes, which decides how much of A and B a wave keeps in L2.
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

struct VariantEntry {
  const char* name;
  bool takes_swizzle;                  // the persistent sm90 scheduler does; the sm80 grid order is fixed
  size_t (*workspace_size)(int, int, int, int, int);
  cudaError_t (*run)(const void*, const void*, void*, int, int, int, int, void*, size_t, int, cudaStream_t);
};

// The order is the Python module's KERNELS order.
const VariantEntry kVariants[] = {
    {"Sm80 OpClassTensorOp 128x128x64 warp 64x64x64 mma 16x8x16 3-stage", false, &Sm80Gemm::workspace_size,
     &Sm80Gemm::run},
    {"Sm90 KernelTmaWarpSpecializedCooperative 256x128x64 cluster2x1x1", true, &Sm90Gemm::workspace_size,
     &Sm90Gemm::run},
};
constexpr int kVariantCount = sizeof(kVariants) / sizeof(kVariants[0]);

int sm_count_cached() {
  static int count = 0;
  if (count == 0) {
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) return 0;
    count = cutlass::KernelHardwareInfo::query_device_multiprocessor_count(dev);
  }
  return count;
}

bool bad_shape(int m, int n, int k) { return m < 1 || n < 1 || k < 1 || n % kAlignment || k % kAlignment; }

// sm90: 1, 2, 4 or 8 (CUTLASS would silently round anything else down); sm80: only 1.
bool bad_swizzle(int variant, int swizzle) {
  if (!kVariants[variant].takes_swizzle) return swizzle != 1;
  return !(swizzle == 1 || swizzle == 2 || swizzle == 4 || swizzle == 8);
}

}  // namespace

extern "C" {

int aisp_cvc_variant_count() { return kVariantCount; }

const char* aisp_cvc_variant_name(int variant) {
  return (variant >= 0 && variant < kVariantCount) ? kVariants[variant].name : "";
}

// Bytes of device workspace `variant` needs for this shape; -1 for a variant, shape or swizzle it
// does not take, or no device.
long long aisp_cvc_workspace_size(int variant, int m, int n, int k, int swizzle) {
  if (variant < 0 || variant >= kVariantCount || bad_shape(m, n, k) || bad_swizzle(variant, swizzle)) return -1;
  int sms = sm_count_cached();
  if (sms <= 0) return -1;
  return static_cast<long long>(kVariants[variant].workspace_size(m, n, k, swizzle, sms));
}

// fp16 A [m, k] and B [k, n] (row-major) -> fp16 D [m, n] = A B, fp32 accumulation, through
// CUTLASS kernel `variant` (0 sm80, 1 sm90). Refused with cudaErrorInvalidValue before any CUDA
// call for a bad variant, shape, swizzle, null or misaligned pointer.
int aisp_cvc_gemm(int variant, const void* a, const void* b, void* d, int m, int n, int k, int swizzle,
                  void* workspace, long long workspace_bytes, void* stream) {
  if (variant < 0 || variant >= kVariantCount || bad_swizzle(variant, swizzle)) return cudaErrorInvalidValue;
  if (!a || !b || !d || bad_shape(m, n, k) || workspace_bytes < 0) return cudaErrorInvalidValue;
  if (!aligned16(a) || !aligned16(b) || !aligned16(d)) return cudaErrorInvalidValue;
  int sms = sm_count_cached();
  if (sms <= 0) return cudaErrorNoDevice;
  return kVariants[variant].run(a, b, d, m, n, k, swizzle, workspace, static_cast<size_t>(workspace_bytes), sms,
                                static_cast<cudaStream_t>(stream));
}

const char* aisp_cuda_error_string(int err) { return cudaGetErrorString(static_cast<cudaError_t>(err)); }

}  // extern "C"
