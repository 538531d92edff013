"""What gets built and compiled while a pair runs: the CUDA libraries nvcc still has to build,
what torch.compile's Dynamo did, and the Inductor and Triton output kept in the run folder."""
