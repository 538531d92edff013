"""`python -m aisp_prof` is `aisp-prof`."""
from .cli import main

main()
