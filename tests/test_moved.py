"""Files written before the package moved into folders (release 0.1.0.dev0)
still load: a pickle of fitted objects, whose classes it names by their old
module paths (``sklearn_pdp._ssp.AdaSSPRegressor``), a public model file and a
ledger. The files in ``tests/data`` were written by that release."""

import json
import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import sklearn_pdp
from sklearn_pdp import PrivacyLedger, PublicLinearModel

DATA = Path(__file__).resolve().parent / "data"


class _Numpy1Unpickler(pickle.Unpickler):
    """The file was written with numpy 2, which pickles arrays under
    numpy._core; numpy 1 (the lowest supported) names it numpy.core. Mapped
    here, for this file only: aliasing numpy._core in sys.modules would break
    scikit-learn's compiled modules imported after it (their numpy 2 import
    check then fails, and the process crashed)."""

    def find_class(self, module, name):
        if module == "numpy._core" or module.startswith("numpy._core."):
            module = "numpy.core" + module[len("numpy._core"):]
        return super().find_class(module, name)


@pytest.fixture(scope="module")
def pickled():
    with open(DATA / "fitted_0.1.pkl", "rb") as f:
        return pickle.load(f) if hasattr(np, "_core") else _Numpy1Unpickler(f).load()


def test_pickle_of_old_paths_predicts_as_before(pickled):
    expected = np.load(DATA / "fitted_0.1_expected.npz")
    X = expected["X"]
    assert set(pickled) >= {cls.__name__ for cls in
                            (sklearn_pdp.AdaSSPRegressor, sklearn_pdp.OPSRegressor)}
    for key, fitted in pickled.items():
        # the classes are the package's, not copies made for the old paths
        assert type(fitted) is getattr(sklearn_pdp, type(fitted).__name__, None) or \
            type(fitted).__module__.startswith("sklearn_pdp.model_selection")
        model = getattr(fitted, "estimator_", fitted)
        # equal up to the rounding of the stack that runs the tests (the
        # files were written with numpy 2.4, scipy 1.17)
        assert_allclose(model.predict(X), expected[f"{key}.predict"], rtol=1e-12, atol=1e-15)
        if f"{key}.pdp_losses_" in expected:
            assert_allclose(fitted.pdp_losses_, expected[f"{key}.pdp_losses_"], rtol=1e-12)


def test_old_paths_resolve_to_the_new_objects():
    import importlib

    old = importlib.import_module("sklearn_pdp._ssp")
    assert old.AdaSSPRegressor is sklearn_pdp.AdaSSPRegressor
    with pytest.raises(AttributeError):
        old.NotAName  # noqa: B018


def test_public_model_file_predicts_as_before(pickled):
    path = DATA / "public_model_0.1.json"
    assert json.loads(path.read_text())["format"] == "sklearn-pdp public linear model 1"
    model = PublicLinearModel.from_json(path)
    X = np.load(DATA / "fitted_0.1_expected.npz")["X"]
    assert_array_equal(model.predict(X), pickled["AdaSSPRegressor"].predict(X))


def test_ledger_file_reads_as_before(tmp_path):
    path = tmp_path / "ledger.sqlite"
    shutil.copyfile(DATA / "ledger_0.1.sqlite", path)
    ids = np.array([f"p{k}" for k in range(300)])
    with PrivacyLedger(path) as ledger:
        assert list(ledger.releases()["name"]) == ["Q1", "Q2"]
        # recomposed on the running stack: its special functions' rounding
        assert_allclose(ledger.epsilon(ids, 1e-6), np.load(DATA / "ledger_0.1_epsilon.npy"),
                        rtol=1e-9)
