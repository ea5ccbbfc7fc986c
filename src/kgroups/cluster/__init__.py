"""A broker as a member of a cluster: its lease, partition leadership and
the live brokers, all kept in the PostgreSQL store."""
