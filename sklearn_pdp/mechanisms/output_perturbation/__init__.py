"""Output perturbation: the release and its calibration."""
