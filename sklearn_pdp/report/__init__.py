"""The privacy report, its publication, privacy profiles, the plot and the public
model file."""
