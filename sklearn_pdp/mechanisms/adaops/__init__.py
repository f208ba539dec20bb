"""AdaOPS: the release and its published bounds."""
