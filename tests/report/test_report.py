import sys
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import FeatureUnion, Pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler

from tests._reference import ridge_penalty
from sklearn_pdp import AdaSSPRegressor, OPSRegressor, PDPReport, PrivacyLeakWarning
from sklearn_pdp.domain._scaler import DomainScaler

from ..conftest import every_regressor, unbounded_data


def _ops(**params):
    return OPSRegressor(**{"epsilon": None, "gamma": 10.0, "alpha": 1.0, "data_norm": 4.0,
                           "y_bound": 5.0, "random_state": 0, **params})


def _one_direction_data():
    """Row 0 alone spans the first direction and has a label at the bound
    opposite to what the other rows predict for it."""
    rng = np.random.default_rng(0)
    n = 12
    X = np.column_stack([0.3 + 0.05 * rng.normal(size=n), rng.uniform(-1, 1, size=n)])
    X[0] = [1.0, 0.0]
    y = np.clip(X[:, 1] + 0.8 + 0.1 * rng.normal(size=n), -1, 1)
    y[0] = -1.0
    return X, y


def test_report_numbers_equal_the_wrapped_estimator(make_unbounded_data):
    X, y = make_unbounded_data(80)
    est = _ops(gamma=20.0, alpha=0.5).fit(X, y)
    report = PDPReport(_ops(gamma=20.0, alpha=0.5), thresholds=[0.5, 2.0]).fit(X, y)
    assert_array_equal(report.pdp_losses_, est.pdp_losses_)
    assert report.dp_epsilon_ == est.dp_epsilon_
    assert report.dp_delta_ == est.dp_delta_
    assert_array_equal(report.estimator_.coef_, est.coef_)
    eps = est.pdp_losses_
    s = report.summary_
    assert s["n_samples"] == len(y)
    assert s["delta"] == 1e-6
    assert s["mean"] == pytest.approx(eps.mean())
    assert [s["median"], s["q90"], s["q99"]] == pytest.approx(
        np.quantile(eps, [0.5, 0.9, 0.99]))
    assert s["max"] == eps.max()
    assert s["below"] == {0.5: np.mean(eps <= 0.5), 2.0: np.mean(eps <= 2.0)}
    assert s["dp_epsilon"] == est.dp_epsilon_ and s["dp_delta"] == est.dp_delta_
    assert s["dp_over_median"] == pytest.approx(est.dp_epsilon_ / np.median(eps))
    assert s["dp_over_median"] > 1


def test_delta_is_set_on_the_clone_not_on_the_argument(make_unbounded_data):
    X, y = make_unbounded_data(80)
    inner = _ops(delta=1e-6)
    report = PDPReport(inner, delta=1e-3).fit(X, y)
    assert inner.delta == 1e-6 and not hasattr(inner, "pdp_losses_")
    assert_array_equal(report.pdp_losses_, _ops(delta=1e-3).fit(X, y).pdp_losses_)
    assert report.summary_["delta"] == 1e-3
    # a larger delta buys a smaller epsilon
    assert np.all(report.pdp_losses_ < PDPReport(inner).fit(X, y).pdp_losses_)


def test_transform_is_worst_label_epsilon_and_leverage(make_unbounded_data):
    X, y = make_unbounded_data(80)
    report = PDPReport(_ops(gamma=5.0)).fit(X, y)
    X_new, _ = make_unbounded_data(9, seed=1)
    out = report.transform(X_new)
    assert out.shape == (9, 2)
    est = report.estimator_
    assert_array_equal(out[:, 0], est.pdp_epsilon(X_new))
    # leverage x^T H^{-1} x of the scaled rows, by a direct solve
    scaler = DomainScaler(est.data_norm_, est.y_bound_, est.fit_intercept)
    Xs, Xn = scaler.scale(X), scaler.scale(X_new)
    H = Xs.T @ Xs + est.alpha * ridge_penalty(Xs, est.fit_intercept)
    assert_allclose(out[:, 1], np.einsum("ij,ji->i", Xn, np.linalg.solve(H, Xn.T)), rtol=1e-10)
    # worst case over every label of the declared domain [-5, 5]
    for label in np.linspace(-5, 5, 11):
        assert np.all(out[:, 0] >= est.pdp_epsilon(X_new, np.full(9, label)) - 1e-12)


