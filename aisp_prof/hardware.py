"""The hardware key that names per-GPU files: expectations_<key>.json, calibration/<key>.json."""
from __future__ import annotations

import re


def hardware_key(gpu_name: str, gpu_count: int = 1) -> str:
    """'NVIDIA H100 80GB HBM3' -> 'h100_80gb_hbm3'; 'NVIDIA H200' -> 'h200'; 2 GPUs -> '2x_h200'."""
    name = re.sub(r"^nvidia[\s_-]*", "", gpu_name.strip().lower())
    key = re.sub(r"[^a-z0-9]+", "_", name).strip("_") or "unknown_gpu"
    return f"{gpu_count}x_{key}" if gpu_count > 1 else key
