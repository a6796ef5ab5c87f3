"""Calibration from a bench run: measured engine steps -> a fitted step-time predictor -> the simulator's
predicted speedup per rate, set against the measured one."""
