"""The gate and the history measured against this machine: experiments that run
`mpimatrix run` for real (`mpimatrix validate gate`, `validate history`) and replays of
stored sessions through `results.night.judge_night` (`validate replay`, `validate
unchanged`)."""
