"""Public data sets bundled with sklearn-pdp, loaded offline."""

from ._nyc_weather import load_nyc_weather

__all__ = ["load_nyc_weather"]
