"""The first real two-agent ("two nodes") job (issue 34, items 3-4): tests/fixtures/multinode_h200x2, the run
folder of `aisp-prof run ch14.quantized_allreduce --nnodes 2 --nproc-per-node 1` on 2x H200 (README there):
two torchrun agents met at a c10d rendezvous on one host, one GPU each, node names vm-node0 and vm-node1,
each agent's rank profiled into its own node folder. Beside it, what the GPU machine's own
`aisp-prof ranks --json` printed of the run and of `import --job` of its node folders (visit_ranks_*.json):
the oracle of every frame; the few numbers written below were read off these exports (README there).

Held on these exports: the node folders import as one 2-rank job on the agents' two hosts, the same ranks,
per-rank GPU busy time, stragglers and transfers as the assembled run folder and as on the GPU machine,
each rank on its own H200; after alignment the ends of all 105 matched NCCL kernels agree within 50 us
(the bound test_job_nodes and test_report_ranks state; 29.0 us at most here, an all-to-all's SendRecv);
rank 1's clock residual is the -4,166 ns the visit printed, the median of the raw end gaps, and smaller
than those gaps' own scatter (median absolute deviation 10.0 us): the two agents' nsys read one host
clock; `ranks` names a straggler per variant and int8's wire bytes 0.251x baseline's; the job's report
page draws both ranks on one clock and fetches nothing. No GPU.
"""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from repo_paths import FIXTURES

from aisp_prof.api import RunDatabase
from aisp_prof.cli import cli
from aisp_prof.collect.process.agents import assemble
from aisp_prof.parse.nsys.job import load_job, refine_offsets
from aisp_prof.parse.nsys.job_clock import collective_end_gaps

FIXTURE = FIXTURES / "multinode_h200x2"
RUN = next(p for p in sorted(FIXTURE.glob("*")) if (p / "run.json").is_file())
NODES = ("node0", "node1")
EXPORTS = (Path("node0") / "nsys.sqlite.gz", Path("node1") / "nsys.rank1.sqlite.gz")
VISIT = {kind: json.loads((FIXTURE / f"visit_ranks_{kind}.json").read_text()) for kind in ("run", "job")}
VARIANTS = ["baseline", "fp32_rs_ag", "int8", "int8_overlap"]
BOUND_NS = 50_000                 # collective ends on one clock (test_job_nodes, test_report_ranks)
N = 1 << 26                       # numel of the run (run.json sizes)
PACKED = N + 4 * (N // 1024)      # int8 payload and one fp32 scale per 1024-element block


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """The run folder assembled as the run left it (its top-level exports were hard links of the node
    folders' files; git keeps them once, in the node folders), imported; and the node folders alone,
    imported as one job, into the same database."""
    tmp = tmp_path_factory.mktemp("multinode")
    run = tmp / RUN.name
    shutil.copytree(RUN, run)
    assemble(run, list(NODES))
    db = tmp / "a.db"
    res = invoke("import", "--db", str(db), str(run))
    assert res.exit_code == 0, res.output
    res = invoke("import", "--db", str(db), "--job", "multinode-ch14.quantized_allreduce",
                 *(str(run / n) for n in NODES), "--json")
    assert res.exit_code == 0, res.output
    job = json.loads(res.stdout)[0]["run_id"]
    ranks = {}
    for kind, run_id in (("run", RUN.name), ("job", job)):
        res = invoke("ranks", run_id, "--db", str(db), "--json")
        assert res.exit_code == 0, res.output
        ranks[kind] = json.loads(res.stdout)
    return {"db": db, "run": run, "job": job, "ranks": ranks, "tmp": tmp}


@pytest.fixture(scope="module")
def raw():
    """The two node exports on the session-start clock only, before the collectives correct it."""
    return load_job([RUN / p for p in EXPORTS])


def _no_path(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "path"} for r in rows]


# ------------------------------------------------------------------------------------ assembly


@pytest.mark.slow
def test_node_folders_are_one_job_of_two_ranks_on_the_agents_hosts_as_the_run_folder(stored):
    job, run = stored["ranks"]["job"], stored["ranks"]["run"]
    assert [(r["rank"], r["hostname"], r["local_rank"], r["world_size"]) for r in job["ranks"]] == [
        (0, "vm-node0", 0, 2), (1, "vm-node1", 0, 2)]                    # one GPU per agent: local rank 0 twice
    assert {r["job_id"] for r in job["ranks"]} == {RUN.name}              # torchrun's --rdzv-id: the run's id
    assert _no_path(job["ranks"]) == _no_path(run["ranks"])
    busy = {(r["variant"], r["rank"]): r["gpu_busy_ns"] for r in job["per_rank"]}
    assert busy == {(r["variant"], r["rank"]): r["gpu_busy_ns"] for r in run["per_rank"]}
    assert sorted(busy) == [(v, r) for v in VARIANTS for r in (0, 1)] and all(b > 0 for b in busy.values())


