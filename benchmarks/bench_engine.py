"""Thin wrapper so `make bench` and `python benchmarks/bench_engine.py --help` work."""
import sys

from dpdl_core.bench import main

sys.exit(main(sys.argv[1:]))
