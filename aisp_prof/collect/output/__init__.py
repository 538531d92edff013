"""What a collection leaves behind: a run folder that is complete or absent, with the provenance
every run records, and an `.nsys-rep` exported to SQLite so that it imports directly."""
