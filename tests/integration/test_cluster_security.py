"""ACLs and SCRAM credentials in cluster mode: kept in the store, so a change
made through one broker is enforced by every broker of the cluster."""

from __future__ import annotations

from pathlib import Path

from acl_wire import STANDARD
from cluster_brokers import HEARTBEAT_MS, SESSION_MS, create_topic, metadata, wait_for
from kio.schema.alter_user_scram_credentials.v0 import AlterUserScramCredentialsRequest
from kio.schema.alter_user_scram_credentials.v0.request import ScramCredentialUpsertion
from kio.schema.create_acls.v3 import CreateAclsRequest
from kio.schema.create_acls.v3.request import AclCreation
from kio.schema.delete_acls.v3 import DeleteAclsRequest
from kio.schema.delete_acls.v3.request import DeleteAclsFilter
from sasl_fixtures import confluent_config

from kgroups.errors import ErrorCode
from kgroups.protocol.types import i8, i32
from kgroups.security.scram import salted_password

from process_broker import BrokerProcess, free_port
from raw_wire import call_once

TOPIC, DESCRIBE, ALLOW, LITERAL = 2, 8, 3, 3


def _broker(data: Path, store_url: str, broker_id: int) -> tuple[BrokerProcess, int]:
    plain, sasl = free_port(), free_port()
    broker = BrokerProcess(
        data / f"b{broker_id}",
        plain,
        f"listeners=PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}",
        "sasl.enabled.mechanisms=SCRAM-SHA-512",
        f"authorizer.class.name={STANDARD}",
        # Anonymous PLAINTEXT clients may manage ACLs: no ACL names the cluster.
        "allow.everyone.if.no.acl.found=true",
        f"cluster.store.url={store_url}",
        f"broker.id={broker_id}",
        f"broker.heartbeat.interval.ms={HEARTBEAT_MS}",
        f"broker.session.timeout.ms={SESSION_MS}",
    )
    return broker, sasl


def _acl(principal: str) -> AclCreation:
    return AclCreation(
        resource_type=i8(TOPIC),
        resource_name="t",
        resource_pattern_type=i8(LITERAL),
        principal=principal,
        host="*",
        operation=i8(DESCRIBE),
        permission_type=i8(ALLOW),
    )


def _create_acl(port: int, principal: str) -> None:
    response = call_once(port, CreateAclsRequest(creations=(_acl(principal),)))
    assert [r.error_code for r in response.results] == [ErrorCode.none]


def _topic_error(port: int) -> ErrorCode:
    return ErrorCode(metadata(port, "t").topics[0].error_code)


def test_acls_and_scram_users_changed_on_one_broker_hold_on_every_broker(
    tmp_path: Path, store_url: str
) -> None:
    from confluent_kafka.admin import AdminClient

    (a, _), (b, b_sasl) = _broker(tmp_path, store_url, 1), _broker(tmp_path, store_url, 2)
    try:
        a.start()
        b.start()
        wait_for(lambda: len(metadata(a.port).brokers) == 2)
        assert create_topic(a.port, "t", 1) == ErrorCode.none
        wait_for(lambda: _topic_error(b.port) == ErrorCode.none)
        # An ACL for someone else: the anonymous client may no longer see "t".
        _create_acl(a.port, "User:someone")
        wait_for(lambda: _topic_error(b.port) == ErrorCode.topic_authorization_failed)
        _create_acl(a.port, "User:ANONYMOUS")
        wait_for(lambda: _topic_error(b.port) == ErrorCode.none)
        deleted = call_once(
            a.port,
            DeleteAclsRequest(
                filters=(
                    DeleteAclsFilter(
                        resource_type_filter=i8(TOPIC),
                        resource_name_filter="t",
                        pattern_type_filter=i8(LITERAL),
                        principal_filter="User:ANONYMOUS",
                        host_filter=None,
                        operation=i8(DESCRIBE),
                        permission_type=i8(ALLOW),
                    ),
                )
            ),
        )
        assert len(deleted.filter_results[0].matching_acls) == 1
        wait_for(lambda: _topic_error(b.port) == ErrorCode.topic_authorization_failed)

        mechanism, salt, iterations = "SCRAM-SHA-512", b"erin-salt", 4096
        upsert = ScramCredentialUpsertion(
            name="erin",
            mechanism=i8(2),
            iterations=i32(iterations),
            salt=salt,
            salted_password=salted_password(mechanism, "erin-secret", salt, iterations),
        )
        altered = call_once(
            a.port, AlterUserScramCredentialsRequest(deletions=(), upsertions=(upsert,))
        )
        assert [r.error_code for r in altered.results] == [ErrorCode.none]
        erin = confluent_config(f"127.0.0.1:{b_sasl}", mechanism, "erin", "erin-secret")
        assert AdminClient(erin).list_topics(timeout=30).brokers
    finally:
        a.stop()
        b.stop()
