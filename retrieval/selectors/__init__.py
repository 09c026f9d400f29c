"""Reads: the search pipeline (search/), one stage per function, each reported in the trace."""