# unit bounds on unbounded data: the bound must hold on clipped rows too
@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.BoundsWarning")
@pytest.mark.parametrize("data", [unbounded_data(15, d=2), _one_direction_data()])
def test_worst_label_epsilon_bounds_every_training_rows_loss(data):
    """Row i's in-sample loss is the loss of adding (x_i, y_i) to the data
    without row i, so the report of that data set, applied to x_i, bounds it
    whatever y_i is (and equals it at the actual label)."""
    X, y = data
    make = lambda: PDPReport(_ops(alpha=0.1, data_norm=1.0, y_bound=1.0,  # noqa: E731
                                  fit_intercept=False))
    full = make().fit(X, y)
    for i in range(len(y)):
        keep = np.arange(len(y)) != i
        without_i = make().fit(X[keep], y[keep])
        worst = without_i.transform(X[i:i + 1])[0, 0]
        assert worst >= full.pdp_losses_[i] * (1 - 1e-9)
        assert_allclose(without_i.estimator_.pdp_epsilon(X[i:i + 1], y[i:i + 1]),
                        full.pdp_losses_[i], rtol=1e-7)


def test_transform_of_a_training_row_is_not_its_in_sample_loss():
    """The documented caveat: against the data that already contains row 0,
    adding a copy of x_0 costs less than row 0's own loss."""
    X, y = _one_direction_data()
    report = PDPReport(_ops(alpha=0.1, data_norm=1.0, y_bound=1.0,
                            fit_intercept=False)).fit(X, y)
    assert report.transform(X[:1])[0, 0] < report.pdp_losses_[0] / 2


def test_fit_transform_agrees_with_fit_then_transform(make_unbounded_data):
    X, y = make_unbounded_data(80)
    a = PDPReport(_ops()).fit_transform(X, y)
    b = PDPReport(_ops()).fit(X, y).transform(X)
    assert_array_equal(a, b)


def test_feature_names_and_pandas_output(make_unbounded_data):
    pd = pytest.importorskip("pandas")
    X, y = make_unbounded_data(80)
    df = pd.DataFrame(X, columns=["age", "bmi", "bp"], index=np.arange(100, 180))
    report = PDPReport(_ops()).set_output(transform="pandas").fit(df, y)
    assert_array_equal(report.feature_names_in_, ["age", "bmi", "bp"])
    out = report.transform(df)
    assert list(out.columns) == ["pdp_epsilon", "leverage"]
    assert_array_equal(out.index, df.index)
    assert_array_equal(out.to_numpy(), PDPReport(_ops()).fit(X, y).transform(X))
    assert_array_equal(report.get_feature_names_out(["age", "bmi", "bp"]),
                       ["pdp_epsilon", "leverage"])
    with pytest.raises(ValueError, match="input_features"):
        report.get_feature_names_out(["a", "b", "c"])


def test_pipeline_and_feature_union_and_column_transformer(make_unbounded_data):
    pd = pytest.importorskip("pandas")
    X, y = make_unbounded_data(80, d=4)
    direct = PDPReport(_ops()).fit(X[:, :3], y).transform(X[:, :3])

    pipe = Pipeline([("select", FunctionTransformer(lambda Z: Z[:, :3])),
                     ("report", PDPReport(_ops()))])
    assert_array_equal(pipe.fit(X, y).transform(X), direct)

    union = FeatureUnion([("report", PDPReport(_ops())), ("scale", StandardScaler())])
    out = union.fit(X[:, :3], y).transform(X[:, :3])
    assert_array_equal(out[:, :2], direct)
    assert list(union.get_feature_names_out()[:2]) == [
        "report__pdp_epsilon", "report__leverage"]

    df = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    ct = ColumnTransformer([("report", PDPReport(_ops()), ["a", "b", "c"]),
                            ("keep", "passthrough", ["d"])]).set_output(transform="pandas")
    out = ct.fit_transform(df, y)
    assert list(out.columns) == ["report__pdp_epsilon", "report__leverage", "keep__d"]
    assert_array_equal(out.iloc[:, :2].to_numpy(), direct)


