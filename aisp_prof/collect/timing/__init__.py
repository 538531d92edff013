"""How long a variant takes: the one CUDA-event timer (`timer.time_rounds`), its three kinds of
time (`samplers`), the kernel that holds the stream, and the GPU's clocks beside each sample."""
