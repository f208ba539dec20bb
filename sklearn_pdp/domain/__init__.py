"""The privacy domain: the declared schema and its encoder, declared bounds,
scaling into the unit ball, clipping, the private tightening of the bounds, and
the fit's domain stage."""
