"""`--ray`: every sample of a run as a Ray task on a cluster, one log dir (docs/scale.md).

Nothing is imported here: a Ray worker imports `_priority` through this package before
anything heavy (its setup hook), and the launcher imports `_driver` itself.
"""
