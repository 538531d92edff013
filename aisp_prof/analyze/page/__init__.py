"""What a report page shows of one run, as JSON-ready data, and its per-variant tables."""
