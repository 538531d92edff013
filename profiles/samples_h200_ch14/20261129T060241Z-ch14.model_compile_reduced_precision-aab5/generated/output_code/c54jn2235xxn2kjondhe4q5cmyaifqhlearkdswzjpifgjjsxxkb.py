# AOT ID: ['1_inference']
from ctypes import c_void_p, c_long, c_int
import torch
import math
import random
import os
import tempfile
from math import inf, nan
from cmath import nanj
from torch._inductor.hooks import run_intermediate_hooks
from torch._inductor.utils import maybe_profile
from torch._inductor.codegen.memory_planning import _align as align
from torch import device, empty_strided
from torch._inductor.async_compile import AsyncCompile
from torch._inductor.select_algorithm import extern_kernels
import triton
import triton.language as tl
from torch._inductor.runtime.triton_heuristics import start_graph, end_graph
from torch._C import _cuda_getCurrentRawStream as get_raw_stream

aten = torch.ops.aten
inductor_ops = torch.ops.inductor
_quantized = torch.ops._quantized
assert_size_stride = torch._C._dynamo.guards.assert_size_stride
assert_alignment = torch._C._dynamo.guards.assert_alignment
empty_strided_cpu = torch._C._dynamo.guards._empty_strided_cpu
empty_strided_cpu_pinned = torch._C._dynamo.guards._empty_strided_cpu_pinned
empty_strided_cuda = torch._C._dynamo.guards._empty_strided_cuda
empty_strided_xpu = torch._C._dynamo.guards._empty_strided_xpu
empty_strided_mtia = torch._C._dynamo.guards._empty_strided_mtia
reinterpret_tensor = torch._C._dynamo.guards._reinterpret_tensor
alloc_from_pool = torch.ops.inductor._alloc_from_pool
async_compile = AsyncCompile()
empty_strided_p2p = torch._C._distributed_c10d._SymmetricMemory.empty_strided_p2p


