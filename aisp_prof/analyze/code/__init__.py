"""What compiling cost and produced: torch.compile's per-variant costs and the generated kernels
a question is about."""
