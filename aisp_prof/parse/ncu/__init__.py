"""Nsight Compute exports (the raw-page CSV and the .ncu-rep report) into one frame per launch,
and whether an export is whole."""
