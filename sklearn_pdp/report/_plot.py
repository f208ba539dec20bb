"""Plots of per-instance privacy losses, in the style of scikit-learn's
Display objects (:class:`~sklearn.metrics.PredictionErrorDisplay`):
matplotlib is imported only when drawing."""

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ..utils._docstrings import fill_doc
from ..utils._arrays import compute
from ..utils._dask import quantiles

# what the axis adds to "per-instance epsilon" for each kind of number
_KIND_WORDS = {"exact": "", "conditional": ", given the released bounds", "bound": ", at most"}

KINDS = ("box", "violin")


def check_kind(kind):
    """The ValueError of a ``kind`` that is neither ``"box"`` nor ``"violin"``."""
    if kind not in KINDS:
        raise ValueError(f"kind must be 'box' or 'violin', got {kind!r}.")


def import_pyplot(caller):
    """``matplotlib.pyplot``, or an ImportError naming ``caller`` and the install."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(
            f"{caller} needs matplotlib: install it with pip install matplotlib."
        ) from exc
    return plt


class PrivacyLossDisplay:
    """Distribution of per-instance privacy losses beside the DP epsilon.

    The style of Wang (2017), Figures 1 and 2: a box or violin plot of the
    per-instance epsilons of the training rows on a log scale with the
    data-independent epsilon as a line, and optionally the per-instance
    epsilon of every row against its leverage, coloured by its residual.
    Rows with epsilon 0 (nothing to show on a log scale) and rows with
    infinite epsilon are counted in the axis label.

    Create it with :meth:`from_estimator` from a fitted
    :class:`~sklearn_pdp.PDPReport` (what :meth:`PDPReport.plot
    <sklearn_pdp.PDPReport.plot>` does), or from the values themselves;
    :meth:`plot` draws it. All parameters are stored as attributes.

    Parameters
    ----------
    pdp_losses : array-like of shape (n_samples,)
        Per-instance epsilon of every training row.
    dp_epsilon : float
        The data-independent guarantee (``inf``: none, no line is drawn).
    dp_delta : float
        Its delta.
    delta : float
        The delta of the per-instance epsilons.
    dp_over_median : float, default=None
        ``dp_epsilon`` over the median per-instance epsilon, shown in the
        subtitle. None computes it from ``pdp_losses`` (``inf`` where the
        ratio is 0 / 0).
    leverage : array-like of shape (n_samples,), default=None
        Each row's leverage in the privacy domain, the x-axis of the second
        panel; with ``mean_only``, its scaled absolute label instead. None:
        no second panel can be drawn.
    residual : array-like of shape (n_samples,), default=None
        Each row's residual in scaled label units, the second panel's colour.
    mean_only : bool, default=False
        The release is the label mean alone, whose loss depends on the label
        alone: ``leverage`` holds the scaled absolute labels.
    estimator_name : str, default=None
        Name of the model, shown in the title of a new figure.
    pdp_kind : {"exact", "conditional", "bound"}, default="exact"
        What kind of number each of ``pdp_losses`` is (a report's
        ``summary_["pdp_kind"]``); the axis says "at most" for a bound and
        "given the released bounds" for a conditional number.

    Attributes
    ----------
    ax_ : matplotlib Axes
        Axes of the distribution.
    axes_ : ndarray of matplotlib Axes
        Every Axes drawn on: ``ax_``, and with ``leverage=True`` the Axes of
        epsilon against leverage.
    figure_ : matplotlib Figure
        Figure holding the Axes.
    distribution_ : dict
        Artists of the box or violin plot (what matplotlib's ``boxplot`` or
        ``violinplot`` returns).
    dp_line_ : matplotlib Line2D or None
        The line at ``dp_epsilon``, None without a finite guarantee.
    scatter_ : matplotlib PathCollection or None
        Epsilon against leverage, None unless ``leverage=True``.
    colorbar_ : matplotlib Colorbar or None
        Colour scale of the residuals, None unless ``leverage=True``.

    See Also
    --------
    PDPReport.plot : Draws this display for a fitted report.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> import numpy as np
    >>> from sklearn_pdp import OPSRegressor, PDPReport, PrivacyLossDisplay
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-1, 1, size=(2000, 3)) / np.sqrt(3)
    >>> y = np.clip(X @ [1.0, -0.5, 0.2] + 0.1 * rng.randn(2000), -1, 1)
    >>> report = PDPReport(OPSRegressor(data_norm=1.0, y_bound=1.0, random_state=0)).fit(X, y)
    >>> display = PrivacyLossDisplay.from_estimator(report, leverage=True)
    >>> display.axes_.shape, display.ax_.get_yscale()
    ((2,), 'log')
    >>> plt.close(display.figure_)
    """

    def __init__(self, *, pdp_losses, dp_epsilon, dp_delta, delta, dp_over_median=None,
                 leverage=None, residual=None, mean_only=False, estimator_name=None,
                 pdp_kind="exact"):
        self.pdp_losses = pdp_losses
        self.dp_epsilon = dp_epsilon
        self.dp_delta = dp_delta
        self.delta = delta
        self.dp_over_median = dp_over_median
        self.leverage = leverage
        self.residual = residual
        self.mean_only = mean_only
        self.estimator_name = estimator_name
        self.pdp_kind = pdp_kind

    @classmethod
    @fill_doc
    def from_estimator(cls, estimator, *, ax=None, kind="box", leverage=False):
        """Plot the per-instance epsilons of a fitted report.

        Parameters
        ----------
        estimator : PDPReport
            A fitted :class:`~sklearn_pdp.PDPReport`: its ``pdp_losses_``,
            its guarantee, and the leverages and residuals of its training
            rows (per record also for a report fitted with ``groups``).
        {plot}

        Returns
        -------
        display : PrivacyLossDisplay
        """
        check_is_fitted(estimator)
        check_kind(kind)
        import_pyplot(f"{cls.__name__}.from_estimator")
        # the plot needs every value on this machine
        eps, statistics = compute(estimator.pdp_losses_, estimator._statistics)
        hat, residual = np.asarray(statistics).T
        model = estimator._model()
        mean_only = getattr(model, "mean_only_", False)
        if mean_only:  # the loss of the mean depends on the label alone
            hat = np.abs(residual + estimator._ridge.coef[-1])
        summary = estimator.summary_
        over, pdp_kind = summary["dp_over_median"], summary["pdp_kind"]
        if summary.get("unit") == "person":  # a summary of people: the plot is of records
            median = np.median(eps)
            over = estimator.dp_epsilon_ / median if median > 0 else np.inf
            pdp_kind = estimator.estimator_.pdp_kind_
        return cls(
            pdp_losses=np.asarray(eps), dp_epsilon=estimator.dp_epsilon_,
            dp_delta=estimator.dp_delta_, delta=summary["delta"],
            dp_over_median=over, leverage=hat, residual=residual,
            mean_only=mean_only, estimator_name=type(model).__name__,
            pdp_kind=pdp_kind,
        ).plot(ax=ax, kind=kind, leverage=leverage)

    @fill_doc
    def plot(self, ax=None, *, kind="box", leverage=False):
        """Draw the distribution, and optionally epsilon against leverage.

        Parameters
        ----------
        {plot}

        Returns
        -------
        display : PrivacyLossDisplay
            This display, with ``ax_``, ``axes_``, ``figure_`` and the
            artists set.
        """
        check_kind(kind)
        plt = import_pyplot(f"{type(self).__name__}.plot")
        if leverage and self.leverage is None:
            raise ValueError("leverage=True needs the display's leverage values.")
        n_axes = 2 if leverage else 1
        if ax is None:
            # constrained layout keeps the labels and the legend inside
            figure, ax = plt.subplots(1, n_axes, figsize=(5 * n_axes, 4.2),
                                      squeeze=False, layout="constrained")
            figure.suptitle(self._title())
            ax = ax[0]
        axes = np.atleast_1d(np.asarray(ax, dtype=object))
        if axes.size != n_axes:
            raise ValueError(f"ax must hold {n_axes} Axes, got {axes.size}.")
        eps = np.asarray(self.pdp_losses, dtype=np.float64)
        shown = np.isfinite(eps) & (eps > 0)
        self._plot_distribution(axes[0], eps, shown, kind)
        self.scatter_ = self.colorbar_ = None
        if leverage:
            self._plot_leverage(axes[1], eps, shown)
        self.axes_, self.ax_, self.figure_ = axes, axes[0], axes[0].figure
        return self

    def _plot_distribution(self, ax, eps, shown, kind):
        if kind == "box":
            self.distribution_ = ax.boxplot(eps[shown], widths=0.5)
            ax.set_yscale("log")
            _decimal_labels(ax.yaxis)
            ax.set_ylabel(self._epsilon_label(r"per-instance $\varepsilon$"))
            to_axis = float
        else:  # a density of the log values: a violin on a log axis distorts
            self.distribution_ = ax.violinplot(np.log10(eps[shown]), showmedians=True)
            ax.set_ylabel(self._epsilon_label(r"$\log_{10}$ per-instance $\varepsilon$"))
            to_axis = np.log10
        ax.set_xticks([1], [_row_label(eps, shown)])
        self.dp_line_ = None
        if np.isfinite(self.dp_epsilon):
            self.dp_line_ = ax.axhline(to_axis(self.dp_epsilon), color="C3", linestyle="--",
                                       label=rf"DP $\varepsilon$ = {self.dp_epsilon:.3g}")
            # inside, where it covers the fewest points (above, it crowded the
            # subtitle)
            ax.legend(loc="best", fontsize="small")
        else:
            ax.set_title("no data-independent DP guarantee", fontsize="small")
        ax.set_title(
            rf"$\delta$ = {self.delta:g}; DP $\varepsilon$ is "
            f"{self._dp_over_median():.3g} times the median",
            loc="left", fontsize="small",
        )

    def _plot_leverage(self, ax, eps, shown):
        from matplotlib.ticker import MaxNLocator, NullFormatter

        hat = np.asarray(self.leverage, dtype=np.float64)
        residual = np.asarray(self.residual, dtype=np.float64)[shown]
        limit = np.abs(residual).max(initial=0) or 1.0  # symmetric colours
        self.scatter_ = ax.scatter(hat[shown], eps[shown], c=residual,
                                   cmap="coolwarm", s=8, vmin=-limit, vmax=limit)
        # a log axis only where the leverages span more than a decade: on
        # less it would show a single label
        spread = hat[shown][hat[shown] > 0]
        if spread.size and spread.max() > 10 * spread.min():
            ax.set_xscale("log")
            _decimal_labels(ax.xaxis)
            ax.xaxis.set_minor_formatter(NullFormatter())
        else:  # few labels, so that long decimals do not collide
            ax.xaxis.set_major_locator(MaxNLocator(4))
        ax.set_yscale("log")
        _decimal_labels(ax.yaxis)
        ax.set_xlabel("|label| (scaled to [-1, 1]): the mean's loss depends on it alone"
                      if self.mean_only else "leverage (how unusual the row's features are)")
        ax.set_ylabel(self._epsilon_label(r"per-instance $\varepsilon$"))
        self.colorbar_ = ax.figure.colorbar(self.scatter_, ax=ax, label="residual (scaled y)")

    def _epsilon_label(self, label):
        """The axis label of the per-instance epsilons, with their kind."""
        return label + _KIND_WORDS[self.pdp_kind]

    def _dp_over_median(self):
        if self.dp_over_median is not None:
            return self.dp_over_median
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.float64(self.dp_epsilon) / quantiles(
                np.asarray(self.pdp_losses, dtype=np.float64), [0.5])[0]
        return np.inf if np.isnan(ratio) else float(ratio)

    def _title(self):
        """The model and its guarantee, for a new figure."""
        name = f"{self.estimator_name}: " if self.estimator_name else ""
        if not np.isfinite(self.dp_epsilon):
            return f"{name}no DP guarantee"
        return (rf"{name}($\varepsilon$ = {self.dp_epsilon:.3g}, "
                rf"$\delta$ = {self.dp_delta:.2g})-DP")


def _decimal_labels(axis):
    """Plain decimals (0.6, 2, 10) on a log axis instead of 6x10^-1, on the
    ticks matplotlib's log formatter labels (minor ones only on a short
    range, so that they do not crowd)."""
    from matplotlib.ticker import LogFormatter

    class DecimalLogFormatter(LogFormatter):
        def __call__(self, x, pos=None):
            return f"{x:.4g}" if super().__call__(x, pos) else ""

    axis.set_major_formatter(DecimalLogFormatter())
    axis.set_minor_formatter(DecimalLogFormatter(labelOnlyBase=False,
                                                 minor_thresholds=(2, 0.5)))


def _row_label(eps, shown):
    label = f"{shown.sum()} training rows"
    hidden = [f"{k} with {name}" for k, name in (
        (np.sum(eps == 0), r"$\varepsilon$ = 0"), (np.sum(np.isinf(eps)), "inf"))
        if k]
    return label + ("\n(+ " + ", ".join(hidden) + ")" if hidden else "")
