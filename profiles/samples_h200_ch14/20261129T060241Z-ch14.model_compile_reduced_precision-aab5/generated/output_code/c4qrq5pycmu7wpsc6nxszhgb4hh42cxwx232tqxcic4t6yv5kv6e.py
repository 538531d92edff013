# AOT ID: ['0_inference']
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
#   %add : Tensor "bf16[24, 1536, 512][786432, 512, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%embedding, %slice_1), kwargs = {})
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
        assert_size_stride(arg3_1, (1536, ), (1, ))
        assert_size_stride(arg4_1, (1536, 512), (512, 1))
        assert_size_stride(arg5_1, (512, 512), (512, 1))
        assert_size_stride(arg6_1, (512, ), (1, ))
        assert_size_stride(arg7_1, (512, ), (1, ))
        assert_size_stride(arg8_1, (512, ), (1, ))
        assert_size_stride(arg9_1, (512, ), (1, ))
        assert_size_stride(arg10_1, (512, ), (1, ))
        assert_size_stride(arg11_1, (2048, 512), (512, 1))
        assert_size_stride(arg12_1, (2048, ), (1, ))
        assert_size_stride(arg13_1, (512, 2048), (2048, 1))
        assert_size_stride(arg14_1, (512, ), (1, ))
        assert_size_stride(arg15_1, (1536, ), (1, ))
        assert_size_stride(arg16_1, (1536, 512), (512, 1))
        assert_size_stride(arg17_1, (512, 512), (512, 1))
        assert_size_stride(arg18_1, (512, ), (1, ))
        assert_size_stride(arg19_1, (512, ), (1, ))
        assert_size_stride(arg20_1, (512, ), (1, ))
        assert_size_stride(arg21_1, (512, ), (1, ))
        assert_size_stride(arg22_1, (512, ), (1, ))
        assert_size_stride(arg23_1, (2048, 512), (512, 1))
        assert_size_stride(arg24_1, (2048, ), (1, ))
        assert_size_stride(arg25_1, (512, 2048), (2048, 1))
        assert_size_stride(arg26_1, (512, ), (1, ))
        assert_size_stride(arg27_1, (1536, ), (1, ))
        assert_size_stride(arg28_1, (1536, 512), (512, 1))
        assert_size_stride(arg29_1, (512, 512), (512, 1))
        assert_size_stride(arg30_1, (512, ), (1, ))
        assert_size_stride(arg31_1, (512, ), (1, ))
        assert_size_stride(arg32_1, (512, ), (1, ))
        assert_size_stride(arg33_1, (512, ), (1, ))
        assert_size_stride(arg34_1, (512, ), (1, ))
        assert_size_stride(arg35_1, (2048, 512), (512, 1))
        assert_size_stride(arg36_1, (2048, ), (1, ))
        assert_size_stride(arg37_1, (512, 2048), (2048, 1))
        assert_size_stride(arg38_1, (512, ), (1, ))
        assert_size_stride(arg39_1, (1536, ), (1, ))
        assert_size_stride(arg40_1, (1536, 512), (512, 1))
        assert_size_stride(arg41_1, (512, 512), (512, 1))
        assert_size_stride(arg42_1, (512, ), (1, ))
        assert_size_stride(arg43_1, (512, ), (1, ))
        assert_size_stride(arg44_1, (512, ), (1, ))
        assert_size_stride(arg45_1, (512, ), (1, ))
        assert_size_stride(arg46_1, (512, ), (1, ))
        assert_size_stride(arg47_1, (2048, 512), (512, 1))
        assert_size_stride(arg48_1, (2048, ), (1, ))
        assert_size_stride(arg49_1, (512, 2048), (2048, 1))
        assert_size_stride(arg50_1, (512, ), (1, ))
        assert_size_stride(arg51_1, (1536, ), (1, ))
        assert_size_stride(arg52_1, (1536, 512), (512, 1))
        assert_size_stride(arg53_1, (512, 512), (512, 1))
        assert_size_stride(arg54_1, (512, ), (1, ))
        assert_size_stride(arg55_1, (512, ), (1, ))
        assert_size_stride(arg56_1, (512, ), (1, ))
        assert_size_stride(arg57_1, (512, ), (1, ))
        assert_size_stride(arg58_1, (512, ), (1, ))
        assert_size_stride(arg59_1, (2048, 512), (512, 1))
        assert_size_stride(arg60_1, (2048, ), (1, ))
        assert_size_stride(arg61_1, (512, 2048), (2048, 1))
        assert_size_stride(arg62_1, (512, ), (1, ))
        assert_size_stride(arg63_1, (1536, ), (1, ))
        assert_size_stride(arg64_1, (1536, 512), (512, 1))
        assert_size_stride(arg65_1, (512, 512), (512, 1))
        assert_size_stride(arg66_1, (512, ), (1, ))
        assert_size_stride(arg67_1, (512, ), (1, ))
        assert_size_stride(arg68_1, (512, ), (1, ))
        assert_size_stride(arg69_1, (512, ), (1, ))
        assert_size_stride(arg70_1, (512, ), (1, ))
        assert_size_stride(arg71_1, (2048, 512), (512, 1))
        assert_size_stride(arg72_1, (2048, ), (1, ))
        assert_size_stride(arg73_1, (512, 2048), (2048, 1))
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
            # Topologically Sorted Source Nodes: [embedding, getitem, x, x_1], Original ATen: [aten.embedding, aten.slice, aten.add, aten._transformer_encoder_layer_fwd]
            buf1 = torch.ops.aten._transformer_encoder_layer_fwd.default(buf0, 512, 8, arg4_1, arg3_1, arg5_1, arg6_1, False, False, 1e-05, arg7_1, arg8_1, arg9_1, arg10_1, arg11_1, arg12_1, arg13_1, arg14_1)
            del arg10_1
            del arg11_1
            del arg12_1
            del arg13_1
            del arg14_1
            del arg3_1
            del arg4_1
            del arg5_1
            del arg6_1
            del arg7_1
            del arg8_1
            del arg9_1
            del buf0
            buf2 = buf1
            assert_size_stride(buf2, (24, 1536, 512), (786432, 512, 1), 'torch.ops.aten._transformer_encoder_layer_fwd.default')
            assert_alignment(buf2, 16, 'torch.ops.aten._transformer_encoder_layer_fwd.default')
            del buf1
            # Topologically Sorted Source Nodes: [x_2], Original ATen: [aten._transformer_encoder_layer_fwd]
            buf3 = torch.ops.aten._transformer_encoder_layer_fwd.default(buf2, 512, 8, arg16_1, arg15_1, arg17_1, arg18_1, False, False, 1e-05, arg19_1, arg20_1, arg21_1, arg22_1, arg23_1, arg24_1, arg25_1, arg26_1)
            del arg15_1
            del arg16_1
            del arg17_1
            del arg18_1
            del arg19_1
            del arg20_1
            del arg21_1
            del arg22_1
            del arg23_1
            del arg24_1
            del arg25_1
            del arg26_1
            del buf2
            buf4 = buf3
            assert_size_stride(buf4, (24, 1536, 512), (786432, 512, 1), 'torch.ops.aten._transformer_encoder_layer_fwd.default')
            assert_alignment(buf4, 16, 'torch.ops.aten._transformer_encoder_layer_fwd.default')
            del buf3
            # Topologically Sorted Source Nodes: [x_3], Original ATen: [aten._transformer_encoder_layer_fwd]
            buf5 = torch.ops.aten._transformer_encoder_layer_fwd.default(buf4, 512, 8, arg28_1, arg27_1, arg29_1, arg30_1, False, False, 1e-05, arg31_1, arg32_1, arg33_1, arg34_1, arg35_1, arg36_1, arg37_1, arg38_1)
            del arg27_1
            del arg28_1
            del arg29_1
            del arg30_1
            del arg31_1
            del arg32_1
            del arg33_1
            del arg34_1
            del arg35_1
            del arg36_1
            del arg37_1
            del arg38_1
            del buf4
            buf6 = buf5
            assert_size_stride(buf6, (24, 1536, 512), (786432, 512, 1), 'torch.ops.aten._transformer_encoder_layer_fwd.default')
            assert_alignment(buf6, 16, 'torch.ops.aten._transformer_encoder_layer_fwd.default')
            del buf5
            # Topologically Sorted Source Nodes: [x_4], Original ATen: [aten._transformer_encoder_layer_fwd]
            buf7 = torch.ops.aten._transformer_encoder_layer_fwd.default(buf6, 512, 8, arg40_1, arg39_1, arg41_1, arg42_1, False, False, 1e-05, arg43_1, arg44_1, arg45_1, arg46_1, arg47_1, arg48_1, arg49_1, arg50_1)
            del arg39_1
            del arg40_1
            del arg41_1
            del arg42_1
            del arg43_1
            del arg44_1
            del arg45_1
            del arg46_1
            del arg47_1
            del arg48_1
            del arg49_1
            del arg50_1
            del buf6
            buf8 = buf7
            assert_size_stride(buf8, (24, 1536, 512), (786432, 512, 1), 'torch.ops.aten._transformer_encoder_layer_fwd.default')
            assert_alignment(buf8, 16, 'torch.ops.aten._transformer_encoder_layer_fwd.default')
            del buf7
            # Topologically Sorted Source Nodes: [x_5], Original ATen: [aten._transformer_encoder_layer_fwd]
            buf9 = torch.ops.aten._transformer_encoder_layer_fwd.default(buf8, 512, 8, arg52_1, arg51_1, arg53_1, arg54_1, False, False, 1e-05, arg55_1, arg56_1, arg57_1, arg58_1, arg59_1, arg60_1, arg61_1, arg62_1)
            del arg51_1
            del arg52_1
            del arg53_1
            del arg54_1
            del arg55_1
            del arg56_1
            del arg57_1
            del arg58_1
            del arg59_1
            del arg60_1
            del arg61_1
            del arg62_1
            del buf8
            buf10 = buf9
            assert_size_stride(buf10, (24, 1536, 512), (786432, 512, 1), 'torch.ops.aten._transformer_encoder_layer_fwd.default')
            assert_alignment(buf10, 16, 'torch.ops.aten._transformer_encoder_layer_fwd.default')
            del buf9
            # Topologically Sorted Source Nodes: [x_6], Original ATen: [aten._transformer_encoder_layer_fwd]
            buf11 = torch.ops.aten._transformer_encoder_layer_fwd.default(buf10, 512, 8, arg64_1, arg63_1, arg65_1, arg66_1, False, False, 1e-05, arg67_1, arg68_1, arg69_1, arg70_1, arg71_1, arg72_1, arg73_1, arg74_1)
            del arg63_1
            del arg64_1
            del arg65_1
            del arg66_1
            del arg67_1
            del arg68_1
            del arg69_1
            del arg70_1
            del arg71_1
            del arg72_1
            del arg73_1
            del arg74_1
            del buf10
            buf12 = buf11
            assert_size_stride(buf12, (24, 1536, 512), (786432, 512, 1), 'torch.ops.aten._transformer_encoder_layer_fwd.default')
            assert_alignment(buf12, 16, 'torch.ops.aten._transformer_encoder_layer_fwd.default')
            del buf11
            buf13 = empty_strided_cuda((36864, 10000), (10000, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [linear], Original ATen: [aten.view, aten.t, aten.addmm]
            extern_kernels.bias_addmm(reinterpret_tensor(arg76_1, (36864, 10000), (0, 1), 0), reinterpret_tensor(buf12, (36864, 512), (512, 1), 0), reinterpret_tensor(arg75_1, (512, 10000), (1, 512), 0), alpha=1, beta=1, out=buf13)
            del arg75_1
            del arg76_1
            del buf12
        return (reinterpret_tensor(buf13, (24, 1536, 10000), (15360000, 10000, 1), 0), )

runner = Runner(partitions=[])
call = runner.call
recursively_apply_fns = runner.recursively_apply_fns


def get_args():
    from torch._dynamo.testing import rand_strided
    arg0_1 = rand_strided((10000, 512), (512, 1), device='cuda:0', dtype=torch.bfloat16)
    arg1_1 = rand_strided((24, 1536), (1536, 1), device='cuda:0', dtype=torch.int64)
    arg2_1 = rand_strided((1, 2048, 512), (1048576, 512, 1), device='cuda:0', dtype=torch.bfloat16)
    arg3_1 = rand_strided((1536, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg4_1 = rand_strided((1536, 512), (512, 1), device='cuda:0', dtype=torch.bfloat16)
    arg5_1 = rand_strided((512, 512), (512, 1), device='cuda:0', dtype=torch.bfloat16)
    arg6_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg7_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg8_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg9_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg10_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg11_1 = rand_strided((2048, 512), (512, 1), device='cuda:0', dtype=torch.bfloat16)
    arg12_1 = rand_strided((2048, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg13_1 = rand_strided((512, 2048), (2048, 1), device='cuda:0', dtype=torch.bfloat16)
    arg14_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg15_1 = rand_strided((1536, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg16_1 = rand_strided((1536, 512), (512, 1), device='cuda:0', dtype=torch.bfloat16)
    arg17_1 = rand_strided((512, 512), (512, 1), device='cuda:0', dtype=torch.bfloat16)
    arg18_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg19_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg20_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg21_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg22_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg23_1 = rand_strided((2048, 512), (512, 1), device='cuda:0', dtype=torch.bfloat16)
    arg24_1 = rand_strided((2048, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg25_1 = rand_strided((512, 2048), (2048, 1), device='cuda:0', dtype=torch.bfloat16)
    arg26_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg27_1 = rand_strided((1536, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg28_1 = rand_strided((1536, 512), (512, 1), device='cuda:0', dtype=torch.bfloat16)
    arg29_1 = rand_strided((512, 512), (512, 1), device='cuda:0', dtype=torch.bfloat16)
    arg30_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg31_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg32_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg33_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg34_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg35_1 = rand_strided((2048, 512), (512, 1), device='cuda:0', dtype=torch.bfloat16)
    arg36_1 = rand_strided((2048, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg37_1 = rand_strided((512, 2048), (2048, 1), device='cuda:0', dtype=torch.bfloat16)
    arg38_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg39_1 = rand_strided((1536, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg40_1 = rand_strided((1536, 512), (512, 1), device='cuda:0', dtype=torch.bfloat16)
    arg41_1 = rand_strided((512, 512), (512, 1), device='cuda:0', dtype=torch.bfloat16)
    arg42_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg43_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg44_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg45_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg46_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg47_1 = rand_strided((2048, 512), (512, 1), device='cuda:0', dtype=torch.bfloat16)
    arg48_1 = rand_strided((2048, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg49_1 = rand_strided((512, 2048), (2048, 1), device='cuda:0', dtype=torch.bfloat16)
    arg50_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg51_1 = rand_strided((1536, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg52_1 = rand_strided((1536, 512), (512, 1), device='cuda:0', dtype=torch.bfloat16)
    arg53_1 = rand_strided((512, 512), (512, 1), device='cuda:0', dtype=torch.bfloat16)
    arg54_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg55_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg56_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg57_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg58_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg59_1 = rand_strided((2048, 512), (512, 1), device='cuda:0', dtype=torch.bfloat16)
    arg60_1 = rand_strided((2048, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg61_1 = rand_strided((512, 2048), (2048, 1), device='cuda:0', dtype=torch.bfloat16)
    arg62_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg63_1 = rand_strided((1536, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg64_1 = rand_strided((1536, 512), (512, 1), device='cuda:0', dtype=torch.bfloat16)
    arg65_1 = rand_strided((512, 512), (512, 1), device='cuda:0', dtype=torch.bfloat16)
    arg66_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg67_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg68_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg69_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg70_1 = rand_strided((512, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg71_1 = rand_strided((2048, 512), (512, 1), device='cuda:0', dtype=torch.bfloat16)
    arg72_1 = rand_strided((2048, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg73_1 = rand_strided((512, 2048), (2048, 1), device='cuda:0', dtype=torch.bfloat16)
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
