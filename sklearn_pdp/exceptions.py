"""Warnings raised by sklearn-pdp."""

__all__ = ["PrivacyLeakWarning"]


class PrivacyLeakWarning(RuntimeWarning):
    """The privacy guarantee is weaker than the parameters suggest.

    Raised, for example, when a data bound (``data_norm`` or ``y_bound``) is
    not given and is read from the private data instead: the bound itself is
    then a non-private statistic of the data.
    """
