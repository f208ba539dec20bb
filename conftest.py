"""Test-session set-up shared by the tests and the doctests."""

import os

# scikit-learn's check_array_api_input is skipped unless SciPy's array-API
# mode is on, and SciPy reads this variable when it is first imported.
os.environ.setdefault("SCIPY_ARRAY_API", "1")
