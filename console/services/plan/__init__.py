"""Planning a reset: a snapshot and a spec made into a plan by a Spark job (`planner`), the
console's preview planners (`preview_planners`), and a plan loaded as an apply takes it,
checked against its hash, cluster and age (`load`)."""
