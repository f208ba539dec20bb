"""Warnings raised by sklearn-pdp."""

__all__ = ["BoundsWarning", "FallbackWarning", "PrivacyLeakWarning"]


class PrivacyLeakWarning(RuntimeWarning):
    """The privacy guarantee is weaker than the parameters suggest.

    Raised, for example, when a data bound (``data_norm`` or ``y_bound``) is
    not given and is read from the private data instead: the bound itself is
    then a non-private statistic of the data; and when ``delta >= 1 /
    n_samples``, a guarantee that a mechanism publishing a random record in
    full would meet.
    """


class FallbackWarning(UserWarning):
    """The fit released less than its parameters asked for.

    Raised when the budget cannot buy the requested model on this data set
    size (the label mean alone, zero slopes, or a larger ridge than the one
    given): the warning names the reason and the public threshold (an
    epsilon, a sample size or a parameter value) at which the requested
    model would be released. The fitted estimator records the same reason
    in ``mean_only_reason_`` where it released the label mean alone; a
    larger ridge shows in ``alpha_``, and a private search that chose its
    candidate without data (parts too small for the grid) has
    ``selection_epsilon_ = 0``.
    """


class BoundsWarning(UserWarning):
    """The declared bounds clip a large share of the rows or labels.

    For the data curator only: the shares are computed from the private
    data and are not covered by any privacy guarantee, so the message must
    not be published. Clipping is what keeps the release private, but bounds
    that clip most labels bias the model towards the bounds.
    """
