"""The records every stage shares: a stored run (`RunData`) and its raw ncu metrics (`LaunchMetrics`).

Plain data (pandas and numpy) that imports nothing else of aisp_prof, so parse, collect, store,
analyze and pairs may all hold it without reaching into each other. Nothing is imported here, so
`from aisp_prof.model.run_data import RunData` stays light.
"""
