"""Docstring paragraphs that the private regressors (and the accounting
functions) share, kept in one place.

A class decorated with :func:`fill_doc` writes ``{name}`` on a line of its own
(indented like a parameter entry) where the paragraph ``name`` belongs; the
decorator replaces it at import, so the rendered documentation and ``help()``
show the full text.
"""

import re

_SHARED = {
    "direction_delta": """\
direction : {"both", "remove", "add"}, default="both"
    "remove" is delta_PQ, "add" is delta_QP, "both" their maximum.

Returns
-------
delta : float or ndarray
    Broadcast shape of the inputs.""",
    "bounds": """\
data_norm : float, default=None
    Public bound on the l2 norm of the rows of X. Longer rows are scaled
    down to it (on a copy). Give either ``data_norm`` or ``bounds_X``; if
    neither is given, ``data_norm`` is read from the data with a
    :class:`~sklearn_pdp.exceptions.PrivacyLeakWarning`.
bounds_X : tuple (lower, upper), default=None
    Public per-feature ranges, each a scalar or an array of length
    n_features (as in diffprivlib). Features are clipped to them, centred
    at the midpoints and divided by the half-widths times
    ``sqrt(n_features)``, so every row lies in the unit ball (with
    ``fit_intercept=False`` centred at 0 and divided by ``max(|lower|,
    |upper|)`` instead: the model goes through the origin).
y_bound : float or tuple (low, high), default=None
    Public range of the labels: ``b`` for ``[-b, b]`` or a pair; labels are
    clipped to it, centred at its midpoint and scaled to [-1, 1] (with
    ``fit_intercept=False`` divided by ``max(|low|, |high|)``). If None
    it is read from the data with a
    :class:`~sklearn_pdp.exceptions.PrivacyLeakWarning`.
schema : Schema, default=None
    The declared domain of the table (:class:`~sklearn_pdp.Schema`): X
    must then be the features its ``encoder()`` makes (in a Pipeline after
    it). Its numeric ranges replace ``bounds_X`` (giving both, or
    ``data_norm``, is an error) and its label range ``y_bound``; each
    numeric feature is scaled to [-1, 1], each categorical column's
    indicators are kept as 0/1 (not centred), and the row is divided by
    the square root of the number of columns, so that a categorical
    column takes one share of the row norm whatever its number of
    categories (:doc:`/preprocessing`).""",
    "tighten": """\
tighten_bounds : bool or "auto", default="auto"
    Release tighter bounds before the model where the rows suffice: on by
    default. From the rows of a public share ``tighten_share`` (each row's
    part a public hash of its content, so adding or removing a row moves
    no other): two private quantiles (exponential mechanism on a public
    grid) of each declared range of ``bounds_X`` (or of a schema) but the
    (0, 1) ones of indicator columns and a schema's categorical blocks
    (never tightened), one of the row norms for ``data_norm``, four of the
    label's range (``y_bound`` or the schema's ``label_range``: each end
    extrapolated from two quantiles, for long tails). Only declared ranges
    are tightened: a bound read from the data stays as read, so with
    nothing declared nothing is. The label first: its four quantiles get
    at least the epsilon of the level 0.1 (4 log(79) / 0.1 over the rows
    they are released from), the features an even share of the rest;
    where the budget cannot give the label that, nothing is tightened, and
    where the features' share is too small, the label alone. The model is
    fitted and calibrated on the other rows at the released bounds. Each
    part has the whole budget (parallel composition): ``dp_epsilon_`` is
    the larger of the two, and each row's ``pdp_losses_`` is its part's,
    given the released bounds (``pdp_kind_`` "conditional": it may differ
    between ``random_state`` s); predictions clip new rows to the released
    bounds (:doc:`/mechanisms/tightening`). The public rule: tighten only
    where each quantile's epsilon times the rows it is released from is at
    least 4 log(79); elsewhere the model takes the declared bounds and the
    whole budget with exact per-instance losses where the mechanism has
    them (``pdp_kind_`` "exact"), silently with "auto", with a
    ``BoundsWarning`` saying why with True. "auto", the default, was
    measured at most 1.02 times the declared bounds' error (heavy- and
    light-tailed labels, :doc:`/mechanisms/tightening`); it does not
    tighten without an epsilon budget, nor in a private search per person
    (``max_records``). False, the off switch, always fits on the declared
    bounds with the whole budget. True needs an epsilon budget.
tighten_share : float in (0, 1), default=None
    Share of the rows the bounds are released from; None means 0.1.""",
    "fit_intercept": """\
fit_intercept : bool, default=True
    Fit an intercept: a constant feature 1 inside the privacy analysis that
    no ridge penalty shrinks, so a strongly regularised model falls back to
    the label mean rather than to 0. Never fitted by centring with data
    means.""",
    "random_state": """\
random_state : int, RandomState instance or None, default=None
    Seeds all the noise of a fit. None (for releases) seeds it with 256
    bits from :mod:`secrets`, which no ``np.random.seed`` can predict; an
    int gives a reproducible fit, for experiments, not releases. The privacy
    numbers never depend on it.""",
    "n_jobs": """\
n_jobs : int, default=None
    Threads that process chunks of rows in parallel in the passes over the
    data (numpy and scipy release the GIL there; BLAS is limited to one
    thread each meanwhile). ``None`` means 1 unless in a
    :func:`joblib.parallel_config` context, -1 means all processors.
    Results agree up to floating-point rounding. Dask input is parallelised
    by its scheduler instead.
max_records : int, default=None
    A public cap on each person's records, with ``fit(X, y, groups=keys)``
    (an error without ``groups``): rows beyond a person's first
    ``max_records`` in the order given are dropped (a public rule), and
    ``dp_epsilon_`` holds for adding or removing a whole person. AdaSSP
    sizes its noise for ``max_records`` rows' change (with
    ``tighten_bounds``, its bounds' quantiles too: rank sensitivity k);
    the other fits are calibrated per record at ``(epsilon / k, delta /
    (k e^((k - 1) epsilon / k)))``, which group privacy turns into
    ``(epsilon, delta)`` per person (:doc:`/people`). None: a guarantee
    per record.""",
    "model": """\
coef_ : ndarray of shape (n_features,)
    Released coefficients, in the units of the input.
intercept_ : float
    Released intercept; 0.0 with ``fit_intercept=False`` (the map into the
    privacy domain then goes through the origin: predictions are ``X @
    coef_``).""",
    "mean_only": """\
mean_only_ : bool
    True when the fit released the label mean alone: with an intercept and
    an epsilon budget, ``n_samples * epsilon <= 100 (n_features + 1)`` (60
    for ``AdaSSPRegressor``; ``RandomProjectionRegressor`` also while its
    sketch's own label mean is too noisy), where no slopes are worth their
    noise.
    ``coef_`` is then 0 and ``intercept_`` the label mean plus Laplace
    noise at the whole budget; ``pdp_losses_`` are the Laplace mechanism's
    at ``|y_i| / b``, in closed form (:ref:`mean-fallback`). Without an
    intercept only where a user-set hyper-parameter cannot meet the budget
    (no ridge offered): the release is then the zero model, ``coef_`` and
    ``intercept_`` 0 and ``pdp_losses_`` 0 (it reads no label). Never with a
    raw noise level or with the pure (norm-exponential) noise of output
    perturbation. False when the signal test of
    ``AdaSSPRegressor`` or ``RandomProjectionRegressor`` sets every slope to
    0 (``alpha_`` or ``signal_ridge_`` infinite): the model is then the
    private label mean too, but the whole noisy release was made and
    ``pdp_losses_`` are its losses (see ``mean_only_reason_``).
mean_only_reason_ : str or None
    Why the released slopes are 0, with the public threshold from which
    slopes are fitted (also raised as a
    :class:`~sklearn_pdp.exceptions.FallbackWarning`): for
    ``mean_only_``, the smallest epsilon at this ``n_samples`` and the
    smallest ``n_samples`` at this epsilon; for a signal test that found
    no signal, what it needs (for AdaSSP, the norm of the covariance of the
    scaled features and labels). None when slopes were released.""",
    "fitted_bounds": """\
data_norm_, bounds_X_, y_bound_ : float, tuple or None
    The bounds used (the parameters, or the data's own when not given).
bounds_from_data_ : tuple of str
    The names of the bounds read from the data because they were not
    declared (``"data_norm"`` when neither it nor ``bounds_X`` is given,
    ``"y_bound"``), each with a
    :class:`~sklearn_pdp.exceptions.PrivacyLeakWarning`; empty when every
    bound was declared. Where the bounds were tightened, those of the
    declared ones.
declared_bounds_ : tuple
    Where the bounds were tightened: the declared ``(data_norm, bounds_X, y_bound)``
    (``data_norm_``, ``bounds_X_`` and ``y_bound_`` are then the released
    ones, which the model used).
bounds_epsilon_ : float
    Where the bounds were tightened: the (pure) epsilon of the bounds release, on
    the rows of the bounds part; ``dp_epsilon_`` is the larger of it and
    ``model_epsilon_``.
model_epsilon_, model_delta_ : float
    The model's own guarantee, on the rows of ``model_rows_`` (where the
    bounds were tightened; else ``dp_epsilon_`` and ``dp_delta_``).
bounds_losses_ : ndarray of shape (n_samples,)
    Each training row's exact (pure) loss for the bounds release: 0 for a
    row outside the bounds part, and where the bounds were declared and not
    tightened.
model_rows_ : ndarray of bool of shape (n_samples,)
    The rows the model was fitted on: every row, or where the bounds were
    tightened those outside the bounds part (a public hash of each
    row; a lazy Dask array for Dask input).
pdp_kind_ : {"exact", "conditional", "bound"}
    What kind of number each of ``pdp_losses_`` (and :meth:`pdp_epsilon`)
    is: the exact per-instance loss, exact given released quantities the
    row cannot influence, or a valid upper bound; for rows of different
    kinds, the weakest. "exact" on declared bounds (``tighten_bounds=False``,
    or "auto" where the rows are too few to tighten). Where the bounds were
    tightened (the default where the rows suffice), "conditional": a row
    of the bounds part loses exactly its bounds loss, a row of the model
    part its model loss given the released bounds (which may differ
    between ``random_state`` s through those bounds; the ledger's
    individual filters charge the guarantee instead). Output perturbation
    with a ``radius``, "bound" (its ball sensitivity), tightened or not.
person_ids_ : ndarray of shape (n_people,)
    With ``groups``: the distinct person keys, sorted as ``np.unique``
    sorts them.
person_losses_ : ndarray of shape (n_people,)
    With ``groups``: each person's loss at ``delta`` for removing all their
    records together (:doc:`/people`).
person_deltas_ : ndarray of shape (n_people,)
    The delta of each of ``person_losses_``: ``delta``, but for a group
    privacy bound over a guarantee calibrated at ``delta`` alone (AdaOPS's),
    the group's ``m e^((m - 1) epsilon) delta`` for m records.
person_pdp_kinds_ : ndarray of str, shape (n_people,)
    What kind of number each of ``person_losses_`` is: a person of one
    record, their row's ``pdp_kind_``; of several, "exact" where the
    release has a closed form or a certified method for a set of rows
    (AdaSSP and the label mean on declared bounds; OPS and the Gaussian
    sketch by a certified generalised chi-square, :doc:`/people`); where
    the bounds were tightened, "conditional" (the rows split by person
    key: a bounds-part person's exact joint loss for the bounds, a
    model-part person's model loss given the released bounds); else, or
    for a person whose law the certified method could not settle within
    its public cap, "bound" (the release's own bound, such as AdaOPS's by
    composition, or group privacy at ``delta`` over the guarantee).
person_pdp_kind_ : {"exact", "conditional", "bound"}
    The weakest of ``person_pdp_kinds_``: what kind of number every one of
    ``person_losses_`` at least is.
n_features_in_ : int
    Number of features seen during fit.
feature_names_in_ : ndarray of shape (`n_features_in_`,)
    Names of features seen during fit, when X has string column names.""",
}

_SHARED["plot"] = """\
ax : matplotlib Axes or sequence of two Axes, default=None
    Where to draw (two Axes when ``leverage=True``). None creates a
    new figure.
kind : {"box", "violin"}, default="box"
    How to draw the distribution.
leverage : bool, default=False
    Also draw epsilon against leverage, coloured by residual (for a
    release of the label mean alone, against the label, on which
    its loss depends)."""

_PLACEHOLDER = re.compile(r"^( *)\{(\w+)\}$", flags=re.MULTILINE)


def fill_doc(obj):
    """Class or function decorator: replace each ``{name}`` line of the
    docstring by the shared paragraph ``name``, indented like the placeholder."""

    def paragraph(match):
        indent, name = match.groups()
        return "\n".join(indent + line if line else line for line in _SHARED[name].splitlines())

    obj.__doc__ = _PLACEHOLDER.sub(paragraph, obj.__doc__)
    return obj
