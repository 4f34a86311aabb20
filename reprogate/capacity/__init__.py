"""Capacity: can a runner pool or Slurm partition honor a record's envelope, requirement by requirement?"""
