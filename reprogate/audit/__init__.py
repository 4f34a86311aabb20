"""Retention review: do the artifacts records address still resolve, and have their dates passed?"""
