"""Predict a per-tensor policy's device memory and step from one or two compiled baselines."""
