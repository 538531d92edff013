"""Is a variant's output right: the check against the float64 reference and the baseline, the
shapes `check --fuzz` draws, and `aisp-prof check` over several shapes."""
