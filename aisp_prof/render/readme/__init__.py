"""The tables the chapter READMEs show, printed from the data, never typed: the gate's recorded
evidence (`evidence_table`) and the shipped profiled runs' headlines (`run_table`). Each is kept
equal to its README block by a test (tests/integration/test_readme_evidence.py, test_readme_runs.py)."""
