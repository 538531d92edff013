"""The roofline: ceilings of a device, one point per launch and per variant, the baseline ->
optimized arrows, and the warnings that say when it misleads (`build.build_roofline`)."""
