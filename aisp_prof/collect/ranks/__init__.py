"""A collection over several GPUs: the profiled child as one rank of a torchrun job (`group`) and
the command line torchrun starts on each rank (`rank_exec`)."""
