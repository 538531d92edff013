"""A stand-in for Slurm's `srun` on one node, so `aisp-prof run --launcher slurm` runs for real on a GPU
machine that has no Slurm (the project's: one host, 2 or 4 GPUs).

    mkdir -p /tmp/fakebin && printf '#!/bin/sh\nexec python3 %s "$@"\n' "$PWD/dev/srun_one_node.py" > /tmp/fakebin/srun
    chmod +x /tmp/fakebin/srun && PATH=/tmp/fakebin:$PATH SLURM_JOB_ID=4242 \
      aisp-prof run ch14.quantized_allreduce --launcher slurm --nnodes 1 --nproc-per-node 2

It does what srun does for the arguments `launch.slurm_agent` passes (`--nodes=1 --ntasks=N
--ntasks-per-node=N --kill-on-bad-exit=1 --export=ALL COMMAND...`): starts N copies of COMMAND, each with
the variables srun gives a task (SLURM_PROCID, SLURM_LOCALID, SLURM_NTASKS, SLURM_NODEID, SLURM_STEP_ID,
SLURM_JOB_ID), kills the others when one fails, and exits with the first failure's code (0 when all
pass). Only one node: --nodes above 1 is refused, as it would need a second host.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time


def parse(argv: list[str]) -> tuple[dict[str, str], list[str]]:
    """srun's --key=value options up to --export=ALL (the last option), and the command after it."""
    if "--export=ALL" not in argv:
        raise SystemExit("srun_one_node: expected --export=ALL before the command (launch.slurm_agent's form)")
    at = argv.index("--export=ALL")
    options = dict(a[2:].split("=", 1) for a in argv[:at] if a.startswith("--") and "=" in a)
    command = argv[at + 1:]
    if not command:
        raise SystemExit("srun_one_node: no command to run")
    return options, command


def main(argv: list[str]) -> int:
    options, command = parse(argv)
    if int(options.get("nodes", "1")) != 1:
        raise SystemExit(f"srun_one_node: --nodes={options['nodes']}: this stand-in runs one node only")
    tasks = int(options.get("ntasks", "1"))
    job = os.environ.get("SLURM_JOB_ID", "1")
    procs = [subprocess.Popen(command, env={**os.environ, "SLURM_PROCID": str(r), "SLURM_LOCALID": str(r),
                                            "SLURM_NTASKS": str(tasks), "SLURM_NODEID": "0", "SLURM_STEP_ID": "0",
                                            "SLURM_JOB_ID": job}) for r in range(tasks)]
    failed = 0
    while [p.poll() for p in procs].count(None):        # every task polled: any() would stop at the first
        bad = [p.returncode for p in procs if p.returncode not in (None, 0)]
        if bad and not failed:
            failed = bad[0]
            for p in procs:                     # --kill-on-bad-exit=1
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
        time.sleep(0.05)
    codes = [p.returncode for p in procs]
    return failed or next((c for c in codes if c), 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
