#!/usr/bin/env bash
# Issue 13's open question: which L2/crossbar counter shows ch10.cluster_pipeline's TMA multicast?
# ncu (clocks untouched) on four_stage (B multicast) and four_stage_no_multicast (per-CTA B loads),
# a list of L2-side and L1-side byte/sector counters; their values per variant printed last.
set -u -o pipefail
. scripts/device_env.sh /tmp/mc_out
PAIR=ch10.cluster_pipeline
M=lts__t_sectors_srcunit_tex.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_requests_srcunit_tex_op_read.sum,lts__t_bytes.sum,l1tex__m_xbar2l1tex_read_bytes.sum,l1tex__m_xbar2l1tex_read_sectors.sum,lts__t_sectors_op_read.sum,lts__d_sectors_fill_sysmem.sum,dram__bytes_read.sum,lts__t_sectors_srcunit_l1.sum,lts__t_sectors_srcnode_gpc.sum,lts__t_requests_srcnode_gpc.sum,gpu__time_duration.sum
ncu --clock-control none --nvtx --nvtx-include "aisp/$PAIR/four_stage/" --nvtx-include "aisp/$PAIR/four_stage_no_multicast/" \
  --metrics $M --csv --print-units base --page raw \
  python3 -m aisp_prof.collect.child --pair $PAIR --variants baseline,four_stage,four_stage_no_multicast --mode profile \
  --out /tmp/mc_child.json > $OUT/mc.csv 2> $OUT/mc.err; echo "ncu rc $?"; tail -3 $OUT/mc.err
python3 - $OUT/mc.csv <<'PY'
import csv, io, sys
text = open(sys.argv[1]).read()
rows = list(csv.reader(io.StringIO(text[text.index('"ID"'):] if '"ID"' in text else text)))
head, units, data = rows[0], rows[1], rows[2:]
for r in data:
    d = dict(zip(head, r))
    print(d.get("Kernel Name", "")[:40], {k: d[k] for k in head if k.startswith(("lts", "l1tex", "dram", "gpu__"))})
PY
