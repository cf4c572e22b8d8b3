"""Reading a cluster, never writing it: brokers and routes, topics, a group's offsets and who
consumes it (`reader`, `group_clients`, `slave_checks`, `broker_metrics`, `client_offsets`),
the messages at a reset's boundary, snapshots, the lag history and its report, stuck queues,
and the console's view of an open cluster (`source`, `backend`, `session`)."""