@pytest.mark.slow
def test_the_jobs_timeline_is_the_run_folders(stored):
    """What the summary reads off the timeline (rank 0's rows) is the same from the node folders as from the
    run folder; only the headline's timer differs (the job has no CUDA events: nsys GPU time)."""
    nsys = ("kernels_per_call", "gpu_time_ns", "kernel_time_ns", "memcpy_per_call", "memcpy_time_ns", "gap_per_call_ns")
    rows = {}
    for kind, run_id in (("run", RUN.name), ("job", stored["job"])):
        res = invoke("summary", run_id, "--db", str(stored["db"]), "--json")
        assert res.exit_code == 0, res.output
        out = json.loads(res.stdout)
        rows[kind] = [{k: r[k] for k in ("variant", *nsys)} for r in out["summary"]]
        rows[kind + "_per_rank"] = out["per_rank"]
    assert [r["variant"] for r in rows["job"]] == VARIANTS and rows["job"] == rows["run"]
    assert rows["job_per_rank"] == rows["run_per_rank"]


SIZED = ("bandwidth", "wire")      # the frames that need the collectives' message sizes


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["run", "job"])
def test_the_cpu_reads_what_the_gpu_machine_read(stored, kind):
    """`ranks --json` here equals the visit's on the GPU machine, frame by frame (paths aside). The job's
    sized frames are the run's now: import --job of a run's node folders reads the message sizes its run.json
    declares (the visit's job, imported before that, had none)."""
    got, want = stored["ranks"][kind], VISIT[kind]
    assert set(got) == set(want)
    for frame in want:
        if kind == "job" and frame in SIZED:
            assert got[frame] == stored["ranks"]["run"][frame] != want[frame], frame
            continue
        assert (_no_path(got[frame]) if frame == "ranks" else got[frame]) == (
            _no_path(want[frame]) if frame == "ranks" else want[frame]), frame


def test_each_agents_rank_ran_on_its_own_gpu(raw):
    """Both ranks are LOCAL_RANK 0 of their agent and CUDA device 0 of their process; the agents were given
    GPU 0 and GPU 1 (CUDA_VISIBLE_DEVICES), which the exports' device maps resolve to two different H200s."""
    assert [(g["device_id"], g["bus_location"]) for g in raw.gpus.values()] == [
        (0, "0000:00:06.0"), (0, "0000:00:07.0")]
    assert len({g["uuid"] for g in raw.gpus.values()}) == 2
    assert {g["gpu_name"] for g in raw.gpus.values()} == {"NVIDIA H200"}


# ------------------------------------------------------------------------------------ one clock


def test_collective_ends_agree_within_the_bound_once_aligned(raw):
    gaps = collective_end_gaps(refine_offsets(raw).kernels, 1, 0)
    assert len(gaps) == 105                                   # every NCCL kernel of rank 1 has rank 0's
    assert gaps.abs().max() == 28_995 < BOUND_NS               # an all-to-all's SendRecv, 29.0 us
    assert gaps.abs().idxmax()[0] == "ncclDevKernel_SendRecv"
    assert gaps.median() == 0                                  # the correction centres them


def test_clock_residuals_are_the_visits_and_within_the_ends_own_scatter(stored, raw):
    ranks = {r["rank"]: r for r in stored["ranks"]["job"]["ranks"]}
    printed = {r["rank"]: r["clock_residual_ns"] for r in VISIT["job"]["ranks"]}
    assert {k: r["clock_residual_ns"] for k, r in ranks.items()} == printed == {0: 0.0, 1: -4166.0}
    gaps = collective_end_gaps(raw.kernels, 1, 0)
    assert np.median(gaps) == ranks[1]["clock_residual_ns"]                 # what the residual is
    scatter = np.median(np.abs(gaps - np.median(gaps)))                     # 10.0 us
    assert abs(ranks[1]["clock_residual_ns"]) < scatter                      # one host clock: within the noise
    starts = {r: ranks[r]["session_start_utc_ns"] for r in ranks}
    assert ranks[0]["clock_offset_ns"] == starts[0] - starts[1] == 27_453     # rank 1's nsys started first
    assert ranks[1]["clock_offset_ns"] == -ranks[1]["clock_residual_ns"]


# ------------------------------------------------------------------------------------ verdict


