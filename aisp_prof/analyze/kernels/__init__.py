"""What each kernel launch did and how it was measured: the `kernels` table, counted FLOPs and
bytes, the cluster shape, and what the recorded ncu command line says about the numbers."""
