"""Random projection (Gaussian sketch)."""
