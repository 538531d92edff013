"""Whether a variant's communication follows the bytes it was predicted to move (issue 34).

Each rank's wire bytes per call are predicted from the pair's declared message sizes (S, nccl-tests'
definition per operation) and the rank count W: a collective moves S x its nccl-tests bus factor per
rank (all-reduce 2 (W-1)/W, reduce-scatter, all-gather and all-to-all (W-1)/W), so an fp32 ring
all-reduce of N elements moves 2 (W-1)/W x 4N and the int8 path 2 (W-1)/W x (N + 4N/BLOCK): from 1x
the payload at 2 ranks to 1.5x at 4 and 1.75x at 8. nsys exports no NCCL payload, so no byte is
measured; what is measured is the time: the transfer per call once every rank had arrived
(`report.transfer_per_call_ns`). The check is then two ratios against the baseline, predicted bytes
and measured time, and, where the link was calibrated (`aisp-prof calibrate --link W`), the bytes that
time would move at the link's measured bus bandwidth (`implied_bytes`): equal to the prediction when
the variant drives the link as hard as nccl-tests does.
"""
from __future__ import annotations

from typing import Mapping

import pandas as pd

from .collectives import BUSBW_FACTORS

WIRE_COLUMNS = ("variant", "world_size", "wire_bytes_per_call", "bytes_vs_baseline", "transfer_ns_per_call",
                "time_vs_baseline", "link_busbw_gb_per_s", "implied_bytes_per_call", "implied_vs_predicted")


def wire_table(bandwidth: pd.DataFrame, iterations: Mapping[str, float], transfer_ns: Mapping[str, float],
               world: int, baseline: str = "baseline") -> pd.DataFrame:
    """One row per variant with collectives, WIRE_COLUMNS. `bandwidth`: per (variant, op) the
    collectives seen, message_bytes and link_busbw_gb_per_s (report.RankReport.bandwidth);
    `iterations`: calls per variant (rank 0's); `transfer_ns`: transfer per call per variant."""
    rows = []
    for variant, ops in bandwidth.groupby("variant", sort=False):
        calls = float(iterations.get(variant) or 0)
        if not calls:
            continue
        per_op = ops["message_bytes"] * ops["op"].map(lambda o: BUSBW_FACTORS[o](world) if o in BUSBW_FACTORS else None)
        wire = float((per_op.astype(float) * ops["collectives"] / calls).sum(min_count=1))
        t = transfer_ns.get(str(variant))
        # the link's bus bandwidth over this variant's collectives, weighted by the bytes each moves
        link = (ops["link_busbw_gb_per_s"] * per_op).sum(min_count=1) / per_op.sum(min_count=1)
        implied = float(t * link) if t and link == link else None
        rows.append({"variant": str(variant), "world_size": world, "wire_bytes_per_call": wire,
                     "transfer_ns_per_call": t, "link_busbw_gb_per_s": float(link) if link == link else None,
                     "implied_bytes_per_call": implied,
                     "implied_vs_predicted": implied / wire if implied and wire == wire and wire else None})
    out = pd.DataFrame(rows, columns=[c for c in WIRE_COLUMNS if c not in ("bytes_vs_baseline", "time_vs_baseline")])
    base = out.set_index("variant").loc[baseline] if baseline in set(out["variant"]) else None
    out["bytes_vs_baseline"] = out["wire_bytes_per_call"] / base["wire_bytes_per_call"] if base is not None else None
    out["time_vs_baseline"] = out["transfer_ns_per_call"] / base["transfer_ns_per_call"] if base is not None else None
    return out.loc[:, list(WIRE_COLUMNS)]


def wire_sentences(wire: pd.DataFrame, baseline: str = "baseline") -> list[str]:
    """Per variant other than the baseline: its predicted wire bytes per rank per call against the
    baseline's, and whether its measured transfer time followed."""
    out = []
    for r in wire.to_dict("records"):
        if r["variant"] == baseline or not r["wire_bytes_per_call"] == r["wire_bytes_per_call"]:
            continue
        text = (f"{r['variant']}: {r['wire_bytes_per_call'] / 1e6:.1f} MB on the wire per rank per call predicted "
                f"at {r['world_size']} ranks")
        b, t = r.get("bytes_vs_baseline"), r.get("time_vs_baseline")
        if b == b and b and t == t and t:
            text += (f" ({1 / b:.2f}x fewer bytes than {baseline}); its transfer took {1 / t:.2f}x less time"
                     if b < 1 else f" ({b:.2f}x {baseline}'s bytes); its transfer took {t:.2f}x the time")
        if r.get("implied_vs_predicted"):
            text += (f"; at the link's measured {r['link_busbw_gb_per_s']:.0f} GB/s that time moves "
                     f"{r['implied_bytes_per_call'] / 1e6:.1f} MB ({r['implied_vs_predicted']:.2f}x the prediction)")
        out.append(text + ".")
    return out
