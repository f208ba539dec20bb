"""The releases of the regressors, one folder per mechanism: each release with its
law, published bounds and private ridge.

``_release`` holds the contract every release meets."""
