from kgroups.config.broker_config import BrokerConfig
from kgroups.transactions.config import TransactionConfig


def test_the_broker_defaults_are_kafkas() -> None:
    assert TransactionConfig.from_settings(BrokerConfig().get_int) == TransactionConfig(
        max_timeout_ms=900000,
        abort_check_interval_ms=10000,
        id_expiration_ms=604800000,
        expiry_check_interval_ms=3600000,
        offsets_partitions=50,
    )
    assert BrokerConfig().get_int("transaction.state.log.num.partitions") == 50


def test_settings_are_read_from_the_broker_config() -> None:
    config = BrokerConfig(
        {"transaction.max.timeout.ms": "1000", "transactional.id.expiration.ms": "60000"}
    )
    settings = TransactionConfig.from_settings(config.get_int)
    assert (settings.max_timeout_ms, settings.id_expiration_ms) == (1000, 60000)
