"""Topic names and where groups and transactional ids are coordinated: the
rules a client, a coordinator and a broker must agree on. No IO."""
