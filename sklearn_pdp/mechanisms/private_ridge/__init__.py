"""The privately chosen ridge shared by output and objective perturbation."""