# kernel path: /tmp/vp3/.partial-20261129T060241Z-ch14.model_compile_reduced_precision-aab5/compile_cache/inductor/ye/cyewzpryhm67nr5kegkcnycm3ztatdef7geet7uv2rs3p53bvcpf.py
# Topologically Sorted Source Nodes: [embedding, getitem, x], Original ATen: [aten.embedding, aten.slice, aten.add]
# Source node to ATen node mapping:
#   embedding => embedding
#   getitem => slice_1
#   x => add
# Graph fragment:
#   %arg1_1 : Tensor "i64[24, 1536][1536, 1]cuda:0" = PlaceHolder[target=arg1_1]
#   %arg0_1 : Tensor "bf16[10000, 512][512, 1]cuda:0" = PlaceHolder[target=arg0_1]
#   %arg2_1 : Tensor "bf16[1, 2048, 512][1048576, 512, 1]cuda:0" = PlaceHolder[target=arg2_1]
#   %embedding : Tensor "bf16[24, 1536, 512][786432, 512, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.embedding.default](args = (%arg0_1, %arg1_1), kwargs = {})
#   %slice_1 : Tensor "bf16[1, 1536, 512][1048576, 512, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.slice.Tensor](args = (%arg2_1, 1, 0, 1536), kwargs = {})
#   %add : Tensor "bf16[24, 1536, 512][786432, 512, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.add.Tensor](args = (%embedding, %slice_1), kwargs = {})
#   return %add
triton_poi_fused_add_embedding_slice_0 = async_compile.triton('triton_poi_fused_add_embedding_slice_0', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.pointwise(
    size_hints={'x': 33554432}, 
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*i64', 'in_ptr1': '*bf16', 'in_ptr2': '*bf16', 'out_ptr0': '*bf16', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]], (4,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_poi_fused_add_embedding_slice_0', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 2, 'num_store': 1, 'num_reduction': 0, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': True, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'coordinate_descent_tuning': True, 'coordinate_descent_search_radius': 1, 'coordinate_descent_check_all_directions': False, 'tiling_scores': {'x': 77070336}},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused_add_embedding_slice_0(in_ptr0, in_ptr1, in_ptr2, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xnumel = 18874368
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = tl.full([XBLOCK], True, tl.int1)[:]
    x3 = xindex // 512
    x0 = (xindex % 512)
    x4 = (xindex % 786432)
    x5 = xindex
    tmp0 = tl.load(in_ptr0 + (x3), None, eviction_policy='evict_last')
    tmp7 = tl.load(in_ptr2 + (x4), None, eviction_policy='evict_last').to(tl.float32)
    tmp1 = tl.full([XBLOCK], 10000, tl.int32)
    tmp2 = tmp0 + tmp1
    tmp3 = tmp0 < 0
    tmp4 = tl.where(tmp3, tmp2, tmp0)
    tl.device_assert((0 <= tmp4) & (tmp4 < 10000), "index out of bounds: 0 <= tmp4 < 10000")
    tmp6 = tl.load(in_ptr1 + (x0 + 512*tmp4), None).to(tl.float32)
    tmp8 = tmp6 + tmp7
    tl.store(out_ptr0 + (x5), tmp8, None)
''', device_str='cuda')


# kernel path: /tmp/vp3/.partial-20261129T060241Z-ch14.model_compile_reduced_precision-aab5/compile_cache/inductor/yi/cyidxhk42heqi7gatd3txgfqjwjvgdarg7aebtev62nxqasuadxo.py
# Topologically Sorted Source Nodes: [multi_head_attention_forward], Original ATen: [aten.add, aten.view, aten.unsqueeze, aten.transpose, aten.squeeze, aten.clone, aten.select, aten._scaled_dot_product_cudnn_attention]
# Source node to ATen node mapping:
#   multi_head_attention_forward => _scaled_dot_product_cudnn_attention, add_1, clone, permute_2, permute_3, permute_4, permute_5, select, select_1, select_2, squeeze, unsqueeze, view_3, view_4, view_5, view_6, view_7, view_8, view_9
# Graph fragment:
#   %bmm : Tensor "bf16[1536, 24, 1536][36864, 1536, 1]cuda:0" = PlaceHolder[target=bmm]
#   %arg4_1 : Tensor "bf16[1536][1]cuda:0" = PlaceHolder[target=arg4_1]
#   %add_1 : Tensor "bf16[1536, 24, 1536][36864, 1536, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%bmm, %arg4_1), kwargs = {})
#   %view_3 : Tensor "bf16[1536, 24, 3, 512][36864, 1536, 512, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%add_1, [1536, 24, 3, 512]), kwargs = {})
#   %unsqueeze : Tensor "bf16[1, 1536, 24, 3, 512][56623104, 36864, 1536, 512, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%view_3, 0), kwargs = {})
#   %permute_2 : Tensor "bf16[3, 1536, 24, 1, 512][512, 36864, 1536, 56623104, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.permute.default](args = (%unsqueeze, [3, 1, 2, 0, 4]), kwargs = {})
#   %squeeze : Tensor "bf16[3, 1536, 24, 512][512, 36864, 1536, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.squeeze.dim](args = (%permute_2, -2), kwargs = {})
#   %clone : Tensor "bf16[3, 1536, 24, 512][18874368, 12288, 512, 1]cuda:0"[num_users=3] = call_function[target=torch.ops.aten.clone.default](args = (%squeeze,), kwargs = {memory_format: torch.contiguous_format})
#   %select : Tensor "bf16[1536, 24, 512][12288, 512, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.select.int](args = (%clone, 0, 0), kwargs = {})
#   %view_4 : Tensor "bf16[1536, 192, 64][12288, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%select, [1536, 192, 64]), kwargs = {})
#   %permute_3 : Tensor "bf16[192, 1536, 64][64, 12288, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.permute.default](args = (%view_4, [1, 0, 2]), kwargs = {})
#   %view_7 : Tensor "bf16[24, 8, 1536, 64][512, 64, 12288, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%permute_3, [24, 8, 1536, 64]), kwargs = {})
#   %select_1 : Tensor "bf16[1536, 24, 512][12288, 512, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.select.int](args = (%clone, 0, 1), kwargs = {})
#   %view_5 : Tensor "bf16[1536, 192, 64][12288, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%select_1, [1536, 192, 64]), kwargs = {})
#   %permute_4 : Tensor "bf16[192, 1536, 64][64, 12288, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.permute.default](args = (%view_5, [1, 0, 2]), kwargs = {})
#   %view_8 : Tensor "bf16[24, 8, 1536, 64][512, 64, 12288, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%permute_4, [24, 8, 1536, 64]), kwargs = {})
#   %select_2 : Tensor "bf16[1536, 24, 512][12288, 512, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.select.int](args = (%clone, 0, 2), kwargs = {})
#   %view_6 : Tensor "bf16[1536, 192, 64][12288, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%select_2, [1536, 192, 64]), kwargs = {})
#   %permute_5 : Tensor "bf16[192, 1536, 64][64, 12288, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.permute.default](args = (%view_6, [1, 0, 2]), kwargs = {})
#   %view_9 : Tensor "bf16[24, 8, 1536, 64][512, 64, 12288, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%permute_5, [24, 8, 1536, 64]), kwargs = {})
#   %_scaled_dot_product_cudnn_attention : [num_users=1] = call_function[target=torch.ops.aten._scaled_dot_product_cudnn_attention.default](args = (%view_7, %view_8, %view_9, None, False), kwargs = {})
#   return %buf2
triton_poi_fused__scaled_dot_product_cudnn_attention_add_clone_select_squeeze_transpose_unsqueeze_view_1 = async_compile.triton('triton_poi_fused__scaled_dot_product_cudnn_attention_add_clone_select_squeeze_transpose_unsqueeze_view_1', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.pointwise(
    size_hints={'x': 33554432}, 
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*bf16', 'in_ptr1': '*bf16', 'out_ptr0': '*bf16', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_poi_fused__scaled_dot_product_cudnn_attention_add_clone_select_squeeze_transpose_unsqueeze_view_1', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 2, 'num_store': 1, 'num_reduction': 0, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': True, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'coordinate_descent_tuning': True, 'coordinate_descent_search_radius': 1, 'coordinate_descent_check_all_directions': False, 'tiling_scores': {'x': 113247232}},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused__scaled_dot_product_cudnn_attention_add_clone_select_squeeze_transpose_unsqueeze_view_1(in_ptr0, in_ptr1, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xnumel = 18874368
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = tl.full([XBLOCK], True, tl.int1)[:]
    x0 = (xindex % 512)
    x1 = ((xindex // 512) % 24)
    x2 = xindex // 12288
    x3 = xindex
    tmp0 = tl.load(in_ptr0 + (x0 + 1536*x1 + 36864*x2 + 36864*((x0 + 512*x1) // 12288)), None).to(tl.float32)
    tmp1 = tl.load(in_ptr1 + (x0), None, eviction_policy='evict_last').to(tl.float32)
    tmp2 = tmp0 + tmp1
    tl.store(out_ptr0 + (x3), tmp2, None)
''', device_str='cuda')


# kernel path: /tmp/vp3/.partial-20261129T060241Z-ch14.model_compile_reduced_precision-aab5/compile_cache/inductor/4k/c4kmkf5b7cbmhv3mdc52qvtg74zczgqknm3skr6fngz46nusw6lz.py
# Topologically Sorted Source Nodes: [multi_head_attention_forward], Original ATen: [aten.add, aten.view, aten.unsqueeze, aten.transpose, aten.squeeze, aten.clone, aten.select, aten._scaled_dot_product_cudnn_attention]
# Source node to ATen node mapping:
#   multi_head_attention_forward => _scaled_dot_product_cudnn_attention, add_1, clone, permute_2, permute_3, permute_4, permute_5, select, select_1, select_2, squeeze, unsqueeze, view_3, view_4, view_5, view_6, view_7, view_8, view_9
# Graph fragment:
#   %bmm : Tensor "bf16[1536, 24, 1536][36864, 1536, 1]cuda:0" = PlaceHolder[target=bmm]
#   %arg4_1 : Tensor "bf16[1536][1]cuda:0" = PlaceHolder[target=arg4_1]
#   %add_1 : Tensor "bf16[1536, 24, 1536][36864, 1536, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%bmm, %arg4_1), kwargs = {})
#   %view_3 : Tensor "bf16[1536, 24, 3, 512][36864, 1536, 512, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%add_1, [1536, 24, 3, 512]), kwargs = {})
#   %unsqueeze : Tensor "bf16[1, 1536, 24, 3, 512][56623104, 36864, 1536, 512, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%view_3, 0), kwargs = {})
#   %permute_2 : Tensor "bf16[3, 1536, 24, 1, 512][512, 36864, 1536, 56623104, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.permute.default](args = (%unsqueeze, [3, 1, 2, 0, 4]), kwargs = {})
#   %squeeze : Tensor "bf16[3, 1536, 24, 512][512, 36864, 1536, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.squeeze.dim](args = (%permute_2, -2), kwargs = {})
#   %clone : Tensor "bf16[3, 1536, 24, 512][18874368, 12288, 512, 1]cuda:0"[num_users=3] = call_function[target=torch.ops.aten.clone.default](args = (%squeeze,), kwargs = {memory_format: torch.contiguous_format})
#   %select : Tensor "bf16[1536, 24, 512][12288, 512, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.select.int](args = (%clone, 0, 0), kwargs = {})
#   %view_4 : Tensor "bf16[1536, 192, 64][12288, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%select, [1536, 192, 64]), kwargs = {})
#   %permute_3 : Tensor "bf16[192, 1536, 64][64, 12288, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.permute.default](args = (%view_4, [1, 0, 2]), kwargs = {})
#   %view_7 : Tensor "bf16[24, 8, 1536, 64][512, 64, 12288, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%permute_3, [24, 8, 1536, 64]), kwargs = {})
#   %select_1 : Tensor "bf16[1536, 24, 512][12288, 512, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.select.int](args = (%clone, 0, 1), kwargs = {})
#   %view_5 : Tensor "bf16[1536, 192, 64][12288, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%select_1, [1536, 192, 64]), kwargs = {})
#   %permute_4 : Tensor "bf16[192, 1536, 64][64, 12288, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.permute.default](args = (%view_5, [1, 0, 2]), kwargs = {})
#   %view_8 : Tensor "bf16[24, 8, 1536, 64][512, 64, 12288, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%permute_4, [24, 8, 1536, 64]), kwargs = {})
#   %select_2 : Tensor "bf16[1536, 24, 512][12288, 512, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.select.int](args = (%clone, 0, 2), kwargs = {})
#   %view_6 : Tensor "bf16[1536, 192, 64][12288, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%select_2, [1536, 192, 64]), kwargs = {})
#   %permute_5 : Tensor "bf16[192, 1536, 64][64, 12288, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.permute.default](args = (%view_6, [1, 0, 2]), kwargs = {})
#   %view_9 : Tensor "bf16[24, 8, 1536, 64][512, 64, 12288, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%permute_5, [24, 8, 1536, 64]), kwargs = {})
#   %_scaled_dot_product_cudnn_attention : [num_users=1] = call_function[target=torch.ops.aten._scaled_dot_product_cudnn_attention.default](args = (%view_7, %view_8, %view_9, None, False), kwargs = {})
#   return %buf3
triton_poi_fused__scaled_dot_product_cudnn_attention_add_clone_select_squeeze_transpose_unsqueeze_view_2 = async_compile.triton('triton_poi_fused__scaled_dot_product_cudnn_attention_add_clone_select_squeeze_transpose_unsqueeze_view_2', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.pointwise(
    size_hints={'x': 33554432}, 
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*bf16', 'in_ptr1': '*bf16', 'out_ptr0': '*bf16', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_poi_fused__scaled_dot_product_cudnn_attention_add_clone_select_squeeze_transpose_unsqueeze_view_2', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 2, 'num_store': 1, 'num_reduction': 0, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': True, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'coordinate_descent_tuning': True, 'coordinate_descent_search_radius': 1, 'coordinate_descent_check_all_directions': False, 'tiling_scores': {'x': 113247232}},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused__scaled_dot_product_cudnn_attention_add_clone_select_squeeze_transpose_unsqueeze_view_2(in_ptr0, in_ptr1, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xnumel = 18874368
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = tl.full([XBLOCK], True, tl.int1)[:]
    x0 = (xindex % 512)
    x1 = ((xindex // 512) % 24)
    x2 = xindex // 12288
    x4 = xindex
    tmp0 = tl.load(in_ptr0 + (512 + x0 + 1536*x1 + 36864*x2 + 36864*((x0 + 512*x1) // 12288)), None).to(tl.float32)
    tmp1 = tl.load(in_ptr1 + (512 + x0), None, eviction_policy='evict_last').to(tl.float32)
    tmp2 = tmp0 + tmp1
    tl.store(out_ptr0 + (x4), tmp2, None)
''', device_str='cuda')


# kernel path: /tmp/vp3/.partial-20261129T060241Z-ch14.model_compile_reduced_precision-aab5/compile_cache/inductor/q3/cq3xbkyzfyu6pi7leqludpr6oswlwu2i22sumcuq43zmubf7o3jk.py
# Topologically Sorted Source Nodes: [multi_head_attention_forward], Original ATen: [aten.add, aten.view, aten.unsqueeze, aten.transpose, aten.squeeze, aten.clone, aten.select, aten._scaled_dot_product_cudnn_attention]
# Source node to ATen node mapping:
#   multi_head_attention_forward => _scaled_dot_product_cudnn_attention, add_1, clone, permute_2, permute_3, permute_4, permute_5, select, select_1, select_2, squeeze, unsqueeze, view_3, view_4, view_5, view_6, view_7, view_8, view_9
# Graph fragment:
#   %bmm : Tensor "bf16[1536, 24, 1536][36864, 1536, 1]cuda:0" = PlaceHolder[target=bmm]
#   %arg4_1 : Tensor "bf16[1536][1]cuda:0" = PlaceHolder[target=arg4_1]
#   %add_1 : Tensor "bf16[1536, 24, 1536][36864, 1536, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%bmm, %arg4_1), kwargs = {})
#   %view_3 : Tensor "bf16[1536, 24, 3, 512][36864, 1536, 512, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%add_1, [1536, 24, 3, 512]), kwargs = {})
#   %unsqueeze : Tensor "bf16[1, 1536, 24, 3, 512][56623104, 36864, 1536, 512, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%view_3, 0), kwargs = {})
#   %permute_2 : Tensor "bf16[3, 1536, 24, 1, 512][512, 36864, 1536, 56623104, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.permute.default](args = (%unsqueeze, [3, 1, 2, 0, 4]), kwargs = {})
#   %squeeze : Tensor "bf16[3, 1536, 24, 512][512, 36864, 1536, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.squeeze.dim](args = (%permute_2, -2), kwargs = {})
#   %clone : Tensor "bf16[3, 1536, 24, 512][18874368, 12288, 512, 1]cuda:0"[num_users=3] = call_function[target=torch.ops.aten.clone.default](args = (%squeeze,), kwargs = {memory_format: torch.contiguous_format})
#   %select : Tensor "bf16[1536, 24, 512][12288, 512, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.select.int](args = (%clone, 0, 0), kwargs = {})
#   %view_4 : Tensor "bf16[1536, 192, 64][12288, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%select, [1536, 192, 64]), kwargs = {})
#   %permute_3 : Tensor "bf16[192, 1536, 64][64, 12288, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.permute.default](args = (%view_4, [1, 0, 2]), kwargs = {})
#   %view_7 : Tensor "bf16[24, 8, 1536, 64][512, 64, 12288, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%permute_3, [24, 8, 1536, 64]), kwargs = {})
#   %select_1 : Tensor "bf16[1536, 24, 512][12288, 512, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.select.int](args = (%clone, 0, 1), kwargs = {})
#   %view_5 : Tensor "bf16[1536, 192, 64][12288, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%select_1, [1536, 192, 64]), kwargs = {})
#   %permute_4 : Tensor "bf16[192, 1536, 64][64, 12288, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.permute.default](args = (%view_5, [1, 0, 2]), kwargs = {})
#   %view_8 : Tensor "bf16[24, 8, 1536, 64][512, 64, 12288, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%permute_4, [24, 8, 1536, 64]), kwargs = {})
#   %select_2 : Tensor "bf16[1536, 24, 512][12288, 512, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.select.int](args = (%clone, 0, 2), kwargs = {})
#   %view_6 : Tensor "bf16[1536, 192, 64][12288, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%select_2, [1536, 192, 64]), kwargs = {})
#   %permute_5 : Tensor "bf16[192, 1536, 64][64, 12288, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.permute.default](args = (%view_6, [1, 0, 2]), kwargs = {})
#   %view_9 : Tensor "bf16[24, 8, 1536, 64][512, 64, 12288, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%permute_5, [24, 8, 1536, 64]), kwargs = {})
#   %_scaled_dot_product_cudnn_attention : [num_users=1] = call_function[target=torch.ops.aten._scaled_dot_product_cudnn_attention.default](args = (%view_7, %view_8, %view_9, None, False), kwargs = {})
#   return %buf4
triton_poi_fused__scaled_dot_product_cudnn_attention_add_clone_select_squeeze_transpose_unsqueeze_view_3 = async_compile.triton('triton_poi_fused__scaled_dot_product_cudnn_attention_add_clone_select_squeeze_transpose_unsqueeze_view_3', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.pointwise(
    size_hints={'x': 33554432}, 
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*bf16', 'in_ptr1': '*bf16', 'out_ptr0': '*bf16', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_poi_fused__scaled_dot_product_cudnn_attention_add_clone_select_squeeze_transpose_unsqueeze_view_3', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 2, 'num_store': 1, 'num_reduction': 0, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': True, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'coordinate_descent_tuning': True, 'coordinate_descent_search_radius': 1, 'coordinate_descent_check_all_directions': False, 'tiling_scores': {'x': 113247232}},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused__scaled_dot_product_cudnn_attention_add_clone_select_squeeze_transpose_unsqueeze_view_3(in_ptr0, in_ptr1, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xnumel = 18874368
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = tl.full([XBLOCK], True, tl.int1)[:]
    x0 = (xindex % 512)
    x1 = ((xindex // 512) % 24)
    x2 = xindex // 12288
    x4 = xindex
    tmp0 = tl.load(in_ptr0 + (1024 + x0 + 1536*x1 + 36864*x2 + 36864*((x0 + 512*x1) // 12288)), None).to(tl.float32)
    tmp1 = tl.load(in_ptr1 + (1024 + x0), None, eviction_policy='evict_last').to(tl.float32)
    tmp2 = tmp0 + tmp1
    tl.store(out_ptr0 + (x4), tmp2, None)
''', device_str='cuda')


# kernel path: /tmp/vp3/.partial-20261129T060241Z-ch14.model_compile_reduced_precision-aab5/compile_cache/inductor/yj/cyjvatz6a5qfzakmripl4dibwcfvf7onuidzwewvh4izaspe6rgg.py
# Topologically Sorted Source Nodes: [multi_head_attention_forward], Original ATen: [aten.permute, aten.view, aten.t, aten.addmm]
# Source node to ATen node mapping:
#   multi_head_attention_forward => addmm, permute_6, permute_7, view_10
# Graph fragment:
#   %arg6_1 : Tensor "bf16[512][1]cuda:0" = PlaceHolder[target=arg6_1]
#   %getitem : Tensor "bf16[24, 8, 1536, 64][512, 64, 12288, 1]cuda:0" = PlaceHolder[target=getitem]
#   %arg5_1 : Tensor "bf16[512, 512][512, 1]cuda:0" = PlaceHolder[target=arg5_1]
#   %permute_6 : Tensor "bf16[1536, 24, 8, 64][12288, 512, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.permute.default](args = (%getitem, [2, 0, 1, 3]), kwargs = {})
#   %view_10 : Tensor "bf16[36864, 512][512, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%permute_6, [36864, 512]), kwargs = {})
#   %permute_7 : Tensor "bf16[512, 512][1, 512]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.permute.default](args = (%arg5_1, [1, 0]), kwargs = {})
#   %addmm : Tensor "bf16[36864, 512][512, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.addmm.default](args = (%arg6_1, %view_10, %permute_7), kwargs = {})
#   return %addmm
triton_tem_fused_addmm_permute_t_view_4 = async_compile.triton('triton_tem_fused_addmm_permute_t_view_4', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties

@triton_heuristics.template(

num_stages=3,
num_warps=4,
triton_meta={'signature': {'in_ptr0': '*bf16', 'arg_A': '*bf16', 'arg_B': '*bf16', 'out_ptr0': '*bf16'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]]}]},
inductor_meta={'kernel_name': 'triton_tem_fused_addmm_permute_t_view_4', 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': True, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'coordinate_descent_tuning': True, 'coordinate_descent_search_radius': 1, 'coordinate_descent_check_all_directions': False, 'grid_type': 'FixedGrid', 'fixed_grid': ['_grid_0', '_grid_1', '_grid_2'], 'extra_launcher_args': ['_grid_0', '_grid_1', '_grid_2'], 'config_args': {'EVEN_K': True, 'USE_FAST_ACCUM': False, 'ACC_TYPE': 'tl.float32', 'BLOCK_M': 64, 'BLOCK_N': 128, 'BLOCK_K': 64, 'GROUP_M': 8, 'ALLOW_TF32': False}},

)
@triton.jit
def triton_tem_fused_addmm_permute_t_view_4(in_ptr0, arg_A, arg_B, out_ptr0):
    EVEN_K : tl.constexpr = True
    USE_FAST_ACCUM : tl.constexpr = False
    ACC_TYPE : tl.constexpr = tl.float32
    BLOCK_M : tl.constexpr = 64
    BLOCK_N : tl.constexpr = 128
    BLOCK_K : tl.constexpr = 64
    GROUP_M : tl.constexpr = 8
    ALLOW_TF32 : tl.constexpr = False
    INDEX_DTYPE : tl.constexpr = tl.int32
    A = arg_A
    B = arg_B

    M = 36864
    N = 512
    K = 512
    if M * N == 0:
        # early exit due to zero-size input(s)
        return
    stride_am = 512
    stride_ak = 1
    stride_bk = 1
    stride_bn = 512

    # based on triton.ops.matmul
    pid = tl.program_id(0).to(INDEX_DTYPE)
    grid_m = (M + BLOCK_M - 1) // BLOCK_M
    grid_n = (N + BLOCK_N - 1) // BLOCK_N

    # re-order program ID for better L2 performance
    width = GROUP_M * grid_n
    group_id = pid // width
    group_size = min(grid_m - group_id * GROUP_M, GROUP_M)
    pid_m = group_id * GROUP_M + (pid % group_size)
    pid_n = (pid % width) // (group_size)
    tl.assume(pid_m >= 0)
    tl.assume(pid_n >= 0)

    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    if ((stride_am == 1 and stride_ak == M) or (stride_am == K and stride_ak == 1)) and (M >= BLOCK_M and K > 1):
        offs_a_m = tl.max_contiguous(tl.multiple_of(rm % M, BLOCK_M), BLOCK_M)
    else:
        offs_a_m = rm % M
    if ((stride_bk == 1 and stride_bn == K) or (stride_bk == N and stride_bn == 1)) and (N >= BLOCK_N and K > 1):
        offs_b_n = tl.max_contiguous(tl.multiple_of(rn % N, BLOCK_N), BLOCK_N)
    else:
        offs_b_n = rn % N
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC_TYPE)

    for k_idx in range(0, tl.cdiv(K, BLOCK_K)):

        a_k_idx_vals = offs_k[None, :] + (k_idx * BLOCK_K)
        b_k_idx_vals = offs_k[:, None] + (k_idx * BLOCK_K)

        idx_m = offs_a_m[:, None]
        idx_n = a_k_idx_vals
        xindex = idx_n + 512*idx_m
        a = tl.load(A + (xindex))

        idx_m = b_k_idx_vals
        idx_n = offs_b_n[None, :]
        xindex = idx_n + 512*idx_m
        b = tl.load(B + ((tl.broadcast_to(idx_m + 512*idx_n, [BLOCK_K, BLOCK_N])).broadcast_to(xindex.shape)))


        acc += tl.dot(a, b, allow_tf32=ALLOW_TF32, out_dtype=ACC_TYPE)


    # rematerialize rm and rn to save registers
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    idx_m = rm[:, None]
    idx_n = rn[None, :]
    mask = (idx_m < M) & (idx_n < N)

    # inductor generates a suffix
    xindex = idx_n + 512*idx_m
    tmp0 = tl.load(in_ptr0 + (tl.broadcast_to(idx_n, [BLOCK_M, BLOCK_N])), mask, eviction_policy='evict_last').to(tl.float32)
    tmp1 = acc + tmp0
    tl.store(out_ptr0 + (tl.broadcast_to(xindex, [BLOCK_M, BLOCK_N])), tmp1, mask)
''', device_str='cuda')


# kernel path: /tmp/vp3/.partial-20261129T060241Z-ch14.model_compile_reduced_precision-aab5/compile_cache/inductor/fi/cfioytsvc4a6lyorhbjcu2exniifzneipvrc7suz3q73ftzj5ulw.py
# Topologically Sorted Source Nodes: [multi_head_attention_forward, x_1, add_1, x_2], Original ATen: [aten.view, aten.transpose, aten.add, aten.native_layer_norm]
# Source node to ATen node mapping:
#   add_1 => add_2
#   multi_head_attention_forward => view_11
#   x_1 => permute_8
#   x_2 => add_3, add_4, convert_element_type_5, convert_element_type_6, mul, mul_1, rsqrt, sub, var_mean
# Graph fragment:
#   %add : Tensor "bf16[24, 1536, 512][786432, 512, 1]cuda:0" = PlaceHolder[target=add]
#   %addmm : Tensor "bf16[36864, 512][512, 1]cuda:0" = PlaceHolder[target=addmm]
#   %getitem_10 : Tensor "f32[24, 1536, 1][1536, 1, 36864]cuda:0" = PlaceHolder[target=getitem_10]
#   %buf12 : Tensor "f32[24, 1536, 1][1536, 1, 36864]cuda:0" = PlaceHolder[target=buf12]
#   %arg7_1 : Tensor "bf16[512][1]cuda:0" = PlaceHolder[target=arg7_1]
#   %arg8_1 : Tensor "bf16[512][1]cuda:0" = PlaceHolder[target=arg8_1]
#   %view_11 : Tensor "bf16[1536, 24, 512][12288, 512, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%addmm, [1536, 24, 512]), kwargs = {})
#   %permute_8 : Tensor "bf16[24, 1536, 512][512, 12288, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.permute.default](args = (%view_11, [1, 0, 2]), kwargs = {})
#   %add_2 : Tensor "bf16[24, 1536, 512][786432, 512, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%add, %permute_8), kwargs = {})
#   %convert_element_type_5 : Tensor "f32[24, 1536, 512][786432, 512, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%add_2, torch.float32), kwargs = {})
#   %var_mean : [num_users=2] = call_function[target=torch.ops.aten.var_mean.correction](args = (%convert_element_type_5, [2]), kwargs = {correction: 0, keepdim: True})
#   %sub : Tensor "f32[24, 1536, 512][786432, 512, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.sub.Tensor](args = (%convert_element_type_5, %getitem_10), kwargs = {})
#   %add_3 : Tensor "f32[24, 1536, 1][1536, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%getitem_9, 1e-05), kwargs = {})
#   %rsqrt : Tensor "f32[24, 1536, 1][1536, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.rsqrt.default](args = (%add_3,), kwargs = {})
#   %mul : Tensor "f32[24, 1536, 512][786432, 512, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%sub, %rsqrt), kwargs = {})
#   %mul_1 : Tensor "f32[24, 1536, 512][786432, 512, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%mul, %arg7_1), kwargs = {})
#   %add_4 : Tensor "f32[24, 1536, 512][786432, 512, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%mul_1, %arg8_1), kwargs = {})
#   %convert_element_type_6 : Tensor "bf16[24, 1536, 512][786432, 512, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%add_4, torch.bfloat16), kwargs = {})
#   return %getitem_10,%buf12,%convert_element_type_6
triton_red_fused_add_native_layer_norm_transpose_view_5 = async_compile.triton('triton_red_fused_add_native_layer_norm_transpose_view_5', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.reduction(
    size_hints={'x': 65536, 'r0_': 512},
    reduction_hint=ReductionHint.INNER,
    filename=__file__,
    triton_meta={'signature': {'in_out_ptr0': '*bf16', 'in_ptr0': '*bf16', 'in_ptr1': '*bf16', 'in_ptr2': '*bf16', 'xnumel': 'i32', 'r0_numel': 'i32', 'XBLOCK': 'constexpr', 'R0_BLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]], (4,): [['tt.divisibility', 16]], (5,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_red_fused_add_native_layer_norm_transpose_view_5', 'mutated_arg_names': ['in_out_ptr0'], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 6, 'num_store': 1, 'num_reduction': 2, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': True, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'coordinate_descent_tuning': True, 'coordinate_descent_search_radius': 1, 'coordinate_descent_check_all_directions': False, 'tiling_scores': {'x': 0, 'r0_': 150996992}}
)
@triton.jit
def triton_red_fused_add_native_layer_norm_transpose_view_5(in_out_ptr0, in_ptr0, in_ptr1, in_ptr2, xnumel, r0_numel, XBLOCK : tl.constexpr, R0_BLOCK : tl.constexpr):
    xnumel = 36864
    r0_numel = 512
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = tl.full([XBLOCK], True, tl.int1)[:, None]
    r0_base = tl.arange(0, R0_BLOCK)[None, :]
    rbase = r0_base
    x3 = xindex
    x0 = (xindex % 1536)
    x1 = xindex // 1536
    tmp5_mean = tl.zeros([XBLOCK, R0_BLOCK], tl.float32)
    tmp5_m2 = tl.zeros([XBLOCK, R0_BLOCK], tl.float32)
    tmp5_weight = tl.zeros([XBLOCK, R0_BLOCK], tl.float32)
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        roffset = r0_offset
        rindex = r0_index
        r0_2 = r0_index
        tmp0 = tl.load(in_out_ptr0 + (r0_2 + 512*x3), r0_mask, eviction_policy='evict_last', other=0.0).to(tl.float32)
        tmp1 = tl.load(in_ptr0 + (r0_2 + 512*x1 + 12288*x0), r0_mask, eviction_policy='evict_last', other=0.0).to(tl.float32)
        tmp2 = tmp0 + tmp1
        tmp3 = tmp2.to(tl.float32)
        tmp4 = tl.broadcast_to(tmp3, [XBLOCK, R0_BLOCK])
        tmp5_mean_next, tmp5_m2_next, tmp5_weight_next = triton_helpers.welford_reduce(
            tmp4, tmp5_mean, tmp5_m2, tmp5_weight, roffset == 0
        )
        tmp5_mean = tl.where(r0_mask, tmp5_mean_next, tmp5_mean)
        tmp5_m2 = tl.where(r0_mask, tmp5_m2_next, tmp5_m2)
        tmp5_weight = tl.where(r0_mask, tmp5_weight_next, tmp5_weight)
    tmp6, tmp7, tmp8 = triton_helpers.welford(tmp5_mean, tmp5_m2, tmp5_weight, 1)
    tmp5 = tmp6[:, None]
    tmp9 = tmp7[:, None]
    tmp10 = tmp8[:, None]
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        roffset = r0_offset
        rindex = r0_index
        r0_2 = r0_index
        tmp11 = tl.load(in_out_ptr0 + (r0_2 + 512*x3), r0_mask, eviction_policy='evict_first', other=0.0).to(tl.float32)
        tmp12 = tl.load(in_ptr0 + (r0_2 + 512*x1 + 12288*x0), r0_mask, eviction_policy='evict_first', other=0.0).to(tl.float32)
        tmp22 = tl.load(in_ptr1 + (r0_2), r0_mask, eviction_policy='evict_last', other=0.0).to(tl.float32)
        tmp25 = tl.load(in_ptr2 + (r0_2), r0_mask, eviction_policy='evict_last', other=0.0).to(tl.float32)
        tmp13 = tmp11 + tmp12
        tmp14 = tmp13.to(tl.float32)
        tmp15 = tmp14 - tmp5
        tmp16 = tl.full([1, 1], 512.0, tl.float32)
        tmp17 = (tmp9 / tmp16)
        tmp18 = tl.full([1, 1], 1e-05, tl.float32)
        tmp19 = tmp17 + tmp18
        tmp20 = libdevice.rsqrt(tmp19)
        tmp21 = tmp15 * tmp20
        tmp23 = tmp22.to(tl.float32)
        tmp24 = tmp21 * tmp23
        tmp26 = tmp25.to(tl.float32)
        tmp27 = tmp24 + tmp26
        tmp28 = tmp27.to(tl.float32)
        tl.store(in_out_ptr0 + (r0_2 + 512*x3), tmp28, r0_mask)
''', device_str='cuda')


# kernel path: /tmp/vp3/.partial-20261129T060241Z-ch14.model_compile_reduced_precision-aab5/compile_cache/inductor/zr/czr5b5dba4vkwszmwckwkig3tju65tecsgc5eps4kizoo4sr72sv.py
# Topologically Sorted Source Nodes: [linear, relu], Original ATen: [aten.view, aten.relu]
# Source node to ATen node mapping:
#   linear => view_13
#   relu => relu
# Graph fragment:
#   %addmm_1 : Tensor "bf16[36864, 2048][2048, 1]cuda:0" = PlaceHolder[target=addmm_1]
#   %view_13 : Tensor "bf16[24, 1536, 2048][3145728, 2048, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%addmm_1, [24, 1536, 2048]), kwargs = {})
#   %relu : Tensor "bf16[24, 1536, 2048][3145728, 2048, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.relu.default](args = (%view_13,), kwargs = {})
#   return %relu
triton_poi_fused_relu_view_6 = async_compile.triton('triton_poi_fused_relu_view_6', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.pointwise(
    size_hints={'x': 134217728}, 
    filename=__file__,
    triton_meta={'signature': {'in_out_ptr0': '*bf16', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_poi_fused_relu_view_6', 'mutated_arg_names': ['in_out_ptr0'], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 1, 'num_store': 1, 'num_reduction': 0, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': True, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'coordinate_descent_tuning': True, 'coordinate_descent_search_radius': 1, 'coordinate_descent_check_all_directions': False, 'tiling_scores': {'x': 452984832}},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused_relu_view_6(in_out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xnumel = 75497472
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = tl.full([XBLOCK], True, tl.int1)[:]
    x0 = xindex
    tmp0 = tl.load(in_out_ptr0 + (x0), None).to(tl.float32)
    tmp1 = tl.full([1], 0, tl.int32)
    tmp2 = triton_helpers.maximum(tmp1, tmp0)
    tl.store(in_out_ptr0 + (x0), tmp2, None)
''', device_str='cuda')


# kernel path: /tmp/vp3/.partial-20261129T060241Z-ch14.model_compile_reduced_precision-aab5/compile_cache/inductor/w3/cw32nkfqok7zso4ys75vadej7winz4k4si2a4tbdt5xnftjhjrtn.py
# Topologically Sorted Source Nodes: [x_3, add_2, x_4], Original ATen: [aten.view, aten.add, aten.native_layer_norm]
# Source node to ATen node mapping:
#   add_2 => add_5
#   x_3 => view_15
#   x_4 => add_6, add_7, convert_element_type_13, convert_element_type_14, mul_2, mul_3, rsqrt_1, sub_1, var_mean_1
# Graph fragment:
#   %convert_element_type_6 : Tensor "bf16[24, 1536, 512][786432, 512, 1]cuda:0" = PlaceHolder[target=convert_element_type_6]
#   %addmm_2 : Tensor "bf16[36864, 512][512, 1]cuda:0" = PlaceHolder[target=addmm_2]
#   %getitem_12 : Tensor "f32[24, 1536, 1][1536, 1, 36864]cuda:0" = PlaceHolder[target=getitem_12]
#   %buf19 : Tensor "f32[24, 1536, 1][1536, 1, 36864]cuda:0" = PlaceHolder[target=buf19]
#   %arg13_1 : Tensor "bf16[512][1]cuda:0" = PlaceHolder[target=arg13_1]
#   %arg14_1 : Tensor "bf16[512][1]cuda:0" = PlaceHolder[target=arg14_1]
#   %view_15 : Tensor "bf16[24, 1536, 512][786432, 512, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%addmm_2, [24, 1536, 512]), kwargs = {})
#   %add_5 : Tensor "bf16[24, 1536, 512][786432, 512, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%convert_element_type_6, %view_15), kwargs = {})
#   %convert_element_type_13 : Tensor "f32[24, 1536, 512][786432, 512, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%add_5, torch.float32), kwargs = {})
#   %var_mean_1 : [num_users=2] = call_function[target=torch.ops.aten.var_mean.correction](args = (%convert_element_type_13, [2]), kwargs = {correction: 0, keepdim: True})
#   %sub_1 : Tensor "f32[24, 1536, 512][786432, 512, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.sub.Tensor](args = (%convert_element_type_13, %getitem_12), kwargs = {})
#   %add_6 : Tensor "f32[24, 1536, 1][1536, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%getitem_11, 1e-05), kwargs = {})
#   %rsqrt_1 : Tensor "f32[24, 1536, 1][1536, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.rsqrt.default](args = (%add_6,), kwargs = {})
#   %mul_2 : Tensor "f32[24, 1536, 512][786432, 512, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%sub_1, %rsqrt_1), kwargs = {})
#   %mul_3 : Tensor "f32[24, 1536, 512][786432, 512, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%mul_2, %arg13_1), kwargs = {})
#   %add_7 : Tensor "f32[24, 1536, 512][786432, 512, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%mul_3, %arg14_1), kwargs = {})
#   %convert_element_type_14 : Tensor "bf16[24, 1536, 512][786432, 512, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%add_7, torch.bfloat16), kwargs = {})
#   return %getitem_12,%buf19,%convert_element_type_14
triton_per_fused_add_native_layer_norm_view_7 = async_compile.triton('triton_per_fused_add_native_layer_norm_view_7', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.persistent_reduction(
    size_hints={'x': 65536, 'r0_': 512},
    reduction_hint=ReductionHint.INNER,
    filename=__file__,
    triton_meta={'signature': {'in_out_ptr0': '*bf16', 'in_ptr0': '*bf16', 'in_ptr1': '*bf16', 'in_ptr2': '*bf16', 'xnumel': 'i32', 'r0_numel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]], (4,): [['tt.divisibility', 16]], (5,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_per_fused_add_native_layer_norm_view_7', 'mutated_arg_names': ['in_out_ptr0'], 'optimize_mem': True, 'no_x_dim': None, 'atomic_add_found': False, 'num_load': 4, 'num_store': 1, 'num_reduction': 4, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': True, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'coordinate_descent_tuning': True, 'coordinate_descent_search_radius': 1, 'coordinate_descent_check_all_directions': False, 'tiling_scores': {'x': 0, 'r0_': 150996992}}
)
@triton.jit
def triton_per_fused_add_native_layer_norm_view_7(in_out_ptr0, in_ptr0, in_ptr1, in_ptr2, xnumel, r0_numel, XBLOCK : tl.constexpr):
    xnumel = 36864
    r0_numel = 512
    R0_BLOCK: tl.constexpr = 512
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = tl.full([XBLOCK], True, tl.int1)[:, None]
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_offset = 0
    r0_mask = tl.full([R0_BLOCK], True, tl.int1)[None, :]
    roffset = r0_offset
    rindex = r0_index
    r0_1 = r0_index
    x0 = xindex
    tmp0 = tl.load(in_out_ptr0 + (r0_1 + 512*x0), None).to(tl.float32)
    tmp1 = tl.load(in_ptr0 + (r0_1 + 512*x0), None).to(tl.float32)
    tmp24 = tl.load(in_ptr1 + (r0_1), None, eviction_policy='evict_last').to(tl.float32)
    tmp27 = tl.load(in_ptr2 + (r0_1), None, eviction_policy='evict_last').to(tl.float32)
    tmp2 = tmp0 + tmp1
    tmp3 = tmp2.to(tl.float32)
    tmp4 = tl.broadcast_to(tmp3, [XBLOCK, R0_BLOCK])
    tmp6 = tl.broadcast_to(tmp4, [XBLOCK, R0_BLOCK])
    tmp8 = tl.sum(tmp6, 1)[:, None].to(tl.float32)
    tmp9 = tl.full([1, 1], 512, tl.int32)
    tmp10 = tmp9.to(tl.float32)
    tmp11 = (tmp8 / tmp10)
    tmp12 = tmp4 - tmp11
    tmp13 = tmp12 * tmp12
    tmp14 = tl.broadcast_to(tmp13, [XBLOCK, R0_BLOCK])
    tmp16 = tl.sum(tmp14, 1)[:, None].to(tl.float32)
    tmp17 = tmp3 - tmp11
    tmp18 = tl.full([1, 1], 512.0, tl.float32)
    tmp19 = (tmp16 / tmp18)
    tmp20 = tl.full([1, 1], 1e-05, tl.float32)
    tmp21 = tmp19 + tmp20
    tmp22 = libdevice.rsqrt(tmp21)
    tmp23 = tmp17 * tmp22
    tmp25 = tmp24.to(tl.float32)
    tmp26 = tmp23 * tmp25
    tmp28 = tmp27.to(tl.float32)
    tmp29 = tmp26 + tmp28
    tmp30 = tmp29.to(tl.float32)
    tl.store(in_out_ptr0 + (r0_1 + 512*x0), tmp30, None)
''', device_str='cuda')


# kernel path: /tmp/vp3/.partial-20261129T060241Z-ch14.model_compile_reduced_precision-aab5/compile_cache/inductor/gl/cglf3uugz7xiqnhtyh32x4m2pp3k7vmeksx4vva5jtth4622qpuw.py
# Topologically Sorted Source Nodes: [multi_head_attention_forward_1], Original ATen: [aten.permute, aten.view, aten.t, aten.addmm]
# Source node to ATen node mapping:
#   multi_head_attention_forward_1 => addmm_3, permute_17, permute_18, view_26
# Graph fragment:
#   %arg18_1 : Tensor "bf16[512][1]cuda:0" = PlaceHolder[target=arg18_1]
#   %getitem_13 : Tensor "bf16[24, 8, 1536, 64][512, 64, 12288, 1]cuda:0" = PlaceHolder[target=getitem_13]
#   %arg17_1 : Tensor "bf16[512, 512][512, 1]cuda:0" = PlaceHolder[target=arg17_1]
#   %permute_17 : Tensor "bf16[1536, 24, 8, 64][12288, 512, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.permute.default](args = (%getitem_13, [2, 0, 1, 3]), kwargs = {})
#   %view_26 : Tensor "bf16[36864, 512][512, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%permute_17, [36864, 512]), kwargs = {})
#   %permute_18 : Tensor "bf16[512, 512][1, 512]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.permute.default](args = (%arg17_1, [1, 0]), kwargs = {})
#   %addmm_3 : Tensor "bf16[36864, 512][512, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.addmm.default](args = (%arg18_1, %view_26, %permute_18), kwargs = {})
#   return %addmm_3
triton_tem_fused_addmm_permute_t_view_8 = async_compile.triton('triton_tem_fused_addmm_permute_t_view_8', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties

@triton_heuristics.template(

num_stages=3,
num_warps=4,
triton_meta={'signature': {'in_ptr0': '*bf16', 'arg_A': '*bf16', 'arg_B': '*bf16', 'out_ptr0': '*bf16'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]]}]},
inductor_meta={'kernel_name': 'triton_tem_fused_addmm_permute_t_view_8', 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': True, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'coordinate_descent_tuning': True, 'coordinate_descent_search_radius': 1, 'coordinate_descent_check_all_directions': False, 'grid_type': 'FixedGrid', 'fixed_grid': ['_grid_0', '_grid_1', '_grid_2'], 'extra_launcher_args': ['_grid_0', '_grid_1', '_grid_2'], 'config_args': {'EVEN_K': True, 'USE_FAST_ACCUM': False, 'ACC_TYPE': 'tl.float32', 'BLOCK_M': 128, 'BLOCK_N': 128, 'BLOCK_K': 64, 'GROUP_M': 8, 'ALLOW_TF32': False}},

)
@triton.jit
def triton_tem_fused_addmm_permute_t_view_8(in_ptr0, arg_A, arg_B, out_ptr0):
    EVEN_K : tl.constexpr = True
    USE_FAST_ACCUM : tl.constexpr = False
    ACC_TYPE : tl.constexpr = tl.float32
    BLOCK_M : tl.constexpr = 128
    BLOCK_N : tl.constexpr = 128
    BLOCK_K : tl.constexpr = 64
    GROUP_M : tl.constexpr = 8
    ALLOW_TF32 : tl.constexpr = False
    INDEX_DTYPE : tl.constexpr = tl.int32
    A = arg_A
    B = arg_B

    M = 36864
    N = 512
    K = 512
    if M * N == 0:
        # early exit due to zero-size input(s)
        return
    stride_am = 512
    stride_ak = 1
    stride_bk = 1
    stride_bn = 512

    # based on triton.ops.matmul
    pid = tl.program_id(0).to(INDEX_DTYPE)
    grid_m = (M + BLOCK_M - 1) // BLOCK_M
    grid_n = (N + BLOCK_N - 1) // BLOCK_N

    # re-order program ID for better L2 performance
    width = GROUP_M * grid_n
    group_id = pid // width
    group_size = min(grid_m - group_id * GROUP_M, GROUP_M)
    pid_m = group_id * GROUP_M + (pid % group_size)
    pid_n = (pid % width) // (group_size)
    tl.assume(pid_m >= 0)
    tl.assume(pid_n >= 0)

    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    if ((stride_am == 1 and stride_ak == M) or (stride_am == K and stride_ak == 1)) and (M >= BLOCK_M and K > 1):
        offs_a_m = tl.max_contiguous(tl.multiple_of(rm % M, BLOCK_M), BLOCK_M)
    else:
        offs_a_m = rm % M
    if ((stride_bk == 1 and stride_bn == K) or (stride_bk == N and stride_bn == 1)) and (N >= BLOCK_N and K > 1):
        offs_b_n = tl.max_contiguous(tl.multiple_of(rn % N, BLOCK_N), BLOCK_N)
    else:
        offs_b_n = rn % N
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC_TYPE)

    for k_idx in range(0, tl.cdiv(K, BLOCK_K)):

        a_k_idx_vals = offs_k[None, :] + (k_idx * BLOCK_K)
        b_k_idx_vals = offs_k[:, None] + (k_idx * BLOCK_K)

        idx_m = offs_a_m[:, None]
        idx_n = a_k_idx_vals
        xindex = idx_n + 512*idx_m
        a = tl.load(A + (xindex))

        idx_m = b_k_idx_vals
        idx_n = offs_b_n[None, :]
        xindex = idx_n + 512*idx_m
        b = tl.load(B + ((tl.broadcast_to(idx_m + 512*idx_n, [BLOCK_K, BLOCK_N])).broadcast_to(xindex.shape)))


        acc += tl.dot(a, b, allow_tf32=ALLOW_TF32, out_dtype=ACC_TYPE)


    # rematerialize rm and rn to save registers
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    idx_m = rm[:, None]
    idx_n = rn[None, :]
    mask = (idx_m < M) & (idx_n < N)

    # inductor generates a suffix
    xindex = idx_n + 512*idx_m
    tmp0 = tl.load(in_ptr0 + (tl.broadcast_to(idx_n, [BLOCK_M, BLOCK_N])), mask, eviction_policy='evict_last').to(tl.float32)
    tmp1 = acc + tmp0
    tl.store(out_ptr0 + (tl.broadcast_to(xindex, [BLOCK_M, BLOCK_N])), tmp1, mask)
''', device_str='cuda')


async_compile.wait(globals())
del async_compile

class Runner:
    def __init__(self, partitions):
        self.partitions = partitions

    def recursively_apply_fns(self, fns):
        new_callables = []
        for fn, c in zip(fns, self.partitions):
            new_callables.append(fn(c))
        self.partitions = new_callables

    def call(self, args):
        arg0_1, arg1_1, arg2_1, arg3_1, arg4_1, arg5_1, arg6_1, arg7_1, arg8_1, arg9_1, arg10_1, arg11_1, arg12_1, arg13_1, arg14_1, arg15_1, arg16_1, arg17_1, arg18_1, arg19_1, arg20_1, arg21_1, arg22_1, arg23_1, arg24_1, arg25_1, arg26_1, arg27_1, arg28_1, arg29_1, arg30_1, arg31_1, arg32_1, arg33_1, arg34_1, arg35_1, arg36_1, arg37_1, arg38_1, arg39_1, arg40_1, arg41_1, arg42_1, arg43_1, arg44_1, arg45_1, arg46_1, arg47_1, arg48_1, arg49_1, arg50_1, arg51_1, arg52_1, arg53_1, arg54_1, arg55_1, arg56_1, arg57_1, arg58_1, arg59_1, arg60_1, arg61_1, arg62_1, arg63_1, arg64_1, arg65_1, arg66_1, arg67_1, arg68_1, arg69_1, arg70_1, arg71_1, arg72_1, arg73_1, arg74_1, arg75_1, arg76_1 = args
        args.clear()
        assert_size_stride(arg0_1, (10000, 512), (512, 1))
        assert_size_stride(arg1_1, (24, 1536), (1536, 1))
        assert_size_stride(arg2_1, (1, 2048, 512), (1048576, 512, 1))
        assert_size_stride(arg3_1, (1536, 512), (512, 1))
        assert_size_stride(arg4_1, (1536, ), (1, ))
        assert_size_stride(arg5_1, (512, 512), (512, 1))
        assert_size_stride(arg6_1, (512, ), (1, ))
        assert_size_stride(arg7_1, (512, ), (1, ))
        assert_size_stride(arg8_1, (512, ), (1, ))
        assert_size_stride(arg9_1, (2048, 512), (512, 1))
        assert_size_stride(arg10_1, (2048, ), (1, ))
        assert_size_stride(arg11_1, (512, 2048), (2048, 1))
        assert_size_stride(arg12_1, (512, ), (1, ))
        assert_size_stride(arg13_1, (512, ), (1, ))
        assert_size_stride(arg14_1, (512, ), (1, ))
        assert_size_stride(arg15_1, (1536, 512), (512, 1))
        assert_size_stride(arg16_1, (1536, ), (1, ))
        assert_size_stride(arg17_1, (512, 512), (512, 1))
        assert_size_stride(arg18_1, (512, ), (1, ))
        assert_size_stride(arg19_1, (512, ), (1, ))
        assert_size_stride(arg20_1, (512, ), (1, ))
        assert_size_stride(arg21_1, (2048, 512), (512, 1))
        assert_size_stride(arg22_1, (2048, ), (1, ))
        assert_size_stride(arg23_1, (512, 2048), (2048, 1))
        assert_size_stride(arg24_1, (512, ), (1, ))
        assert_size_stride(arg25_1, (512, ), (1, ))
        assert_size_stride(arg26_1, (512, ), (1, ))
        assert_size_stride(arg27_1, (1536, 512), (512, 1))
        assert_size_stride(arg28_1, (1536, ), (1, ))
        assert_size_stride(arg29_1, (512, 512), (512, 1))
        assert_size_stride(arg30_1, (512, ), (1, ))
        assert_size_stride(arg31_1, (512, ), (1, ))
        assert_size_stride(arg32_1, (512, ), (1, ))
        assert_size_stride(arg33_1, (2048, 512), (512, 1))
        assert_size_stride(arg34_1, (2048, ), (1, ))
        assert_size_stride(arg35_1, (512, 2048), (2048, 1))
        assert_size_stride(arg36_1, (512, ), (1, ))
        assert_size_stride(arg37_1, (512, ), (1, ))
        assert_size_stride(arg38_1, (512, ), (1, ))
        assert_size_stride(arg39_1, (1536, 512), (512, 1))
        assert_size_stride(arg40_1, (1536, ), (1, ))
        assert_size_stride(arg41_1, (512, 512), (512, 1))
        assert_size_stride(arg42_1, (512, ), (1, ))
        assert_size_stride(arg43_1, (512, ), (1, ))
        assert_size_stride(arg44_1, (512, ), (1, ))
        assert_size_stride(arg45_1, (2048, 512), (512, 1))
        assert_size_stride(arg46_1, (2048, ), (1, ))
        assert_size_stride(arg47_1, (512, 2048), (2048, 1))
        assert_size_stride(arg48_1, (512, ), (1, ))
        assert_size_stride(arg49_1, (512, ), (1, ))
        assert_size_stride(arg50_1, (512, ), (1, ))
        assert_size_stride(arg51_1, (1536, 512), (512, 1))
        assert_size_stride(arg52_1, (1536, ), (1, ))
        assert_size_stride(arg53_1, (512, 512), (512, 1))
        assert_size_stride(arg54_1, (512, ), (1, ))
        assert_size_stride(arg55_1, (512, ), (1, ))
        assert_size_stride(arg56_1, (512, ), (1, ))
        assert_size_stride(arg57_1, (2048, 512), (512, 1))
        assert_size_stride(arg58_1, (2048, ), (1, ))
        assert_size_stride(arg59_1, (512, 2048), (2048, 1))
        assert_size_stride(arg60_1, (512, ), (1, ))
        assert_size_stride(arg61_1, (512, ), (1, ))
        assert_size_stride(arg62_1, (512, ), (1, ))
        assert_size_stride(arg63_1, (1536, 512), (512, 1))
        assert_size_stride(arg64_1, (1536, ), (1, ))
        assert_size_stride(arg65_1, (512, 512), (512, 1))
        assert_size_stride(arg66_1, (512, ), (1, ))
        assert_size_stride(arg67_1, (512, ), (1, ))
        assert_size_stride(arg68_1, (512, ), (1, ))
        assert_size_stride(arg69_1, (2048, 512), (512, 1))
        assert_size_stride(arg70_1, (2048, ), (1, ))
        assert_size_stride(arg71_1, (512, 2048), (2048, 1))
        assert_size_stride(arg72_1, (512, ), (1, ))
        assert_size_stride(arg73_1, (512, ), (1, ))
        assert_size_stride(arg74_1, (512, ), (1, ))
        assert_size_stride(arg75_1, (10000, 512), (512, 1))
        assert_size_stride(arg76_1, (10000, ), (1, ))
        with torch.cuda._DeviceGuard(0):
            torch.cuda.set_device(0)
            buf0 = empty_strided_cuda((24, 1536, 512), (786432, 512, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [embedding, getitem, x], Original ATen: [aten.embedding, aten.slice, aten.add]
            stream0 = get_raw_stream(0)
            triton_poi_fused_add_embedding_slice_0.run(arg1_1, arg0_1, arg2_1, buf0, 18874368, stream=stream0)
            del arg0_1
            del arg1_1
            del arg2_1
            buf1 = empty_strided_cuda((1536, 24, 1536), (36864, 1536, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [embedding, getitem, x, query, multi_head_attention_forward], Original ATen: [aten.embedding, aten.slice, aten.add, aten.transpose, aten.t, aten.expand, aten.bmm]
            extern_kernels.bmm(reinterpret_tensor(buf0, (1536, 24, 512), (512, 786432, 1), 0), reinterpret_tensor(arg3_1, (1536, 512, 1536), (0, 1, 512), 0), out=buf1)
            del arg3_1
            buf2 = empty_strided_cuda((24, 8, 1536, 64), (512, 64, 12288, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [multi_head_attention_forward], Original ATen: [aten.add, aten.view, aten.unsqueeze, aten.transpose, aten.squeeze, aten.clone, aten.select, aten._scaled_dot_product_cudnn_attention]
            stream0 = get_raw_stream(0)
            triton_poi_fused__scaled_dot_product_cudnn_attention_add_clone_select_squeeze_transpose_unsqueeze_view_1.run(buf1, arg4_1, buf2, 18874368, stream=stream0)
            buf3 = empty_strided_cuda((24, 8, 1536, 64), (512, 64, 12288, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [multi_head_attention_forward], Original ATen: [aten.add, aten.view, aten.unsqueeze, aten.transpose, aten.squeeze, aten.clone, aten.select, aten._scaled_dot_product_cudnn_attention]
            stream0 = get_raw_stream(0)
            triton_poi_fused__scaled_dot_product_cudnn_attention_add_clone_select_squeeze_transpose_unsqueeze_view_2.run(buf1, arg4_1, buf3, 18874368, stream=stream0)
            buf4 = empty_strided_cuda((24, 8, 1536, 64), (512, 64, 12288, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [multi_head_attention_forward], Original ATen: [aten.add, aten.view, aten.unsqueeze, aten.transpose, aten.squeeze, aten.clone, aten.select, aten._scaled_dot_product_cudnn_attention]
            stream0 = get_raw_stream(0)
            triton_poi_fused__scaled_dot_product_cudnn_attention_add_clone_select_squeeze_transpose_unsqueeze_view_3.run(buf1, arg4_1, buf4, 18874368, stream=stream0)
            del arg4_1
            del buf1
            # Topologically Sorted Source Nodes: [multi_head_attention_forward], Original ATen: [aten.add, aten.view, aten.unsqueeze, aten.transpose, aten.squeeze, aten.clone, aten.select, aten._scaled_dot_product_cudnn_attention]
            buf5 = torch.ops.aten._scaled_dot_product_cudnn_attention.default(buf2, buf3, buf4, None, False)
            del buf2
            buf6 = buf5[0]
            assert_size_stride(buf6, (24, 8, 1536, 64), (512, 64, 12288, 1), 'torch.ops.aten._scaled_dot_product_cudnn_attention.default')
            assert_alignment(buf6, 16, 'torch.ops.aten._scaled_dot_product_cudnn_attention.default')
            del buf5
            buf10 = reinterpret_tensor(buf4, (36864, 512), (512, 1), 0); del buf4  # reuse
            # Topologically Sorted Source Nodes: [multi_head_attention_forward], Original ATen: [aten.permute, aten.view, aten.t, aten.addmm]
            stream0 = get_raw_stream(0)
            triton_tem_fused_addmm_permute_t_view_4.run(arg6_1, buf6, arg5_1, buf10, 2304, 1, 1, stream=stream0)
            del arg5_1
            del arg6_1
            buf14 = buf0; del buf0  # reuse
            # Topologically Sorted Source Nodes: [multi_head_attention_forward, x_1, add_1, x_2], Original ATen: [aten.view, aten.transpose, aten.add, aten.native_layer_norm]
            stream0 = get_raw_stream(0)
            triton_red_fused_add_native_layer_norm_transpose_view_5.run(buf14, buf10, arg7_1, arg8_1, 36864, 512, stream=stream0)
            del arg7_1
            del arg8_1
            buf15 = empty_strided_cuda((36864, 2048), (2048, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [linear], Original ATen: [aten.view, aten.t, aten.addmm]
            extern_kernels.bias_addmm(reinterpret_tensor(arg10_1, (36864, 2048), (0, 1), 0), reinterpret_tensor(buf14, (36864, 512), (512, 1), 0), reinterpret_tensor(arg9_1, (512, 2048), (1, 512), 0), alpha=1, beta=1, out=buf15)
            del arg10_1
            del arg9_1
            buf16 = reinterpret_tensor(buf15, (24, 1536, 2048), (3145728, 2048, 1), 0); del buf15  # reuse
            # Topologically Sorted Source Nodes: [linear, relu], Original ATen: [aten.view, aten.relu]
            stream0 = get_raw_stream(0)
            triton_poi_fused_relu_view_6.run(buf16, 75497472, stream=stream0)
            buf17 = buf10; del buf10  # reuse
            # Topologically Sorted Source Nodes: [linear, relu, x_3], Original ATen: [aten.view, aten.relu, aten.t, aten.addmm]
            extern_kernels.bias_addmm(reinterpret_tensor(arg12_1, (36864, 512), (0, 1), 0), reinterpret_tensor(buf16, (36864, 2048), (2048, 1), 0), reinterpret_tensor(arg11_1, (2048, 512), (1, 2048), 0), alpha=1, beta=1, out=buf17)
            del arg11_1
            del arg12_1
            del buf16
            buf21 = buf14; del buf14  # reuse
            # Topologically Sorted Source Nodes: [x_3, add_2, x_4], Original ATen: [aten.view, aten.add, aten.native_layer_norm]
            stream0 = get_raw_stream(0)
            triton_per_fused_add_native_layer_norm_view_7.run(buf21, buf17, arg13_1, arg14_1, 36864, 512, stream=stream0)
            del arg13_1
            del arg14_1
            buf22 = empty_strided_cuda((1536, 24, 1536), (36864, 1536, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [query_1, multi_head_attention_forward_1], Original ATen: [aten.transpose, aten.t, aten.expand, aten.bmm]
            extern_kernels.bmm(reinterpret_tensor(buf21, (1536, 24, 512), (512, 786432, 1), 0), reinterpret_tensor(arg15_1, (1536, 512, 1536), (0, 1, 512), 0), out=buf22)
            del arg15_1
            buf23 = reinterpret_tensor(buf17, (24, 8, 1536, 64), (512, 64, 12288, 1), 0); del buf17  # reuse
            # Topologically Sorted Source Nodes: [multi_head_attention_forward_1], Original ATen: [aten.add, aten.view, aten.unsqueeze, aten.transpose, aten.squeeze, aten.clone, aten.select, aten._scaled_dot_product_cudnn_attention]
            stream0 = get_raw_stream(0)
            triton_poi_fused__scaled_dot_product_cudnn_attention_add_clone_select_squeeze_transpose_unsqueeze_view_1.run(buf22, arg16_1, buf23, 18874368, stream=stream0)
            buf24 = buf6; del buf6  # reuse
            # Topologically Sorted Source Nodes: [multi_head_attention_forward_1], Original ATen: [aten.add, aten.view, aten.unsqueeze, aten.transpose, aten.squeeze, aten.clone, aten.select, aten._scaled_dot_product_cudnn_attention]
            stream0 = get_raw_stream(0)
            triton_poi_fused__scaled_dot_product_cudnn_attention_add_clone_select_squeeze_transpose_unsqueeze_view_2.run(buf22, arg16_1, buf24, 18874368, stream=stream0)
            buf25 = buf3; del buf3  # reuse
            # Topologically Sorted Source Nodes: [multi_head_attention_forward_1], Original ATen: [aten.add, aten.view, aten.unsqueeze, aten.transpose, aten.squeeze, aten.clone, aten.select, aten._scaled_dot_product_cudnn_attention]
            stream0 = get_raw_stream(0)
            triton_poi_fused__scaled_dot_product_cudnn_attention_add_clone_select_squeeze_transpose_unsqueeze_view_3.run(buf22, arg16_1, buf25, 18874368, stream=stream0)
            del arg16_1
            del buf22
            # Topologically Sorted Source Nodes: [multi_head_attention_forward_1], Original ATen: [aten.add, aten.view, aten.unsqueeze, aten.transpose, aten.squeeze, aten.clone, aten.select, aten._scaled_dot_product_cudnn_attention]
            buf26 = torch.ops.aten._scaled_dot_product_cudnn_attention.default(buf23, buf24, buf25, None, False)
            del buf23
            buf27 = buf26[0]
            assert_size_stride(buf27, (24, 8, 1536, 64), (512, 64, 12288, 1), 'torch.ops.aten._scaled_dot_product_cudnn_attention.default')
            assert_alignment(buf27, 16, 'torch.ops.aten._scaled_dot_product_cudnn_attention.default')
            del buf26
            buf31 = reinterpret_tensor(buf25, (36864, 512), (512, 1), 0); del buf25  # reuse
            # Topologically Sorted Source Nodes: [multi_head_attention_forward_1], Original ATen: [aten.permute, aten.view, aten.t, aten.addmm]
            stream0 = get_raw_stream(0)
            triton_tem_fused_addmm_permute_t_view_8.run(arg18_1, buf27, arg17_1, buf31, 1152, 1, 1, stream=stream0)
            del arg17_1
            del arg18_1
            buf35 = buf21; del buf21  # reuse
            # Topologically Sorted Source Nodes: [multi_head_attention_forward_1, x_5, add_3, x_6], Original ATen: [aten.view, aten.transpose, aten.add, aten.native_layer_norm]
            stream0 = get_raw_stream(0)
            triton_red_fused_add_native_layer_norm_transpose_view_5.run(buf35, buf31, arg19_1, arg20_1, 36864, 512, stream=stream0)
            del arg19_1
            del arg20_1
            buf36 = empty_strided_cuda((36864, 2048), (2048, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [linear_2], Original ATen: [aten.view, aten.t, aten.addmm]
            extern_kernels.bias_addmm(reinterpret_tensor(arg22_1, (36864, 2048), (0, 1), 0), reinterpret_tensor(buf35, (36864, 512), (512, 1), 0), reinterpret_tensor(arg21_1, (512, 2048), (1, 512), 0), alpha=1, beta=1, out=buf36)
            del arg21_1
            del arg22_1
            buf37 = reinterpret_tensor(buf36, (24, 1536, 2048), (3145728, 2048, 1), 0); del buf36  # reuse
            # Topologically Sorted Source Nodes: [linear_2, relu_1], Original ATen: [aten.view, aten.relu]
            stream0 = get_raw_stream(0)
            triton_poi_fused_relu_view_6.run(buf37, 75497472, stream=stream0)
            buf38 = buf31; del buf31  # reuse
            # Topologically Sorted Source Nodes: [linear_2, relu_1, x_7], Original ATen: [aten.view, aten.relu, aten.t, aten.addmm]
            extern_kernels.bias_addmm(reinterpret_tensor(arg24_1, (36864, 512), (0, 1), 0), reinterpret_tensor(buf37, (36864, 2048), (2048, 1), 0), reinterpret_tensor(arg23_1, (2048, 512), (1, 2048), 0), alpha=1, beta=1, out=buf38)
            del arg23_1
            del arg24_1
            del buf37
            buf42 = buf35; del buf35  # reuse
            # Topologically Sorted Source Nodes: [x_7, add_4, x_8], Original ATen: [aten.view, aten.add, aten.native_layer_norm]
            stream0 = get_raw_stream(0)
            triton_per_fused_add_native_layer_norm_view_7.run(buf42, buf38, arg25_1, arg26_1, 36864, 512, stream=stream0)
            del arg25_1
            del arg26_1
            buf43 = empty_strided_cuda((1536, 24, 1536), (36864, 1536, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [query_2, multi_head_attention_forward_2], Original ATen: [aten.transpose, aten.t, aten.expand, aten.bmm]
            extern_kernels.bmm(reinterpret_tensor(buf42, (1536, 24, 512), (512, 786432, 1), 0), reinterpret_tensor(arg27_1, (1536, 512, 1536), (0, 1, 512), 0), out=buf43)
            del arg27_1
            buf44 = reinterpret_tensor(buf38, (24, 8, 1536, 64), (512, 64, 12288, 1), 0); del buf38  # reuse
            # Topologically Sorted Source Nodes: [multi_head_attention_forward_2], Original ATen: [aten.add, aten.view, aten.unsqueeze, aten.transpose, aten.squeeze, aten.clone, aten.select, aten._scaled_dot_product_cudnn_attention]
            stream0 = get_raw_stream(0)
            triton_poi_fused__scaled_dot_product_cudnn_attention_add_clone_select_squeeze_transpose_unsqueeze_view_1.run(buf43, arg28_1, buf44, 18874368, stream=stream0)
            buf45 = buf27; del buf27  # reuse
            # Topologically Sorted Source Nodes: [multi_head_attention_forward_2], Original ATen: [aten.add, aten.view, aten.unsqueeze, aten.transpose, aten.squeeze, aten.clone, aten.select, aten._scaled_dot_product_cudnn_attention]
            stream0 = get_raw_stream(0)
            triton_poi_fused__scaled_dot_product_cudnn_attention_add_clone_select_squeeze_transpose_unsqueeze_view_2.run(buf43, arg28_1, buf45, 18874368, stream=stream0)
            buf46 = buf24; del buf24  # reuse
            # Topologically Sorted Source Nodes: [multi_head_attention_forward_2], Original ATen: [aten.add, aten.view, aten.unsqueeze, aten.transpose, aten.squeeze, aten.clone, aten.select, aten._scaled_dot_product_cudnn_attention]
            stream0 = get_raw_stream(0)
            triton_poi_fused__scaled_dot_product_cudnn_attention_add_clone_select_squeeze_transpose_unsqueeze_view_3.run(buf43, arg28_1, buf46, 18874368, stream=stream0)
            del arg28_1
            del buf43
            # Topologically Sorted Source Nodes: [multi_head_attention_forward_2], Original ATen: [aten.add, aten.view, aten.unsqueeze, aten.transpose, aten.squeeze, aten.clone, aten.select, aten._scaled_dot_product_cudnn_attention]
            buf47 = torch.ops.aten._scaled_dot_product_cudnn_attention.default(buf44, buf45, buf46, None, False)
            del buf44
            buf48 = buf47[0]
            assert_size_stride(buf48, (24, 8, 1536, 64), (512, 64, 12288, 1), 'torch.ops.aten._scaled_dot_product_cudnn_attention.default')
            assert_alignment(buf48, 16, 'torch.ops.aten._scaled_dot_product_cudnn_attention.default')
            del buf47
            buf52 = reinterpret_tensor(buf46, (36864, 512), (512, 1), 0); del buf46  # reuse
            # Topologically Sorted Source Nodes: [multi_head_attention_forward_2], Original ATen: [aten.permute, aten.view, aten.t, aten.addmm]
            stream0 = get_raw_stream(0)
            triton_tem_fused_addmm_permute_t_view_8.run(arg30_1, buf48, arg29_1, buf52, 1152, 1, 1, stream=stream0)
            del arg29_1
            del arg30_1
            buf56 = buf42; del buf42  # reuse
            # Topologically Sorted Source Nodes: [multi_head_attention_forward_2, x_9, add_5, x_10], Original ATen: [aten.view, aten.transpose, aten.add, aten.native_layer_norm]
            stream0 = get_raw_stream(0)
            triton_red_fused_add_native_layer_norm_transpose_view_5.run(buf56, buf52, arg31_1, arg32_1, 36864, 512, stream=stream0)
            del arg31_1
            del arg32_1
            buf57 = empty_strided_cuda((36864, 2048), (2048, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [linear_4], Original ATen: [aten.view, aten.t, aten.addmm]
            extern_kernels.bias_addmm(reinterpret_tensor(arg34_1, (36864, 2048), (0, 1), 0), reinterpret_tensor(buf56, (36864, 512), (512, 1), 0), reinterpret_tensor(arg33_1, (512, 2048), (1, 512), 0), alpha=1, beta=1, out=buf57)
            del arg33_1
            del arg34_1
            buf58 = reinterpret_tensor(buf57, (24, 1536, 2048), (3145728, 2048, 1), 0); del buf57  # reuse
            # Topologically Sorted Source Nodes: [linear_4, relu_2], Original ATen: [aten.view, aten.relu]
            stream0 = get_raw_stream(0)
            triton_poi_fused_relu_view_6.run(buf58, 75497472, stream=stream0)
            buf59 = buf52; del buf52  # reuse
            # Topologically Sorted Source Nodes: [linear_4, relu_2, x_11], Original ATen: [aten.view, aten.relu, aten.t, aten.addmm]
            extern_kernels.bias_addmm(reinterpret_tensor(arg36_1, (36864, 512), (0, 1), 0), reinterpret_tensor(buf58, (36864, 2048), (2048, 1), 0), reinterpret_tensor(arg35_1, (2048, 512), (1, 2048), 0), alpha=1, beta=1, out=buf59)
            del arg35_1
            del arg36_1
            del buf58
            buf63 = buf56; del buf56  # reuse
            # Topologically Sorted Source Nodes: [x_11, add_6, x_12], Original ATen: [aten.view, aten.add, aten.native_layer_norm]
            stream0 = get_raw_stream(0)
            triton_per_fused_add_native_layer_norm_view_7.run(buf63, buf59, arg37_1, arg38_1, 36864, 512, stream=stream0)
            del arg37_1
            del arg38_1
            buf64 = empty_strided_cuda((1536, 24, 1536), (36864, 1536, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [query_3, multi_head_attention_forward_3], Original ATen: [aten.transpose, aten.t, aten.expand, aten.bmm]
            extern_kernels.bmm(reinterpret_tensor(buf63, (1536, 24, 512), (512, 786432, 1), 0), reinterpret_tensor(arg39_1, (1536, 512, 1536), (0, 1, 512), 0), out=buf64)
            del arg39_1
            buf65 = reinterpret_tensor(buf59, (24, 8, 1536, 64), (512, 64, 12288, 1), 0); del buf59  # reuse
            # Topologically Sorted Source Nodes: [multi_head_attention_forward_3], Original ATen: [aten.add, aten.view, aten.unsqueeze, aten.transpose, aten.squeeze, aten.clone, aten.select, aten._scaled_dot_product_cudnn_attention]
            stream0 = get_raw_stream(0)
            triton_poi_fused__scaled_dot_product_cudnn_attention_add_clone_select_squeeze_transpose_unsqueeze_view_1.run(buf64, arg40_1, buf65, 18874368, stream=stream0)
            buf66 = buf48; del buf48  # reuse
            # Topologically Sorted Source Nodes: [multi_head_attention_forward_3], Original ATen: [aten.add, aten.view, aten.unsqueeze, aten.transpose, aten.squeeze, aten.clone, aten.select, aten._scaled_dot_product_cudnn_attention]
            stream0 = get_raw_stream(0)
            triton_poi_fused__scaled_dot_product_cudnn_attention_add_clone_select_squeeze_transpose_unsqueeze_view_2.run(buf64, arg40_1, buf66, 18874368, stream=stream0)
            buf67 = buf45; del buf45  # reuse
            # Topologically Sorted Source Nodes: [multi_head_attention_forward_3], Original ATen: [aten.add, aten.view, aten.unsqueeze, aten.transpose, aten.squeeze, aten.clone, aten.select, aten._scaled_dot_product_cudnn_attention]
            stream0 = get_raw_stream(0)
            triton_poi_fused__scaled_dot_product_cudnn_attention_add_clone_select_squeeze_transpose_unsqueeze_view_3.run(buf64, arg40_1, buf67, 18874368, stream=stream0)
            del arg40_1
            del buf64
            # Topologically Sorted Source Nodes: [multi_head_attention_forward_3], Original ATen: [aten.add, aten.view, aten.unsqueeze, aten.transpose, aten.squeeze, aten.clone, aten.select, aten._scaled_dot_product_cudnn_attention]
            buf68 = torch.ops.aten._scaled_dot_product_cudnn_attention.default(buf65, buf66, buf67, None, False)
            del buf65
            buf69 = buf68[0]
            assert_size_stride(buf69, (24, 8, 1536, 64), (512, 64, 12288, 1), 'torch.ops.aten._scaled_dot_product_cudnn_attention.default')
            assert_alignment(buf69, 16, 'torch.ops.aten._scaled_dot_product_cudnn_attention.default')
            del buf68
            buf73 = reinterpret_tensor(buf67, (36864, 512), (512, 1), 0); del buf67  # reuse
            # Topologically Sorted Source Nodes: [multi_head_attention_forward_3], Original ATen: [aten.permute, aten.view, aten.t, aten.addmm]
            stream0 = get_raw_stream(0)
            triton_tem_fused_addmm_permute_t_view_8.run(arg42_1, buf69, arg41_1, buf73, 1152, 1, 1, stream=stream0)
            del arg41_1
            del arg42_1
            buf77 = buf63; del buf63  # reuse
            # Topologically Sorted Source Nodes: [multi_head_attention_forward_3, x_13, add_7, x_14], Original ATen: [aten.view, aten.transpose, aten.add, aten.native_layer_norm]
            stream0 = get_raw_stream(0)
            triton_red_fused_add_native_layer_norm_transpose_view_5.run(buf77, buf73, arg43_1, arg44_1, 36864, 512, stream=stream0)
            del arg43_1
            del arg44_1
            buf78 = empty_strided_cuda((36864, 2048), (2048, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [linear_6], Original ATen: [aten.view, aten.t, aten.addmm]
            extern_kernels.bias_addmm(reinterpret_tensor(arg46_1, (36864, 2048), (0, 1), 0), reinterpret_tensor(buf77, (36864, 512), (512, 1), 0), reinterpret_tensor(arg45_1, (512, 2048), (1, 512), 0), alpha=1, beta=1, out=buf78)
            del arg45_1
            del arg46_1
            buf79 = reinterpret_tensor(buf78, (24, 1536, 2048), (3145728, 2048, 1), 0); del buf78  # reuse
            # Topologically Sorted Source Nodes: [linear_6, relu_3], Original ATen: [aten.view, aten.relu]
            stream0 = get_raw_stream(0)
            triton_poi_fused_relu_view_6.run(buf79, 75497472, stream=stream0)
            buf80 = buf73; del buf73  # reuse
            # Topologically Sorted Source Nodes: [linear_6, relu_3, x_15], Original ATen: [aten.view, aten.relu, aten.t, aten.addmm]
            extern_kernels.bias_addmm(reinterpret_tensor(arg48_1, (36864, 512), (0, 1), 0), reinterpret_tensor(buf79, (36864, 2048), (2048, 1), 0), reinterpret_tensor(arg47_1, (2048, 512), (1, 2048), 0), alpha=1, beta=1, out=buf80)
            del arg47_1
            del arg48_1
            del buf79
            buf84 = buf77; del buf77  # reuse
            # Topologically Sorted Source Nodes: [x_15, add_8, x_16], Original ATen: [aten.view, aten.add, aten.native_layer_norm]
            stream0 = get_raw_stream(0)
            triton_per_fused_add_native_layer_norm_view_7.run(buf84, buf80, arg49_1, arg50_1, 36864, 512, stream=stream0)
            del arg49_1
            del arg50_1
            buf85 = empty_strided_cuda((1536, 24, 1536), (36864, 1536, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [query_4, multi_head_attention_forward_4], Original ATen: [aten.transpose, aten.t, aten.expand, aten.bmm]
            extern_kernels.bmm(reinterpret_tensor(buf84, (1536, 24, 512), (512, 786432, 1), 0), reinterpret_tensor(arg51_1, (1536, 512, 1536), (0, 1, 512), 0), out=buf85)
            del arg51_1
            buf86 = reinterpret_tensor(buf80, (24, 8, 1536, 64), (512, 64, 12288, 1), 0); del buf80  # reuse
            # Topologically Sorted Source Nodes: [multi_head_attention_forward_4], Original ATen: [aten.add, aten.view, aten.unsqueeze, aten.transpose, aten.squeeze, aten.clone, aten.select, aten._scaled_dot_product_cudnn_attention]
            stream0 = get_raw_stream(0)
            triton_poi_fused__scaled_dot_product_cudnn_attention_add_clone_select_squeeze_transpose_unsqueeze_view_1.run(buf85, arg52_1, buf86, 18874368, stream=stream0)
            buf87 = buf69; del buf69  # reuse
            # Topologically Sorted Source Nodes: [multi_head_attention_forward_4], Original ATen: [aten.add, aten.view, aten.unsqueeze, aten.transpose, aten.squeeze, aten.clone, aten.select, aten._scaled_dot_product_cudnn_attention]
            stream0 = get_raw_stream(0)
            triton_poi_fused__scaled_dot_product_cudnn_attention_add_clone_select_squeeze_transpose_unsqueeze_view_2.run(buf85, arg52_1, buf87, 18874368, stream=stream0)
            buf88 = buf66; del buf66  # reuse
            # Topologically Sorted Source Nodes: [multi_head_attention_forward_4], Original ATen: [aten.add, aten.view, aten.unsqueeze, aten.transpose, aten.squeeze, aten.clone, aten.select, aten._scaled_dot_product_cudnn_attention]
            stream0 = get_raw_stream(0)
            triton_poi_fused__scaled_dot_product_cudnn_attention_add_clone_select_squeeze_transpose_unsqueeze_view_3.run(buf85, arg52_1, buf88, 18874368, stream=stream0)
            del arg52_1
            del buf85
            # Topologically Sorted Source Nodes: [multi_head_attention_forward_4], Original ATen: [aten.add, aten.view, aten.unsqueeze, aten.transpose, aten.squeeze, aten.clone, aten.select, aten._scaled_dot_product_cudnn_attention]
            buf89 = torch.ops.aten._scaled_dot_product_cudnn_attention.default(buf86, buf87, buf88, None, False)
            del buf86
            buf90 = buf89[0]
            assert_size_stride(buf90, (24, 8, 1536, 64), (512, 64, 12288, 1), 'torch.ops.aten._scaled_dot_product_cudnn_attention.default')
            assert_alignment(buf90, 16, 'torch.ops.aten._scaled_dot_product_cudnn_attention.default')
            del buf89
            buf94 = reinterpret_tensor(buf88, (36864, 512), (512, 1), 0); del buf88  # reuse
            # Topologically Sorted Source Nodes: [multi_head_attention_forward_4], Original ATen: [aten.permute, aten.view, aten.t, aten.addmm]
            stream0 = get_raw_stream(0)
            triton_tem_fused_addmm_permute_t_view_8.run(arg54_1, buf90, arg53_1, buf94, 1152, 1, 1, stream=stream0)
            del arg53_1
            del arg54_1
            buf98 = buf84; del buf84  # reuse
            # Topologically Sorted Source Nodes: [multi_head_attention_forward_4, x_17, add_9, x_18], Original ATen: [aten.view, aten.transpose, aten.add, aten.native_layer_norm]
            stream0 = get_raw_stream(0)
            triton_red_fused_add_native_layer_norm_transpose_view_5.run(buf98, buf94, arg55_1, arg56_1, 36864, 512, stream=stream0)
            del arg55_1
            del arg56_1
            buf99 = empty_strided_cuda((36864, 2048), (2048, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [linear_8], Original ATen: [aten.view, aten.t, aten.addmm]
            extern_kernels.bias_addmm(reinterpret_tensor(arg58_1, (36864, 2048), (0, 1), 0), reinterpret_tensor(buf98, (36864, 512), (512, 1), 0), reinterpret_tensor(arg57_1, (512, 2048), (1, 512), 0), alpha=1, beta=1, out=buf99)
            del arg57_1
            del arg58_1
            buf100 = reinterpret_tensor(buf99, (24, 1536, 2048), (3145728, 2048, 1), 0); del buf99  # reuse
            # Topologically Sorted Source Nodes: [linear_8, relu_4], Original ATen: [aten.view, aten.relu]
            stream0 = get_raw_stream(0)
            triton_poi_fused_relu_view_6.run(buf100, 75497472, stream=stream0)
            buf101 = buf94; del buf94  # reuse
            # Topologically Sorted Source Nodes: [linear_8, relu_4, x_19], Original ATen: [aten.view, aten.relu, aten.t, aten.addmm]
            extern_kernels.bias_addmm(reinterpret_tensor(arg60_1, (36864, 512), (0, 1), 0), reinterpret_tensor(buf100, (36864, 2048), (2048, 1), 0), reinterpret_tensor(arg59_1, (2048, 512), (1, 2048), 0), alpha=1, beta=1, out=buf101)
            del arg59_1
            del arg60_1
            del buf100
            buf105 = buf98; del buf98  # reuse
            # Topologically Sorted Source Nodes: [x_19, add_10, x_20], Original ATen: [aten.view, aten.add, aten.native_layer_norm]
            stream0 = get_raw_stream(0)
            triton_per_fused_add_native_layer_norm_view_7.run(buf105, buf101, arg61_1, arg62_1, 36864, 512, stream=stream0)
            del arg61_1
            del arg62_1
            buf106 = empty_strided_cuda((1536, 24, 1536), (36864, 1536, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [query_5, multi_head_attention_forward_5], Original ATen: [aten.transpose, aten.t, aten.expand, aten.bmm]
            extern_kernels.bmm(reinterpret_tensor(buf105, (1536, 24, 512), (512, 786432, 1), 0), reinterpret_tensor(arg63_1, (1536, 512, 1536), (0, 1, 512), 0), out=buf106)
            del arg63_1
            buf107 = reinterpret_tensor(buf101, (24, 8, 1536, 64), (512, 64, 12288, 1), 0); del buf101  # reuse
            # Topologically Sorted Source Nodes: [multi_head_attention_forward_5], Original ATen: [aten.add, aten.view, aten.unsqueeze, aten.transpose, aten.squeeze, aten.clone, aten.select, aten._scaled_dot_product_cudnn_attention]
            stream0 = get_raw_stream(0)
            triton_poi_fused__scaled_dot_product_cudnn_attention_add_clone_select_squeeze_transpose_unsqueeze_view_1.run(buf106, arg64_1, buf107, 18874368, stream=stream0)
            buf108 = buf90; del buf90  # reuse
            # Topologically Sorted Source Nodes: [multi_head_attention_forward_5], Original ATen: [aten.add, aten.view, aten.unsqueeze, aten.transpose, aten.squeeze, aten.clone, aten.select, aten._scaled_dot_product_cudnn_attention]
            stream0 = get_raw_stream(0)
            triton_poi_fused__scaled_dot_product_cudnn_attention_add_clone_select_squeeze_transpose_unsqueeze_view_2.run(buf106, arg64_1, buf108, 18874368, stream=stream0)
            buf109 = buf87; del buf87  # reuse
            # Topologically Sorted Source Nodes: [multi_head_attention_forward_5], Original ATen: [aten.add, aten.view, aten.unsqueeze, aten.transpose, aten.squeeze, aten.clone, aten.select, aten._scaled_dot_product_cudnn_attention]
            stream0 = get_raw_stream(0)
            triton_poi_fused__scaled_dot_product_cudnn_attention_add_clone_select_squeeze_transpose_unsqueeze_view_3.run(buf106, arg64_1, buf109, 18874368, stream=stream0)
            del arg64_1
            del buf106
            # Topologically Sorted Source Nodes: [multi_head_attention_forward_5], Original ATen: [aten.add, aten.view, aten.unsqueeze, aten.transpose, aten.squeeze, aten.clone, aten.select, aten._scaled_dot_product_cudnn_attention]
            buf110 = torch.ops.aten._scaled_dot_product_cudnn_attention.default(buf107, buf108, buf109, None, False)
            del buf107
            del buf108
            buf111 = buf110[0]
            assert_size_stride(buf111, (24, 8, 1536, 64), (512, 64, 12288, 1), 'torch.ops.aten._scaled_dot_product_cudnn_attention.default')
            assert_alignment(buf111, 16, 'torch.ops.aten._scaled_dot_product_cudnn_attention.default')
            del buf110
            buf115 = reinterpret_tensor(buf109, (36864, 512), (512, 1), 0); del buf109  # reuse
            # Topologically Sorted Source Nodes: [multi_head_attention_forward_5], Original ATen: [aten.permute, aten.view, aten.t, aten.addmm]
            stream0 = get_raw_stream(0)
            triton_tem_fused_addmm_permute_t_view_8.run(arg66_1, buf111, arg65_1, buf115, 1152, 1, 1, stream=stream0)
            del arg65_1
            del arg66_1
            del buf111
            buf119 = buf105; del buf105  # reuse
            # Topologically Sorted Source Nodes: [multi_head_attention_forward_5, x_21, add_11, x_22], Original ATen: [aten.view, aten.transpose, aten.add, aten.native_layer_norm]
            stream0 = get_raw_stream(0)
            triton_red_fused_add_native_layer_norm_transpose_view_5.run(buf119, buf115, arg67_1, arg68_1, 36864, 512, stream=stream0)
            del arg67_1
            del arg68_1
            buf120 = empty_strided_cuda((36864, 2048), (2048, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [linear_10], Original ATen: [aten.view, aten.t, aten.addmm]
            extern_kernels.bias_addmm(reinterpret_tensor(arg70_1, (36864, 2048), (0, 1), 0), reinterpret_tensor(buf119, (36864, 512), (512, 1), 0), reinterpret_tensor(arg69_1, (512, 2048), (1, 512), 0), alpha=1, beta=1, out=buf120)
            del arg69_1
            del arg70_1
            buf121 = reinterpret_tensor(buf120, (24, 1536, 2048), (3145728, 2048, 1), 0); del buf120  # reuse
            # Topologically Sorted Source Nodes: [linear_10, relu_5], Original ATen: [aten.view, aten.relu]
            stream0 = get_raw_stream(0)
            triton_poi_fused_relu_view_6.run(buf121, 75497472, stream=stream0)
            buf122 = buf115; del buf115  # reuse
            # Topologically Sorted Source Nodes: [linear_10, relu_5, x_23], Original ATen: [aten.view, aten.relu, aten.t, aten.addmm]
            extern_kernels.bias_addmm(reinterpret_tensor(arg72_1, (36864, 512), (0, 1), 0), reinterpret_tensor(buf121, (36864, 2048), (2048, 1), 0), reinterpret_tensor(arg71_1, (2048, 512), (1, 2048), 0), alpha=1, beta=1, out=buf122)
            del arg71_1
            del arg72_1
            del buf121
            buf126 = buf119; del buf119  # reuse
            # Topologically Sorted Source Nodes: [x_23, add_12, x_24], Original ATen: [aten.view, aten.add, aten.native_layer_norm]
            stream0 = get_raw_stream(0)
            triton_per_fused_add_native_layer_norm_view_7.run(buf126, buf122, arg73_1, arg74_1, 36864, 512, stream=stream0)
            del arg73_1
            del arg74_1
            del buf122
            buf127 = empty_strided_cuda((36864, 10000), (10000, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [x_23, add_12, x_24, linear_12], Original ATen: [aten.view, aten.add, aten.native_layer_norm, aten.t, aten.addmm]
            extern_kernels.bias_addmm(reinterpret_tensor(arg76_1, (36864, 10000), (0, 1), 0), reinterpret_tensor(buf126, (36864, 512), (512, 1), 0), reinterpret_tensor(arg75_1, (512, 10000), (1, 512), 0), alpha=1, beta=1, out=buf127)
            del arg75_1
            del arg76_1
            del buf126
        return (reinterpret_tensor(buf127, (24, 1536, 10000), (15360000, 10000, 1), 0), )

runner = Runner(partitions=[])
call = runner.call
recursively_apply_fns = runner.recursively_apply_fns


def get_args():
    from torch._dynamo.testing import rand_strided
    arg0_1 = rand_strided((10000, 512), (512, 1), device='cuda:0', dtype=torch.bfloat16)
    arg1_1 = rand_strided((24, 1536), (1536, 1), device='cuda:0', dtype=torch.int64)
    arg2_1 = rand_strided((1, 2048, 512), (1048576, 512, 1), device='cuda:0', dtype=torch.bfloat16)
    arg3_1 = rand_strided((1536, 512), (512, 1), device='cuda:0', dtype=torch.bfloat16)
    arg4_1 = rand_strided((1536, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg5_1 = rand_strided((512, 512), (512, 1), device='cuda:0', dtype=torch.bfloat16)
    arg6_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg7_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg8_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg9_1 = rand_strided((2048, 512), (512, 1), device='cuda:0', dtype=torch.bfloat16)
    arg10_1 = rand_strided((2048, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg11_1 = rand_strided((512, 2048), (2048, 1), device='cuda:0', dtype=torch.bfloat16)
    arg12_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg13_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg14_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg15_1 = rand_strided((1536, 512), (512, 1), device='cuda:0', dtype=torch.bfloat16)
    arg16_1 = rand_strided((1536, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg17_1 = rand_strided((512, 512), (512, 1), device='cuda:0', dtype=torch.bfloat16)
    arg18_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg19_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg20_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg21_1 = rand_strided((2048, 512), (512, 1), device='cuda:0', dtype=torch.bfloat16)
    arg22_1 = rand_strided((2048, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg23_1 = rand_strided((512, 2048), (2048, 1), device='cuda:0', dtype=torch.bfloat16)
    arg24_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg25_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg26_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg27_1 = rand_strided((1536, 512), (512, 1), device='cuda:0', dtype=torch.bfloat16)
    arg28_1 = rand_strided((1536, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg29_1 = rand_strided((512, 512), (512, 1), device='cuda:0', dtype=torch.bfloat16)
    arg30_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg31_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg32_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg33_1 = rand_strided((2048, 512), (512, 1), device='cuda:0', dtype=torch.bfloat16)
    arg34_1 = rand_strided((2048, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg35_1 = rand_strided((512, 2048), (2048, 1), device='cuda:0', dtype=torch.bfloat16)
    arg36_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg37_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg38_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg39_1 = rand_strided((1536, 512), (512, 1), device='cuda:0', dtype=torch.bfloat16)
    arg40_1 = rand_strided((1536, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg41_1 = rand_strided((512, 512), (512, 1), device='cuda:0', dtype=torch.bfloat16)
    arg42_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg43_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg44_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg45_1 = rand_strided((2048, 512), (512, 1), device='cuda:0', dtype=torch.bfloat16)
    arg46_1 = rand_strided((2048, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg47_1 = rand_strided((512, 2048), (2048, 1), device='cuda:0', dtype=torch.bfloat16)
    arg48_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg49_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg50_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg51_1 = rand_strided((1536, 512), (512, 1), device='cuda:0', dtype=torch.bfloat16)
    arg52_1 = rand_strided((1536, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg53_1 = rand_strided((512, 512), (512, 1), device='cuda:0', dtype=torch.bfloat16)
    arg54_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg55_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg56_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg57_1 = rand_strided((2048, 512), (512, 1), device='cuda:0', dtype=torch.bfloat16)
    arg58_1 = rand_strided((2048, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg59_1 = rand_strided((512, 2048), (2048, 1), device='cuda:0', dtype=torch.bfloat16)
    arg60_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg61_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg62_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg63_1 = rand_strided((1536, 512), (512, 1), device='cuda:0', dtype=torch.bfloat16)
    arg64_1 = rand_strided((1536, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg65_1 = rand_strided((512, 512), (512, 1), device='cuda:0', dtype=torch.bfloat16)
    arg66_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg67_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg68_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg69_1 = rand_strided((2048, 512), (512, 1), device='cuda:0', dtype=torch.bfloat16)
    arg70_1 = rand_strided((2048, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg71_1 = rand_strided((512, 2048), (2048, 1), device='cuda:0', dtype=torch.bfloat16)
    arg72_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg73_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg74_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg75_1 = rand_strided((10000, 512), (512, 1), device='cuda:0', dtype=torch.bfloat16)
    arg76_1 = rand_strided((10000, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    return [arg0_1, arg1_1, arg2_1, arg3_1, arg4_1, arg5_1, arg6_1, arg7_1, arg8_1, arg9_1, arg10_1, arg11_1, arg12_1, arg13_1, arg14_1, arg15_1, arg16_1, arg17_1, arg18_1, arg19_1, arg20_1, arg21_1, arg22_1, arg23_1, arg24_1, arg25_1, arg26_1, arg27_1, arg28_1, arg29_1, arg30_1, arg31_1, arg32_1, arg33_1, arg34_1, arg35_1, arg36_1, arg37_1, arg38_1, arg39_1, arg40_1, arg41_1, arg42_1, arg43_1, arg44_1, arg45_1, arg46_1, arg47_1, arg48_1, arg49_1, arg50_1, arg51_1, arg52_1, arg53_1, arg54_1, arg55_1, arg56_1, arg57_1, arg58_1, arg59_1, arg60_1, arg61_1, arg62_1, arg63_1, arg64_1, arg65_1, arg66_1, arg67_1, arg68_1, arg69_1, arg70_1, arg71_1, arg72_1, arg73_1, arg74_1, arg75_1, arg76_1]


def benchmark_compiled_module(args, times=10, repeat=10):
    from torch._inductor.utils import print_performance
    fn = lambda: call(list(args))
    return print_performance(fn, times=times, repeat=repeat)


if __name__ == "__main__":
    from torch._inductor.wrapper_benchmark import compiled_module_main
    args = get_args()
    compiled_module_main('None', lambda times, repeat: benchmark_compiled_module(args, times=times, repeat=repeat))
