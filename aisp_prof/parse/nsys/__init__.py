"""Nsight Systems SQLite exports into GPU activity and NVTX range tables, one run or one
multi-rank job on one clock."""
