from kgroups.topics.placement import java_string_hash, kafka_abs, partition_for_group


def test_java_string_hash_matches_java() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("group-1") == 293427299
    # Non-BMP characters hash as two UTF-16 code units, as in Java.
    assert java_string_hash("\U0001f600") == 1772899
    assert java_string_hash("polygenelubricants") == -(2**31)


def test_kafka_abs_maps_min_int_to_zero() -> None:
    assert kafka_abs(-(2**31)) == 0
    assert kafka_abs(-5) == 5


def test_partition_for_group() -> None:
    # Integer.MIN_VALUE must not produce a negative partition.
    assert partition_for_group("polygenelubricants", 50) == 0
    assert partition_for_group("hello", 50) == 99162322 % 50
    assert all(0 <= partition_for_group(f"g{i}", 7) < 7 for i in range(1000))
