"""The public model: the release alone, safe to publish."""

import pickle

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose
from sklearn import clone

from sklearn_pdp import PublicLinearModel
from sklearn_pdp.model_selection import PrivateGridSearchCV
from tests.test_common import ESTIMATORS, _seeded


def _data(n=500):
    rng = np.random.RandomState(0)
    X = pd.DataFrame(rng.uniform(-1, 1, size=(n, 3)), columns=["a", "b", "c"])
    y = 0.5 + X.to_numpy() @ [0.6, -0.3, 0.0] + 0.2 * rng.normal(size=n)
    return X, y


@pytest.mark.filterwarnings("ignore::sklearn_pdp.PrivacyLeakWarning")
@pytest.mark.parametrize(
    "estimator", [e for e in ESTIMATORS if hasattr(e, "predict")],
    ids=lambda e: type(e).__name__,
)
def test_public_model_predicts_like_the_release_and_holds_nothing_else(estimator):
    X, y = _data()
    est = _seeded(estimator, 0).fit(X, y)
    public = est.public_model()
    assert isinstance(public, PublicLinearModel)
    assert_allclose(public.predict(X), est.predict(X), rtol=1e-12)
    assert (public.dp_epsilon_, public.dp_delta_) == (est.dp_epsilon_, est.dp_delta_)
    assert list(public.feature_names_in_) == ["a", "b", "c"]
    blob = pickle.dumps(public)
    assert len(blob) < 4096
    # no array with a row per training sample survives
    state = pickle.loads(blob).__dict__
    assert all(np.size(value) < len(y) for value in state.values())
    with pytest.raises(ValueError, match="feature names"):
        public.predict(X[["c", "b", "a"]])


def test_decimals_round_the_release():
    X, y = _data()
    est = clone(ESTIMATORS[2]).set_params(data_norm=2.0, y_bound=2.0, random_state=0)
    est.fit(X, y)
    public = est.public_model(decimals=2)
    assert_allclose(public.coef_, np.round(est.coef_, 2))
    assert public.intercept_ == round(est.intercept_, 2)
    assert_allclose(public.predict(X), est.predict(X), atol=0.05)


def test_search_public_model_carries_the_search_guarantee():
    X, y = _data(n=2000)
    search = next(e for e in ESTIMATORS if isinstance(e, PrivateGridSearchCV))
    search = _seeded(search, 0).fit(X, y)
    public = search.public_model()
    assert public.dp_epsilon_ == search.dp_epsilon_
    assert public.dp_epsilon_ > search.best_estimator_.dp_epsilon_
    assert_allclose(public.predict(X), search.predict(X))
    assert "PrivateGridSearchCV" in repr(public)
