"""The gate's rules: what a pair measured, kept as evidence (`expectations`), the verdict of new
samples against it (`verdict`: FASTER, SLOWER, SAME or AMBIGUOUS), and the decisions around it
(`rules`: when to time another process, how far one machine's evidence holds, what fails a build).
`bench` runs pairs, asks these rules and records; `analyze.run_diff` judges two stored runs by them."""
