"""The times of a variant: confidence intervals of samples, the one speedup per comparison, and
what kind of time a variant has (GPU-, launch- or host-bound), every sample by round (rounds.py)."""