# 80 rows are too few for AdaSSP's slopes: the label mean is released
@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.FallbackWarning")
def test_default_estimator_is_adassp_and_warns_about_bounds(make_unbounded_data):
    X, y = make_unbounded_data(80)
    with pytest.warns(PrivacyLeakWarning):
        report = PDPReport().fit(X, y)
    assert isinstance(report.estimator_, AdaSSPRegressor)


def test_no_guarantee_gives_infinite_ratio(make_unbounded_data):
    X, y = make_unbounded_data(80)
    report = PDPReport(_ops(alpha=0.0)).fit(X, y)
    assert report.dp_epsilon_ == np.inf
    assert report.summary_["dp_epsilon"] == np.inf
    assert report.summary_["dp_over_median"] == np.inf


@pytest.mark.parametrize(
    "params, message",
    [({"delta": 0.0}, "delta"), ({"delta": 1.5}, "delta"),
     ({"thresholds": [0.1, -1]}, "thresholds"), ({"thresholds": [np.nan]}, "thresholds"),
     ({"estimator": StandardScaler()}, "estimator")],
)
def test_invalid_parameters_name_the_parameter(params, message, make_unbounded_data):
    X, y = make_unbounded_data(80)
    with pytest.raises(ValueError, match=message):
        PDPReport(**params).fit(X, y)


@pytest.mark.parametrize("kind, leverage", [("box", False), ("violin", True)])
def test_plot_writes_a_png(agg, tmp_path, kind, leverage, make_unbounded_data):
    X, y = make_unbounded_data(300)
    X[0] = 0.0  # a row with epsilon 0, left out of the log-scale plot
    report = PDPReport(_ops(fit_intercept=False)).fit(X, y)
    ax = report.plot(kind=kind, leverage=leverage)
    axes = np.atleast_1d(ax)
    assert len(axes) == (2 if leverage else 1)
    assert axes[0].get_yscale() == ("log" if kind == "box" else "linear")
    assert "1 with" in axes[0].get_xticklabels()[0].get_text()
    # words, not formulas or abbreviations
    assert "times the median" in axes[0].get_title(loc="left")
    if leverage:
        assert axes[1].get_xlabel().startswith("leverage (how unusual")
    path = tmp_path / "report.png"
    axes[0].figure.savefig(path)
    assert path.stat().st_size > 1000
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_on_given_axes_and_bad_arguments(agg, make_unbounded_data):
    X, y = make_unbounded_data(80)
    report = PDPReport(_ops(alpha=0.0)).fit(X, y)  # no DP guarantee to draw
    _, ax = agg.subplots()
    assert report.plot(ax=ax) is ax
    with pytest.raises(ValueError, match="2 Axes"):
        report.plot(ax=ax, leverage=True)
    with pytest.raises(ValueError, match="kind"):
        report.plot(kind="bar")


def test_plot_labels_log_axes_in_decimals_and_keeps_the_legend_inside(
        agg, diabetes, diabetes_bounds):
    """Log axes read 0.6, not 6x10^-1; the DP epsilon's legend lies inside
    the distribution's axes, clear of the subtitle above them."""
    X, y = diabetes
    report = PDPReport(AdaSSPRegressor(epsilon=3.0, random_state=0, **diabetes_bounds)).fit(X, y)
    axes = report.plot(leverage=True)
    figure = axes[0].figure
    figure.canvas.draw()
    labels = []
    for ax in axes:
        labels += [t.get_text() for t in ax.get_yticklabels(minor=True)
                   + ax.get_yticklabels() if t.get_text()]
    assert labels
    for text in labels:  # every shown label a plain number (matplotlib's minus sign)
        float(text.replace("\u2212", "-"))
    # per-instance epsilons below 1 on this fit: labelled as decimals
    assert any(0.1 <= float(t) < 1 for t in labels), labels
    renderer = figure.canvas.get_renderer()
    legend = axes[0].get_legend().get_window_extent(renderer)
    inside = axes[0].get_window_extent(renderer)
    assert inside.x0 <= legend.x0 and legend.x1 <= inside.x1
    assert inside.y0 <= legend.y0 and legend.y1 <= inside.y1


