"""Planning a reset: a snapshot and a spec made into a plan by a Spark job (`planner`), each
group's reset path (`reset_paths`), the snapshot's rows read with Arrow (`tables`), plans as CSV
(`plan_csv`), specs read from files (`spec_files`), the console's preview planners
(`preview_planners`), and a plan loaded as an apply takes it, checked against its hash, cluster
and age (`load`)."""
