"""AdaSSP: released sufficient statistics."""
