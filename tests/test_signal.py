import numpy as np
import pytest

from sklearn_pdp._signal import signal_ridge


def test_signal_ridge_against_hand_computed_values():
    # d = 2, ||cross||^2 = 25, noise 1 per coordinate: the signal is
    # 25 - (2 + margin * 2); ridge = mean_eigen * v d / signal
    cross = np.array([[3.0, 4.0], [0.6, 0.8], [3.0, 4.0]])
    alpha = signal_ridge(cross, 1.0, np.array([1.0, 1.0, 2.0]), 10.0, margin=1.0)
    assert alpha[0] == pytest.approx(10.0 * 1.0 * 2 / 21.0, rel=1e-15)
    assert alpha[1] == np.inf  # 1 < 4: no signal above the noise
    assert alpha[2] == pytest.approx(10.0 * 2.0 * 2 / 21.0, rel=1e-15)
    # a negative margin accepts a cross term below its noise's mean d v
    assert signal_ridge(np.array([1.0, 0.5]), 1.0, 1.0, 10.0, margin=0.0) == np.inf
    assert signal_ridge(np.array([1.0, 0.5]), 1.0, 1.0, 10.0, margin=-0.5) == pytest.approx(
        10.0 * 2 / (1.25 - 1.0), rel=1e-14)


def test_signal_ridge_of_no_scatter_is_zero():
    assert signal_ridge(np.array([3.0, 4.0]), 1.0, 1.0, 0.0, margin=1.0) == 0.0
