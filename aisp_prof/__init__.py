"""aisp-prof: did my GPU optimization work, and why? (collect -> parse -> store -> analyze -> render)"""

__version__ = "0.1.0"