@pytest.mark.slow
def test_ranks_names_a_straggler_per_variant_and_int8_moves_a_quarter_of_the_bytes(stored):
    res = invoke("ranks", RUN.name, "--db", str(stored["db"]))
    assert res.exit_code == 0, res.output
    lines = res.stdout.split("stragglers\n", 1)[1]
    for v in VARIANTS:
        assert re.search(rf"^  {v}: rank [01] arrived last at \d+ of \d+ collectives", lines, re.M), v
    run = stored["ranks"]["run"]
    found = {s["variant"]: s["finding"] for s in run["stragglers"] if s["variant"] and s["finding"]}
    assert sorted(found) == sorted(VARIANTS)
    assert found["int8_overlap"].startswith("rank 1 arrived last") and found["baseline"].startswith("rank 0")
    wire = {w["variant"]: w for w in run["wire"]}
    assert wire["baseline"]["wire_bytes_per_call"] == 4 * N                     # 2 (W-1)/W x 4N at W = 2
    for v in ("int8", "int8_overlap"):
        assert wire[v]["bytes_vs_baseline"] == pytest.approx(PACKED / (4 * N)) == pytest.approx(0.251, abs=1e-3)
        assert 0.25 < wire[v]["time_vs_baseline"] < 0.45                      # measured: 0.31x and 0.41x
    # the job of the node folders reads the sizes the run declared (run.json beside them): the same bytes and times
    job = {w["variant"]: w for w in stored["ranks"]["job"]["wire"]}
    assert {v: job[v]["wire_bytes_per_call"] for v in VARIANTS} == {v: wire[v]["wire_bytes_per_call"] for v in VARIANTS}
    assert {v: job[v]["transfer_ns_per_call"] for v in VARIANTS} == {
        v: wire[v]["transfer_ns_per_call"] for v in VARIANTS}


# ------------------------------------------------------------------------------------ the page


@pytest.mark.slow
def test_the_jobs_report_page_draws_both_ranks_on_one_clock_offline(stored):
    db = RunDatabase(stored["db"])
    lanes = db.page(stored["job"])["ranks"]["lanes"]
    assert list(lanes) == VARIANTS
    for v, it in lanes.items():
        assert [r["rank"] for r in it["ranks"]] == [0, 1], v
        assert min(r["start_ns"] for r in it["ranks"]) == 0, v
        boxes = {rank: sorted((b for ln in it["lanes"] if ln["rank"] == rank for b in ln["ops"]
                               if b["kind"] == "collective"), key=lambda b: b["start_ns"]) for rank in (0, 1)}
        assert len(boxes[0]) == len(boxes[1]) > 0, v
        for a, b in zip(boxes[0], boxes[1]):
            last = max(a["start_ns"], b["start_ns"])      # each waits for the later arrival, on one clock
            assert a["start_ns"] + a["wait_ns"] == last and b["start_ns"] + b["wait_ns"] == last, v
            assert abs(a["end_ns"] - b["end_ns"]) < BOUND_NS, v
    report = db.report([stored["job"]], out=stored["tmp"] / "report")
    page = next(p for p in report.pages if p.name != "index.html")
    text = page.read_text()
    for v in VARIANTS:
        rows = re.findall(rf'<tr[^>]*data-variant="{v}"[^>]*data-rank="(\d)"|<tr[^>]*data-rank="(\d)"[^>]*'
                          rf'data-variant="{v}"', text)
        assert {a or b for a, b in rows} == {"0", "1"}, v
    chart = re.findall(r'<a href="(img/[^"]+-rank-timeline\.svg)"', text)
    assert len(chart) == 1 and (page.parent / chart[0]).stat().st_size > 10_000
    assert "http://" not in text and "https://" not in text and "<script src" not in text


def test_message_sizes_come_only_from_the_run_whose_node_folders_hold_the_exports(tmp_path):
    """declared_collectives: RUN/node<i>/ exports with RUN/run.json of the same rank count give its sizes; exports
    elsewhere, a run.json of another rank count, or a broken one give none (nsys exports no NCCL payload)."""
    from aisp_prof.store.ingest_job import declared_collectives

    exports = [RUN / "node0" / "nsys.sqlite.gz", RUN / "node1" / "nsys.rank1.sqlite.gz"]
    got = declared_collectives(exports, 2)
    assert got["analytic"]["collective_bytes"]["int8/AlltoAll"] == PACKED
    assert got["collective_bytes_from"].endswith("run.json")
    assert declared_collectives(exports, 4) == {}                                   # another job's rank count
    assert declared_collectives([RUN.parent.parent / "multigpu_h100x2" / "nsys.rank0.sqlite.gz"], 2) == {}
    for text in ("{", "[]", '{"world_size": 2}'):
        (tmp_path / "run.json").write_text(text)
        for n in (0, 1):
            (tmp_path / f"node{n}").mkdir(exist_ok=True)
        assert declared_collectives([tmp_path / "node0" / "a.sqlite", tmp_path / "node1" / "b.sqlite"], 2) == {}, text
