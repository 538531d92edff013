"""Where a call's time went on the GPU timeline: one representative call per variant, one range
row per variant call, and choosing ranges to show by depth and name."""
