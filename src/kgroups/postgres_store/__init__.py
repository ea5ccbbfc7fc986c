"""The PostgreSQL store of cluster mode: partition logs in tables (fenced
appends, reads, compaction, truncation), topics, ACLs and credentials, and the
connection that reaches them. Imported only when ``cluster.store.url`` is set;
the only package that imports psycopg."""