def test_plot_without_matplotlib_names_the_extra(monkeypatch, make_unbounded_data):
    X, y = make_unbounded_data(80)
    report = PDPReport(_ops()).fit(X, y)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match="pip install matplotlib"):
        report.plot()


def test_unfitted_transform_raises():
    from sklearn.exceptions import NotFittedError

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(NotFittedError):
            PDPReport().transform(np.zeros((2, 2)))


class _NoRidgeOPS(OPSRegressor):
    """A regressor that keeps no ridge factorisation (as random projection)."""

    def fit(self, X, y):
        super().fit(X, y)
        del self.release_.ridge
        return self

    def pdp_epsilon(self, X, y=None):
        return np.zeros(len(X))


def test_leverage_without_the_estimators_ridge(make_unbounded_data):
    X, y = make_unbounded_data(80)
    expected = PDPReport(_ops(alpha=0.3)).fit(X, y).transform(X)[:, 1]
    report = PDPReport(_NoRidgeOPS(epsilon=None, gamma=10.0, alpha=0.3, data_norm=4.0,
                                   y_bound=5.0)).fit(X, y)
    assert not hasattr(report.estimator_, "_ridge")
    assert_allclose(report.transform(X)[:, 1], expected, rtol=1e-10)


def test_report_wraps_the_private_search(make_unbounded_data):
    from sklearn_pdp.model_selection import PrivateGridSearchCV

    X, y = make_unbounded_data(400)
    search = PrivateGridSearchCV(_ops(), {"gamma": [1.0, 20.0]}, random_state=0)
    report = PDPReport(search).fit(X, y)
    fitted = report.estimator_
    assert_array_equal(report.pdp_losses_, fitted.pdp_losses_)
    assert report.dp_epsilon_ == fitted.dp_epsilon_
    # the search's losses hold at its pdp_delta_: the search and the refit
    # together, within the search's total delta
    assert report.summary_["delta"] == fitted.pdp_delta_ == pytest.approx(1e-6)
    epsilon, leverage = report.transform(X[:5]).T
    assert_allclose(epsilon, fitted.pdp_epsilon(X[:5]))
    # the leverage of the released model: the refit on all the data
    best = PDPReport(_ops(**fitted.best_params_)).fit(X, y)
    assert_allclose(leverage, best.transform(X[:5])[:, 1])


# 80 rows are too few for the projection's slopes: the label mean is released
@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.FallbackWarning")
def test_public_hooks_the_report_uses(make_unbounded_data):
    """design_ridge and law_statistics: H of the scaled training rows (its
    leverages equal a dense solve) and the law's statistics; None where the
    mechanism keeps no ridge; NotFittedError before fit."""
    from sklearn.exceptions import NotFittedError

    from sklearn_pdp import RandomProjectionRegressor

    X, y = make_unbounded_data(80)
    est = _ops()
    with pytest.raises(NotFittedError):
        est.design_ridge()
    est.fit(X, y)
    Xs = np.column_stack([X / 4.0, np.ones(len(X))])
    H = Xs.T @ Xs + 1.0 * ridge_penalty(Xs, True)
    leverage = np.einsum("ij,ij->i", Xs, np.linalg.solve(H, Xs.T).T)
    stats = est.design_ridge().row_statistics(Xs, y / 5.0)
    assert_allclose(stats["leverage"], leverage, rtol=1e-10)
    assert_allclose(est.law_statistics()(Xs, y / 5.0)["leverage"], leverage, rtol=1e-10)
    projection = RandomProjectionRegressor(data_norm=4.0, y_bound=5.0, random_state=0)
    assert projection.fit(X, y).design_ridge() is None


