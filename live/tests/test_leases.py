"""One watcher per run across workers: a PostgreSQL advisory lock per run (SQLite: one
process by design, the lease is always granted)."""

import pytest

from live.leases import WatchLease


@pytest.mark.django_db(transaction=True)
def test_it_grants_a_run_to_one_holder_until_released():
    first, second = WatchLease(9001), WatchLease(9001)
    assert first.try_acquire()
    if not WatchLease.shared():
        assert second.try_acquire()  # SQLite: a single process, nothing to share
        return
    assert not second.try_acquire()
    assert WatchLease(9002).try_acquire(), "other runs are independent"
    first.release()  # a dead worker's connection drops the lock the same way
    assert second.try_acquire()
    second.release()


@pytest.mark.django_db(transaction=True)
def test_acquiring_twice_in_one_holder_is_idempotent():
    lease = WatchLease(9003)
    assert lease.try_acquire() and lease.try_acquire()
    lease.release()
    lease.release()
