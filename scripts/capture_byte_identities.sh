#!/usr/bin/env bash
# Issue 16: one ncu capture that holds BOTH the byte counters aisp-prof reads (lts__t_bytes.sum,
# l1tex__t_bytes.sum) and the sector counters `ncu --set full` holds instead (lts__t_sectors.sum, the
# 15 l1tex__t_sectors_pipe_* partitions), so `aisp_prof.parse.sector_bytes` can be checked within one
# replay (tests/fixtures/foreign_h100/identity_raw_base.csv). Four kernels: an FP32 SIMT GEMM (LDGSTS),
# an add, a raw kernel with global atomics and reductions (cupy), torch's index_add (reductions).
# Run as one device command (2026-11-26, H100, ncu 2025.3.1; exactly these lines); files land in $OUT.
# The last ncu line (breakdown:l1tex__t_sectors.sum) made ncu segfault: breakdown: is for throughputs.
cd /tmp;cat > w.py <<'E'
import torch,cupy as cp
from torch.cuda import nvtx
torch.backends.cuda.matmul.allow_tf32=False
d='cuda';g=torch.Generator(d).manual_seed(0)
r=lambda *s:torch.randn(*s,device=d,generator=g)
a,b,x=r(1024,1024),r(1024,1024),r(1<<20);y=torch.empty_like(x);s=torch.zeros(512,device=d);i=torch.arange(1<<20,device=d)%512
k=cp.RawKernel(r'''extern "C" __global__ void k(const float*x,float*y,float*s){int i=blockIdx.x*256+threadIdx.x;float a[32];for(int j=0;j<32;j++)a[j]=x[(i*7+j)&1048575];int t=((int)(x[i]*8))&31;a[(t+3)&31]=a[t];atomicAdd(s+(i&255),a[t]);y[i]=a[(t+5)&31]+atomicAdd(s+256+(i&7),1.f);}''','k')
torch.cuda.synchronize()
def run(n,f):
 nvtx.range_push('id');nvtx.range_push(n);f();nvtx.range_pop();nvtx.range_pop()
run('gemm',lambda:torch.mm(a,b))
run('add',lambda:torch.add(a,b))
run('raw',lambda:k((4096,),(256,),(cp.asarray(x),cp.asarray(y),cp.asarray(s))))
run('index_add',lambda:s.index_add_(0,i,x))
torch.cuda.synchronize()
E
B=$(echo l1tex__t_sectors_pipe_lsu_mem_{global_op_{ld,st,atom,red},local_op_{ld,st},dshared_op_{ld,st,atom,redas}}.sum l1tex__t_sectors_pipe_tex_mem_{texture,surface_op_{ld,st,atom,red}}.sum|tr ' ' ,)
P=lts__t_bytes.sum,lts__t_sectors.sum,l1tex__t_bytes.sum,l1tex__t_sectors.sum
M=$P,${P//.sum/.sum.peak_sustained},${P//.sum/.sum.pct_of_peak_sustained_elapsed},lts__t_sectors.avg.peak_sustained,dram__bytes_read.sum,dram__sectors_read.sum,gpu__time_duration.sum,$B
L=$OUT/log.txt;ncu --version|tail -1 >$L
ncu --clock-control none --nvtx --nvtx-include id/ --metrics $M -o id -f python3 w.py >>$L 2>&1;echo "rc $?">>$L
ncu --import id.ncu-rep --csv --page raw --print-units base >$OUT/identity_raw_base.csv
ncu --query-metrics --chip gh100 >q.txt 2>&1;grep -E '^(l1tex|lts)__t_(bytes|sectors)' q.txt >$OUT/query.txt
ncu --clock-control none --nvtx --nvtx-include id/raw/ --metrics breakdown:l1tex__t_sectors.sum --csv --page raw python3 w.py >$OUT/bd.txt 2>&1
gzip -c id.ncu-rep >$OUT/id.ncu-rep.gz; cat $L
