"""One Posterior Sample."""
