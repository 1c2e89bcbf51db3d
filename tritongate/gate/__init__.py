"""The gate: compare a base run and a candidate run row by row, and decide."""
