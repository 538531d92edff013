"""A multi-rank job, rank by rank: busy, NCCL and compute time, who arrived last at each
collective, one iteration as lanes, and what `aisp-prof ranks` and the report say of it."""
