"""Measured roofline ceilings: probe kernels with exact analytic work, timed on the GPU.

`aisp-prof calibrate` runs them (`child.py`, in a process of its own, as the profiled pairs
do), turns the timings into ceilings and stores them per hardware key (`store.py`): in the
`ceilings` table of the run database and, for laptops with an empty database, as
`profiles/calibration/<hardware_key>.json`. Importing this package needs no torch and no GPU.
"""
