"""Test-session set-up shared by the tests and the doctests."""

import os

# scikit-learn's check_array_api_input is skipped unless SciPy's array-API
# mode is on, and SciPy reads this variable when it is first imported.
os.environ.setdefault("SCIPY_ARRAY_API", "1")

# Continuous integration (CI=true) replays hypothesis' examples from a fixed
# seed so that a run is reproducible; local runs keep exploring new examples.
if os.environ.get("CI"):
    from hypothesis import settings

    settings.register_profile("ci", derandomize=True, database=None)
    settings.load_profile("ci")
