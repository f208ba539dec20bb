"""The label mean: the fallback release when a budget cannot fit slopes, and the
released data means."""
