"""The GPU of an Nsight Systems SQLite export: TARGET_INFO_GPU, the process's CUDA device map
and the driver versions, for `NsysParse.gpu` (split from `tables`, which reads the rest)."""
from __future__ import annotations

import logging
import sqlite3

import pandas as pd

from aisp_prof.sqlite_frames import query_frame
from aisp_prof.values import to_python

log = logging.getLogger(__name__)

# TARGET_INFO_GPU column -> key of NsysParse.gpu (units in the key name)
_GPU_FIELDS = {
    "name": "gpu_name",          # the key the rest of aisp-prof uses (collect, store)
    "chipName": "chip_name",
    "busLocation": "bus_location",
    "uuid": "uuid",
    "smCount": "sm_count",
    "clockRate": "sm_clock_hz",
    "totalMemory": "memory_total_bytes",
    "memoryBandwidth": "memory_bandwidth_bytes_per_s",
    "l2CacheSize": "l2_cache_bytes",
    "maxShmemPerSm": "max_shared_per_sm_bytes",
    "maxShmemPerBlockOptin": "max_shared_per_block_optin_bytes",
    "maxRegistersPerSm": "max_registers_per_sm",
    "maxRegistersPerBlock": "max_registers_per_block",
    "maxWarpsPerSm": "max_warps_per_sm",
    "maxBlocksPerSm": "max_blocks_per_sm",
    "maxThreadsPerBlock": "max_threads_per_block",
    "threadsPerWarp": "threads_per_warp",
    "asyncEngines": "async_engines",
}


# ------------------------------------------------------------------------------------------- gpu


def read_gpu(conn: sqlite3.Connection, tables: set[str], kernels: pd.DataFrame) -> dict[str, object]:
    """Describe the GPU that ran most kernels, mapping CUDA device ordinals through the process."""
    if "TARGET_INFO_GPU" not in tables:
        return {}
    counts = kernels.groupby(["process_id", "device_id"]).size()
    if counts.empty:                                  # no process ids in this export
        return read_gpu_of(conn, tables, counts, int(kernels["device_id"].mode().iloc[0]))
    return read_gpu_of(conn, tables, counts)


def read_gpu_of(conn: sqlite3.Connection, tables: set[str], counts: pd.Series,
                device_id: int | None = None) -> dict[str, object]:
    """`read_gpu` of the kernels' counts per (process id, device id) in that order (the
    groupby's), or of the commonest `device_id` where no kernel has a process id."""
    if "TARGET_INFO_GPU" not in tables:
        return {}
    gpus = query_frame(conn, "SELECT * FROM TARGET_INFO_GPU")
    if gpus.empty:
        return {}
    devices = counts.index.get_level_values(1).nunique() if len(counts) else 1
    if devices > 1:
        log.info("kernels ran on %d devices; describing the busiest", devices)
    counts = counts.sort_values(ascending=False)
    if counts.empty:
        process_id, cuda_id = None, device_id
    else:
        process_id, cuda_id = (int(v) for v in counts.index[0])
    row = gpus.iloc[0]
    gpu_id = None if process_id is None else _gpu_id_for(conn, tables, process_id, cuda_id)
    if gpu_id is not None and (gpus["id"] == gpu_id).any():
        row = gpus.loc[gpus["id"] == gpu_id].iloc[0]
    elif "cuDevice" in gpus and (gpus["cuDevice"] == cuda_id).any():
        row = gpus.loc[gpus["cuDevice"] == cuda_id].iloc[0]
    info: dict[str, object] = {"device_id": cuda_id}
    for column, key in _GPU_FIELDS.items():
        if column in row.index and pd.notna(row[column]):
            info[key] = to_python(row[column])
    if {"computeMajor", "computeMinor"} <= set(row.index) and pd.notna(row["computeMajor"]):
        info["compute_capability"] = f"{int(row['computeMajor'])}.{int(row['computeMinor'])}"
    info.update(_read_system_env(conn, tables))
    return info


def _read_system_env(conn: sqlite3.Connection, tables: set[str]) -> dict[str, object]:
    """Driver versions, which nsys keeps as text properties of the target system."""
    if "TARGET_INFO_SYSTEM_ENV" not in tables:
        return {}
    props = dict(conn.execute(
        "SELECT name, value FROM TARGET_INFO_SYSTEM_ENV WHERE name IN ('NvDriverVersion', 'CudaDriverVersion')"
    ).fetchall())
    out: dict[str, object] = {}
    if props.get("NvDriverVersion"):
        out["driver_version"] = props["NvDriverVersion"]
    if str(props.get("CudaDriverVersion", "")).isdigit():      # 13000 -> "13.0", as cudaDriverGetVersion
        version = int(props["CudaDriverVersion"])
        out["cuda_driver_version"] = f"{version // 1000}.{version % 1000 // 10}"
    return out


def _gpu_id_for(conn: sqlite3.Connection, tables: set[str], process_id: int, cuda_id: int) -> int | None:
    """TARGET_INFO_GPU.id of a process's CUDA device ordinal (they differ under CUDA_VISIBLE_DEVICES)."""
    if "TARGET_INFO_CUDA_DEVICE" not in tables:
        return None
    row = conn.execute(
        "SELECT gpuId FROM TARGET_INFO_CUDA_DEVICE WHERE pid = ? AND cudaId = ?", (process_id, cuda_id)
    ).fetchone()
    return None if row is None or row[0] is None else int(row[0])
