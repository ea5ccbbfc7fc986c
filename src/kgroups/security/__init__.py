"""Authentication: SASL mechanisms and the SCRAM credentials store."""
