"""The leader epochs a log knows and the end offsets they answer, with the
rules of Kafka's leader epoch cache: an epoch's end is where the next known
epoch starts, the latest epoch's end is the log end, and a log start moved
forward moves the epoch holding it along."""

from __future__ import annotations

from kgroups.partitions.leader_epochs import (
    UNDEFINED_EPOCH_END,
    EpochEndOffset,
    LeaderEpochs,
    end_offset_for,
    epoch_at_start,
)


def epochs(*entries: tuple[int, int]) -> LeaderEpochs:
    known = LeaderEpochs()
    for epoch, start in entries:
        known.assign(epoch, start)
    return known


def test_the_latest_epoch_ends_at_the_log_end() -> None:
    known = epochs((2, 10))
    assert known.end_offset_for(2, 0, 11) == EpochEndOffset(2, 11)
    assert known.latest_epoch == 2
    assert epochs((2, 11), (2, 12)).end_offset_for(2, 0, 14) == (2, 14)


def test_an_epoch_keeps_the_first_offset_it_was_given() -> None:
    assert epochs((2, 9), (2, 10)).entries == ((2, 9),)
    assert epochs((2, 6), (2, 7)).entries == ((2, 6),)


def test_a_newer_epoch_at_the_same_offset_replaces_the_empty_one() -> None:
    assert epochs((2, 9), (3, 9)).entries == ((3, 9),)


def test_no_epoch_asked_or_none_known_is_undefined() -> None:
    assert epochs((2, 11), (3, 12)).end_offset_for(-1, 0, 20) == UNDEFINED_EPOCH_END
    assert LeaderEpochs().end_offset_for(0, 0, 0) == UNDEFINED_EPOCH_END
    assert LeaderEpochs().end_offset_for(-1, 0, 73) == (-1, -1)


def test_an_epoch_older_than_every_known_one_ends_where_the_first_one_starts() -> None:
    assert epochs((5, 11), (6, 12), (7, 13)).end_offset_for(4, 0, 20) == (4, 11)


def test_an_epoch_restarting_earlier_drops_the_later_ones() -> None:
    known = epochs((5, 11), (6, 12), (7, 13), (7, 12))
    assert known.entries == ((5, 11), (7, 12))
    assert known.end_offset_for(5, 0, 20) == (5, 12)
    assert known.end_offset_for(6, 0, 20) == (5, 12)


def test_an_older_epoch_ends_where_the_next_known_one_starts() -> None:
    known = epochs((1, 11), (1, 12), (2, 13), (2, 14), (3, 15), (3, 16))
    assert known.end_offset_for(2, 0, 17) == (2, 15)


def test_an_unknown_epoch_between_two_known_ones_answers_the_one_before_it() -> None:
    known = epochs((0, 10), (2, 13), (4, 17))
    assert known.end_offset_for(1, 0, 20) == (0, 13)
    assert known.end_offset_for(2, 0, 20) == (2, 17)
    assert known.end_offset_for(3, 0, 20) == (2, 17)


def test_an_epoch_newer_than_the_latest_is_undefined() -> None:
    assert epochs((2, 100)).end_offset_for(3, 0, 100) == UNDEFINED_EPOCH_END


def test_a_lower_epoch_assigned_later_replaces_every_higher_one() -> None:
    assert epochs((3, 0), (7, 50), (0, 80)).entries == ((0, 80),)


def test_batches_read_back_add_only_epochs_newer_than_every_known_one() -> None:
    known = LeaderEpochs()
    for epoch, start in ((3, 0), (3, 5), (-1, 8), (2, 10), (5, 20), (5, 30)):
        known.observe(epoch, start)
    assert known.entries == ((3, 0), (5, 20))


def test_a_log_start_moved_forward_moves_the_epoch_holding_it() -> None:
    known = epochs((0, 0), (1, 50), (2, 100))
    assert known.end_offset_for(0, 60, 120) == (0, 60)
    assert known.end_offset_for(1, 60, 120) == (1, 100)
    assert known.epoch_at_start(60) == 1
    assert known.end_offset_for(1, 100, 120) == (1, 100)
    assert known.end_offset_for(2, 100, 120) == (2, 120)
    assert known.epoch_at_start(100) == 2
    # What the log start passed is gone, the entries themselves stay.
    assert known.entries == ((0, 0), (1, 50), (2, 100))


def test_the_log_starts_at_no_known_epoch_when_the_first_one_starts_later() -> None:
    assert epochs((3, 20)).epoch_at_start(10) == -1
    assert epochs((3, 20)).epoch_at_start(20) == 3
    assert LeaderEpochs().epoch_at_start(0) == -1


def test_the_same_answers_from_a_list_of_entries() -> None:
    entries = ((0, 10), (2, 13), (4, 17))
    assert end_offset_for(entries, 1, 0, 20) == (0, 13)
    assert end_offset_for(entries, 4, 0, 20) == (4, 20)
    assert epoch_at_start(entries, 13) == 2
