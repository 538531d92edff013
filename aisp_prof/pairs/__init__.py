"""Kernel pairs: what one is (`model`), how they are found (`discovery`) and whether one can
run on this machine (`capabilities`, imported on its own: it probes tools and torch)."""
from .book import Book
from .discovery import discover, find, pair_sizes, parse_sizes, select
from .model import Factory, Inputs, KernelPair, Launch, Requirements
from .roles import Mechanism
from .size_rules import SizeRule

__all__ = ["KernelPair", "Requirements", "Mechanism", "Book", "Inputs", "Launch", "Factory", "discover", "find", "select",
           "parse_sizes", "pair_sizes", "SizeRule"]
