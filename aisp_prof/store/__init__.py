"""The store stage: the run database (`db`), turning files into runs (`ingest`), choosing runs
by id, prefix, pair or chapter (`select`), a pair's history, and measured calibrations.

Nothing is imported here, so `from aisp_prof.store.db import ...` stays light.
"""