# ------------------------------------------------ rank-deficient data ------


def _one_hot_table(n=300, seed=0):
    """Four numeric columns and a 3-level categorical one with every category
    one-hot encoded: the indicators sum to the intercept's constant column."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(seed)
    numeric = pd.DataFrame(rng.normal(size=(n, 4)), columns=list("pqrs"))
    category = pd.Series(rng.choice(list("abc"), n), name="c")
    X = pd.concat([numeric, pd.get_dummies(category, dtype=float)], axis=1)
    y = numeric.to_numpy() @ [1.0, 2.0, -1.0, 0.5] + rng.normal(size=n)
    return X, y


@pytest.mark.filterwarnings("ignore::sklearn_pdp.FallbackWarning")
@pytest.mark.parametrize("epsilon", [1.0, 50.0])  # the label mean alone; slopes
@pytest.mark.parametrize("regressor_class", every_regressor())
def test_full_one_hot_encoding_in_every_estimator(regressor_class, epsilon):
    """The issue's table: the report works whatever the fit released, with
    the estimator's exact losses; a mean's leverage is 1/n for every row."""
    X, y = _one_hot_table()
    est = regressor_class(epsilon=epsilon, bounds_X=(-4, 4), y_bound=(-8, 8), random_state=0)
    report = PDPReport(est).fit(X, y)
    fitted = report.estimator_
    assert fitted.mean_only_ == (epsilon == 1.0)
    assert_array_equal(report.pdp_losses_, fitted.pdp_losses_)
    assert np.all(report.pdp_losses_ <= report.dp_epsilon_ * (1 + 1e-12))
    epsilon_column, leverage = report.transform(X).T
    assert_allclose(epsilon_column, fitted.pdp_epsilon(X.to_numpy()))
    if fitted.mean_only_:
        assert_allclose(leverage, 1.0 / len(y), rtol=1e-12)
    else:  # a training row's hat value, within the span of the rows
        assert np.all((leverage >= 0) & (leverage <= 1 + 1e-9))


def _singular(n=50, seed=0):
    """Scaled rows with a duplicated column and a column equal to 1 - another
    (in the span of the intercept's constant), the constant last."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-0.3, 0.3, size=(n, 3))
    Xs = np.column_stack([x, x[:, 0], 0.5 - x[:, 1], np.ones(n)])
    ys = np.clip(x @ [1.0, -0.5, 0.2] + 0.1 * rng.normal(size=n), -1, 1)
    return Xs, ys


def test_leverage_on_a_singular_gram_is_the_limit_of_a_vanishing_ridge():
    """Brute force: the hat values of the training rows (projection onto
    the column space of X), which a ridge tending to 0 approaches; a target
    in the span gets x^T H^+ x, one off it infinite leverage (a vanishing
    ridge's grows as 1 / alpha)."""
    from sklearn_pdp.utils._ridge_system import RidgeSystem, leverage_ridge

    Xs, ys = _singular()
    XtX, Xty = Xs.T @ Xs, Xs.T @ ys
    with pytest.raises(ValueError, match="alpha"):
        RidgeSystem(XtX, Xty, 0.0, True)
    ridge = leverage_ridge(XtX, Xty, 0.0, True)
    Q, _ = np.linalg.qr(Xs[:, [0, 1, 2, 5]])  # a basis of the column space
    hat = np.einsum("ij,ij->i", Q, Q)
    stats = ridge.row_statistics(Xs, ys)
    assert_allclose(stats["leverage"], hat, rtol=1e-9)
    # least squares' residuals: the fit is the same on the span
    fitted = Q @ (Q.T @ ys)
    assert_allclose(stats["residual"], ys - fitted, atol=1e-12)
    tiny = RidgeSystem(XtX, Xty, 1e-7, True).row_statistics(Xs)["leverage"]
    assert_allclose(tiny, hat, rtol=1e-5)
    inside = np.array([[0.1, 0.2, -0.1, 0.1, 0.3, 1.0]])
    assert_allclose(ridge.row_statistics(inside)["leverage"],
                    (inside @ np.linalg.pinv(XtX) @ inside.T)[0], rtol=1e-9)
    outside = inside + [[0.0, 0.0, 0.0, 0.05, 0.0, 0.0]]
    assert ridge.row_statistics(outside)["leverage"][0] == np.inf
    growing = [RidgeSystem(XtX, Xty, a, True).row_statistics(outside)["leverage"][0]
               for a in (1e-4, 1e-6)]
    assert growing[1] > 50 * growing[0]


def test_leverage_of_an_infinite_ridge_is_that_of_the_mean():
    """Brute force: as the ridge grows without bound, x^T H^{-1} x tends to
    1/n (the intercept alone, unpenalised) and the fit to the label mean;
    without an intercept every slope vanishes (leverage 0)."""
    from sklearn_pdp.utils._ridge_system import RidgeSystem, leverage_ridge

    Xs, ys = _singular()
    XtX, Xty = Xs.T @ Xs, Xs.T @ ys
    ridge = leverage_ridge(XtX, Xty, np.inf, True)
    stats = ridge.row_statistics(Xs, ys)
    assert_allclose(stats["leverage"], 1.0 / len(ys), rtol=1e-12)
    assert_allclose(stats["residual"], ys - ys.mean(), atol=1e-12)
    large = RidgeSystem(XtX, Xty, 1e9, True).row_statistics(Xs)["leverage"]
    assert_allclose(large, 1.0 / len(ys), rtol=1e-6)
    without = leverage_ridge(XtX[:-1, :-1], Xty[:-1], np.inf, False)
    assert_array_equal(without.row_statistics(Xs[:, :-1])["leverage"], 0.0)


@pytest.mark.filterwarnings("ignore::sklearn_pdp.FallbackWarning")
def test_plot_of_a_mean_release_shows_the_label(agg, make_unbounded_data):
    """The loss of the label mean depends on the label alone: the second
    panel draws it against the scaled label, not the (constant) leverage."""
    X, y = make_unbounded_data(200)
    report = PDPReport(OPSRegressor(data_norm=4.0, y_bound=5.0, random_state=0)).fit(X, y)
    assert report.estimator_.mean_only_
    axes = report.plot(leverage=True)
    assert "label" in axes[1].get_xlabel()
    x = axes[1].collections[0].get_offsets()[:, 0]
    shown = np.isfinite(report.pdp_losses_) & (report.pdp_losses_ > 0)
    assert_allclose(np.sort(x), np.sort(np.abs(np.clip(y / 5.0, -1, 1))[shown]), atol=1e-12)


# fitted on the table, asked about its rows as an array
@pytest.mark.filterwarnings("ignore:X does not have valid feature names:UserWarning")
@pytest.mark.filterwarnings("ignore::sklearn_pdp.FallbackWarning")
@pytest.mark.parametrize("epsilon", [0.5, 30.0])  # candidates of the mean; of slopes
def test_private_search_on_full_one_hot_encoding(epsilon):
    """The search and its report on the issue's table: the search's own
    losses, and the leverage of the refit (finite on the training rows)."""
    from sklearn_pdp import AdaSSPRegressor
    from sklearn_pdp.model_selection import PrivateGridSearchCV

    X, y = _one_hot_table(n=600)
    search = PrivateGridSearchCV(
        AdaSSPRegressor(bounds_X=(-4, 4), y_bound=(-8, 8), tighten_bounds=False),
        {"budget_split": [None, [0.25, 0.25, 0.25, 0.25]]}, epsilon=epsilon, random_state=0)
    report = PDPReport(search).fit(X, y)
    fitted = report.estimator_
    assert fitted.best_estimator_.mean_only_ == (epsilon == 0.5)
    assert_array_equal(report.pdp_losses_, fitted.pdp_losses_)
    epsilon_column, leverage = report.transform(X.to_numpy()).T
    assert_allclose(epsilon_column, fitted.pdp_epsilon(X.to_numpy()))
    assert np.all(np.isfinite(leverage) & (leverage > 0) & (leverage <= 1 + 1e-9))
