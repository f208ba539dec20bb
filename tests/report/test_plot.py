"""PrivacyLossDisplay: the plot of PDPReport as a scikit-learn style Display."""

import sys

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from sklearn_pdp import OPSRegressor, PDPReport, PrivacyLossDisplay

from ..conftest import unbounded_data


def _report(**params):
    X, y = unbounded_data(300, scale=0.6)
    X[0] = 0.0  # a row with epsilon 0, counted in the axis label
    params = {"data_norm": 2.0, "y_bound": 3.0, "fit_intercept": False, "random_state": 0,
              **params}
    return PDPReport(OPSRegressor(**params)).fit(X, y)


def _pixels(figure):
    figure.canvas.draw()
    return np.asarray(figure.canvas.buffer_rgba())


@pytest.mark.parametrize("kind, leverage", [("box", False), ("violin", True), ("box", True)])
def test_from_estimator_sets_the_attributes(agg, kind, leverage):
    from matplotlib.axes import Axes
    from matplotlib.collections import PathCollection
    from matplotlib.colorbar import Colorbar
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    report = _report()
    display = PrivacyLossDisplay.from_estimator(report, kind=kind, leverage=leverage)
    assert isinstance(display, PrivacyLossDisplay)
    assert display.axes_.shape == ((2,) if leverage else (1,))
    assert display.ax_ is display.axes_[0] and isinstance(display.ax_, Axes)
    assert isinstance(display.figure_, Figure) and display.ax_.figure is display.figure_
    assert set(display.distribution_) >= ({"boxes", "medians"} if kind == "box"
                                          else {"bodies", "cmedians"})
    assert isinstance(display.dp_line_, Line2D)
    expected = report.dp_epsilon_ if kind == "box" else np.log10(report.dp_epsilon_)
    assert_allclose(display.dp_line_.get_ydata(), expected)
    if leverage:
        assert isinstance(display.scatter_, PathCollection)
        assert isinstance(display.colorbar_, Colorbar)
        shown = np.isfinite(report.pdp_losses_) & (report.pdp_losses_ > 0)
        assert_allclose(display.scatter_.get_offsets()[:, 1], report.pdp_losses_[shown])
    else:
        assert display.scatter_ is None and display.colorbar_ is None
    # the values it was made from, stored as attributes
    assert_array_equal(display.pdp_losses, report.pdp_losses_)
    assert display.dp_epsilon == report.dp_epsilon_ and display.dp_delta == report.dp_delta_
    assert display.delta == report.summary_["delta"]
    assert display.dp_over_median == report.summary_["dp_over_median"]
    assert display.estimator_name == "OPSRegressor" and display.mean_only is False


@pytest.mark.parametrize("kind, leverage", [("box", False), ("violin", True)])
def test_from_estimator_draws_what_the_report_plot_draws(agg, kind, leverage):
    """PDPReport.plot is a thin wrapper: the same figure, pixel for pixel,
    and its Axes are the display's."""
    report = _report()
    display = PrivacyLossDisplay.from_estimator(report, kind=kind, leverage=leverage)
    ax = report.plot(kind=kind, leverage=leverage)
    wrapped = np.atleast_1d(ax)
    assert len(wrapped) == len(display.axes_)
    assert (wrapped[0].figure.get_suptitle() == display.figure_.get_suptitle()
            == r"OPSRegressor: ($\varepsilon$ = "
            f"{report.dp_epsilon_:.3g}, $\\delta$ = {report.dp_delta_:.2g})-DP")
    for mine, theirs in zip(display.axes_, wrapped):
        assert mine.get_title(loc="left") == theirs.get_title(loc="left")
        assert mine.get_xlabel() == theirs.get_xlabel()
        assert mine.get_yscale() == theirs.get_yscale()
    assert_array_equal(_pixels(display.figure_), _pixels(wrapped[0].figure))


def test_plot_on_given_axes_returns_the_display(agg):
    report = _report()
    _, axes = agg.subplots(1, 2)
    display = PrivacyLossDisplay.from_estimator(report, ax=axes, leverage=True)
    assert display.axes_[0] is axes[0] and display.axes_[1] is axes[1]
    _, ax = agg.subplots()
    assert display.plot(ax=ax) is display
    assert display.ax_ is ax and display.scatter_ is None


def test_display_from_values_computes_the_ratio_to_the_median(agg):
    """Made from the values alone, it computes dp_over_median as the report's
    summary does and draws the same distribution."""
    report = _report()
    values = dict(pdp_losses=report.pdp_losses_, dp_epsilon=report.dp_epsilon_,
                  dp_delta=report.dp_delta_, delta=report.summary_["delta"])
    display = PrivacyLossDisplay(**values).plot()
    assert display.dp_over_median is None
    assert display._dp_over_median() == report.summary_["dp_over_median"]
    assert "times the median" in display.ax_.get_title(loc="left")
    assert display.figure_.get_suptitle().startswith(r"($\varepsilon$")
    with pytest.raises(ValueError, match="leverage values"):
        PrivacyLossDisplay(**values).plot(leverage=True)
    # no guarantee and no loss: the ratio 0 / 0 reads inf, as in the summary
    none = PrivacyLossDisplay(pdp_losses=np.zeros(3), dp_epsilon=0.0, dp_delta=0.0, delta=1e-6)
    assert none._dp_over_median() == np.inf


def test_no_guarantee_draws_no_line(agg):
    report = _report(epsilon=None, gamma=10.0, alpha=0.0)  # a raw noise level, no ridge
    assert not np.isfinite(report.dp_epsilon_)
    display = PrivacyLossDisplay.from_estimator(report)
    assert display.dp_line_ is None
    assert display.figure_.get_suptitle() == "OPSRegressor: no DP guarantee"


def test_bad_arguments(agg):
    report = _report()
    _, ax = agg.subplots()
    with pytest.raises(ValueError, match="2 Axes"):
        PrivacyLossDisplay.from_estimator(report, ax=ax, leverage=True)
    with pytest.raises(ValueError, match="kind"):
        PrivacyLossDisplay.from_estimator(report, kind="bar")
    with pytest.raises(ValueError, match="kind"):
        PrivacyLossDisplay(pdp_losses=[1.0], dp_epsilon=1.0, dp_delta=0.0,
                           delta=1e-6).plot(kind="bar")


def test_unfitted_report_is_refused():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        PrivacyLossDisplay.from_estimator(PDPReport())


@pytest.mark.parametrize("call, caller", [
    (lambda report: PrivacyLossDisplay.from_estimator(report),
     "PrivacyLossDisplay.from_estimator"),
    (lambda report: PrivacyLossDisplay(pdp_losses=report.pdp_losses_, dp_epsilon=1.0,
                                       dp_delta=0.0, delta=1e-6).plot(),
     "PrivacyLossDisplay.plot"),
    (lambda report: report.plot(), "PDPReport.plot"),
])
def test_without_matplotlib_the_error_names_the_caller_and_the_install(
        monkeypatch, call, caller):
    report = _report()
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=rf"^{caller} needs matplotlib: .*pip install matplotlib"):
        call(report)


def test_importing_the_package_does_not_import_matplotlib():
    import subprocess
    from pathlib import Path

    import sklearn_pdp

    code = ("import sys, sklearn_pdp; "
            "assert not any(m.startswith('matplotlib') for m in sys.modules)")
    # from the checkout under test: python -c puts the working directory first
    subprocess.run([sys.executable, "-c", code], check=True,
                   cwd=Path(sklearn_pdp.__file__).parents[2])
