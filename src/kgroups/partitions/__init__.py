"""Where a partition's log lives: the one seam between the broker and its two
homes, local segment files (kgroups.storage) and the PostgreSQL store
(kgroups.postgres_store). What both homes share lives here too: topic configs,
batch validation and stamping, idempotent producer state, the topic registry."""
