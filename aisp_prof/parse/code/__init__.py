"""What a compiler generated: PTX and SASS instruction counts, Inductor's and Triton's cache files."""
