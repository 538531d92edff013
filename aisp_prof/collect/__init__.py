"""The GPU side: a folder per question, each importing only those listed before it.

    commands.py   profiler and `python -m` command lines, pure functions (every folder uses them)
    output/       what a collection leaves: the atomic run folder and its provenance, a .nsys-rep
                  exported to SQLite
    ranks/        the child as one rank of a torchrun job, and each rank's own command line
    code/         what gets built and compiled: CUDA builds pending, torch.compile's events, the
                  kept Inductor/Triton output
    timing/       how long a variant takes: the timer's rounds, the three samplers, the hold
                  kernel, the GPU's sensors
    correctness/  is the output right: the check against float64 and the baseline, fuzzed shapes,
                  `aisp-prof check`
    process/      the processes a collection starts and what runs in each: `run`'s runner and its
                  steps (check, ncu, nsys), the profiled child, `check`'s shape child,
                  compute-sanitizer over the child
"""
