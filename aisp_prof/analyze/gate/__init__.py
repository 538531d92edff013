"""The gate's rules: what a pair measured, kept as evidence (`expectations`), and the verdict of
new samples against it (`verdict`: FASTER, SLOWER, SAME or AMBIGUOUS). `bench` runs pairs and
records; `analyze.run_diff` judges two stored runs by the same rules."""
