"""The processes a collection starts and what runs in each: `run`'s runner and its steps (check,
ncu, nsys), the profiled child, `check`'s shape child, and compute-sanitizer over the child."""
