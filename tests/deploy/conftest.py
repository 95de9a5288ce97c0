"""Fixtures for deployment tests: network-namespace beds (tests/deploy/netns.py), taken down
after the test whatever happened in it."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import pytest

from tests.deploy.netns import NetnsBed


@pytest.fixture
def netns_bed_factory(tmp_path) -> Iterator[Callable[..., NetnsBed]]:
    """make(hosts=("a", "b"), **options) -> a started NetnsBed; its logs stay in tmp_path."""
    beds: list[NetnsBed] = []

    def make(hosts: Sequence[str] = ("a", "b"), **options) -> NetnsBed:
        bed = NetnsBed(hosts, logs_dir=tmp_path / f"bed-{len(beds) + 1}", **options)
        beds.append(bed)
        return bed.start()

    yield make
    for bed in reversed(beds):
        bed.close()


@pytest.fixture
def netns_bed(netns_bed_factory) -> NetnsBed:
    """Two hosts, a and b, with PostgreSQL and Redis."""
    return netns_bed_factory()
