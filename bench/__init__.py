"""Benchmarks that print figures; `python -m bench [--quick]` runs them all (never as tests)."""
