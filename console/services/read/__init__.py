"""Reading a cluster, never writing it: where its brokers are (`routes`), the reader of brokers,
topics and groups (`reader`) and of one group's offsets (`group_read`, sharing a `batch` when
many are read), who consumes a group and how (`group_clients`, `broker_metrics`,
`slave_checks`, `client_offsets`, `broker_facts`), the messages at a reset's boundary, snapshots,
the lag history and its report, stuck queues; and the console's view of an open cluster: what
a screen asks (`source`), its answers in the network process (`reader_source`), the open
cluster (`session`)."""
